import type { ProcPeaks } from './host-procs.ts';
import type { ResourceFigures, SumCount } from './prom-text.ts';
import type { RawFigures } from './raw-figures.ts';
import type { Summary } from './stats.ts';
import type { ControllerRunFigures } from './timeline.ts';

/** Everything one benchmark run produced; any part may be absent when it was skipped or did not get that far. */
export interface BenchReport {
  readonly header: {
    readonly agents: number;
    readonly concurrency: number;
    readonly runtime: string;
    /** real: run pods ran their processes; instant: the test node reported them done at once. */
    readonly pods?: 'real' | 'instant';
    readonly cpus: number;
    readonly loadAverage: readonly number[];
    readonly node: string;
    readonly startedAt: string;
    readonly note?: string;
  };
  readonly controller?: RunSection;
  /** The same load through bench/baseline-controller.ts (@kubernetes/client-node informers). */
  readonly baseline?: RunSection;
  readonly raw?: {
    readonly namespace: string;
    readonly figures: RawFigures;
    readonly cleanupMs: number | undefined;
  };
  readonly totalMs: number;
  readonly interrupted: boolean;
}

/** One controller's run over the N Agents. */
export interface RunSection {
  readonly namespace: string;
  readonly figures: ControllerRunFigures;
  readonly resources: ResourceFigures;
  /** Run-pod processes on the host (every user's), sampled 1/s. */
  readonly pods: ProcPeaks;
  readonly logWarnings: number;
  readonly logErrors: number;
  readonly firstErrors: readonly string[];
  readonly logFile: string;
  readonly watchReconnects: number;
  readonly watchRelists: number;
  readonly timedOut: boolean;
  readonly cleanupMs: number | undefined;
}

/** A latency in ms: 1 decimal under 100 ms, whole ms above; `-` when not measured. */
export function fmtMs(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '-';
  return Math.abs(ms) < 100 ? ms.toFixed(1) : ms.toFixed(0);
}

/** A duration in seconds with one decimal; `-` when not measured. */
export function fmtS(ms: number | undefined): string {
  return ms === undefined || !Number.isFinite(ms) ? '-' : `${(ms / 1000).toFixed(1)} s`;
}

/** A rate with 3 significant-ish digits; `-` when not measured. */
export function fmtRate(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return '-';
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

/** Bytes as MiB with one decimal; `-` when not measured. */
export function fmtMiB(bytes: number | undefined): string {
  return bytes === undefined || !Number.isFinite(bytes) ? '-' : `${(bytes / 1048576).toFixed(1)} MiB`;
}

/** `a ÷ b` as `×N.N`; `-` when either is missing or b is 0. */
export function fmtRatio(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '-';
  const r = a / b;
  return `×${r >= 10 ? r.toFixed(0) : r.toFixed(2)}`;
}

const pad = (s: string, n: number): string => s.padEnd(n);
const mibOf = (bytes: number | undefined): number | undefined =>
  bytes === undefined ? undefined : bytes / 1048576;
const lpad = (s: string, n: number): string => s.padStart(n);

function summaryRow(label: string, s: Summary): string {
  const cells = [String(s.count), fmtMs(s.p50), fmtMs(s.p90), fmtMs(s.p99), fmtMs(s.max)];
  return `  ${pad(label, 34)}${cells.map((c) => lpad(c, 9)).join('')}`;
}

const TABLE_HEAD = `  ${pad('latency (ms)', 34)}${['count', 'p50', 'p90', 'p99', 'max'].map((c) => lpad(c, 9)).join('')}`;

function runSection(out: string[], title: string, c: RunSection): void {
  {
    const f = c.figures;
    out.push('', title);
    out.push(
      `  Agents: ${f.created}/${f.requested} created (${f.createFailures} POST failures); ` +
        `${f.succeeded} Succeeded, ${f.failed} Failed, ${f.lost} deleted before terminal, ${f.unfinished} unfinished` +
        (c.timedOut ? ' (TIMED OUT)' : ''),
    );
    const verdicts = Object.entries(f.verdicts)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    out.push(`  Job verdicts seen first: ${verdicts || 'none'}`);
    out.push(TABLE_HEAD);
    out.push(summaryRow('create → Job', f.createToJob));
    out.push(summaryRow('Job finished → Agent terminal', f.finishedToTerminal));
    out.push(summaryRow('create → Agent terminal', f.createToTerminal));
    out.push(summaryRow('Job seen → Job finished (pod run)', f.jobRun));
    out.push(summaryRow('Agent POST (creating client)', f.post));
    out.push(
      `  wall time: ${fmtS(f.createWallMs)} to create all, ${fmtS(f.wallMs)} to the last terminal Agent`,
    );
    out.push(
      `  throughput: ${fmtRate(f.agentsPerSecond)} Agents/s to terminal, ${fmtRate(f.jobsPerSecond)} Jobs created/s; ` +
        `peak Jobs in flight ${f.peakJobsInFlight}`,
    );
    out.push(
      `  run-pod processes on the host (all users, 1/s): peak ${c.pods.peakTotal} at once ` +
        `(init ${c.pods.peakInit}, supervisor ${c.pods.peakSupervisor}; ${c.pods.samples} samples)`,
    );
    const res = c.resources;
    const cpuShare =
      res.cpuSeconds !== undefined && Number.isFinite(f.wallMs) && f.wallMs > 0
        ? ` (${((res.cpuSeconds * 100000) / f.wallMs).toFixed(0)}% of one core over the wall time)`
        : '';
    out.push(
      `  controller RSS: idle ${fmtMiB(res.startRssBytes)}, peak ${fmtMiB(res.peakRssBytes)}, final ${fmtMiB(res.finalRssBytes)} ` +
        `(${res.samples} samples, 1/s)`,
    );
    out.push(
      `  controller CPU: ${res.cpuSeconds === undefined ? '-' : `${res.cpuSeconds.toFixed(1)} s`} during the run${cpuShare}, ` +
        `${res.cpuSecondsTotal === undefined ? '-' : `${res.cpuSecondsTotal.toFixed(1)} s`} since start`,
    );
    const last = res.last;
    if (last) {
      const queueMean =
        last.runQueueSum !== undefined && last.runQueueCount !== undefined && last.runQueueCount > 0
          ? `${((last.runQueueSum / last.runQueueCount) * 1000).toFixed(0)} ms mean over ${last.runQueueCount}`
          : '-';
      out.push(
        `  controller counters: ${last.jobsCreated ?? '-'} Jobs created, ${last.statusPatches ?? '-'} status patches, ` +
          `${last.reconciles ?? '-'} reconciles; run queue (creationTimestamp → Job, 1 s resolution) ${queueMean}`,
      );
      const mean = (sc: SumCount | undefined): string =>
        sc === undefined || sc.count === 0 ? '-' : `${fmtMs((sc.sum / sc.count) * 1000)} ms × ${sc.count}`;
      const verbs = Object.entries(last.apiByVerb)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([verb, sc]) => `${verb} ${mean(sc)}`)
        .join(', ');
      out.push(`  controller means: reconcile ${mean(last.reconcile)}; API calls ${verbs || '-'}`);
      const evidence = Object.entries(last.evidenceBySource)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([source, n]) => `${source} ${n}`)
        .join(', ');
      if (evidence !== '') out.push(`  finished runs' pod and log read: ${evidence}`);
    }
    out.push(
      `  controller log: ${c.logWarnings} warnings, ${c.logErrors} errors (${c.logFile}); ` +
        `bench watches: ${c.watchReconnects} reconnects, ${c.watchRelists} lists`,
    );
    for (const e of c.firstErrors) out.push(`    ${e}`);
    if (c.cleanupMs !== undefined) out.push(`  namespace deleted in ${fmtS(c.cleanupMs)}`);
  }
}

/** Renders the report as the plain-text block the benchmark prints. Pure. */
export function formatReport(r: BenchReport): string {
  const out: string[] = [];
  const h = r.header;
  out.push(
    `agent-controller benchmark: ${h.agents} Agents, client concurrency ${h.concurrency}, controller on ${h.runtime}`,
  );
  out.push(
    `pods: ${h.pods ?? 'real'}; machine: ${h.cpus} CPUs, load average at start ${h.loadAverage.map((x) => x.toFixed(2)).join(' ')}, ` +
      `node ${h.node}; started ${h.startedAt}`,
  );
  if (h.note) out.push(`note: ${h.note}`);
  if (r.interrupted) out.push('INTERRUPTED: the figures below cover only what happened before Ctrl-C');

  const c = r.controller;
  if (c) runSection(out, `Controller run (namespace ${c.namespace})`, c);
  const b = r.baseline;
  if (b)
    runSection(out, `Informer baseline run: @kubernetes/client-node informers (namespace ${b.namespace})`, b);

  const raw = r.raw;
  if (raw) {
    const f = raw.figures;
    out.push('', `Raw bound: minimal client, no controller (namespace ${raw.namespace})`);
    out.push(
      `  per item: POST Agent, POST ServiceAccount, NetworkPolicy, input ConfigMap and Job (suspend: true), PATCH status Running, PATCH status Succeeded; ` +
        `${f.items} items, ${f.failures} failed`,
    );
    for (const e of f.errors) out.push(`    ${e}`);
    out.push(TABLE_HEAD);
    out.push(summaryRow('item (7 calls)', f.item));
    out.push(summaryRow('POST Agent', f.agentPost));
    out.push(summaryRow('POST run objects + Job', f.jobPost));
    out.push(summaryRow('PATCH status (terminal)', f.terminalPatch));
    out.push(
      `  wall time ${fmtS(f.wallMs)}; throughput ${fmtRate(f.itemsPerSecond)} items/s, ${fmtRate(f.jobsPerSecond)} Job POSTs/s`,
    );
    if (raw.cleanupMs !== undefined) out.push(`  namespace deleted in ${fmtS(raw.cleanupMs)}`);
  }

  if (c && raw) {
    const cf = c.figures;
    const rf = raw.figures;
    const bf = b?.figures;
    const perAgent = (
      x: RunSection | undefined,
      pick: (l: NonNullable<RunSection['resources']['last']>) => number | undefined,
    ) => {
      const last = x?.resources.last;
      const v = last === undefined ? undefined : pick(last);
      return v === undefined || x === undefined || x.figures.created === 0
        ? undefined
        : v / x.figures.created;
    };
    const row = (
      label: string,
      a: number | undefined,
      raw0: number | undefined,
      base: number | undefined,
      fmt: (x: number | undefined) => string,
    ): string =>
      `  ${pad(label, 40)}${lpad(fmt(a), 12)}${lpad(fmt(raw0), 12)}${lpad(fmt(base), 12)}${lpad(fmtRatio(a, raw0), 10)}${lpad(fmtRatio(a, base), 10)}`;
    out.push('', 'Side by side (ratios: ours ÷ raw bound, ours ÷ informer baseline)');
    out.push(
      `  ${pad('', 40)}${lpad('ours', 12)}${lpad('raw', 12)}${lpad('baseline', 12)}${lpad('÷ raw', 10)}${lpad('÷ base', 10)}`,
    );
    out.push(
      row(
        'create→Job p50 (ms)  vs  POSTs to Job',
        cf.createToJob.p50,
        rf.jobPost.p50,
        bf?.createToJob.p50,
        fmtMs,
      ),
    );
    out.push(
      row(
        'create→Job p99 (ms)  vs  POSTs to Job',
        cf.createToJob.p99,
        rf.jobPost.p99,
        bf?.createToJob.p99,
        fmtMs,
      ),
    );
    out.push(
      row(
        'finished→terminal p50 (ms)  vs  PATCH',
        cf.finishedToTerminal.p50,
        rf.terminalPatch.p50,
        bf?.finishedToTerminal.p50,
        fmtMs,
      ),
    );
    out.push(
      row(
        'finished→terminal p99 (ms)  vs  PATCH',
        cf.finishedToTerminal.p99,
        rf.terminalPatch.p99,
        bf?.finishedToTerminal.p99,
        fmtMs,
      ),
    );
    out.push(
      row(
        'Agents/s to terminal  vs  items/s',
        cf.agentsPerSecond,
        rf.itemsPerSecond,
        bf?.agentsPerSecond,
        fmtRate,
      ),
    );
    out.push(
      row('Jobs created/s  vs  Job POSTs/s', cf.jobsPerSecond, rf.jobsPerSecond, bf?.jobsPerSecond, fmtRate),
    );
    out.push(
      row(
        'reconciles per Agent',
        perAgent(c, (l) => l.reconciles),
        undefined,
        undefined,
        fmtRate,
      ),
    );
    out.push(
      row(
        'status patches per Agent',
        perAgent(c, (l) => l.statusPatches),
        2,
        perAgent(b, (l) => l.statusPatches),
        fmtRate,
      ),
    );
    out.push(
      row(
        'peak RSS (MiB)',
        mibOf(c.resources.peakRssBytes),
        undefined,
        mibOf(b?.resources.peakRssBytes),
        fmtRate,
      ),
    );
    out.push(
      row('CPU seconds during the run', c.resources.cpuSeconds, undefined, b?.resources.cpuSeconds, fmtRate),
    );
  }
  out.push('', `total bench time ${fmtS(r.totalMs)}`);
  return `${out.join('\n')}\n`;
}
