// Watching from the CLI with the project's informer (LIST, then WATCH from its resourceVersion, re-watch on drops,
// re-list on 410): no polling. What a CLI must add is giving up: a refusal (401/403), a missing resource (404), or
// a first LIST that fails at all ends the watch with one clear error instead of retrying forever.
import type * as v from 'valibot';
import type { ResourceType, Transport } from '../kube/index.ts';
import { isForbidden, isNotFound, isUnauthorized, type KubeError, type KubeObject } from '../kube/index.ts';
import { type Change, type Clock, createInformer, type StoreReader } from '../runtime/index.ts';
import { createLogger } from '../shared/log.ts';
import { type CliError, kubeFailure } from './exit.ts';

export interface WatchOptions<T extends KubeObject> {
  readonly transport: Transport;
  readonly resource: ResourceType;
  readonly namespace: string | undefined;
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
  readonly schema: v.GenericSchema<unknown, T>;
  readonly clock: Clock;
  readonly random: () => number;
  /** How a failure names what was watched (`agents in namespace "x"`). */
  readonly subject: string;
  readonly onChange: (change: Change<T>) => void;
  /** The watch cannot go on; called once, after which nothing more is delivered. */
  readonly onFatal: (error: CliError) => void;
}

export interface Watch<T> {
  readonly store: StoreReader<T>;
  /** Resolves after the first LIST was applied. */
  readonly ready: Promise<void>;
  /** Stops watching; resolves when the informer has stopped. */
  stop(): Promise<void>;
}

/** Whether an error ends a CLI watch: always before the first LIST succeeded; after it, refusals and 404s only. */
export function isFatal(e: KubeError, listed: boolean): boolean {
  if (!listed) return e.kind !== 'aborted';
  return isUnauthorized(e) || isForbidden(e) || isNotFound(e);
}

/** Starts an informer and returns at once. */
export function startWatch<T extends KubeObject>(o: WatchOptions<T>): Watch<T> {
  const stop = new AbortController();
  let listed = false;
  let dead = false;
  const fatal = (e: KubeError): void => {
    if (dead || !isFatal(e, listed)) return;
    dead = true;
    stop.abort();
    o.onFatal(kubeFailure(e, o.subject));
  };
  const informer = createInformer<T>({
    transport: o.transport,
    resource: o.resource,
    namespace: o.namespace,
    labelSelector: o.labelSelector,
    fieldSelector: o.fieldSelector,
    schema: o.schema,
    clock: o.clock,
    random: o.random,
    logger: createLogger('error', () => {}),
    onChange: (c) => {
      if (!dead) o.onChange(c);
    },
    hooks: { onListError: fatal, onWatchError: fatal },
  });
  void informer.ready.then(() => {
    listed = true;
  });
  const running = informer.run(stop.signal);
  return {
    store: informer.store,
    ready: informer.ready,
    async stop() {
      stop.abort();
      await running;
    },
  };
}
