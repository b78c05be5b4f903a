import { parseArgs } from 'node:util';
import * as v from 'valibot';
import { err, ok, type Result } from '../src/shared/result.ts';

/** Agents created by default. Chosen from a measured run on the 2-core dev machine (see bench/README.md). */
export const DEFAULT_AGENTS = 1000;
/** In-flight requests of the creating client (and of the raw-bound client) by default. */
export const DEFAULT_CONCURRENCY = 50;

/** Which runtime runs the controller bundle (the run pods follow it through the image table). */
export const RUNTIMES = ['node', 'deno'] as const;
export type Runtime = (typeof RUNTIMES)[number];

/** What a benchmark run measures: N runs start to finish, or a long queue behind one slot. */
export const SCENARIOS = ['runs', 'queue-10k', 'ttft', 'gateway'] as const;
export type Scenario = (typeof SCENARIOS)[number];
/** What the benchmark Agents execute as: Jobs (pods), or batches the controller submits to a fake vendor API. */
export const MODES = ['job', 'batch', 'realtime'] as const;
export type Mode = (typeof MODES)[number];
/** Vendors whose fake batch API `--mode batch` runs against. */
export const VENDORS = ['anthropic', 'openai', 'gemini'] as const;
export type Vendor = (typeof VENDORS)[number];
/** BATCH_POLL_SECONDS of the controller in `--mode batch` by default (the product's default is 60). */
export const DEFAULT_BENCH_POLL_SECONDS = 10;

/** Agents of the queue scenario by default. */
export const DEFAULT_QUEUE_AGENTS = 10_000;
/**
 * Runs per burst of the ttft scenario by default: the 100 of issue 25 §5. On the 2-core dev machine that burst takes
 * about 5.5 minutes and up to 82 Claude Code processes at once, 12 GiB resident together (bench/README.md, "Time to
 * first token"); `--agents 20` is the quick run.
 */
export const DEFAULT_TTFT_BURST = 100;
/** Calls of each kind (whole, streamed), through the gateway and as many straight to the fake, in the gateway scenario. */
export const DEFAULT_GATEWAY_CALLS = 500;
/** Streams open at once in the gateway scenario (issue 28, "Bench"). */
export const DEFAULT_GATEWAY_STREAMS = 200;

/** Everything one benchmark run is configured with. */
export interface BenchOptions {
  readonly scenario: Scenario;
  readonly mode: Mode;
  /** `--mode batch`: the fake vendor, the controller's poll period and whether it sweeps with list requests. */
  readonly vendor: Vendor;
  readonly pollSeconds: number;
  readonly batchList: boolean;
  /** `--mode realtime`: sessions open at once, prompts per session through the API (and as many straight to the pod). */
  readonly sessions: number;
  readonly prompts: number;
  /** `--scenario gateway`: streams open at once in each burst. */
  readonly streams: number;
  readonly agents: number;
  readonly concurrency: number;
  readonly kubeconfig: string;
  readonly bundle: string;
  readonly runtime: Runtime;
  /** Init image of run pods (controller AGENT_IMAGE); default by runtime: agent-controller:e2e(-deno). */
  readonly agentImage: string;
  readonly baseline: boolean;
  readonly controller: boolean;
  /** Also run the @kubernetes/client-node informer controller (bench/baseline-controller.ts) on the same load. */
  readonly informerBaseline: boolean;
  /** real: run pods run their processes; instant: the test node reports them done at once (controller-only figures). */
  readonly pods: 'real' | 'instant';
  /** Give up waiting for terminal Agents after this long. */
  readonly timeoutMs: number;
  /** Write the figures as JSON here too. */
  readonly jsonOut: string | undefined;
  /** Profile our controller (`node --cpu-prof`) into this folder and print where its CPU time went. */
  readonly cpuProfDir: string | undefined;
  /** queue-10k: also measure raw read and request paths (streaming list, larger pages, HTTP/2), bench/api-paths.ts. */
  readonly apiPaths: boolean;
  readonly help: boolean;
}

export const USAGE = `Usage: npm run bench -- [flags]
       node --import tsx bench/controller.bench.ts --kubeconfig PATH [flags]

First makes the API writes of N runs with a minimal client and no controller (the raw bound), then creates N
Agents with the controller running and times them from watch events; prints both side by side.

Flags:
  --scenario S          runs (default): N Agents start to finish, raw bound alongside;
                        queue-10k: N Agents (default ${DEFAULT_QUEUE_AGENTS}) queued behind one Forbid slot;
                        ttft: time to first token of the real Claude Code, the mock CLI and bare pods, one run
                        on an idle control plane and each run of a burst of N (default ${DEFAULT_TTFT_BURST});
                        gateway: N whole and N streamed Anthropic Messages calls (default ${DEFAULT_GATEWAY_CALLS})
                        through the model gateway and as many straight to the fake, then bursts of
                        --streams S (default ${DEFAULT_GATEWAY_STREAMS}) streams at once each way
  --mode M              job (default): Agents run as Jobs; batch: the controller submits each to a loopback fake
                        of a vendor's batch API (no Job, no pod), see bench/README.md
  --vendor V            with --mode batch: anthropic (default), openai or gemini
  --poll-seconds S      with --mode batch: the controller's BATCH_POLL_SECONDS (default ${DEFAULT_BENCH_POLL_SECONDS})
  --no-batch-list       with --mode batch: BATCH_POLL_LIST=false (poll every batch on its own)
                        realtime: S sessions open at once (--sessions, default 100), each prompted P times
                        (--prompts, default 5) through the prompt API and as often straight to its pod
  --streams S           with --scenario gateway: streams open at once per burst (default ${DEFAULT_GATEWAY_STREAMS})
  --agents N            Agents to create (default ${DEFAULT_AGENTS})
  --concurrency C       in-flight requests of the creating client and of the raw-bound client (default ${DEFAULT_CONCURRENCY})
  --kubeconfig PATH     cluster to use (npm run bench: default is the local testbed, started if needed)
  --bundle PATH         controller bundle (default dist/agent-controller.mjs)
  --runtime R           node or deno: what runs the controller and the run pods (default node)
  --agent-image IMAGE   init image of run pods (default agent-controller:e2e, or :e2e-deno with --runtime deno)
  --pods P              real (default): run pods run their processes; instant: the test node runs nothing and
                        reports each pod done at once, so the figures measure the controller and the API server
  --no-baseline         skip the raw-bound client
  --no-informer-baseline  skip the @kubernetes/client-node informer controller run on the same load
  --no-controller       only run the raw-bound client
  --timeout-minutes M   stop waiting for terminal Agents after M minutes (default 10 + N/20)
  --api-paths           with --scenario queue-10k: also time reading the N Agents by LIST pages of 500 and
                        2000, one LIST, a streaming list (watch with sendInitialEvents) and over HTTP/2, and
                        2000 GETs and ConfigMap POSTs over HTTP/1.1 keep-alive and HTTP/2
  --json PATH           also write the figures as JSON to PATH
  --cpu-prof DIR        profile our controller (node --cpu-prof, written to DIR at its exit) and print the
                        functions with the most self time; needs --runtime node
  -h, --help            show this help
`;

/** N (`--agents`) by scenario when not given. */
const DEFAULT_N: Readonly<Record<Scenario, number>> = {
  runs: DEFAULT_AGENTS,
  'queue-10k': DEFAULT_QUEUE_AGENTS,
  ttft: DEFAULT_TTFT_BURST,
  gateway: DEFAULT_GATEWAY_CALLS,
};

const positiveInt = (flag: string, max: number) =>
  v.pipe(
    v.string(),
    v.regex(/^\d+$/, `${flag} must be a positive integer`),
    v.transform(Number),
    v.minValue(1, `${flag} must be at least 1`),
    v.maxValue(max, `${flag} must be at most ${max}`),
  );

const FlagsSchema = v.object({
  scenario: v.optional(v.picklist(SCENARIOS, '--scenario must be runs, queue-10k, ttft or gateway')),
  mode: v.optional(v.picklist(MODES, '--mode must be job, batch or realtime')),
  vendor: v.optional(v.picklist(VENDORS, '--vendor must be anthropic, openai or gemini')),
  'poll-seconds': v.optional(positiveInt('--poll-seconds', 3600)),
  'no-batch-list': v.optional(v.boolean()),
  sessions: v.optional(positiveInt('--sessions', 1000)),
  prompts: v.optional(positiveInt('--prompts', 1000)),
  streams: v.optional(positiveInt('--streams', 5000)),
  agents: v.optional(positiveInt('--agents', 100_000)),
  concurrency: v.optional(positiveInt('--concurrency', 1000)),
  kubeconfig: v.optional(v.pipe(v.string(), v.minLength(1, '--kubeconfig must not be empty'))),
  bundle: v.optional(v.pipe(v.string(), v.minLength(1, '--bundle must not be empty'))),
  runtime: v.optional(v.picklist(RUNTIMES, '--runtime must be node or deno')),
  'agent-image': v.optional(v.pipe(v.string(), v.minLength(1, '--agent-image must not be empty'))),
  'no-baseline': v.optional(v.boolean()),
  'no-controller': v.optional(v.boolean()),
  'no-informer-baseline': v.optional(v.boolean()),
  pods: v.optional(v.picklist(['real', 'instant'], '--pods must be real or instant')),
  'timeout-minutes': v.optional(positiveInt('--timeout-minutes', 24 * 60)),
  json: v.optional(v.pipe(v.string(), v.minLength(1, '--json must not be empty'))),
  'cpu-prof': v.optional(v.pipe(v.string(), v.minLength(1, '--cpu-prof must not be empty'))),
  'api-paths': v.optional(v.boolean()),
  help: v.optional(v.boolean()),
});

/**
 * Parses the benchmark's command line. Pure: `env` supplies the fallback kubeconfig ($KUBECONFIG). Errors are one
 * line naming the flag. `--help` parses even when other required values are missing.
 */
export function parseBenchArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Result<BenchOptions, string> {
  let values: Record<string, unknown>;
  try {
    values = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        scenario: { type: 'string' },
        mode: { type: 'string' },
        vendor: { type: 'string' },
        'poll-seconds': { type: 'string' },
        'no-batch-list': { type: 'boolean' },
        sessions: { type: 'string' },
        prompts: { type: 'string' },
        streams: { type: 'string' },
        agents: { type: 'string' },
        concurrency: { type: 'string' },
        kubeconfig: { type: 'string' },
        bundle: { type: 'string' },
        runtime: { type: 'string' },
        'agent-image': { type: 'string' },
        'no-baseline': { type: 'boolean' },
        'no-controller': { type: 'boolean' },
        'no-informer-baseline': { type: 'boolean' },
        pods: { type: 'string' },
        'timeout-minutes': { type: 'string' },
        json: { type: 'string' },
        'cpu-prof': { type: 'string' },
        'api-paths': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (error) {
    return err(error instanceof Error ? error.message : String(error));
  }
  const parsed = v.safeParse(FlagsSchema, values);
  if (!parsed.success) return err(parsed.issues[0]?.message ?? 'invalid flags');
  const f = parsed.output;
  const help = f.help === true;
  const kubeconfig = f.kubeconfig ?? (env.KUBECONFIG?.split(':')[0] || undefined);
  if (kubeconfig === undefined && !help) return err('no cluster: pass --kubeconfig PATH (or set KUBECONFIG)');
  if (f['no-baseline'] === true && f['no-controller'] === true)
    return err('--no-baseline and --no-controller together leave nothing to run');
  const scenario = f.scenario ?? 'runs';
  const mode = f.mode ?? 'job';
  if (mode !== 'job' && scenario !== 'runs') return err(`--mode ${mode} runs only the runs scenario`);
  if (mode !== 'realtime' && (f.sessions ?? f.prompts) !== undefined)
    return err('--sessions and --prompts need --mode realtime');
  if (mode !== 'batch' && (f.vendor ?? f['poll-seconds'] ?? f['no-batch-list']) !== undefined)
    return err('--vendor, --poll-seconds and --no-batch-list need --mode batch');
  if (scenario !== 'gateway' && f.streams !== undefined) return err('--streams needs --scenario gateway');
  const agents = f.agents ?? DEFAULT_N[scenario];
  const runtime = f.runtime ?? 'node';
  if (f['cpu-prof'] !== undefined && runtime !== 'node') return err('--cpu-prof needs --runtime node');
  if (f['api-paths'] === true && scenario !== 'queue-10k')
    return err('--api-paths needs --scenario queue-10k');
  return ok({
    scenario,
    mode,
    vendor: f.vendor ?? 'anthropic',
    pollSeconds: f['poll-seconds'] ?? DEFAULT_BENCH_POLL_SECONDS,
    batchList: f['no-batch-list'] !== true,
    sessions: f.sessions ?? 100,
    prompts: f.prompts ?? 5,
    streams: f.streams ?? DEFAULT_GATEWAY_STREAMS,
    agents,
    concurrency: f.concurrency ?? DEFAULT_CONCURRENCY,
    kubeconfig: kubeconfig ?? '',
    bundle: f.bundle ?? 'dist/agent-controller.mjs',
    runtime,
    agentImage:
      f['agent-image'] ?? (runtime === 'deno' ? 'agent-controller:e2e-deno' : 'agent-controller:e2e'),
    baseline: f['no-baseline'] !== true,
    controller: f['no-controller'] !== true,
    informerBaseline: f['no-informer-baseline'] !== true && f['no-controller'] !== true,
    pods: f.pods ?? 'real',
    timeoutMs: (f['timeout-minutes'] ?? 10 + Math.ceil(agents / 20)) * 60_000,
    jsonOut: f.json,
    cpuProfDir: f['cpu-prof'],
    apiPaths: f['api-paths'] === true,
    help,
  });
}
