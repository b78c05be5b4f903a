import type * as v from 'valibot';
import type { Result } from '../shared/result.ts';
import { decodeJson } from './decode.ts';
import type { KubeError } from './errors.ts';
import { apiVersionOf, type ResourceType, resourcePath } from './paths.ts';
import type { Transport } from './transport.ts';

/** Addresses one object: its namespace (namespaced types only) and name. */
export interface ObjectRef {
  readonly namespace?: string | undefined;
  readonly name: string;
}

export interface CallOptions {
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
}

/** GET one object, validated with `schema`. 404 comes back as an `api` error (see isNotFound). */
export async function getObject<T>(
  t: Transport,
  rt: ResourceType,
  ref: ObjectRef,
  schema: v.GenericSchema<unknown, T>,
  opts: CallOptions = {},
): Promise<Result<T, KubeError>> {
  const r = await t.request('GET', resourcePath(rt, ref), opts);
  return r.ok ? decodeJson(r.value.text, schema, `${rt.kind} ${ref.name}`) : r;
}

/** Options of a create: the field manager, and `dryRun` (the server's `dryRun=All`: checked, never stored). */
export interface CreateOptions extends CallOptions {
  readonly fieldManager?: string | undefined;
  /**
   * Asks the API server to run the whole create (authorization, admission, validation, the name-collision check)
   * without storing anything: a name taken is still `AlreadyExists`, a success answers the object it would make.
   */
  readonly dryRun?: boolean | undefined;
}

/**
 * POST a new object into `namespace` (apiVersion and kind are filled in from `rt` when missing). A name collision
 * is an `api` error with reason `AlreadyExists`.
 */
export async function createObject<T>(
  t: Transport,
  rt: ResourceType,
  namespace: string | undefined,
  body: Readonly<Record<string, unknown>>,
  schema: v.GenericSchema<unknown, T>,
  opts: CreateOptions = {},
): Promise<Result<T, KubeError>> {
  const full = { apiVersion: apiVersionOf(rt), kind: rt.kind, ...body };
  const { fieldManager, dryRun, ...call } = opts;
  const r = await t.request('POST', resourcePath(rt, { namespace }), {
    ...call,
    body: full,
    query: { fieldManager, ...(dryRun === true ? { dryRun: 'All' } : {}) },
  });
  return r.ok ? decodeJson(r.value.text, schema, `created ${rt.kind}`) : r;
}

/**
 * PUT a whole object. The body's `metadata.resourceVersion` is the precondition: a mismatch is a `Conflict`.
 */
export async function replaceObject<T>(
  t: Transport,
  rt: ResourceType,
  ref: ObjectRef,
  body: Readonly<Record<string, unknown>>,
  schema: v.GenericSchema<unknown, T>,
  opts: CallOptions & { readonly fieldManager?: string | undefined } = {},
): Promise<Result<T, KubeError>> {
  const full = { apiVersion: apiVersionOf(rt), kind: rt.kind, ...body };
  const r = await t.request('PUT', resourcePath(rt, ref), {
    ...opts,
    body: full,
    query: { fieldManager: opts.fieldManager },
  });
  return r.ok ? decodeJson(r.value.text, schema, `replaced ${rt.kind}`) : r;
}
