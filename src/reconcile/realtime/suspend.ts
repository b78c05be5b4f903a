// Durable realtime sessions (issue 29, docs/design/sessions.md): what the prompt API reports after each turn
// (annotations) recorded in `status.session`, idle suspend, the wake a prompt or `agent-controller resume` asks for,
// a lost pod replaced from the last saved turn, and the stored state deleted with its Agent or beyond the Station's
// `sessionHistoryLimit`. Pure: the prompt API and the executor do the I/O (docs/design/one-writer.md).

import {
  type Agent,
  type AgentDefinition,
  ANNOTATION_SESSION_IN_FLIGHT,
  ANNOTATION_SESSION_LAST_PROMPT,
  ANNOTATION_SESSION_SAVED_TURN,
  ANNOTATION_SESSION_TURNS,
  ANNOTATION_SUSPEND_REQUESTED,
  idleTimeoutSecondsOf,
  type Job,
  MAX_SESSION_CLEANUP_ATTEMPTS,
  MAX_SESSION_RESTARTS,
  SESSION_STATE_FINALIZER,
  type Station,
} from '../../api/index.ts';
import { LABEL_EXECUTION } from '../../jobs/realtime.ts';
import type { Action, Decision, SessionStatusPatch } from '../actions.ts';
import {
  agentRef,
  clip,
  event,
  formatStatusTime,
  MAX_CONDITION_MESSAGE,
  statusPatch,
} from '../agent/status.ts';
import type { ConditionUpdate } from '../conditions.ts';
import { CONDITION_READY, REASON } from '../reasons.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { compareHistoryOrder, inStation, isTerminal, type WakeRequest } from '../station/runs.ts';

export { type WakeRequest, wakeRequest } from '../station/runs.ts';

import { isRealtime } from './plan.ts';

/** The refusal of idleTimeoutSeconds on a run that is not realtime. */
export const FAILURE_IDLE_NEEDS_REALTIME = 'idleTimeoutSeconds requires execution: realtime';
/** The refusal of idleTimeoutSeconds on a controller without a session store. */
export const FAILURE_NO_SESSION_STORE =
  'idleTimeoutSeconds needs a session store, and this controller has none (AGENT_SESSION_STORE_URL)';
/** Re-check period while a Job the session left (suspended, or lost) is still being deleted. */
export const SESSION_JOB_GONE_RETRY_MS = 2000;

/** Why a run asking for idle suspend cannot have it; undefined when it can or does not ask. */
export function sessionProblem(
  station: Station,
  definition: AgentDefinition,
  storeEnabled: boolean,
): string | undefined {
  if (idleTimeoutSecondsOf(station, definition) === undefined) return undefined;
  if (!isRealtime(definition)) return FAILURE_IDLE_NEEDS_REALTIME;
  if (!storeEnabled) return FAILURE_NO_SESSION_STORE;
  return undefined;
}

const storeEnabled = (s: CommonSnapshot): boolean => s.options.sessions?.enabled === true;

/** A non-negative integer annotation; undefined when absent or not one. */
function countOf(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,9}$/.test(value)) return undefined;
  return Number(value);
}

/** An RFC 3339 annotation as epoch ms; undefined when absent or unparseable. */
function timeOf(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : t;
}

/** What the prompt API reported on the Agent (annotations), as read; unusable values read as absent. */
export interface SessionReport {
  readonly turns?: number | undefined;
  readonly savedTurn?: number | undefined;
  readonly lastPromptTime?: string | undefined;
  readonly inFlight?: number | undefined;
}

export function sessionReport(agent: Agent): SessionReport {
  const a = agent.metadata.annotations ?? {};
  const last = a[ANNOTATION_SESSION_LAST_PROMPT];
  return {
    turns: countOf(a[ANNOTATION_SESSION_TURNS]),
    savedTurn: countOf(a[ANNOTATION_SESSION_SAVED_TURN]),
    lastPromptTime: timeOf(last) !== undefined ? last : undefined,
    inFlight: countOf(a[ANNOTATION_SESSION_IN_FLIGHT]),
  };
}

/** True for a run whose prompts the controller serves: its recipe says so, or its Job carries the realtime label. */
export function runIsRealtime(s: CommonSnapshot): boolean {
  if (isRealtime(s.definition)) return true;
  return s.job.kind === 'present' && s.job.job.metadata.labels?.[LABEL_EXECUTION] === 'realtime';
}

/**
 * The `status.session` fields the reported ones are ahead of (counts only grow; the last prompt time only moves
 * forward); undefined when the status says it all.
 */
export function progressPatch(agent: Agent): SessionStatusPatch | undefined {
  const r = sessionReport(agent);
  const now = agent.status.session ?? {};
  const patch: { turns?: number; savedTurn?: number; lastPromptTime?: string } = {};
  if (r.turns !== undefined && r.turns > (now.turns ?? 0)) patch.turns = r.turns;
  const turns = patch.turns ?? now.turns ?? 0;
  // A saved turn is one that ended: never ahead of the turns.
  if (r.savedTurn !== undefined && r.savedTurn > (now.savedTurn ?? 0) && r.savedTurn <= Math.max(turns, 0))
    patch.savedTurn = r.savedTurn;
  const reported = timeOf(r.lastPromptTime);
  if (
    r.lastPromptTime !== undefined &&
    reported !== undefined &&
    reported > (timeOf(now.lastPromptTime) ?? Number.NEGATIVE_INFINITY)
  )
    patch.lastPromptTime = r.lastPromptTime;
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** True when the Agent holds the session-state finalizer. */
export function holdsSessionFinalizer(agent: Agent): boolean {
  return agent.metadata.finalizers.includes(SESSION_STATE_FINALIZER);
}

/**
 * A Running realtime run whose prompt API reported progress its status lacks: first the session-state finalizer
 * (once a turn is in the store, the Agent cannot go without its state going too), then `status.session`.
 */
export function recordProgress(s: CommonSnapshot, now: Date): Decision | undefined {
  const { agent } = s;
  if (agent.status.phase !== 'Running' || !runIsRealtime(s)) return undefined;
  const patch = progressPatch(agent);
  const saved = patch?.savedTurn ?? agent.status.session?.savedTurn ?? 0;
  if (saved > 0 && storeEnabled(s) && !holdsSessionFinalizer(agent)) {
    return {
      actions: [
        {
          kind: 'addFinalizer',
          ref: agentRef(agent),
          resourceVersion: agent.metadata.resourceVersion,
          finalizer: SESSION_STATE_FINALIZER,
          first: agent.metadata.finalizers.length === 0,
        },
      ],
    };
  }
  if (patch === undefined) return undefined;
  return { actions: [statusPatch(agent, { session: patch }, [], now)], requeueAfterMs: s.options.requeueMs };
}

/** Ready=False/Suspended with `message`. */
export function suspendedConditions(message: string): ConditionUpdate[] {
  return [
    {
      type: CONDITION_READY,
      status: 'False',
      reason: REASON.suspended,
      message: clip(message, MAX_CONDITION_MESSAGE),
    },
  ];
}

/** A suspend-requested value not acted on yet. */
function suspendRequest(agent: Agent): string | undefined {
  const value = agent.metadata.annotations?.[ANNOTATION_SUSPEND_REQUESTED];
  if (value === undefined || value === '' || value === agent.status.session?.suspendRequest) return undefined;
  return value;
}

/** Whether the session can be suspended now: a turn saved, every ended turn saved, none in flight. */
export function suspendable(agent: Agent): boolean {
  const session = agent.status.session ?? {};
  const saved = session.savedTurn ?? 0;
  const turns = session.turns ?? 0;
  const inFlight = sessionReport(agent).inFlight;
  return saved > 0 && saved >= turns && (inFlight === undefined || inFlight <= turns);
}

/**
 * The idle and suspend rows of a Running realtime run whose Job runs (docs/design/sessions.md, "Suspend"): asked
 * (`suspend-requested`) or idle past `idleTimeoutSeconds` since the last prompt (else since it started), with every
 * ended turn saved and none in flight → `Suspended`: the status first (Ready=False/Suspended, `suspendedAt`), then
 * its Job deleted (uid precondition), the Event and the metric; no run slot is held from then on. Not yet idle →
 * a re-check at the idle deadline. Undefined when none of this applies (no store, no timeout, nothing asked).
 */
export function suspendDecision(s: CommonSnapshot, job: Job, now: Date): Decision | undefined {
  const { agent } = s;
  if (!storeEnabled(s) || !runIsRealtime(s)) return undefined;
  const requested = suspendRequest(agent);
  const timeout = idleTimeoutSecondsOf(s.station, s.definition);
  if (requested === undefined && timeout === undefined) return undefined;
  const ready = suspendable(agent);
  // Idle since the last prompt, or since this pod started (a woken or restored session is not idle at once).
  const since = Math.max(
    timeOf(agent.status.session?.lastPromptTime) ?? Number.NEGATIVE_INFINITY,
    timeOf(agent.status.startedAt) ?? Number.NEGATIVE_INFINITY,
  );
  const deadline = timeout !== undefined && Number.isFinite(since) ? since + timeout * 1000 : undefined;
  const trigger =
    requested !== undefined
      ? 'requested'
      : deadline !== undefined && now.getTime() >= deadline
        ? 'idle'
        : undefined;
  if (trigger === undefined || !ready) {
    // Not idle yet, or a turn still being saved or in flight: looked at again at the idle deadline at the latest.
    const wait =
      deadline !== undefined && deadline > now.getTime() ? deadline - now.getTime() : s.options.requeueMs;
    return { actions: [], requeueAfterMs: Math.max(1, Math.min(wait, s.options.requeueMs)) };
  }
  const saved = agent.status.session?.savedTurn ?? 0;
  const message =
    trigger === 'requested'
      ? `Suspended on request: session saved at turn ${saved}, pod deleted; the next prompt wakes it`
      : `Suspended after ${timeout ?? 0}s without a prompt: session saved at turn ${saved}, pod deleted; the next prompt wakes it`;
  const session: SessionStatusPatch = {
    suspendedAt: formatStatusTime(now),
    ...(requested !== undefined ? { suspendRequest: requested } : {}),
  };
  return {
    actions: [
      statusPatch(agent, { phase: 'Suspended', session }, suspendedConditions(message), now),
      {
        kind: 'deleteJob',
        namespace: agent.metadata.namespace,
        name: job.metadata.name,
        uid: job.metadata.uid,
      },
      event(agentRef(agent), 'Normal', REASON.suspended, message),
      { kind: 'observeMetric', observation: { metric: 'sessionSuspended', trigger } },
    ],
  };
}

/**
 * A Running realtime run whose Job is gone, or failed (its pod lost: a close ends the Job well), with a saved turn,
 * on a controller with a store (docs/design/sessions.md, "Pod loss"): restored into a new pod from the last saved
 * turn, up to MAX_SESSION_RESTARTS times. It goes through `Suspended` with `restorePending` (its place in the queue
 * is the time of the loss), so the new pod is admitted and built exactly as a wake's. Undefined: not such a run,
 * or the limit is reached (the run then ends as any Job run; `sessionLostEvents` says why).
 */
export function podLossDecision(s: CommonSnapshot, now: Date, failure: string): Decision | undefined {
  const { agent } = s;
  if (!storeEnabled(s) || !runIsRealtime(s)) return undefined;
  const session = agent.status.session ?? {};
  const saved = session.savedTurn ?? 0;
  const restarts = session.restarts ?? 0;
  if (saved === 0 || restarts >= MAX_SESSION_RESTARTS) return undefined;
  const at = formatStatusTime(now);
  const message = `The session's pod was lost (${failure}): restoring it from turn ${saved} in a new pod (restart ${restarts + 1} of ${MAX_SESSION_RESTARTS}); a turn in flight is not replayed`;
  const actions: Action[] = [
    statusPatch(
      agent,
      { phase: 'Suspended', session: { suspendedAt: at, restorePending: at, restarts: restarts + 1 } },
      suspendedConditions(message),
      now,
    ),
  ];
  if (s.job.kind === 'present' && s.job.job.metadata.deletionTimestamp === undefined) {
    const { name, uid } = s.job.job.metadata;
    actions.push({ kind: 'deleteJob', namespace: agent.metadata.namespace, name, uid });
  }
  actions.push(event(agentRef(agent), 'Warning', REASON.sessionRestored, message));
  return { actions };
}

/** The Events of a realtime run that ends because its lost pod could not be replaced (no saved turn, the limit). */
export function sessionLostEvents(s: CommonSnapshot): { type: 'Warning'; reason: string; message: string }[] {
  if (!storeEnabled(s) || !runIsRealtime(s)) return [];
  const session = s.agent.status.session ?? {};
  if ((session.savedTurn ?? 0) === 0) return [];
  const restarts = session.restarts ?? 0;
  if (restarts < MAX_SESSION_RESTARTS) return [];
  return [
    {
      type: 'Warning',
      reason: REASON.sessionLost,
      message: `The session's pod was lost again after ${restarts} restores (at most ${MAX_SESSION_RESTARTS}): the run ends`,
    },
  ];
}

/**
 * What a Suspended Agent does about the Job it had (deleted when it was suspended or its pod lost): none or
 * confirmed gone → undefined (go on); not read → `needs: 'job'`; still there from before the suspend → deleted (uid
 * precondition); being deleted → a re-check soon. A Job made after the suspend is the wake's: undefined (adopted).
 */
export function suspendedJobWork(s: CommonSnapshot): Decision | undefined {
  const { agent } = s;
  if (s.job.kind === 'unknown') return { actions: [], needs: 'job' };
  if (s.job.kind === 'absent') return undefined;
  const job = s.job.job;
  const owner = job.metadata.ownerReferences.find((r) => r.controller === true);
  const suspendedAt = timeOf(agent.status.session?.suspendedAt) ?? Number.POSITIVE_INFINITY;
  const created = timeOf(job.metadata.creationTimestamp) ?? Number.NEGATIVE_INFINITY;
  if (
    owner?.uid === agent.metadata.uid &&
    job.metadata.deletionTimestamp === undefined &&
    created > suspendedAt
  )
    return undefined;
  if (job.metadata.deletionTimestamp !== undefined)
    return { actions: [], requeueAfterMs: SESSION_JOB_GONE_RETRY_MS };
  if (owner?.uid !== agent.metadata.uid) return undefined;
  const { name, uid } = job.metadata;
  return {
    actions: [{ kind: 'deleteJob', namespace: agent.metadata.namespace, name, uid }],
    requeueAfterMs: SESSION_JOB_GONE_RETRY_MS,
  };
}

/**
 * A wake's start decided (the shared start: admission, the run's objects, the Job built to restore): the Running
 * patch takes the wake (`wakeRequest`, `restorePending` cleared) and the Events and metric follow; a queued one stays
 * Suspended (its Ready says it waits for a slot). Other decisions (a failure, a wait) pass unchanged.
 */
export function asWake(s: CommonSnapshot, wake: WakeRequest, decision: Decision, now: Date): Decision {
  const { agent } = s;
  const saved = agent.status.session?.savedTurn ?? 0;
  let started = false;
  const actions = decision.actions.map((a): Action => {
    if (a.kind !== 'patchStatus') return a;
    if (a.status.phase === 'Pending') return { ...a, status: { ...a.status, phase: 'Suspended' } };
    if (a.status.phase !== 'Running') return a;
    started = true;
    const session: SessionStatusPatch = {
      ...(wake.value !== undefined ? { wakeRequest: wake.value } : {}),
      ...(wake.trigger === 'restore' ? { restorePending: null } : {}),
    };
    return { ...a, status: { ...a.status, session: { ...a.status.session, ...session } } };
  });
  if (!started) return { ...decision, actions };
  // The time a wake waited is its own metric: the run's queue time was observed when it first started.
  const kept = actions.filter((a) => !(a.kind === 'observeMetric' && a.observation.metric === 'runQueue'));
  actions.length = 0;
  actions.push(...kept);
  const ref = agentRef(agent);
  const waited = Number.isFinite(wake.at) ? Math.max(0, (now.getTime() - wake.at) / 1000) : undefined;
  actions.push(
    ...(wake.trigger === 'wake'
      ? [event(ref, 'Normal', REASON.woken, `Woken: a new pod restores the session from turn ${saved}`)]
      : []),
    event(ref, 'Normal', REASON.sessionRestored, `Restoring the session from turn ${saved} in a new pod`),
    {
      kind: 'observeMetric',
      observation: {
        metric: 'sessionWoken',
        trigger: wake.trigger,
        ...(waited !== undefined ? { seconds: waited } : {}),
      },
    },
  );
  return { ...decision, actions };
}

/**
 * The session-state finalizer's work (issue 29 §5) of an Agent being deleted, or finished beyond its Station's
 * `sessionHistoryLimit`: its stored session is deleted, then the finalizer removed. A failed delete is counted
 * (`status.session.cleanupAttempts`, a Warning each time, retried with backoff); after MAX_SESSION_CLEANUP_ATTEMPTS
 * a Warning names what was left and the finalizer goes. Without a store the finalizer goes with a Warning.
 * Undefined: nothing to do (no finalizer, or a finished run still within the limit).
 */
export function sessionCleanup(s: CommonSnapshot, now: Date): Decision | undefined {
  const { agent } = s;
  const index = agent.metadata.finalizers.indexOf(SESSION_STATE_FINALIZER);
  if (index < 0) return undefined;
  const deleting = agent.metadata.deletionTimestamp !== undefined;
  if (!deleting && !beyondSessionHistory(s)) return undefined;
  const ref = agentRef(agent);
  const remove: Action = { kind: 'removeFinalizer', ref, finalizer: SESSION_STATE_FINALIZER, index };
  const where = `sessions/${agent.metadata.namespace}/${agent.metadata.uid}/`;
  if (!storeEnabled(s)) {
    return {
      actions: [
        event(
          ref,
          'Warning',
          REASON.sessionCleanupFailed,
          `This controller has no session store: the stored session ${where} is left; delete it by hand`,
        ),
        remove,
      ],
    };
  }
  const attempts = agent.status.session?.cleanupAttempts ?? 0;
  if (s.sessionCleanup !== undefined) {
    const n = attempts + 1;
    const counted: Action[] = [
      statusPatch(agent, { session: { cleanupAttempts: n } }, [], now),
      { kind: 'observeMetric', observation: { metric: 'sessionCleanupFailure' } },
    ];
    if (n >= MAX_SESSION_CLEANUP_ATTEMPTS) {
      return {
        actions: [
          ...counted,
          event(
            ref,
            'Warning',
            REASON.sessionCleanupFailed,
            `Gave up deleting the stored session ${where} after ${n} failed attempts (${s.sessionCleanup.message}); delete it by hand`,
          ),
          remove,
        ],
      };
    }
    return {
      actions: [
        ...counted,
        event(
          ref,
          'Warning',
          REASON.sessionCleanupFailed,
          `Deleting the stored session ${where} failed (attempt ${n} of ${MAX_SESSION_CLEANUP_ATTEMPTS}): ${s.sessionCleanup.message}`,
        ),
      ],
      requeueAfterMs: sessionCleanupBackoffMs(n),
    };
  }
  return {
    actions: [
      { kind: 'deleteSession', ref },
      event(
        ref,
        'Normal',
        REASON.sessionDeleted,
        deleting
          ? `Agent deleted: its stored session ${where} was deleted`
          : `Station ${agent.spec.stationRef} keeps the sessions of ${s.station?.spec.sessionHistoryLimit ?? 0} finished runs: the stored session ${where} was deleted`,
      ),
      remove,
    ],
  };
}

/** Back-off after the n-th failed delete of a stored session: 5 s doubling, at most 5 min. */
export function sessionCleanupBackoffMs(n: number): number {
  return Math.min(5000 * 2 ** Math.max(0, n - 1), 300_000);
}

/**
 * True for a finished run of a Station with `sessionHistoryLimit` that is not among the newest that many finished
 * runs still holding a stored session (history order: completedAt, newest first).
 */
export function beyondSessionHistory(s: CommonSnapshot): boolean {
  const { agent, station } = s;
  const limit = station?.spec.sessionHistoryLimit;
  if (station === null || limit === undefined || !isTerminal(agent)) return false;
  const kept = [...s.queue.finished, agent]
    .filter(
      (a) =>
        inStation(a, station.metadata.name, station.metadata.namespace) &&
        a.metadata.deletionTimestamp === undefined &&
        a.metadata.finalizers.includes(SESSION_STATE_FINALIZER),
    )
    .sort(compareHistoryOrder);
  const rank = kept.findIndex((a) => a.metadata.uid === agent.metadata.uid);
  return rank >= limit;
}
