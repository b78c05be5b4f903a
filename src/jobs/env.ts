import type { McpServerSpec } from '../vendors/cli/input.ts';
// The run environment of the init and agent containers (docs/design/reference-behaviour.md#run-environment, plus
// AGENT_DEADLINE_AT).

import { mcpHeaderEnvName } from '../vendors/cli/mcp.ts';
import { BUNDLE_ROOT, DEFAULT_WORKSPACE, RUN_PATH } from './bundle.ts';

/** The one Secret per namespace every secretKeyRef of a run points at. */
export const AGENT_SECRETS_NAME = 'agent-secrets';

/** Margin the supervisor keeps inside the Job deadline, in milliseconds. */
export const DEADLINE_MARGIN_MS = 10_000;

import { RESERVED_ENV_NAMES } from '../shared/reserved-env.ts';

export { RESERVED_ENV_NAMES };

/** True when `name` is one of {@link RESERVED_ENV_NAMES} (exact, case-sensitive). */
export function isReservedEnvName(name: string): boolean {
  return RESERVED_ENV_NAMES.has(name);
}

/** The env name an MCP server's `headers_secret` is exposed under: uppercased, every non-alphanumeric → `_`. */
export function headerEnvName(secret: string): string {
  return mcpHeaderEnvName(secret);
}

/** `deadlineMinutes` clamped to at least 1 (non-integers truncated); the Station default 30 when not finite. */
export function clampDeadlineMinutes(deadlineMinutes: number | undefined): number {
  if (deadlineMinutes === undefined || !Number.isFinite(deadlineMinutes)) return 30;
  return Math.max(1, Math.trunc(deadlineMinutes));
}

/** `AGENT_DEADLINE_MS`: the Job deadline minus the 10 s margin (30 min → 1790000, 1 min → 50000). */
export function deadlineMs(deadlineMinutes: number | undefined): number {
  return clampDeadlineMinutes(deadlineMinutes) * 60_000 - DEADLINE_MARGIN_MS;
}

/**
 * `AGENT_DEADLINE_AT`: the absolute run deadline in Unix epoch milliseconds, `now + activeDeadlineSeconds * 1000 -
 * 10000`, where `now` is the Job creation time in epoch milliseconds.
 */
export function deadlineAt(now: number, deadlineMinutes: number | undefined): number {
  return Math.trunc(now) + deadlineMs(deadlineMinutes);
}

/** A literal env var. */
export interface LiteralEnvVar {
  readonly name: string;
  readonly value: string;
}
/** An env var read by the kubelet from a key of the Secret {@link AGENT_SECRETS_NAME}. */
export interface SecretEnvVar {
  readonly name: string;
  readonly valueFrom: {
    readonly secretKeyRef: { readonly name: string; readonly key: string; readonly optional: false };
  };
}
/** An env var from a field of the pod (downward API). */
export interface FieldEnvVar {
  readonly name: string;
  readonly valueFrom: { readonly fieldRef: { readonly fieldPath: string } };
}
/** One entry of a container's `env`, in Kubernetes wire shape. */
export type EnvVar = LiteralEnvVar | SecretEnvVar | FieldEnvVar;

/** `output.sinks[]` in wire shape. */
export interface SinkInput {
  readonly type: string;
  readonly url?: string | undefined;
  readonly headers_secret?: string | undefined;
  readonly path?: string | undefined;
}
/** `resources.repos[]` in wire shape. */
export interface RepoInput {
  readonly name: string;
  readonly url: string;
  readonly ref?: string | undefined;
  readonly path?: string | undefined;
  readonly token_secret?: string | undefined;
}
/** `resources.mcp_servers[]` in wire shape (the same shape the vendor argv builders read). */
export type McpServerInput = McpServerSpec;
/** `resources.conversation` in wire shape. */
export interface ConversationInput {
  readonly source?: string | undefined;
  readonly id?: string | undefined;
  readonly pin?: string | undefined;
  readonly headers_secret?: string | undefined;
}
/** `output.select[]` in wire shape. */
export interface SelectInput {
  readonly event: string;
  readonly tool?: string | undefined;
  readonly role?: string | undefined;
  readonly contains?: string | undefined;
}
/** `output.watch[]` in wire shape. */
export interface WatchInput {
  readonly event: string;
  readonly path: string;
}
/** `AgentDefinition.spec.resources` in wire shape (only the parts the run env reads). */
export interface ResourcesInput {
  readonly env?: readonly { readonly name: string; readonly value: string }[] | undefined;
  readonly secrets?: readonly { readonly name: string; readonly ref: string }[] | undefined;
  readonly mcp_servers?: readonly McpServerInput[] | undefined;
  readonly repos?: readonly RepoInput[] | undefined;
  readonly skills?: readonly string[] | undefined;
  readonly skills_source?: string | undefined;
  readonly conversation?: ConversationInput | undefined;
}
/** `AgentDefinition.spec.output` in wire shape (only the parts the run env reads). */
export interface OutputInput {
  readonly sinks?: readonly SinkInput[] | undefined;
  readonly select?: readonly SelectInput[] | undefined;
  readonly watch?: readonly WatchInput[] | undefined;
}

/** Everything {@link runEnv} reads. */
export interface RunEnvInput {
  readonly agentName: string;
  readonly stationName: string;
  readonly taskId?: string | undefined;
  readonly targetRepo?: string | undefined;
  readonly branch?: string | undefined;
  readonly parameters?: Readonly<Record<string, string>> | undefined;
  /** The resolved model (Agent, else definition, else the default); exposed as `AGENT_MODEL`. */
  readonly model: string;
  /** Station `deadlineMinutes`; clamped to at least 1. */
  readonly deadlineMinutes?: number | undefined;
  /** Job creation time, Unix epoch milliseconds. */
  readonly now: number;
  readonly resources?: ResourcesInput | undefined;
  readonly output?: OutputInput | undefined;
}

const literal = (name: string, value: string): LiteralEnvVar => ({ name, value });
const secret = (name: string, key: string): SecretEnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: AGENT_SECRETS_NAME, key, optional: false } },
});
const field = (name: string, fieldPath: string): FieldEnvVar => ({
  name,
  valueFrom: { fieldRef: { fieldPath } },
});

/** A secret-name field as the run sees it: reserved names are blanked to `""`. */
const unreserved = (name: string | undefined): string =>
  name === undefined || isReservedEnvName(name) ? '' : name;

/** Copies `entry` keeping only the keys whose value is defined, in the order of `keys`. */
function wire<T extends object>(entry: T, keys: readonly (keyof T & string)[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (entry[key] !== undefined) out[key] = entry[key];
  return out;
}

/** Sinks in wire shape with a reserved `headers_secret` blanked, as serialized into `AGENT_SINKS`. */
export function sinksForRun(sinks: readonly SinkInput[] | undefined): Record<string, unknown>[] {
  return (sinks ?? []).map((sink) => {
    const out = wire(sink, ['type', 'url', 'headers_secret', 'path']);
    if (sink.headers_secret !== undefined) out.headers_secret = unreserved(sink.headers_secret);
    return out;
  });
}

/** Repos in wire shape with a reserved `token_secret` blanked, as serialized into `AGENT_REPOS`. */
export function reposForRun(repos: readonly RepoInput[] | undefined): Record<string, unknown>[] {
  return (repos ?? []).map((repo) => {
    const out = wire(repo, ['name', 'url', 'ref', 'path', 'token_secret']);
    if (repo.token_secret !== undefined) out.token_secret = unreserved(repo.token_secret);
    return out;
  });
}

/**
 * The run env, identical on the init and agent containers, in the reference's emitted order with
 * `AGENT_DEADLINE_AT` right after `AGENT_DEADLINE_MS`. Reserved names supplied by the recipe are dropped (env,
 * secrets, MCP header names, repo tokens) or blanked (sink and conversation `headers_secret`), each secret env name
 * is injected at most once, and every secret travels as a secretKeyRef on {@link AGENT_SECRETS_NAME}, never as a
 * value. Pure: the same input always yields the same list.
 */
export function runEnv(input: RunEnvInput): EnvVar[] {
  const res = input.resources ?? {};
  const out = input.output ?? {};
  const env: EnvVar[] = [];
  const injected = new Set<string>();
  const injectSecret = (name: string, key: string): void => {
    if (name === '' || isReservedEnvName(name) || injected.has(name)) return;
    injected.add(name);
    env.push(secret(name, key));
  };

  // 1-2: sinks and their header secrets.
  env.push(literal('AGENT_SINKS', JSON.stringify(sinksForRun(out.sinks))));
  for (const sink of out.sinks ?? []) {
    if (sink.type !== 'http') continue;
    const name = unreserved(sink.headers_secret);
    injectSecret(name, name);
  }
  // 3: MCP header secrets, exposed under a shell-safe name, key = the raw secret name.
  for (const server of res.mcp_servers ?? []) {
    if (!server.headers_secret) continue;
    injectSecret(headerEnvName(server.headers_secret), server.headers_secret);
  }
  // 4-6: repos and skills.
  const repos = reposForRun(res.repos);
  env.push(literal('AGENT_REPOS', JSON.stringify(repos)));
  env.push(literal('AGENT_SKILLS', JSON.stringify(res.skills ?? [])));
  env.push(literal('AGENT_SKILLS_SOURCE', res.skills_source ?? ''));
  // 7-11: conversation.
  const conv = res.conversation ?? {};
  const convAuth = unreserved(conv.headers_secret);
  injectSecret(convAuth, convAuth);
  env.push(literal('AGENT_CONVERSATION_AUTH', convAuth));
  env.push(literal('AGENT_CONVERSATION_SOURCE', conv.source ?? ''));
  env.push(literal('AGENT_CONVERSATION_ID', conv.id ?? ''));
  env.push(literal('AGENT_CONVERSATION_PIN', conv.pin ?? ''));
  // 12: deadlines.
  env.push(literal('AGENT_DEADLINE_MS', String(deadlineMs(input.deadlineMinutes))));
  env.push(literal('AGENT_DEADLINE_AT', String(deadlineAt(input.now, input.deadlineMinutes))));
  // 13-14: repo tokens, and the first one aliased as GH_TOKEN for `gh`.
  for (const repo of res.repos ?? []) {
    const name = unreserved(repo.token_secret);
    injectSecret(name, name);
  }
  const firstToken = (res.repos ?? []).map((r) => unreserved(r.token_secret)).find((t) => t !== '');
  if (firstToken !== undefined) injectSecret('GH_TOKEN', firstToken);
  // 15-16: sink filter and file events.
  if (out.select !== undefined && out.select.length > 0) {
    const select = out.select.map((s) => wire(s, ['event', 'tool', 'role', 'contains']));
    env.push(literal('AGENT_SELECT', JSON.stringify(select)));
  }
  if (out.watch !== undefined && out.watch.length > 0) {
    env.push(literal('AGENT_WATCH', JSON.stringify(out.watch.map((w) => wire(w, ['event', 'path'])))));
  }
  // 17-26: run identity.
  env.push(literal('WORKSPACE_DIR', DEFAULT_WORKSPACE));
  if (input.parameters !== undefined && Object.keys(input.parameters).length > 0) {
    env.push(literal('AGENT_PARAMETERS', JSON.stringify(input.parameters)));
  }
  if (input.targetRepo) env.push(literal('TARGET_REPO', input.targetRepo));
  if (input.branch) env.push(literal('BRANCH_NAME', input.branch));
  env.push(literal('AGENT_MODEL', input.model));
  env.push(literal('AGENT_NAME', input.agentName));
  env.push(literal('STATION_NAME', input.stationName));
  env.push(literal('TASK_ID', input.taskId ?? ''));
  env.push(field('POD_NAME', 'metadata.name'));
  env.push(field('POD_NAMESPACE', 'metadata.namespace'));
  // 27-28: recipe env (reserved dropped) and recipe secrets (reserved or already injected dropped).
  for (const e of res.env ?? []) if (!isReservedEnvName(e.name)) env.push(literal(e.name, e.value));
  for (const s of res.secrets ?? []) injectSecret(s.name, s.ref);
  // 29-30.
  env.push(literal('HOME', BUNDLE_ROOT));
  env.push(literal('PATH', RUN_PATH));
  return env;
}
