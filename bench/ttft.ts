// The pure part of `npm run bench -- --scenario ttft` (issue 25 §5): turns what the scenario collected about each run
// (when its Agent or Pod POST returned, its pods' logs with timestamps, the model fake's requests) into marks on one
// clock, then into per-interval order statistics and the printed report. The impure part is ttft-scenario.ts.
import { type Summary, summarize } from './stats.ts';

/** The CLIs timed: the real Claude Code against the scripted model, and the mock CLI (test/mock-agent). */
export const TTFT_CLIS = ['claude', 'mock'] as const;
export type TtftCli = (typeof TTFT_CLIS)[number];
/** controller: an Agent run; raw: a bare Pod of the same agent image on the same node, no controller, no init. */
export type TtftPath = 'controller' | 'raw';
/** idle: one run at a time (each alone) on an idle control plane; burst: each run of N created at once. */
export type TtftPhase = 'idle' | 'burst';

/** Epoch milliseconds (one host clock) of what was seen of one run; a mark not seen is absent. */
export interface RunMarks {
  /** The Agent's (raw: the Pod's) POST returned to the benchmark. */
  readonly created: number;
  /** The pod's first process wrote its first line: the init container (raw: the container's `sh`). */
  readonly podStarted?: number;
  /** The supervisor spawned the CLI (its `agent/started` lifecycle line); raw: the `sh` line, just before exec. */
  readonly cliSpawned?: number;
  /** The CLI's first stream-JSON line on stdout (Claude Code's `system/init`, the mock's first event). */
  readonly firstLine?: number;
  /** The first model request carrying this run's marker at the fake Messages API (the real CLI only). */
  readonly firstRequest?: number;
}

export interface TimedRun {
  readonly cli: TtftCli;
  readonly path: TtftPath;
  readonly phase: TtftPhase;
  readonly name: string;
  readonly marks: RunMarks;
}

type Mark = keyof RunMarks;

/** The intervals reported, as [label, from, to]. "first request" is the time to first token as issue 25 defines it. */
export const TTFT_INTERVALS: readonly (readonly [string, Mark, Mark])[] = [
  ['created → pod process', 'created', 'podStarted'],
  ['created → CLI spawned', 'created', 'cliSpawned'],
  ['created → CLI first line', 'created', 'firstLine'],
  ['created → first request', 'created', 'firstRequest'],
  ['CLI spawned → first request', 'cliSpawned', 'firstRequest'],
];

/** One line of a pod log read with `timestamps=true`. */
export interface TimedLine {
  readonly at: number;
  readonly text: string;
}

/**
 * Parses a log read with `timestamps=true` (`<RFC 3339, up to nanoseconds> <line>`); lines without a timestamp are
 * skipped. Fractions beyond milliseconds are cut (the host clock the other marks use has milliseconds).
 */
export function parseTimedLog(text: string): TimedLine[] {
  const out: TimedLine[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d) (.*)$/s.exec(line);
    if (!m) continue;
    const fraction = (m[2] ?? '').slice(0, 3).padEnd(3, '0');
    const at = Date.parse(`${m[1]}.${fraction}${m[3]}`);
    if (Number.isFinite(at)) out.push({ at, text: m[4] ?? '' });
  }
  return out;
}

const jsonObject = (text: string): Record<string, unknown> | undefined => {
  if (!text.startsWith('{')) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
};

/** A stream-JSON event of a CLI: a JSON object with a string `type` (the supervisor's own lines have `kind`). */
export const isCliEvent = (text: string): boolean => typeof jsonObject(text)?.type === 'string';

const isAgentStarted = (text: string): boolean => {
  const o = jsonObject(text);
  return o?.kind === 'lifecycle' && o.phase === 'agent' && o.status === 'started';
};

/**
 * The pod marks of an Agent run from its init and agent container logs: the init container's first line, the
 * supervisor's `agent/started`, and the first CLI event after it.
 */
export function agentRunMarks(
  initLog: readonly TimedLine[],
  agentLog: readonly TimedLine[],
): Pick<RunMarks, 'podStarted' | 'cliSpawned' | 'firstLine'> {
  const started = agentLog.findIndex((l) => isAgentStarted(l.text));
  const first = started < 0 ? undefined : agentLog.slice(started + 1).find((l) => isCliEvent(l.text));
  return {
    ...(initLog[0] !== undefined ? { podStarted: initLog[0].at } : {}),
    ...(started >= 0 ? { cliSpawned: agentLog[started]?.at ?? Number.NaN } : {}),
    ...(first !== undefined ? { firstLine: first.at } : {}),
  };
}

/**
 * The pod marks of a raw run: its container is `sh -c 'echo <line>; exec <cli> …'`, so its first line is the
 * process start (and, a fork later, the CLI's exec); the first CLI event follows.
 */
export function rawRunMarks(
  log: readonly TimedLine[],
): Pick<RunMarks, 'podStarted' | 'cliSpawned' | 'firstLine'> {
  const first = log[0];
  const event = log.find((l) => isCliEvent(l.text));
  return {
    ...(first !== undefined ? { podStarted: first.at, cliSpawned: first.at } : {}),
    ...(event !== undefined ? { firstLine: event.at } : {}),
  };
}

/** The subset of a fake's request record this needs (test/support/model-api ModelRequest). */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
  readonly at: number;
}

/** `[run <marker>]`: how a run's prompt carries its marker (closed by `]`, so `…-1` never matches `…-10`). */
export const markerText = (marker: string): string => `[run ${marker}]`;

/**
 * The arrival time of the first model request (`POST /v1/messages`) whose body carries each marker. One pass over
 * the record; markers never seen are absent from the map.
 */
export function firstRequests(
  requests: readonly SeenRequest[],
  markers: readonly string[],
): Map<string, number> {
  const out = new Map<string, number>();
  const wanted = new Map(markers.map((m) => [markerText(m), m]));
  for (const r of requests) {
    if (r.method !== 'POST' || r.path !== '/v1/messages') continue;
    const body = JSON.stringify(r.body) ?? '';
    for (const m of body.matchAll(/\[run [^\]\\"]+\]/g)) {
      const marker = wanted.get(m[0]);
      if (marker === undefined) continue;
      const seen = out.get(marker);
      if (seen === undefined || r.at < seen) out.set(marker, r.at);
    }
  }
  return out;
}

/** One row of the report: an interval over one group of runs. */
export interface TtftRow {
  readonly cli: TtftCli;
  readonly path: TtftPath;
  readonly phase: TtftPhase;
  readonly interval: string;
  /** Runs in the group. */
  readonly runs: number;
  readonly summary: Summary;
}

const GROUP_ORDER: readonly (readonly [TtftCli, TtftPath])[] = [
  ['claude', 'controller'],
  ['claude', 'raw'],
  ['mock', 'controller'],
  ['mock', 'raw'],
];

/**
 * Per group (CLI × path × phase, in report order) and interval: the order statistics of `to − from` over the runs
 * where both marks were seen. Intervals seen in no run of a group are left out.
 */
export function ttftRows(runs: readonly TimedRun[]): TtftRow[] {
  const rows: TtftRow[] = [];
  for (const phase of ['idle', 'burst'] as const) {
    for (const [cli, path] of GROUP_ORDER) {
      const group = runs.filter((r) => r.cli === cli && r.path === path && r.phase === phase);
      if (group.length === 0) continue;
      for (const [interval, from, to] of TTFT_INTERVALS) {
        const values: number[] = [];
        for (const { marks } of group) {
          const a = marks[from];
          const b = marks[to];
          if (a !== undefined && b !== undefined) values.push(b - a);
        }
        if (values.length > 0)
          rows.push({ cli, path, phase, interval, runs: group.length, summary: summarize(values) });
      }
    }
  }
  return rows;
}

/** Everything the scenario measured, as printed and written with `--json`. */
export interface TtftReport {
  /** Runs of each kind timed one at a time on the idle control plane. */
  readonly idleRuns: number;
  readonly burst: number;
  readonly claudeVersion: string;
  readonly runs: readonly TimedRun[];
  readonly rows: readonly TtftRow[];
  /** Wall time of each burst: first POST sent → last run's last mark, ms. */
  readonly burstWallMs: Readonly<Partial<Record<`${TtftCli}-${TtftPath}`, number>>>;
  /** Peak resident memory of all `claude` processes at once, and most alive at once (sampled from /proc). */
  readonly claudePeak: { readonly rssMiB: number; readonly processes: number } | undefined;
  readonly notes: readonly string[];
}

const ms = (x: number): string =>
  Number.isNaN(x) ? '—' : x >= 100 ? String(Math.round(x)) : x.toFixed(Math.abs(x) >= 10 ? 1 : 2);

/** The figure of `interval` for a group, if measured. */
function figure(
  rows: readonly TtftRow[],
  cli: TtftCli,
  path: TtftPath,
  phase: TtftPhase,
  interval: string,
): Summary | undefined {
  return rows.find((r) => r.cli === cli && r.path === path && r.phase === phase && r.interval === interval)
    ?.summary;
}

/** The report as printed. */
export function formatTtftReport(r: TtftReport): string {
  const out: string[] = [];
  out.push(
    `Time to first token: the real Claude Code ${r.claudeVersion} against the scripted Messages API, the mock CLI, and bare pods`,
  );
  out.push(
    `  one run at a time on an idle control plane (${r.idleRuns} of each), then each run of a burst of ${r.burst} created at once`,
  );
  out.push('');
  const head = `  ${'cli'.padEnd(7)}${'path'.padEnd(11)}${'phase'.padEnd(7)}${'interval (ms)'.padEnd(30)}${'n'.padStart(5)}${'min'.padStart(8)}${'p50'.padStart(8)}${'p99'.padStart(8)}${'max'.padStart(8)}`;
  out.push(head);
  for (const row of r.rows) {
    const s = row.summary;
    const n = s.count === row.runs ? String(s.count) : `${s.count}/${row.runs}`;
    out.push(
      `  ${row.cli.padEnd(7)}${row.path.padEnd(11)}${row.phase.padEnd(7)}${row.interval.padEnd(30)}${n.padStart(5)}${ms(s.min).padStart(8)}${ms(s.p50).padStart(8)}${ms(s.p99).padStart(8)}${ms(s.max).padStart(8)}`,
    );
  }
  const side: string[] = [];
  const pairs: readonly (readonly [string, TtftCli, TtftPath, string, TtftCli, TtftPath, string])[] = [
    [
      'claude: Agent → first request  vs  bare pod → first request',
      'claude',
      'controller',
      'created → first request',
      'claude',
      'raw',
      'created → first request',
    ],
    [
      'mock: Agent → first line  vs  bare pod → first line',
      'mock',
      'controller',
      'created → CLI first line',
      'mock',
      'raw',
      'created → CLI first line',
    ],
    [
      'Agent → CLI spawned  vs  bare pod → process',
      'claude',
      'controller',
      'created → CLI spawned',
      'claude',
      'raw',
      'created → pod process',
    ],
    [
      'claude first request  vs  mock first line (Agent runs)',
      'claude',
      'controller',
      'created → first request',
      'mock',
      'controller',
      'created → CLI first line',
    ],
  ];
  for (const phase of ['idle', 'burst'] as const) {
    for (const [label, c1, p1, i1, c2, p2, i2] of pairs) {
      const a = figure(r.rows, c1, p1, phase, i1);
      const b = figure(r.rows, c2, p2, phase, i2);
      if (a === undefined || b === undefined) continue;
      side.push(
        `  ${phase.padEnd(6)}${label.padEnd(64)}${`${ms(a.p50)} / ${ms(a.p99)}`.padStart(16)}  vs ${`${ms(b.p50)} / ${ms(b.p99)}`.padStart(16)}  ×${(a.p50 / b.p50).toFixed(2)}`,
      );
    }
  }
  if (side.length > 0) out.push('', 'Side by side (p50 / p99, ms; ratio of p50)', ...side);
  const walls = Object.entries(r.burstWallMs);
  if (walls.length > 0) {
    out.push('');
    out.push(
      `burst wall time (first POST → last mark): ${walls.map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(', ')}`,
    );
  }
  if (r.claudePeak !== undefined)
    out.push(
      `claude processes on the host (1/s): peak ${r.claudePeak.processes} at once, ${r.claudePeak.rssMiB.toFixed(0)} MiB resident together`,
    );
  for (const note of r.notes) out.push(`note: ${note}`);
  return `${out.join('\n')}\n`;
}
