import { err, ok, type Result } from '../../shared/result.ts';
import type { Env } from './env.ts';

/** Who produced an event; empty ids are omitted on the wire. */
export interface EventSource {
  readonly agent?: string;
  readonly station?: string;
  readonly task?: string;
  readonly pod?: string;
  readonly namespace?: string;
}

/** Reads the run identity from `AGENT_NAME`, `STATION_NAME`, `TASK_ID`, `POD_NAME`, `POD_NAMESPACE`. */
export function sourceFromEnv(env: Env): EventSource {
  const out: { -readonly [K in keyof EventSource]: string } = {};
  const pairs = [
    ['agent', 'AGENT_NAME'],
    ['station', 'STATION_NAME'],
    ['task', 'TASK_ID'],
    ['pod', 'POD_NAME'],
    ['namespace', 'POD_NAMESPACE'],
  ] as const;
  for (const [key, name] of pairs) {
    const value = (env[name] ?? '').trim();
    if (value !== '') out[key] = value;
  }
  return out;
}

/** A payload line after one JSON parse attempt, shared by everything that inspects the same line. */
export type ParsedLine = { readonly json: true; readonly value: unknown } | { readonly json: false };

/** Parses a payload line once; never throws. */
export function parseLine(line: string): ParsedLine {
  try {
    return { json: true, value: JSON.parse(line) as unknown };
  } catch {
    return { json: false };
  }
}

/** True when `value` already is an envelope: an object with both `source` and `event`. */
export function isEnvelope(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    'source' in value &&
    'event' in value
  );
}

/**
 * The one message logged when a payload is already wrapped
 * (docs/design/reference-behaviour.md#sinks-and-the-envelope).
 */
export const DOUBLE_WRAP_MESSAGE =
  'BUG: refusing to wrap an already-wrapped agent output line — the envelope is applied exactly once';

/**
 * Wraps one payload line as `{"source":{…},"event":<payload>}`: `event` is the line's JSON when it parses (embedded
 * verbatim, so numbers keep their exact text), else the line as a JSON string. A payload that already is an envelope
 * is refused, so the envelope is applied exactly once. With `requestId` (a server-mode turn: the request it answers)
 * the envelope gets a third key, `"requestId"`, after `event`; without it the envelope is unchanged. Pure.
 */
export function wrapLine(
  source: EventSource,
  line: string,
  parsed: ParsedLine = parseLine(line),
  requestId?: string,
): Result<string, 'already-wrapped'> {
  if (parsed.json && isEnvelope(parsed.value)) return err('already-wrapped');
  const event = parsed.json ? line.trim() : JSON.stringify(line);
  const request = requestId === undefined ? '' : `,"requestId":${JSON.stringify(requestId)}`;
  return ok(`{"source":${JSON.stringify(orderedSource(source))},"event":${event}${request}}`);
}

/**
 * A bare payload line tagged with the request it answers (a server-mode turn's stdout): a JSON object line gets
 * `"requestId"` as its first key, the rest of its text kept verbatim; any other line (plain text, a JSON array or
 * scalar) and an object that already has a `requestId` key are returned as they are. Pure.
 */
export function withRequestId(line: string, parsed: ParsedLine, requestId: string): string {
  if (!parsed.json) return line;
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return line;
  if (Object.hasOwn(value, 'requestId')) return line;
  const tag = `"requestId":${JSON.stringify(requestId)}`;
  // A line that parses as an object starts with `{` once JSON whitespace is trimmed.
  return Object.keys(value).length === 0 ? `{${tag}}` : `{${tag},${line.trim().slice(1)}`;
}

function orderedSource(source: EventSource): EventSource {
  const out: { -readonly [K in keyof EventSource]: string } = {};
  for (const key of ['agent', 'station', 'task', 'pod', 'namespace'] as const) {
    const value = source[key];
    if (value) out[key] = value;
  }
  return out;
}
