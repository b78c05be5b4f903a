import type { Agent } from '../../api/index.ts';
import { RUN_CLEANUP_FINALIZER } from '../../jobs/index.ts';
import type { Action, Decision } from '../actions.ts';
import { REASON } from '../reasons.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { jobOwnership } from './start.ts';
import { agentRef, event } from './status.ts';

/** Index of the cleanup finalizer in `metadata.finalizers` (or -1). */
export function cleanupFinalizerIndex(agent: Agent): number {
  return agent.metadata.finalizers.indexOf(RUN_CLEANUP_FINALIZER);
}

/** True when the Agent holds the cleanup finalizer (its run may hold bindings, issue 9 §6). */
export function holdsCleanupFinalizer(agent: Agent): boolean {
  return cleanupFinalizerIndex(agent) >= 0;
}

/** The first step of a run that will hold bindings: the cleanup finalizer, before any binding exists. */
export function addCleanupFinalizer(agent: Agent): Action {
  return {
    kind: 'addFinalizer',
    ref: agentRef(agent),
    resourceVersion: agent.metadata.resourceVersion,
    finalizer: RUN_CLEANUP_FINALIZER,
    first: agent.metadata.finalizers.length === 0,
  };
}

/**
 * The cleanup rows (issue 9 §6) of an Agent that holds the cleanup finalizer and is finished or being deleted:
 * - being deleted before it finished: its Job (read first; only one it owns, by uid) is deleted (Foreground, so its
 *   pods go first), a Normal Event says so;
 * - then every binding labelled with its uid is deleted (RoleBindings and ClusterRoleBindings);
 * - then the finalizer is removed (a JSON patch that tests and removes only that entry).
 * Each step is idempotent: a retry after a crash repeats the deletes (404 counts as done).
 */
export function decideRunCleanup(s: CommonSnapshot): Decision {
  const { agent } = s;
  const index = cleanupFinalizerIndex(agent);
  if (index < 0) return { actions: [] };
  const ref = agentRef(agent);
  const phase = agent.status.phase;
  const unfinished = phase === 'Pending' || phase === 'Running' || phase === 'Suspended';
  const actions: Action[] = [];
  if (agent.metadata.deletionTimestamp !== undefined && unfinished) {
    // Only this run's own Job is stopped (its uid is the delete's precondition): never one of the same name that
    // belongs to someone else.
    if (s.job.kind === 'unknown') return { actions: [], needs: 'job' };
    if (s.job.kind === 'present' && jobOwnership(s.job.job, agent) === 'owned') {
      const { name, uid } = s.job.job.metadata;
      actions.push(
        { kind: 'deleteJob', namespace: agent.metadata.namespace, name, uid },
        event(
          ref,
          'Normal',
          REASON.cleanedUp,
          `Agent deleted: stopped Job ${name} and removed the run's bindings`,
        ),
      );
    }
  }
  actions.push(
    { kind: 'deleteRunBindings', ref },
    { kind: 'removeFinalizer', ref, finalizer: RUN_CLEANUP_FINALIZER, index },
  );
  return { actions };
}
