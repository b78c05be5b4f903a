// The create → 409 AlreadyExists → GET flow of a run object whose name may be taken, written once
// (docs/design/kubernetes.md#patches-and-conflicts); what the object found means is the caller's to decide.
import type * as v from 'valibot';
import {
  createObject,
  describeKubeError,
  getObject,
  isAlreadyExists,
  isForbidden,
  isInvalid,
  isNotFound,
  type KubeError,
  KubeObjectSchema,
  type ResourceType,
  type Transport,
} from '../kube/index.ts';
import type { FoundObject } from '../reconcile/snapshot.ts';

/** The outcome of {@link createOrGet}: created, or the object that holds the name, or why neither. */
export type CreateOrGet<T> =
  | { readonly kind: 'created' }
  /** The name was taken: the object found under it, for the caller to judge. */
  | { readonly kind: 'found'; readonly value: T }
  /** The API server refused the create, or the object found cannot be read: the run fails. */
  | { readonly kind: 'refused'; readonly message: string }
  /** The object that held the name was gone by the time it was read (retried later). */
  | { readonly kind: 'stale'; readonly message: string }
  | { readonly kind: 'error'; readonly error: KubeError };

/** A refusal that retrying cannot fix: forbidden, invalid, or a 400. */
export const refusedByServer = (e: KubeError): boolean =>
  isForbidden(e) || isInvalid(e) || (e.kind === 'api' && e.code === 400);

/**
 * POSTs `body`; on a 409 AlreadyExists GETs the object of that name, parsed with `foundSchema`. `what` names the
 * object in messages (`ConfigMap ns/name`).
 */
export async function createOrGet<T>(
  t: Transport,
  rt: ResourceType,
  ref: { readonly namespace: string | undefined; readonly name: string },
  body: Readonly<Record<string, unknown>>,
  foundSchema: v.GenericSchema<unknown, T>,
  what: string,
  opts: { readonly timeoutMs?: number | undefined; readonly fieldManager: string },
): Promise<CreateOrGet<T>> {
  const r = await createObject(t, rt, ref.namespace, body, KubeObjectSchema, opts);
  if (r.ok) return { kind: 'created' };
  if (refusedByServer(r.error)) return { kind: 'refused', message: `${what}: ${describeKubeError(r.error)}` };
  if (!isAlreadyExists(r.error)) return { kind: 'error', error: r.error };
  const found = await getObject(t, rt, ref, foundSchema, opts);
  if (found.ok) return { kind: 'found', value: found.value };
  if (isNotFound(found.error)) return { kind: 'stale', message: `${what} vanished after a name collision` };
  if (isForbidden(found.error)) {
    return {
      kind: 'refused',
      message: `${what} exists and cannot be read: ${describeKubeError(found.error)}`,
    };
  }
  return { kind: 'error', error: found.error };
}

/** What decide reads of an object found under a taken name (see `FoundObject`). */
export function foundObject(
  key: string,
  metadata: {
    readonly uid?: string | undefined;
    readonly deletionTimestamp?: string | null | undefined;
    readonly labels?: Readonly<Record<string, string>> | null | undefined;
    readonly annotations?: Readonly<Record<string, string>> | null | undefined;
    readonly ownerReferences?:
      | readonly {
          readonly uid: string;
          readonly kind: string;
          readonly apiVersion: string;
          readonly name: string;
          readonly controller?: boolean | null | undefined;
        }[]
      | null
      | undefined;
  },
  data?: Readonly<Record<string, string>> | null,
): FoundObject {
  const owner = (metadata.ownerReferences ?? []).find((o) => o.controller === true);
  return {
    key,
    uid: metadata.uid ?? '',
    deleting: metadata.deletionTimestamp != null,
    ...(owner !== undefined
      ? { controller: { uid: owner.uid, kind: owner.kind, apiVersion: owner.apiVersion, name: owner.name } }
      : {}),
    labels: metadata.labels ?? {},
    annotations: metadata.annotations ?? {},
    ...(data != null ? { data } : {}),
  };
}
