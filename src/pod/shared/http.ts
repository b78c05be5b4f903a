import { backoffAfter, type RetryConfig } from './retry.ts';

/** One POST to make; `headers` are extra lines on top of `Content-Type`. */
export interface PostRequest {
  readonly url: string;
  readonly body: string | Uint8Array;
  readonly contentType: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

/** What one attempt (or the last of several) ended with. `status` is set when a response arrived. */
export type PostOutcome =
  | { readonly ok: true; readonly status: number; readonly attempts: number }
  | {
      readonly ok: false;
      readonly status?: number;
      readonly error?: string;
      readonly aborted: boolean;
      readonly attempts: number;
    };

/** A `fetch` with the subset of the signature we use, so tests may inject one. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** Default timeout for one HTTP attempt; a slow sink can hold a delivery no longer than this per attempt. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5000;

/**
 * Sleeps `ms`, resolving early (never rejecting) when `signal` aborts. The timer does not keep the process alive.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * One POST with a hard timeout. 2xx = ok; any other status, a network error, the timeout or `signal` aborting =
 * not ok. The response body is never read (it is cancelled), so a huge or endless body cannot hold us. Never throws.
 */
export async function postOnce(
  request: PostRequest,
  timeoutMs: number,
  signal?: AbortSignal,
  fetchImpl: FetchLike = fetch,
): Promise<PostOutcome> {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) controller.abort();
  const timer = setTimeout(() => controller.abort(), Math.max(1, timeoutMs));
  try {
    const headers = new Headers();
    for (const [name, value] of request.headers) headers.append(name, value);
    headers.set('Content-Type', request.contentType);
    const response = await fetchImpl(request.url, {
      method: 'POST',
      headers,
      body: request.body,
      signal: controller.signal,
      redirect: 'manual',
    });
    await response.body?.cancel().catch(() => undefined);
    if (response.status >= 200 && response.status < 300)
      return { ok: true, status: response.status, attempts: 1 };
    return { ok: false, status: response.status, aborted: false, attempts: 1 };
  } catch (error) {
    const aborted = signal?.aborted === true;
    const message =
      controller.signal.aborted && !aborted ? `timed out after ${timeoutMs} ms` : describe(error);
    return { ok: false, error: message, aborted, attempts: 1 };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

export interface RetryOptions {
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  readonly fetch?: FetchLike;
  /** Injected pause, for tests; defaults to an abortable timer. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * POSTs with the reference retry rule: up to `retry.attempts` attempts, pausing `backoffAfter(n)` after failed
 * attempt n and never after the last. Stops at once when `signal` aborts. Never throws.
 */
export async function postWithRetry(
  request: PostRequest,
  retry: RetryConfig,
  options: RetryOptions = {},
): Promise<PostOutcome> {
  const pause = options.sleep ?? sleep;
  let last: PostOutcome = { ok: false, aborted: false, attempts: 0 };
  for (let attempt = 1; attempt <= Math.max(1, retry.attempts); attempt++) {
    const outcome = await postOnce(
      request,
      options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      options.signal,
      options.fetch ?? fetch,
    );
    last = { ...outcome, attempts: attempt };
    if (outcome.ok || options.signal?.aborted) return last;
    const wait = backoffAfter(retry, attempt);
    if (wait === undefined) break;
    await pause(wait, options.signal);
    if (options.signal?.aborted) return { ...last, ok: false, aborted: true } as PostOutcome;
  }
  return last;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
    return typeof code === 'string' ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}
