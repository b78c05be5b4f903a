// Agent memory (issue 10 §3), the I/O half: reading a starting run's memory ConfigMap into its snapshot (with a
// SelfSubjectAccessReview proving it can be saved), and the
// `saveMemory` action (see the executor contract in src/reconcile/executor-contract.ts). The pure half is src/jobs/memory.ts
// and src/reconcile/agent/memory.ts.

import * as v from 'valibot';
import { ConfigMapSchema } from '../api/index.ts';
import { LABEL_MEMORY, MEMORY_KEY, utf8Length } from '../jobs/index.ts';
import {
  CONFIG_MAPS,
  createObject,
  describeKubeError,
  type EventNote,
  getObject,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isNotFound,
  type KubeError,
  replaceObject,
  type Transport,
} from '../kube/index.ts';
import { type Action, type MemoryObservation, REASON } from '../reconcile/index.ts';
import type { Logger } from '../shared/log.ts';
import { err, ok, type Result } from '../shared/result.ts';

/** Writes one save attempts at most before it gives up on a ConfigMap that keeps changing. */
export const MAX_MEMORY_WRITES = 5;

/** What the grant a memory needs is called in messages. */
const GRANT =
  'the controller needs configmaps get, create and update in this namespace (deploy/components/memory)';

export interface MemoryIo {
  readonly transport: Transport;
  readonly logger: Logger;
  readonly timeoutMs?: number | undefined;
  readonly fieldManager?: string | undefined;
}

/**
 * Reads the memory of a starting run: `MEMORY.md` of the ConfigMap and its resourceVersion; a missing ConfigMap (or
 * key) is an empty memory; 403 → `forbidden` (the run fails naming the grant). Other errors are returned (the
 * reconcile is retried).
 */
export async function readMemory(
  io: MemoryIo,
  namespace: string,
  configMap: string,
): Promise<Result<MemoryObservation, string>> {
  const got = await getObject(io.transport, CONFIG_MAPS, { namespace, name: configMap }, ConfigMapSchema, {
    timeoutMs: io.timeoutMs,
  });
  if (got.ok) {
    // Only ConfigMaps marked as memories: a definition must not read or write any ConfigMap of the namespace.
    if (got.value.metadata.labels?.[LABEL_MEMORY] !== 'true') return ok({ kind: 'notMemory' });
    const writable = await mayWrite(io, namespace, configMap);
    if (writable !== undefined) return ok({ kind: 'forbidden', message: writable });
    return ok({
      kind: 'read',
      content: got.value.data?.[MEMORY_KEY] ?? '',
      resourceVersion: got.value.metadata.resourceVersion,
    });
  }
  if (isNotFound(got.error)) {
    const writable = await mayWrite(io, namespace, configMap);
    return ok(
      writable !== undefined ? { kind: 'forbidden', message: writable } : { kind: 'read', content: '' },
    );
  }
  if (isForbidden(got.error)) return ok({ kind: 'forbidden', message: describeKubeError(got.error) });
  return err(`reading memory ConfigMap ${configMap}: ${describeKubeError(got.error)}`);
}

const ReviewSchema = v.looseObject({
  status: v.optional(v.looseObject({ allowed: v.optional(v.boolean()), reason: v.optional(v.string()) })),
});

/**
 * Whether the memory could be written back when the run ends: a SelfSubjectAccessReview of `update` on the memory
 * ConfigMap (the base Role may create and read ConfigMaps, for run inputs, but only deploy/components/memory lets the
 * controller update one). The reason when it may not; undefined when it may or the review could not be made (the
 * save then reports what went wrong).
 */
async function mayWrite(io: MemoryIo, namespace: string, configMap: string): Promise<string | undefined> {
  const r = await io.transport.request('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    timeoutMs: io.timeoutMs,
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { namespace, verb: 'update', resource: 'configmaps', name: configMap } },
    },
  });
  if (!r.ok) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(r.value.text);
  } catch {
    return undefined;
  }
  const parsed = v.safeParse(ReviewSchema, body);
  if (!parsed.success || parsed.output.status?.allowed !== false) return undefined;
  return `configmaps "${configMap}" is forbidden: the controller cannot update ConfigMaps in namespace "${namespace}"`;
}

type SaveMemory = Extract<Action, { kind: 'saveMemory' }>;

/**
 * Replaces `MEMORY.md` of the run's memory ConfigMap with the run's memory block (see the executor contract) and
 * returns the Events to record on the Agent. Never rejects, never throws.
 */
export async function saveMemory(action: SaveMemory, io: MemoryIo): Promise<EventNote[]> {
  const { namespace, configMap, content } = action;
  const where = { namespace, agent: action.ref.name, configMap };
  const opts = { timeoutMs: io.timeoutMs, fieldManager: io.fieldManager };
  const bytes = utf8Length(content);
  const notSaved = (why: string): EventNote[] => {
    io.logger.warn('Memory not saved', { ...where, why });
    return [
      {
        type: 'Warning',
        reason: REASON.memoryNotSaved,
        message: `Memory not saved to ConfigMap ${configMap}: ${why}`,
      },
    ];
  };
  const failed = (e: KubeError): EventNote[] =>
    notSaved(isForbidden(e) ? `${describeKubeError(e)}; ${GRANT}` : describeKubeError(e));
  const saved = (replaced: string, attempt: number): EventNote[] => {
    io.logger.info('Saved memory', { ...where, bytes, attempt });
    const notes: EventNote[] = [
      {
        type: 'Normal',
        reason: REASON.memorySaved,
        message: `Memory saved to ConfigMap ${configMap} (${bytes} bytes)`,
      },
    ];
    // The version replaced is not the one the run read: another writer came in between (last writer wins).
    const read = action.readVersion;
    if (attempt > 1 || (read !== undefined && read !== replaced)) {
      const since =
        read === undefined
          ? 'while this run saved its own'
          : read === ''
            ? 'after this run started (the ConfigMap did not exist then)'
            : `after this run read it (resourceVersion ${read})`;
      notes.push({
        type: 'Normal',
        reason: REASON.memoryOverwritten,
        message: `This run's memory replaced a concurrent update of ConfigMap ${configMap}, written ${since}: the last writer wins`,
      });
    }
    return notes;
  };

  for (let attempt = 1; attempt <= MAX_MEMORY_WRITES; attempt++) {
    const got = await getObject(
      io.transport,
      CONFIG_MAPS,
      { namespace, name: configMap },
      ConfigMapSchema,
      opts,
    );
    if (!got.ok && !isNotFound(got.error)) return failed(got.error);
    if (!got.ok) {
      // Not there: create it, owned by nothing (it outlives the run), labelled as a memory.
      const created = await createObject(
        io.transport,
        CONFIG_MAPS,
        namespace,
        {
          metadata: { name: configMap, namespace, labels: { [LABEL_MEMORY]: 'true' } },
          data: { [MEMORY_KEY]: content },
        },
        ConfigMapSchema,
        opts,
      );
      if (created.ok) return saved('', attempt);
      if (isAlreadyExists(created.error)) continue; // created meanwhile: read it and replace it
      return failed(created.error);
    }
    const current = got.value;
    if (current.metadata.labels?.[LABEL_MEMORY] !== 'true') {
      return notSaved(
        `it is not labelled ${LABEL_MEMORY}=true (only ConfigMaps marked as memories are written)`,
      );
    }
    if (current.data?.[MEMORY_KEY] === content) {
      io.logger.debug('Memory unchanged', where);
      return [];
    }
    if (current.immutable === true) return notSaved('the ConfigMap is immutable');
    const replaced = await replaceObject(
      io.transport,
      CONFIG_MAPS,
      { namespace, name: configMap },
      { ...current, data: { ...(current.data ?? {}), [MEMORY_KEY]: content } },
      ConfigMapSchema,
      opts,
    );
    if (replaced.ok) return saved(current.metadata.resourceVersion, attempt);
    // Changed (409) or deleted (404) since it was read: read it again.
    if (isConflict(replaced.error) || isNotFound(replaced.error)) continue;
    return failed(replaced.error);
  }
  return notSaved(`it kept changing while being written (${MAX_MEMORY_WRITES} attempts)`);
}
