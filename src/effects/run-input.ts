// The I/O of a run's input ConfigMap (issue 10 §1): create it, and resolve a name collision (see the executor
// contract of `createRunInput` in src/reconcile/executor-contract.ts). What goes into it is pure (src/jobs/run-input.ts).
import * as v from 'valibot';
import { API_VERSION } from '../api/index.ts';
import { ANNOTATION_AGENT_UID, type InputConfigMapManifest } from '../jobs/index.ts';
import {
  CONFIG_MAPS,
  deleteObject,
  describeKubeError,
  isForbidden,
  isNotFound,
  type KubeError,
  ObjectMetaSchema,
  type Transport,
} from '../kube/index.ts';
import { createOrGet } from './create-or-get.ts';

/** How an input ConfigMap create ended. */
export type InputCreate =
  | { readonly kind: 'created' }
  /** It exists, is this run's and holds this input (a retried start). */
  | { readonly kind: 'exists' }
  /** One of an earlier Agent of the same name is in the way (garbage collection removes it), or it just went. */
  | { readonly kind: 'stale'; readonly message: string }
  /** The API server refused it, or the name is taken by something that is not this run's: the run fails. */
  | { readonly kind: 'refused'; readonly message: string }
  | { readonly kind: 'error'; readonly error: KubeError };

const FoundSchema = v.looseObject({
  metadata: ObjectMetaSchema,
  data: v.optional(v.nullable(v.record(v.string(), v.string()))),
});

function sameData(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/**
 * POSTs the run's input ConfigMap. On a name collision: this run's with the same data → exists; another Agent's
 * (an earlier Agent of the same name), or one being deleted → stale (retried later); this run's with other data (a
 * retried start whose memory changed; its Job, which alone mounts it, does not exist yet) or an orphaned run input
 * (no owner, our Agent-uid annotation) → deleted (uid precondition) and created again, once; anything else → refused.
 */
export async function createRunInput(
  t: Transport,
  input: InputConfigMapManifest,
  opts: { readonly timeoutMs?: number | undefined; readonly fieldManager: string },
): Promise<InputCreate> {
  const { namespace, name } = input.metadata;
  const what = `ConfigMap ${namespace}/${name}`;
  const ownerUid = input.metadata.ownerReferences[0].uid;
  for (let attempt = 0; ; attempt++) {
    const found = await createOrGet(
      t,
      CONFIG_MAPS,
      { namespace, name },
      { ...input },
      FoundSchema,
      what,
      opts,
    );
    if (found.kind !== 'found') return found;
    const meta = found.value.metadata;
    if (meta.deletionTimestamp != null) return { kind: 'stale', message: `${what} is being deleted` };
    const owner = (meta.ownerReferences ?? []).find((o) => o.controller === true);
    const ours = owner?.uid === ownerUid;
    if (ours && sameData(found.value.data ?? {}, input.data)) return { kind: 'exists' };
    // Another Agent of this name owns it: the garbage collector removes it with that Agent.
    if (owner !== undefined && !ours && owner.kind === 'Agent' && owner.apiVersion === API_VERSION) {
      return { kind: 'stale', message: `${what} of an earlier Agent of this name is still there` };
    }
    // This run's with other data (a retried start whose memory changed; no pod has mounted it, its Job does not
    // exist yet), or a run input left without owner (orphaned by a `--cascade=orphan` delete): replaced, once.
    const orphaned = owner === undefined && meta.annotations?.[ANNOTATION_AGENT_UID] !== undefined;
    if (ours || orphaned) {
      if (attempt > 0) return { kind: 'stale', message: `${what} keeps changing` };
      const deleted = await deleteObject(
        t,
        CONFIG_MAPS,
        { namespace, name },
        { uid: meta.uid, timeoutMs: opts.timeoutMs },
      );
      if (!deleted.ok && !isNotFound(deleted.error)) {
        if (isForbidden(deleted.error)) {
          return {
            kind: 'refused',
            message: `${what} is outdated and cannot be deleted: ${describeKubeError(deleted.error)}`,
          };
        }
        return { kind: 'error', error: deleted.error };
      }
      continue;
    }
    return { kind: 'refused', message: `${what} already exists and is not this run's` };
  }
}
