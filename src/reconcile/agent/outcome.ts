/**
 * Pure readers of a finished run: the Job's verdict (`parseJobOutcome`), which pod speaks for it (`pickRunPod`),
 * the agent container's exit code, and the exit-code rules (`coherentExitCode`),
 * docs/design/reference-behaviour.md#job-outcome, docs/design/reference-behaviour.md#exit-codes with our
 * changes: the early Job conditions `SuccessCriteriaMet` / `FailureTarget` count as verdicts (Kubernetes >= 1.31
 * adds them before `Complete` / `Failed`), and a vanished Job is a failure with exit code 1
 * (docs/design/reference-behaviour.md#d-a-vanished-job-fails).
 */

import type { RunResult } from '../../vendors/cli/run-report.ts';
import type { Action, RunFailureKind } from '../actions.ts';

/** The agent container's name in every run pod. */
export const AGENT_CONTAINER = 'agent';
/** The init container's name in every run pod. */
export const INIT_CONTAINER = 'init';

/** The Job fields the outcome depends on (structural, so any parsed Job fits). */
export interface JobStatusView {
  readonly status?:
    | {
        readonly conditions?:
          | readonly {
              readonly type?: string | undefined;
              readonly status?: string | undefined;
              readonly reason?: string | undefined;
              readonly message?: string | undefined;
            }[]
          | undefined;
        readonly succeeded?: number | undefined;
        readonly failed?: number | undefined;
      }
    | undefined;
}

/** The container status fields the outcome depends on. */
type ContainerStatusView = {
  readonly name?: string | undefined;
  readonly state?:
    | {
        readonly terminated?:
          | { readonly exitCode?: number | undefined; readonly message?: string | undefined }
          | undefined;
      }
    | undefined;
};

/** The pod fields the outcome depends on. */
export interface PodView {
  readonly metadata?:
    | { readonly name?: string | undefined; readonly creationTimestamp?: string | undefined }
    | undefined;
  readonly status?:
    | {
        readonly containerStatuses?: readonly ContainerStatusView[] | undefined;
        readonly initContainerStatuses?: readonly ContainerStatusView[] | undefined;
      }
    | undefined;
}

/** The run's init container, when it ended with a non-zero exit code: its code and termination message. */
export function initFailure(pod: PodView): { exitCode: number; message: string | undefined } | undefined {
  const status = pod.status?.initContainerStatuses?.find((c) => c.name === INIT_CONTAINER);
  const exitCode = status?.state?.terminated?.exitCode;
  if (exitCode === undefined || exitCode === 0) return undefined;
  return { exitCode, message: status?.state?.terminated?.message };
}

/** The Job's verdict. `early` marks a verdict read from `SuccessCriteriaMet` / `FailureTarget`. */
export type JobOutcome =
  | { readonly kind: 'running' }
  | { readonly kind: 'succeeded'; readonly early: boolean }
  | { readonly kind: 'failed'; readonly reason: string; readonly early: boolean };

const VERDICTS = [
  { type: 'Complete', kind: 'succeeded', early: false },
  { type: 'Failed', kind: 'failed', early: false },
  { type: 'SuccessCriteriaMet', kind: 'succeeded', early: true },
  { type: 'FailureTarget', kind: 'failed', early: true },
] as const;

/**
 * Reads the Job's verdict. Guarantees:
 * - a `True` condition decides, checked in the order `Complete`, `Failed`, `SuccessCriteriaMet`, `FailureTarget`
 *   (final conditions first, so their reason wins over the early one);
 * - a failure reason is `"<reason>: <message>"` when both are set, else whichever is non-empty, else `Job failed`;
 * - without a terminal condition, `status.succeeded > 0` means succeeded and `status.failed > 0` failed with
 *   reason `Job failed` (a Job with backoffLimit 0 is over after one failed pod);
 * - anything else (including `Suspended`) is `running`.
 */
export function parseJobOutcome(job: JobStatusView): JobOutcome {
  const conditions = job.status?.conditions ?? [];
  for (const verdict of VERDICTS) {
    const c = conditions.find((x) => x.type === verdict.type && x.status === 'True');
    if (c === undefined) continue;
    if (verdict.kind === 'succeeded') return { kind: 'succeeded', early: verdict.early };
    return { kind: 'failed', reason: jobFailureReason(c.reason, c.message), early: verdict.early };
  }
  if ((job.status?.succeeded ?? 0) > 0) return { kind: 'succeeded', early: false };
  if ((job.status?.failed ?? 0) > 0) return { kind: 'failed', reason: 'Job failed', early: false };
  return { kind: 'running' };
}

/** `"<reason>: <message>"`, or whichever part is non-empty, or `Job failed`. */
export function jobFailureReason(reason: string | undefined, message: string | undefined): string {
  const r = reason?.trim() ?? '';
  const m = message?.trim() ?? '';
  if (r !== '' && m !== '') return `${r}: ${m}`;
  if (r !== '') return r;
  if (m !== '') return m;
  return 'Job failed';
}

/** True once the Job has a verdict: the shell then gathers the run's pod and log (see `RunEvidence`). */
export function isJobFinished(job: JobStatusView): boolean {
  return parseJobOutcome(job).kind !== 'running';
}

/**
 * The pod whose log and exit code stand for the run: among `pods` (the Job's pods, `job-name=<job>`), the one whose
 * agent container has terminated, newest first (creationTimestamp, then name); else the newest pod; else undefined.
 * With backoffLimit 0 a Job has one pod, so this only matters after evictions or manual retries.
 */
export function pickRunPod<P extends PodView>(pods: readonly P[]): P | undefined {
  const newestFirst = [...pods].sort((a, b) => {
    const ta = Date.parse(a.metadata?.creationTimestamp ?? '');
    const tb = Date.parse(b.metadata?.creationTimestamp ?? '');
    const na = Number.isNaN(ta) ? Number.NEGATIVE_INFINITY : ta;
    const nb = Number.isNaN(tb) ? Number.NEGATIVE_INFINITY : tb;
    if (na !== nb) return nb - na;
    return (b.metadata?.name ?? '').localeCompare(a.metadata?.name ?? '');
  });
  return newestFirst.find((p) => agentExitCode(p) !== undefined) ?? newestFirst[0];
}

/** The agent container's `state.terminated.exitCode`, or undefined when it has not terminated (or is absent). */
export function agentExitCode(pod: PodView): number | undefined {
  const status = pod.status?.containerStatuses?.find((c) => c.name === AGENT_CONTAINER);
  return status?.state?.terminated?.exitCode;
}

/** The agent container's termination message (the supervisor's run report), when it ended with one. */
export function agentTerminationMessage(pod: PodView): string | undefined {
  const status = pod.status?.containerStatuses?.find((c) => c.name === AGENT_CONTAINER);
  const message = status?.state?.terminated?.message;
  return message === undefined || message === null || message === '' ? undefined : message;
}

/**
 * The exit code written to `status.exitCode` (docs/design/reference-behaviour.md#exit-codes,
 * docs/design/reference-behaviour.md#d-a-vanished-job-fails):
 * Succeeded → 0 whatever the pod said; Failed → the pod's code when non-zero, else 1. A Failed run therefore never
 * reports 0 and a Succeeded run never reports non-zero.
 */
export function coherentExitCode(phase: 'Succeeded' | 'Failed', podExitCode: number | undefined): number {
  if (phase === 'Succeeded') return 0;
  return podExitCode !== undefined && podExitCode !== 0 ? podExitCode : 1;
}

/** What a finished run comes to: the status, events and metrics `finish` (running.ts) turns it into. */
export interface Completion {
  readonly phase: 'Succeeded' | 'Failed';
  /** The run's Job; absent for a batch run. */
  readonly jobName?: string;
  readonly exitCode: number;
  readonly output: string;
  readonly failureReason?: string;
  /** Condition and Event reason of the transition. */
  readonly reason: string;
  readonly message: string;
  readonly failureKinds: readonly RunFailureKind[];
  readonly extraEvents: readonly { type: 'Normal' | 'Warning'; reason: string; message: string }[];
  /** Actions that must follow the status patch at once (sink notifications: only once the patch succeeded). */
  readonly afterPatch?: readonly Action[];
  /** The supervisor's run report (the agent container's termination message), when there is one. */
  readonly report?: RunResult | undefined;
  /** A batch run (its cost is estimated at the batch rate). */
  readonly batch?: boolean;
}
