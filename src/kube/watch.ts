import * as v from 'valibot';
import { apiError, isGone, isResourceVersionTooLarge, type KubeError } from './errors.ts';
import { type Status, StatusSchema } from './meta.ts';
import { apiVersionOf, type ResourceType, resourcePath, type SelectorOptions, watchQuery } from './paths.ts';
import type { Transport } from './transport.ts';

/** Largest accepted watch line (one object); the reference caps it at 4 MiB too. */
export const MAX_WATCH_LINE_BYTES = 4 * 1024 * 1024;
/**
 * Default idle limit. A quiet watch can be silent for its whole life: the API server sends no bookmark for a resource
 * that has not changed since its watch cache started, and Events have no watch cache at all. So every watch asks the
 * server to end it well before this (see {@link watchTimeoutSeconds}), and silence past it means the connection is
 * dead (a half-open connection, a stalled proxy).
 */
export const DEFAULT_WATCH_IDLE_MS = 90_000;

/** Splits a byte stream into lines. */
export interface LineDecoder {
  /**
   * Feeds one chunk; returns the complete, non-blank lines it finished (without the newline, `\r` stripped).
   * Chunks may split lines and multi-byte characters anywhere. A line longer than the limit is dropped and
   * reported as `overflow: true` (the rest of that line is skipped up to the next newline).
   */
  push(chunk: Uint8Array): { readonly lines: readonly string[]; readonly overflow: boolean };
  /** The unterminated tail (a last line without a newline), if any; resets the decoder. */
  flush(): string | undefined;
}

/** A line decoder that keeps at most `maxLineBytes` of an unfinished line (pure: no I/O). */
export function createLineDecoder(maxLineBytes = MAX_WATCH_LINE_BYTES): LineDecoder {
  const utf8 = new TextDecoder('utf-8');
  let parts: Uint8Array[] = [];
  let pending = 0;
  let skipping = false;
  const take = (): string => {
    const buf = new Uint8Array(pending);
    let at = 0;
    for (const p of parts) {
      buf.set(p, at);
      at += p.length;
    }
    parts = [];
    pending = 0;
    const text = utf8.decode(buf);
    return text.endsWith('\r') ? text.slice(0, -1) : text;
  };
  return {
    push(chunk) {
      const lines: string[] = [];
      let overflow = false;
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(0x0a, start);
        const end = nl < 0 ? chunk.length : nl;
        if (!skipping) {
          const piece = chunk.subarray(start, end);
          if (pending + piece.length > maxLineBytes) {
            overflow = true;
            parts = [];
            pending = 0;
            skipping = nl < 0;
          } else if (piece.length > 0) {
            parts.push(piece.slice());
            pending += piece.length;
          }
        }
        if (nl < 0) break;
        if (skipping) skipping = false;
        else if (pending > 0) {
          const line = take();
          if (line.trim() !== '') lines.push(line);
        }
        start = nl + 1;
      }
      return { lines, overflow };
    },
    flush() {
      skipping = false;
      if (pending === 0) return undefined;
      const line = take();
      return line.trim() === '' ? undefined : line;
    },
  };
}

/** What one watch line says. */
export type WatchLine =
  | {
      readonly kind: 'object';
      readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
      /** The raw object (at least `metadata` as an object); validate it with the caller's schema. */
      readonly object: Readonly<Record<string, unknown>>;
      readonly resourceVersion: string | undefined;
    }
  | { readonly kind: 'bookmark'; readonly resourceVersion: string }
  /** An in-stream ERROR; `gone` when it is the 410 "too old resource version" that demands a re-list. */
  | { readonly kind: 'error'; readonly status: Status; readonly gone: boolean }
  /** Anything else: not JSON, an unknown type, an object without metadata. */
  | { readonly kind: 'garbage'; readonly message: string };

const EventSchema = v.looseObject({
  type: v.string(),
  object: v.looseObject({
    metadata: v.optional(v.looseObject({ resourceVersion: v.optional(v.string()) })),
  }),
});

/** Classifies one watch line (pure). */
export function parseWatchLine(line: string): WatchLine {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return { kind: 'garbage', message: `not JSON: ${line.slice(0, 80)}` };
  }
  const ev = v.safeParse(EventSchema, raw);
  if (!ev.success) return { kind: 'garbage', message: 'not a watch event' };
  const { type, object } = ev.output;
  const rv = object.metadata?.resourceVersion || undefined;
  switch (type) {
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED':
      if (object.metadata === undefined)
        return { kind: 'garbage', message: `${type} event without metadata` };
      return { kind: 'object', type, object, resourceVersion: rv };
    case 'BOOKMARK':
      if (rv === undefined) return { kind: 'garbage', message: 'BOOKMARK without resourceVersion' };
      return { kind: 'bookmark', resourceVersion: rv };
    case 'ERROR': {
      const st = v.safeParse(StatusSchema, object);
      const status = st.success ? st.output : {};
      const gone = status.code === 410 || status.reason === 'Expired' || status.reason === 'Gone';
      return { kind: 'error', status, gone };
    }
    default:
      return { kind: 'garbage', message: `unknown event type ${type.slice(0, 80)}` };
  }
}

/**
 * Server-side watch lifetime: 60 s plus up to 20 s of jitter, below {@link DEFAULT_WATCH_IDLE_MS}, so a quiet watch
 * is ended cleanly by the server (and simply opened again) instead of being torn down as idle. (client-go picks
 * 5–10 min, but has no idle limit: it relies on HTTP/2 pings, which our HTTP/1.1 watches do not have.)
 */
export function watchTimeoutSeconds(random: number): number {
  return 60 + Math.floor(Math.min(Math.max(random, 0), 0.999999) * 20);
}

export interface WatchOptions extends SelectorOptions {
  readonly namespace?: string | undefined;
  /** Start after this resourceVersion. */
  readonly resourceVersion: string;
  /** Server-side lifetime (see {@link watchTimeoutSeconds}). */
  readonly timeoutSeconds: number;
  /** Silence after which the connection is torn down (default {@link DEFAULT_WATCH_IDLE_MS}). */
  readonly idleTimeoutMs?: number | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly maxLineBytes?: number | undefined;
}

/** An event delivered to the watch callback: an object change or a bookmark. */
export type WatchEvent = Extract<WatchLine, { kind: 'object' } | { kind: 'bookmark' }>;

/** How a watch ended. */
export type WatchEnd =
  /** The server ended the stream cleanly (timeoutSeconds): re-watch from the last RV, do not re-list. */
  | { readonly kind: 'closed'; readonly events: number }
  /** HTTP 410, in-stream ERROR 410, or a resourceVersion newer than the server's cache: re-list. */
  | { readonly kind: 'gone'; readonly message: string; readonly events: number }
  /** Anything else (network, idle timeout, other HTTP or in-stream errors): back off, re-watch from the last RV. */
  | { readonly kind: 'failed'; readonly error: KubeError; readonly events: number }
  /** The caller's signal fired. */
  | { readonly kind: 'aborted'; readonly events: number };

/**
 * One WATCH request from `resourceVersion` with bookmarks on. Calls `onEvent` synchronously for every object event
 * and bookmark, in order (objects get `apiVersion`/`kind` from `rt` when missing). Garbage lines are passed to
 * `onGarbage` and skipped. Never throws; resolves with how the stream ended.
 */
export async function watchOnce(
  t: Transport,
  rt: ResourceType,
  opts: WatchOptions,
  onEvent: (ev: WatchEvent) => void,
  onGarbage: (message: string) => void = () => {},
): Promise<WatchEnd> {
  const stop = new AbortController();
  const onOuterAbort = (): void => stop.abort();
  if (opts.signal?.aborted) return { kind: 'aborted', events: 0 };
  opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  const decoder = createLineDecoder(opts.maxLineBytes);
  const apiVersion = apiVersionOf(rt);
  let events = 0;
  let ended: WatchEnd | undefined;
  const handle = (line: string): void => {
    if (ended) return;
    const w = parseWatchLine(line);
    switch (w.kind) {
      case 'object':
        events++;
        onEvent({ ...w, object: { apiVersion, kind: rt.kind, ...w.object } });
        return;
      case 'bookmark':
        events++;
        onEvent(w);
        return;
      case 'error':
        ended = w.gone
          ? { kind: 'gone', message: w.status.message ?? 'resource version expired', events }
          : { kind: 'failed', error: apiError(w.status.code ?? 500, w.status, 'watch error'), events };
        stop.abort();
        return;
      case 'garbage':
        onGarbage(w.message);
        return;
    }
  };
  const r = await t.stream(resourcePath(rt, { namespace: opts.namespace }), {
    query: watchQuery({
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      resourceVersion: opts.resourceVersion,
      timeoutSeconds: opts.timeoutSeconds,
      allowWatchBookmarks: true,
    }),
    signal: stop.signal,
    idleTimeoutMs: opts.idleTimeoutMs ?? DEFAULT_WATCH_IDLE_MS,
    onData: (chunk) => {
      const { lines, overflow } = decoder.push(chunk);
      if (overflow) onGarbage('watch line over the size limit');
      for (const line of lines) handle(line);
    },
  });
  opts.signal?.removeEventListener('abort', onOuterAbort);
  if (ended) return ended;
  if (r.ok) {
    const tail = decoder.flush();
    if (tail !== undefined) handle(tail);
    return ended ?? { kind: 'closed', events };
  }
  if (r.error.kind === 'aborted') return { kind: 'aborted', events };
  if (isGone(r.error) || isResourceVersionTooLarge(r.error)) {
    return { kind: 'gone', message: r.error.kind === 'api' ? r.error.message : 'gone', events };
  }
  return { kind: 'failed', error: r.error, events };
}
