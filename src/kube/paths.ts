/**
 * Pure URL builders for the Kubernetes REST API: no I/O. Every path segment and query value is percent-encoded,
 * so names, selectors and continue tokens are safe to pass verbatim.
 */

/** A resource type (group/version/plural) as the REST API addresses it. `group` is '' for the core group. */
export interface ResourceType {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

/** `apiVersion` as it appears in objects: `v1` for core, `group/version` otherwise. */
export function apiVersionOf(rt: ResourceType): string {
  return rt.group === '' ? rt.version : `${rt.group}/${rt.version}`;
}

/** Which object(s) of a resource type a path addresses. */
export interface PathTarget {
  /** Namespace; omitted (or undefined) for cluster-scoped types and for all-namespaces collections. */
  readonly namespace?: string | undefined;
  /** Object name; omitted for the collection. */
  readonly name?: string | undefined;
  /** Subresource (`status`, `log`, `token`, …); requires `name`. */
  readonly subresource?: string | undefined;
}

const seg = (s: string): string => encodeURIComponent(s);

/**
 * The path of a collection, an object, or an object's subresource.
 * Guarantees: `/api/v1/...` for the core group, `/apis/{group}/{version}/...` otherwise; `namespaces/{ns}` only for
 * namespaced types with a namespace given (so an all-namespaces LIST/WATCH is `namespace` omitted).
 * Throws (programmer error) for a subresource without a name, a namespace on a cluster-scoped type, or an empty
 * name (`…/agents/` would address the collection: a DELETE of it is a deletecollection).
 */
export function resourcePath(rt: ResourceType, target: PathTarget = {}): string {
  const { namespace, name, subresource } = target;
  if (subresource !== undefined && name === undefined)
    throw new Error('resourcePath: subresource needs a name');
  if (name === '') throw new Error(`resourcePath: empty ${rt.plural} name`);
  if (!rt.namespaced && namespace !== undefined) {
    throw new Error(`resourcePath: ${rt.plural} is cluster-scoped, got namespace ${namespace}`);
  }
  let p = rt.group === '' ? `/api/${seg(rt.version)}` : `/apis/${seg(rt.group)}/${seg(rt.version)}`;
  if (namespace !== undefined) p += `/namespaces/${seg(namespace)}`;
  p += `/${seg(rt.plural)}`;
  if (name !== undefined) p += `/${seg(name)}`;
  if (subresource !== undefined) p += `/${seg(subresource)}`;
  return p;
}

/** Query values: undefined entries are left out; booleans become `true`/`false`. */
export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

/** `?a=1&b=x` (or '' when nothing is set), keys in insertion order, values percent-encoded. */
export function queryString(query: Query | undefined): string {
  if (!query) return '';
  const parts: string[] = [];
  for (const [k, val] of Object.entries(query)) {
    if (val === undefined) continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(val))}`);
  }
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

/** Selectors shared by LIST and WATCH. */
export interface SelectorOptions {
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
}

/** Options of one LIST page. */
export interface ListQueryOptions extends SelectorOptions {
  /** Page size (the API server caps nothing; client-go and kube-rs use 500). */
  readonly limit?: number | undefined;
  /** The `metadata.continue` token of the previous page. */
  readonly continue?: string | undefined;
  readonly resourceVersion?: string | undefined;
  readonly resourceVersionMatch?: 'NotOlderThan' | 'Exact' | undefined;
}

/** Query of one LIST page. Empty selectors and continue tokens are left out. */
export function listQuery(o: ListQueryOptions): Query {
  return {
    labelSelector: o.labelSelector || undefined,
    fieldSelector: o.fieldSelector || undefined,
    limit: o.limit,
    continue: o.continue || undefined,
    resourceVersion: o.resourceVersion,
    resourceVersionMatch: o.resourceVersionMatch,
  };
}

/** Options of a WATCH request. */
export interface WatchQueryOptions extends SelectorOptions {
  /** Start after this resourceVersion (from a LIST or the last event/bookmark). */
  readonly resourceVersion?: string | undefined;
  /** Server-side lifetime of the stream in seconds; the server then ends it cleanly. */
  readonly timeoutSeconds?: number | undefined;
  /** Ask for BOOKMARK events (default true). */
  readonly allowWatchBookmarks?: boolean | undefined;
}

/** Query of a WATCH request: `watch=1`, bookmarks on unless disabled. */
export function watchQuery(o: WatchQueryOptions): Query {
  return {
    watch: 1,
    labelSelector: o.labelSelector || undefined,
    fieldSelector: o.fieldSelector || undefined,
    resourceVersion: o.resourceVersion || undefined,
    allowWatchBookmarks: o.allowWatchBookmarks ?? true,
    timeoutSeconds: o.timeoutSeconds,
  };
}
