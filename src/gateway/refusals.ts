// The gateway's own answers (a call it refuses or cannot forward), pure, each in the error shape of the vendor whose
// API the client speaks, so the CLI reports it as it would the vendor's own and stops (401, 403, 404 are not retried
// by the vendors' SDKs; 503 is). A run over its cap (`budget`) is answered with the status each vendor's CLI takes as
// final: measured with the real CLIs, docs/reference/vendor-clis.md#over-the-runs-cap.

import type { GatewayVendor } from '../api/gateway.ts';

/** Why the gateway answered itself: the `reason` label of `gateway_refusals_total`. */
export type RefusalReason =
  /** The path or method is not one the gateway forwards. */
  | 'route'
  /** No credential, not one of ours, or a wrong MAC. */
  | 'credential'
  /** The credential's Agent does not exist (any more), or has another uid. */
  | 'unknown_run'
  /** The run has ended (Succeeded or Failed). */
  | 'run_ended'
  /** The run has no `status.gateway`: it was not started behind the gateway. */
  | 'not_granted'
  /** The run's grant names no key of this vendor. */
  | 'vendor'
  /** The model of the call is not one the run's policy allows (or the call names none while the policy limits). */
  | 'model'
  /** The key the grant names is not in the namespace's agent-secrets. */
  | 'no_key'
  /** The request body is too large or not JSON where the model is read from it. */
  | 'body'
  /** The gateway cannot decide now (its key not loaded, the API server unreachable): try again. */
  | 'unavailable'
  /** The vendor could not be reached. */
  | 'upstream'
  /** The run has reached its cap (`status.gateway.budget`): its calls are refused until it ends. */
  | 'budget';

/** What each reason answers (`budget`: per vendor, {@link BUDGET_STATUS}). */
export const REFUSAL_STATUS: Readonly<Record<RefusalReason, number>> = {
  route: 404,
  credential: 401,
  unknown_run: 401,
  run_ended: 401,
  not_granted: 401,
  vendor: 403,
  model: 403,
  no_key: 401,
  body: 400,
  unavailable: 503,
  upstream: 502,
  budget: 403,
};

/**
 * A run over its cap, per vendor: a status the vendor's CLI does not retry and whose message it shows. Anthropic 402
 * `billing_error` (Claude Code: one request, `API Error: 402 <message>`; 403 would read "Failed to authenticate", 400
 * was sent six times); OpenAI 400 (Codex: one request, the body in `turn.failed`; 403 and 402 are retried six times,
 * 429 `insufficient_quota` stops at once but shows only "Quota exceeded"); Gemini 403 `PERMISSION_DENIED` (Gemini
 * CLI: one request; 429 `RESOURCE_EXHAUSTED` is retried for minutes).
 */
export const BUDGET_STATUS: Readonly<Record<GatewayVendor, number>> = {
  anthropic: 402,
  openai: 400,
  gemini: 403,
};

/** The status `reason` answers in `vendor`'s API. */
export function refusalStatus(vendor: GatewayVendor, reason: RefusalReason): number {
  return reason === 'budget' ? BUDGET_STATUS[vendor] : REFUSAL_STATUS[reason];
}

export const REFUSAL_REASONS = Object.keys(REFUSAL_STATUS) as RefusalReason[];

/** An answer of the gateway's own: status, JSON body, extra headers. */
export interface Refusal {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Readonly<Record<string, string>>;
}

const ANTHROPIC_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  503: 'overloaded_error',
};

const OPENAI_CODES: Readonly<Record<RefusalReason, string>> = {
  route: 'unknown_url',
  credential: 'invalid_api_key',
  unknown_run: 'invalid_api_key',
  run_ended: 'invalid_api_key',
  not_granted: 'invalid_api_key',
  vendor: 'unsupported_vendor',
  model: 'model_not_allowed',
  no_key: 'invalid_api_key',
  body: 'invalid_request',
  unavailable: 'gateway_unavailable',
  upstream: 'upstream_unreachable',
  budget: 'budget_exceeded',
};

const GOOGLE_STATUS: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
};

/** Seconds a client waits before retrying an `unavailable` answer. */
const RETRY_AFTER_S = 2;

/**
 * The answer for `reason` in `vendor`'s error shape: Anthropic `{type: "error", error: {type, message}}`, OpenAI
 * `{error: {message, type, param, code}}`, Google `{error: {code, message, status}}`. `message` must name no secret.
 */
export function refusal(vendor: GatewayVendor, reason: RefusalReason, message: string): Refusal {
  const status = refusalStatus(vendor, reason);
  const headers = reason === 'unavailable' ? { 'retry-after': String(RETRY_AFTER_S) } : {};
  const text = `agent gateway: ${message}`;
  switch (vendor) {
    case 'anthropic':
      return {
        status,
        headers,
        body: { type: 'error', error: { type: ANTHROPIC_TYPES[status] ?? 'api_error', message: text } },
      };
    case 'openai':
      return {
        status,
        headers,
        body: {
          error: {
            message: text,
            type: status >= 500 ? 'server_error' : 'invalid_request_error',
            param: null,
            code: OPENAI_CODES[reason],
          },
        },
      };
    case 'gemini':
      return {
        status,
        headers,
        body: { error: { code: status, message: text, status: GOOGLE_STATUS[status] ?? 'UNKNOWN' } },
      };
  }
}
