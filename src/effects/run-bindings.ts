// The I/O of a run's bindings (issue 9 §2, §6): create one (a name taken is reported with the object found), find a
// run's by its uid label, delete them, and the sweep's list of every run binding. The decisions about them are pure
// (src/reconcile/agent/found.ts, src/jobs/run-bindings.ts).
import * as v from 'valibot';
import {
  LABEL_RUN_NAMESPACE,
  LABEL_RUN_UID,
  type ListedBinding,
  RUN_BINDING_SELECTOR,
  type RunBindingManifest,
} from '../jobs/index.ts';
import {
  CLUSTER_ROLE_BINDINGS,
  deleteObject,
  describeKubeError,
  isForbidden,
  isNotFound,
  type KubeError,
  KubeObjectSchema,
  listAll,
  ROLE_BINDINGS,
  type Transport,
} from '../kube/index.ts';
import { describeBinding, foundKey } from '../reconcile/agent/found.ts';
import type { FoundObject } from '../reconcile/snapshot.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { createOrGet, foundObject } from './create-or-get.ts';

/** How a binding create ended. */
export type BindingCreate =
  | { readonly kind: 'created' }
  /** The name was taken: the object found, for decide to judge (src/reconcile/agent/found.ts). */
  | { readonly kind: 'found'; readonly found: FoundObject }
  /** The object that held the name went before it could be read (looked at again later). */
  | { readonly kind: 'stale'; readonly message: string }
  /** The API server refused it, or the object found cannot be read: the run fails with `message`. */
  | { readonly kind: 'refused'; readonly message: string }
  | { readonly kind: 'error'; readonly error: KubeError };

const rtOf = (b: { readonly kind: string }) =>
  b.kind === 'RoleBinding' ? ROLE_BINDINGS : CLUSTER_ROLE_BINDINGS;

/** POSTs one run binding; a name collision is reported with the object found (whose it is, decide judges). */
export async function createRunBinding(
  t: Transport,
  binding: RunBindingManifest,
  opts: { readonly timeoutMs?: number | undefined; readonly fieldManager: string },
): Promise<BindingCreate> {
  const rt = rtOf(binding);
  const namespace = binding.kind === 'RoleBinding' ? binding.metadata.namespace : undefined;
  const what = describeBinding(binding);
  const ref = { namespace, name: binding.metadata.name };
  const found = await createOrGet(t, rt, ref, { ...binding }, KubeObjectSchema, what, opts);
  if (found.kind !== 'found') return found;
  const key = foundKey({ kind: 'createRunBinding', binding });
  return { kind: 'found', found: foundObject(key, found.value.metadata) };
}

const BindingItemSchema = v.object({
  metadata: v.object({
    name: v.string(),
    namespace: v.optional(v.string()),
    labels: v.optional(v.nullable(v.record(v.string(), v.string()))),
  }),
});

async function listBindings(
  t: Transport,
  kind: 'RoleBinding' | 'ClusterRoleBinding',
  labelSelector: string,
  namespace: string | undefined,
): Promise<Result<ListedBinding[], KubeError>> {
  const rt = kind === 'RoleBinding' ? ROLE_BINDINGS : CLUSTER_ROLE_BINDINGS;
  const listed = await listAll(t, rt, BindingItemSchema, { namespace, labelSelector });
  if (!listed.ok) return listed;
  return ok(
    listed.value.items.map((i) => ({
      kind,
      namespace: i.metadata.namespace,
      name: i.metadata.name,
      labels: i.metadata.labels ?? {},
    })),
  );
}

/** Deletes one listed binding; 404 counts as deleted. */
export async function deleteBinding(
  t: Transport,
  b: ListedBinding,
  timeoutMs: number | undefined,
): Promise<Result<void, KubeError>> {
  const rt = b.kind === 'RoleBinding' ? ROLE_BINDINGS : CLUSTER_ROLE_BINDINGS;
  const r = await deleteObject(t, rt, { namespace: b.namespace, name: b.name }, { timeoutMs });
  return r.ok || isNotFound(r.error) ? ok(undefined) : r;
}

/** What a cleanup did: the bindings it deleted, and the kinds it was not allowed to look at. */
export interface BindingCleanup {
  readonly deleted: readonly ListedBinding[];
  /** One line per kind the controller may not list (403): bindings of that kind may be left behind. */
  readonly unverified: readonly string[];
}

/**
 * Deletes every binding of the run with this uid: the ClusterRoleBindings first (no garbage collector removes
 * them), then the RoleBindings of its namespace (owned by the Agent: garbage-collected with it in any case). A kind
 * the controller may not list (403) is skipped and reported, never retried forever: a deployment without the
 * run-rbac grants has no bindings to remove, and an Agent must never be held by its finalizer for good. Any other
 * failure stops it (a retry lists again).
 */
export async function deleteRunBindings(
  t: Transport,
  namespace: string,
  uid: string,
  timeoutMs: number | undefined,
): Promise<Result<BindingCleanup, KubeError>> {
  const selector = `${LABEL_RUN_UID}=${uid}`;
  const deleted: ListedBinding[] = [];
  const unverified: string[] = [];
  for (const [kind, ns] of [
    ['ClusterRoleBinding', undefined],
    ['RoleBinding', namespace],
  ] as const) {
    const listed = await listBindings(t, kind, selector, ns);
    if (!listed.ok) {
      if (isForbidden(listed.error)) {
        unverified.push(`${kind}s ${selector} cannot be listed: ${describeKubeError(listed.error)}`);
        continue;
      }
      return listed;
    }
    for (const b of listed.value) {
      const r = await deleteBinding(t, b, timeoutMs);
      if (!r.ok) {
        if (isForbidden(r.error)) {
          unverified.push(`${kind} ${b.name} cannot be deleted: ${describeKubeError(r.error)}`);
          continue;
        }
        return err(r.error);
      }
      deleted.push(b);
    }
  }
  return ok({ deleted, unverified });
}

/**
 * Every run ClusterRoleBinding the sweep looks at: all of them (`namespace` undefined: the controller manages every
 * namespace), or those of the runs of one namespace.
 */
export function listRunClusterBindings(
  t: Transport,
  namespace: string | undefined,
): Promise<Result<ListedBinding[], KubeError>> {
  const selector =
    namespace === undefined
      ? RUN_BINDING_SELECTOR
      : `${RUN_BINDING_SELECTOR},${LABEL_RUN_NAMESPACE}=${namespace}`;
  return listBindings(t, 'ClusterRoleBinding', selector, undefined);
}
