import { appendFile } from 'node:fs/promises';
import type { Logger } from '../../shared/log.ts';
import type { Env } from './env.ts';
import { DOUBLE_WRAP_MESSAGE, type EventSource, type ParsedLine, wrapLine } from './envelope.ts';
import { headersFromSecretEnv } from './headers.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS, type FetchLike, postWithRetry } from './http.ts';
import { redactUrl, scrubUrl } from './redact.ts';
import type { RetryConfig } from './retry.ts';
import type { SinkConfig } from './sink-config.ts';

export interface EventSinkOptions {
  readonly sinks: readonly SinkConfig[];
  readonly source: EventSource;
  /** Where `headers_secret` variables are read from. */
  readonly env: Env;
  readonly retry: RetryConfig;
  readonly log: Logger;
  /** Prefix of every log message, e.g. `[supervisor]` or `[init]`. */
  readonly tag: string;
  /** Hard timeout of one HTTP attempt (default 5000 ms). */
  readonly requestTimeoutMs?: number;
  /** Queue bound per sink for ordinary events (default 1000 events). */
  readonly maxQueued?: number;
  /** Queue bound per sink in bytes for ordinary events (default 32 MiB). */
  readonly maxQueuedBytes?: number;
  /** After an http sink exhausts its retries, ordinary events are dropped unsent for this long (default 5000 ms). */
  readonly cooldownMs?: number;
  readonly fetch?: FetchLike;
  readonly now?: () => number;
}

export interface DeliverOptions {
  /** The line's JSON parse, when the caller already has it. */
  readonly parsed?: ParsedLine;
  /**
   * Essential events (lifecycle, file events) bypass the queue bounds and the cooldown of a failing sink; they are
   * lost only when the closing budget runs out.
   */
  readonly essential?: boolean;
  /** The request a server-mode turn's line answers: added to its envelope as `requestId` (see `wrapLine`). */
  readonly requestId?: string;
}

/** Per-sink delivery totals, reported by `close`. */
export interface SinkStats {
  readonly sink: string;
  readonly delivered: number;
  /** Sent but failed after all retries. */
  readonly failed: number;
  /** Never sent: queue full, sink cooling down, or still queued when the closing budget ran out. */
  readonly dropped: number;
}

/**
 * Delivers pod events to the http and file sinks (docs/design/reference-behaviour.md#sinks-and-the-envelope,
 * docs/design/reference-behaviour.md#http-sink-delivery), each wrapped once in the `{source, event}`
 * envelope. Delivery is asynchronous: `deliver` only queues, so a dead or slow sink never stalls the caller. Each
 * sink keeps its events in order. `stdout` sinks are a no-op here (the caller echoes bare lines itself).
 */
export interface EventSink {
  /**
   * Wraps `line` (a bare payload line) and queues it for every sink. Returns false, logs the double-wrap BUG line and
   * delivers nothing when the payload already is an envelope. Never throws.
   */
  deliver(line: string, options?: DeliverOptions): boolean;
  /** Queues a pod event object (lifecycle or file event) as an essential event. */
  deliverEvent(event: object): void;
  /** Number of http/file sinks that receive events. */
  readonly count: number;
  /**
   * Waits up to `budgetMs` for every queue to drain, then aborts what is still in flight and drops the rest. Further
   * `deliver` calls are ignored. Logs a summary for sinks that failed or dropped events. Never throws.
   */
  close(budgetMs: number): Promise<readonly SinkStats[]>;
}

interface Item {
  readonly body: string;
  readonly essential: boolean;
}

/** The default cooldown of a failing http sink. */
export const DEFAULT_SINK_COOLDOWN_MS = 5000;

/** Creates the delivery queues for `options.sinks`. */
export function createEventSink(options: EventSinkOptions): EventSink {
  const now = options.now ?? Date.now;
  const queues: SinkQueue[] = [];
  for (const sink of options.sinks) {
    if (sink.type === 'http') queues.push(httpQueue(sink, options, now));
    if (sink.type === 'file') queues.push(fileQueue(sink, options));
  }
  let closed = false;
  const deliver = (line: string, deliverOptions: DeliverOptions = {}): boolean => {
    const wrapped = wrapLine(options.source, line, deliverOptions.parsed, deliverOptions.requestId);
    if (!wrapped.ok) {
      options.log.error(`${options.tag} ${DOUBLE_WRAP_MESSAGE}`);
      return false;
    }
    if (closed) return true;
    const item = { body: wrapped.value, essential: deliverOptions.essential === true };
    for (const q of queues) q.enqueue(item);
    return true;
  };
  return {
    count: queues.length,
    deliver,
    deliverEvent: (event) => void deliver(JSON.stringify(event), { essential: true }),
    async close(budgetMs) {
      closed = true;
      const deadline = now() + Math.max(0, budgetMs);
      await Promise.all(queues.map((q) => q.drain(deadline, now)));
      const stats = queues.map((q) => q.stats());
      for (const s of stats) {
        if (s.failed > 0 || s.dropped > 0) {
          options.log.warn(`${options.tag} sink delivery incomplete: ${s.sink}`, {
            delivered: s.delivered,
            failed: s.failed,
            dropped: s.dropped,
          });
        }
      }
      return stats;
    },
  };
}

type Send = (
  body: string,
  essential: boolean,
  signal: AbortSignal,
) => Promise<'delivered' | 'failed' | 'dropped'>;

class SinkQueue {
  private readonly items: Item[] = [];
  private bytes = 0;
  private running = false;
  private idleWaiters: Array<() => void> = [];
  private readonly abort = new AbortController();
  private delivered = 0;
  private failed = 0;
  private dropped = 0;

  constructor(
    private readonly name: string,
    private readonly send: Send,
    private readonly maxQueued: number,
    private readonly maxBytes: number,
  ) {}

  enqueue(item: Item): void {
    if (this.abort.signal.aborted) {
      this.dropped += 1;
      return;
    }
    if (
      !item.essential &&
      (this.items.length >= this.maxQueued || this.bytes + item.body.length > this.maxBytes)
    ) {
      this.dropped += 1;
      return;
    }
    this.items.push(item);
    this.bytes += item.body.length;
    if (!this.running) void this.run();
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      for (let item = this.items.shift(); item !== undefined; item = this.items.shift()) {
        this.bytes -= item.body.length;
        if (this.abort.signal.aborted) {
          this.dropped += 1;
          continue;
        }
        let result: 'delivered' | 'failed' | 'dropped';
        try {
          result = await this.send(item.body, item.essential, this.abort.signal);
        } catch {
          result = 'failed';
        }
        if (result === 'delivered') this.delivered += 1;
        else if (result === 'failed') this.failed += 1;
        else this.dropped += 1;
      }
    } finally {
      this.running = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** Resolves once the queue is idle or `deadline` passes; then aborts in-flight work and counts leftovers. */
  async drain(deadline: number, now: () => number): Promise<void> {
    if (this.running || this.items.length > 0) {
      const idle = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, deadline - now()));
      });
      await Promise.race([idle, timeout]);
      clearTimeout(timer);
    }
    this.abort.abort();
    if (this.running) {
      // The in-flight send sees the abort at once; give it a moment to settle so its outcome is counted.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.idleWaiters.push(resolve)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, 200);
        }),
      ]);
      clearTimeout(timer);
    }
    this.dropped += this.items.length;
    this.items.length = 0;
    this.bytes = 0;
  }

  stats(): SinkStats {
    return { sink: this.name, delivered: this.delivered, failed: this.failed, dropped: this.dropped };
  }
}

function httpQueue(
  sink: SinkConfig & { type: 'http' },
  options: EventSinkOptions,
  now: () => number,
): SinkQueue {
  const shown = redactUrl(sink.url);
  const { headers, dropped } = headersFromSecretEnv(options.env, sink.headersSecret);
  if (dropped > 0) {
    options.log.warn(`${options.tag} dropped malformed header lines for an http sink`, {
      sink: shown,
      secret: sink.headersSecret,
      dropped,
    });
  }
  const cooldownMs = options.cooldownMs ?? DEFAULT_SINK_COOLDOWN_MS;
  let downUntil: number | undefined;
  const send: Send = async (body, essential, signal) => {
    if (!essential && downUntil !== undefined && now() < downUntil) return 'dropped';
    const outcome = await postWithRetry(
      { url: sink.url, body, contentType: 'application/json', headers },
      options.retry,
      {
        timeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
        signal,
        ...(options.fetch ? { fetch: options.fetch } : {}),
      },
    );
    if (outcome.ok) {
      if (downUntil !== undefined) options.log.info(`${options.tag} http sink recovered: ${shown}`);
      downUntil = undefined;
      return 'delivered';
    }
    if (outcome.aborted) return 'dropped';
    if (downUntil === undefined) {
      options.log.error(`${options.tag} http sink failed after retries: ${shown}`, {
        attempts: outcome.attempts,
        ...(outcome.status !== undefined ? { status: outcome.status } : {}),
        ...(outcome.error !== undefined ? { error: scrubUrl(outcome.error, sink.url) } : {}),
      });
    }
    downUntil = now() + cooldownMs;
    return 'failed';
  };
  return new SinkQueue(shown, send, options.maxQueued ?? 1000, options.maxQueuedBytes ?? 32 * 1024 * 1024);
}

function fileQueue(sink: SinkConfig & { type: 'file' }, options: EventSinkOptions): SinkQueue {
  let failing = false;
  const send: Send = async (body) => {
    try {
      await appendFile(sink.path, `${body}\n`, 'utf8');
      failing = false;
      return 'delivered';
    } catch (error) {
      if (!failing) {
        const message = error instanceof Error ? error.message : String(error);
        options.log.error(`${options.tag} file sink failed: ${message}`, { path: sink.path });
      }
      failing = true;
      return 'failed';
    }
  };
  return new SinkQueue(
    sink.path,
    send,
    options.maxQueued ?? 1000,
    options.maxQueuedBytes ?? 32 * 1024 * 1024,
  );
}
