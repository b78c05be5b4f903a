// `get` output other than tables: objects as kubectl prints them with `-o json|yaml|name`. Pure.
import type { KubeObject } from '../kube/index.ts';
import { toYaml } from '../shared/yaml.ts';
import type { OutputFormat } from './flags.ts';
import { type KindInfo, qualifiedName } from './kinds.ts';

/** An object as printed: without `metadata.managedFields` (kubectl hides them too). */
export function forOutput(obj: KubeObject): Record<string, unknown> {
  if (!Object.hasOwn(obj.metadata, 'managedFields')) return obj;
  const { managedFields: _hidden, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/** A kubectl `List` of objects. */
export function listOf(items: readonly KubeObject[]): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'List', items: items.map(forOutput), metadata: { resourceVersion: '' } };
}

/**
 * The whole output of a non-table `get`: one object alone when one was asked for by name, else a List (json,
 * yaml); one `kind.group/name` line per object (name).
 */
export function formatObjects(
  kind: KindInfo,
  items: readonly KubeObject[],
  format: Exclude<OutputFormat, 'table' | 'wide'>,
  single: boolean,
): string {
  if (format === 'name') return items.map((o) => `${qualifiedName(kind, o.metadata.name ?? '')}\n`).join('');
  const value = single && items.length === 1 && items[0] !== undefined ? forOutput(items[0]) : listOf(items);
  return format === 'json' ? `${JSON.stringify(value, null, 4)}\n` : toYaml(value);
}

/** One object printed as it changes (`--watch`): a JSON document, a YAML document after `---`, or its name. */
export function formatChange(
  kind: KindInfo,
  obj: KubeObject,
  format: Exclude<OutputFormat, 'table' | 'wide'>,
): string {
  if (format === 'name') return `${qualifiedName(kind, obj.metadata.name ?? '')}\n`;
  if (format === 'json') return `${JSON.stringify(forOutput(obj), null, 4)}\n`;
  return `---\n${toYaml(forOutput(obj))}`;
}

/** kubectl's note for an empty list. */
export function noResources(namespace: string | undefined): string {
  return namespace === undefined ? 'No resources found' : `No resources found in ${namespace} namespace.`;
}
