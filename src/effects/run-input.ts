// The I/O of a run's input ConfigMap (issue 10 §1): create it (a name taken is reported with the object found; whose
// it is and what to do about it is decided by src/reconcile/agent/found.ts), and delete one to be made again. What
// goes into it is pure (src/jobs/run-input.ts).
import * as v from 'valibot';
import type { InputConfigMapManifest } from '../jobs/index.ts';
import {
  CONFIG_MAPS,
  deleteObject,
  type KubeError,
  ObjectMetaSchema,
  type Transport,
} from '../kube/index.ts';
import { foundKey } from '../reconcile/agent/found.ts';
import type { FoundObject } from '../reconcile/snapshot.ts';
import type { Result } from '../shared/result.ts';
import { createOrGet, foundObject } from './create-or-get.ts';

/** How an input ConfigMap create ended. */
export type InputCreate =
  | { readonly kind: 'created' }
  /** The name was taken: the object found (owner, annotations, data), for decide to judge. */
  | { readonly kind: 'found'; readonly found: FoundObject }
  /** The object that held the name went before it could be read (looked at again later). */
  | { readonly kind: 'stale'; readonly message: string }
  /** The API server refused it, or the object found cannot be read: the run fails. */
  | { readonly kind: 'refused'; readonly message: string }
  | { readonly kind: 'error'; readonly error: KubeError };

const FoundSchema = v.looseObject({
  metadata: ObjectMetaSchema,
  data: v.optional(v.nullable(v.record(v.string(), v.string()))),
});

/** POSTs the run's input ConfigMap; on a name collision reads the object of that name back and reports it. */
export async function createRunInput(
  t: Transport,
  input: InputConfigMapManifest,
  opts: { readonly timeoutMs?: number | undefined; readonly fieldManager: string },
): Promise<InputCreate> {
  const { namespace, name } = input.metadata;
  const what = `ConfigMap ${namespace}/${name}`;
  const found = await createOrGet(t, CONFIG_MAPS, { namespace, name }, { ...input }, FoundSchema, what, opts);
  if (found.kind !== 'found') return found;
  const key = foundKey({ kind: 'createRunInput', configMap: input });
  return { kind: 'found', found: foundObject(key, found.value.metadata, found.value.data) };
}

/** Deletes the input ConfigMap `name` with the uid precondition (a run input decide chose to make again). */
export function deleteRunInput(
  t: Transport,
  namespace: string,
  name: string,
  uid: string,
  timeoutMs: number | undefined,
): Promise<Result<void, KubeError>> {
  return deleteObject(t, CONFIG_MAPS, { namespace, name }, { uid, timeoutMs });
}
