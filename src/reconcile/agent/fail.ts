// A Pending Agent that fails before any run starts: one status patch, one Warning Event, its metrics, then the
// Station's history sweep. Every execution mode fails this way (references, policy, build, refused objects).

import type { Decision, RunFailureKind } from '../actions.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { agentRef, event, failedConditions, formatStatusTime, statusPatch } from './status.ts';
import { pruneAfter } from './transition.ts';

export interface EarlyFailure {
  readonly kind: RunFailureKind;
  readonly reason: string;
  readonly failureReason: string;
  readonly message: string;
}

/** A Pending Agent fails without a run because it cannot be built or started: `build_error`, one line for both. */
export function buildError(s: CommonSnapshot, now: Date, reason: string, failureReason: string): Decision {
  return failBeforeStart(s, now, { kind: 'build_error', reason, failureReason, message: failureReason });
}

/** A Pending Agent fails without a run: no jobName, no exitCode, not timed. */
export function failBeforeStart(s: CommonSnapshot, now: Date, f: EarlyFailure): Decision {
  const { agent } = s;
  const completedAt = formatStatusTime(now);
  return {
    actions: [
      statusPatch(
        agent,
        { phase: 'Failed', failureReason: f.failureReason, completedAt },
        failedConditions(f.reason, f.message),
        now,
      ),
      event(agentRef(agent), 'Warning', f.reason, f.message),
      { kind: 'observeMetric', observation: { metric: 'runCompleted', phase: 'Failed' } },
      { kind: 'observeMetric', observation: { metric: 'runFailure', kind: f.kind } },
      ...pruneAfter(s, 'Failed', completedAt),
    ],
  };
}
