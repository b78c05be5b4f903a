import type { Agent } from '../../api/index.ts';
import type { Action } from '../actions.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { pruneActions } from '../station/prune.ts';
import { isSameAgent } from '../station/runs.ts';

/**
 * The history sweep of the Agent's Station after its terminal transition, computed on the state the transition
 * produces (unlike the reference, which saw the finished run as still Running). The Agent itself is never
 * deleted here: its resourceVersion is about to change; the next poll sweep prunes it if a limit requires.
 */
export function pruneAfter(s: CommonSnapshot, phase: 'Succeeded' | 'Failed', completedAt: string): Action[] {
  if (s.station === null) return [];
  const { agent } = s;
  const self: Agent = { ...agent, status: { ...agent.status, phase, completedAt } };
  return pruneActions(s.station, [...s.queue.finished, self], (a) => isSameAgent(a, agent));
}

/** Whole and fractional seconds from the RFC 3339 time `from` to `to` (never negative); undefined if unparseable. */
export function secondsBetween(from: string | undefined, to: Date): number | undefined {
  if (from === undefined) return undefined;
  const t = Date.parse(from);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, (to.getTime() - t) / 1000);
}
