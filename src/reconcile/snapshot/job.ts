// The job mode's observations (issue 27 §3): what a Running Job run (execution job or realtime, and a batch run's
// fallback Job) reads beyond the common part: its pods and the Job controller's pod-creation failures, to tell a pod
// kept from starting (../agent/starting.ts).
// A realtime run has no observations of its own: its Job is observed as any Job run's, and what its prompt port
// reports (the CLI session id) arrives as an annotation on the Agent (../realtime/session.ts).

import type { Pod } from '../../api/index.ts';
import type { CommonSnapshot } from './common.ts';

/** One `FailedCreate` Event of the Job controller: the run's pod could not be created. */
export interface PodCreateFailure {
  /** The Job the Event is about (an Event of an earlier Job of the same name is ignored). */
  readonly jobUid: string;
  readonly message: string;
  /** When it last happened (RFC 3339), if the Event says. */
  readonly lastSeen?: string | undefined;
}

/**
 * What the shell knows about a Running run whose Job has not finished (issue 13 §4): the Job's Pending pods (label
 * `job-name`) and the Job controller's `FailedCreate` Events about it, from watches (or the pods listed live).
 */
export interface StartObservation {
  readonly pods: readonly Pod[];
  readonly createFailures: readonly PodCreateFailure[];
  /**
   * The pods were just listed from the API server, not read from the cache: a run fails of a start problem only on
   * such a reading (decide asks for it with `needs: 'livePods'`), so a pod that started a moment ago is never missed.
   */
  readonly live?: boolean | undefined;
}

/** What a Job run reads beyond the common part. */
export interface JobObservations {
  /**
   * Running runs whose Job has not finished: its pods and pod-creation failures, from the shell's watches
   * (undefined: not watched; the run then waits for its Job's verdict as before).
   */
  readonly start?: StartObservation | undefined;
}

/** What the job mode's decisions read: the common part and the Job run's own observations. */
export type JobSnapshot = CommonSnapshot & JobObservations;
