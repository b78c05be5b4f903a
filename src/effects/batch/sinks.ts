// Delivers the sink events of batch runs from the controller, as a run pod's supervisor would: each event wrapped
// once in the `{source, event}` envelope, POSTed with the supervisor's retry settings, in order per sink. Delivery
// runs in the background: a dead or slow sink never delays a transition. Only http sinks exist outside a pod.

import { wrapLine } from '../../pod/shared/envelope.ts';
import { parseHeaderLines } from '../../pod/shared/headers.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS, type FetchLike, postWithRetry } from '../../pod/shared/http.ts';
import { redactUrl } from '../../pod/shared/redact.ts';
import { DEFAULT_RETRY, type RetryConfig } from '../../pod/shared/retry.ts';
import type { Action, SinkEvent } from '../../reconcile/index.ts';
import type { Logger } from '../../shared/log.ts';
import type { SecretReader } from './secrets.ts';

/** Events waiting per sink URL beyond which new ones are dropped (and logged). */
export const MAX_QUEUED_PER_SINK = 10_000;

export interface SinkDispatcher {
  /** Queues the action's events for each of its sinks; never waits, never throws. */
  deliver(action: Extract<Action, { kind: 'notifySinks' }>): void;
  /** Resolves once every queue is empty (tests, shutdown). */
  idle(): Promise<void>;
}

/** The pod-event JSON of a sink event: a CLI line as is, a lifecycle event as `{kind: 'lifecycle', …}`. */
export function sinkPayload(e: SinkEvent): string {
  if (e.kind === 'line') return e.line;
  const event: Record<string, unknown> = { kind: 'lifecycle', phase: e.phase, status: e.status };
  if (e.reason !== undefined && e.reason !== '') event.reason = e.reason;
  if (e.exitCode !== undefined) event.exitCode = e.exitCode;
  return JSON.stringify(event);
}

export function createSinkDispatcher(options: {
  readonly secrets: SecretReader;
  readonly logger: Logger;
  readonly fetch?: FetchLike;
  readonly retry?: RetryConfig;
  readonly timeoutMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}): SinkDispatcher {
  const retry = options.retry ?? DEFAULT_RETRY;
  const queues = new Map<string, { tail: Promise<void>; size: number }>();
  let idleWaiters: (() => void)[] = [];

  function settle(): void {
    if (queues.size > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  }

  async function post(
    url: string,
    body: string,
    headers: ReadonlyArray<readonly [string, string]>,
  ): Promise<void> {
    const outcome = await postWithRetry({ url, body, contentType: 'application/json', headers }, retry, {
      timeoutMs: options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.sleep ? { sleep: (ms: number) => options.sleep?.(ms) ?? Promise.resolve() } : {}),
    });
    if (!outcome.ok) {
      options.logger.warn('Sink event not delivered after retries', {
        sink: redactUrl(url),
        attempts: outcome.attempts,
        ...(outcome.status !== undefined ? { status: outcome.status } : {}),
      });
    }
  }

  return {
    deliver(action) {
      const bodies: string[] = [];
      for (const e of action.events) {
        const wrapped = wrapLine(action.source, sinkPayload(e));
        if (wrapped.ok) bodies.push(wrapped.value);
      }
      for (const sink of action.sinks) {
        const q = queues.get(sink.url) ?? { tail: Promise.resolve(), size: 0 };
        if (q.size + bodies.length > MAX_QUEUED_PER_SINK) {
          options.logger.warn('Sink queue full; events dropped', {
            sink: redactUrl(sink.url),
            dropped: bodies.length,
          });
          continue;
        }
        q.size += bodies.length;
        queues.set(sink.url, q);
        const headersSecret = sink.headersSecret;
        q.tail = q.tail.then(async () => {
          let headers: ReadonlyArray<readonly [string, string]> = [];
          if (headersSecret !== undefined) {
            const secret = await options.secrets.read(action.source.namespace);
            const text = secret.ok && secret.value !== null ? (secret.value.get(headersSecret) ?? '') : '';
            headers = parseHeaderLines(text).headers;
          }
          for (const body of bodies) {
            try {
              await post(sink.url, body, headers);
            } catch (error) {
              options.logger.warn('Sink delivery crashed', {
                sink: redactUrl(sink.url),
                error: String(error),
              });
            }
            q.size -= 1;
          }
          if (q.size === 0 && queues.get(sink.url) === q) {
            queues.delete(sink.url);
            settle();
          }
        });
      }
    },
    idle() {
      if (queues.size === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}
