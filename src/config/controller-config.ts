import * as v from 'valibot';
import { checkPrefix, type SessionStoreConfig } from '../sessions/store.ts';
import { type LogLevel, parseLogLevel } from '../shared/log.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { VERSION } from '../shared/version.ts';
import { runTracesUrlFromEnv, type TracingConfig, tracingConfigFromEnv } from '../telemetry/config.ts';
import { type BatchProvider, DEFAULT_BASE_URL } from '../vendors/batch/port.ts';
import { digits, httpUrl, IP_LITERAL, isLoopback, namespaceName, port } from './env-fields.ts';

/** Sentinel namespace value meaning "watch every namespace". */
export const ALL_NAMESPACES = '*';

/** Everything the controller process is configured with, parsed once at start-up. */
export interface ControllerConfig {
  readonly kubeconfig: string | undefined;
  /** The namespace whose Agents are managed, or ALL_NAMESPACES. */
  readonly namespace: string;
  /** Where the leader-election Lease lives: the controller's own namespace; out of cluster the watched one. */
  readonly leaseNamespace: string;
  readonly leaseName: string;
  readonly identity: string;
  readonly port: number;
  /** Address the HTTP server binds (`0.0.0.0` in a pod so probes reach it; `127.0.0.1` for local runs). */
  readonly bindAddress: string;
  readonly agentImage: string;
  readonly maxOutputBytes: number;
  readonly logLevel: LogLevel;
  /** Full LIST + reconcile-all period. */
  readonly pollIntervalMs: number;
  readonly leaderElection: boolean;
  /** Agents reconciled at once (different keys; one key never runs twice at once). */
  readonly workers: number;
  /** `execution: batch` runs are submitted (`BATCH_ENABLED=true`); otherwise they fail with a clear reason. */
  readonly batchEnabled: boolean;
  /** Poll period of one in-flight vendor batch (`BATCH_POLL_SECONDS`, default 60). */
  readonly batchPollMs: number;
  /** Sweep many in-flight batches with the vendors' list endpoints (`BATCH_POLL_LIST`, default true). */
  readonly batchPollList: boolean;
  /** Vendor base URLs (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `GEMINI_BASE_URL`), for proxies and tests. */
  readonly vendorBaseUrls: Readonly<Record<BatchProvider, string>>;
  /** `execution: realtime` runs are admitted and the prompt API is served (`REALTIME_ENABLED=true`). */
  readonly realtimeEnabled: boolean;
  /** `execution: server` Agents are served (`SERVER_ENABLED=true`; issue 12). */
  readonly serverEnabled: boolean;
  /** Port of the realtime prompt API (`--api-port`, `API_PORT`, default 8443), at `bindAddress`. */
  readonly apiPort: number;
  /** TLS of the prompt API (`--tls-cert-file`, `--tls-private-key-file`); plain HTTP only on a loopback address. */
  readonly apiTls: { readonly certFile: string; readonly keyFile: string } | undefined;
  /**
   * The web console (`--console`, `CONSOLE_ENABLED=true`; off by default) on `port` (`--console-port`,
   * `CONSOLE_PORT`, default 8082) at `bindAddress` (`--console-bind-address`, `CONSOLE_BIND_ADDRESS`, default
   * 127.0.0.1: in a pod, reached with `kubectl port-forward`), over the prompt API's TLS when given (plain HTTP only on
   * a loopback address). `traceUrl` (`CONSOLE_TRACE_URL`) links a run's trace id: `{traceID}` is replaced.
   */
  readonly console:
    | { readonly port: number; readonly bindAddress: string; readonly traceUrl: string | undefined }
    | undefined;
  /**
   * Price overrides of cost estimates (`PRICES_FILE`): the ConfigMap agent-prices, key prices.json, mounted into the
   * controller pod (deploy/controller.yaml); re-read on every poll. Unset: the shipped prices only.
   */
  readonly pricesFile: string | undefined;
  /**
   * OpenTelemetry tracing (issue 10 §5; `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`,
   * `OTEL_SERVICE_NAME`), with the traces URL run pods export to (`RUN_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, default
   * the controller's). Undefined: no tracing, no exporter.
   */
  readonly tracing: (TracingConfig & { readonly runTracesUrl: string }) | undefined;
  /**
   * The model gateway's model-API URL (`AGENT_GATEWAY_URL`, issue 28; set by deploy/components/gateway): runs get a
   * gateway credential instead of vendor keys. Undefined: runs read their keys from agent-secrets.
   */
  readonly gatewayUrl: string | undefined;
  /**
   * The length of a budget "hour" in ms (`AGENT_BUDGET_HOUR_SECONDS`; default 3600 s). A test knob: it compresses
   * the windows of spend budgets (a day is 24 such hours, a month 720), so a test sees a window roll in seconds.
   */
  readonly budgetHourMs: number;
  /**
   * The session store (issue 29, docs/design/sessions.md "The store"): an S3-compatible bucket
   * (`AGENT_SESSION_STORE_URL`, `_BUCKET`, `_REGION`, `_PREFIX`, `_ACCESS_KEY_ID`, `_SECRET_ACCESS_KEY`).
   * Undefined: sessions are off.
   */
  readonly sessionStore: SessionStoreConfig | undefined;
  /**
   * How long a prompt to a Suspended session is held while the session wakes (`AGENT_SESSION_WAKE_WAIT_SECONDS`;
   * default 60 s); past it the caller gets 503 with Retry-After (issue 29).
   */
  readonly sessionWakeWaitMs: number;
}

/** Command-line flags of `controller`, as parsed by node:util parseArgs. */
export interface ControllerFlags {
  readonly kubeconfig?: string | undefined;
  readonly namespace?: string | undefined;
  readonly allNamespaces?: boolean | undefined;
  readonly port?: string | undefined;
  readonly bindAddress?: string | undefined;
  readonly logLevel?: string | undefined;
  readonly apiPort?: string | undefined;
  readonly tlsCertFile?: string | undefined;
  readonly tlsPrivateKeyFile?: string | undefined;
  readonly console?: boolean | undefined;
  readonly consolePort?: string | undefined;
  readonly consoleBindAddress?: string | undefined;
}

const EnvSchema = v.object({
  KUBECONFIG: v.optional(v.string()),
  WATCH_NAMESPACE: v.optional(v.string()),
  NAMESPACE: v.optional(v.string()),
  POD_NAMESPACE: v.optional(v.string()),
  HEALTH_PORT: v.optional(port('HEALTH_PORT')),
  HEALTH_HOST: v.optional(v.string()),
  AGENT_IMAGE: v.optional(v.pipe(v.string(), v.minLength(1, 'AGENT_IMAGE must not be empty'))),
  MAX_OUTPUT_BYTES: v.optional(digits('MAX_OUTPUT_BYTES')),
  POD_NAME: v.optional(v.string()),
  HOSTNAME: v.optional(v.string()),
  LOG_LEVEL: v.optional(v.string()),
  AGENT_POLL_INTERVAL_MS: v.optional(
    v.pipe(digits('AGENT_POLL_INTERVAL_MS'), v.minValue(100, 'AGENT_POLL_INTERVAL_MS must be at least 100')),
  ),
  AGENT_WORKERS: v.optional(
    v.pipe(
      digits('AGENT_WORKERS'),
      v.minValue(1, 'AGENT_WORKERS must be between 1 and 256'),
      v.maxValue(256, 'AGENT_WORKERS must be between 1 and 256'),
    ),
  ),
  AGENT_LEADER_ELECTION: v.optional(
    v.picklist(['true', 'false'], 'AGENT_LEADER_ELECTION must be true or false'),
  ),
  BATCH_ENABLED: v.optional(v.picklist(['true', 'false'], 'BATCH_ENABLED must be true or false')),
  BATCH_POLL_SECONDS: v.optional(
    v.pipe(
      digits('BATCH_POLL_SECONDS'),
      v.minValue(1, 'BATCH_POLL_SECONDS must be a whole number of seconds, at least 1'),
    ),
  ),
  REALTIME_ENABLED: v.optional(v.picklist(['true', 'false'], 'REALTIME_ENABLED must be true or false')),
  SERVER_ENABLED: v.optional(v.picklist(['true', 'false'], 'SERVER_ENABLED must be true or false')),
  PRICES_FILE: v.optional(v.string()),
  API_PORT: v.optional(port('API_PORT')),
  CONSOLE_ENABLED: v.optional(v.picklist(['true', 'false'], 'CONSOLE_ENABLED must be true or false')),
  CONSOLE_PORT: v.optional(port('CONSOLE_PORT')),
  CONSOLE_BIND_ADDRESS: v.optional(v.string()),
  CONSOLE_TRACE_URL: v.optional(httpUrl('CONSOLE_TRACE_URL')),
  TLS_CERT_FILE: v.optional(v.string()),
  TLS_PRIVATE_KEY_FILE: v.optional(v.string()),
  BATCH_POLL_LIST: v.optional(v.picklist(['true', 'false'], 'BATCH_POLL_LIST must be true or false')),
  ANTHROPIC_BASE_URL: v.optional(httpUrl('ANTHROPIC_BASE_URL')),
  OPENAI_BASE_URL: v.optional(httpUrl('OPENAI_BASE_URL')),
  GEMINI_BASE_URL: v.optional(httpUrl('GEMINI_BASE_URL')),
  AGENT_GATEWAY_URL: v.optional(httpUrl('AGENT_GATEWAY_URL')),
  AGENT_BUDGET_HOUR_SECONDS: v.optional(
    v.pipe(
      digits('AGENT_BUDGET_HOUR_SECONDS'),
      v.minValue(1, 'AGENT_BUDGET_HOUR_SECONDS must be a whole number of seconds, at least 1'),
    ),
  ),
  AGENT_SESSION_WAKE_WAIT_SECONDS: v.optional(
    v.pipe(
      digits('AGENT_SESSION_WAKE_WAIT_SECONDS'),
      v.minValue(1, 'AGENT_SESSION_WAKE_WAIT_SECONDS must be a whole number of seconds, at least 1'),
    ),
  ),
  AGENT_SESSION_STORE_URL: v.optional(
    v.pipe(
      httpUrl('AGENT_SESSION_STORE_URL'),
      v.check((text) => {
        const u = new URL(text);
        return u.search === '' && u.hash === '' && u.username === '' && u.password === '';
      }, 'AGENT_SESSION_STORE_URL must be a plain http(s) URL (no query, fragment or user info)'),
    ),
  ),
  AGENT_SESSION_STORE_BUCKET: v.optional(
    v.pipe(
      v.string(),
      v.regex(
        /^$|^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
        (issue) =>
          `AGENT_SESSION_STORE_BUCKET must be an S3 bucket name (3-63 lower-case letters, digits, dots and dashes), got: ${JSON.stringify(issue.input)}`,
      ),
    ),
  ),
  AGENT_SESSION_STORE_REGION: v.optional(
    v.pipe(
      v.string(),
      v.regex(
        /^$|^[a-z0-9][a-z0-9-]*$/,
        (issue) =>
          `AGENT_SESSION_STORE_REGION must be a region name like us-east-1, got: ${JSON.stringify(issue.input)}`,
      ),
    ),
  ),
  AGENT_SESSION_STORE_PREFIX: v.optional(
    v.pipe(
      v.string(),
      v.check(
        (text) => checkPrefix(text) === undefined,
        (issue) => `AGENT_SESSION_STORE_PREFIX: ${checkPrefix(String(issue.input))}`,
      ),
    ),
  ),
  AGENT_SESSION_STORE_ACCESS_KEY_ID: v.optional(v.string()),
  AGENT_SESSION_STORE_SECRET_ACCESS_KEY: v.optional(v.string()),
});

/** The default region of the session store (what S3-compatible servers answer to when none is configured). */
export const DEFAULT_SESSION_STORE_REGION = 'us-east-1';

/** The session store's settings, or undefined when no store is configured (sessions off). */
function sessionStoreConfig(
  e: v.InferOutput<typeof EnvSchema>,
): Result<SessionStoreConfig | undefined, string> {
  const url = e.AGENT_SESSION_STORE_URL || undefined;
  if (url === undefined) {
    const stray = (
      [
        'AGENT_SESSION_STORE_BUCKET',
        'AGENT_SESSION_STORE_REGION',
        'AGENT_SESSION_STORE_PREFIX',
        'AGENT_SESSION_STORE_ACCESS_KEY_ID',
        'AGENT_SESSION_STORE_SECRET_ACCESS_KEY',
      ] as const
    ).find((name) => (e[name] ?? '') !== '');
    return stray === undefined
      ? ok(undefined)
      : err(
          `${stray} is set but AGENT_SESSION_STORE_URL is not: set it to the store's endpoint, or unset ${stray}`,
        );
  }
  if (!e.AGENT_SESSION_STORE_BUCKET) return err('AGENT_SESSION_STORE_URL needs AGENT_SESSION_STORE_BUCKET');
  if (!e.AGENT_SESSION_STORE_ACCESS_KEY_ID || !e.AGENT_SESSION_STORE_SECRET_ACCESS_KEY)
    return err(
      'AGENT_SESSION_STORE_URL needs AGENT_SESSION_STORE_ACCESS_KEY_ID and AGENT_SESSION_STORE_SECRET_ACCESS_KEY (from the Secret agent-session-store)',
    );
  return ok({
    endpoint: url,
    bucket: e.AGENT_SESSION_STORE_BUCKET,
    region: e.AGENT_SESSION_STORE_REGION || DEFAULT_SESSION_STORE_REGION,
    prefix: e.AGENT_SESSION_STORE_PREFIX ?? '',
    credentials: {
      accessKeyId: e.AGENT_SESSION_STORE_ACCESS_KEY_ID,
      secretAccessKey: e.AGENT_SESSION_STORE_SECRET_ACCESS_KEY,
    },
  });
}

/** The default init-container image: this controller's own image, at this version. */
export const DEFAULT_AGENT_IMAGE = `ghcr.io/re-cinq/agent-controller:${VERSION}`;
export const DEFAULT_NAMESPACE = 'ai-agents';
export const DEFAULT_MAX_OUTPUT_BYTES = 262144;
/**
 * Reconcile workers: a reconcile is almost all waiting on the API server, so many more than the cores. 48, about
 * the 50 requests in flight of the benchmark's raw client, measured against 16 on 1,000 instant runs (bench/README.md).
 */
export const DEFAULT_WORKERS = 48;
/** Default port of the realtime prompt API. */
export const DEFAULT_API_PORT = 8443;
/** Default port of the web console. */
export const DEFAULT_CONSOLE_PORT = 8082;
/** Default poll period of an in-flight vendor batch, in seconds (vendors poll samples use 30–60 s). */
export const DEFAULT_BATCH_POLL_SECONDS = 60;

/**
 * Parses flags and environment into a frozen config. `inClusterNamespace` is the content of the service-account
 * namespace file when running in a pod. Precedence: flag, then env, then in-cluster, then defaults.
 * Errors are one line each, naming the offending variable or flag.
 */
export function parseControllerConfig(
  flags: ControllerFlags,
  env: Readonly<Record<string, string | undefined>>,
  inClusterNamespace: string | undefined,
  randomSuffix = '',
): Result<ControllerConfig, string> {
  const parsed = v.safeParse(EnvSchema, env);
  if (!parsed.success) return err(parsed.issues[0]?.message ?? 'invalid environment');
  const e = parsed.output;
  const own = (inClusterNamespace?.trim() || e.POD_NAMESPACE || e.NAMESPACE || '').trim();
  let namespace = flags.namespace ?? e.WATCH_NAMESPACE ?? (own || DEFAULT_NAMESPACE);
  if (flags.allNamespaces === true || namespace === ALL_NAMESPACES || namespace === '')
    namespace = ALL_NAMESPACES;
  if (namespace !== ALL_NAMESPACES) {
    const ns = v.safeParse(
      namespaceName(flags.namespace !== undefined ? '--namespace' : 'WATCH_NAMESPACE'),
      namespace,
    );
    if (!ns.success) return err(ns.issues[0]?.message ?? 'invalid namespace');
  }
  // The Lease lives in the controller's own namespace; out of cluster, in the watched one (or `default`).
  const ownNamespace = own || (namespace === ALL_NAMESPACES ? 'default' : namespace);
  const ownParsed = v.safeParse(namespaceName('the controller namespace'), ownNamespace);
  if (!ownParsed.success) return err(ownParsed.issues[0]?.message ?? 'invalid namespace');
  let listenPort = e.HEALTH_PORT ?? 8081;
  if (flags.port !== undefined) {
    const p = v.safeParse(port('--port'), flags.port);
    if (!p.success) return err(p.issues[0]?.message ?? 'invalid --port');
    listenPort = p.output;
  }
  const bindAddress = flags.bindAddress ?? e.HEALTH_HOST ?? '0.0.0.0';
  if (!IP_LITERAL.test(bindAddress) && bindAddress !== 'localhost') {
    return err(`bind address must be an IP address or localhost, got: ${JSON.stringify(bindAddress)}`);
  }
  let apiPort = e.API_PORT ?? DEFAULT_API_PORT;
  if (flags.apiPort !== undefined) {
    const p = v.safeParse(port('--api-port'), flags.apiPort);
    if (!p.success) return err(p.issues[0]?.message ?? 'invalid --api-port');
    apiPort = p.output;
  }
  const certFile = flags.tlsCertFile ?? (e.TLS_CERT_FILE || undefined);
  const keyFile = flags.tlsPrivateKeyFile ?? (e.TLS_PRIVATE_KEY_FILE || undefined);
  if ((certFile === undefined) !== (keyFile === undefined))
    return err('--tls-cert-file and --tls-private-key-file go together');
  const apiTls = certFile !== undefined && keyFile !== undefined ? { certFile, keyFile } : undefined;
  const realtimeEnabled = e.REALTIME_ENABLED === 'true';
  if (realtimeEnabled && apiTls === undefined && !isLoopback(bindAddress)) {
    return err(
      `the prompt API (REALTIME_ENABLED=true) serves plain HTTP only on a loopback address, not ${bindAddress}: pass --tls-cert-file and --tls-private-key-file, or --bind-address 127.0.0.1`,
    );
  }
  let consoleServer: ControllerConfig['console'];
  if (flags.console === true || e.CONSOLE_ENABLED === 'true') {
    let consolePort = e.CONSOLE_PORT ?? DEFAULT_CONSOLE_PORT;
    if (flags.consolePort !== undefined) {
      const p = v.safeParse(port('--console-port'), flags.consolePort);
      if (!p.success) return err(p.issues[0]?.message ?? 'invalid --console-port');
      consolePort = p.output;
    }
    const consoleAddress = flags.consoleBindAddress ?? (e.CONSOLE_BIND_ADDRESS || '127.0.0.1');
    if (!IP_LITERAL.test(consoleAddress) && consoleAddress !== 'localhost')
      return err(
        `console bind address must be an IP address or localhost, got: ${JSON.stringify(consoleAddress)}`,
      );
    if (apiTls === undefined && !isLoopback(consoleAddress))
      return err(
        `the console serves plain HTTP only on a loopback address, not ${consoleAddress}: pass --tls-cert-file and --tls-private-key-file, or keep --console-bind-address 127.0.0.1 (and reach it with kubectl port-forward)`,
      );
    consoleServer = {
      port: consolePort,
      bindAddress: consoleAddress,
      traceUrl: e.CONSOLE_TRACE_URL || undefined,
    };
  } else if (flags.consolePort !== undefined || flags.consoleBindAddress !== undefined)
    return err('--console-port and --console-bind-address need --console');
  const traced = tracingConfigFromEnv(env, 'agent-controller');
  if (!traced.ok) return traced;
  let tracing: ControllerConfig['tracing'];
  if (traced.value !== undefined) {
    const runUrl = runTracesUrlFromEnv(env, traced.value);
    if (!runUrl.ok) return runUrl;
    tracing = { ...traced.value, runTracesUrl: runUrl.value };
  }
  const sessionStore = sessionStoreConfig(e);
  if (!sessionStore.ok) return sessionStore;
  const levelName = flags.logLevel ?? e.LOG_LEVEL ?? 'info';
  const logLevel = parseLogLevel(levelName);
  if (!logLevel)
    return err(`log level must be debug, info, warn or error, got: ${JSON.stringify(levelName)}`);
  return ok(
    Object.freeze({
      kubeconfig: flags.kubeconfig ?? (e.KUBECONFIG || undefined),
      namespace,
      leaseNamespace: ownNamespace,
      leaseName: 'agent-controller',
      identity: e.POD_NAME || e.HOSTNAME || `agent-controller${randomSuffix ? `-${randomSuffix}` : ''}`,
      port: listenPort,
      bindAddress,
      agentImage: e.AGENT_IMAGE ?? DEFAULT_AGENT_IMAGE,
      maxOutputBytes: e.MAX_OUTPUT_BYTES ?? DEFAULT_MAX_OUTPUT_BYTES,
      logLevel,
      pollIntervalMs: e.AGENT_POLL_INTERVAL_MS ?? 15000,
      leaderElection: e.AGENT_LEADER_ELECTION !== 'false',
      workers: e.AGENT_WORKERS ?? DEFAULT_WORKERS,
      batchEnabled: e.BATCH_ENABLED === 'true',
      batchPollMs: (e.BATCH_POLL_SECONDS ?? DEFAULT_BATCH_POLL_SECONDS) * 1000,
      batchPollList: e.BATCH_POLL_LIST !== 'false',
      vendorBaseUrls: {
        anthropic: e.ANTHROPIC_BASE_URL ?? DEFAULT_BASE_URL.anthropic,
        openai: e.OPENAI_BASE_URL ?? DEFAULT_BASE_URL.openai,
        gemini: e.GEMINI_BASE_URL ?? DEFAULT_BASE_URL.gemini,
      },
      realtimeEnabled,
      serverEnabled: e.SERVER_ENABLED === 'true',
      apiPort,
      apiTls,
      console: consoleServer,
      pricesFile: e.PRICES_FILE || undefined,
      tracing,
      gatewayUrl: e.AGENT_GATEWAY_URL || undefined,
      budgetHourMs: (e.AGENT_BUDGET_HOUR_SECONDS ?? 3600) * 1000,
      sessionWakeWaitMs: (e.AGENT_SESSION_WAKE_WAIT_SECONDS ?? 60) * 1000,
      sessionStore: sessionStore.value,
    }),
  );
}
