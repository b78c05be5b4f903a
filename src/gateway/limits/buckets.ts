// The rate-limit arithmetic of one vendor key (docs/design/gateway.md#rate-limits), pure: token buckets for the
// configured requests and tokens per minute (this replica's share), what the vendor said of its own windows
// (remaining and reset, from its rate-limit headers), and a block until a time (a 429's retry-after). `nextCapacity`
// says when a call of an estimated token count may go; `admitCall` charges it, `settleCall` corrects the tokens
// with the measured usage, `learn` takes in what an answer said.

/** The limits of one key, per minute; absent: not limited on that dimension. */
export interface KeyLimits {
  readonly requestsPerMinute?: number | undefined;
  readonly tokensPerMinute?: number | undefined;
}

export const MINUTE_MS = 60_000;

/** A token bucket: `capacity` per minute, refilled continuously; `level` may go below 0 (a charge past it). */
export interface Bucket {
  readonly capacity: number;
  readonly level: number;
  /** When `level` was computed (ms). */
  readonly at: number;
}

/** A vendor's own window: what is left of it and when it is full again (ms). */
export interface VendorWindow {
  readonly remaining: number;
  readonly resetAt: number;
}

/** What one answer of the vendor said about the key. */
export interface Observed {
  readonly requests?: VendorWindow | undefined;
  readonly tokens?: VendorWindow | undefined;
  /** A 429: no call until then (ms). */
  readonly blockedUntil?: number | undefined;
}

export interface KeyState {
  readonly limits: KeyLimits;
  readonly requests?: Bucket | undefined;
  readonly tokens?: Bucket | undefined;
  readonly vendorRequests?: VendorWindow | undefined;
  readonly vendorTokens?: VendorWindow | undefined;
  /** 0: not blocked. */
  readonly blockedUntil: number;
}

/** Why a call cannot go now. */
export type HoldReason = 'blocked' | 'requests' | 'tokens' | 'vendor_requests' | 'vendor_tokens';

export type Capacity = { readonly at: number; readonly reason?: HoldReason | undefined };

export function refill(b: Bucket, now: number): Bucket {
  if (now <= b.at) return b;
  const level = Math.min(b.capacity, b.level + (b.capacity * (now - b.at)) / MINUTE_MS);
  return { capacity: b.capacity, level, at: now };
}

/** When `need` (at most the capacity: a larger call waits for a full bucket) is in the bucket. */
export function availableAt(b: Bucket, now: number, need: number): number {
  const r = refill(b, now);
  const want = Math.min(need, r.capacity);
  if (r.level >= want) return now;
  return now + Math.ceil(((want - r.level) * MINUTE_MS) / r.capacity);
}

const positive = (n: number | undefined): n is number => n !== undefined && Number.isFinite(n) && n > 0;

function bucketFor(capacity: number | undefined, old: Bucket | undefined, now: number): Bucket | undefined {
  if (!positive(capacity)) return undefined;
  if (old === undefined) return { capacity, level: capacity, at: now };
  const r = refill(old, now);
  return { capacity, level: Math.min(capacity, r.level), at: now };
}

/** A key's state under (new) limits: a new bucket starts full; a changed one keeps its level, at most the capacity. */
export function withLimits(state: KeyState | undefined, limits: KeyLimits, now: number): KeyState {
  if (
    state !== undefined &&
    state.limits.requestsPerMinute === limits.requestsPerMinute &&
    state.limits.tokensPerMinute === limits.tokensPerMinute
  )
    return state;
  return {
    limits,
    requests: bucketFor(limits.requestsPerMinute, state?.requests, now),
    tokens: bucketFor(limits.tokensPerMinute, state?.tokens, now),
    vendorRequests: state?.vendorRequests,
    vendorTokens: state?.vendorTokens,
    blockedUntil: state?.blockedUntil ?? 0,
  };
}

/** The limits each of `replicas` gateway replicas enforces: its share, rounded down, at least 1. */
export function shareOf(limits: KeyLimits, replicas: number): KeyLimits {
  const n = Math.max(1, Math.floor(replicas));
  const part = (x: number | undefined) => (positive(x) ? Math.max(1, Math.floor(x / n)) : undefined);
  return { requestsPerMinute: part(limits.requestsPerMinute), tokensPerMinute: part(limits.tokensPerMinute) };
}

const exhausted = (w: VendorWindow | undefined, now: number): w is VendorWindow =>
  w !== undefined && w.remaining <= 0 && w.resetAt > now;

/** When a call estimated at `tokens` may go (`at` = now: at once), and what holds it otherwise (the latest). */
export function nextCapacity(state: KeyState, now: number, tokens: number): Capacity {
  const holds: { at: number; reason: HoldReason }[] = [];
  if (state.blockedUntil > now) holds.push({ at: state.blockedUntil, reason: 'blocked' });
  if (exhausted(state.vendorRequests, now))
    holds.push({ at: state.vendorRequests.resetAt, reason: 'vendor_requests' });
  if (exhausted(state.vendorTokens, now))
    holds.push({ at: state.vendorTokens.resetAt, reason: 'vendor_tokens' });
  if (state.requests !== undefined) {
    const at = availableAt(state.requests, now, 1);
    if (at > now) holds.push({ at, reason: 'requests' });
  }
  if (state.tokens !== undefined && tokens > 0) {
    const at = availableAt(state.tokens, now, tokens);
    if (at > now) holds.push({ at, reason: 'tokens' });
  }
  let latest: Capacity = { at: now };
  for (const h of holds) if (h.at > latest.at) latest = h;
  return latest;
}

const charge = (b: Bucket | undefined, now: number, amount: number): Bucket | undefined => {
  if (b === undefined) return undefined;
  const r = refill(b, now);
  return { capacity: r.capacity, level: r.level - amount, at: now };
};

const spend = (w: VendorWindow | undefined, amount: number): VendorWindow | undefined =>
  w === undefined ? undefined : { remaining: w.remaining - amount, resetAt: w.resetAt };

/** The state after a call estimated at `tokens` was let go. */
export function admitCall(state: KeyState, now: number, tokens: number): KeyState {
  return {
    ...state,
    requests: charge(state.requests, now, 1),
    tokens: charge(state.tokens, now, tokens),
    vendorRequests: spend(state.vendorRequests, 1),
    vendorTokens: spend(state.vendorTokens, tokens),
  };
}

/** The state once a call charged `estimate` tokens is known to have used `actual` (back or further charged). */
export function settleCall(state: KeyState, now: number, estimate: number, actual: number): KeyState {
  const diff = actual - estimate;
  if (diff === 0 || state.tokens === undefined) return state;
  const r = refill(state.tokens, now);
  return { ...state, tokens: { ...r, level: Math.min(r.capacity, r.level - diff) } };
}

/**
 * The state after an answer said `observed`: the vendor's windows replace what was known (they are the vendor's
 * count, of every replica's calls), a block is kept until the latest time named.
 */
export function learn(state: KeyState, observed: Observed): KeyState {
  return {
    ...state,
    vendorRequests: observed.requests ?? state.vendorRequests,
    vendorTokens: observed.tokens ?? state.vendorTokens,
    blockedUntil: Math.max(state.blockedUntil, observed.blockedUntil ?? 0),
  };
}

/** Until when the vendor itself holds the key (a 429, or a window used up); undefined when it does not. */
export function vendorHoldUntil(state: KeyState, now: number): number | undefined {
  let until = state.blockedUntil > now ? state.blockedUntil : 0;
  if (exhausted(state.vendorRequests, now)) until = Math.max(until, state.vendorRequests.resetAt);
  if (exhausted(state.vendorTokens, now)) until = Math.max(until, state.vendorTokens.resetAt);
  return until > now ? until : undefined;
}
