// End-to-end harness for the `controller` subcommand: runs controller replicas from the built bundle as child
// processes (Node or Deno, per AGENT_E2E_RUNTIME), captures their JSON log lines, reads /readyz and /metrics,
// stops (SIGTERM) or kills (SIGKILL) them; plus the CRDs, manifests, schemas, a cuttable TCP relay in front of the
// API server, the testbed CLI (`restart kube-apiserver`), kubeconfig writers and a per-test scenario (fresh
// namespace, tracked replicas, logs on failure).
import { type ChildProcess, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import * as v from 'valibot';
import { apiPath, type KubeClient, KubeError } from './kube-client.ts';
import { loadKubeconfig } from './kubeconfig.ts';
import { freshNamespace } from './namespace.ts';
import { pollUntil } from './poll.ts';
import { ConditionSchema, type Job, JobSchema, KubeObjectSchema, type Pod, PodSchema } from './schemas.ts';
import { addTestImages, type E2eCluster, testbedImage } from './testbed.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The mock agent CLI (test/mock-agent). */
const MOCK_AGENT = join(ROOT, 'test', 'mock-agent', 'mock-agent.mjs');
/** The one-file bundle the e2e tier builds (`npm run build`). */
export const BUNDLE_PATH = join(ROOT, 'dist', 'agent-controller.mjs');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');

// ---------------------------------------------------------------------------------------------------------------
// Runtime selection

/** The JavaScript runtime the e2e pass runs the bundle on. */
export type E2eRuntime = 'node' | 'deno';

/** `AGENT_E2E_RUNTIME` (as `scripts/test.mjs` sets it); `node` when unset. Throws on any other value. */
export function e2eRuntime(): E2eRuntime {
  const raw = process.env.AGENT_E2E_RUNTIME ?? '';
  if (raw === '' || raw === 'node') return 'node';
  if (raw === 'deno') return 'deno';
  throw new Error(`AGENT_E2E_RUNTIME must be node or deno, got ${JSON.stringify(raw)}`);
}

/**
 * The run pods' init image for a runtime: the testbed's image table maps it to the bundle on that runtime, so the
 * supervisor in the run pod runs on the same runtime as the controller under test.
 */
export function runPodImage(runtime: E2eRuntime): string {
  return runtime === 'deno' ? 'agent-controller:e2e-deno' : 'agent-controller:e2e';
}

/**
 * What the test-image helpers need of a Scenario: the cluster, a unique name, a temporary folder and a cleanup list.
 * A Scenario is one; the benchmark (bench/) builds its own.
 */
export interface ImageHost {
  readonly cluster: E2eCluster;
  readonly ns: string;
  tempDir(): string;
  defer(fn: () => Promise<void> | void): void;
}

/**
 * Test images that ship a fake `claude` at /usr/local/bin (the mock agent CLI in Claude style, a shell wrapper around
 * the host's Node, with `env` exported), and likewise fake `codex` and `gemini` in their styles: the run-pod image of
 * `runtime` (so the init container finds the CLI and installs nothing) and an agent-container image. Returns their
 * names; they are removed with the scenario.
 */
export function fakeClaudeImages(
  s: ImageHost,
  runtime: E2eRuntime,
  env: Readonly<Record<string, string>> = {},
): { init: string; agent: string } {
  const dir = s.tempDir();
  const files: Record<string, string> = { '/opt/fake-cli/mock-agent.mjs': MOCK_AGENT };
  for (const cli of ['claude', 'codex', 'gemini'] as const) {
    const wrapper = join(dir, cli);
    const exports = Object.entries({ MOCK_STYLE: cli, ...env })
      .map(([k, val]) => `${k}='${val.replace(/'/g, `'\\''`)}'`)
      .join(' ');
    writeFileSync(wrapper, `#!/bin/sh\n${exports} exec node /opt/fake-cli/mock-agent.mjs "$@"\n`);
    chmodSync(wrapper, 0o755);
    files[`/usr/local/bin/${cli}`] = wrapper;
  }
  const base = testbedImage(s.cluster, runPodImage(runtime));
  const names = { init: `agent-controller:${s.ns}`, agent: `fake-claude:${s.ns}` };
  s.defer(
    addTestImages(s.cluster, s.ns, {
      [names.init]: { ...base, files: { ...(base.files as Record<string, string>), ...files } },
      [names.agent]: { entrypoint: [], files },
    }),
  );
  return names;
}

/** The host-run image of the Station `agent` container (not in the image table: runs `command` from the host). */
export const AGENT_CONTAINER_IMAGE = 'debian:bookworm-slim';

/** The condition of `type` on an Agent, if any. */
export function agentCondition(a: AgentObject, type: string) {
  return a.status.conditions?.find((c) => c.type === type);
}

/**
 * Why the controller e2e tests of a file must be skipped, or false: no cluster (the reason `e2eCluster` gave) or no
 * built bundle.
 */
export function controllerSkipReason(cluster: unknown): string | false {
  if (typeof cluster === 'string') return cluster;
  return existsSync(BUNDLE_PATH) ? false : `${BUNDLE_PATH} is missing: run \`npm run build\``;
}

/**
 * As {@link controllerSkipReason}, and skipped in the Deno pass: for files whose behaviour is the pure core's and the
 * API server's (admission, policy, the objects made per run), the same on either runtime. The Deno pass keeps every
 * path that differs by runtime (transport, TLS, watch, servers, supervisor, init, bundle) and one smoke per
 * execution mode (the files and why: test/skips-allowed.json; README, Development).
 */
export function nodePassOnlySkipReason(cluster: unknown): string | false {
  const reason = controllerSkipReason(cluster);
  if (reason !== false || process.env.AGENT_E2E_RUNTIME !== 'deno') return reason;
  return 'decided by the pure core and the API server, the same on every runtime: it runs in the Node pass only';
}

/** The argv that runs the bundle on `runtime`. */
export function bundleArgv(runtime: E2eRuntime): string[] {
  return runtime === 'deno' ? [DENO, 'run', '-A', BUNDLE_PATH] : [process.execPath, BUNDLE_PATH];
}

// ---------------------------------------------------------------------------------------------------------------
// Controller replicas

/** One structured log line of the controller (`createLogger`: JSON with ts, level, msg and fields). */
export const LogLineSchema = v.looseObject({ ts: v.string(), level: v.string(), msg: v.string() });
export type LogLine = v.InferOutput<typeof LogLineSchema> & Readonly<Record<string, unknown>>;

/** How a child process ended. */
export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ControllerOptions {
  /** kubeconfig the controller authenticates with (`--kubeconfig`). */
  readonly kubeconfig: string;
  readonly namespace: string;
  /** Leader identity (`POD_NAME`). */
  readonly identity: string;
  /** Default: `e2eRuntime()`. */
  readonly runtime?: E2eRuntime;
  /** Pass `--install-crds`. */
  readonly installCrds?: boolean;
  /** `AGENT_POLL_INTERVAL_MS`; default 2000. */
  readonly pollIntervalMs?: number;
  /** `LOG_LEVEL`; default `E2E_CONTROLLER_LOG_LEVEL` or `info`. */
  readonly logLevel?: string;
  /** Extra environment (wins over the defaults). */
  readonly env?: Readonly<Record<string, string>>;
}

/** The last lines of a log, for failure messages. */
function tailLines(lines: readonly string[], n: number): string {
  return lines.slice(-n).join('\n');
}

/**
 * A controller replica running as a child process. Every stdout/stderr line is kept (`rawLines`) and the JSON ones
 * are parsed (`lines`). The health port is read from the `Serving health and metrics` log line.
 */
export class ControllerProcess {
  readonly identity: string;
  readonly runtime: E2eRuntime;
  readonly rawLines: string[] = [];
  readonly lines: LogLine[] = [];
  readonly exited: Promise<Exit>;
  readonly #child: ChildProcess;
  #exit: Exit | undefined;
  #port: number | undefined;

  constructor(child: ChildProcess, identity: string, runtime: E2eRuntime) {
    this.#child = child;
    this.identity = identity;
    this.runtime = runtime;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.#exit = { code, signal };
        resolve(this.#exit);
      });
    });
    const consume = (stream: NodeJS.ReadableStream | null): void => {
      let buffered = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        buffered += chunk;
        let nl = buffered.indexOf('\n');
        while (nl !== -1) {
          this.#line(buffered.slice(0, nl));
          buffered = buffered.slice(nl + 1);
          nl = buffered.indexOf('\n');
        }
      });
      stream?.on('end', () => {
        if (buffered !== '') this.#line(buffered);
      });
    };
    consume(child.stdout);
    consume(child.stderr);
  }

  #line(text: string): void {
    if (text.trim() === '') return;
    this.rawLines.push(text);
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return;
    }
    const parsed = v.safeParse(LogLineSchema, raw);
    if (!parsed.success) return;
    const line = parsed.output as LogLine;
    this.lines.push(line);
    if (line.msg === 'Serving health and metrics' && typeof line.port === 'number') this.#port = line.port;
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** The health/metrics port once the controller logged it. */
  get port(): number | undefined {
    return this.#port;
  }

  /** Whether the process is still running. */
  get running(): boolean {
    return this.#exit === undefined;
  }

  /** The whole captured log (stdout and stderr lines in arrival order per stream). */
  logText(): string {
    return this.rawLines.join('\n');
  }

  /** Log lines with this message (and, when given, these field values). */
  logged(msg: string | RegExp, fields: Readonly<Record<string, unknown>> = {}): LogLine[] {
    return this.lines.filter(
      (l) =>
        (typeof msg === 'string' ? l.msg === msg : msg.test(l.msg)) &&
        Object.entries(fields).every(([k, val]) => l[k] === val),
    );
  }

  /** Waits until a log line with `msg` (and `fields`) appears; fails fast when the process exits. */
  waitForLog(
    msg: string | RegExp,
    fields: Readonly<Record<string, unknown>> = {},
    timeoutMs = 30_000,
  ): Promise<LogLine> {
    return pollUntil(
      () => {
        const found = this.logged(msg, fields)[0];
        if (found) return found;
        if (!this.running) throw new Error(`exited (${JSON.stringify(this.#exit)})`);
        return undefined;
      },
      { timeoutMs, intervalMs: 50, description: `${this.identity} to log ${String(msg)}` },
    );
  }

  #url(path: string): string {
    if (this.#port === undefined) throw new Error(`${this.identity} has not logged its port yet`);
    return `http://127.0.0.1:${this.#port}${path}`;
  }

  /** GET a path of the health server; status and body. */
  async http(path: string): Promise<{ status: number; body: string }> {
    const res = await fetch(this.#url(path), { signal: AbortSignal.timeout(5000) });
    return { status: res.status, body: await res.text() };
  }

  /** Waits for the port and then for `/readyz` to answer 200; fails fast when the process exits. */
  async waitReady(timeoutMs = 45_000): Promise<void> {
    await pollUntil(
      async (observe) => {
        if (!this.running) throw new Error(`exited (${JSON.stringify(this.#exit)})`);
        if (this.#port === undefined) return undefined;
        const r = await this.http('/readyz');
        observe(r);
        return r.status === 200 ? true : undefined;
      },
      { timeoutMs, intervalMs: 100, description: `${this.identity} /readyz to answer 200` },
    );
  }

  /** The Prometheus text of `/metrics`. */
  async metrics(): Promise<string> {
    const r = await this.http('/metrics');
    if (r.status !== 200) throw new Error(`${this.identity} /metrics: HTTP ${r.status}`);
    return r.body;
  }

  /** Sum of the series of `name` whose labels include `labels`; 0 when none matches. */
  async metric(name: string, labels: Readonly<Record<string, string>> = {}): Promise<number> {
    return metricValue(await this.metrics(), name, labels) ?? 0;
  }

  /**
   * Waits until the metric (sum over the series including `labels`) equals `expected` and returns it; on timeout
   * the last value is in the error. Metrics are observed after the status patch, so read them with this.
   */
  async waitForMetric(
    name: string,
    labels: Readonly<Record<string, string>>,
    expected: number | ((value: number) => boolean),
    timeoutMs = 30_000,
  ): Promise<number> {
    const accept = typeof expected === 'number' ? (x: number) => x === expected : expected;
    return pollUntil(
      async (observe) => {
        const value = await this.metric(name, labels);
        observe({ [name]: value, labels });
        return accept(value) ? value : undefined;
      },
      {
        timeoutMs,
        intervalMs: 100,
        description: `${this.identity}: ${name}${JSON.stringify(labels)} ${String(expected)}`,
      },
    );
  }

  /** SIGTERM, then waits for the exit (SIGKILL after `timeoutMs`, reported as a failure). */
  async stop(timeoutMs = 20_000): Promise<Exit> {
    if (!this.running) return this.exited;
    this.#child.kill('SIGTERM');
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), timeoutMs);
    const exit = await this.exited;
    clearTimeout(timer);
    if (exit.signal === 'SIGKILL')
      throw new Error(`${this.identity} ignored SIGTERM for ${timeoutMs} ms and was killed`);
    return exit;
  }

  /** SIGKILL and waits for the exit. */
  async kill(): Promise<Exit> {
    if (!this.running) return this.exited;
    this.#child.kill('SIGKILL');
    return this.exited;
  }
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Starts a controller replica: `controller --namespace NS --port 0 --kubeconfig K` on the bundle with the run pods'
 * init image matching the runtime, `AGENT_POLL_INTERVAL_MS` 2000 unless given. Returns at once (see `waitReady`).
 * Replicas still running when the test process exits are killed.
 */
export function startController(opts: ControllerOptions): ControllerProcess {
  const runtime = opts.runtime ?? e2eRuntime();
  const argv = [
    'controller',
    '--namespace',
    opts.namespace,
    '--port',
    '0',
    '--bind-address',
    '127.0.0.1',
    '--kubeconfig',
    opts.kubeconfig,
    ...(opts.installCrds === true ? ['--install-crds'] : []),
  ];
  return spawnBundle(runtime, argv, opts.identity, {
    AGENT_IMAGE: runPodImage(runtime),
    AGENT_POLL_INTERVAL_MS: String(opts.pollIntervalMs ?? 2000),
    POD_NAME: opts.identity,
    LOG_LEVEL: opts.logLevel ?? process.env.E2E_CONTROLLER_LOG_LEVEL ?? 'info',
    ...opts.env,
  });
}

/**
 * Runs the bundle on `runtime` with `argv` (after the bundle path) as a child process with a small environment (PATH,
 * HOME, no colours, no Deno prompts) plus `env`. It is killed if still running when the test process exits.
 */
export function spawnBundle(
  runtime: E2eRuntime,
  argv: readonly string[],
  identity: string,
  env: Readonly<Record<string, string>>,
): ControllerProcess {
  const [cmd, ...args] = bundleArgv(runtime);
  const childEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    NO_COLOR: '1',
    DENO_NO_UPDATE_CHECK: '1',
    DENO_NO_PROMPT: '1',
    ...env,
  };
  const child = spawn(cmd ?? process.execPath, [...args, ...argv], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of live) c.kill('SIGKILL');
    });
  }
  return new ControllerProcess(child, identity, runtime);
}

// ---------------------------------------------------------------------------------------------------------------
// Prometheus text

/** One sample of the Prometheus text format. */
export interface MetricSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses Prometheus text exposition (comments skipped; label values unescaped). Unparseable lines throw. */
export function parseMetrics(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = SAMPLE_LINE.exec(line);
    if (!m) throw new Error(`unparseable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').matchAll(LABEL_PAIR)) {
      labels[pair[1] ?? ''] = (pair[2] ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1] ?? '', labels, value: Number(m[3]) });
  }
  return samples;
}

/** Sum of the samples of `name` whose labels include `labels`; undefined when no series matches. */
export function metricValue(
  text: string,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number | undefined {
  const matching = parseMetrics(text).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, val]) => s.labels[k] === val),
  );
  return matching.length === 0 ? undefined : matching.reduce((sum, s) => sum + s.value, 0);
}

// ---------------------------------------------------------------------------------------------------------------
export { type ApiRelay, startApiRelay } from './relay.ts';

// ---------------------------------------------------------------------------------------------------------------
// The testbed CLI

/** How one `scripts/testbed` command ended. */
export interface TestbedRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly durationMs: number;
}

/**
 * Runs `scripts/testbed ARGS...` for the testbed whose admin kubeconfig is `kubeconfig` (its state folder is the
 * kubeconfig's folder) and resolves with how it ended; never rejects for a non-zero exit. Killed (SIGKILL) after
 * `timeoutMs`. The CLI serialises commands with its lock, so this may first wait for another caller's `up`.
 */
export function runTestbed(
  kubeconfig: string,
  args: readonly string[],
  timeoutMs = 180_000,
): Promise<TestbedRun> {
  const started = Date.now();
  const child = spawn('bash', [join(ROOT, 'scripts', 'testbed'), ...args], {
    cwd: ROOT,
    env: { ...process.env, AGENT_TESTBED_DIR: dirname(kubeconfig) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => err.push(c));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve, reject) => {
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        durationMs: Date.now() - started,
      });
    });
  });
}

/**
 * `scripts/testbed restart kube-apiserver` on the testbed of `kubeconfig`: resolves once kube-apiserver was stopped,
 * started again with the same flags and port, answers /readyz and the node is Ready; throws (with the CLI's stderr)
 * when the command fails. Everyone using the shared testbed sees a few seconds of outage.
 */
export async function restartTestbedApiServer(kubeconfig: string, timeoutMs = 180_000): Promise<TestbedRun> {
  const run = await runTestbed(kubeconfig, ['restart', 'kube-apiserver'], timeoutMs);
  if (run.code !== 0)
    throw new Error(
      `scripts/testbed restart kube-apiserver exited ${run.code ?? run.signal} after ${run.durationMs} ms:\n${run.stderr}`,
    );
  return run;
}

// ---------------------------------------------------------------------------------------------------------------
// Kubeconfig files

const KubeconfigDocSchema = v.looseObject({
  clusters: v.array(
    v.looseObject({
      name: v.string(),
      cluster: v.looseObject({ server: v.string(), 'certificate-authority-data': v.optional(v.string()) }),
    }),
  ),
  contexts: v.array(v.looseObject({ name: v.string(), context: v.looseObject({ cluster: v.string() }) })),
  'current-context': v.string(),
});

/**
 * Writes a copy of the (JSON) kubeconfig at `from` into `dir` with the current context's cluster `server` replaced
 * (e.g. by a relay URL; the testbed certificate is valid for any port on 127.0.0.1). Returns the new path.
 */
export function kubeconfigWithServer(from: string, server: string, dir: string): string {
  const doc = v.parse(KubeconfigDocSchema, JSON.parse(readFileSync(from, 'utf8')));
  const ctx = doc.contexts.find((c) => c.name === doc['current-context']);
  const cluster = doc.clusters.find((c) => c.name === ctx?.context.cluster);
  if (!cluster) throw new Error(`${from}: no cluster for the current context`);
  cluster.cluster.server = server;
  const path = join(dir, 'relay.kubeconfig');
  writeFileSync(path, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600 });
  return path;
}

/**
 * Writes a kubeconfig into `dir` that reaches the same API server and trusts the same CA as the kubeconfig at
 * `from` (or `server` instead, e.g. a proxy whose certificate the same CA signed), authenticating with a bearer
 * `token` (e.g. from the TokenRequest API). Returns the new path.
 */
export function kubeconfigWithToken(
  from: string,
  token: string,
  user: string,
  dir: string,
  server?: string,
): string {
  const doc = v.parse(KubeconfigDocSchema, JSON.parse(readFileSync(from, 'utf8')));
  const ctx = doc.contexts.find((c) => c.name === doc['current-context']);
  const cluster = doc.clusters.find((c) => c.name === ctx?.context.cluster);
  if (!cluster?.cluster['certificate-authority-data'])
    throw new Error(`${from}: the current cluster has no certificate-authority-data`);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'e2e',
        cluster: {
          server: server ?? cluster.cluster.server,
          'certificate-authority-data': cluster.cluster['certificate-authority-data'],
        },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'e2e', context: { cluster: 'e2e', user } }],
    'current-context': 'e2e',
  };
  const path = join(dir, `${user}.kubeconfig`);
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return path;
}

// ---------------------------------------------------------------------------------------------------------------
// Schemas of what the tests read

/** The API group/version of the three CRDs. */
export const GROUP_VERSION = 'agents.re-cinq.com/v1alpha1';

/** An Agent with the status fields the tests assert on. */
export const AgentSchema = v.looseObject({
  ...KubeObjectSchema.entries,
  spec: v.looseObject({ stationRef: v.string() }),
  status: v.optional(
    v.looseObject({
      phase: v.optional(v.picklist(['Pending', 'Running', 'Succeeded', 'Failed', 'Serving', 'Suspended'])),
      jobName: v.optional(v.string()),
      session: v.optional(
        v.looseObject({
          turns: v.optional(v.number()),
          savedTurn: v.optional(v.number()),
          restarts: v.optional(v.number()),
          suspendedAt: v.optional(v.string()),
          wakeRequest: v.optional(v.string()),
        }),
      ),
      url: v.optional(v.string()),
      serviceName: v.optional(v.string()),
      startedAt: v.optional(v.string()),
      completedAt: v.optional(v.string()),
      exitCode: v.optional(v.number()),
      output: v.optional(v.string()),
      failureReason: v.optional(v.string()),
      observedGeneration: v.optional(v.number()),
      batchId: v.optional(v.string()),
      batchProvider: v.optional(v.string()),
      batchFallback: v.optional(v.boolean()),
      batchCleanupAttempts: v.optional(v.number()),
      conditions: v.optional(v.array(ConditionSchema), []),
    }),
    {},
  ),
});
export type AgentObject = v.InferOutput<typeof AgentSchema>;
export type AgentPhase = NonNullable<AgentObject['status']['phase']>;

/** A core/v1 Event. */
export const EventSchema = v.looseObject({
  ...KubeObjectSchema.entries,
  involvedObject: v.looseObject({
    kind: v.optional(v.string()),
    name: v.optional(v.string()),
    uid: v.optional(v.string()),
  }),
  reason: v.optional(v.string()),
  message: v.optional(v.string()),
  type: v.optional(v.string()),
  count: v.optional(v.number()),
});
export type KubeEvent = v.InferOutput<typeof EventSchema>;

/** A coordination.k8s.io/v1 Lease. */
export const LeaseObjectSchema = v.looseObject({
  ...KubeObjectSchema.entries,
  spec: v.optional(
    v.looseObject({
      holderIdentity: v.optional(v.nullable(v.string())),
      leaseDurationSeconds: v.optional(v.nullable(v.number())),
      renewTime: v.optional(v.nullable(v.string())),
      leaseTransitions: v.optional(v.nullable(v.number())),
    }),
    {},
  ),
});

/** A meta.k8s.io/v1 Table (the server-side printing `kubectl get` uses). */
export const TableSchema = v.looseObject({
  kind: v.literal('Table'),
  columnDefinitions: v.array(v.looseObject({ name: v.string() })),
  rows: v.array(v.looseObject({ cells: v.array(v.unknown()) })),
});

const TokenRequestSchema = v.looseObject({ status: v.looseObject({ token: v.string() }) });

// ---------------------------------------------------------------------------------------------------------------
// Manifests

/** A Kubernetes manifest to create. */
export type Manifest = Readonly<Record<string, unknown>> & {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Readonly<Record<string, string>> };
};

/** An AgentDefinition on the `exec` vendor: `command` runs with the rendered prompt appended as its last argv. */
export function execDefinition(
  name: string,
  command: readonly string[],
  spec: Readonly<Record<string, unknown>> = {},
): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: { model: 'exec', prompt: 'run {name}', tool_config: { command }, ...spec },
  };
}

/** A Station whose `agent` container runs on the host (5 min deadline, 2 s grace) unless `spec` overrides. */
export function stationManifest(
  name: string,
  agentDefRef: string,
  spec: Readonly<Record<string, unknown>> = {},
): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'Station',
    metadata: { name },
    spec: {
      agentDefRef,
      deadlineMinutes: 5,
      template: {
        spec: {
          terminationGracePeriodSeconds: 2,
          containers: [{ name: 'agent', image: AGENT_CONTAINER_IMAGE }],
        },
      },
      ...spec,
    },
  };
}

/** An Agent of `stationRef`; `parameters.name` defaults to the Agent name (the prompt is `run {name}`). */
export function agentManifest(
  name: string,
  stationRef: string,
  spec: Readonly<Record<string, unknown>> = {},
): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'Agent',
    metadata: { name },
    spec: { stationRef, parameters: { name }, ...spec },
  };
}

const PLURAL: Readonly<Record<string, readonly [string, string]>> = {
  Agent: [GROUP_VERSION, 'agents'],
  Station: [GROUP_VERSION, 'stations'],
  AgentDefinition: [GROUP_VERSION, 'agentdefinitions'],
  Secret: ['v1', 'secrets'],
  ServiceAccount: ['v1', 'serviceaccounts'],
  ConfigMap: ['v1', 'configmaps'],
  Pod: ['v1', 'pods'],
  Service: ['v1', 'services'],
  Role: ['rbac.authorization.k8s.io/v1', 'roles'],
  RoleBinding: ['rbac.authorization.k8s.io/v1', 'rolebindings'],
  NetworkPolicy: ['networking.k8s.io/v1', 'networkpolicies'],
  Deployment: ['apps/v1', 'deployments'],
};

/** The collection path of `kind` in `namespace`. */
export function collectionPath(kind: string, namespace: string): string {
  const where = PLURAL[kind];
  if (!where) throw new Error(`no path known for kind ${kind}`);
  return apiPath(where[0], where[1], { namespace });
}

const RbacDocSchema = v.looseObject({
  apiVersion: v.string(),
  kind: v.picklist(['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding']),
  metadata: v.looseObject({ name: v.string(), namespace: v.optional(v.string()) }),
  rules: v.optional(v.array(v.looseObject({ resourceNames: v.optional(v.array(v.string())) }))),
  roleRef: v.optional(v.looseObject({ kind: v.string(), name: v.string() })),
  subjects: v.optional(
    v.array(v.looseObject({ kind: v.string(), name: v.string(), namespace: v.optional(v.string()) })),
  ),
});

/** Namespaces whose grants stay where they are (under a name of the scenario) instead of moving to its namespace. */
const FIXED_NAMESPACES: ReadonlySet<string> = new Set(['kube-system', 'default']);

/** Creates an AgentPolicy (cluster-scoped) named `<ns>-<suffix>`, deleted at the end; returns its name. */
export async function createAgentPolicy(
  s: Scenario,
  suffix: string,
  spec: Readonly<Record<string, unknown>>,
  labels: Readonly<Record<string, string>> = {},
): Promise<string> {
  const name = `${s.ns}-${suffix}`;
  const policies = `/apis/${GROUP_VERSION}/agentpolicies`;
  await s.client.create(policies, {
    apiVersion: GROUP_VERSION,
    kind: 'AgentPolicy',
    metadata: { name, labels },
    spec,
  });
  s.defer(async () => {
    await s.client.delete(`${policies}/${name}`);
  });
  return name;
}

/**
 * Creates the ServiceAccounts, Roles and RoleBindings of a manifest file of the repository (`path` relative to its
 * root, e.g. `deploy/rbac/controller-rbac.yaml`) in the scenario's namespace, namespaces rewritten. A
 * ClusterRole or ClusterRoleBinding gets the namespace appended to its name (scenarios run side by side; a binding
 * to a ClusterRole of the same file, and a rule's `resourceNames` naming one, follow the rename) and is deleted at
 * the end; so are Roles and RoleBindings in kube-system or default, which stay there under a renamed name.
 * Returns the renames of the file's ClusterRoles (file name → created name).
 */
export async function applyRbacManifests(s: Scenario, path: string): Promise<ReadonlyMap<string, string>> {
  const renamedRoles = new Map<string, string>();
  const renamedLocalRoles = new Map<string, string>();
  const renamed = (name: string) => `${name}-${s.ns}`;
  const subjectsHere = (doc: v.InferOutput<typeof RbacDocSchema>) =>
    (doc.subjects ?? []).map((x) => ({ ...x, namespace: s.ns }));
  for (const raw of loadAll(readFileSync(join(ROOT, path), 'utf8'))) {
    if (raw === null || raw === undefined) continue;
    const doc = v.parse(RbacDocSchema, raw);
    if (doc.kind === 'ClusterRole') {
      const name = renamed(doc.metadata.name);
      renamedRoles.set(doc.metadata.name, name);
      const collection = '/apis/rbac.authorization.k8s.io/v1/clusterroles';
      const rules = (doc.rules ?? []).map((r) =>
        r.resourceNames === undefined
          ? r
          : { ...r, resourceNames: r.resourceNames.map((n) => renamedRoles.get(n) ?? n) },
      );
      await s.client.create(collection, { ...doc, rules, metadata: { ...doc.metadata, name } } as Manifest);
      s.defer(async () => {
        await s.client.delete(`${collection}/${name}`);
      });
      continue;
    }
    const fixed = doc.metadata.namespace;
    if (
      (doc.kind === 'Role' || doc.kind === 'RoleBinding') &&
      fixed !== undefined &&
      FIXED_NAMESPACES.has(fixed)
    ) {
      // A grant in kube-system or default (e.g. to read the cluster's client CA): kept there, renamed.
      const name = renamed(doc.metadata.name);
      if (doc.kind === 'Role') renamedLocalRoles.set(doc.metadata.name, name);
      const roleRef =
        doc.roleRef?.kind === 'Role' && renamedLocalRoles.has(doc.roleRef.name)
          ? { ...doc.roleRef, name: renamedLocalRoles.get(doc.roleRef.name) }
          : doc.roleRef?.kind === 'ClusterRole' && renamedRoles.has(doc.roleRef.name)
            ? { ...doc.roleRef, name: renamedRoles.get(doc.roleRef.name) }
            : doc.roleRef;
      const collection = collectionPath(doc.kind, fixed);
      await s.client.create(collection, {
        ...doc,
        ...(roleRef !== undefined ? { roleRef } : {}),
        metadata: { ...doc.metadata, name },
        ...(doc.subjects ? { subjects: subjectsHere(doc) } : {}),
      } as Manifest);
      s.defer(async () => {
        await s.client.delete(`${collection}/${name}`);
      });
      continue;
    }
    if (doc.kind === 'ClusterRoleBinding') {
      const name = renamed(doc.metadata.name);
      const collection = '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings';
      const roleRef =
        doc.roleRef?.kind === 'ClusterRole' && renamedRoles.has(doc.roleRef.name)
          ? { ...doc.roleRef, name: renamedRoles.get(doc.roleRef.name) }
          : doc.roleRef;
      await s.client.create(collection, {
        ...doc,
        ...(roleRef !== undefined ? { roleRef } : {}),
        metadata: { ...doc.metadata, name },
        subjects: subjectsHere(doc),
      } as Manifest);
      s.defer(async () => {
        await s.client.delete(`${collection}/${name}`);
      });
      continue;
    }
    const roleRef =
      doc.kind === 'RoleBinding' && doc.roleRef?.kind === 'ClusterRole' && renamedRoles.has(doc.roleRef.name)
        ? { ...doc.roleRef, name: renamedRoles.get(doc.roleRef.name) }
        : doc.roleRef;
    const manifest = {
      ...doc,
      ...(roleRef !== undefined ? { roleRef } : {}),
      metadata: { ...doc.metadata, namespace: s.ns },
      ...(doc.subjects ? { subjects: subjectsHere(doc) } : {}),
    } as Manifest;
    await s.client.create(collectionPath(doc.kind, s.ns), manifest);
  }
  return renamedRoles;
}

/** Labels the scenario's namespace to enforce a Pod Security level (the API server's PodSecurity admission). */
export async function enforcePodSecurity(s: Scenario, level: 'restricted' | 'baseline'): Promise<void> {
  await s.client.patch(apiPath('v1', 'namespaces', { name: s.ns }), {
    metadata: {
      labels: {
        'pod-security.kubernetes.io/enforce': level,
        'pod-security.kubernetes.io/enforce-version': 'latest',
      },
    },
  });
}

// ---------------------------------------------------------------------------------------------------------------
// CRDs

const CrdDocSchema = v.looseObject({
  apiVersion: v.literal('apiextensions.k8s.io/v1'),
  kind: v.literal('CustomResourceDefinition'),
  metadata: v.looseObject({ name: v.string() }),
});
const CrdStatusSchema = v.looseObject({
  status: v.optional(v.looseObject({ conditions: v.optional(v.array(ConditionSchema), []) }), {}),
});

/**
 * Server-side applies `deploy/crds/*.yaml` (field manager `controller-e2e`) and waits until each CRD is
 * Established. Idempotent; the CRDs are cluster-wide and shared by every test.
 */
export async function applyCrds(client: KubeClient): Promise<void> {
  const dir = join(ROOT, 'deploy', 'crds');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    for (const doc of loadAll(readFileSync(join(dir, file), 'utf8'))) {
      if (doc === null || doc === undefined) continue;
      const crd = v.parse(CrdDocSchema, doc);
      const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
      const res = await client.request('PATCH', path, {
        body: crd,
        contentType: 'application/apply-patch+yaml',
        query: { fieldManager: 'controller-e2e', force: true },
      });
      if (res.status >= 300) throw new KubeError('PATCH', path, res.status, undefined, res.body);
      await pollUntil(
        async () => {
          const got = await client.get(path, CrdStatusSchema);
          return got.status.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
            ? true
            : undefined;
        },
        { timeoutMs: 30_000, description: `CRD ${crd.metadata.name} to be Established` },
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Scenarios

export interface ReplicaOptions {
  /** Default: `<namespace>-<n>`. */
  readonly identity?: string;
  /** Default: the admin kubeconfig of the cluster. */
  readonly kubeconfig?: string;
  readonly installCrds?: boolean;
  readonly pollIntervalMs?: number;
  readonly logLevel?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Wait for `/readyz` before returning (default true). */
  readonly waitReady?: boolean;
}

/**
 * One end-to-end scenario: a fresh namespace, the controller replicas started for it (all logs printed when the
 * scenario fails, all stopped at the end), and helpers to create objects and wait for Agents.
 */
export class Scenario {
  readonly cluster: E2eCluster;
  readonly client: KubeClient;
  readonly ns: string;
  readonly replicas: ControllerProcess[] = [];
  readonly #cleanups: Array<() => Promise<void> | void> = [];

  constructor(cluster: E2eCluster, ns: string) {
    this.cluster = cluster;
    this.client = cluster.client;
    this.ns = ns;
  }

  /** Registers a cleanup (run in reverse order at the end). */
  defer(fn: () => Promise<void> | void): void {
    this.#cleanups.push(fn);
  }

  /** A private temporary folder, removed at the end. */
  tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), `${this.ns}-`));
    this.defer(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  /** Starts a controller replica for this namespace and (by default) waits until it is ready. */
  async startReplica(opts: ReplicaOptions = {}): Promise<ControllerProcess> {
    const replica = startController({
      kubeconfig: opts.kubeconfig ?? this.cluster.kubeconfig,
      namespace: this.ns,
      identity: opts.identity ?? `${this.ns}-${this.replicas.length + 1}`,
      ...(opts.installCrds !== undefined ? { installCrds: opts.installCrds } : {}),
      ...(opts.pollIntervalMs !== undefined ? { pollIntervalMs: opts.pollIntervalMs } : {}),
      ...(opts.logLevel !== undefined ? { logLevel: opts.logLevel } : {}),
      ...(opts.env !== undefined ? { env: opts.env } : {}),
    });
    this.replicas.push(replica);
    if (opts.waitReady !== false) await replica.waitReady();
    return replica;
  }

  /** A kubeconfig of this cluster that authenticates as the ServiceAccount `name` of this namespace (a fresh token). */
  async kubeconfigAs(name: string): Promise<string> {
    return kubeconfigWithToken(
      this.cluster.kubeconfig,
      await this.serviceAccountToken(name),
      name,
      this.tempDir(),
    );
  }

  /** Creates objects in this namespace, in order. */
  async create(...manifests: readonly Manifest[]): Promise<void> {
    for (const m of manifests) await this.client.create(collectionPath(m.kind, this.ns), m);
  }

  /** The Agent, or undefined when it does not exist. */
  agent(name: string): Promise<AgentObject | undefined> {
    return this.client.tryGet(`${collectionPath('Agent', this.ns)}/${name}`, AgentSchema);
  }

  /** Every Agent of the namespace. */
  async agents(): Promise<AgentObject[]> {
    return (await this.client.list(collectionPath('Agent', this.ns), {}, AgentSchema)).items;
  }

  /** Waits until `accept` returns true for the Agent; the last status seen is in the timeout error. */
  waitForAgent(
    name: string,
    accept: (a: AgentObject) => boolean,
    description: string,
    timeoutMs = 60_000,
  ): Promise<AgentObject> {
    return pollUntil(
      async (observe) => {
        const a = await this.agent(name);
        observe(a?.status ?? 'absent');
        return a !== undefined && accept(a) ? a : undefined;
      },
      { timeoutMs, intervalMs: 100, description: `Agent ${name}: ${description}` },
    );
  }

  /**
   * Watches this namespace's Agents from now on and records, in resourceVersion order, every phase change: the
   * most Agents Running at once, the order in which Agents became Running, the last version of each Agent (kept
   * after deletion) and the deleted names. Stop it with `stop()` (also done at the end of the scenario).
   */
  async recordAgents(): Promise<AgentRecorder> {
    const path = collectionPath('Agent', this.ns);
    const listed = await this.client.list(path, {}, AgentSchema);
    const recorder = new AgentRecorder(listed.items);
    const abort = new AbortController();
    let rv = listed.resourceVersion;
    const loop = (async () => {
      while (!abort.signal.aborted) {
        const end = await this.client.watch(
          path,
          { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 120, signal: abort.signal },
          (e) => {
            if (e.type === 'ERROR') {
              recorder.errors.push(`${e.object.code}: ${e.object.message}`);
              abort.abort();
              return;
            }
            rv = e.object.metadata.resourceVersion ?? rv;
            if (e.type === 'BOOKMARK') return;
            const parsed = v.safeParse(AgentSchema, e.object);
            if (!parsed.success) {
              recorder.errors.push(`undecodable Agent: ${v.summarize(parsed.issues)}`);
              return;
            }
            recorder.apply(e.type, parsed.output);
          },
        );
        if (end.kind === 'http-error') {
          recorder.errors.push(`watch: HTTP ${end.status} ${end.body.slice(0, 200)}`);
          return;
        }
      }
    })().catch((error: unknown) => {
      if (!abort.signal.aborted) recorder.errors.push(String(error));
    });
    recorder.stop = async () => {
      abort.abort();
      await loop;
    };
    this.defer(() => recorder.stop());
    return recorder;
  }

  /**
   * Waits until the Agent is Succeeded or Failed and returns it. The default deadline is generous because the
   * testbed is shared (another engineer's load can delay pods); an idle testbed finishes a run in ~2 s.
   */
  waitTerminal(name: string, timeoutMs = 120_000): Promise<AgentObject> {
    return this.waitForAgent(
      name,
      (a) => a.status.phase === 'Succeeded' || a.status.phase === 'Failed',
      'a terminal phase',
      timeoutMs,
    );
  }

  /** Deletes the Agent (background propagation); false when it was already gone. */
  deleteAgent(name: string): Promise<boolean> {
    return this.client.delete(`${collectionPath('Agent', this.ns)}/${name}`, {
      propagationPolicy: 'Background',
    });
  }

  /** Waits until the Agent is gone (404). */
  async waitAgentGone(name: string, timeoutMs = 30_000): Promise<void> {
    await pollUntil(async () => ((await this.agent(name)) === undefined ? true : undefined), {
      timeoutMs,
      description: `Agent ${name} to disappear`,
    });
  }

  /** The Job by name, or undefined. */
  job(name: string): Promise<Job | undefined> {
    return this.client.tryGet(apiPath('batch/v1', 'jobs', { namespace: this.ns, name }), JobSchema);
  }

  /** Every Job of the namespace. */
  async jobs(): Promise<Job[]> {
    return (await this.client.list(apiPath('batch/v1', 'jobs', { namespace: this.ns }), {}, JobSchema)).items;
  }

  /** The pods of a Job (label `job-name`). */
  async jobPods(jobName: string): Promise<Pod[]> {
    const { items } = await this.client.list(
      apiPath('v1', 'pods', { namespace: this.ns }),
      { labelSelector: `job-name=${jobName}` },
      PodSchema,
    );
    return items;
  }

  /** The Events whose involvedObject is the Agent `name` (matched by kind, name and, when given, uid). */
  async agentEvents(name: string, uid?: string): Promise<KubeEvent[]> {
    const { items } = await this.client.list(
      apiPath('v1', 'events', { namespace: this.ns }),
      { fieldSelector: `involvedObject.name=${name}` },
      EventSchema,
    );
    return items.filter(
      (e) => e.involvedObject.kind === 'Agent' && (uid === undefined || e.involvedObject.uid === uid),
    );
  }

  /**
   * Waits until the Agent's Events (see `agentEvents`) include every `type/reason` in `wanted` (e.g.
   * `Normal/Started`) and returns them. Events are recorded after the status patch, so read them with this.
   */
  async waitForEvents(name: string, uid: string | undefined, wanted: readonly string[], timeoutMs = 30_000) {
    return pollUntil(
      async (observe) => {
        const events = await this.agentEvents(name, uid);
        const seen = events.map((e) => `${e.type}/${e.reason}`);
        observe(seen);
        return wanted.every((w) => seen.includes(w)) ? events : undefined;
      },
      { timeoutMs, intervalMs: 100, description: `Events ${wanted.join(', ')} on Agent ${name}` },
    );
  }

  /** `kubectl get agent <name>` as the API server prints it: column name → cell. */
  async agentTable(name: string): Promise<Record<string, unknown>> {
    const access = loadKubeconfig(this.cluster.kubeconfig);
    const path = `${collectionPath('Agent', this.ns)}/${name}`;
    const url = new URL(path, access.server);
    const body = await new Promise<string>((resolve, reject) => {
      const req = httpsRequest(url, {
        method: 'GET',
        headers: {
          accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
          ...(access.token !== undefined ? { authorization: `Bearer ${access.token}` } : {}),
        },
        ...(access.ca !== undefined ? { ca: access.ca } : {}),
        ...(access.cert !== undefined ? { cert: access.cert } : {}),
        ...(access.key !== undefined ? { key: access.key } : {}),
        rejectUnauthorized: !access.insecure,
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 0) >= 400)
            reject(new Error(`GET ${path} as Table: ${res.statusCode} ${text}`));
          else resolve(text);
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
      req.end();
    });
    const table = v.parse(TableSchema, JSON.parse(body));
    const row = table.rows[0];
    if (!row) throw new Error(`GET ${path} as Table: no row`);
    return Object.fromEntries(table.columnDefinitions.map((c, i) => [c.name, row.cells[i]]));
  }

  /** A TokenRequest token for a ServiceAccount of this namespace. */
  async serviceAccountToken(name: string, expirationSeconds = 3600): Promise<string> {
    const path = apiPath('v1', 'serviceaccounts', { namespace: this.ns, name, subresource: 'token' });
    const tr = await this.client.create(
      path,
      { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds } },
      TokenRequestSchema,
    );
    return tr.status.token;
  }

  /** The controller logs of every replica, for failure reports. */
  dumpLogs(maxLines = 400): string {
    return this.replicas
      .map(
        (r, i) =>
          `----- controller replica ${i + 1} (${r.identity}, ${r.runtime}, pid ${r.pid}, ${
            r.running ? 'running' : 'exited'
          }) -----\n${tailLines(r.rawLines, maxLines)}`,
      )
      .join('\n');
  }

  /**
   * Best-effort description of the namespace's pods for failure reports: phase, container states and the last
   * log lines of every container.
   */
  async dumpPods(maxLines = 40): Promise<string> {
    const out: string[] = [];
    try {
      const { items } = await this.client.list(apiPath('v1', 'pods', { namespace: this.ns }), {}, PodSchema);
      for (const pod of items) {
        const name = pod.metadata.name ?? '';
        const states = [
          ...(pod.status.initContainerStatuses ?? []),
          ...(pod.status.containerStatuses ?? []),
        ].map((c) => ({ name: c.name, state: c.state }));
        out.push(`--- pod ${name}: ${pod.status.phase} ${pod.status.reason ?? ''} ${JSON.stringify(states)}`);
        for (const c of states) {
          try {
            const log = await this.client.logs(this.ns, name, { container: c.name, tailLines: maxLines });
            out.push(`    [${c.name}] ${log.trimEnd().split('\n').join('\n    ')}`);
          } catch (error) {
            out.push(`    [${c.name}] log unavailable: ${String(error).slice(0, 200)}`);
          }
        }
      }
    } catch (error) {
      out.push(`pods unavailable: ${String(error).slice(0, 200)}`);
    }
    return out.join('\n');
  }

  /** Stops every replica still running and runs the cleanups in reverse order; never throws. */
  async finish(): Promise<void> {
    for (const r of this.replicas) {
      if (!r.running) continue;
      try {
        await r.stop(10_000);
      } catch {
        await r.kill();
      }
    }
    for (const fn of [...this.#cleanups].reverse()) {
      try {
        await fn();
      } catch {
        // best effort
      }
    }
  }
}

/** What `Scenario.recordAgents` saw; see there. */
export class AgentRecorder {
  /** Most Agents in phase Running at the same time. */
  maxRunning = 0;
  /** Most Agents of each Station (`spec.stationRef`) in phase Running at the same time. */
  readonly maxRunningByStation = new Map<string, number>();
  /** Names in the order they first became Running. */
  readonly started: string[] = [];
  /** Names in the order they were deleted. */
  readonly deleted: string[] = [];
  /** The last version seen of every Agent, deleted ones included. */
  readonly last = new Map<string, AgentObject>();
  /** Watch errors (410, undecodable objects); a test should assert there are none. */
  readonly errors: string[] = [];
  /** Stops watching. */
  stop: () => Promise<void> = async () => {};
  readonly #phase = new Map<string, string>();
  readonly #station = new Map<string, string>();

  constructor(initial: readonly AgentObject[]) {
    for (const a of initial) this.apply('ADDED', a);
  }

  /** Applies one watch event. */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', a: AgentObject): void {
    const name = a.metadata.name ?? '';
    this.last.set(name, a);
    if (type === 'DELETED') {
      this.#phase.delete(name);
      this.deleted.push(name);
      return;
    }
    const phase = a.status.phase ?? 'Pending';
    if (phase === 'Running' && this.#phase.get(name) !== 'Running' && !this.started.includes(name))
      this.started.push(name);
    this.#phase.set(name, phase);
    this.#station.set(name, a.spec.stationRef);
    let running = 0;
    let inStation = 0;
    for (const [n, p] of this.#phase) {
      if (p !== 'Running') continue;
      running++;
      if (this.#station.get(n) === a.spec.stationRef) inStation++;
    }
    this.maxRunning = Math.max(this.maxRunning, running);
    const station = a.spec.stationRef;
    this.maxRunningByStation.set(station, Math.max(this.maxRunningByStation.get(station) ?? 0, inStation));
  }

  /** The recorded phase of an Agent that still exists. */
  phase(name: string): string | undefined {
    return this.#phase.get(name);
  }
}

/** A Scenario in a fresh namespace named after `prefix`; `finish()` stops its replicas and deletes the namespace. */
export async function openScenario(cluster: E2eCluster, prefix: string): Promise<Scenario> {
  const ns = await freshNamespace(cluster.client, prefix);
  const scenario = new Scenario(cluster, ns.name);
  scenario.defer(ns.cleanup);
  return scenario;
}

/** Runs `body` in `scenario`; on failure every replica's log and the namespace's pods are written to stderr. */
export async function inScenario(scenario: Scenario, body: (s: Scenario) => Promise<void>): Promise<void> {
  try {
    await body(scenario);
  } catch (error) {
    process.stderr.write(`\n===== scenario ${scenario.ns} failed; controller logs follow =====\n`);
    process.stderr.write(`${scenario.dumpLogs()}\n===== pods of ${scenario.ns} =====\n`);
    process.stderr.write(`${await scenario.dumpPods()}\n===== end of ${scenario.ns} =====\n`);
    throw error;
  }
}

/**
 * Runs `body` in a fresh namespace named after `prefix`. On failure every replica's log is written to stderr
 * before the error is rethrown; replicas are always stopped and the namespace deleted.
 */
export async function runScenario(
  cluster: E2eCluster,
  prefix: string,
  body: (s: Scenario) => Promise<void>,
): Promise<void> {
  const scenario = await openScenario(cluster, prefix);
  try {
    await inScenario(scenario, body);
  } finally {
    await scenario.finish();
  }
}
