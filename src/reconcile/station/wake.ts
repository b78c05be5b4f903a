// Which Agents are worth waking when a slot may have freed, and what a new leadership term looks at first: the
// admission arithmetic of the wiring, kept beside admission itself so the two cannot drift (ARCHITECTURE.md,
// glossary: heads, holders, term).

import { type Agent, SESSION_STATE_FINALIZER } from '../../api/index.ts';
import { RUN_CLEANUP_FINALIZER } from '../../jobs/run-bindings.ts';
import { BATCH_FINALIZER } from '../batch/plan.ts';
import { SPEND_FINALIZER } from '../budget/ledger.ts';
import { CONDITION_READY, REASON } from '../reasons.ts';
import { concurrencyOf, type StationConcurrency, wakeableCount } from './admission.ts';
import type { StationBook } from './book.ts';
import type { AgentRunView } from './runs.ts';

/** A lane's Station settings as admission reads them; undefined when the Station is missing or invalid. */
export type LaneStation = Omit<StationConcurrency, 'name'> | undefined;

/**
 * The queued Agents of a lane that could start now: the first `limit − holders` in queue order (all when
 * unlimited; the head under Replace, which may preempt). Without a (valid) Station every queued Agent is woken:
 * each fails with the reason. The others would only be told to wait again, so a finished run costs O(free slots),
 * not O(queue).
 */
export function wakeableHeads<A extends AgentRunView>(
  book: StationBook<A>,
  lane: string,
  station: LaneStation,
): string[] {
  const { queued, holding } = book.counts(lane);
  if (queued === 0) return [];
  const n = station === undefined ? queued : wakeableCount(queued, holding, concurrencyOf(station));
  return book.heads(lane, n);
}

/** True when the Agent already carries Ready=False/Queued (it was told it waits). */
export function toldItWaits(a: Agent): boolean {
  return (a.status.conditions ?? []).some(
    (c) => c.type === CONDITION_READY && c.status === 'False' && c.reason === REASON.queued,
  );
}

/**
 * What a new leadership term looks at, in this order: every Agent holding a slot (Running, or started by an earlier
 * leader), every server (its objects are not watched), queued Agents never told they wait, Agents carrying the
 * batch or cleanup finalizer, deleted Agents carrying the spend or session-state finalizer (work left half done); then the heads of every queue. Queued Agents that already
 * carry Ready=False/Queued would only be told to wait again. A key may appear twice (the queue merges adds).
 */
export function termStartKeys(
  agents: Iterable<Agent>,
  book: StationBook<Agent>,
  stationOf: (lane: string) => LaneStation,
): string[] {
  const keys: string[] = [];
  for (const agent of agents) {
    const key = `${agent.metadata.namespace}/${agent.metadata.name}`;
    const place = book.placeOf(key);
    if (place === 'holding') keys.push(key);
    else if (agent.status.phase === 'Serving') keys.push(key);
    else if (place === 'queued' && !toldItWaits(agent)) keys.push(key);
    else if (agent.metadata.finalizers.includes(BATCH_FINALIZER)) keys.push(key);
    else if (agent.metadata.finalizers.includes(RUN_CLEANUP_FINALIZER)) keys.push(key);
    // A deleted Agent whose stored session is not deleted yet (issue 29 §5).
    else if (
      agent.metadata.deletionTimestamp !== undefined &&
      agent.metadata.finalizers.includes(SESSION_STATE_FINALIZER)
    )
      keys.push(key);
    // A deleted run whose spend has not reached the ledger yet (issue 28 §4): deleted while no controller ran.
    else if (
      agent.metadata.deletionTimestamp !== undefined &&
      agent.metadata.finalizers.includes(SPEND_FINALIZER)
    )
      keys.push(key);
  }
  for (const lane of book.lanes()) keys.push(...wakeableHeads(book, lane, stationOf(lane)));
  return keys;
}
