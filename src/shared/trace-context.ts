// W3C trace context (https://www.w3.org/TR/trace-context/) for a run (issue 10 §5), pure: the trace an Agent's
// spans belong to, and the id of its root span `agent.run`, are derived from the Agent alone, so every replica of
// the controller, at any time, and the run pod agree on them without storing anything first.
// - An Agent annotated `traceparent` (a valid W3C header value) joins that trace: its root span is a child of the
//   span the annotation names, and the annotation's sampled flag is kept.
// - Otherwise the trace id is the Agent's uid (a UUID is 128 bits, exactly a trace id) and the run is sampled.
// The root span id is a hash of the uid, never zero.

/** The annotation an Agent may carry to join an existing trace. */
export const ANNOTATION_TRACEPARENT = 'traceparent';

/** A parsed `traceparent` header value. */
export interface TraceParent {
  readonly traceId: string;
  readonly spanId: string;
  readonly sampled: boolean;
}

/** The trace of one run. */
export interface RunTrace {
  readonly traceId: string;
  /** The id of the run's root span (`agent.run`), parent of the controller's and the pod's spans. */
  readonly rootSpanId: string;
  /** The span the Agent's `traceparent` annotation names, when it joins a trace. */
  readonly parentSpanId?: string;
  readonly sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ALL_ZERO = /^0+$/;

/**
 * Parses a W3C `traceparent` value (version 00, or a later version's first four fields); undefined when invalid:
 * version ff, an all-zero trace or span id, uppercase hex, a wrong length, or extra fields on version 00.
 */
export function parseTraceParent(value: string): TraceParent | undefined {
  const m = TRACEPARENT.exec(value.trim());
  if (m === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === undefined || traceId === undefined || spanId === undefined || flags === undefined)
    return undefined;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/** The `traceparent` header value naming `spanId` in `traceId`. */
export function formatTraceParent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}

const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;
const encoder = new TextEncoder();

/** The 64-bit FNV-1a hash of the UTF-8 bytes of `s`, as 16 lowercase hex digits. */
export function fnv1a64(s: string): string {
  let hash = FNV64_OFFSET;
  for (const byte of encoder.encode(s)) {
    hash ^= BigInt(byte);
    hash = (hash * FNV64_PRIME) & MASK64;
  }
  return hash.toString(16).padStart(16, '0');
}

/** A 32-hex trace id from a uid: the UUID's hex digits when it is one, else two hashes of it. Never all zero. */
export function traceIdFromUid(uid: string): string {
  const hex = uid.toLowerCase().replace(/-/g, '');
  if (/^[0-9a-f]{32}$/.test(hex) && !ALL_ZERO.test(hex)) return hex;
  const id = fnv1a64(`trace:${uid}`) + fnv1a64(`trace2:${uid}`);
  return ALL_ZERO.test(id) ? `${id.slice(0, 31)}1` : id;
}

/** The root span id of the run of the Agent with `uid` (16 hex, never all zero). */
export function rootSpanIdFromUid(uid: string): string {
  const id = fnv1a64(`agent.run:${uid}`);
  return ALL_ZERO.test(id) ? '0000000000000001' : id;
}

/** The trace of the run of an Agent with `uid` and `annotations` (see the module comment). */
export function runTrace(uid: string, annotations: Readonly<Record<string, string>> | undefined): RunTrace {
  const joined = parseTraceParent(annotations?.[ANNOTATION_TRACEPARENT] ?? '');
  const rootSpanId = rootSpanIdFromUid(uid);
  if (joined !== undefined) {
    return { traceId: joined.traceId, rootSpanId, parentSpanId: joined.spanId, sampled: joined.sampled };
  }
  return { traceId: traceIdFromUid(uid), rootSpanId, sampled: true };
}

/** The `traceparent` a run pod gets: its root span as parent. */
export function runPodTraceParent(trace: RunTrace): string {
  return formatTraceParent(trace.traceId, trace.rootSpanId, trace.sampled);
}
