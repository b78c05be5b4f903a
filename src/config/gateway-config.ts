// The model gateway's configuration (`agent-controller gateway`, docs/design/gateway.md), read once at start-up from
// its flags and the environment through valibot. The upstream base URLs are the gateway's own: a run never chooses
// where its namespace's key is sent.
import * as v from 'valibot';
import { type LogLevel, parseLogLevel } from '../shared/log.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { httpUrl, IP_LITERAL, namespaceName, port } from './env-fields.ts';

/** The vendors' own API addresses, the default upstreams. */
export const DEFAULT_UPSTREAMS = {
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com',
  gemini: 'https://generativelanguage.googleapis.com',
} as const;

/** Port of the model APIs. */
export const DEFAULT_GATEWAY_PORT = 8080;
/** Port of `/healthz`, `/readyz` and `/metrics`. */
export const DEFAULT_GATEWAY_METRICS_PORT = 9090;

export interface GatewayConfig {
  readonly kubeconfig: string | undefined;
  /** The gateway's own namespace: where the Secret agent-controller-gateway (the HMAC key) is read. */
  readonly namespace: string;
  /** Port of the model APIs (`--port`, `AGENT_GATEWAY_PORT`, default 8080). */
  readonly port: number;
  /** Port of health and metrics (`--metrics-port`, `AGENT_GATEWAY_METRICS_PORT`, default 9090). */
  readonly metricsPort: number;
  /** Address both servers bind (`--bind-address`, default 0.0.0.0). */
  readonly bindAddress: string;
  readonly logLevel: LogLevel;
  /**
   * Where each vendor's calls go, without a trailing slash (`AGENT_GATEWAY_ANTHROPIC_URL`, `AGENT_GATEWAY_OPENAI_URL`,
   * `AGENT_GATEWAY_GEMINI_URL`; default the vendor's API). A path is kept: `https://proxy/anthropic` + `/v1/messages`.
   */
  readonly upstreams: Readonly<Record<keyof typeof DEFAULT_UPSTREAMS, string>>;
  /** Rate limits (docs/design/gateway.md#rate-limits): the replicas sharing each key's configured limits, the longest wait. */
  readonly rateLimits: { readonly replicas: number; readonly maxWaitMs: number };
}

/** The flags of `gateway`, as node:util parseArgs gives them. */
export interface GatewayFlags {
  readonly kubeconfig?: string | undefined;
  readonly namespace?: string | undefined;
  readonly port?: string | undefined;
  readonly metricsPort?: string | undefined;
  readonly bindAddress?: string | undefined;
  readonly logLevel?: string | undefined;
}

const EnvSchema = v.object({
  KUBECONFIG: v.optional(v.string()),
  POD_NAMESPACE: v.optional(v.string()),
  AGENT_GATEWAY_PORT: v.optional(port('AGENT_GATEWAY_PORT')),
  AGENT_GATEWAY_METRICS_PORT: v.optional(port('AGENT_GATEWAY_METRICS_PORT')),
  LOG_LEVEL: v.optional(v.string()),
  AGENT_GATEWAY_ANTHROPIC_URL: v.optional(httpUrl('AGENT_GATEWAY_ANTHROPIC_URL')),
  AGENT_GATEWAY_OPENAI_URL: v.optional(httpUrl('AGENT_GATEWAY_OPENAI_URL')),
  AGENT_GATEWAY_GEMINI_URL: v.optional(httpUrl('AGENT_GATEWAY_GEMINI_URL')),
  AGENT_GATEWAY_REPLICAS: v.optional(wholeNumber('AGENT_GATEWAY_REPLICAS', 1, 100)),
  AGENT_GATEWAY_MAX_WAIT_SECONDS: v.optional(wholeNumber('AGENT_GATEWAY_MAX_WAIT_SECONDS', 0, 600)),
});

/** A whole number in [min, max] given as text. */
function wholeNumber(name: string, min: number, max: number) {
  return v.pipe(
    v.string(),
    v.regex(/^\d+$/, `${name} must be a whole number`),
    v.transform(Number),
    v.minValue(min, `${name} must be at least ${min}`),
    v.maxValue(max, `${name} must be at most ${max}`),
  );
}

/** The longest a call waits for its key's capacity by default. */
export const DEFAULT_MAX_WAIT_SECONDS = 30;

const firstIssue = (issues: readonly { message: string }[], fallback: string) =>
  issues[0]?.message ?? fallback;

/** A port flag's value, or the error naming the flag. */
function portFlag(flag: string, value: string | undefined, fallback: number): Result<number, string> {
  if (value === undefined) return ok(fallback);
  const p = v.safeParse(port(flag), value);
  return p.success ? ok(p.output) : err(firstIssue(p.issues, `invalid ${flag}`));
}

const trimSlash = (url: string): string => url.replace(/\/+$/, '');

/**
 * Flags and environment to a frozen configuration; `inClusterNamespace` is the service-account namespace file's text
 * in a pod. Precedence: flag, environment, in-cluster, default (`ai-agents`). Errors are one line naming the input.
 */
export function parseGatewayConfig(
  flags: GatewayFlags,
  env: Readonly<Record<string, string | undefined>>,
  inClusterNamespace: string | undefined,
): Result<GatewayConfig, string> {
  const parsed = v.safeParse(EnvSchema, env);
  if (!parsed.success) return err(firstIssue(parsed.issues, 'invalid environment'));
  const e = parsed.output;
  const namespace = flags.namespace ?? (inClusterNamespace?.trim() || e.POD_NAMESPACE?.trim() || 'ai-agents');
  const ns = v.safeParse(
    namespaceName(flags.namespace !== undefined ? '--namespace' : 'POD_NAMESPACE'),
    namespace,
  );
  if (!ns.success) return err(firstIssue(ns.issues, 'invalid namespace'));
  const apiPort = portFlag('--port', flags.port, e.AGENT_GATEWAY_PORT ?? DEFAULT_GATEWAY_PORT);
  if (!apiPort.ok) return apiPort;
  const metricsPort = portFlag(
    '--metrics-port',
    flags.metricsPort,
    e.AGENT_GATEWAY_METRICS_PORT ?? DEFAULT_GATEWAY_METRICS_PORT,
  );
  if (!metricsPort.ok) return metricsPort;
  const bindAddress = flags.bindAddress ?? '0.0.0.0';
  if (!IP_LITERAL.test(bindAddress) && bindAddress !== 'localhost')
    return err(`bind address must be an IP address or localhost, got: ${JSON.stringify(bindAddress)}`);
  const levelName = flags.logLevel ?? e.LOG_LEVEL ?? 'info';
  const logLevel = parseLogLevel(levelName);
  if (!logLevel)
    return err(`log level must be debug, info, warn or error, got: ${JSON.stringify(levelName)}`);
  return ok(
    Object.freeze({
      kubeconfig: flags.kubeconfig ?? (e.KUBECONFIG || undefined),
      namespace,
      port: apiPort.value,
      metricsPort: metricsPort.value,
      bindAddress,
      logLevel,
      upstreams: Object.freeze({
        anthropic: trimSlash(e.AGENT_GATEWAY_ANTHROPIC_URL ?? DEFAULT_UPSTREAMS.anthropic),
        openai: trimSlash(e.AGENT_GATEWAY_OPENAI_URL ?? DEFAULT_UPSTREAMS.openai),
        gemini: trimSlash(e.AGENT_GATEWAY_GEMINI_URL ?? DEFAULT_UPSTREAMS.gemini),
      }),
      rateLimits: Object.freeze({
        replicas: e.AGENT_GATEWAY_REPLICAS ?? 1,
        maxWaitMs: (e.AGENT_GATEWAY_MAX_WAIT_SECONDS ?? DEFAULT_MAX_WAIT_SECONDS) * 1000,
      }),
    }),
  );
}
