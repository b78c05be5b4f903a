import * as v from 'valibot';
import type { Result } from '../shared/result.ts';
import { err, ok } from '../shared/result.ts';
import { decodeJson } from './decode.ts';
import { isGone, type KubeError } from './errors.ts';
import { ListSchema } from './meta.ts';
import { apiVersionOf, listQuery, type ResourceType, resourcePath, type SelectorOptions } from './paths.ts';
import type { Transport } from './transport.ts';

/** client-go's and kube-rs's page size. */
export const DEFAULT_PAGE_SIZE = 500;

export interface ListOptions<T = unknown> extends SelectorOptions {
  /** Namespace to list in; undefined lists across all namespaces (or a cluster-scoped type). */
  readonly namespace?: string | undefined;
  /** Page size (default {@link DEFAULT_PAGE_SIZE}). */
  readonly limit?: number | undefined;
  readonly signal?: AbortSignal | undefined;
  /** How often an expired continue token may restart the list from scratch before giving up (default 3). */
  readonly maxRestarts?: number | undefined;
  /**
   * An already-validated object to use instead of validating `raw` again (an informer passes its cached copy when
   * name and resourceVersion match: a periodic re-list of 10,000 unchanged objects then validates none of them).
   */
  readonly reuse?: ((raw: Readonly<Record<string, unknown>>) => T | undefined) | undefined;
}

/** An item that failed the caller's schema: left out of `items`, reported so it can be logged. */
export interface InvalidItem {
  readonly name: string;
  readonly namespace: string | undefined;
  readonly message: string;
}

export interface ListResult<T> {
  readonly items: readonly T[];
  /** The list's resourceVersion: start a WATCH from here. */
  readonly resourceVersion: string;
  readonly pages: number;
  /** How many times an expired continue token (410) restarted the list. */
  readonly restarts: number;
  readonly invalid: readonly InvalidItem[];
}

const ItemIdSchema = v.looseObject({
  metadata: v.optional(v.looseObject({ name: v.optional(v.string()), namespace: v.optional(v.string()) })),
});

/**
 * A consistent paginated LIST: `limit` per page, following `metadata.continue` until it is empty (all pages are
 * served at the first page's resourceVersion). An expired continue token (410) discards everything read so far and
 * restarts without a token (never continues inconsistently). Items lacking `apiVersion`/`kind` (built-in lists omit
 * them) get them from `rt` before validation with `schema`; invalid items are skipped and reported.
 */
export async function listAll<T>(
  t: Transport,
  rt: ResourceType,
  schema: v.GenericSchema<unknown, T>,
  opts: ListOptions<T> = {},
): Promise<Result<ListResult<T>, KubeError>> {
  const path = resourcePath(rt, { namespace: opts.namespace });
  const maxRestarts = opts.maxRestarts ?? 3;
  const apiVersion = apiVersionOf(rt);
  let restarts = 0;
  restart: for (;;) {
    const items: T[] = [];
    const invalid: InvalidItem[] = [];
    let token: string | undefined;
    let pages = 0;
    for (;;) {
      const r = await t.request('GET', path, {
        signal: opts.signal,
        query: listQuery({
          labelSelector: opts.labelSelector,
          fieldSelector: opts.fieldSelector,
          limit: opts.limit ?? DEFAULT_PAGE_SIZE,
          continue: token,
        }),
      });
      if (!r.ok) {
        if (token !== undefined && isGone(r.error) && restarts < maxRestarts) {
          restarts++;
          continue restart;
        }
        return r;
      }
      const page = decodeJson(r.value.text, ListSchema, `${rt.kind} list`);
      if (!page.ok) return page;
      pages++;
      for (const raw of page.value.items ?? []) {
        const isObject = typeof raw === 'object' && raw !== null && !Array.isArray(raw);
        const known = isObject ? opts.reuse?.(raw as Record<string, unknown>) : undefined;
        if (known !== undefined) {
          items.push(known);
          continue;
        }
        const withType = isObject ? { apiVersion, kind: rt.kind, ...(raw as Record<string, unknown>) } : raw;
        const parsed = v.safeParse(schema, withType);
        if (parsed.success) items.push(parsed.output);
        else {
          const id = v.safeParse(ItemIdSchema, raw);
          invalid.push({
            name: id.success ? (id.output.metadata?.name ?? '') : '',
            namespace: id.success ? id.output.metadata?.namespace : undefined,
            message: parsed.issues[0]?.message ?? 'invalid',
          });
        }
      }
      token = page.value.metadata.continue || undefined;
      if (token === undefined) {
        const resourceVersion = page.value.metadata.resourceVersion ?? '';
        if (resourceVersion === '')
          return err({ kind: 'decode', message: `${rt.kind} list has no resourceVersion` });
        return ok({ items, resourceVersion, pages, restarts, invalid });
      }
    }
  }
}
