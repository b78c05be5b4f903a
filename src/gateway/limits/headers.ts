// What a vendor's answer says about its key's rate limits (docs/design/gateway.md#rate-limits), pure. The header
// names are the ones the vendors document and their SDKs read (@anthropic-ai/sdk, openai: `retry-after-ms`,
// `retry-after`):
// - Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{remaining,reset}`, reset an RFC
//   3339 time;
// - OpenAI: `x-ratelimit-remaining-{requests,tokens}`, `x-ratelimit-reset-{requests,tokens}`, reset a duration from
//   now (`6m0s`, `1s`, `20ms`);
// - Gemini sends none; its 429 names `retryDelay` (`"32s"`) in the `google.rpc.RetryInfo` of `error.details`;
// - any 429: `retry-after-ms`, else `retry-after` (seconds, or an HTTP date); none of these: blocked
//   `DEFAULT_BLOCK_MS`.
import * as v from 'valibot';
import type { GatewayVendor } from '../../api/gateway.ts';
import type { Observed, VendorWindow } from './buckets.ts';

/** How long a 429 that names no time blocks its key. */
export const DEFAULT_BLOCK_MS = 2_000;
/** The longest block taken from an answer (a wrong date must not hold a key for days). */
export const MAX_BLOCK_MS = 3_600_000;

const DURATION =
  /^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/;

/** A Go-style duration (`6m0s`, `1s`, `20ms`, `1h2m3.5s`) or a protobuf one (`32s`, `0.5s`) in ms; else undefined. */
export function parseDurationMs(text: string): number | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  const m = DURATION.exec(t);
  if (m === null || m.slice(1).every((x) => x === undefined)) return undefined;
  const [h, min, s, ms] = m.slice(1).map((x) => (x === undefined ? 0 : Number(x))) as [
    number,
    number,
    number,
    number,
  ];
  return Math.round(h * 3_600_000 + min * 60_000 + s * 1000 + ms);
}

/** `retry-after`: seconds, or an HTTP date; the time it names (ms), undefined when it is neither. */
export function parseRetryAfter(text: string, now: number): number | undefined {
  const t = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(t)) return now + Math.round(Number(t) * 1000);
  if (!/[a-z]/i.test(t)) return undefined;
  const at = Date.parse(t);
  return Number.isNaN(at) ? undefined : at;
}

const num = (text: string | undefined): number | undefined => {
  if (text === undefined || text.trim() === '') return undefined;
  const n = Number(text.trim());
  return Number.isFinite(n) ? n : undefined;
};

type Get = (name: string) => string | undefined;

/** The tightest of several windows: the one with least remaining (the latest reset among those used up). */
function tightest(windows: readonly (VendorWindow | undefined)[]): VendorWindow | undefined {
  let best: VendorWindow | undefined;
  for (const w of windows) {
    if (w === undefined) continue;
    if (
      best === undefined ||
      w.remaining < best.remaining ||
      (w.remaining <= 0 && best.remaining <= 0 && w.resetAt > best.resetAt)
    )
      best = w;
  }
  return best;
}

function anthropicWindow(get: Get, kind: string): VendorWindow | undefined {
  const remaining = num(get(`anthropic-ratelimit-${kind}-remaining`));
  const reset = get(`anthropic-ratelimit-${kind}-reset`);
  const resetAt = reset === undefined ? Number.NaN : Date.parse(reset);
  if (remaining === undefined || Number.isNaN(resetAt)) return undefined;
  return { remaining, resetAt };
}

function openaiWindow(get: Get, kind: string, now: number): VendorWindow | undefined {
  const remaining = num(get(`x-ratelimit-remaining-${kind}`));
  const reset = get(`x-ratelimit-reset-${kind}`);
  const ms = reset === undefined ? undefined : parseDurationMs(reset);
  if (remaining === undefined || ms === undefined) return undefined;
  return { remaining, resetAt: now + ms };
}

const GoogleErrorSchema = v.object({
  error: v.object({
    details: v.optional(
      v.array(v.looseObject({ '@type': v.optional(v.string()), retryDelay: v.optional(v.string()) })),
    ),
  }),
});

/** Gemini's 429 body: the RetryInfo's `retryDelay` (ms), if any. */
export function geminiRetryDelayMs(body: unknown): number | undefined {
  const p = v.safeParse(GoogleErrorSchema, body);
  if (!p.success) return undefined;
  for (const d of p.output.error.details ?? [])
    if (d['@type']?.endsWith('google.rpc.RetryInfo') && d.retryDelay !== undefined)
      return parseDurationMs(d.retryDelay);
  return undefined;
}

/** What an answer (`status`, its headers, and a 429's JSON body when read) says about the key. */
export function observeAnswer(
  vendor: GatewayVendor,
  status: number,
  get: Get,
  body: unknown,
  now: number,
): Observed {
  let requests: VendorWindow | undefined;
  let tokens: VendorWindow | undefined;
  if (vendor === 'anthropic') {
    requests = anthropicWindow(get, 'requests');
    tokens = tightest([
      anthropicWindow(get, 'tokens'),
      anthropicWindow(get, 'input-tokens'),
      anthropicWindow(get, 'output-tokens'),
    ]);
  } else if (vendor === 'openai') {
    requests = openaiWindow(get, 'requests', now);
    tokens = openaiWindow(get, 'tokens', now);
  }
  if (status !== 429) return { requests, tokens };
  const ms = num(get('retry-after-ms'));
  const after = get('retry-after');
  let until =
    ms !== undefined && ms >= 0 ? now + ms : after !== undefined ? parseRetryAfter(after, now) : undefined;
  if (until === undefined && vendor === 'gemini') {
    const delay = geminiRetryDelayMs(body);
    if (delay !== undefined) until = now + delay;
  }
  // A 429 naming no time of its own, but a used-up window: blocked until that window resets.
  if (until === undefined) {
    const windows = [requests, tokens].filter((w) => w !== undefined && w.remaining <= 0 && w.resetAt > now);
    until =
      windows.length > 0
        ? Math.max(...windows.map((w) => (w as VendorWindow).resetAt))
        : now + DEFAULT_BLOCK_MS;
  }
  const blockedUntil = Math.min(Math.max(until, now), now + MAX_BLOCK_MS);
  return { requests, tokens, blockedUntil };
}
