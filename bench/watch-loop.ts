import { setTimeout as delay } from 'node:timers/promises';
import type { KubeClient, KubeObject } from '../test/support/index.ts';

/** One object change as the benchmark's watch saw it; `relisted` marks objects replayed by a re-list. */
export interface SeenChange {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: KubeObject;
  readonly relisted: boolean;
}

/** Counters of one watch loop, for the report. */
export interface WatchStats {
  events: number;
  reconnects: number;
  relists: number;
}

/**
 * Keeps a watch on `collectionPath` open until `signal` aborts: a LIST first (its items are replayed as `relisted`
 * ADDED changes; the LIST resourceVersion starts the watch), then WATCH with bookmarks; a closed stream resumes
 * from the last resourceVersion seen; a 410 (expired resourceVersion) re-lists. `onReady` is called once, after the
 * first LIST: the watch resumes from that LIST's resourceVersion, so no change made after `onReady` can be missed.
 * `onChange` must be synchronous and cheap: it runs as the event is decoded, so the time it reads is its arrival.
 */
export async function watchLoop(
  client: KubeClient,
  collectionPath: string,
  signal: AbortSignal,
  onChange: (change: SeenChange) => void,
  onReady: () => void,
): Promise<WatchStats> {
  const stats: WatchStats = { events: 0, reconnects: 0, relists: 0 };
  let rv: string | undefined;
  let readySent = false;
  while (!signal.aborted) {
    try {
      if (rv === undefined) {
        const listed = await client.list(collectionPath);
        for (const object of listed.items) onChange({ type: 'ADDED', object, relisted: true });
        rv = listed.resourceVersion;
        stats.relists++;
      }
      if (!readySent) {
        readySent = true;
        onReady();
      }
      let expired = false;
      const end = await client.watch(
        collectionPath,
        { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 300, signal },
        (event) => {
          if (event.type === 'ERROR') {
            if (event.object.code === 410) expired = true;
            return;
          }
          const next = event.object.metadata.resourceVersion;
          if (next !== undefined) rv = next;
          if (event.type === 'BOOKMARK') return;
          stats.events++;
          onChange({ type: event.type, object: event.object, relisted: false });
        },
      );
      if (end.kind === 'aborted') break;
      if (expired || (end.kind === 'http-error' && end.status === 410)) rv = undefined;
      else if (end.kind === 'http-error') await delay(500, undefined, { signal }).catch(() => undefined);
      stats.reconnects++;
    } catch {
      if (signal.aborted) break;
      stats.reconnects++;
      await delay(500, undefined, { signal }).catch(() => undefined);
    }
  }
  return stats;
}
