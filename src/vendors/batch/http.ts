// One HTTP exchange with a vendor: timeout, retries of 429 / 5xx / network failures with backoff honouring
// `retry-after`, and the mapping of every failure into `BatchError`. Shared by the three adapters.

import { err, ok, type Result } from '../../shared/result.ts';
import type { BatchError, VendorCall } from './port.ts';

/** Longest `retry-after` honoured inside one call; a longer one ends the call `unavailable` (the caller requeues). */
export const MAX_INLINE_RETRY_AFTER_MS = 10_000;
/** First backoff between attempts when the vendor does not say (doubles per attempt, capped). */
export const RETRY_BASE_MS = 500;
export const RETRY_MAX_MS = 8_000;
/** Longest vendor error text kept in a message. */
const MAX_MESSAGE = 500;

export interface VendorHttpRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** Absolute URL, or a path appended to `call.baseUrl`. */
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** A JSON body (serialized here), a multipart form, or none. */
  readonly json?: unknown;
  readonly form?: FormData;
  /**
   * Whether a failure with no definite answer may be retried. Creates are not idempotent at any vendor: they are
   * retried only on 429 (nothing was processed), never on 5xx or a lost answer.
   */
  readonly idempotent: boolean;
}

export interface VendorHttpResponse {
  readonly status: number;
  readonly text: string;
}

/** Reads the vendor's error body into `{type, message}`; each adapter knows its vendor's shape. */
export type ErrorReader = (status: number, body: unknown) => { type: string; message: string };

/** Milliseconds from a `retry-after` header (delta seconds or an HTTP date); undefined when absent or unusable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** `text` without any occurrence of `secret`, cut to a readable length. */
export function scrubSecret(text: string, secret: string): string {
  const clean = secret.length >= 4 ? text.split(secret).join('[redacted]') : text;
  return clean.length > MAX_MESSAGE ? `${clean.slice(0, MAX_MESSAGE - 1)}…` : clean;
}

function backoff(attempt: number): number {
  return Math.min(RETRY_BASE_MS * 2 ** Math.max(0, attempt - 1), RETRY_MAX_MS);
}

function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * Performs one vendor request. 2xx → the body text. 4xx other than 429 → `rejected` with the vendor's message
 * (never retried). 429 and 5xx → retried up to `call.attempts` (5xx and lost answers only when `idempotent`),
 * waiting `retry-after` when the vendor says (up to MAX_INLINE_RETRY_AFTER_MS) else an exponential backoff; after
 * the last attempt → `unavailable` / `network`. Never throws; the key never appears in an error.
 */
export async function vendorRequest(
  call: VendorCall,
  request: VendorHttpRequest,
  readError: ErrorReader,
): Promise<Result<VendorHttpResponse, BatchError>> {
  const url = request.url.startsWith('http') ? request.url : `${call.baseUrl}${request.url}`;
  const attempts = Math.max(1, call.attempts);
  let last: BatchError = { kind: 'network', message: 'no attempt made' };
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (call.signal?.aborted) return err({ kind: 'network', message: 'aborted' });
    const timeout = AbortSignal.timeout(call.timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    const headers: Record<string, string> = { ...request.headers };
    let body: string | FormData | undefined;
    if (request.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(request.json);
    } else if (request.form !== undefined) {
      body = request.form;
    }
    let response: Response;
    try {
      response = await call.fetch(url, {
        method: request.method,
        headers,
        signal,
        ...(body !== undefined ? { body } : {}),
      });
    } catch (error) {
      const timedOut = timeout.aborted && !call.signal?.aborted;
      const message = timedOut
        ? `no answer within ${call.timeoutMs} ms`
        : scrubSecret(error instanceof Error ? error.message : String(error), call.apiKey);
      last = { kind: 'network', message: `${request.method} ${pathOf(url)}: ${message}` };
      if (!request.idempotent || attempt === attempts) return err(last);
      await call.sleep(backoff(attempt));
      continue;
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      last = {
        kind: 'network',
        message: `${request.method} ${pathOf(url)}: reading the answer failed: ${scrubSecret(String(error), call.apiKey)}`,
      };
      if (!request.idempotent || attempt === attempts) return err(last);
      await call.sleep(backoff(attempt));
      continue;
    }
    if (response.ok) return ok({ status: response.status, text });
    const parsed = readError(response.status, safeJson(text));
    const message = scrubSecret(parsed.message || text || `HTTP ${response.status}`, call.apiKey);
    if (!isRetryableStatus(response.status)) {
      return err({ kind: 'rejected', status: response.status, type: parsed.type, message });
    }
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
    last = {
      kind: 'unavailable',
      status: response.status,
      message,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
    const retryable = response.status === 429 || request.idempotent;
    if (!retryable || attempt === attempts) return err(last);
    if (retryAfterMs !== undefined && retryAfterMs > MAX_INLINE_RETRY_AFTER_MS) return err(last);
    await call.sleep(retryAfterMs ?? backoff(attempt));
  }
  return err(last);
}

/** Parses JSON, or undefined. */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

/** One line for logs and failure reasons. */
export function describeBatchError(e: BatchError): string {
  switch (e.kind) {
    case 'rejected':
      return `HTTP ${e.status}${e.type ? ` ${e.type}` : ''}: ${e.message}`;
    case 'unavailable':
      return `HTTP ${e.status} (still failing after retries): ${e.message}`;
    case 'network':
      return e.message;
    case 'protocol':
      return `unexpected answer: ${e.message}`;
  }
}
