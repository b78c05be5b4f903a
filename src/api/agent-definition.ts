import * as v from 'valibot';
import type { Result } from '../shared/result.ts';
import { ObjectMetaSchema } from './meta.ts';
import { freeForm, lenientEnum, objectRef, openapi, parseDefault, parseWith, str } from './schema-kit.ts';

/** Claude permission modes; an unknown string reads as `auto` (the secure default). */
export const PERMISSION_MODES = ['auto', 'bypass'] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];

/** How runs of a definition execute; an unknown string reads as `job`. */
export const EXECUTION_MODES = ['job', 'batch', 'realtime', 'server'] as const;
export type ExecutionMode = (typeof EXECUTION_MODES)[number];

/** What a batch run does when its vendor batch times out; an unknown string reads as `fail`. */
export const BATCH_ON_TIMEOUT = ['fail', 'fallback'] as const;
export type BatchOnTimeout = (typeof BATCH_ON_TIMEOUT)[number];

/** MCP server transports; an unknown string reads as `stdio`. */
export const MCP_TRANSPORTS = ['stdio', 'http', 'sse'] as const;
export type McpTransport = (typeof MCP_TRANSPORTS)[number];

/** Output formats (declared, unused at runtime); an unknown string reads as `text`. */
export const OUTPUT_FORMATS = ['text', 'json', 'stream-json'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Event classes `output.select` can match. Entries with any other event are dropped on parse. */
export const SELECT_EVENTS = ['tool_call', 'message', 'tool_result', 'result', 'usage'] as const;
export type SelectEvent = (typeof SELECT_EVENTS)[number];

/** Message roles of a select entry (declared, ignored at runtime); an unknown string reads as `assistant`. */
export const SELECT_ROLES = ['assistant', 'user'] as const;
export type SelectRole = (typeof SELECT_ROLES)[number];

/** Output sink types; an unknown string reads as `stdout`. */
export const SINK_TYPES = ['stdout', 'http', 'file'] as const;
export type SinkType = (typeof SINK_TYPES)[number];

/** Defaults of `spec.batch`, applied on parse and declared in the CRD. */
export const DEFAULT_BATCH_MAX_TOKENS = 16000;
export const DEFAULT_BATCH_TIMEOUT_MINUTES = 1440;

const EnvVarSchema = v.object({
  name: str('Environment variable name; reserved names are dropped.'),
  value: str('Literal value.'),
});
export type EnvVar = v.InferOutput<typeof EnvVarSchema>;

const SecretRefSchema = v.object({
  name: str('Environment variable to expose the secret as; reserved names are dropped.'),
  ref: str('Key in the Secret agent-secrets.'),
});
export type SecretRef = v.InferOutput<typeof SecretRefSchema>;

const McpServerSchema = v.object({
  name: str('Server name in the MCP configuration.'),
  transport: v.pipe(lenientEnum(MCP_TRANSPORTS), v.description('Transport: stdio, http or sse.')),
  command: v.optional(str('Command of a stdio server.')),
  args: v.optional(v.pipe(v.array(v.string()), v.description('Arguments of a stdio server.'))),
  url: v.optional(str('URL of an http or sse server.')),
  headers_secret: v.optional(str('Key in agent-secrets holding the Authorization value for the server.')),
});
export type McpServer = v.InferOutput<typeof McpServerSchema>;

const RepoSchema = v.object({
  name: str('Repository name; also the default checkout directory.'),
  url: str('Clone URL.'),
  ref: v.optional(str('Branch, tag or commit to check out.')),
  path: v.optional(str('Checkout directory below the workspace.')),
  token_secret: v.optional(str('Key in agent-secrets holding a token for the clone.')),
});
export type Repo = v.InferOutput<typeof RepoSchema>;

const ConversationSchema = v.object({
  source: v.optional(str('Base URL of the conversation store.')),
  id: v.optional(str('Conversation to restore before the run.')),
  pin: v.optional(str('Conversation id to save after the run (and Claude session id).')),
  headers_secret: v.optional(str('Key in agent-secrets holding a header line for the store.')),
});
export type Conversation = v.InferOutput<typeof ConversationSchema>;

const SidecarSchema = v.object({
  name: str('Container name: a DNS label, not init or agent, unique in the run pod.'),
  image: str('Image of the tool container.'),
  env: parseDefault(v.pipe(v.array(EnvVarSchema), v.description('Literal environment variables.')), []),
  secrets: parseDefault(
    v.pipe(v.array(SecretRefSchema), v.description('Environment variables from the Secret agent-secrets.')),
    [],
  ),
  ports: parseDefault(
    v.pipe(
      v.array(
        v.object({
          name: v.optional(str('Port name.')),
          containerPort: v.pipe(
            v.number(),
            v.integer(),
            v.minValue(1),
            v.maxValue(65535),
            v.description('Port.'),
          ),
        }),
      ),
      v.description('Ports the tool listens on (localhost inside the run pod).'),
    ),
    [],
  ),
  resources: v.optional(
    freeForm('Container resources (requests, limits); default 50m/64Mi requested, 256Mi limit.'),
  ),
  mcp: v.optional(
    v.pipe(
      v.object({
        port: v.pipe(
          v.number(),
          v.integer(),
          v.minValue(1),
          v.maxValue(65535),
          v.description('MCP HTTP port.'),
        ),
        path: v.optional(str('MCP endpoint path; default /mcp.')),
      }),
      v.description(
        'The tool is an MCP server over HTTP: added to the agent CLI as an http MCP server on localhost, and the agent starts once it listens.',
      ),
    ),
  ),
});
export type Sidecar = v.InferOutput<typeof SidecarSchema>;

/**
 * `spec.rbac`: Kubernetes access of a run (issue 9 §2). Only names of existing ClusterRoles: the controller binds
 * them to the run's own ServiceAccount when the Station's AgentPolicy lists them as grantable, and never writes
 * rules itself. The agent container (only it) then gets a short-lived projected token.
 */
export const RbacRequestSchema = v.pipe(
  v.object({
    roles: parseDefault(
      v.pipe(
        v.array(v.string()),
        v.description(
          "ClusterRoles bound in the run's namespace (a RoleBinding per role) for the run's duration.",
        ),
      ),
      [],
    ),
    clusterRoles: parseDefault(
      v.pipe(
        v.array(v.string()),
        v.description(
          'ClusterRoles bound cluster-wide (a ClusterRoleBinding per role) for the run only; the policy must allow each.',
        ),
      ),
      [],
    ),
  }),
  v.description(
    "Kubernetes access of each run: ClusterRoles bound to the run's own ServiceAccount while it runs (the AgentPolicy must list them as grantable).",
  ),
);
export type RbacRequest = v.InferOutput<typeof RbacRequestSchema>;

/** Default of `dependencies[].timeoutSeconds`. */
export const DEFAULT_DEPENDENCY_TIMEOUT_SECONDS = 300;

/** `spec.dependencies[]`: a Service of the run's namespace that must have ready endpoints before the run starts. */
export const DependencySchema = v.object({
  service: v.pipe(
    v.string(),
    v.minLength(1),
    v.maxLength(63),
    v.description("Name of a Service in the run's namespace."),
  ),
  port: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.maxValue(65535),
      v.description('A port its ready endpoints must serve (the EndpointSlice port, i.e. the target port).'),
    ),
  ),
  timeoutSeconds: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.maxValue(86400),
      v.description('How long a run waits for it once it starts waiting (at most a day); default 300.'),
    ),
  ),
});
export type Dependency = v.InferOutput<typeof DependencySchema>;

/** The longest `systemPrompt` (64 KiB; checked in UTF-8 bytes when a run is built): Claude takes it as one argument. */
export const MAX_SYSTEM_PROMPT_BYTES = 65536;

/** Default of `memory.maxSizeKB`. */
export const DEFAULT_MEMORY_MAX_SIZE_KB = 64;
/**
 * Largest `memory.maxSizeKB` (96 KiB). The memory goes into the prompt, which most CLIs take as one argument: kept
 * under the 128 KiB Linux allows one (a longer prompt goes on stdin where the CLI reads it, issue 10 §1), so a run
 * with memory works with every CLI.
 */
export const MAX_MEMORY_MAX_SIZE_KB = 96;

/**
 * `spec.memory` (issue 10 §3): a ConfigMap of the run's namespace whose key `MEMORY.md` each run reads (mounted
 * into its agent container and added to its prompt) and whose content the run's last memory block replaces.
 */
export const MemorySchema = v.pipe(
  v.object({
    configMap: objectRef(
      "Name of the ConfigMap in the run's namespace that holds the memory (key MEMORY.md); created when missing.",
    ),
    maxSizeKB: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.maxValue(MAX_MEMORY_MAX_SIZE_KB),
        v.description(
          'Largest memory in KiB (UTF-8): a larger memory block is not saved, a larger stored memory is cut in the prompt.',
        ),
      ),
      DEFAULT_MEMORY_MAX_SIZE_KB,
    ),
  }),
  v.description(
    'Memory kept across runs: MEMORY.md of a ConfigMap, mounted at /agent/memory and added to the prompt; the last <memory> block of a successful run replaces it.',
  ),
);
export type MemoryConfig = v.InferOutput<typeof MemorySchema>;

/** `spec.resources`: what the run environment gets (env, secrets, MCP servers, repos, skills, conversation). */
export const ResourcesSchema = v.pipe(
  v.object({
    env: parseDefault(v.pipe(v.array(EnvVarSchema), v.description('Literal environment variables.')), []),
    secrets: parseDefault(
      v.pipe(v.array(SecretRefSchema), v.description('Environment variables from the Secret agent-secrets.')),
      [],
    ),
    mcp_servers: parseDefault(
      v.pipe(v.array(McpServerSchema), v.description('MCP servers handed to the agent CLI.')),
      [],
    ),
    repos: parseDefault(
      v.pipe(v.array(RepoSchema), v.description('Repositories cloned before the run.')),
      [],
    ),
    skills: parseDefault(
      v.pipe(v.array(v.string()), v.description('Skill names installed before the run.')),
      [],
    ),
    skills_source: v.optional(str('Base URL skills are fetched from.')),
    conversation: v.optional(
      v.pipe(ConversationSchema, v.description('Conversation restored before and saved after the run.')),
    ),
  }),
  v.description('Run environment: env, secrets, MCP servers, repositories, skills, conversation.'),
);
export type Resources = v.InferOutput<typeof ResourcesSchema>;

const knownSelectEvents: readonly string[] = SELECT_EVENTS;

const SelectEntryWireSchema = v.object({
  event: v.pipe(
    v.string(),
    openapi<string>({ enum: SELECT_EVENTS }),
    v.description('Event class: tool_call, message, tool_result, result or usage.'),
  ),
  tool: v.optional(str('Only tool events of this tool name.')),
  role: v.optional(v.pipe(lenientEnum(SELECT_ROLES), v.description('Message role (ignored at runtime).'))),
  contains: v.optional(str('Only events whose text contains this substring.')),
});

/** One `output.select` entry, with a known event class. */
export type SelectEntry = Omit<v.InferOutput<typeof SelectEntryWireSchema>, 'event'> & { event: SelectEvent };

const SinkSchema = v.object({
  type: v.pipe(lenientEnum(SINK_TYPES), v.description('Sink type: stdout, http or file.')),
  url: v.optional(str('URL an http sink POSTs each event to.')),
  headers_secret: v.optional(str('Key in agent-secrets holding header lines for an http sink.')),
  path: v.optional(str('File a file sink appends events to.')),
});
export type Sink = v.InferOutput<typeof SinkSchema>;

const WatchEntrySchema = v.object({
  event: str('Event name reported for the file.'),
  path: str('File below the workspace reported after the run.'),
});
export type WatchEntry = v.InferOutput<typeof WatchEntrySchema>;

/** `spec.output`: where run events go and which of them. */
export const OutputSchema = v.pipe(
  v.object({
    format: v.optional(
      v.pipe(
        lenientEnum(OUTPUT_FORMATS),
        v.description(
          'Result format: json, with output.schema, makes status.result the parsed JSON answer, validated against the schema; otherwise status.result is text.',
        ),
      ),
    ),
    schema: v.optional(
      freeForm(
        'JSON Schema of the result: under format json the final answer must match it or the run fails ($ref and pattern are not supported); batch runs also send it to the vendor as structured output.',
      ),
    ),
    select: parseDefault(
      v.pipe(
        v.array(SelectEntryWireSchema),
        v.description('Filters for events sent to sinks; empty passes everything.'),
        v.transform((entries): SelectEntry[] =>
          entries.flatMap((e) =>
            knownSelectEvents.includes(e.event) ? [{ ...e, event: e.event as SelectEvent }] : [],
          ),
        ),
      ),
      [],
    ),
    sinks: parseDefault(v.pipe(v.array(SinkSchema), v.description('Destinations of run events.')), []),
    watch: parseDefault(
      v.pipe(v.array(WatchEntrySchema), v.description('Files reported as events after the run.')),
      [],
    ),
  }),
  v.description('Output routing of run events.'),
);
export type Output = v.InferOutput<typeof OutputSchema>;

/** `spec.batch`: settings of batch execution. */
export const BatchSchema = v.pipe(
  v.object({
    maxTokens: v.optional(
      v.pipe(v.number(), v.integer(), v.minValue(1), v.description('max_tokens of the batch request.')),
      DEFAULT_BATCH_MAX_TOKENS,
    ),
    timeoutMinutes: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.description('Minutes to wait for the vendor batch before onTimeout applies.'),
      ),
      DEFAULT_BATCH_TIMEOUT_MINUTES,
    ),
    onTimeout: v.optional(
      v.pipe(
        lenientEnum(BATCH_ON_TIMEOUT),
        v.description('On timeout: fail the run, or fallback to a Job run of the same recipe.'),
      ),
      'fail',
    ),
  }),
  v.description('Batch execution settings (execution: batch).'),
);
export type BatchConfig = v.InferOutput<typeof BatchSchema>;

/** Default concurrency of a server (turns in flight per replica) and its per-request timeout. */
export const DEFAULT_SERVER_CONCURRENCY = 4;
export const DEFAULT_SERVER_REQUEST_TIMEOUT_SECONDS = 300;

/** `spec.server`: settings of server execution (issue 12). */
export const ServerSchema = v.pipe(
  v.object({
    apiKeySecret: v.optional(
      v.pipe(
        v.string(),
        v.minLength(1),
        v.description(
          'Secret (same namespace) whose key api-key clients must present as a bearer token; absent: the controller generates <agent>-server-api-key.',
        ),
      ),
    ),
    concurrency: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.maxValue(1024),
        v.description('Requests served at once per replica; one more is answered 429.'),
      ),
      DEFAULT_SERVER_CONCURRENCY,
    ),
    requestTimeoutSeconds: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.maxValue(86400),
        v.description(
          'Longest a request may take; its agent CLI is then stopped and the client answered 504.',
        ),
      ),
      DEFAULT_SERVER_REQUEST_TIMEOUT_SECONDS,
    ),
  }),
  v.description('Server execution settings (execution: server).'),
);
export type ServerConfig = v.InferOutput<typeof ServerSchema>;

/** `AgentDefinition.spec`: a reusable recipe for a coding-agent task. Wire names are snake_case where shown. */
export const AgentDefinitionSpecSchema = v.pipe(
  v.object({
    description: v.optional(str('Human-readable description (not used at runtime).')),
    model: v.optional(str('Model the runs use unless the Agent sets one; default claude-opus-5-5.')),
    prompt: str('Prompt template; {placeholder}s are filled from Agent parameters.'),
    systemPrompt: v.optional(
      v.pipe(
        v.string(),
        v.maxLength(MAX_SYSTEM_PROMPT_BYTES, `systemPrompt is at most ${MAX_SYSTEM_PROMPT_BYTES} characters`),
        v.description(
          'System prompt template ({placeholder}s filled like the prompt), at most 64 KiB: Claude gets it with --append-system-prompt, the other CLIs and batch runs before the prompt. In the run input ConfigMap as system-prompt.',
        ),
      ),
    ),
    allowed_tools: parseDefault(
      v.pipe(v.array(v.string()), v.description('Tools the agent may use without asking (auto mode).')),
      [],
    ),
    disallowed_tools: parseDefault(
      v.pipe(v.array(v.string()), v.description('Tools the agent must not use (every mode).')),
      [],
    ),
    permission_mode: parseDefault(
      v.pipe(lenientEnum(PERMISSION_MODES), v.description('Permission mode: auto (default) or bypass.')),
      'auto',
    ),
    max_turns: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.description('Turn cap of the agent; absent = uncapped.'),
      ),
    ),
    resources: parseDefault(ResourcesSchema, {}),
    sidecars: parseDefault(
      v.pipe(
        v.array(SidecarSchema),
        v.description(
          'Tool containers next to the agent, as native sidecars (they start before the agent and stop after it), hardened like the agent container.',
        ),
      ),
      [],
    ),
    rbac: v.optional(RbacRequestSchema),
    dependencies: parseDefault(
      v.pipe(
        v.array(DependencySchema),
        v.description(
          'Services that must have ready endpoints before a run starts (it waits without taking a run slot); past the timeout the run fails.',
        ),
      ),
      [],
    ),
    output: parseDefault(OutputSchema, {}),
    memory: v.optional(MemorySchema),
    tool_config: v.optional(freeForm('Vendor-specific settings; the exec vendor reads tool_config.command.')),
    execution: v.optional(
      v.pipe(
        lenientEnum(EXECUTION_MODES),
        v.description('How runs execute: job (default), batch, realtime or server.'),
      ),
      'job',
    ),
    batch: parseDefault(BatchSchema, {}),
    server: parseDefault(ServerSchema, {}),
    idleTimeoutSeconds: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.description(
          "Realtime runs only: seconds without a prompt after which the session is saved to the session store, its pod deleted and the Agent Suspended (no run slot held) until its next prompt. The Station's value wins. Needs a controller with a session store.",
        ),
      ),
    ),
  }),
  v.description('The recipe: model, prompt, tools, environment and output routing.'),
);
export type AgentDefinitionSpec = v.InferOutput<typeof AgentDefinitionSpecSchema>;

/** An AgentDefinition as read from the API server. AgentDefinitions have no status. */
export const AgentDefinitionSchema = v.object({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: ObjectMetaSchema,
  spec: AgentDefinitionSpecSchema,
});
export type AgentDefinition = v.InferOutput<typeof AgentDefinitionSchema>;

/**
 * Parses an AgentDefinition read from the API server: unknown fields dropped, absent lists empty, absent
 * `permission_mode` `auto`, `execution` `job`, `batch` defaulted; unknown enum strings read as the first member;
 * `output.select` entries with an unknown event are dropped (never widened to `tool_call`). A type mismatch or a
 * missing required field (`prompt`, list entry keys) is an error naming the field path.
 */
export function parseAgentDefinition(u: unknown): Result<AgentDefinition, string> {
  return parseWith(AgentDefinitionSchema, u, 'AgentDefinition');
}
