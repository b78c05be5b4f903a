import type { Agent, Station } from '../../api/index.ts';
import type { Action } from '../actions.ts';
import { type AgentRunView, compareHistoryOrder, inStation, runPhase } from './runs.ts';

/** The Station settings pruning reads; absent limits take the CRD default 3, negative ones count as 0. */
export interface StationHistory {
  readonly name: string;
  readonly namespace?: string | undefined;
  readonly successfulRunsHistoryLimit?: number | undefined;
  readonly failedRunsHistoryLimit?: number | undefined;
}

/** CRD default of `successfulRunsHistoryLimit` and `failedRunsHistoryLimit`. */
export const DEFAULT_HISTORY_LIMIT = 3;

const limitOf = (value: number | undefined): number =>
  value === undefined || !Number.isFinite(value) ? DEFAULT_HISTORY_LIMIT : Math.max(0, Math.floor(value));

/** One Agent chosen for deletion, with the limit that condemned it. */
export interface PruneChoice<A extends AgentRunView> {
  readonly agent: A;
  readonly phase: 'Succeeded' | 'Failed';
  readonly limit: number;
}

/**
 * Which finished runs of `station` exceed its history limits (docs/design/reference-behaviour.md#history-pruning, per
 * Station). Guarantees:
 * - only Agents with `spec.stationRef === station.name` (and the Station's namespace, when given) are considered;
 *   Pending and Running Agents and Agents already being deleted are never chosen;
 * - per terminal phase, runs are ordered newest first by completedAt (missing or unparseable → oldest; ties by
 *   creation order, newest first); the first `limit` are kept and the rest returned;
 * - Succeeded choices come first, then Failed; within each group, newest first;
 * - `exclude` Agents count toward the kept runs but are never returned (the decision that just completed an Agent
 *   passes it here, because its resourceVersion is about to change; the next sweep deletes it if needed);
 * - Agents without a resourceVersion are never returned (a delete without a precondition could remove a newer
 *   object of the same name).
 */
export function selectHistoryToPrune<A extends AgentRunView>(
  station: StationHistory,
  agents: readonly A[],
  exclude: (agent: A) => boolean = () => false,
): PruneChoice<A>[] {
  const mine = agents.filter(
    (a) => inStation(a, station.name, station.namespace) && a.metadata.deletionTimestamp === undefined,
  );
  const out: PruneChoice<A>[] = [];
  for (const phase of ['Succeeded', 'Failed'] as const) {
    const limit = limitOf(
      phase === 'Succeeded' ? station.successfulRunsHistoryLimit : station.failedRunsHistoryLimit,
    );
    const runs = mine.filter((a) => runPhase(a) === phase).sort(compareHistoryOrder);
    for (const agent of runs.slice(limit)) {
      if (exclude(agent)) continue;
      const rv = agent.metadata.resourceVersion;
      if (rv === undefined || rv === '') continue;
      out.push({ agent, phase, limit });
    }
  }
  return out;
}

/**
 * The history sweep of one Station as actions (run it on every poll, before reconciling, and after every terminal
 * transition): one `deleteAgent` with `purpose: 'prune'` and the Agent's resourceVersion per choice of
 * `selectHistoryToPrune`, in its order.
 */
export function pruneActions(
  station: Station,
  agents: readonly Agent[],
  exclude: (agent: Agent) => boolean = () => false,
): Action[] {
  const history: StationHistory = {
    name: station.metadata.name,
    namespace: station.metadata.namespace,
    successfulRunsHistoryLimit: station.spec.successfulRunsHistoryLimit,
    failedRunsHistoryLimit: station.spec.failedRunsHistoryLimit,
  };
  return selectHistoryToPrune(history, agents, exclude).map(({ agent, phase, limit }) => ({
    kind: 'deleteAgent',
    ref: { namespace: agent.metadata.namespace, name: agent.metadata.name, uid: agent.metadata.uid },
    resourceVersion: agent.metadata.resourceVersion,
    purpose: 'prune',
    reason: `history limit: Station ${station.metadata.name} keeps ${limit} ${phase} run${limit === 1 ? '' : 's'}`,
  }));
}
