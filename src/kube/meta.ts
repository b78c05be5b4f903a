import * as v from 'valibot';

/** The fields of `metav1.OwnerReference`, defined once for both views of ObjectMeta. */
export const OWNER_REFERENCE_FIELDS = {
  apiVersion: v.string(),
  kind: v.string(),
  name: v.string(),
  uid: v.string(),
  controller: v.optional(v.boolean()),
  blockOwnerDeletion: v.optional(v.boolean()),
};

/**
 * The fields of `metav1.ObjectMeta` the controller reads, each with its type, defined once: the generic client's
 * {@link ObjectMetaSchema} below and the custom kinds' read-back view (`src/api/meta.ts`: identity fields required,
 * lists and maps defaulted, unknown fields dropped) are both built from them.
 */
export const OBJECT_META_FIELDS = {
  name: v.string(),
  generateName: v.string(),
  namespace: v.string(),
  uid: v.string(),
  resourceVersion: v.string(),
  generation: v.number(),
  creationTimestamp: v.string(),
  deletionTimestamp: v.string(),
  labels: v.record(v.string(), v.string()),
  annotations: v.record(v.string(), v.string()),
  finalizers: v.array(v.string()),
};

const F = OBJECT_META_FIELDS;

/**
 * The subset of `metav1.ObjectMeta` the generic client relies on. Unknown fields are kept (loose), so an object
 * validated here round-trips unchanged.
 */
export const ObjectMetaSchema = v.looseObject({
  name: v.optional(F.name),
  generateName: v.optional(F.generateName),
  namespace: v.optional(F.namespace),
  uid: v.optional(F.uid),
  resourceVersion: v.optional(F.resourceVersion),
  generation: v.optional(F.generation),
  creationTimestamp: v.optional(v.nullable(F.creationTimestamp)),
  deletionTimestamp: v.optional(v.nullable(F.deletionTimestamp)),
  labels: v.optional(v.nullable(F.labels)),
  annotations: v.optional(v.nullable(F.annotations)),
  finalizers: v.optional(v.nullable(F.finalizers)),
  ownerReferences: v.optional(v.nullable(v.array(v.looseObject(OWNER_REFERENCE_FIELDS)))),
});
export type ObjectMeta = v.InferOutput<typeof ObjectMetaSchema>;

/** Any Kubernetes object: `metadata` is required, everything else is kept as is. */
export const KubeObjectSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: ObjectMetaSchema,
});
export type KubeObject = v.InferOutput<typeof KubeObjectSchema>;

/** `metav1.ListMeta`. */
export const ListMetaSchema = v.looseObject({
  resourceVersion: v.optional(v.string()),
  continue: v.optional(v.string()),
  remainingItemCount: v.optional(v.number()),
});

/** A LIST response: items are validated later, one by one, by the caller's schema. */
export const ListSchema = v.looseObject({
  kind: v.optional(v.string()),
  metadata: v.optional(ListMetaSchema, {}),
  items: v.optional(v.nullable(v.array(v.unknown())), []),
});

/** `metav1.Status`, the body of every API error (and of an in-stream watch ERROR). */
export const StatusSchema = v.looseObject({
  kind: v.optional(v.string()),
  status: v.optional(v.string()),
  message: v.optional(v.string()),
  reason: v.optional(v.string()),
  code: v.optional(v.number()),
  details: v.optional(
    v.nullable(
      v.looseObject({
        name: v.optional(v.string()),
        group: v.optional(v.string()),
        kind: v.optional(v.string()),
        causes: v.optional(
          v.nullable(
            v.array(
              v.looseObject({
                reason: v.optional(v.string()),
                message: v.optional(v.string()),
                field: v.optional(v.string()),
              }),
            ),
          ),
        ),
      }),
    ),
  ),
  metadata: v.optional(v.nullable(ListMetaSchema)),
});
export type Status = v.InferOutput<typeof StatusSchema>;

/**
 * `namespace/name` for a namespaced object, `name` for a cluster-scoped one: the key used by stores and queues.
 * Objects without a name yield an empty name part.
 */
export function objectKey(obj: {
  readonly metadata: { readonly name?: string | undefined; readonly namespace?: string | undefined };
}): string {
  const name = obj.metadata.name ?? '';
  const ns = obj.metadata.namespace;
  return ns ? `${ns}/${name}` : name;
}

/** Splits a key made by {@link objectKey} back into its namespace (undefined when cluster-scoped) and name. */
export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
