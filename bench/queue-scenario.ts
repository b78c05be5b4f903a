// `npm run bench -- --scenario queue-10k`: one Station (Forbid, maxConcurrentRuns 1), N Agents (default 10,000):
// one runs (it sleeps), the rest queue behind it. Measures what the controller costs while it holds a long queue
// and how it hands the slot over: memory per cached Agent, CPU and reconciles while nothing changes, health-probe
// latency and event-loop lag under that load, FIFO hand-over latency, shutdown, and restart to Ready. Raw figures
// from the same run (a paginated LIST of the N Agents, a Job POST) give each latency its floor. Prints figures; asserts
// nothing.
import { setTimeout as delay } from 'node:timers/promises';
import * as v from 'valibot';
import { API_VERSION } from '../src/api/index.ts';
import { apiPath, type ClusterAccess, type KubeClient, type KubeObject } from '../test/support/index.ts';
import { type ApiPathsReport, formatApiPaths, measureApiPaths } from './api-paths.ts';
import type { BenchOptions } from './args.ts';
import { type ControllerProcess, scrape, startControllerProcess, waitLeader } from './controller-process.ts';
import { agentName, BENCH_LABEL } from './fixtures.ts';
import { type BenchHttp, runPool } from './http.ts';
import { type Summary, summarize } from './stats.ts';
import { watchLoop } from './watch-loop.ts';

const now = (): number => performance.timeOrigin + performance.now();
const info = (text: string): void => void process.stderr.write(`[bench] ${text}\n`);
const QUEUE_STATION = 'queue';

const AgentView = v.looseObject({
  metadata: v.looseObject({
    name: v.string(),
    uid: v.optional(v.string()),
    creationTimestamp: v.optional(v.string()),
  }),
  status: v.optional(
    v.looseObject({
      phase: v.optional(v.string()),
      conditions: v.nullish(
        v.array(v.looseObject({ type: v.string(), status: v.string(), reason: v.optional(v.string()) })),
      ),
    }),
  ),
});
const JobOwner = v.looseObject({
  metadata: v.looseObject({
    ownerReferences: v.optional(
      v.array(v.looseObject({ kind: v.string(), name: v.string(), controller: v.optional(v.boolean()) })),
    ),
  }),
});
const LeaseView = v.looseObject({
  spec: v.optional(v.looseObject({ holderIdentity: v.nullish(v.string()) })),
});

interface Tracked {
  created: number;
  name: string;
  uid: string;
  phase: string;
  queued: boolean;
}

/** The figures of one queue scenario run. */
export interface QueueReport {
  readonly agents: number;
  readonly created: number;
  readonly createPerSecond: number;
  /** First POST → every Agent but the running one carries Ready=False/Queued. */
  readonly allQueuedMs: number | undefined;
  readonly statusPatches: number | undefined;
  readonly rssEmptyMiB: number | undefined;
  readonly rssLoadedMiB: number | undefined;
  readonly bytesPerAgent: number | undefined;
  readonly idleWindowS: number;
  readonly idleCpuShare: number | undefined;
  readonly idleReconciles: number | undefined;
  readonly healthz: Summary;
  readonly healthzFailures: number;
  readonly readyzMetrics: Summary;
  readonly maxLoopLagMs: number | undefined;
  readonly handover: Summary;
  readonly handoverInOrder: number;
  readonly shutdownMs: number | undefined;
  readonly leaseReleased: boolean | undefined;
  readonly restartReadyMs: number | undefined;
  readonly restartLeadingMs: number | undefined;
  readonly restartHandoverMs: number | undefined;
  readonly rawListMs: Summary;
  readonly rawPostJobMs: Summary;
  /** Raw read and request paths the controller could take (streaming list, HTTP/2), with `--api-paths`. */
  readonly apiPaths: ApiPathsReport | undefined;
  readonly notes: string[];
}

function queueDefinition(namespace: string, runId: string): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: 'AgentDefinition',
    metadata: { name: QUEUE_STATION, namespace, labels: { [BENCH_LABEL]: runId } },
    // The prompt is appended as one more argument: sh takes it as $0.
    spec: { model: 'exec', prompt: 'queue {i}', tool_config: { command: ['sh', '-c', 'sleep 3600'] } },
  };
}

function queueStation(namespace: string, runId: string): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: 'Station',
    metadata: { name: QUEUE_STATION, namespace, labels: { [BENCH_LABEL]: runId } },
    spec: {
      agentDefRef: QUEUE_STATION,
      deadlineMinutes: 120,
      maxConcurrentRuns: 1,
      concurrencyPolicy: 'Forbid',
      template: {
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'agent', image: 'debian:bookworm-slim' }],
        },
      },
    },
  };
}

function queueAgent(namespace: string, runId: string, i: number): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: 'Agent',
    metadata: { name: agentName(i), namespace, labels: { [BENCH_LABEL]: runId } },
    spec: { stationRef: QUEUE_STATION, parameters: { i: String(i) } },
  };
}

/** Time one GET; NaN when it failed or took longer than `timeoutMs`. */
async function timedGet(url: string, timeoutMs = 5000): Promise<number> {
  const t0 = now();
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.ok ? now() - t0 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Polls until `check` returns true or `timeoutMs` passes; false on timeout or abort. */
async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !signal.aborted) {
    if (await check()) return true;
    await delay(20);
  }
  return false;
}

const mib = (b: number | undefined): number | undefined => (b === undefined ? undefined : b / 1048576);

export interface QueueContext {
  readonly opts: BenchOptions;
  readonly repoRoot: string;
  readonly client: KubeClient;
  readonly access: ClusterAccess;
  readonly http: BenchHttp;
  readonly runId: string;
  readonly live: { controller: ControllerProcess | undefined; readonly namespaces: Set<string> };
  readonly signal: AbortSignal;
  readonly createNamespace: (name: string) => Promise<void>;
}

/** Runs the queue scenario end to end (the caller deletes the namespace). */
export async function runQueueScenario(ctx: QueueContext): Promise<QueueReport> {
  const { opts, client, http, runId, live, signal } = ctx;
  const n = opts.agents;
  const namespace = `bench-q-${runId}`;
  const notes: string[] = [];
  await ctx.createNamespace(namespace);
  live.namespaces.add(namespace);
  const group = (plural: string) => `/apis/${API_VERSION}/namespaces/${namespace}/${plural}`;
  for (const [plural, body] of [
    ['agentdefinitions', queueDefinition(namespace, runId)],
    ['stations', queueStation(namespace, runId)],
  ] as const) {
    const r = await http.call('POST', group(plural), body);
    if (!r.ok) throw new Error(r.error);
  }

  const start = async (tag: string): Promise<ControllerProcess> => {
    const c = await startControllerProcess({
      runtime: opts.runtime,
      repoRoot: ctx.repoRoot,
      bundle: opts.bundle,
      kubeconfig: opts.kubeconfig,
      namespace,
      agentImage: opts.agentImage,
      logFile: `/tmp/agent-controller-bench-${runId}-${tag}.log`,
      cpuProfDir: opts.cpuProfDir,
    });
    live.controller = c;
    return c;
  };

  // The benchmark's own view: every Agent (for FIFO order and the Queued condition) and every Job's owner.
  const agents = new Map<string, Tracked>();
  const jobSeen = new Map<string, number>();
  const watchAbort = new AbortController();
  const onAbort = () => watchAbort.abort();
  signal.addEventListener('abort', onAbort);
  let agentsReady: () => void = () => {};
  let jobsReady: () => void = () => {};
  const ready = Promise.all([
    new Promise<void>((r) => {
      agentsReady = r;
    }),
    new Promise<void>((r) => {
      jobsReady = r;
    }),
  ]);
  let queuedCount = 0;
  const watches = [
    watchLoop(
      client,
      group('agents'),
      watchAbort.signal,
      (c) => {
        const a = v.safeParse(AgentView, c.object);
        if (!a.success) return;
        const name = a.output.metadata.name;
        const old = agents.get(name);
        if (old?.queued) queuedCount--;
        if (c.type === 'DELETED') {
          agents.delete(name);
          return;
        }
        const queued = (a.output.status?.conditions ?? []).some(
          (x) => x.type === 'Ready' && x.reason === 'Queued',
        );
        if (queued && a.output.status?.phase !== 'Running') queuedCount++;
        agents.set(name, {
          name,
          uid: a.output.metadata.uid ?? '',
          created: Date.parse(a.output.metadata.creationTimestamp ?? ''),
          phase: a.output.status?.phase ?? 'Pending',
          queued: queued && a.output.status?.phase !== 'Running',
        });
      },
      () => agentsReady(),
    ),
    watchLoop(
      client,
      apiPath('batch/v1', 'jobs', { namespace }),
      watchAbort.signal,
      (c) => {
        if (c.type === 'DELETED') return;
        const j = v.safeParse(JobOwner, c.object as KubeObject);
        const owner = j.success
          ? (j.output.metadata.ownerReferences ?? []).find((o) => o.controller === true)
          : undefined;
        if (owner !== undefined && !jobSeen.has(owner.name)) jobSeen.set(owner.name, now());
      },
      () => jobsReady(),
    ),
  ];

  let controller = await start('1');
  const report: { -readonly [K in keyof QueueReport]: QueueReport[K] } = {
    agents: n,
    created: 0,
    createPerSecond: Number.NaN,
    allQueuedMs: undefined,
    statusPatches: undefined,
    rssEmptyMiB: undefined,
    rssLoadedMiB: undefined,
    bytesPerAgent: undefined,
    idleWindowS: 60,
    idleCpuShare: undefined,
    idleReconciles: undefined,
    healthz: summarize([]),
    healthzFailures: 0,
    readyzMetrics: summarize([]),
    maxLoopLagMs: undefined,
    handover: summarize([]),
    handoverInOrder: 0,
    shutdownMs: undefined,
    leaseReleased: undefined,
    restartReadyMs: undefined,
    restartLeadingMs: undefined,
    restartHandoverMs: undefined,
    rawListMs: summarize([]),
    rawPostJobMs: summarize([]),
    apiPaths: undefined,
    notes,
  };
  /** Stops the scenario between steps once Ctrl-C was pressed (the caller still cleans up). */
  const step = (what: string): void => {
    if (signal.aborted) throw new Error(`interrupted before ${what}`);
    info(what);
  };
  try {
    await ready;
    if (!(await waitLeader(controller.metricsUrl, 60_000, signal)))
      throw new Error('the controller never led');
    await delay(2000);
    const empty = await scrape(controller.metricsUrl);
    report.rssEmptyMiB = mib(empty?.rssBytes);

    // 1. Create N Agents.
    info(`creating ${n} Agents (${opts.concurrency} in flight) behind one Forbid slot`);
    const t0 = now();
    let created = 0;
    const errors = await runPool(
      n,
      opts.concurrency,
      async (i) => {
        const r = await http.call('POST', group('agents'), queueAgent(namespace, runId, i));
        if (r.ok) created++;
        else throw new Error(r.error);
      },
      signal,
    );
    const tCreated = now();
    if (errors.size > 0)
      notes.push(`${errors.size} Agent POSTs failed, first: ${String([...errors.values()][0])}`);
    report.created = created;
    report.createPerSecond = (created * 1000) / (tCreated - t0);
    info(
      `created ${created} in ${((tCreated - t0) / 1000).toFixed(1)} s; waiting until ${created - 1} are queued`,
    );

    step(`waiting until ${created - 1} Agents are queued`);
    // 2. Every Agent but one queued (Ready=False/Queued), one Running.
    const allQueued = await until(() => queuedCount >= created - 1, 30 * 60_000, signal);
    if (allQueued) report.allQueuedMs = now() - t0;
    else notes.push(`only ${queuedCount} of ${created - 1} Agents were marked Queued`);
    // Settle: no status patch for 5 s.
    let last = (await scrape(controller.metricsUrl))?.statusPatches ?? 0;
    for (let quiet = 0; quiet < 5 && !signal.aborted; ) {
      await delay(1000);
      const p = (await scrape(controller.metricsUrl))?.statusPatches ?? 0;
      quiet = p === last ? quiet + 1 : 0;
      last = p;
    }
    report.statusPatches = last;

    step('idle window');
    // 3. Idle window: nothing changes; probe health every 250 ms, /readyz and /metrics every second.
    info(`idle window of ${report.idleWindowS} s with ${created} Agents cached`);
    const before = await scrape(controller.metricsUrl);
    const base = `http://127.0.0.1:${controller.port}`;
    const healthz: number[] = [];
    const other: number[] = [];
    const windowEnd = Date.now() + report.idleWindowS * 1000;
    let tick = 0;
    while (Date.now() < windowEnd && !signal.aborted) {
      const next = Date.now() + 250;
      healthz.push(await timedGet(`${base}/healthz`));
      if (tick++ % 4 === 0) other.push(await timedGet(`${base}/readyz`), await timedGet(`${base}/metrics`));
      const wait = next - Date.now();
      if (wait > 0) await delay(wait);
    }
    const after = await scrape(controller.metricsUrl);
    const windowS = report.idleWindowS;
    if (before?.cpuSeconds !== undefined && after?.cpuSeconds !== undefined)
      report.idleCpuShare = (after.cpuSeconds - before.cpuSeconds) / windowS;
    if (before?.reconciles !== undefined && after?.reconciles !== undefined)
      report.idleReconciles = after.reconciles - before.reconciles;
    report.rssLoadedMiB = mib(after?.rssBytes);
    if (after?.rssBytes !== undefined && empty?.rssBytes !== undefined && created > 0)
      report.bytesPerAgent = (after.rssBytes - empty.rssBytes) / created;
    report.healthz = summarize(healthz);
    report.healthzFailures = healthz.filter((x) => !Number.isFinite(x)).length;
    report.readyzMetrics = summarize(other);

    step('FIFO hand-overs');
    // 4. FIFO hand-over: delete the running Agent; the oldest queued one must get its Job.
    const handovers: number[] = [];
    const order = (a: Tracked, b: Tracked) =>
      a.created !== b.created
        ? a.created - b.created
        : a.name < b.name
          ? -1
          : a.name > b.name
            ? 1
            : a.uid < b.uid
              ? -1
              : 1;
    const handOver = async (): Promise<number | undefined> => {
      const runningAgent = [...agents.values()].find((a) => a.phase === 'Running');
      if (runningAgent === undefined) {
        notes.push('no Running Agent to hand over from');
        return undefined;
      }
      const queued = [...agents.values()].filter((a) => a.phase === 'Pending').sort(order);
      const expected = queued[0];
      if (expected === undefined) return undefined;
      const t = now();
      const r = await http.call('DELETE', `${group('agents')}/${runningAgent.name}`, {
        propagationPolicy: 'Background',
      });
      if (!r.ok) {
        notes.push(`hand-over delete failed: ${r.error}`);
        return undefined;
      }
      const waiting = new Set(queued.map((q) => q.name));
      const got = await until(() => [...jobSeen.keys()].some((k) => waiting.has(k)), 60_000, signal);
      if (!got) {
        notes.push(`no queued Agent got a Job within 60 s after ${runningAgent.name} was deleted`);
        return undefined;
      }
      const winner = queued.find((q) => jobSeen.has(q.name));
      if (winner?.name === expected.name) report.handoverInOrder++;
      else notes.push(`hand-over went to ${winner?.name}, expected ${expected.name}`);
      const at = winner === undefined ? undefined : jobSeen.get(winner.name);
      // Wait until the winner is Running in our view, so the next hand-over deletes it.
      await until(() => agents.get(winner?.name ?? '')?.phase === 'Running', 30_000, signal);
      return at === undefined ? undefined : at - t;
    };
    for (let k = 0; k < 10 && !signal.aborted; k++) {
      const ms = await handOver();
      if (ms !== undefined) handovers.push(ms);
    }
    report.handover = summarize(handovers);

    step('raw floors');
    // 5. Raw floors in the same run: paginated LIST of the N Agents, POST of a (suspended) Job.
    const lists: number[] = [];
    for (let k = 0; k < 3; k++) {
      const t = now();
      let cont: string | undefined;
      do {
        const page = await client.request('GET', group('agents'), {
          query: { limit: '500', ...(cont ? { continue: cont } : {}) },
        });
        const body = JSON.parse(page.body) as { metadata?: { continue?: string } };
        cont = body.metadata?.continue || undefined;
      } while (cont !== undefined);
      lists.push(now() - t);
    }
    report.rawListMs = summarize(lists);
    const posts: number[] = [];
    for (let k = 0; k < 20; k++) {
      const t = now();
      const r = await http.call('POST', apiPath('batch/v1', 'jobs', { namespace }), {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: `raw-${k}`, labels: { [BENCH_LABEL]: runId } },
        spec: {
          suspend: true,
          template: { spec: { restartPolicy: 'Never', containers: [{ name: 'x', image: 'none' }] } },
        },
      });
      if (r.ok) posts.push(now() - t);
    }
    report.rawPostJobMs = summarize(posts);
    if (opts.apiPaths) {
      step('API paths');
      report.apiPaths = await measureApiPaths({
        access: ctx.access,
        collection: group('agents'),
        names: [...agents.keys()],
        configMaps: apiPath('v1', 'configmaps', { namespace }),
        requests: 2000,
        concurrency: opts.concurrency,
        info,
      });
    }

    // 6. Event-loop lag over the whole run so far.
    const metricsText = await fetch(`${base}/metrics`)
      .then((r) => r.text())
      .catch(() => '');
    const lagBuckets = [
      ...metricsText.matchAll(/^controller_event_loop_lag_seconds_bucket\{le="([^"]+)"\} (\d+)/gm),
    ].map((m) => [Number(m[1]), Number(m[2])] as const);
    const total = lagBuckets.find(([le]) => !Number.isFinite(le))?.[1] ?? 0;
    const firstFull = lagBuckets.find(([, c]) => c >= total);
    if (total > 0 && firstFull !== undefined) report.maxLoopLagMs = firstFull[0] * 1000;

    step('restart');
    // 7. Restart: SIGTERM (timed, Lease released?), then a new process to Ready, leading, and a hand-over.
    info('restarting the controller');
    const tStop = now();
    await controller.stop(30_000);
    report.shutdownMs = now() - tStop;
    const lease = await client.tryGet(
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/agent-controller`,
    );
    const holder = lease === undefined ? undefined : v.safeParse(LeaseView, lease);
    report.leaseReleased = holder?.success ? !holder.output.spec?.holderIdentity : undefined;
    const tStart = now();
    controller = await start('2');
    const readyOk = await until(
      async () => Number.isFinite(await timedGet(`http://127.0.0.1:${controller.port}/readyz`, 2000)),
      120_000,
      signal,
    );
    if (readyOk) report.restartReadyMs = now() - tStart;
    if (await waitLeader(controller.metricsUrl, 120_000, signal)) report.restartLeadingMs = now() - tStart;
    const inOrderBefore = report.handoverInOrder;
    report.restartHandoverMs = await handOver();
    report.handoverInOrder = inOrderBefore;
    return report;
  } finally {
    signal.removeEventListener('abort', onAbort);
    watchAbort.abort();
    await Promise.allSettled(watches);
    await controller.stop();
  }
}

const f = (x: number | undefined, digits = 0): string =>
  x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(digits);
const ms = (s: Summary): string =>
  s.count === 0 ? 'n/a' : `${f(s.p50)} / ${f(s.p99)} / ${f(s.max)} ms (n=${s.count})`;

/** The queue scenario's report as a Markdown table. */
export function formatQueueReport(r: QueueReport): string {
  const rows: Array<[string, string, string]> = [
    ['Agents created (POST rate)', `${r.created} (${f(r.createPerSecond, 1)}/s)`, ''],
    [
      'first POST → all but one Queued',
      r.allQueuedMs === undefined ? 'n/a' : `${f(r.allQueuedMs / 1000, 1)} s`,
      '',
    ],
    [
      'status patches accepted (whole run)',
      f(r.statusPatches),
      `≈ one per queued Agent + the runs (${r.created})`,
    ],
    ['controller RSS: empty → N cached', `${f(r.rssEmptyMiB)} → ${f(r.rssLoadedMiB)} MiB`, '≤ 150 MiB'],
    ['bytes per cached Agent', f(r.bytesPerAgent), ''],
    [
      `idle CPU (${r.idleWindowS} s, nothing changing)`,
      r.idleCpuShare === undefined ? 'n/a' : `${f(r.idleCpuShare * 100, 1)}% of a core`,
      '≤ 5%',
    ],
    ['reconciles while idle', f(r.idleReconciles), ''],
    ['/healthz p50 / p99 / max', ms(r.healthz), `≤ 1000 ms; failures: ${r.healthzFailures}`],
    ['/readyz, /metrics p50 / p99 / max', ms(r.readyzMetrics), '≤ 1000 ms'],
    [
      'event-loop lag, max (histogram bound)',
      r.maxLoopLagMs === undefined ? 'n/a' : `≤ ${f(r.maxLoopLagMs)} ms`,
      '≤ 100 ms',
    ],
    [
      'FIFO hand-over (delete → next Job seen)',
      ms(r.handover),
      `p50 ≤ 200 ms; in order ${r.handoverInOrder}/${r.handover.count}`,
    ],
    ['raw: POST Job', ms(r.rawPostJobMs), 'floor of a hand-over'],
    [
      'shutdown (SIGTERM → exit)',
      r.shutdownMs === undefined ? 'n/a' : `${f(r.shutdownMs)} ms`,
      `Lease released: ${r.leaseReleased ?? 'n/a'}`,
    ],
    [
      'restart → /readyz 200',
      r.restartReadyMs === undefined ? 'n/a' : `${f(r.restartReadyMs)} ms`,
      '≤ 5000 ms',
    ],
    ['restart → leading', r.restartLeadingMs === undefined ? 'n/a' : `${f(r.restartLeadingMs)} ms`, ''],
    [
      'first hand-over after restart',
      r.restartHandoverMs === undefined ? 'n/a' : `${f(r.restartHandoverMs)} ms`,
      '',
    ],
    ['raw: paginated LIST of all Agents', ms(r.rawListMs), 'floor of restart → ready'],
  ];
  const lines = [
    `## queue scenario: ${r.agents} Agents on one Station (Forbid, maxConcurrentRuns 1)`,
    '',
    '| figure | measured | target / bound |',
    '|---|---|---|',
    ...rows.map(([a, b, c]) => `| ${a} | ${b} | ${c} |`),
  ];
  if (r.notes.length > 0) lines.push('', 'Notes:', ...r.notes.map((x) => `- ${x}`));
  if (r.apiPaths !== undefined) lines.push('', formatApiPaths(r.apiPaths));
  return `${lines.join('\n')}\n`;
}
