const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\S+)?\s*$/;

function parseValue(text: string): number | undefined {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  const x = Number(text);
  return text === 'NaN' || Number.isFinite(x) ? x : undefined;
}

/**
 * The sum of every sample named exactly `name` in a Prometheus text exposition (all label sets), or undefined when
 * there is none. Comment lines and malformed lines are skipped; a metric whose name merely starts with `name`
 * (e.g. `name_bucket`) is not counted.
 */
export function sumSamples(exposition: string, name: string): number | undefined {
  let total: number | undefined;
  for (const line of exposition.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE_LINE.exec(line);
    if (!m || m[1] !== name) continue;
    const value = parseValue(m[3] ?? '');
    if (value === undefined) continue;
    total = (total ?? 0) + value;
  }
  return total;
}

/**
 * Sums the samples named exactly `name` per value of label `label` (series without that label are skipped).
 * Label values are read from the `{…}` block with Prometheus escaping (\\, \", \n) undone.
 */
export function sumByLabel(exposition: string, name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const line of exposition.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE_LINE.exec(line);
    if (!m || m[1] !== name || m[2] === undefined) continue;
    const value = parseValue(m[3] ?? '');
    if (value === undefined) continue;
    for (const lm of m[2].matchAll(labelRe)) {
      if (lm[1] !== label) continue;
      const key = (lm[2] ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      out[key] = (out[key] ?? 0) + value;
    }
  }
  return out;
}

/** Sum and count of a histogram or summary. */
export interface SumCount {
  readonly sum: number;
  readonly count: number;
}

/** The controller process figures scraped from one `/metrics` response; a missing series reads as undefined. */
export interface ControllerSample {
  readonly rssBytes: number | undefined;
  readonly cpuSeconds: number | undefined;
  readonly heapBytes: number | undefined;
  readonly jobsCreated: number | undefined;
  readonly statusPatches: number | undefined;
  readonly reconciles: number | undefined;
  readonly runQueueSum: number | undefined;
  readonly runQueueCount: number | undefined;
  readonly isLeader: number | undefined;
  readonly reconcile: SumCount | undefined;
  /** Non-watch API requests of the controller by verb (seconds). */
  readonly apiByVerb: Readonly<Record<string, SumCount>>;
  /** Realtime prompts: request to first line streamed back, as the controller measured it (seconds). */
  readonly promptFirstLine: SumCount | undefined;
  /** How finished runs' pod and log were read (`controller_run_evidence_reads_total` by source). */
  readonly evidenceBySource: Readonly<Record<string, number>>;
}

function sumCount(exposition: string, histogram: string): SumCount | undefined {
  const sum = sumSamples(exposition, `${histogram}_sum`);
  const count = sumSamples(exposition, `${histogram}_count`);
  return sum === undefined || count === undefined ? undefined : { sum, count };
}

function sumCountByLabel(exposition: string, histogram: string, label: string): Record<string, SumCount> {
  const sums = sumByLabel(exposition, `${histogram}_sum`, label);
  const counts = sumByLabel(exposition, `${histogram}_count`, label);
  const out: Record<string, SumCount> = {};
  for (const [k, sum] of Object.entries(sums)) out[k] = { sum, count: counts[k] ?? 0 };
  return out;
}

/** Reads the figures the benchmark tracks from a `/metrics` body. */
export function controllerSample(exposition: string): ControllerSample {
  const s = (name: string) => sumSamples(exposition, name);
  return {
    rssBytes: s('process_resident_memory_bytes'),
    cpuSeconds: s('process_cpu_seconds_total'),
    heapBytes: s('nodejs_heap_size_used_bytes'),
    jobsCreated: s('controller_jobs_created_total'),
    statusPatches: s('controller_status_patches_total'),
    reconciles: s('controller_reconciles_total'),
    runQueueSum: s('controller_run_queue_seconds_sum'),
    runQueueCount: s('controller_run_queue_seconds_count'),
    isLeader: s('controller_is_leader'),
    reconcile: sumCount(exposition, 'controller_reconcile_duration_seconds'),
    apiByVerb: sumCountByLabel(exposition, 'controller_apiserver_request_duration_seconds', 'verb'),
    promptFirstLine: sumCount(exposition, 'controller_prompt_first_line_seconds'),
    evidenceBySource: sumByLabel(exposition, 'controller_run_evidence_reads_total', 'source'),
  };
}

/** Peak and last values of the controller's samples, with the CPU spent between the first and last sample. */
export interface ResourceFigures {
  readonly samples: number;
  readonly peakRssBytes: number | undefined;
  readonly finalRssBytes: number | undefined;
  readonly startRssBytes: number | undefined;
  readonly cpuSeconds: number | undefined;
  readonly cpuSecondsTotal: number | undefined;
  readonly last: ControllerSample | undefined;
}

/** Folds a series of samples (oldest first) into peak/final figures; CPU is last minus first. */
export function resourceFigures(samples: readonly ControllerSample[]): ResourceFigures {
  const rss = samples.map((s) => s.rssBytes).filter((x): x is number => x !== undefined);
  const cpu = samples.map((s) => s.cpuSeconds).filter((x): x is number => x !== undefined);
  const firstCpu = cpu[0];
  const lastCpu = cpu.at(-1);
  return {
    samples: samples.length,
    peakRssBytes: rss.length === 0 ? undefined : Math.max(...rss),
    finalRssBytes: rss.at(-1),
    startRssBytes: rss[0],
    cpuSeconds: firstCpu !== undefined && lastCpu !== undefined ? lastCpu - firstCpu : undefined,
    cpuSecondsTotal: lastCpu,
    last: samples.at(-1),
  };
}
