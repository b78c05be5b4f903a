// The start of a Job run (execution job or realtime), after the shared start step (./start.ts): admission in its
// Station (queue, or preempt under Replace), the cleanup finalizer of a run that holds bindings, its memory, then the
// run's objects, the Job and Running.

import { buildRunInput, runHoldsToken } from '../../jobs/index.ts';
import type { Action, Decision } from '../actions.ts';
import { isRealtime, promptTokenSecretName } from '../realtime/plan.ts';
import { failureMemory, failureNotMemory, REASON } from '../reasons.ts';
import type { JobSnapshot } from '../snapshot/job.ts';
import { decideAdmission } from '../station/admission.ts';
import { addCleanupFinalizer, holdsCleanupFinalizer } from './cleanup.ts';
import { buildError } from './fail.ts';
import { keySaturationGate } from './key-saturation.ts';
import { runObjectActions, runObjectWarnings } from './run-objects.ts';
import {
  type Checked,
  gatewayCredentialAction,
  type Prepared,
  preemptActions,
  queuedDecision,
  runGrant,
  startActions,
  stationConcurrency,
} from './start.ts';
import { agentRef, formatStatusTime } from './status.ts';

/** A Pending Job run that passed the start step and was built: admit it and start it. */
export function decideJobStart(s: JobSnapshot, now: Date, checked: Checked, prepared: Prepared): Decision {
  const { agent } = s;
  const { station, definition } = checked;
  const { request } = prepared;
  const built = { value: prepared.job };
  // A vendor key of its grant saturated at the gateway: it waits (no slot taken, its place kept; issue 28 §5).
  const saturated = keySaturationGate(s, runGrant(s, checked), now);
  if (saturated !== undefined) return saturated;
  const verdict = decideAdmission(s.queue, stationConcurrency(station));
  if (verdict.kind === 'wait') return queuedDecision(s, station, verdict, now);
  // A run that will hold bindings holds the cleanup finalizer first (issue 9 §6): no binding can outlive its
  // Agent unnoticed. The finalizer patch wakes this Agent again, and admission is decided afresh then.
  if (runHoldsToken(definition) && !holdsCleanupFinalizer(agent)) {
    return { actions: [addCleanupFinalizer(agent)] };
  }
  // A run with memory reads it right before its Job is created (issue 10 §3): the prompt carries that version.
  const memorySpec = definition.spec.memory;
  if (memorySpec !== undefined) {
    if (s.memory === undefined) return { actions: [], needs: 'memory' };
    if (s.memory.kind === 'forbidden' || s.memory.kind === 'notMemory') {
      const failureReason =
        s.memory.kind === 'forbidden'
          ? failureMemory(memorySpec.configMap, s.memory.message)
          : failureNotMemory(memorySpec.configMap);
      return buildError(s, now, REASON.memoryUnreadable, failureReason);
    }
  }
  const actions: Action[] = verdict.kind === 'replace' ? preemptActions(agent, station, verdict.victims) : [];
  const jobName = built.value.metadata.name;
  // The run's own NetworkPolicy (issue 9 §3, docs/design/reference-behaviour.md#d-i-networkpolicy-per-run) exists
  // before its pods can start.
  actions.push(...runObjectActions(s, station, definition));
  const grant = runGrant(s, checked);
  if (grant !== undefined) {
    // The run's credential for the model gateway, in its own Secret, before the Job whose pod reads it.
    actions.push(gatewayCredentialAction(s));
  }
  if (isRealtime(definition)) {
    actions.push({
      kind: 'createPromptToken',
      ref: agentRef(agent),
      uid: agent.metadata.uid,
      secretName: promptTokenSecretName(agent.metadata.name),
    });
  }
  actions.push(
    { kind: 'createRunInput', configMap: buildRunInput(request) },
    { kind: 'createJob', job: built.value },
    ...startActions(s, jobName, formatStatusTime(now), `Created Job ${jobName}`, now, now, grant),
    ...runObjectWarnings(s, definition),
  );
  return { actions, requeueAfterMs: s.options.requeueMs };
}
