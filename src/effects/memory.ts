// Agent memory (issue 10 §3), the I/O half: reading a starting run's memory ConfigMap into its snapshot (with a
// SelfSubjectAccessReview proving it can be saved), reading the ConfigMap a Succeeded run saves to, and the one write
// of the `saveMemory` action (see the executor contract in src/reconcile/executor-contract.ts). What is written, and
// what is told, is decided by the pure half: src/jobs/memory.ts and src/reconcile/agent/memory.ts.

import * as v from 'valibot';
import { type ConfigMap, ConfigMapSchema } from '../api/index.ts';
import { LABEL_MEMORY, MEMORY_KEY } from '../jobs/index.ts';
import {
  CONFIG_MAPS,
  createObject,
  describeKubeError,
  getObject,
  isForbidden,
  isNotFound,
  type KubeError,
  replaceObject,
  type Transport,
} from '../kube/index.ts';
import type { Action, MemoryConfigMapObservation, MemoryObservation } from '../reconcile/index.ts';
import type { Logger } from '../shared/log.ts';
import { err, ok, type Result } from '../shared/result.ts';

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
 * Reads the memory ConfigMap a Succeeded run saves to, for decide (`Snapshot.memorySave`): 404 → `absent`; a refusal
 * or any other failure → `failed` with the answer (decide gives up with `MemoryNotSaved`, as a save always did).
 * Never rejects.
 */
export async function observeMemoryConfigMap(
  io: MemoryIo,
  namespace: string,
  configMap: string,
): Promise<MemoryConfigMapObservation> {
  const got = await getObject(io.transport, CONFIG_MAPS, { namespace, name: configMap }, ConfigMapSchema, {
    timeoutMs: io.timeoutMs,
  });
  if (got.ok) return { kind: 'present', configMap: got.value };
  if (isNotFound(got.error)) return { kind: 'absent' };
  return { kind: 'failed', message: describeKubeError(got.error), forbidden: isForbidden(got.error) };
}

/**
 * The one write of a memory save, as decided (see the executor contract): POST the ConfigMap, or PUT it with the
 * resourceVersion `replace` names as precondition. Decides nothing: the answer goes back to decide.
 */
export function writeMemory(action: SaveMemory, io: MemoryIo): Promise<Result<ConfigMap, KubeError>> {
  const opts = { timeoutMs: io.timeoutMs, fieldManager: io.fieldManager };
  const { namespace, configMap } = action;
  if (action.replace === undefined)
    return createObject(io.transport, CONFIG_MAPS, namespace, { ...configMap }, ConfigMapSchema, opts);
  const body = {
    ...configMap,
    metadata: { ...configMap.metadata, resourceVersion: action.replace.resourceVersion },
  };
  return replaceObject(
    io.transport,
    CONFIG_MAPS,
    { namespace, name: configMap.metadata.name },
    body,
    ConfigMapSchema,
    opts,
  );
}
