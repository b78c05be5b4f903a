import * as v from 'valibot';
import type { Result } from '../shared/result.ts';
import { GatewayGrantSchema } from './gateway.ts';
import { ConditionsSchema, ObjectMetaSchema } from './meta.ts';
import {
  anyJson,
  dateTime,
  int,
  lenientEnum,
  objectRef,
  parseDefault,
  parseWith,
  str,
} from './schema-kit.ts';

/** Phases of an Agent run. The controller never writes `Pending`; an Agent without status reads as `Pending`. */
export const AGENT_PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Serving', 'Suspended'] as const;
export type AgentPhase = (typeof AGENT_PHASES)[number];

/** Phases after which the controller never touches the run again. */
export const TERMINAL_PHASES: readonly AgentPhase[] = ['Succeeded', 'Failed'];

/** True for `Succeeded` and `Failed`. */
export function isTerminalPhase(phase: AgentPhase): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/** `Agent.spec`: one execution of a recipe inside a Station. */
export const AgentSpecSchema = v.pipe(
  v.object({
    stationRef: objectRef('Name of the Station (same namespace) whose template and recipe this run uses.'),
    taskId: v.optional(str('External correlation id; exposed to the run as TASK_ID.')),
    targetRepo: v.optional(str('GitHub owner/name the task is about; exposed as TARGET_REPO (not cloned).')),
    branch: v.optional(str('Branch name the task is about; exposed as BRANCH_NAME.')),
    parameters: parseDefault(
      v.pipe(
        v.record(v.string(), v.string()),
        v.description(
          'Values for {placeholder}s in the prompt. Not secret: they reach the run pod as the environment ' +
            'variable AGENT_PARAMETERS (JSON; over 32 KiB, parameters.json of the input ConfigMap), readable by ' +
            'anyone who can read the Job or Pod spec, and the rendered prompt holds them too. Pass secrets through ' +
            'the Secret agent-secrets instead.',
        ),
      ),
      {},
    ),
    model: v.optional(
      str(
        'Model for this run; overrides the AgentDefinition model. Default claude-opus-5-5 when neither is set.',
      ),
    ),
    resumeSession: v.optional(
      str('Session id of an earlier run to continue instead of starting a new session.'),
    ),
    suspend: v.optional(
      v.pipe(v.boolean(), v.description('A server (execution: server) scaled to zero while true.')),
    ),
  }),
  v.description('Desired run: the Station to run in and the task inputs.'),
);
export type AgentSpec = v.InferOutput<typeof AgentSpecSchema>;

/** `Agent.status`: owned by the controller; every field optional on the wire. */
/** Where a run's cost estimate comes from. */
export const COST_SOURCES = ['cli', 'priceTable', 'gateway'] as const;
export type CostSource = (typeof COST_SOURCES)[number];

const count = (description: string) =>
  v.pipe(v.number(), v.integer(), v.minValue(0), v.description(description));

/** `status.session`: a realtime session kept in the session store (issue 29, docs/design/sessions.md). */
export const SessionStatusSchema = v.pipe(
  v.object({
    turns: v.optional(count('Turns of the session that ended so far.')),
    savedTurn: v.optional(count('The last turn whose state is in the session store (0: none).')),
    lastPromptTime: v.optional(dateTime('Time the last prompt was delivered to the session.')),
    restarts: v.optional(count('Times the session was restored into a new pod after its pod was lost.')),
    suspendedAt: v.optional(dateTime('Time the session was last suspended.')),
    suspendRequest: v.optional(
      str('The agents.re-cinq.com/suspend-requested value last acted on (each value suspends once).'),
    ),
    wakeRequest: v.optional(
      str('The agents.re-cinq.com/wake-requested value last acted on (each value wakes once).'),
    ),
    restorePending: v.optional(
      dateTime('Set while a session whose pod was lost waits for a new pod (its place in the queue).'),
    ),
    cleanupAttempts: v.optional(count('Failed attempts to delete the stored session so far.')),
  }),
  v.description('The realtime session as kept in the session store (idle suspend, wake, pod loss).'),
);
export type SessionStatus = v.InferOutput<typeof SessionStatusSchema>;

export const AgentStatusSchema = v.pipe(
  v.object({
    phase: parseDefault(
      v.pipe(
        lenientEnum(AGENT_PHASES),
        v.description(
          'Run phase: Pending, Running, Succeeded, Failed, Serving (a server, until deleted), or Suspended (a realtime session saved to the session store, its pod deleted, until its next prompt).',
        ),
      ),
      'Pending',
    ),
    jobName: v.optional(str('Name of the Job that executes the run.')),
    startedAt: v.optional(dateTime('Time the run started (its Job was created).')),
    completedAt: v.optional(dateTime('Time the run reached a terminal phase.')),
    exitCode: v.optional(int('Exit code of the run; 0 only for Succeeded.')),
    output: v.optional(str('Capped tail of the agent container log.')),
    failureReason: v.optional(str('Why the run failed or why its output is unavailable.')),
    prUrl: v.optional(
      str('URL of a pull request opened by the run (declared for compatibility, not written).'),
    ),
    conditions: parseDefault(ConditionsSchema, []),
    observedGeneration: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(0),
        v.description('The .metadata.generation the status was computed from.'),
      ),
    ),
    batchId: v.optional(str('Id of the vendor batch that carries the run (batch execution).')),
    batchProvider: v.optional(str('Vendor of the batch: anthropic, openai or gemini (batch execution).')),
    batchFallback: v.optional(
      v.pipe(v.boolean(), v.description('True when a batch run timed out and fell back to a Job run.')),
    ),
    batchCleanupAttempts: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(0),
        v.description('Failed attempts to cancel or delete the vendor batch so far.'),
      ),
    ),
    url: v.optional(
      str('Where a server answers (execution: server): its route, else its Service in the cluster.'),
    ),
    serviceName: v.optional(str('The Service of a server (execution: server).')),
    apiKeySecretUID: v.optional(
      str(
        'The uid of the API-key Secret the controller generated for this server (execution: server), recorded when its create succeeded: a Secret of that name the controller did not create is never used.',
      ),
    ),
    gateway: v.optional(GatewayGrantSchema),
    sessionId: v.optional(str('Agent CLI session id of the run, usable as resumeSession of a later run.')),
    session: v.optional(SessionStatusSchema),
    traceID: v.optional(
      str(
        "OpenTelemetry trace id of the run (32 hex digits) when the controller exports traces: the trace of its spans and its pod's.",
      ),
    ),
    result: v.optional(
      anyJson(
        "The run's final answer: the CLI's final result text (capped), or with output.format json and output.schema the parsed JSON value, validated.",
      ),
    ),
    tokenUsage: v.optional(
      v.pipe(
        v.object({
          input: count('Input tokens.'),
          output: count('Output tokens.'),
          cacheRead: count('Input tokens read from the prompt cache.'),
          cacheWrite: count('Input tokens written to the prompt cache.'),
          total: count('All tokens of the run.'),
        }),
        v.description("Tokens the run used, from the vendor CLI's result (or the batch response)."),
      ),
    ),
    costEstimate: v.optional(
      v.pipe(
        v.object({
          usd: v.pipe(
            v.string(),
            v.regex(/^\d+(\.\d+)?$/),
            v.description('Estimated cost in US dollars, as a decimal string.'),
          ),
          source: v.pipe(
            lenientEnum(COST_SOURCES),
            v.description(
              'cli: the vendor CLI reported it; priceTable: tokens times the price table; gateway: the tokens the model gateway measured, times the price table.',
            ),
          ),
          model: v.optional(str('The model the price applies to.')),
        }),
        v.description('Estimated cost of the run.'),
      ),
    ),
  }),
  v.description('Observed state of the run, written by the controller.'),
);
export type AgentStatus = v.InferOutput<typeof AgentStatusSchema>;

/** An Agent as read from the API server; `status` defaults to `{ phase: 'Pending', … }` when absent. */
export const AgentSchema = v.object({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: ObjectMetaSchema,
  spec: AgentSpecSchema,
  status: parseDefault(AgentStatusSchema, {}),
});
export type Agent = v.InferOutput<typeof AgentSchema>;

/**
 * Parses an Agent read from the API server, leniently as the reference does: unknown fields are dropped, absent
 * optional fields take their defaults, an unknown phase string reads as `Pending`. A type mismatch or a missing
 * required field is an error naming the field path.
 */
export function parseAgent(u: unknown): Result<Agent, string> {
  return parseWith(AgentSchema, u, 'Agent');
}
