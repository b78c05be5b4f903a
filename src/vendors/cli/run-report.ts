// The run report (issue 10 §2): what the supervisor learned from the vendor CLI's output (its final answer, token
// usage, the CLI's own cost), handed to the controller in the agent container's termination message (Kubernetes
// keeps at most 4096 bytes of it in the pod status, and it survives log rotation). The same extraction runs in the
// controller over the log tail when no report is there. Agent output is untrusted: every number is clamped, every
// field optional, and a report that does not parse is ignored. Pure.
import * as v from 'valibot';

/** The most bytes of a termination message Kubernetes keeps. */
export const TERMINATION_MESSAGE_MAX_BYTES = 4096;
/** The largest token count believed (anything above is agent nonsense, dropped). */
export const MAX_TOKENS = 1e12;
/** The largest cost in USD believed for one run. */
export const MAX_COST_USD = 1e6;

/**
 * Tokens of one run, by kind; `total` is the sum when the CLI gives none. `input` is the uncached input (vendors
 * that count cached tokens inside their input have them taken out), so the four kinds never overlap.
 */
export interface TokenUsage {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly total: number;
}

/** What a run produced, as far as its CLI said. */
export interface RunResult {
  /** The CLI's final answer text. */
  readonly result?: string | undefined;
  /** True when `result` was cut to fit (the full text is in the log). */
  readonly resultTruncated?: boolean | undefined;
  readonly usage?: TokenUsage | undefined;
  /** The CLI's own cost figure (Claude's `total_cost_usd`), when it reports one. */
  readonly costUsd?: number | undefined;
  /** The model the CLI says it used. */
  readonly model?: string | undefined;
  /** The CLI's own error message when its last event reported a failure (at most 512 characters). */
  readonly error?: string | undefined;
}

/** The longest error message a report carries. */
export const MAX_REPORT_ERROR_CHARS = 512;
const errorText = (s: string): string => Array.from(s).slice(0, MAX_REPORT_ERROR_CHARS).join('');

/** A count we believe: a finite, non-negative integer up to {@link MAX_TOKENS}; else undefined. */
export function tokenCount(u: unknown): number | undefined {
  if (typeof u !== 'number' || !Number.isFinite(u) || u < 0 || u > MAX_TOKENS) return undefined;
  return Math.floor(u);
}

/** A cost we believe: finite, non-negative, up to {@link MAX_COST_USD}; else undefined. */
export function costAmount(u: unknown): number | undefined {
  if (typeof u !== 'number' || !Number.isFinite(u) || u < 0 || u > MAX_COST_USD) return undefined;
  return u;
}

/** Usage from counts of unknown quality: missing or unbelievable counts are 0; total = given or the sum. */
export function usageOf(counts: {
  readonly input?: unknown;
  readonly output?: unknown;
  readonly cacheRead?: unknown;
  readonly cacheWrite?: unknown;
  readonly total?: unknown;
}): TokenUsage {
  const input = tokenCount(counts.input) ?? 0;
  const output = tokenCount(counts.output) ?? 0;
  const cacheRead = tokenCount(counts.cacheRead) ?? 0;
  const cacheWrite = tokenCount(counts.cacheWrite) ?? 0;
  const sum = Math.min(MAX_TOKENS, input + output + cacheRead + cacheWrite);
  return { input, output, cacheRead, cacheWrite, total: tokenCount(counts.total) ?? sum };
}

const ReportSchema = v.looseObject({
  v: v.literal(1),
  result: v.optional(v.unknown()),
  resultTruncated: v.optional(v.unknown()),
  usage: v.optional(v.unknown()),
  costUsd: v.optional(v.unknown()),
  model: v.optional(v.unknown()),
  error: v.optional(v.unknown()),
});
const UsageWire = v.looseObject({
  input: v.optional(v.unknown()),
  output: v.optional(v.unknown()),
  cacheRead: v.optional(v.unknown()),
  cacheWrite: v.optional(v.unknown()),
  total: v.optional(v.unknown()),
});

/** Reads a termination message as a run report; anything else (an init's line of text, garbage) is undefined. */
export function parseRunReport(text: string | undefined): RunResult | undefined {
  if (text === undefined || !text.startsWith('{')) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = v.safeParse(ReportSchema, json);
  if (!parsed.success) return undefined;
  const r = parsed.output;
  const usage = v.safeParse(UsageWire, r.usage);
  return {
    ...(typeof r.result === 'string' ? { result: r.result } : {}),
    ...(r.resultTruncated === true ? { resultTruncated: true } : {}),
    ...(usage.success && r.usage !== undefined ? { usage: usageOf(usage.output) } : {}),
    ...(costAmount(r.costUsd) !== undefined ? { costUsd: costAmount(r.costUsd) } : {}),
    ...(typeof r.model === 'string' && r.model !== '' ? { model: r.model.slice(0, 253) } : {}),
    ...(typeof r.error === 'string' && r.error !== '' ? { error: errorText(r.error) } : {}),
  };
}

const encoder = new TextEncoder();
const byteLength = (s: string): number => encoder.encode(s).length;

/**
 * The termination message of a run report, never more than `max` bytes: the result text is cut (on a character
 * boundary, `resultTruncated` set) until the JSON fits.
 */
export function encodeRunReport(report: RunResult, max = TERMINATION_MESSAGE_MAX_BYTES): string {
  const base = {
    v: 1 as const,
    ...(report.usage !== undefined ? { usage: report.usage } : {}),
    ...(report.costUsd !== undefined ? { costUsd: report.costUsd } : {}),
    ...(report.model !== undefined ? { model: report.model.slice(0, 253) } : {}),
    ...(report.error !== undefined && report.error !== '' ? { error: errorText(report.error) } : {}),
  };
  const full = report.result;
  if (full === undefined) return JSON.stringify(base);
  const whole = JSON.stringify({
    ...base,
    result: full,
    ...(report.resultTruncated ? { resultTruncated: true } : {}),
  });
  if (byteLength(whole) <= max) return whole;
  // Binary search on the number of code points kept.
  const chars = Array.from(full);
  let lo = 0;
  let hi = chars.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const candidate = JSON.stringify({
      ...base,
      result: chars.slice(0, mid).join(''),
      resultTruncated: true,
    });
    if (byteLength(candidate) <= max) lo = mid;
    else hi = mid - 1;
  }
  const cut = JSON.stringify({ ...base, result: chars.slice(0, lo).join(''), resultTruncated: true });
  return byteLength(cut) <= max ? cut : JSON.stringify(base);
}
