// The dependencies gate (issue 10 §4): a run whose AgentDefinition names `dependencies` starts only once each of
// those Services of its namespace has ready endpoints (EndpointSlices, from the shell's watch: no API polling). It
// waits before admission (it takes no run slot), with Ready=False/WaitingForDependencies patched and announced
// once, woken by EndpointSlice changes and re-checked at its deadline; past `timeoutSeconds` after it started waiting
// it fails with `dependency <service> not ready after <n>s`. The start of the wait is the lastTransitionTime of the
// condition DependenciesReady=False, which the gate owns alone: Ready's would not do, since Ready is already False
// while a run is queued for a slot (time spent queued does not count), and a run whose dependencies were ready and
// then went away starts a new wait (DependenciesReady is put back to True once they are ready, before admission). Until the shell's watch has listed, nothing is known and nothing
// fails. Pure.
import {
  type AgentDefinition,
  DEFAULT_DEPENDENCY_TIMEOUT_SECONDS,
  type Dependency,
} from '../../api/index.ts';
import type { Decision } from '../actions.ts';
import { conditionsSatisfied } from '../conditions.ts';
import { CONDITION_DEPENDENCIES_READY, CONDITION_READY, REASON } from '../reasons.ts';
import type { CommonSnapshot, EndpointView } from '../snapshot/common.ts';
import { failBeforeStart } from './fail.ts';
import { agentRef, event, statusPatch } from './status.ts';

/** Re-check period while the EndpointSlice watch has not listed yet. */
export const UNSYNCED_RETRY_MS = 1000;
/** The longest a waiting run goes without a re-check (timers past 2^31 ms would fire at once). */
export const MAX_RECHECK_MS = 3_600_000;

/** True when some endpoint of the Service is ready and, when the dependency names a port, serves it. */
export function dependencyReady(d: Dependency, slices: readonly EndpointView[] | undefined): boolean {
  return (slices ?? []).some(
    (slice) => slice.readyAddresses.length > 0 && (d.port === undefined || slice.ports.includes(d.port)),
  );
}

const describe = (d: Dependency): string =>
  `Service ${d.service}${d.port !== undefined ? ` (port ${d.port})` : ''}`;

/**
 * What the gate says about a Pending run: undefined when every dependency is ready (or there are none), else a
 * decision: wait (patched once, re-checked at the earliest deadline) or fail (the first dependency past its
 * deadline).
 */
export function dependencyGate(
  s: CommonSnapshot,
  definition: AgentDefinition,
  now: Date,
): Decision | undefined {
  const deps = definition.spec.dependencies;
  if (deps.length === 0) return undefined;
  const { agent } = s;
  if (s.endpoints?.kind === 'unsynced') return { actions: [], requeueAfterMs: UNSYNCED_RETRY_MS };
  if (s.endpoints === undefined || s.endpoints.kind === 'unavailable') {
    const why = s.endpoints?.kind === 'unavailable' ? s.endpoints.message : 'not observed';
    const failureReason = `dependencies cannot be checked: ${why}`;
    return failBeforeStart(s, now, {
      kind: 'dependency',
      reason: REASON.dependencyNotReady,
      failureReason,
      message: failureReason,
    });
  }
  const waiting = deps.filter(
    (d) =>
      !dependencyReady(
        d,
        s.endpoints?.kind === 'observed' ? s.endpoints.byService.get(d.service) : undefined,
      ),
  );
  const waitedBefore = agent.status.conditions.find(
    (c) => c.type === CONDITION_DEPENDENCIES_READY && c.status === 'False',
  );
  if (waiting.length === 0) {
    if (waitedBefore === undefined) return undefined;
    // They are ready now: say so first (the patch wakes the run, which is then admitted), so that a later wait
    // starts afresh instead of counting from this one.
    const message = `${deps.map(describe).join(', ')} ha${deps.length === 1 ? 's' : 've'} ready endpoints`;
    const ready = [
      {
        type: CONDITION_DEPENDENCIES_READY,
        status: 'True' as const,
        reason: REASON.dependenciesReady,
        message,
      },
    ];
    return {
      actions: [
        statusPatch(agent, { phase: 'Pending' }, ready, now),
        event(agentRef(agent), 'Normal', REASON.dependenciesReady, message),
      ],
    };
  }
  // The wait started when the run was told it waits (else now: this is the first time).
  const told = waitedBefore;
  const since = told !== undefined ? Date.parse(told.lastTransitionTime) : Number.NaN;
  const start = Number.isNaN(since) ? now.getTime() : since;
  const deadlineOf = (d: Dependency) =>
    start + (d.timeoutSeconds ?? DEFAULT_DEPENDENCY_TIMEOUT_SECONDS) * 1000;
  const late = waiting.find((d) => deadlineOf(d) <= now.getTime());
  if (late !== undefined) {
    const seconds = late.timeoutSeconds ?? DEFAULT_DEPENDENCY_TIMEOUT_SECONDS;
    const failureReason = `dependency ${late.service} not ready after ${seconds}s`;
    return failBeforeStart(s, now, {
      kind: 'dependency',
      reason: REASON.dependencyNotReady,
      failureReason,
      message: `${failureReason}: ${describe(late)} has no ready endpoints`,
    });
  }
  const message = `Waiting for ${waiting.map(describe).join(', ')} to have ready endpoints`;
  const updates = [
    { type: CONDITION_READY, status: 'False' as const, reason: REASON.waitingForDependencies, message },
    {
      type: CONDITION_DEPENDENCIES_READY,
      status: 'False' as const,
      reason: REASON.waitingForDependencies,
      message,
    },
  ];
  const stamped = updates.map((u) => ({ ...u, observedGeneration: agent.metadata.generation }));
  const requeueAfterMs = Math.min(
    MAX_RECHECK_MS,
    Math.max(1, Math.min(...waiting.map(deadlineOf)) - now.getTime()),
  );
  if (conditionsSatisfied(agent.status.conditions, stamped)) return { actions: [], requeueAfterMs };
  return {
    actions: [
      statusPatch(agent, { phase: 'Pending' }, updates, now),
      event(agentRef(agent), 'Normal', REASON.waitingForDependencies, message),
    ],
    requeueAfterMs,
  };
}
