import * as v from 'valibot';
import type { Logger } from '../shared/log.ts';
import { createObject } from './crud.ts';
import { describeKubeError, isNotFound } from './errors.ts';
import { KubeObjectSchema } from './meta.ts';
import { mergePatch } from './patch.ts';
import { EVENTS } from './resources.ts';
import type { Transport } from './transport.ts';

/** The object an Event is about. */
export interface InvolvedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name?: string | undefined;
    readonly namespace?: string | undefined;
    readonly uid?: string | undefined;
    readonly resourceVersion?: string | undefined;
  };
}

export interface EventNote {
  readonly type: 'Normal' | 'Warning';
  /** UpperCamelCase, machine-readable (e.g. `JobCreated`); at most 128 characters. */
  readonly reason: string;
  /** Human-readable; cut to 1024 bytes. */
  readonly message: string;
}

export interface EventRecorder {
  /**
   * Records a core/v1 Event on `obj`. A repeat of the same (object, type, reason, message) increments the existing
   * Event's `count` and `lastTimestamp` with a merge patch instead of creating a new one. Never throws and never
   * rejects: failures are logged at warn level. Cluster-scoped objects get their Event in `default`.
   */
  record(obj: InvolvedObject, note: EventNote): Promise<void>;
}

export interface EventRecorderOptions {
  readonly transport: Transport;
  /** `source.component` and `reportingComponent`, e.g. `agent-controller`. */
  readonly component: string;
  /** `reportingInstance`, e.g. the pod name. */
  readonly instance: string;
  readonly now: () => number;
  readonly random: () => number;
  readonly logger: Logger;
  /** Distinct events remembered for aggregation (default 4096; the oldest is forgotten first). */
  readonly cacheSize?: number;
}

const MAX_MESSAGE_BYTES = 1024;

/** Cuts `text` to at most `max` UTF-8 bytes without splitting a character (pure). */
export function truncateUtf8(text: string, max: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= max) return text;
  let end = max;
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/** RFC 3339 with whole seconds, as `metav1.Time` serialises (pure). */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The name of a new Event for `objName` (pure): `<name>.<hex time><hex random>`, like client-go's. */
export function eventName(objName: string, nowMs: number, random: number): string {
  const suffix = `${Math.floor(nowMs).toString(16)}${Math.floor(random * 0xffffff)
    .toString(16)
    .padStart(6, '0')}`;
  return `${objName.slice(0, 200)}.${suffix}`;
}

/** The Event body for a first occurrence (pure). */
export function buildEvent(
  obj: InvolvedObject,
  note: EventNote,
  o: { name: string; namespace: string; component: string; instance: string; nowMs: number },
): Record<string, unknown> {
  const ts = formatTime(o.nowMs);
  return {
    metadata: { name: o.name, namespace: o.namespace },
    involvedObject: {
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      name: obj.metadata.name,
      ...(obj.metadata.namespace !== undefined ? { namespace: obj.metadata.namespace } : {}),
      ...(obj.metadata.uid !== undefined ? { uid: obj.metadata.uid } : {}),
      ...(obj.metadata.resourceVersion !== undefined
        ? { resourceVersion: obj.metadata.resourceVersion }
        : {}),
    },
    type: note.type,
    reason: note.reason.slice(0, 128),
    message: truncateUtf8(note.message, MAX_MESSAGE_BYTES),
    source: { component: o.component },
    reportingComponent: o.component,
    reportingInstance: o.instance,
    firstTimestamp: ts,
    lastTimestamp: ts,
    count: 1,
  };
}

const EventSchema = v.looseObject({ ...KubeObjectSchema.entries, count: v.optional(v.number()) });

/** Creates a recorder with an in-memory aggregation cache (per recorder, not shared). */
export function createEventRecorder(opts: EventRecorderOptions): EventRecorder {
  const cacheSize = opts.cacheSize ?? 4096;
  const seen = new Map<string, { name: string; namespace: string; count: number }>();
  const chains = new Map<string, Promise<void>>();

  const recordOnce = async (obj: InvolvedObject, note: EventNote, key: string): Promise<void> => {
    const namespace = obj.metadata.namespace || 'default';
    const now = opts.now();
    const prior = seen.get(key);
    if (prior) {
      const count = prior.count + 1;
      const r = await mergePatch(
        opts.transport,
        EVENTS,
        { namespace: prior.namespace, name: prior.name },
        { count, lastTimestamp: formatTime(now) },
        EventSchema,
      );
      if (r.ok) {
        seen.delete(key);
        seen.set(key, { ...prior, count: r.value.count ?? count });
        return;
      }
      seen.delete(key);
      if (!isNotFound(r.error)) {
        opts.logger.warn('Event aggregation failed', {
          reason: note.reason,
          error: describeKubeError(r.error),
        });
        return;
      }
    }
    const name = eventName(obj.metadata.name ?? 'unnamed', now, opts.random());
    const body = buildEvent(obj, note, {
      name,
      namespace,
      component: opts.component,
      instance: opts.instance,
      nowMs: now,
    });
    const r = await createObject(opts.transport, EVENTS, namespace, body, EventSchema);
    if (!r.ok) {
      opts.logger.warn('Event not recorded', {
        kind: obj.kind,
        name: obj.metadata.name,
        namespace,
        reason: note.reason,
        error: describeKubeError(r.error),
      });
      return;
    }
    seen.set(key, { name, namespace, count: 1 });
    while (seen.size > cacheSize) {
      const oldest = seen.keys().next();
      if (oldest.done) break;
      seen.delete(oldest.value);
    }
  };

  return {
    record(obj, note) {
      const key = JSON.stringify([
        obj.kind,
        obj.metadata.namespace ?? '',
        obj.metadata.name ?? '',
        obj.metadata.uid ?? '',
        note.type,
        note.reason,
        note.message,
      ]);
      const previous = chains.get(key) ?? Promise.resolve();
      const next = previous
        .then(() => recordOnce(obj, note, key))
        .catch((e: unknown) => {
          opts.logger.warn('Event recorder failed', {
            reason: note.reason,
            error: e instanceof Error ? e.message : String(e),
          });
        });
      chains.set(key, next);
      void next.then(() => {
        if (chains.get(key) === next) chains.delete(key);
      });
      return next;
    },
  };
}
