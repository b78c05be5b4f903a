// The pure part of `npm run bench -- --scenario gateway` (bench/gateway-scenario.ts): reading a process's RSS and CPU
// time from /proc text, folding samples into figures per phase, counting the events of a server-sent event stream,
// and the printed report.
import { type Summary, summarize } from './stats.ts';

const MiB = 1024 * 1024;

/** The answer the fake gives every call (bench/gateway-fake.ts), and its usage. */
export const BENCH_ANSWER = 'Hello from the fake.';
export const BENCH_USAGE = { input: 12, output: 6 } as const;

/** CPU time (user + system, in clock ticks) from the text of `/proc/<pid>/stat`; undefined when unreadable. */
export function cpuTicksOfStat(text: string): number | undefined {
  // The command name (field 2) is in parentheses and may hold spaces and parentheses: fields count from the last `)`.
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  // fields[0] is field 3 (state); utime is field 14, stime field 15.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? utime + stime : undefined;
}

/** Resident set size in bytes from the text of `/proc/<pid>/status` (`VmRSS: <n> kB`); undefined when absent. */
export function rssOfStatus(text: string): number | undefined {
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(text);
  return m ? Number(m[1]) * 1024 : undefined;
}

/** One reading of the gateway process. */
export interface ProcSample {
  /** ms since the epoch */
  readonly at: number;
  readonly rssBytes: number;
  readonly cpuSeconds: number;
}

/** The gateway process over one phase of the load. */
export interface PhaseUsage {
  readonly samples: number;
  readonly peakRssMiB: number;
  /** CPU seconds from the last sample at or before the start to the first at or after the end. */
  readonly cpuSeconds: number;
  /** cpuSeconds over the phase's wall time: 1 is one core busy the whole time. */
  readonly cores: number;
}

/** Folds the samples of [from, to] (ms since the epoch) into a phase's figures; undefined without two samples. */
export function phaseUsage(samples: readonly ProcSample[], from: number, to: number): PhaseUsage | undefined {
  const before = samples.filter((s) => s.at <= from).at(-1) ?? samples.find((s) => s.at >= from);
  const after = samples.find((s) => s.at >= to) ?? samples.at(-1);
  if (before === undefined || after === undefined || after.at <= before.at) return undefined;
  const within = samples.filter((s) => s.at >= before.at && s.at <= after.at);
  const cpuSeconds = after.cpuSeconds - before.cpuSeconds;
  return {
    samples: within.length,
    peakRssMiB: Math.max(...within.map((s) => s.rssBytes)) / MiB,
    cpuSeconds,
    cores: cpuSeconds / ((after.at - before.at) / 1000),
  };
}

/** Events in server-sent event text: blocks separated by a blank line that carry a `data:` line. */
export function countSseEvents(text: string): number {
  return text.split(/\r?\n\r?\n/).filter((block) => /^data:/m.test(block)).length;
}

/** Per-index difference `b[i] - a[i]` of two samples taken in pairs (same length, same order). */
export function pairedDifference(a: readonly number[], b: readonly number[]): Summary {
  const n = Math.min(a.length, b.length);
  return summarize(Array.from({ length: n }, (_, i) => (b[i] ?? Number.NaN) - (a[i] ?? Number.NaN)));
}

/** One way of calling: straight to the fake, or through the gateway. */
export type Path = 'direct' | 'gateway';

/** Sequential calls of one kind, each way, taken in pairs. */
export interface SequentialFigures {
  readonly direct: Summary;
  readonly gateway: Summary;
  /** gateway − direct of each pair */
  readonly added: Summary;
}

/** One burst of streams opened at once. */
export interface BurstFigures {
  readonly path: Path;
  readonly round: number;
  readonly streams: number;
  readonly completed: number;
  /** first request sent → last stream ended */
  readonly wallMs: number;
  readonly streamsPerSecond: number;
  readonly eventsPerSecond: number;
  readonly eventsPerStream: number;
  readonly ttft: Summary;
  readonly total: Summary;
}

export interface GatewayReport {
  readonly runtime: string;
  readonly calls: number;
  /** Calls through the gateway in the sequential phase, warm-up included (the CPU per call divides by it). */
  readonly sequentialGatewayCalls: number;
  readonly streamsPerBurst: number;
  readonly eventsPerStream: number;
  readonly whole: SequentialFigures;
  readonly streamed: SequentialFigures;
  readonly ttft: SequentialFigures;
  readonly bursts: readonly BurstFigures[];
  readonly idleRssMiB: number | undefined;
  readonly sequentialUsage: PhaseUsage | undefined;
  readonly burstUsage: PhaseUsage | undefined;
  readonly finalRssMiB: number | undefined;
  /** Calls made through the gateway, what its gateway_requests_total{code="200"} counted, what its annotation holds. */
  readonly gatewayCalls: number;
  readonly meteredRequests: number | undefined;
  readonly annotatedCalls: number | undefined;
  readonly failures: number;
  readonly firstFailures: readonly string[];
}

const fmt = (x: number): string =>
  !Number.isFinite(x)
    ? '-'
    : Math.abs(x) >= 100
      ? x.toFixed(0)
      : Math.abs(x) >= 10
        ? x.toFixed(1)
        : x.toFixed(2);
const pad = (s: string, n: number): string => s.padStart(n);

function latencyRows(title: string, f: SequentialFigures): string[] {
  const row = (name: string, s: Summary) =>
    `  ${`${title} ${name}`.padEnd(36)}${pad(String(s.count), 6)}${[s.p50, s.p90, s.p99, s.max].map((x) => pad(fmt(x), 9)).join('')}`;
  return [row('direct', f.direct), row('gateway', f.gateway), row('added (pairs)', f.added)];
}

function usageLine(name: string, u: PhaseUsage | undefined, calls: number): string {
  if (u === undefined) return `  ${name}: no samples`;
  const perCall = calls > 0 ? ` (${fmt((u.cpuSeconds * 1000) / calls)} ms CPU per call)` : '';
  return `  ${name}: peak RSS ${fmt(u.peakRssMiB)} MiB, CPU ${fmt(u.cpuSeconds)} s = ${fmt(u.cores)} cores${perCall}; ${u.samples} samples`;
}

/** The printed report. Pure. */
export function formatGatewayReport(r: GatewayReport): string {
  const lines = [
    `Model gateway (${r.runtime}) vs straight to the Anthropic Messages fake: ${r.calls} whole and ${r.calls} streamed calls each way, in pairs; ${r.eventsPerStream} events per stream`,
    `  latency (ms)                            count      p50      p90      p99      max`,
    ...latencyRows('whole', r.whole),
    ...latencyRows('streamed, to the end', r.streamed),
    ...latencyRows('streamed, first token', r.ttft),
    '',
    `Bursts of ${r.streamsPerBurst} streams at once`,
    `  path     round  done   wall ms  streams/s  events/s  TTFT p50  TTFT p99   end p50   end p99`,
    ...r.bursts.map(
      (b) =>
        `  ${b.path.padEnd(8)}${pad(String(b.round), 6)}${pad(`${b.completed}/${b.streams}`, 10)}${pad(fmt(b.wallMs), 10)}${pad(fmt(b.streamsPerSecond), 11)}${pad(fmt(b.eventsPerSecond), 10)}${[b.ttft.p50, b.ttft.p99, b.total.p50, b.total.p99].map((x) => pad(fmt(x), 10)).join('')}`,
    ),
    '',
    'Gateway process (/proc of its pid, every 200 ms)',
    `  idle RSS ${r.idleRssMiB === undefined ? '-' : fmt(r.idleRssMiB)} MiB (ready, before any call); after the load ${r.finalRssMiB === undefined ? '-' : fmt(r.finalRssMiB)} MiB`,
    usageLine('sequential calls', r.sequentialUsage, r.sequentialGatewayCalls),
    usageLine(
      'bursts',
      r.burstUsage,
      r.bursts.filter((b) => b.path === 'gateway').reduce((n, b) => n + b.streams, 0),
    ),
    `  metered: ${r.gatewayCalls} calls through the gateway; gateway_requests_total{code="200"} ${r.meteredRequests ?? '-'}, usage annotation calls ${r.annotatedCalls ?? '-'}`,
    `  failures: ${r.failures}${r.firstFailures.length > 0 ? ` (first: ${r.firstFailures.join('; ')})` : ''}`,
    '',
  ];
  return `${lines.join('\n')}\n`;
}
