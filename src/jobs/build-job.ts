// The Job that runs one Agent (docs/design/reference-behaviour.md#the-run-job, with differences D-b and D-h, and
// AGENT_DEADLINE_AT).

import {
  type Agent,
  type AgentDefinition,
  JOB_API_VERSION,
  resolveModel,
  type Station,
} from '../api/index.ts';
import type { JsonObject } from '../shared/json-object.ts';
import { parseQuantity } from '../shared/quantity.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { runPodTraceParent, runTrace } from '../shared/trace-context.ts';
import { vendorCommand } from '../vendors/cli/argv.ts';
import {
  argvWithoutPrompt,
  deliverPrompt,
  MAX_ARG_BYTES,
  utf8Bytes,
} from '../vendors/cli/prompt-delivery.ts';
import type { Vendor } from '../vendors/cli/route.ts';
import { CLI_SETTINGS_ENV, cliSettings } from '../vendors/cli/settings.ts';
import { supervisorCommand } from './bundle.ts';
import {
  clampDeadlineMinutes,
  type EnvVar,
  headerEnvName,
  isReservedEnvName,
  type McpServerInput,
  runEnv,
} from './env.ts';
import { type GatewayTarget, gatewayEnv } from './gateway.ts';
import { type MemoryRead, memoryAnnotations, promptWithMemory } from './memory.ts';
import { jobNameFor } from './names.ts';
import { findNul, nulInPod } from './nul.ts';
import { INIT_RESOURCES, MIN_TOKEN_SECONDS, wirePodTemplate } from './pod-template.ts';
import { runPromptText, runSystemPrompt } from './prompt.ts';
import {
  ANNOTATION_SESSION_RESTORE,
  LABEL_EXECUTION,
  PROMPT_TOKEN_KEY,
  promptTokenSecretName,
  REALTIME_PORT,
} from './realtime.ts';
import {
  buildInputConfigMap,
  INPUT_PARAMETERS_FILE,
  INPUT_PROMPT_FILE,
  INPUT_SYSTEM_PROMPT_FILE,
  type InputConfigMapManifest,
  inputConfigMapName,
  parametersPlacement,
} from './run-input.ts';
import { type RunObjectMetadata, runLabels, runObjectMetadata } from './run-metadata.ts';
import { SERVER_PORT } from './server-names.ts';
import { buildSidecars, sidecarMcpServers } from './sidecars.ts';

/** What a policy imposes on the parts of a run pod the controller writes: the seccomp profile, resource caps. */
export interface RunLimits {
  readonly seccompProfile?:
    | { readonly type: string; readonly localhostProfile?: string | undefined }
    | undefined;
  readonly maxCpu?: string | undefined;
  readonly maxMemory?: string | undefined;
}

/** The smaller of two quantities (the first when either is not one). */
function minQuantity(a: string, b: string): string {
  const x = parseQuantity(a);
  const y = parseQuantity(b);
  return x !== undefined && y !== undefined && y < x ? b : a;
}

/**
 * The init container's resources under a policy's caps: requests and limits never above a cap, and a cap's
 * resource always limited (a capped resource needs a limit on every container).
 */
export function cappedInitResources(limits: RunLimits | undefined): JsonObject {
  const requests = INIT_RESOURCES.requests as Record<string, string>;
  const own = INIT_RESOURCES.limits as Record<string, string>;
  const capped = (resource: 'cpu' | 'memory', cap: string | undefined) => ({
    request: cap === undefined ? requests[resource] : minQuantity(requests[resource] ?? cap, cap),
    limit: cap === undefined ? own[resource] : minQuantity(own[resource] ?? cap, cap),
  });
  const cpu = capped('cpu', limits?.maxCpu);
  const memory = capped('memory', limits?.maxMemory);
  const pick = (r: { cpu: string | undefined; memory: string | undefined }) =>
    Object.fromEntries(Object.entries(r).filter(([, q]) => q !== undefined));
  return {
    requests: pick({ cpu: cpu.request, memory: memory.request }),
    limits: pick({ cpu: cpu.limit, memory: memory.limit }),
  };
}

/** True when the run's agent container gets a token: the definition asks for RBAC and the run has a pod of its own. */
export function runHoldsToken(definition: AgentDefinition): boolean {
  const rbac = definition.spec.rbac;
  return (
    definition.spec.execution !== 'batch' &&
    rbac !== undefined &&
    (rbac.roles.length > 0 || rbac.clusterRoles.length > 0)
  );
}

/** A run token's lifetime: the run's deadline, but never under the API server's minimum of 10 minutes. */
export function tokenSeconds(deadlineMinutes: number): number {
  return Math.max(MIN_TOKEN_SECONDS, clampDeadlineMinutes(deadlineMinutes) * 60);
}

/** Seconds a finished run Job is kept before the TTL controller deletes it. */
export const JOB_TTL_SECONDS_AFTER_FINISHED = 3600;
/** Retries of a run pod: none, a failed run is final. */
export const JOB_BACKOFF_LIMIT = 0;

/** A batch/v1 Job manifest ready to POST. */
export interface JobManifest {
  readonly apiVersion: typeof JOB_API_VERSION;
  readonly kind: 'Job';
  readonly metadata: RunObjectMetadata;
  readonly spec: {
    readonly ttlSecondsAfterFinished: number;
    readonly activeDeadlineSeconds: number;
    readonly backoffLimit: number;
    readonly template: JsonObject;
  };
}

/** Everything one Job is built from. */
export interface BuildJobInput {
  readonly agent: Agent;
  readonly station: Station;
  readonly definition: AgentDefinition;
  /** Image of the init container: the controller's `AGENT_IMAGE`. */
  readonly agentImage: string;
  /** Job creation time; `AGENT_DEADLINE_AT` counts from it. */
  readonly now: Date;
  /** What the Station's AgentPolicy imposes on the pod the controller adds to (absent: nothing). */
  readonly limits?: RunLimits | undefined;
  /**
   * The memory a run of a definition with `spec.memory` read at its start (issue 10 §3): added to its prompt and
   * recorded on its Job. Absent: an empty memory, whose version is unknown. Ignored without `spec.memory`.
   */
  readonly memory?: MemoryRead | undefined;
  /**
   * Tracing (issue 10 §5): the pod gets the run's trace context (`TRACEPARENT`, its root span as parent) and exports
   * its spans to `tracesUrl`. Absent: no tracing env.
   */
  readonly tracing?: { readonly tracesUrl: string } | undefined;
  /**
   * The model gateway (issue 28): the run's vendor key variables read its gateway credential and its base-URL
   * variables name the gateway (`gatewayEnv`). Absent: the keys come from agent-secrets as the recipe says.
   */
  readonly gateway?: GatewayTarget | undefined;
  /**
   * A realtime run that restores a saved session (docs/design/sessions.md): its pod gets `AGENT_SESSION_RESTORE=true`,
   * sends no opening prompt and waits for its state. Default off; the Agent's annotation
   * `agents.re-cinq.com/session-restore: "true"` asks for it too. Ignored for other execution modes.
   */
  readonly sessionRestore?: boolean | undefined;
}

/** Whether a realtime run's pod restores a session: the build input says so, or the Agent's annotation. Pure. */
export function sessionRestoreOf(input: Pick<BuildJobInput, 'agent' | 'sessionRestore'>): boolean {
  return (
    input.sessionRestore === true || input.agent.metadata.annotations?.[ANNOTATION_SESSION_RESTORE] === 'true'
  );
}

/** Why a Job cannot be built: one line, shown after `Job build failed: ` in `status.failureReason`. */
export type BuildError = string;

/** MCP servers as the vendor argv sees them: a reserved `headers_secret` is blanked (never sent as a header). */
function mcpForArgv(servers: readonly McpServerInput[]): McpServerInput[] {
  return servers.map((s) =>
    s.headers_secret !== undefined && isReservedEnvName(headerEnvName(s.headers_secret))
      ? { ...s, headers_secret: '' }
      : s,
  );
}

/**
 * The agent container's extra env of a realtime run: the mode, the prompt port, the recipe the supervisor builds each
 * turn's argv from (the vendor options, no prompt, no secret), the session to resume, whether it restores a saved
 * session, and the run's prompt token from its own Secret.
 */
function realtimeEnv(agent: Agent, definition: AgentDefinition, restore: boolean): EnvVar[] {
  return [
    { name: 'AGENT_EXECUTION', value: 'realtime' },
    { name: 'AGENT_PROMPT_PORT', value: String(REALTIME_PORT) },
    { name: 'AGENT_POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    { name: 'AGENT_RUN_RECIPE', value: JSON.stringify(turnRecipe(agent, definition)) },
    ...(agent.spec.resumeSession ? [{ name: 'AGENT_RESUME_SESSION', value: agent.spec.resumeSession }] : []),
    ...(restore ? [{ name: 'AGENT_SESSION_RESTORE', value: 'true' }] : []),
    {
      name: 'AGENT_PROMPT_TOKEN',
      valueFrom: {
        secretKeyRef: {
          name: promptTokenSecretName(agent.metadata.name),
          key: PROMPT_TOKEN_KEY,
          optional: false,
        },
      },
    },
  ];
}

/** What each turn's argv is built from (realtime and server pods): the vendor options, no prompt, no secret. */
function turnRecipe(agent: Agent, definition: AgentDefinition) {
  const d = definition.spec;
  return {
    model: resolveModel(agent, definition),
    permissionMode: d.permission_mode,
    allowedTools: d.allowed_tools,
    disallowedTools: d.disallowed_tools,
    maxTurns: d.max_turns,
    mcpServers: mcpForArgv([...d.resources.mcp_servers, ...sidecarMcpServers(definition)]),
  };
}

/**
 * `AGENT_CLI_SETTINGS`: what the recipe asks of a CLI that only its settings take (Gemini CLI's and OpenCode's deny
 * list, src/vendors/cli/settings.ts), in every mode; none when there is nothing to say.
 */
function cliSettingsEnv(vendor: Vendor, agent: Agent, definition: AgentDefinition): EnvVar[] {
  const settings = cliSettings(vendor, { ...turnRecipe(agent, definition), prompt: '' });
  return settings === undefined ? [] : [{ name: CLI_SETTINGS_ENV, value: JSON.stringify(settings) }];
}

/**
 * The agent container's extra env of a server (issue 12): the mode, the port, the recipe of each request's turn and
 * the limits. The API key reaches the pod as a mounted file (the server's pod template, src/jobs/server.ts).
 */
function serverEnv(agent: Agent, definition: AgentDefinition): EnvVar[] {
  const server = definition.spec.server;
  return [
    { name: 'AGENT_EXECUTION', value: 'server' },
    { name: 'AGENT_SERVER_PORT', value: String(SERVER_PORT) },
    { name: 'AGENT_POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    { name: 'AGENT_RUN_RECIPE', value: JSON.stringify(turnRecipe(agent, definition)) },
    { name: 'AGENT_SERVER_CONCURRENCY', value: String(server.concurrency) },
    { name: 'AGENT_SERVER_REQUEST_TIMEOUT_SECONDS', value: String(server.requestTimeoutSeconds) },
  ];
}

/**
 * The tracing env of a traced run pod: its trace context (`TRACEPARENT`, the W3C name, so a CLI that reads it joins
 * the run's trace) and where the supervisor exports (`AGENT_OTLP_TRACES_ENDPOINT`, a name of ours: the OTel
 * variables a recipe may set for its CLI's own telemetry stay the recipe's).
 */
function tracingEnv(agent: Agent, tracesUrl: string): EnvVar[] {
  const trace = runTrace(agent.metadata.uid, agent.metadata.annotations);
  return [
    { name: 'TRACEPARENT', value: runPodTraceParent(trace) },
    { name: 'AGENT_OTLP_TRACES_ENDPOINT', value: tracesUrl },
  ];
}

/**
 * The prompt of a run: the rendered template, followed, for a definition with memory, by the memory it read and
 * the memory instruction.
 */
export function runPrompt(agent: Agent, definition: AgentDefinition, memory: MemoryRead | undefined): string {
  const rendered = runPromptText(agent, definition);
  const m = definition.spec.memory;
  return m === undefined ? rendered : promptWithMemory(rendered, memory?.content ?? '', m.maxSizeKB);
}

/** The vendor command of a run: resolved model, its prompt, recipe options. */
function vendorCommandFor(agent: Agent, definition: AgentDefinition, memory: MemoryRead | undefined) {
  const d = definition.spec;
  return vendorCommand({
    model: resolveModel(agent, definition),
    prompt: runPrompt(agent, definition, memory),
    permissionMode: d.permission_mode,
    allowedTools: d.allowed_tools,
    disallowedTools: d.disallowed_tools,
    maxTurns: d.max_turns,
    mcpServers: mcpForArgv([...d.resources.mcp_servers, ...sidecarMcpServers(definition)]),
    resumeSession: agent.spec.resumeSession,
    conversationPin: d.resources.conversation?.pin,
    toolConfig: d.tool_config,
  });
}

/**
 * Builds the Job that runs `agent` in `station` with `definition`. Pure and total: never throws, never reads the
 * clock. The Job is named `jobNameFor(agent)`, lives in the Agent's namespace, is controlled by the Agent
 * (ownerReference with controller and blockOwnerDeletion), carries the run labels and the Agent uid annotation,
 * has ttlSecondsAfterFinished 3600, backoffLimit 0, activeDeadlineSeconds `max(1, deadlineMinutes) * 60`, and a
 * pod template wired from the Station's (see `wirePodTemplate`) whose agent container runs the supervisor around
 * the vendor argv of the resolved model with the rendered prompt (for a definition with memory: followed by the
 * memory read and the instruction, with the `agent-memory` mount and annotations recording the memory it started
 * with). Errors (docs/design/reference-behaviour.md#d-b-unbuildable-job-fails: the run fails with the message): an
 * invalid Station template or host escape, an
 * exec recipe without a usable command, a flag-shaped resume id or pin, an empty `agentImage`, an invalid `now`.
 */
export function buildJob(input: BuildJobInput): Result<JobManifest, BuildError> {
  const { agent, station, definition } = input;
  const now = input.now.getTime();
  if (!Number.isFinite(now)) return err('the Job creation time is not a valid date');
  if (input.agentImage.trim() === '') return err('the controller has no AGENT_IMAGE for the init container');

  const command = vendorCommandFor(agent, definition, input.memory);
  if (!command.ok) return command;
  // The prompt travels in the run's input ConfigMap (issue 10 §1): the Job's argv lacks it, and the supervisor puts
  // it back as the CLI takes it. Whether it can (its size, the CLI's stdin) is known now, so a run that could not
  // start fails here with the reason.
  const cliArgv = argvWithoutPrompt(command.value.argv);
  const prompt = runPrompt(agent, definition, input.memory);
  const systemPrompt = runSystemPrompt(agent, definition);
  const delivery = deliverPrompt(command.value.vendor, cliArgv, prompt, systemPrompt);
  if (!delivery.ok)
    return err(definition.spec.memory === undefined ? delivery.error : `${delivery.error} (with its memory)`);
  // Linux refuses a single argument over MAX_ARG_STRLEN: the run would never start (E2BIG), so say so now.
  const oversized = cliArgv.find((a) => utf8Bytes(a) > MAX_ARG_BYTES);
  if (oversized !== undefined) {
    return err(
      `a CLI argument of ${utf8Bytes(oversized)} bytes: one argument holds at most ${MAX_ARG_BYTES} bytes`,
    );
  }
  const stationTemplate = station.spec.template as unknown;
  const templateSpec =
    typeof stationTemplate === 'object' && stationTemplate !== null
      ? (stationTemplate as { spec?: unknown }).spec
      : undefined;
  const templateContainers =
    typeof templateSpec === 'object' && templateSpec !== null
      ? (templateSpec as { containers?: unknown }).containers
      : undefined;
  const podContainerNames = Array.isArray(templateContainers)
    ? templateContainers.map((c: unknown) => String((c as { name?: unknown } | null)?.name ?? ''))
    : [];
  const sidecars = buildSidecars(definition, podContainerNames);
  if (!sidecars.ok) return sidecars;

  const d = definition.spec;
  const memory = d.memory;
  const parameters = parametersPlacement(agent.spec.parameters, prompt);
  const fullEnv = runEnv({
    agentName: agent.metadata.name,
    stationName: station.metadata.name,
    taskId: agent.spec.taskId,
    targetRepo: agent.spec.targetRepo,
    branch: agent.spec.branch,
    parameters: agent.spec.parameters,
    model: resolveModel(agent, definition),
    deadlineMinutes: station.spec.deadlineMinutes,
    now,
    resources: d.resources,
    output: d.output,
  });
  // Parameters too large for one env string are read from the input ConfigMap, or only through the prompt.
  const paramEnv = parameters === 'env' ? fullEnv : fullEnv.filter((e) => e.name !== 'AGENT_PARAMETERS');
  const env =
    input.gateway !== undefined ? gatewayEnv(paramEnv, input.gateway, agent.metadata.name) : paramEnv;
  const realtime = d.execution === 'realtime';
  const server = d.execution === 'server';
  const labels = {
    ...runLabels(agent.metadata.name, station.metadata.name),
    ...(realtime || server ? { [LABEL_EXECUTION]: d.execution } : {}),
  };
  const resume = agent.spec.resumeSession ?? '';
  const template = wirePodTemplate(station.spec.template as unknown, {
    command: supervisorCommand(cliArgv),
    // A realtime resume restores the conversation of that session (the init's conversation restore).
    env:
      realtime && resume !== ''
        ? env.map((e) => (e.name === 'AGENT_CONVERSATION_ID' ? { name: e.name, value: resume } : e))
        : env,
    initImage: input.agentImage,
    labels,
    profile: station.spec.podSecurityProfile,
    sidecars: sidecars.value,
    serviceAccountName: jobNameFor(agent.metadata.name),
    initResources: cappedInitResources(input.limits),
    ...(input.limits?.seccompProfile !== undefined
      ? { seccompProfile: { ...input.limits.seccompProfile } }
      : {}),
    ...(runHoldsToken(definition)
      ? { agentToken: { expirationSeconds: tokenSeconds(station.spec.deadlineMinutes) } }
      : {}),
    ...(memory !== undefined ? { memory: { configMap: memory.configMap } } : {}),
    input: {
      configMap: inputConfigMapName(agent.metadata.name),
      keys: { parameters: parameters === 'file', systemPrompt: systemPrompt !== undefined },
    },
    agentEnv: [
      { name: 'AGENT_PROMPT_FILE', value: INPUT_PROMPT_FILE },
      ...(systemPrompt !== undefined
        ? [{ name: 'AGENT_SYSTEM_PROMPT_FILE', value: INPUT_SYSTEM_PROMPT_FILE }]
        : []),
      ...(parameters === 'file' ? [{ name: 'AGENT_PARAMETERS_FILE', value: INPUT_PARAMETERS_FILE }] : []),
      ...(input.tracing !== undefined ? tracingEnv(agent, input.tracing.tracesUrl) : []),
      ...cliSettingsEnv(command.value.vendor, agent, definition),
      ...(realtime ? realtimeEnv(agent, definition, sessionRestoreOf(input)) : []),
      ...(server ? serverEnv(agent, definition) : []),
    ],
    ...(realtime ? { agentPorts: [{ name: 'prompt', containerPort: REALTIME_PORT }] } : {}),
    ...(server ? { agentPorts: [{ name: 'http', containerPort: SERVER_PORT }] } : {}),
  });
  if (!template.ok) return template;
  const nul = findNul(template.value);
  if (nul !== undefined) return err(nulInPod(nul));

  const metadata = runObjectMetadata(agent, station.metadata.name);
  return ok({
    apiVersion: JOB_API_VERSION,
    kind: 'Job',
    metadata: {
      ...metadata,
      ...(realtime ? { labels: { ...metadata.labels, [LABEL_EXECUTION]: 'realtime' } } : {}),
      // What the run's memory is saved against when it ends (the definition may change meanwhile).
      ...(memory !== undefined
        ? {
            annotations: {
              ...metadata.annotations,
              ...memoryAnnotations(memory.configMap, memory.maxSizeKB, input.memory),
            },
          }
        : {}),
    },
    spec: {
      ttlSecondsAfterFinished: JOB_TTL_SECONDS_AFTER_FINISHED,
      activeDeadlineSeconds: clampDeadlineMinutes(station.spec.deadlineMinutes) * 60,
      backoffLimit: JOB_BACKOFF_LIMIT,
      template: template.value,
    },
  });
}

/**
 * The input ConfigMap of the run `buildJob(input)` builds (issue 10 §1): the same prompt, and the run's ids. Pure;
 * never fails (an unusable prompt fails `buildJob`, which is decided first).
 */
export function buildRunInput(input: BuildJobInput): InputConfigMapManifest {
  const { agent, station, definition } = input;
  const prompt = runPrompt(agent, definition, input.memory);
  return buildInputConfigMap(
    {
      namespace: agent.metadata.namespace,
      agent: agent.metadata.name,
      uid: agent.metadata.uid,
      station: station.metadata.name,
      definition: definition.metadata.name,
      job: jobNameFor(agent.metadata.name),
      model: resolveModel(agent, definition),
      taskId: agent.spec.taskId,
    },
    {
      prompt,
      systemPrompt: runSystemPrompt(agent, definition),
      ...(parametersPlacement(agent.spec.parameters, prompt) === 'file'
        ? { parameters: agent.spec.parameters }
        : {}),
    },
    runObjectMetadata(agent, station.metadata.name),
  );
}
