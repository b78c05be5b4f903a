import * as v from 'valibot';
import { OBJECT_META_FIELDS, OWNER_REFERENCE_FIELDS } from '../kube/meta.ts';
import { ok, type Result } from '../shared/result.ts';
import { dateTime, formatIssues, openapi, parseDefault } from './schema-kit.ts';

/** metav1.OwnerReference (unknown fields dropped). */
export const OwnerReferenceSchema = v.object(OWNER_REFERENCE_FIELDS);
export type OwnerReference = v.InferOutput<typeof OwnerReferenceSchema>;

const F = OBJECT_META_FIELDS;

/**
 * metav1.ObjectMeta (its fields are defined once, in `src/kube/meta.ts`) as the custom kinds read it back from the
 * API server, which always sets name, namespace, uid, resourceVersion and creationTimestamp on namespaced objects:
 * those are required; `labels`, `annotations`, `ownerReferences` and `finalizers` default to empty on parse.
 * Unknown fields are dropped.
 */
export const ObjectMetaSchema = v.object({
  name: F.name,
  namespace: F.namespace,
  uid: F.uid,
  resourceVersion: F.resourceVersion,
  generation: v.optional(F.generation),
  creationTimestamp: F.creationTimestamp,
  deletionTimestamp: v.optional(F.deletionTimestamp),
  labels: parseDefault(F.labels, {}),
  annotations: parseDefault(F.annotations, {}),
  ownerReferences: parseDefault(v.array(OwnerReferenceSchema), []),
  finalizers: parseDefault(F.finalizers, []),
});
export type ObjectMeta = v.InferOutput<typeof ObjectMetaSchema>;

/** Values of `Condition.status`. */
export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;
export type ConditionStatus = (typeof CONDITION_STATUSES)[number];

/** Pattern of metav1.Condition `type` (optional DNS prefix, then a qualified name). */
export const CONDITION_TYPE_PATTERN =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
/** Pattern of metav1.Condition `reason` (CamelCase identifier). */
export const CONDITION_REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/**
 * metav1.Condition, with the validation upstream declares for it (type pattern and max 316, status enum,
 * reason pattern 1..1024, message max 32768, observedGeneration >= 0, lastTransitionTime date-time).
 */
export const ConditionSchema = v.object({
  type: v.pipe(
    v.string(),
    v.regex(CONDITION_TYPE_PATTERN),
    v.maxLength(316),
    v.description('Type of condition in CamelCase or in foo.example.com/CamelCase.'),
  ),
  status: v.pipe(
    v.picklist(CONDITION_STATUSES),
    v.description('Status of the condition: True, False or Unknown.'),
  ),
  observedGeneration: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(0),
      v.description('The .metadata.generation the condition was set from.'),
    ),
  ),
  lastTransitionTime: dateTime('Last time the condition changed from one status to another.'),
  reason: v.pipe(
    v.string(),
    v.regex(CONDITION_REASON_PATTERN),
    v.minLength(1),
    v.maxLength(1024),
    v.description('Programmatic identifier of the reason for the last transition, in CamelCase.'),
  ),
  message: v.pipe(
    v.string(),
    v.maxLength(32768),
    v.description('Human-readable message with details about the transition; may be empty.'),
  ),
});
export type Condition = v.InferOutput<typeof ConditionSchema>;

/** A `conditions` list: a map-type list keyed by `type` (`x-kubernetes-list-type: map`). */
export const ConditionsSchema = v.pipe(
  v.array(ConditionSchema),
  openapi<Condition[]>({ listType: 'map', listMapKeys: ['type'] }),
  v.description('Latest observations of the run, one entry per type: Ready, Complete, Failed, StartBlocked.'),
);

/** The envelope of a LIST response; items stay unparsed so one bad item cannot spoil the page. */
export const ListEnvelopeSchema = v.object({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: parseDefault(
    v.object({
      resourceVersion: v.optional(v.string()),
      continue: v.optional(v.string()),
      remainingItemCount: v.optional(v.number()),
    }),
    {},
  ),
  items: v.nullish(v.array(v.unknown()), []),
});
export type ListEnvelope = v.InferOutput<typeof ListEnvelopeSchema>;

/** One LIST item that could not be parsed: its index, its name when readable, and why. */
export interface SkippedItem {
  readonly index: number;
  readonly name?: string;
  readonly error: string;
}

/** A parsed LIST page: good items, skipped items, and the list metadata (`resourceVersion`, `continue`). */
export interface ParsedList<T> {
  readonly items: T[];
  readonly skipped: SkippedItem[];
  readonly resourceVersion: string;
  /** Continue token for the next page; absent or empty on the last page. */
  readonly continue?: string;
}

function nameOf(u: unknown): string | undefined {
  if (typeof u !== 'object' || u === null) return undefined;
  const meta = (u as { metadata?: unknown }).metadata;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const name = (meta as { name?: unknown }).name;
  return typeof name === 'string' ? name : undefined;
}

/**
 * Parses a LIST response body. The envelope must be valid; each item is parsed with `parseItem`, and an item
 * that fails is reported in `skipped` while the rest are kept (docs/design/reference-behaviour.md#lenient-parsing: a
 * poison object never wedges a list).
 */
export function parseList<T>(
  body: unknown,
  parseItem: (u: unknown) => Result<T, string>,
  what = 'list',
): Result<ParsedList<T>, string> {
  const env = v.safeParse(ListEnvelopeSchema, body);
  if (!env.success) return { ok: false, error: `invalid ${what}: ${formatIssues(env.issues)}` };
  const items: T[] = [];
  const skipped: SkippedItem[] = [];
  env.output.items.forEach((raw, index) => {
    const res = parseItem(raw);
    if (res.ok) {
      items.push(res.value);
      return;
    }
    const name = nameOf(raw);
    skipped.push(name === undefined ? { index, error: res.error } : { index, name, error: res.error });
  });
  const meta = env.output.metadata;
  const base = { items, skipped, resourceVersion: meta.resourceVersion ?? '' };
  return ok(meta.continue ? { ...base, continue: meta.continue } : base);
}
