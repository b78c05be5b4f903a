import type * as v from 'valibot';
import type { Result } from '../shared/result.ts';
import { ok } from '../shared/result.ts';
import type { CallOptions, ObjectRef } from './crud.ts';
import { decodeJson } from './decode.ts';
import type { KubeError } from './errors.ts';
import { type ResourceType, resourcePath } from './paths.ts';
import type { Transport } from './transport.ts';

export const MERGE_PATCH = 'application/merge-patch+json';
export const JSON_PATCH = 'application/json-patch+json';

type JsonObject = Readonly<Record<string, unknown>>;

const isPlainObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * The body of a JSON merge patch, with `metadata.resourceVersion` set when a precondition is wanted (pure).
 * Guarantees: the caller's object is not mutated; other `metadata` fields in the patch are kept.
 */
export function withResourceVersion(patch: JsonObject, resourceVersion: string | undefined): JsonObject {
  if (resourceVersion === undefined) return patch;
  const meta = isPlainObject(patch.metadata) ? patch.metadata : {};
  return { ...patch, metadata: { ...meta, resourceVersion } };
}

export interface PatchOptions extends CallOptions {
  /** Precondition: the patch applies only to this resourceVersion, else `Conflict` (409). */
  readonly resourceVersion?: string | undefined;
  readonly fieldManager?: string | undefined;
  /** e.g. `status`. */
  readonly subresource?: string | undefined;
}

/**
 * JSON merge patch (RFC 7386: objects merge, arrays are replaced whole, `null` deletes). With `resourceVersion` the
 * write is guarded: a stale version fails with reason `Conflict`.
 */
export async function mergePatch<T>(
  t: Transport,
  rt: ResourceType,
  ref: ObjectRef,
  patch: JsonObject,
  schema: v.GenericSchema<unknown, T>,
  opts: PatchOptions = {},
): Promise<Result<T, KubeError>> {
  const r = await t.request('PATCH', resourcePath(rt, { ...ref, subresource: opts.subresource }), {
    signal: opts.signal,
    timeoutMs: opts.timeoutMs,
    body: withResourceVersion(patch, opts.resourceVersion),
    contentType: MERGE_PATCH,
    query: { fieldManager: opts.fieldManager },
  });
  return r.ok ? decodeJson(r.value.text, schema, `patched ${rt.kind}`) : r;
}

/**
 * Merge-patches the `/status` subresource with `{status}` (the server ignores everything else there). With
 * `resourceVersion` a stale write fails with `Conflict`.
 */
export function patchStatus<T>(
  t: Transport,
  rt: ResourceType,
  ref: ObjectRef,
  status: JsonObject,
  schema: v.GenericSchema<unknown, T>,
  opts: Omit<PatchOptions, 'subresource'> = {},
): Promise<Result<T, KubeError>> {
  return mergePatch(t, rt, ref, { status }, schema, { ...opts, subresource: 'status' });
}

/** One RFC 6902 operation. */
export type JsonPatchOp =
  | { readonly op: 'add' | 'replace' | 'test'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string }
  | { readonly op: 'move' | 'copy'; readonly from: string; readonly path: string };

/** JSON pointer escaping of one path segment (`~` → `~0`, `/` → `~1`). */
export const escapeJsonPointer = (segment: string): string =>
  segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** JSON patch; a failing `test` op comes back as `Invalid` (422). */
export async function jsonPatch<T>(
  t: Transport,
  rt: ResourceType,
  ref: ObjectRef,
  ops: readonly JsonPatchOp[],
  schema: v.GenericSchema<unknown, T>,
  opts: Omit<PatchOptions, 'resourceVersion'> = {},
): Promise<Result<T, KubeError>> {
  const r = await t.request('PATCH', resourcePath(rt, { ...ref, subresource: opts.subresource }), {
    signal: opts.signal,
    timeoutMs: opts.timeoutMs,
    body: ops,
    contentType: JSON_PATCH,
    query: { fieldManager: opts.fieldManager },
  });
  return r.ok ? decodeJson(r.value.text, schema, `patched ${rt.kind}`) : r;
}

export interface DeleteOptions extends CallOptions {
  /** Precondition: delete only this version (else `Conflict`). */
  readonly resourceVersion?: string | undefined;
  /** Precondition: delete only the object with this uid (else `Conflict`). */
  readonly uid?: string | undefined;
  /** Default `Background` (Jobs would otherwise orphan their pods). */
  readonly propagationPolicy?: 'Background' | 'Foreground' | 'Orphan' | undefined;
}

/** The DeleteOptions body sent with a DELETE (pure). */
export function deleteOptionsBody(opts: DeleteOptions): JsonObject {
  const preconditions = {
    ...(opts.resourceVersion !== undefined ? { resourceVersion: opts.resourceVersion } : {}),
    ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
  };
  return {
    kind: 'DeleteOptions',
    apiVersion: 'v1',
    propagationPolicy: opts.propagationPolicy ?? 'Background',
    ...(Object.keys(preconditions).length > 0 ? { preconditions } : {}),
  };
}

/**
 * DELETE one object with `propagationPolicy` (default Background) and optional resourceVersion/uid preconditions.
 * Guarantees: ok when the server accepted the deletion (200 or 202); 404 and `Conflict` are errors for the caller
 * to interpret.
 */
export async function deleteObject(
  t: Transport,
  rt: ResourceType,
  ref: ObjectRef,
  opts: DeleteOptions = {},
): Promise<Result<void, KubeError>> {
  const r = await t.request('DELETE', resourcePath(rt, ref), {
    signal: opts.signal,
    timeoutMs: opts.timeoutMs,
    body: deleteOptionsBody(opts),
  });
  return r.ok ? ok(undefined) : r;
}
