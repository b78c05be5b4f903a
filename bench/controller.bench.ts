// The controller benchmark (issue 3 §6): N Agents through the real controller on the control plane, timed from the
// benchmark's own watches, then the same API writes by a minimal client as the raw bound. Figures are printed, never
// asserted. Run it with `npm run bench -- --agents 200` (see bench/README.md).
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { buildCrd, CRD_KINDS } from '../src/api/crd/index.ts';
import { API_VERSION } from '../src/api/index.ts';
import { apiPath, KubeClient, type KubeObject, loadKubeconfig } from '../test/support/index.ts';
import { type BenchOptions, DEFAULT_AGENTS, parseBenchArgs, USAGE } from './args.ts';
import { formatBatchReport, runBatchScenario } from './batch-scenario.ts';
import {
  type ControllerProcess,
  type Sampler,
  startControllerProcess,
  startSampler,
  waitLeader,
} from './controller-process.ts';
import { formatProfileSummary, readCpuProfiles, summarizeCpuProfile } from './cpu-profile.ts';
import { BENCH_LABEL, benchAgent, benchDefinition, benchStation } from './fixtures.ts';
import { formatGatewayReport } from './gateway-figures.ts';
import { runGatewayScenario } from './gateway-scenario.ts';
import { type ProcPeaks, startProcSampler } from './host-procs.ts';
import { BenchHttp, runPool } from './http.ts';
import { resourceFigures } from './prom-text.ts';
import { formatQueueReport, runQueueScenario } from './queue-scenario.ts';
import { runRawBound } from './raw-bound.ts';
import { rawFigures } from './raw-figures.ts';
import { formatRealtimeReport, runRealtimeScenario } from './realtime-scenario.ts';
import { type BenchReport, formatReport } from './report.ts';
import { controllerFigures, Timeline } from './timeline.ts';
import { formatTtftReport } from './ttft.ts';
import { runTtftScenario } from './ttft-scenario.ts';
import { watchLoop } from './watch-loop.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const AGENTS_GROUP_VERSION = API_VERSION;
/** How long namespace deletion may take before the benchmark gives up waiting (it is still requested). */
const CLEANUP_TIMEOUT_MS = 180_000;

/** How long to wait for a namespace to go: shorter once the user pressed Ctrl-C. */
const cleanupTimeout = (signal: AbortSignal): number => (signal.aborted ? 30_000 : CLEANUP_TIMEOUT_MS);

/** Wall-clock epoch milliseconds with sub-millisecond resolution, monotonic within this process. */
const now = (): number => performance.timeOrigin + performance.now();

const info = (text: string): void => void process.stderr.write(`[bench] ${text}\n`);

const JobView = v.looseObject({
  metadata: v.looseObject({
    ownerReferences: v.optional(
      v.array(v.looseObject({ kind: v.string(), name: v.string(), controller: v.optional(v.boolean()) })),
    ),
  }),
  status: v.optional(
    v.looseObject({
      conditions: v.optional(v.array(v.looseObject({ type: v.string(), status: v.string() }))),
    }),
  ),
});

const AgentView = v.looseObject({
  metadata: v.looseObject({ name: v.string() }),
  status: v.optional(v.looseObject({ phase: v.optional(v.string()) })),
});

const CrdStatus = v.looseObject({
  status: v.optional(
    v.looseObject({
      // A CRD created a moment ago reports `conditions: null`.
      conditions: v.nullish(v.array(v.looseObject({ type: v.string(), status: v.string() }))),
    }),
  ),
});

/** Server-side applies the CRDs of this build (as `--install-crds` does) and waits until they are Established. */
async function ensureCrds(client: KubeClient): Promise<void> {
  for (const kind of CRD_KINDS) {
    const crd = buildCrd(kind);
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
    const res = await client.request('PATCH', path, {
      body: crd,
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'agent-controller', force: true },
    });
    if (res.status >= 400)
      throw new Error(`applying CRD ${crd.metadata.name}: HTTP ${res.status} ${res.body}`);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const got = await client.get(path, CrdStatus);
      if ((got.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} is not Established after 30 s`);
      await delay(200);
    }
  }
}

async function createNamespace(client: KubeClient, name: string, runId: string): Promise<void> {
  await client.create(apiPath('v1', 'namespaces'), {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { [BENCH_LABEL]: runId } },
  });
}

/**
 * Deletes a namespace and waits (at most `timeoutMs`) until it is gone. Returns how long that took, or undefined
 * when it was still there at the deadline (deletion then completes in the background). Never throws.
 */
async function deleteNamespace(
  client: KubeClient,
  name: string,
  timeoutMs: number,
): Promise<number | undefined> {
  const started = Date.now();
  const path = apiPath('v1', 'namespaces', { name });
  try {
    await client.delete(path, { propagationPolicy: 'Background' });
    while (Date.now() - started < timeoutMs) {
      if ((await client.tryGet(path)) === undefined) return Date.now() - started;
      await delay(500);
    }
  } catch (error) {
    info(`deleting namespace ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  info(`namespace ${name} is still terminating; it is left to finish in the background`);
  return undefined;
}

/** State the Ctrl-C handler needs to clean up. */
interface Live {
  controller: ControllerProcess | undefined;
  readonly namespaces: Set<string>;
}

async function rawPhase(
  opts: BenchOptions,
  client: KubeClient,
  http: BenchHttp,
  runId: string,
  live: Live,
  signal: AbortSignal,
): Promise<NonNullable<BenchReport['raw']>> {
  const namespace = `bench-raw-${runId}`;
  await createNamespace(client, namespace, runId);
  live.namespaces.add(namespace);
  const group = (resource: string) => apiPath(AGENTS_GROUP_VERSION, resource, { namespace });
  const definition = await client.create(group('agentdefinitions'), benchDefinition(namespace, runId));
  const station = await client.create(group('stations'), benchStation(namespace, runId));
  info(`raw bound: ${opts.agents} items, ${opts.concurrency} in flight, namespace ${namespace}`);
  const times = await runRawBound({
    station,
    definition,
    http,
    namespace,
    runId,
    count: opts.agents,
    concurrency: opts.concurrency,
    agentImage: opts.agentImage,
    now,
    signal,
  });
  const figures = rawFigures(times);
  info(`raw bound done in ${(figures.wallMs / 1000).toFixed(1)} s; deleting ${namespace}`);
  const cleanupMs = await deleteNamespace(client, namespace, cleanupTimeout(signal));
  live.namespaces.delete(namespace);
  return { namespace, figures, cleanupMs };
}

async function controllerPhase(
  opts: BenchOptions,
  client: KubeClient,
  http: BenchHttp,
  runId: string,
  live: Live,
  signal: AbortSignal,
  subject: 'ours' | 'informer-baseline' = 'ours',
): Promise<NonNullable<BenchReport['controller']>> {
  const namespace = subject === 'ours' ? `bench-${runId}` : `bench-b-${runId}`;
  await createNamespace(client, namespace, runId);
  live.namespaces.add(namespace);
  const group = (resource: string) => apiPath(AGENTS_GROUP_VERSION, resource, { namespace });
  await client.create(group('agentdefinitions'), benchDefinition(namespace, runId));
  await client.create(group('stations'), benchStation(namespace, runId, opts.pods));

  const logFile = join(
    tmpdir(),
    `agent-controller-bench-${runId}${subject === 'ours' ? '' : '-baseline'}.log`,
  );
  info(
    `starting ${subject === 'ours' ? `the controller (${opts.runtime})` : 'the informer baseline'} for namespace ${namespace}; log ${logFile}`,
  );
  const controller = await startControllerProcess({
    ...(subject === 'informer-baseline'
      ? {
          command: [
            process.execPath,
            [
              '--import',
              'tsx',
              resolve(REPO_ROOT, 'bench/baseline-controller.ts'),
              '--namespace',
              namespace,
              '--port',
              '0',
              '--agent-image',
              opts.agentImage,
            ],
          ] as const,
        }
      : {}),
    runtime: opts.runtime,
    repoRoot: REPO_ROOT,
    bundle: resolve(REPO_ROOT, opts.bundle),
    kubeconfig: opts.kubeconfig,
    namespace,
    agentImage: opts.agentImage,
    logFile,
    ...(subject === 'ours' ? { cpuProfDir: opts.cpuProfDir } : {}),
  });
  live.controller = controller;
  const watchAbort = new AbortController();
  const onAbort = (): void => watchAbort.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const timeline = new Timeline();
  let timedOut = false;
  const watchStats: { reconnects: number; relists: number }[] = [];
  const watches: Promise<void>[] = [];
  let sampler: Sampler | undefined;
  let procSampler: { stop(): Promise<ProcPeaks> } | undefined;
  try {
    if (!(await waitLeader(controller.metricsUrl, 60_000, signal)))
      throw new Error(`the controller did not become leader within 60 s (log: ${logFile})`);
    sampler = startSampler(controller.metricsUrl, 1000);
    const samples = sampler.samples;
    procSampler = startProcSampler(1000);

    let agentsReady!: () => void;
    let jobsReady!: () => void;
    const ready = Promise.all([
      new Promise<void>((r) => {
        agentsReady = r;
      }),
      new Promise<void>((r) => {
        jobsReady = r;
      }),
    ]);
    const track = (p: Promise<{ reconnects: number; relists: number }>): void => {
      watches.push(p.then((s) => void watchStats.push(s)));
    };
    track(
      watchLoop(
        client,
        group('agents'),
        watchAbort.signal,
        (c) => {
          const at = now();
          const a = v.safeParse(AgentView, c.object);
          if (!a.success) return;
          timeline.agentEvent(
            { name: a.output.metadata.name, phase: a.output.status?.phase },
            at,
            c.type === 'DELETED',
          );
        },
        () => agentsReady(),
      ),
    );
    track(
      watchLoop(
        client,
        apiPath('batch/v1', 'jobs', { namespace }),
        watchAbort.signal,
        (c) => {
          if (c.type === 'DELETED') return;
          const at = now();
          const j = v.safeParse(JobView, c.object as KubeObject);
          if (!j.success) return;
          const owner = (j.output.metadata.ownerReferences ?? []).find(
            (o) => o.controller === true && o.kind === 'Agent',
          );
          const trueConditions = (j.output.status?.conditions ?? [])
            .filter((x) => x.status === 'True')
            .map((x) => x.type);
          timeline.jobEvent({ owner: owner?.name, trueConditions }, at);
        },
        () => jobsReady(),
      ),
    );
    await ready;
    // One idle sample before the load, so "idle RSS" is measured, not guessed.
    const idleDeadline = Date.now() + 5000;
    while (samples.length === 0 && Date.now() < idleDeadline) await delay(100);

    info(`creating ${opts.agents} Agents, ${opts.concurrency} in flight`);
    const postErrors = new Map<string, number>();
    const agentsPath = group('agents');
    const creating = runPool(
      opts.agents,
      opts.concurrency,
      async (i) => {
        const manifest = benchAgent(namespace, runId, i);
        const name = String((manifest.metadata as { name: string }).name);
        timeline.postStarted(name, now());
        const r = await http.call('POST', agentsPath, manifest);
        if (r.ok) timeline.created(name, now());
        else postErrors.set(r.error, (postErrors.get(r.error) ?? 0) + 1);
      },
      signal,
    );

    const started = Date.now();
    let lastProgress = started;
    let creatingDone = false;
    void creating.then(() => {
      creatingDone = true;
    });
    for (;;) {
      const p = timeline.progress();
      if (creatingDone && timeline.settled() >= p.created) break;
      if (signal.aborted) break;
      if (Date.now() - started > opts.timeoutMs) {
        timedOut = true;
        info(`timed out after ${(opts.timeoutMs / 60000).toFixed(0)} min waiting for terminal Agents`);
        break;
      }
      if (Date.now() - lastProgress >= 10_000) {
        lastProgress = Date.now();
        const rss = samples.at(-1)?.rssBytes;
        info(
          `t=${((Date.now() - started) / 1000).toFixed(0)}s created ${p.created}/${opts.agents} ` +
            `jobs ${p.jobs} finished ${p.finished} terminal ${p.terminal}` +
            (rss === undefined ? '' : ` rss ${(rss / 1048576).toFixed(0)} MiB`),
        );
      }
      await delay(100);
    }
    await creating;
    for (const [e, n] of postErrors) info(`Agent POST failed ${n}×: ${e}`);
    await sampler.stop();
    sampler = undefined;
    const pods = await procSampler.stop();
    procSampler = undefined;
    const figures = controllerFigures(timeline.snapshot(), opts.agents);
    watchAbort.abort();
    await Promise.allSettled(watches);
    await controller.stop();
    live.controller = undefined;
    info(`controller stopped; deleting ${namespace}`);
    const cleanupMs = await deleteNamespace(client, namespace, cleanupTimeout(signal));
    live.namespaces.delete(namespace);
    return {
      namespace,
      figures,
      resources: resourceFigures(samples),
      pods,
      logWarnings: controller.log.warnings,
      logErrors: controller.log.errors,
      firstErrors: controller.log.firstErrors,
      logFile,
      watchReconnects: watchStats.reduce((n, s) => n + s.reconnects, 0),
      watchRelists: watchStats.reduce((n, s) => n + s.relists, 0),
      timedOut,
      cleanupMs,
    };
  } finally {
    await sampler?.stop();
    await procSampler?.stop();
    signal.removeEventListener('abort', onAbort);
    watchAbort.abort();
    await Promise.allSettled(watches);
    await controller.stop();
  }
}

async function main(argv: readonly string[]): Promise<number> {
  const parsed = parseBenchArgs(argv, process.env);
  if (!parsed.ok) {
    process.stderr.write(`bench: ${parsed.error}\n\n${USAGE}`);
    return 2;
  }
  const opts = parsed.value;
  if (opts.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const startedMs = Date.now();
  const runId = randomBytes(3).toString('hex');
  const access = loadKubeconfig(opts.kubeconfig);
  const client = new KubeClient(access);
  const http = new BenchHttp(access, opts.concurrency + 4);
  const live: Live = { controller: undefined, namespaces: new Set() };
  const abort = new AbortController();
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals): void => {
    if (interrupted) {
      info(`second ${sig}: exiting now; namespaces left: ${[...live.namespaces].join(', ') || 'none'}`);
      process.exit(130);
    }
    interrupted = true;
    info(
      `${sig}: stopping the controller and deleting the benchmark namespaces (Ctrl-C again to quit at once)`,
    );
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const report: {
    -readonly [K in keyof BenchReport]: BenchReport[K];
  } = {
    header: {
      agents: opts.agents,
      concurrency: opts.concurrency,
      runtime: opts.runtime,
      pods: opts.pods,
      cpus: cpus().length,
      loadAverage: loadavg(),
      node: process.version,
      startedAt: new Date(startedMs).toISOString(),
      ...(opts.agents !== DEFAULT_AGENTS
        ? {}
        : { note: `default N = ${DEFAULT_AGENTS}; pass --agents N for a quicker run (see bench/README.md)` }),
    },
    totalMs: 0,
    interrupted: false,
  };
  let code = 0;
  /** Runs one scenario body; whatever happens, stops the controller and deletes the namespaces. */
  const guarded = async (body: () => Promise<void>): Promise<void> => {
    try {
      await ensureCrds(client);
      await body();
    } catch (error) {
      info(`failed: ${error instanceof Error ? error.message : String(error)}`);
      code = 1;
    } finally {
      await live.controller?.stop();
      for (const ns of live.namespaces) await deleteNamespace(client, ns, cleanupTimeout(abort.signal));
      http.close();
      client.close();
    }
  };
  /** A scenario with its own report: run it guarded, print the report after the load line, write the JSON. */
  const single = async <R>(run: () => Promise<R>, format: (r: R) => string): Promise<number> => {
    const load = loadavg();
    await guarded(async () => {
      const r = await run();
      const header = `load average at start ${load.map((x) => x.toFixed(2)).join(' ')}, ${cpus().length} cores, ${opts.runtime}`;
      process.stdout.write(`${header}\n\n${format(r)}`);
      if (opts.jsonOut) writeFileSync(opts.jsonOut, `${JSON.stringify(r, null, 2)}\n`);
    });
    printProfiles(opts.cpuProfDir, startedMs);
    return interrupted ? 130 : code;
  };
  const scenarioInput = {
    opts,
    repoRoot: REPO_ROOT,
    client,
    access,
    http,
    runId,
    live,
    signal: abort.signal,
    createNamespace: (name: string) => createNamespace(client, name, runId),
  };
  if (opts.mode === 'batch') return single(() => runBatchScenario(scenarioInput), formatBatchReport);
  if (opts.mode === 'realtime') return single(() => runRealtimeScenario(scenarioInput), formatRealtimeReport);
  if (opts.scenario === 'queue-10k') return single(() => runQueueScenario(scenarioInput), formatQueueReport);
  if (opts.scenario === 'ttft') return single(() => runTtftScenario(scenarioInput), formatTtftReport);
  if (opts.scenario === 'gateway')
    return single(() => runGatewayScenario(scenarioInput), formatGatewayReport);
  await guarded(async () => {
    if (opts.baseline && !abort.signal.aborted)
      report.raw = await rawPhase(opts, client, http, runId, live, abort.signal);
    if (opts.controller && !abort.signal.aborted)
      report.controller = await controllerPhase(opts, client, http, runId, live, abort.signal);
    if (opts.informerBaseline && !abort.signal.aborted)
      report.baseline = await controllerPhase(
        opts,
        client,
        http,
        runId,
        live,
        abort.signal,
        'informer-baseline',
      );
  });
  report.totalMs = Date.now() - startedMs;
  report.interrupted = interrupted;
  process.stdout.write(formatReport(report));
  if (opts.jsonOut) writeFileSync(opts.jsonOut, `${JSON.stringify(report, null, 2)}\n`);
  printProfiles(opts.cpuProfDir, startedMs);
  return interrupted ? 130 : code;
}

/** With `--cpu-prof`: where each profiled controller process spent its CPU time. */
function printProfiles(dir: string | undefined, sinceMs: number): void {
  if (dir === undefined) return;
  const profiles = readCpuProfiles(dir, sinceMs);
  if (profiles.length === 0) process.stdout.write(`\nno CPU profile was written to ${dir}\n`);
  for (const { path, profile } of profiles) {
    const lines = formatProfileSummary(summarizeCpuProfile(profile));
    process.stdout.write(`\n${path}\n${lines.join('\n')}\n`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
