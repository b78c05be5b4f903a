// `npm run bench -- --mode batch`: N batch Agents (default 1,000) through the controller against a loopback fake of
// one vendor's batch API (test/support/fake-vendors, built from docs/reference/vendor-apis.md). No Job, no pod: the
// figures are the
// controller's own work per batch run. Measures: submits per second (and the raw bound: the same creates made
// straight to the fake by the adapter), create → batchId, vendor requests per poll period while N batches are in
// flight (against N for polling one by one), the fake's `ended` → Agent terminal (against the poll period's own
// floor), terminal → batch deleted at the vendor, and the controller's memory. Prints figures; asserts nothing.
import { setTimeout as delay } from 'node:timers/promises';
import * as v from 'valibot';
import { API_VERSION } from '../src/api/index.ts';
import { anthropicBatches } from '../src/vendors/batch/anthropic.ts';
import { geminiBatches } from '../src/vendors/batch/gemini.ts';
import { openaiBatches } from '../src/vendors/batch/openai.ts';
import {
  API_KEY_ENV,
  BASE_URL_ENV,
  type BatchProvider,
  type BatchVendor,
  runCustomId,
} from '../src/vendors/batch/port.ts';
import { startFakeAnthropic } from '../test/support/fake-vendors/anthropic.ts';
import { startFakeGemini } from '../test/support/fake-vendors/gemini.ts';
import { startFakeOpenAI } from '../test/support/fake-vendors/openai.ts';
import type { FakeVendorServer, RecordedRequest } from '../test/support/fake-vendors/types.ts';
import { apiPath, type KubeClient } from '../test/support/index.ts';
import type { BenchOptions } from './args.ts';
import {
  type ControllerProcess,
  type Sampler,
  startControllerProcess,
  startSampler,
  waitLeader,
} from './controller-process.ts';
import { agentName, BENCH_LABEL, BENCH_STATION } from './fixtures.ts';
import { type BenchHttp, runPool } from './http.ts';
import { perSecond, type Summary, summarize } from './stats.ts';
import { watchLoop } from './watch-loop.ts';

const now = (): number => performance.timeOrigin + performance.now();
const info = (text: string): void => void process.stderr.write(`[bench] ${text}\n`);
const MiB = 1024 * 1024;

/** The model of each vendor's benchmark recipe. */
const MODELS: Readonly<Record<BatchProvider, string>> = {
  anthropic: 'claude-opus-5-5',
  openai: 'gpt-6.1-sol',
  gemini: 'gemini-3.8-flash',
};
const ADAPTERS: Readonly<Record<BatchProvider, BatchVendor>> = {
  anthropic: anthropicBatches,
  openai: openaiBatches,
  gemini: geminiBatches,
};
const FAKES: Readonly<Record<BatchProvider, () => Promise<FakeVendorServer>>> = {
  anthropic: () => startFakeAnthropic({ autoOutcome: () => 'hold' }),
  openai: () => startFakeOpenAI({ autoOutcome: () => 'hold' }),
  gemini: () => startFakeGemini({ autoOutcome: () => 'hold' }),
};

const AgentView = v.looseObject({
  metadata: v.looseObject({ name: v.string() }),
  status: v.optional(v.looseObject({ phase: v.optional(v.string()), batchId: v.optional(v.string()) })),
});

/** What a vendor request was, from its method and path (list pages carry `limit=` / `pageSize=`). */
export type VendorRequestKind = 'create' | 'list' | 'poll' | 'cancel' | 'delete' | 'other';

export function classifyVendorRequest(r: Pick<RecordedRequest, 'method' | 'path'>): VendorRequestKind {
  if (r.method === 'DELETE') return 'delete';
  if (r.method === 'GET') return /[?&](limit|pageSize)=/.test(r.path) ? 'list' : 'poll';
  if (r.method === 'POST' && /(cancel)$/i.test(r.path.split('?')[0] ?? '')) return 'cancel';
  if (r.method === 'POST' && /(\/batches|:batchGenerateContent|\/files)$/.test(r.path.split('?')[0] ?? ''))
    return 'create';
  return 'other';
}

/** Requests of each kind in [from, to). */
export function countRequests(
  requests: readonly Pick<RecordedRequest, 'method' | 'path' | 'at'>[],
  from: number,
  to: number,
): Record<VendorRequestKind, number> {
  const out: Record<VendorRequestKind, number> = {
    create: 0,
    list: 0,
    poll: 0,
    cancel: 0,
    delete: 0,
    other: 0,
  };
  for (const r of requests) if (r.at >= from && r.at < to) out[classifyVendorRequest(r)]++;
  return out;
}

/** The figures of one batch benchmark run. */
export interface BatchReport {
  readonly provider: BatchProvider;
  readonly agents: number;
  readonly pollSeconds: number;
  readonly listing: boolean;
  readonly createPerSecond: number;
  /** The adapter's creates made straight to the fake, C in flight, no controller. */
  readonly rawSubmitsPerSecond: number;
  readonly submitsPerSecond: number;
  readonly createToBatchId: Summary;
  /** Batches in flight during the steady window. */
  readonly inFlight: number;
  readonly steadyPeriods: number;
  /** Vendor requests per poll period while `inFlight` batches were pending. */
  readonly perPeriod: Readonly<Record<VendorRequestKind, number>>;
  readonly endedToTerminal: Summary;
  /** From the first list page or poll after the end (when the controller could know) to the terminal phase. */
  readonly seenToTerminal: Summary;
  /** N status PATCHes sent at once (C in flight) on Agents of a namespace without a controller: burst start → each done. */
  readonly rawBurst: Summary;
  readonly terminalToDeleted: Summary;
  readonly succeeded: number;
  readonly terminal: number;
  readonly rssIdleMiB: number | undefined;
  readonly rssPeakMiB: number | undefined;
  readonly cpuSeconds: number | undefined;
  readonly vendorRequests: Readonly<Record<VendorRequestKind, number>>;
  readonly warnings: number;
  readonly errors: number;
  readonly firstErrors: readonly string[];
  readonly timedOut: boolean;
}

interface Tracked {
  created?: number;
  batchId?: string;
  batchIdAt?: number;
  terminalAt?: number;
  phase?: string;
}

export interface BatchScenarioInput {
  readonly opts: BenchOptions;
  readonly repoRoot: string;
  readonly client: KubeClient;
  readonly http: BenchHttp;
  readonly runId: string;
  readonly live: { controller: ControllerProcess | undefined; readonly namespaces: Set<string> };
  readonly signal: AbortSignal;
  readonly createNamespace: (name: string) => Promise<void>;
}

/** Waits until `cond` holds (checked every 100 ms); false at the deadline or on abort. */
async function until(cond: () => boolean, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline || signal.aborted) return false;
    await delay(100);
  }
  return true;
}

/**
 * The API server's floor for N runs ending at once: in a namespace without a controller, N Agents are created, then
 * their status is PATCHed terminal, all at once with C in flight (what the controller must do when N batches end
 * together). Returns, per Agent, the time from the burst's start to its PATCH's answer.
 */
async function rawPatchBurst(input: BatchScenarioInput): Promise<Summary> {
  const { opts, http, runId, live, signal } = input;
  const namespace = `bench-batch-raw-${runId}`;
  await input.createNamespace(namespace);
  live.namespaces.add(namespace);
  const agents = apiPath(API_VERSION, 'agents', { namespace });
  info(`raw bound: ${opts.agents} Agents in ${namespace}, then their terminal status PATCHes at once`);
  await runPool(
    opts.agents,
    opts.concurrency,
    async (i) => {
      const r = await http.call('POST', agents, {
        apiVersion: API_VERSION,
        kind: 'Agent',
        metadata: { name: agentName(i), labels: { [BENCH_LABEL]: runId } },
        spec: { stationRef: BENCH_STATION },
      });
      if (!r.ok) throw new Error(r.error);
    },
    signal,
  );
  const start = now();
  const done: number[] = [];
  await runPool(
    opts.agents,
    opts.concurrency,
    async (i) => {
      const r = await http.call(
        'PATCH',
        `${agents}/${agentName(i)}/status`,
        { status: { phase: 'Succeeded', exitCode: 0, completedAt: new Date().toISOString() } },
        'application/merge-patch+json',
      );
      if (!r.ok) throw new Error(r.error);
      done.push(now() - start);
    },
    signal,
  );
  return summarize(done);
}

export async function runBatchScenario(input: BatchScenarioInput): Promise<BatchReport> {
  const { opts, client, http, runId, live, signal } = input;
  const provider = opts.vendor;
  const pollMs = opts.pollSeconds * 1000;
  const fake = await FAKES[provider]();
  let sampler: Sampler | undefined;
  const watchAbort = new AbortController();
  const stopWatch = (): void => watchAbort.abort();
  signal.addEventListener('abort', stopWatch, { once: true });
  try {
    // Raw bound: the adapter's own creates, C in flight, no controller and no API server.
    const call = {
      apiKey: fake.apiKey,
      baseUrl: fake.baseUrl,
      fetch: globalThis.fetch,
      timeoutMs: 30_000,
      attempts: 3,
      sleep: (ms: number) => delay(ms),
    };
    info(`raw bound: ${opts.agents} ${provider} creates straight to the fake, ${opts.concurrency} in flight`);
    const rawStart = now();
    await runPool(
      opts.agents,
      opts.concurrency,
      async (i) => {
        await ADAPTERS[provider].submit(
          {
            customId: runCustomId(`raw-${runId}-${i}`),
            label: `raw/${i}`,
            model: MODELS[provider],
            prompt: `bench ${i}`,
            maxTokens: 1024,
          },
          call,
        );
      },
      signal,
    );
    const rawSubmitsPerSecond = perSecond(opts.agents, now() - rawStart);
    fake.reset();
    const rawBurst = await rawPatchBurst(input);

    const namespace = `bench-batch-${runId}`;
    await input.createNamespace(namespace);
    live.namespaces.add(namespace);
    const labels = { [BENCH_LABEL]: runId };
    const group = (resource: string) => apiPath(API_VERSION, resource, { namespace });
    await client.create(apiPath('v1', 'secrets', { namespace }), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'agent-secrets', labels },
      stringData: { [API_KEY_ENV[provider]]: fake.apiKey },
    });
    await client.create(group('agentdefinitions'), {
      apiVersion: API_VERSION,
      kind: 'AgentDefinition',
      metadata: { name: BENCH_STATION, labels },
      spec: { model: MODELS[provider], prompt: 'bench {i}', execution: 'batch', batch: { maxTokens: 1024 } },
    });
    await client.create(group('stations'), {
      apiVersion: API_VERSION,
      kind: 'Station',
      metadata: { name: BENCH_STATION, labels },
      spec: {
        agentDefRef: BENCH_STATION,
        maxConcurrentRuns: 0,
        concurrencyPolicy: 'Allow',
        template: { spec: { containers: [{ name: 'agent', image: 'debian:bookworm-slim' }] } },
      },
    });

    const logFile = `/tmp/agent-controller-bench-${runId}-batch.log`;
    info(`starting the controller (${opts.runtime}, BATCH_POLL_SECONDS=${opts.pollSeconds}); log ${logFile}`);
    const controller = await startControllerProcess({
      runtime: opts.runtime,
      repoRoot: input.repoRoot,
      bundle: `${input.repoRoot}/${opts.bundle}`,
      kubeconfig: opts.kubeconfig,
      namespace,
      agentImage: opts.agentImage,
      logFile,
      env: {
        BATCH_ENABLED: 'true',
        BATCH_POLL_SECONDS: String(opts.pollSeconds),
        BATCH_POLL_LIST: opts.batchList ? 'true' : 'false',
        [BASE_URL_ENV[provider]]: fake.baseUrl,
      },
    });
    live.controller = controller;
    if (!(await waitLeader(controller.metricsUrl, 60_000, signal)))
      throw new Error(`the controller did not become leader within 60 s (log: ${logFile})`);
    sampler = startSampler(controller.metricsUrl, 1000);
    await delay(1500);
    const rssIdle = sampler.samples.at(-1)?.rssBytes;

    const runs = new Map<string, Tracked>();
    const byBatch = new Map<string, string>();
    let ready!: () => void;
    const watching = new Promise<void>((r) => {
      ready = r;
    });
    const watch = watchLoop(
      client,
      group('agents'),
      watchAbort.signal,
      (c) => {
        const at = now();
        const a = v.safeParse(AgentView, c.object);
        if (!a.success || c.type === 'DELETED') return;
        const t = runs.get(a.output.metadata.name) ?? {};
        runs.set(a.output.metadata.name, t);
        const id = a.output.status?.batchId;
        if (id !== undefined && t.batchId === undefined) {
          t.batchId = id;
          t.batchIdAt = at;
          byBatch.set(id, a.output.metadata.name);
        }
        const phase = a.output.status?.phase;
        if ((phase === 'Succeeded' || phase === 'Failed') && t.terminalAt === undefined) {
          t.terminalAt = at;
          t.phase = phase;
        }
      },
      () => ready(),
    );
    await watching;

    info(`creating ${opts.agents} batch Agents, ${opts.concurrency} in flight, namespace ${namespace}`);
    const createStart = now();
    await runPool(
      opts.agents,
      opts.concurrency,
      async (i) => {
        const name = agentName(i);
        const r = await http.call('POST', group('agents'), {
          apiVersion: API_VERSION,
          kind: 'Agent',
          metadata: { name, labels },
          spec: { stationRef: BENCH_STATION, parameters: { i: String(i) } },
        });
        if (!r.ok) throw new Error(r.error);
        const t = runs.get(name) ?? {};
        t.created = now();
        runs.set(name, t);
      },
      signal,
    );
    const createPerSecond = perSecond(opts.agents, now() - createStart);
    const allSubmitted = await until(
      () => [...runs.values()].filter((t) => t.batchId !== undefined).length >= opts.agents,
      opts.timeoutMs,
      signal,
    );
    const creates = fake.requests.filter((r) => classifyVendorRequest(r) === 'create').map((r) => r.at);
    const submitsPerSecond =
      creates.length > 1
        ? perSecond(creates.length, Math.max(...creates) - Math.min(...creates))
        : Number.NaN;

    // Steady state: every batch pending; one period to settle, then count the vendor requests over three periods.
    const steadyPeriods = 3;
    info(`all ${opts.agents} submitted: counting vendor requests over ${steadyPeriods} poll periods`);
    await delay(pollMs, undefined, { signal }).catch(() => undefined);
    const windowStart = Date.now();
    await delay(steadyPeriods * pollMs, undefined, { signal }).catch(() => undefined);
    const counted = countRequests(fake.requests, windowStart, Date.now());
    const perPeriod = Object.fromEntries(
      Object.entries(counted).map(([k, n]) => [k, n / steadyPeriods]),
    ) as Record<VendorRequestKind, number>;
    const inFlight = fake.batches().filter((b) => b.state === 'pending').length;

    // Every batch ends now; time each Agent from its batch's end to its terminal phase.
    info(`finishing ${inFlight} batches at the fake`);
    const endedAt = new Map<string, number>();
    for (const b of fake.batches()) {
      if (b.state !== 'pending') continue;
      fake.finish(b.id, { kind: 'succeeded', text: `done ${b.prompt}` });
      endedAt.set(b.id, now());
    }
    const deletedAt = new Map<string, number>();
    const allTerminal = until(
      () => {
        const at = now();
        for (const b of fake.batches()) if (b.deleted && !deletedAt.has(b.id)) deletedAt.set(b.id, at);
        return (
          [...runs.values()].filter((t) => t.terminalAt !== undefined).length >= opts.agents &&
          deletedAt.size >= endedAt.size
        );
      },
      opts.timeoutMs,
      signal,
    );
    const finished = await allTerminal;
    const endedToTerminal: number[] = [];
    const seenToTerminal: number[] = [];
    const terminalToDeleted: number[] = [];
    const firstEnd = Math.min(...endedAt.values());
    const after = fake.requests.filter((r) => r.at >= Math.floor(firstEnd));
    for (const [id, ended] of endedAt) {
      const t = runs.get(byBatch.get(id) ?? '');
      if (t?.terminalAt === undefined) continue;
      endedToTerminal.push(t.terminalAt - ended);
      // The controller learnt of the end from its first list page or poll of that batch after it.
      const seen = after.find((r) => {
        const kind = classifyVendorRequest(r);
        return r.at >= Math.floor(ended) && (kind === 'list' || (kind === 'poll' && r.path.includes(id)));
      });
      if (seen !== undefined) seenToTerminal.push(t.terminalAt - seen.at);
      const gone = deletedAt.get(id);
      if (gone !== undefined) terminalToDeleted.push(gone - t.terminalAt);
    }
    await sampler.stop();
    const samples = sampler.samples;
    const rss = samples.map((s) => s.rssBytes).filter((x): x is number => x !== undefined);
    stopWatch();
    await watch;
    const tracked = [...runs.values()];
    return {
      provider,
      agents: opts.agents,
      pollSeconds: opts.pollSeconds,
      listing: opts.batchList,
      createPerSecond,
      rawSubmitsPerSecond,
      submitsPerSecond,
      createToBatchId: summarize(
        tracked.map((t) =>
          t.created !== undefined && t.batchIdAt !== undefined ? t.batchIdAt - t.created : Number.NaN,
        ),
      ),
      inFlight,
      steadyPeriods,
      perPeriod,
      endedToTerminal: summarize(endedToTerminal),
      seenToTerminal: summarize(seenToTerminal),
      rawBurst,
      terminalToDeleted: summarize(terminalToDeleted),
      succeeded: tracked.filter((t) => t.phase === 'Succeeded').length,
      terminal: tracked.filter((t) => t.terminalAt !== undefined).length,
      rssIdleMiB: rssIdle === undefined ? undefined : rssIdle / MiB,
      rssPeakMiB: rss.length === 0 ? undefined : Math.max(...rss) / MiB,
      cpuSeconds: samples.at(-1)?.cpuSeconds,
      vendorRequests: countRequests(fake.requests, 0, Number.POSITIVE_INFINITY),
      warnings: controller.log.warnings,
      errors: controller.log.errors,
      firstErrors: controller.log.firstErrors,
      timedOut: !allSubmitted || !finished,
    };
  } finally {
    stopWatch();
    signal.removeEventListener('abort', stopWatch);
    await sampler?.stop().catch(() => undefined);
    await live.controller?.stop();
    live.controller = undefined;
    await fake.close();
  }
}

const ms = (x: number): string =>
  Number.isFinite(x) ? `${Math.round(x).toLocaleString('en-US')} ms` : 'n/a';
const num = (x: number | undefined, digits = 1): string =>
  x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(digits);

/** The report as a table: each figure beside what bounds it in the same run. */
export function formatBatchReport(r: BatchReport): string {
  const p = r.pollSeconds * 1000;
  const polls = r.perPeriod.poll + r.perPeriod.list;
  const rows: [string, string, string][] = [
    ['figure', 'controller', 'bound (same run)'],
    [
      'batch submits/s',
      num(r.submitsPerSecond),
      `${num(r.rawSubmitsPerSecond)} (adapter straight to the fake, ${r.agents} creates)`,
    ],
    ['Agent POSTs/s (creating client)', num(r.createPerSecond), ''],
    ['create → batchId p50 / p99', `${ms(r.createToBatchId.p50)} / ${ms(r.createToBatchId.p99)}`, ''],
    [
      `vendor requests per poll period (${r.inFlight} in flight)`,
      `${num(polls)} (${num(r.perPeriod.list)} list pages, ${num(r.perPeriod.poll)} polls)`,
      `${r.inFlight} (one poll per batch per period)`,
    ],
    [
      'batch ended → Agent terminal p50 / p99',
      `${ms(r.endedToTerminal.p50)} / ${ms(r.endedToTerminal.p99)}`,
      `${ms(p / 2)} / ${ms(0.99 * p)} (uniform wait for the next poll)`,
    ],
    [
      `  from the first poll after the end (${r.agents} ended at once)`,
      `${ms(r.seenToTerminal.p50)} / ${ms(r.seenToTerminal.p99)}`,
      `${ms(r.rawBurst.p50)} / ${ms(r.rawBurst.p99)} (${r.agents} terminal PATCHes sent at once, no controller)`,
    ],
    [
      'Agent terminal → batch deleted p50 / p99',
      `${ms(r.terminalToDeleted.p50)} / ${ms(r.terminalToDeleted.p99)}`,
      '',
    ],
    ['controller RSS idle / peak', `${num(r.rssIdleMiB, 0)} / ${num(r.rssPeakMiB, 0)} MiB`, ''],
    ['controller CPU', `${num(r.cpuSeconds)} s`, ''],
  ];
  const w0 = Math.max(...rows.map((x) => x[0].length));
  const w1 = Math.max(...rows.map((x) => x[1].length));
  const lines = rows.map(([a, b, c]) => `${a.padEnd(w0)}  ${b.padEnd(w1)}  ${c}`.trimEnd());
  const total = r.vendorRequests;
  return [
    `batch runs against the fake ${r.provider} API: ${r.agents} Agents, BATCH_POLL_SECONDS=${r.pollSeconds}, list sweeps ${r.listing ? 'on' : 'off'}${r.timedOut ? ' — TIMED OUT' : ''}`,
    '',
    ...lines,
    '',
    `terminal ${r.terminal} of ${r.agents} (Succeeded ${r.succeeded}); vendor requests in all: ${Object.entries(
      total,
    )
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
    `controller log: ${r.warnings} warnings, ${r.errors} errors${r.firstErrors.length > 0 ? `\n  ${r.firstErrors.join('\n  ')}` : ''}`,
    '',
  ].join('\n');
}
