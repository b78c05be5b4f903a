// The sweeps of each poll (docs/design/wiring.md#the-poll-and-its-sweeps): history beyond each Station's limit, the Jobs of runs
// that could not start whose delete failed, and run ClusterRoleBindings left behind. Each reads the caches, decides
// with the pure core where there is a decision, and stops the moment this replica may no longer write.

import { type Agent, isTerminalPhase } from '../api/index.ts';
import type { ExecuteOutcome } from '../effects/execute.ts';
import { parseCachedJob, parseCachedStation } from '../effects/gather.ts';
import { deleteBinding, listRunClusterBindings } from '../effects/run-bindings.ts';
import { RUN_CLEANUP_FINALIZER, strayBindings } from '../jobs/index.ts';
import { describeKubeError, isForbidden, type KubeObject, objectKey, type Transport } from '../kube/index.ts';
import { leftoverStartJob } from '../reconcile/agent/starting.ts';
import { type Action, laneKey, pruneActions, type StationBook } from '../reconcile/index.ts';
import type { StoreReader } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';
import { agentOwnerOf } from './triggers.ts';

/** Polls skipped by the binding sweep after its LIST was forbidden (no run-rbac component): ~5 minutes. */
export const SWEEP_FORBIDDEN_SKIPS = 20;

export interface SweepDeps {
  readonly transport: Transport;
  /** The namespace watched; undefined = all. */
  readonly namespace: string | undefined;
  readonly logger: Logger;
  readonly stations: StoreReader<KubeObject>;
  readonly jobs: StoreReader<KubeObject>;
  readonly agents: StoreReader<Agent>;
  readonly book: StationBook<Agent>;
  /** Whether this replica may write now (leading, the Lease ours by its clock). */
  mayWrite(): boolean;
  /** Executes actions as a reconcile would (the executor, with its fences). */
  execute(actions: readonly Action[]): Promise<ExecuteOutcome>;
}

export interface Sweeps {
  /** Deletes finished Agents beyond each Station's history limit. */
  history(): Promise<void>;
  /** Deletes the Jobs of runs that failed because their pod could not start, should the delete then have failed. */
  leftoverJobs(): Promise<void>;
  /**
   * Removes run ClusterRoleBindings whose Agent is gone, or finished without the cleanup finalizer (issue 9 §2):
   * what a crash between a binding's create and its record, or a finalizer removed by hand, leaves behind. The
   * cache is at least as new as this poll's LIST, and a binding is only ever created for an Agent in it.
   */
  bindings(): Promise<void>;
}

export function createSweeps(deps: SweepDeps): Sweeps {
  const { mayWrite, book } = deps;
  const log = deps.logger;
  let bindingSkips = 0;

  async function history(): Promise<void> {
    for (const raw of deps.stations.list()) {
      if (!mayWrite()) return;
      const station = parseCachedStation(raw);
      if (!station.ok) continue;
      const lane = laneKey(station.value.metadata.namespace, station.value.metadata.name);
      const actions = pruneActions(station.value, book.finished(lane));
      if (actions.length === 0) continue;
      const outcome = await deps.execute(actions);
      if (outcome.kind === 'error')
        log.warn('History sweep failed', {
          station: objectKey(raw),
          error: describeKubeError(outcome.error),
        });
    }
  }

  async function leftoverJobs(): Promise<void> {
    for (const raw of deps.jobs.list()) {
      if (!mayWrite()) return;
      const owner = agentOwnerOf(raw);
      if (owner === undefined) continue;
      const agent = book.get(`${raw.metadata.namespace}/${owner.name}`);
      const job = parseCachedJob(raw);
      if (agent === undefined || !job.ok) continue;
      const action = leftoverStartJob(agent, job.value);
      if (action === undefined) continue;
      const outcome = await deps.execute([action]);
      if (outcome.kind === 'error')
        log.warn('Deleting the Job of a run that could not start failed', {
          job: objectKey(raw),
          error: describeKubeError(outcome.error),
        });
    }
  }

  async function bindings(): Promise<void> {
    if (!mayWrite()) return;
    if (bindingSkips > 0) {
      bindingSkips--;
      return;
    }
    const listed = await listRunClusterBindings(deps.transport, deps.namespace);
    if (!listed.ok) {
      // Without the run-rbac component the controller may not list bindings: then it never created one either.
      // Ask again only every SWEEP_FORBIDDEN_SKIPS polls (the component may be added while it runs).
      if (isForbidden(listed.error)) {
        bindingSkips = SWEEP_FORBIDDEN_SKIPS;
        return;
      }
      log.warn('Listing run ClusterRoleBindings failed', { error: describeKubeError(listed.error) });
      return;
    }
    if (listed.value.length === 0) return;
    const byUid = new Map<string, Agent>();
    for (const agent of deps.agents.list()) byUid.set(agent.metadata.uid, agent);
    const stray = strayBindings(listed.value, (uid) => {
      const agent = byUid.get(uid);
      if (agent === undefined) return 'gone';
      const finished = isTerminalPhase(agent.status.phase) || agent.metadata.deletionTimestamp !== undefined;
      return finished && !agent.metadata.finalizers.includes(RUN_CLEANUP_FINALIZER) ? 'finished' : 'active';
    });
    for (const binding of stray) {
      if (!mayWrite()) return;
      const r = await deleteBinding(deps.transport, binding, undefined);
      if (r.ok) log.info('Removed a stray run ClusterRoleBinding', { binding: binding.name });
      else
        log.warn('Removing a stray run ClusterRoleBinding failed', {
          binding: binding.name,
          error: describeKubeError(r.error),
        });
    }
  }

  return { history, leftoverJobs, bindings };
}
