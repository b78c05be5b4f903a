// The list sweep of a group of batches (see poller.ts's header): which batches one list request answers for, how
// many pages a sweep may read, the paging itself, and what the sweep's answer means for each batch of the group.

import type { Result } from '../../shared/result.ts';
import { ok } from '../../shared/result.ts';
import {
  type BatchError,
  type BatchListPage,
  type BatchProvider,
  LIST_PAGE_SIZE,
} from '../../vendors/batch/port.ts';

/** What decides a batch's group: one list request (one provider, one API key) answers for every batch of it. */
export interface GroupedBatch {
  readonly provider: BatchProvider;
  /** The namespace of the Secret holding the key. */
  readonly namespace: string;
  readonly secretKey: string;
}

/** The key of a batch's group: same provider, namespace (Secret) and key. */
export const groupKey = (b: GroupedBatch): string => `${b.provider}\u0000${b.namespace}\u0000${b.secretKey}`;

/** How many batches each group has, and the first of each (in the order given), by group key (pure). */
export function censusOfGroups<B extends GroupedBatch>(
  batches: Iterable<B>,
): { readonly sizes: Map<string, number>; readonly first: Map<string, B> } {
  const sizes = new Map<string, number>();
  const first = new Map<string, B>();
  for (const b of batches) {
    const key = groupKey(b);
    sizes.set(key, (sizes.get(key) ?? 0) + 1);
    if (!first.has(key)) first.set(key, b);
  }
  return { sizes, first };
}

/**
 * The most list pages one sweep of `n` batches reads (pure): enough pages for all of them, and one more for the
 * account's other batches listed before ours.
 */
export function sweepPageLimit(n: number): number {
  return Math.ceil(n / LIST_PAGE_SIZE) + 1;
}

/**
 * Reads the account's batch list page by page (newest first) until every id of `wanted` was seen, the list ends, or
 * {@link sweepPageLimit} pages were read; `onPage` hears of each page's result. Answers whether each seen id has
 * ended; a failed page fails the whole sweep with its error.
 */
export async function listWanted(
  listPage: (cursor: string | undefined) => Promise<Result<BatchListPage, BatchError>>,
  wanted: ReadonlySet<string>,
  onPage: (result: 'ok' | 'error') => void,
): Promise<Result<Map<string, boolean>, BatchError>> {
  const maxPages = sweepPageLimit(wanted.size);
  const seen = new Map<string, boolean>();
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const r = await listPage(cursor);
    if (!r.ok) {
      onPage('error');
      return r;
    }
    onPage('ok');
    for (const b of r.value.batches) if (wanted.has(b.id)) seen.set(b.id, b.ended);
    cursor = r.value.next;
    if (cursor === undefined || seen.size >= wanted.size) break;
  }
  return ok(seen);
}

/** How a batch is polled next: left to its group's sweeps (`listed`) or on its own at `dueAt` (`direct`). */
export interface PollPlan {
  readonly mode: 'listed' | 'direct';
  readonly dueAt: number;
}

/**
 * What a sweep's answer means for one batch of the group (pure), from whether the sweep saw it ended (undefined:
 * not seen): not seen → its own poll decides, when it was due anyway; ended → polled on its own now (to read its
 * result); pending → left to the sweeps, and no poll of its own for a period.
 */
export function afterSweep(
  ended: boolean | undefined,
  dueAt: number,
  now: number,
  periodMs: number,
): PollPlan {
  if (ended === undefined) return { mode: 'direct', dueAt };
  if (ended) return { mode: 'direct', dueAt: now };
  return { mode: 'listed', dueAt: Math.max(dueAt, now + periodMs) };
}
