import type { Agent } from '../../api/index.ts';
import type { Action, AgentRef, AgentStatusPatch } from '../actions.ts';
import { type ConditionUpdate, setConditions } from '../conditions.ts';
import { CONDITION_COMPLETE, CONDITION_FAILED, CONDITION_READY, REASON } from '../reasons.ts';

/** Longest condition message the API accepts (metav1.Condition validation). */
export const MAX_CONDITION_MESSAGE = 32768;
/** Longest Event message the core emits (events.k8s.io/v1 `note` is limited to 1 kB). */
export const MAX_EVENT_MESSAGE = 1000;

/** `s` cut to `max` characters, with `…` marking the cut. */
export function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, Math.max(0, max - 1))}…`;
}

/** The Agent's reference for actions. */
export function agentRef(agent: Agent): AgentRef {
  return { namespace: agent.metadata.namespace, name: agent.metadata.name, uid: agent.metadata.uid };
}

/** RFC 3339 UTC time with milliseconds, as written to `startedAt` / `completedAt`. */
export function formatStatusTime(now: Date): string {
  return now.toISOString();
}

/** Condition updates of a queued Agent: Ready=False/Queued. */
export function queuedConditions(message: string): ConditionUpdate[] {
  return [
    {
      type: CONDITION_READY,
      status: 'False',
      reason: REASON.queued,
      message: clip(message, MAX_CONDITION_MESSAGE),
    },
  ];
}

/** Condition updates of a Running Agent: Ready=False/Running. */
export function runningConditions(message: string): ConditionUpdate[] {
  return [
    {
      type: CONDITION_READY,
      status: 'False',
      reason: REASON.running,
      message: clip(message, MAX_CONDITION_MESSAGE),
    },
  ];
}

/** Condition updates of a Succeeded Agent: Ready=True and Complete=True, reason Succeeded. */
export function succeededConditions(message: string): ConditionUpdate[] {
  const m = clip(message, MAX_CONDITION_MESSAGE);
  return [
    { type: CONDITION_READY, status: 'True', reason: REASON.succeeded, message: m },
    { type: CONDITION_COMPLETE, status: 'True', reason: REASON.succeeded, message: m },
  ];
}

/** Condition updates of a Failed Agent: Ready=False and Failed=True with the failure's reason. */
export function failedConditions(reason: string, message: string): ConditionUpdate[] {
  const m = clip(message, MAX_CONDITION_MESSAGE);
  return [
    { type: CONDITION_READY, status: 'False', reason, message: m },
    { type: CONDITION_FAILED, status: 'True', reason, message: m },
  ];
}

/**
 * The `patchStatus` action for `agent`: carries the Agent's resourceVersion as precondition, sets
 * `observedGeneration` (when the Agent has a generation) on the status and on every updated condition, and the
 * complete condition list computed from the Agent's current conditions (unchanged statuses keep their
 * lastTransitionTime).
 */
export function statusPatch(
  agent: Agent,
  fields: Omit<AgentStatusPatch, 'conditions' | 'observedGeneration'>,
  updates: readonly ConditionUpdate[],
  now: Date,
  /** Condition types to remove. */
  remove: readonly string[] = [],
): Action {
  const generation = agent.metadata.generation;
  const stamped = updates.map((u) => ({ ...u, observedGeneration: generation }));
  const status: AgentStatusPatch = {
    ...fields,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions: setConditions(
      (agent.status.conditions ?? []).filter((c) => !remove.includes(c.type)),
      stamped,
      now,
    ),
  };
  return {
    kind: 'patchStatus',
    ref: agentRef(agent),
    resourceVersion: agent.metadata.resourceVersion,
    status,
  };
}

/** A `recordEvent` action on `ref`, message clipped to MAX_EVENT_MESSAGE. */
export function event(ref: AgentRef, type: 'Normal' | 'Warning', reason: string, message: string): Action {
  return { kind: 'recordEvent', ref, type, reason, message: clip(message, MAX_EVENT_MESSAGE) };
}
