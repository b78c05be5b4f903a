// The rate limiter of the gateway's vendor keys (docs/design/gateway.md#rate-limits): one per key (namespace,
// vendor, key name of agent-secrets; never the key's value), holding its state (buckets.ts) and, when it has no
// capacity, the calls waiting for it in one queue per run, released round-robin across runs (a run with many calls
// waiting cannot starve one with a single call), each for at most `maxWaitMs`, after which it is refused (the app
// answers 429 with retry-after). The arithmetic is pure (buckets.ts); this is its shell: time, timers, promises.
import type { GatewayVendor } from '../../api/gateway.ts';
import type { GatewayLimiterMetrics } from '../../metrics/gateway-limits.ts';
import type { Logger } from '../../shared/log.ts';
import type { Observed } from './buckets.ts';
import {
  admitCall,
  type KeyLimits,
  type KeyState,
  learn,
  nextCapacity,
  settleCall,
  vendorHoldUntil,
  withLimits,
} from './buckets.ts';

export interface KeyId {
  readonly namespace: string;
  readonly vendor: GatewayVendor;
  /** The key's name in agent-secrets. */
  readonly key: string;
}

/** A call that was let go: tell the limiter what its answer said and how many tokens it used. */
export interface Ticket {
  /** What the vendor's answer said of the key's limits. */
  observe(observed: Observed): void;
  /** The call ended: its measured tokens (undefined: not known, the estimate stands; 0 for a refused call). */
  settle(tokens: number | undefined): void;
}

export type Admission =
  | { readonly kind: 'go'; readonly ticket: Ticket; readonly waitedMs: number }
  | { readonly kind: 'refused'; readonly retryAfterMs: number; readonly waitedMs: number };

export interface LimiterDeps {
  readonly now: () => number;
  readonly setTimer: (ms: number, fn: () => void) => () => void;
  /** The longest a call waits for capacity. */
  readonly maxWaitMs: number;
  readonly metrics: GatewayLimiterMetrics;
  readonly logger: Logger;
  /** The key will have no capacity until `until` (ms): published for the controller's admission. */
  readonly saturated: (id: KeyId, until: number) => void;
}

interface Waiter {
  readonly run: string;
  readonly tokens: number;
  readonly since: number;
  readonly resolve: (a: Admission) => void;
  cancel: () => void;
}

/** One key's limiter. */
class KeyLimiter {
  state: KeyState;
  /** The runs with calls waiting, in the order they began to wait; `cursor` is the next to be served. */
  private readonly order: string[] = [];
  private readonly queues = new Map<string, Waiter[]>();
  private cursor = 0;
  private cancelTimer: (() => void) | undefined;

  constructor(
    private readonly deps: LimiterDeps,
    readonly id: KeyId,
    limits: KeyLimits,
  ) {
    this.state = withLimits(undefined, limits, deps.now());
  }

  private get labels() {
    return { namespace: this.id.namespace, vendor: this.id.vendor };
  }

  waiting(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  admit(limits: KeyLimits, run: string, tokens: number, signal: AbortSignal): Promise<Admission> {
    const now = this.deps.now();
    this.state = withLimits(this.state, limits, now);
    const capacity = nextCapacity(this.state, now, tokens);
    if (this.order.length === 0 && capacity.at <= now) return Promise.resolve(this.letGo(tokens, now, now));
    // The vendor holds the key past the longest wait: refused at once.
    const held = vendorHoldUntil(this.state, now);
    if (held !== undefined && held > now + this.deps.maxWaitMs) {
      this.refusedMetrics(now, now);
      this.deps.saturated(this.id, held);
      return Promise.resolve({ kind: 'refused', retryAfterMs: held - now, waitedMs: 0 });
    }
    this.deps.metrics.throttled.inc({ ...this.labels, reason: 'queued' });
    return new Promise<Admission>((resolve) => {
      const waiter: Waiter = { run, tokens, since: now, resolve, cancel: () => undefined };
      const cancelDeadline = this.deps.setTimer(this.deps.maxWaitMs, () => this.expire(waiter));
      const onAbort = () => {
        this.remove(waiter);
        resolve({ kind: 'refused', retryAfterMs: 0, waitedMs: this.deps.now() - now });
      };
      signal.addEventListener('abort', onAbort, { once: true });
      waiter.cancel = () => {
        cancelDeadline();
        signal.removeEventListener('abort', onAbort);
      };
      let q = this.queues.get(run);
      if (q === undefined) {
        q = [];
        this.queues.set(run, q);
        this.order.push(run);
      }
      q.push(waiter);
      this.updateGauge();
      this.pump();
    });
  }

  private letGo(tokens: number, since: number, now: number): Admission {
    this.state = admitCall(this.state, now, tokens);
    let settled = false;
    const ticket: Ticket = {
      observe: (observed) => {
        const at = this.deps.now();
        this.state = learn(this.state, observed);
        const held = vendorHoldUntil(this.state, at);
        if (held !== undefined) this.deps.saturated(this.id, held);
        if (observed.blockedUntil !== undefined)
          this.deps.logger.info('The vendor limited a key', {
            ...this.labels,
            key: this.id.key,
            until: new Date(observed.blockedUntil).toISOString(),
          });
        this.pump();
      },
      settle: (actual) => {
        if (settled || actual === undefined) return;
        settled = true;
        this.state = settleCall(this.state, this.deps.now(), tokens, actual);
        this.pump();
      },
    };
    if (now > since) this.deps.metrics.wait.observe(this.labels, (now - since) / 1000);
    return { kind: 'go', ticket, waitedMs: now - since };
  }

  private refusedMetrics(since: number, now: number): void {
    this.deps.metrics.throttled.inc({ ...this.labels, reason: 'refused' });
    this.deps.metrics.wait.observe(this.labels, (now - since) / 1000);
  }

  private remove(w: Waiter): void {
    w.cancel();
    const q = this.queues.get(w.run);
    if (q === undefined) return;
    const i = q.indexOf(w);
    if (i >= 0) q.splice(i, 1);
    if (q.length === 0) this.dropRun(w.run);
    this.updateGauge();
    this.pump();
  }

  private dropRun(run: string): void {
    this.queues.delete(run);
    const i = this.order.indexOf(run);
    if (i < 0) return;
    this.order.splice(i, 1);
    if (i < this.cursor) this.cursor--;
    if (this.cursor >= this.order.length) this.cursor = 0;
  }

  private expire(w: Waiter): void {
    const now = this.deps.now();
    const retryAt = Math.max(nextCapacity(this.state, now, w.tokens).at, now + 1000);
    this.remove(w);
    this.refusedMetrics(w.since, now);
    this.deps.saturated(this.id, retryAt);
    this.deps.logger.info('A call waited its longest for its key', {
      ...this.labels,
      key: this.id.key,
      run: w.run,
      retryAfterMs: retryAt - now,
    });
    w.resolve({ kind: 'refused', retryAfterMs: retryAt - now, waitedMs: now - w.since });
  }

  /** Lets waiting calls go, one per run in turn, while the key has capacity; else waits for it. */
  private pump(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    while (this.order.length > 0) {
      if (this.cursor >= this.order.length) this.cursor = 0;
      const run = this.order[this.cursor] as string;
      const q = this.queues.get(run) as Waiter[];
      const head = q[0] as Waiter;
      const now = this.deps.now();
      const capacity = nextCapacity(this.state, now, head.tokens);
      if (capacity.at > now) {
        this.cancelTimer = this.deps.setTimer(capacity.at - now, () => this.pump());
        break;
      }
      q.shift();
      head.cancel();
      if (q.length === 0) this.dropRun(run);
      else this.cursor++;
      head.resolve(this.letGo(head.tokens, head.since, now));
    }
    this.updateGauge();
  }

  private updateGauge(): void {
    const now = this.deps.now();
    const saturated = this.order.length > 0 || vendorHoldUntil(this.state, now) !== undefined;
    this.deps.metrics.saturated.set({ ...this.labels, key: this.id.key }, saturated ? 1 : 0);
  }
}

/** The limiters of every key this replica has seen calls for. */
export interface RateLimiter {
  /**
   * Waits until the call may go (resolves at once when the key has capacity and nobody waits), or is refused
   * after `maxWaitMs` (or at once when the vendor holds the key longer). `run` is the fairness unit (the Agent),
   * `tokens` the call's estimate, `signal` the client going away.
   */
  admit(id: KeyId, limits: KeyLimits, run: string, tokens: number, signal: AbortSignal): Promise<Admission>;
  /** Calls waiting for `id` now. */
  waiting(id: KeyId): number;
}

const idKey = (id: KeyId) => `${id.namespace}/${id.vendor}/${id.key}`;

export function createRateLimiter(deps: LimiterDeps): RateLimiter {
  const keys = new Map<string, KeyLimiter>();
  return {
    admit(id, limits, run, tokens, signal) {
      let k = keys.get(idKey(id));
      if (k === undefined) {
        k = new KeyLimiter(deps, id, limits);
        keys.set(idKey(id), k);
      }
      return k.admit(limits, run, tokens, signal);
    },
    waiting: (id) => keys.get(idKey(id))?.waiting() ?? 0,
  };
}
