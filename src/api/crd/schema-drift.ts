// What an installed CRD lacks compared with the one this build generates: the fields this version reads or writes
// that the API server would prune (an older CRD, or the reference system's own, still installed). Pure.
import * as v from 'valibot';
import type { CustomKind } from '../group.ts';
import { buildCrd } from './build-crd.ts';
import type { JsonSchemaProps } from './openapi.ts';

/** One node of an installed structural schema, as far as the comparison reads it. */
const InstalledNode = v.looseObject({
  properties: v.optional(v.record(v.string(), v.unknown())),
  items: v.optional(v.unknown()),
  additionalProperties: v.optional(v.unknown()),
  'x-kubernetes-preserve-unknown-fields': v.optional(v.boolean()),
});

const InstalledCrd = v.looseObject({
  spec: v.looseObject({
    versions: v.array(
      v.looseObject({
        name: v.string(),
        schema: v.optional(v.looseObject({ openAPIV3Schema: v.optional(v.unknown()) })),
      }),
    ),
  }),
});

/**
 * Field paths (`status.conditions`, `spec.parameters.*`, `spec.tools[].name`) present in `ours` but absent from
 * `installed`, without descending below a missing field. A subtree the installed schema keeps whole
 * (`x-kubernetes-preserve-unknown-fields`) lacks nothing.
 */
export function missingFields(ours: JsonSchemaProps, installed: unknown, path = ''): string[] {
  const node = v.safeParse(InstalledNode, installed);
  if (!node.success) return path === '' ? ['(no schema)'] : [path];
  const theirs = node.output;
  if (theirs['x-kubernetes-preserve-unknown-fields'] === true) return [];
  const out: string[] = [];
  for (const [key, child] of Object.entries(ours.properties ?? {})) {
    const at = path === '' ? key : `${path}.${key}`;
    const other = theirs.properties?.[key];
    if (other === undefined) out.push(at);
    else out.push(...missingFields(child, other, at));
  }
  if (ours.items !== undefined) {
    if (theirs.items === undefined) out.push(`${path}[]`);
    else out.push(...missingFields(ours.items, theirs.items, `${path}[]`));
  }
  if (ours.additionalProperties !== undefined) {
    const other = theirs.additionalProperties;
    if (other === undefined || other === false) out.push(`${path}.*`);
    else if (other !== true) out.push(...missingFields(ours.additionalProperties, other, `${path}.*`));
  }
  return out;
}

/**
 * What the installed CRD of `kind` (as the API server returned it) lacks for the version this build serves; the
 * whole version when it is not there. `undefined` when the object is not a CRD at all.
 */
export function crdDrift(kind: CustomKind, installed: unknown): string[] | undefined {
  const crd = v.safeParse(InstalledCrd, installed);
  if (!crd.success) return undefined;
  const ours = buildCrd(kind).spec.versions[0];
  if (ours === undefined) return [];
  const theirs = crd.output.spec.versions.find((x) => x.name === ours.name);
  if (theirs === undefined) return [`version ${ours.name}`];
  return missingFields(ours.schema.openAPIV3Schema, theirs.schema?.openAPIV3Schema);
}
