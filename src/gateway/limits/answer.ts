// The gateway's 429 for a call that waited its longest for its key (docs/design/gateway.md#rate-limits), in the
// vendor's own shape, with `retry-after` (seconds) and `retry-after-ms`, which the vendors' SDKs and CLIs honour.
// Pure.
import type { GatewayVendor } from '../../api/gateway.ts';
import type { Refusal } from '../refusals.ts';

/** The answer to a call refused for its key's rate limit; `retryAfterMs` is rounded up to whole seconds. */
export function rateLimited(vendor: GatewayVendor, retryAfterMs: number, message: string): Refusal {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const headers = { 'retry-after': String(seconds), 'retry-after-ms': String(seconds * 1000) };
  const text = `agent gateway: ${message}`;
  switch (vendor) {
    case 'anthropic':
      return {
        status: 429,
        headers,
        body: { type: 'error', error: { type: 'rate_limit_error', message: text } },
      };
    case 'openai':
      return {
        status: 429,
        headers,
        body: { error: { message: text, type: 'requests', param: null, code: 'rate_limit_exceeded' } },
      };
    case 'gemini':
      return {
        status: 429,
        headers,
        body: {
          error: {
            code: 429,
            message: text,
            status: 'RESOURCE_EXHAUSTED',
            details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${seconds}s` }],
          },
        },
      };
  }
}
