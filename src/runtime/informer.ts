import * as v from 'valibot';
import { describeKubeError, type KubeError } from '../kube/errors.ts';
import { listAll } from '../kube/list.ts';
import { type KubeObject, KubeObjectSchema, objectKey } from '../kube/meta.ts';
import type { ResourceType } from '../kube/paths.ts';
import type { Transport } from '../kube/transport.ts';
import { DEFAULT_WATCH_IDLE_MS, type WatchEvent, watchOnce, watchTimeoutSeconds } from '../kube/watch.ts';
import type { Logger } from '../shared/log.ts';
import type { Result } from '../shared/result.ts';
import { err, ok } from '../shared/result.ts';
import { type BackoffPolicy, DEFAULT_BACKOFF } from './backoff.ts';
import type { Clock } from './clock.ts';
import { anySignal } from './signals.ts';
import { type Change, Store, type StoreReader } from './store.ts';
import {
  closedTooSoon,
  INITIAL_WATCHER_STATE,
  type ListReason,
  nextWatcherStep,
  type WatcherOutcome,
  type WatcherState,
  type WatcherStep,
} from './watcher.ts';

/** Observability hooks (metrics); all optional, all synchronous, must not throw. */
export interface InformerHooks {
  /** A LIST starts (initial, after a 410, on request, or retrying a failed LIST). */
  readonly onList?: (reason: ListReason) => void;
  /**
   * A WATCH connects after one was lost: the watch before it failed (network, idle timeout, an error answer), was
   * ended by the server within a second without an event, or a LIST failed. A watch the server ended on schedule
   * (every minute or so), the restart after a requested resync() and the re-list after a 410 (counted by onList)
   * are not reconnects.
   */
  readonly onReconnect?: () => void;
  readonly onListError?: (error: KubeError) => void;
  readonly onWatchError?: (error: KubeError) => void;
}

export interface InformerOptions<T extends KubeObject> {
  readonly transport: Transport;
  readonly resource: ResourceType;
  /** Namespace to watch; undefined = all namespaces (or a cluster-scoped type). */
  readonly namespace?: string | undefined;
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
  /** Validates every object read; invalid ones are logged and skipped. Default: any object with metadata. */
  readonly schema?: v.GenericSchema<unknown, T>;
  readonly clock: Clock;
  /** Uniform [0, 1): backoff jitter and watch timeouts. */
  readonly random: () => number;
  readonly logger: Logger;
  /** LIST page size (default 500). */
  readonly pageSize?: number;
  /** Watch idle limit (default 90 000 ms). */
  readonly idleTimeoutMs?: number;
  /** Server-side watch lifetime (default 60 s + up to 20 s jitter); at most 90% of the idle limit (and 1 s). */
  readonly watchTimeoutSeconds?: (random: number) => number;
  readonly backoff?: BackoffPolicy;
  /** Receives every change to the cache, in order, synchronously; must not throw. */
  readonly onChange?: (change: Change<T>) => void;
  readonly hooks?: InformerHooks;
}

/** A summary of one completed LIST. */
export interface ListSummary {
  readonly items: number;
  readonly resourceVersion: string;
}

export interface Informer<T extends KubeObject> {
  readonly store: StoreReader<T>;
  /** Resolves after the first LIST was applied to the store. */
  readonly ready: Promise<void>;
  /**
   * Runs LIST + WATCH until `signal` aborts (then resolves). Call once. Guarantees: the store holds the state of the
   * last LIST plus every event after it; a 410 re-lists (paginated) and replaces the store; any other failure backs
   * off and re-watches from the last resourceVersion without re-listing.
   */
  run(signal: AbortSignal): Promise<void>;
  /**
   * Forces a fresh paginated LIST now (the periodic poll): the current watch is stopped, the store replaced (changes
   * emitted), and watching resumes from the new list's resourceVersion. Resolves with the outcome of a LIST started
   * after this call; `aborted` when the informer is not running.
   */
  resync(): Promise<Result<ListSummary, KubeError>>;
  /** The last resourceVersion seen, if any. */
  resourceVersion(): string | undefined;
}

/** Creates an informer; nothing happens until `run`. */
export function createInformer<T extends KubeObject>(opts: InformerOptions<T>): Informer<T> {
  const schema = (opts.schema ?? KubeObjectSchema) as v.GenericSchema<unknown, T>;
  const store = new Store<T>();
  const policy = opts.backoff ?? DEFAULT_BACKOFF;
  const hooks = opts.hooks ?? {};
  const log = opts.logger.with({ resource: opts.resource.plural, namespace: opts.namespace ?? '*' });
  const emit = (c: Change<T>): void => opts.onChange?.(c);
  let running = false;
  let watches = 0;
  const idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_WATCH_IDLE_MS;
  const longestWatch = longestWatchSeconds(idleTimeoutMs);
  const selectors = {
    namespace: opts.namespace,
    labelSelector: opts.labelSelector,
    fieldSelector: opts.fieldSelector,
  };
  let rv: string | undefined;
  let waiters: Array<(r: Result<ListSummary, KubeError>) => void> = [];
  /** Aborts the current watch or backoff sleep when a resync is requested. */
  const resyncs = createInterrupter();
  /** The last watch broke, or a LIST failed: the next watch is a reconnect (also after a resync). */
  let lostWatch = false;

  const list = async (reason: ListReason, signal: AbortSignal): Promise<WatcherOutcome | undefined> => {
    const served = waiters;
    waiters = [];
    hooks.onList?.(reason);
    const r = await listIntoStore(opts, store, schema, log, signal);
    if (!r.ok) {
      for (const w of served) w(r);
      if (signal.aborted) return undefined;
      hooks.onListError?.(r.error);
      log.warn('List failed', { reason, error: describeKubeError(r.error) });
      // The API server could not be reached: the watch that follows is a reconnect, even after a requested resync
      // (a poll's re-list that ran into an API-server restart).
      lostWatch = true;
      return { kind: 'listFailed', error: r.error };
    }
    // The store is replaced and its changes emitted in one synchronous step: `ready` (the store's first sync)
    // resolves its waiters in a later microtask, after the first list's changes went out, never between.
    const changes = store.replace(r.value.items);
    const { pages, summary } = r.value;
    rv = summary.resourceVersion;
    log.debug('Listed', { reason, items: summary.items, pages, resourceVersion: rv });
    for (const c of changes) emit(c);
    for (const w of served) w(ok(summary));
    return { kind: 'listed', resourceVersion: summary.resourceVersion };
  };

  const applyEvent = (ev: WatchEvent): void => {
    if (ev.resourceVersion !== undefined) rv = ev.resourceVersion;
    const effect = applyWatchEvent(store, schema, ev);
    if (effect.kind === 'change') emit(effect.change);
    else if (effect.kind === 'invalid')
      log.warn('Skipped invalid object', { name: effect.name, error: effect.error });
  };

  const watch = async (from: string, signal: AbortSignal): Promise<WatcherOutcome | undefined> => {
    if (watches++ > 0 && lostWatch) hooks.onReconnect?.();
    lostWatch = false;
    rv = from;
    const started = opts.clock.now();
    const timeoutSeconds = Math.min(
      (opts.watchTimeoutSeconds ?? watchTimeoutSeconds)(opts.random()),
      longestWatch,
    );
    const end = await resyncs.during(signal, (interruptible) =>
      watchOnce(
        opts.transport,
        opts.resource,
        { ...selectors, resourceVersion: from, timeoutSeconds, idleTimeoutMs, signal: interruptible },
        applyEvent,
        (message) => log.warn('Skipped watch line', { error: message }),
      ),
    );
    const durationMs = opts.clock.now() - started;
    if (end.kind === 'aborted') return signal.aborted ? undefined : { kind: 'resyncRequested' };
    // A server or proxy that keeps ending watches at once is losing them too (the watcher backs off from it).
    if (closedTooSoon(end, durationMs)) lostWatch = true;
    if (end.kind === 'failed') {
      lostWatch = true;
      hooks.onWatchError?.(end.error);
      log.info('Watch failed, resuming from the last resourceVersion', {
        resourceVersion: rv,
        error: describeKubeError(end.error),
      });
    } else if (end.kind === 'gone') {
      log.info('Watch expired, re-listing', { message: end.message });
    }
    return { kind: 'watchEnded', end, resourceVersion: rv ?? from, durationMs };
  };

  const execute = async (step: WatcherStep, signal: AbortSignal): Promise<WatcherOutcome | undefined> => {
    if (signal.aborted) return undefined;
    if (step.kind !== 'list' && waiters.length > 0) return { kind: 'resyncRequested' };
    switch (step.kind) {
      case 'list':
        return list(step.reason, signal);
      case 'watch':
        return watch(step.resourceVersion, signal);
      case 'sleep': {
        const slept = await resyncs.during(signal, (interruptible) =>
          opts.clock.sleep(step.ms, interruptible),
        );
        if (signal.aborted) return undefined;
        if (!slept) return { kind: 'resyncRequested' };
        return execute(step.next, signal);
      }
    }
  };

  const informer: Informer<T> = {
    store,
    ready: store.ready,
    async run(signal) {
      if (running) throw new Error('informer already running');
      running = true;
      let state: WatcherState = INITIAL_WATCHER_STATE;
      let outcome: WatcherOutcome | undefined = { kind: 'start' };
      try {
        while (outcome !== undefined && !signal.aborted) {
          const next = nextWatcherStep(state, outcome, opts.clock.now(), opts.random(), policy);
          state = next.state;
          outcome = await execute(next.step, signal);
        }
      } finally {
        running = false;
        const pending = waiters;
        waiters = [];
        for (const w of pending) w(err({ kind: 'aborted', message: 'informer stopped' }));
      }
    },
    resync() {
      if (!running) return Promise.resolve(err({ kind: 'aborted', message: 'informer not running' }));
      return new Promise((resolve) => {
        waiters.push(resolve);
        resyncs.interrupt();
      });
    },
    resourceVersion: () => rv,
  };
  return informer;
}

/**
 * LISTs the informer's objects (paginated; unchanged ones reused from the store), without their managedFields;
 * objects that fail the schema are logged and left out. Answers the objects, the pages read and the list's summary;
 * the caller replaces the store's content with them (in the same synchronous step as emitting the changes).
 */
async function listIntoStore<T extends KubeObject>(
  opts: InformerOptions<T>,
  store: Store<T>,
  schema: v.GenericSchema<unknown, T>,
  log: Logger,
  signal: AbortSignal,
): Promise<Result<{ items: T[]; pages: number; summary: ListSummary }, KubeError>> {
  const r = await listAll(opts.transport, opts.resource, schema, {
    namespace: opts.namespace,
    labelSelector: opts.labelSelector,
    fieldSelector: opts.fieldSelector,
    limit: opts.pageSize,
    signal,
    reuse: (raw) => cachedIfUnchanged(store, raw),
  });
  if (!r.ok) return r;
  for (const bad of r.value.invalid)
    log.warn('Skipped invalid object', { name: bad.name, ns: bad.namespace, error: bad.message });
  const summary = { items: r.value.items.length, resourceVersion: r.value.resourceVersion };
  return ok({ items: r.value.items.map(stripManagedFields), pages: r.value.pages, summary });
}

/** The server ends each watch before the idle limit could (pure): at most 90% of it, and at least 1 s. */
export function longestWatchSeconds(idleTimeoutMs: number): number {
  return Math.max(1, Math.floor((0.9 * idleTimeoutMs) / 1000));
}

/** Runs one thing at a time (a watch, a backoff sleep) so that a requested resync can cut it short. */
export interface Interrupter {
  /** Runs `fn` with a signal that fires when `signal` does or on {@link interrupt} while `fn` runs. */
  during<R>(signal: AbortSignal, fn: (signal: AbortSignal) => Promise<R>): Promise<R>;
  /** Aborts what runs now; does nothing between runs. */
  interrupt(): void;
}

export function createInterrupter(): Interrupter {
  let current: AbortController | undefined;
  return {
    async during(signal, fn) {
      const own = new AbortController();
      current = own;
      const both = anySignal(signal, own.signal);
      try {
        return await fn(both.signal);
      } finally {
        both.dispose();
        current = undefined;
      }
    },
    interrupt: () => current?.abort(),
  };
}

/**
 * The cached object for a listed raw object with the cached one's resourceVersion, reused instead of parsing the
 * raw one again; undefined when not cached, changed, or without a resourceVersion.
 */
export function cachedIfUnchanged<T extends KubeObject>(
  store: StoreReader<T>,
  raw: Readonly<Record<string, unknown>>,
): T | undefined {
  const meta = raw.metadata;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const m = meta as Record<string, unknown>;
  const cached = store.get(rawKey(raw));
  return cached !== undefined &&
    typeof m.resourceVersion === 'string' &&
    cached.metadata.resourceVersion === m.resourceVersion
    ? cached
    : undefined;
}

/** What one watch event did to the cache: a change to emit, an object skipped as invalid, or nothing. */
export type EventEffect<T> =
  | { readonly kind: 'change'; readonly change: Change<T> }
  | { readonly kind: 'invalid'; readonly name: string; readonly error: string }
  | { readonly kind: 'none' };

/**
 * Applies one watch event to the store. A bookmark changes nothing. DELETED removes the object, by its raw key when
 * it fails the schema, and reports its last state (the event's, else the cached one) when it was cached. ADDED and
 * MODIFIED store the object without its managedFields when it passes the schema; otherwise it is skipped.
 */
export function applyWatchEvent<T extends KubeObject>(
  store: Store<T>,
  schema: v.GenericSchema<unknown, T>,
  ev: WatchEvent,
): EventEffect<T> {
  if (ev.kind === 'bookmark') return { kind: 'none' };
  const parsed = schemaParse(schema, ev.object);
  if (ev.type === 'DELETED') {
    const key = parsed.ok ? objectKey(parsed.value) : rawKey(ev.object);
    const old = store.delete(key);
    const last = parsed.ok ? parsed.value : old;
    if (old === undefined || last === undefined) return { kind: 'none' };
    return { kind: 'change', change: { type: 'deleted', object: last } };
  }
  if (!parsed.ok) return { kind: 'invalid', name: rawKey(ev.object), error: parsed.error };
  return { kind: 'change', change: store.upsert(stripManagedFields(parsed.value)) };
}

/**
 * Drops `metadata.managedFields` before caching (as client-go's TransformStripManagedFields does): they are often
 * the larger part of a small object, and nothing reads them from a cache.
 */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  if (!Object.hasOwn(obj.metadata, 'managedFields')) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

function schemaParse<T>(schema: v.GenericSchema<unknown, T>, value: unknown): Result<T, string> {
  const r = v.safeParse(schema, value);
  return r.success ? ok(r.output) : err(r.issues[0]?.message ?? 'invalid');
}

function rawKey(obj: Readonly<Record<string, unknown>>): string {
  const meta = obj.metadata;
  if (typeof meta !== 'object' || meta === null) return '';
  const m = meta as Record<string, unknown>;
  const name = typeof m.name === 'string' ? m.name : '';
  return typeof m.namespace === 'string' && m.namespace !== '' ? `${m.namespace}/${name}` : name;
}
