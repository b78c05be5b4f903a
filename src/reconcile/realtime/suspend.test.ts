import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Agent } from '../../api/index.ts';
import type { Action, Decision } from '../actions.ts';
import { decide } from '../agent/decide.ts';
import type { Snapshot } from '../snapshot.ts';
import { StationBook } from '../station/book.ts';
import {
  agent,
  at,
  deadlineExceeded,
  definition,
  failedBackoff,
  finished,
  iso,
  job,
  queueOf,
  recordingBuilder,
  running,
  station,
} from '../test-fixtures.ts';
import { FAILURE_IDLE_NEEDS_REALTIME, FAILURE_NO_SESSION_STORE } from './suspend.ts';

const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: false, pollMs: 60000 },
  realtime: { enabled: true },
  sessions: { enabled: true },
};
const REALTIME = definition('def', { execution: 'realtime', idleTimeoutSeconds: 60 });
const REF = { namespace: 'team', name: 'a', uid: 'uid-a' };
const JOB_REF = { namespace: 'team', name: 'agent-job-a', uid: 'uid-job-a' };
const FINALIZER = 'agents.re-cinq.com/session-state';

/** `a` with these annotations added. */
const annotated = (a: Agent, annotations: Record<string, string>): Agent => ({
  ...a,
  metadata: { ...a.metadata, annotations: { ...a.metadata.annotations, ...annotations } },
});
/** `a` holding these finalizers. */
const holding = (a: Agent, ...finalizers: string[]): Agent => ({
  ...a,
  metadata: { ...a.metadata, finalizers },
});
const deleting = (a: Agent): Agent => ({ ...a, metadata: { ...a.metadata, deletionTimestamp: iso(900) } });

/** A Running realtime session with its two turns saved, the last prompt at `last` seconds, holding the finalizer. */
function session(last: number, extra: Record<string, unknown> = {}): Agent {
  return holding(
    running('a', {
      status: { session: { turns: 2, savedTurn: 2, lastPromptTime: iso(last), ...extra } },
    }),
    FINALIZER,
  );
}

/** A Suspended session (suspended at 100 s, two turns saved). */
function suspended(extra: Record<string, unknown> = {}, created = 0): Agent {
  return holding(
    agent('a', {
      created,
      status: {
        phase: 'Suspended',
        jobName: 'agent-job-a',
        startedAt: iso(1),
        session: { turns: 2, savedTurn: 2, lastPromptTime: iso(30), suspendedAt: iso(100), ...extra },
        conditions: [],
      },
    }),
    FINALIZER,
  );
}

function snap(a: Agent, over: Partial<Snapshot> = {}): Snapshot {
  return {
    agent: a,
    station: station(),
    definition: REALTIME,
    job: { kind: 'present', job: job('a', { active: 1 }), evidence: { kind: 'notGathered' } },
    queue: queueOf(a, [a]),
    options: OPTIONS,
    start: { live: true, pods: [], failedCreate: [] },
    ...over,
  } as Snapshot;
}

const kinds = (d: Decision): string[] => d.actions.map((x) => x.kind);
const patchOf = (d: Decision) => {
  const p = d.actions.find((x): x is Extract<Action, { kind: 'patchStatus' }> => x.kind === 'patchStatus');
  assert.ok(p !== undefined, `a status patch in ${kinds(d).join(', ')}`);
  return p.status;
};
const eventsOf = (d: Decision) =>
  d.actions.flatMap((x) => (x.kind === 'recordEvent' ? [`${x.type} ${x.reason}`] : []));
const metricsOf = (d: Decision) =>
  d.actions.flatMap((x) => (x.kind === 'observeMetric' ? [JSON.stringify(x.observation)] : []));

describe('sessions: what the prompt API reports is recorded (issue 29)', () => {
  it('the first saved turn adds the session-state finalizer first, alone', () => {
    const a = annotated(running('a'), {
      'agents.re-cinq.com/session-turns': '1',
      'agents.re-cinq.com/session-saved-turn': '1',
      'agents.re-cinq.com/session-last-prompt': iso(20),
    });
    const d = decide(snap(a), at(30));
    assert.deepEqual(d.actions, [
      { kind: 'addFinalizer', ref: REF, resourceVersion: 'rv-a', finalizer: FINALIZER, first: true },
    ]);
  });

  it('then turns, savedTurn and lastPromptTime in status.session', () => {
    const a = holding(
      annotated(running('a'), {
        'agents.re-cinq.com/session-turns': '2',
        'agents.re-cinq.com/session-saved-turn': '2',
        'agents.re-cinq.com/session-last-prompt': iso(20),
      }),
      FINALIZER,
    );
    const d = decide(snap(a), at(30));
    assert.deepEqual(kinds(d), ['patchStatus']);
    assert.deepEqual(patchOf(d).session, { turns: 2, savedTurn: 2, lastPromptTime: iso(20) });
  });

  it('never moves back: older or malformed reports change nothing', () => {
    const a = annotated(session(40, { turns: 3, savedTurn: 3 }), {
      'agents.re-cinq.com/session-turns': '2',
      'agents.re-cinq.com/session-saved-turn': 'x',
      'agents.re-cinq.com/session-last-prompt': iso(20),
    });
    const d = decide(snap(a), at(50));
    assert.equal(
      d.actions.some((x) => x.kind === 'patchStatus'),
      false,
    );
  });

  it('a saved turn ahead of the turns ended is not taken', () => {
    const a = holding(
      annotated(running('a'), {
        'agents.re-cinq.com/session-turns': '1',
        'agents.re-cinq.com/session-saved-turn': '5',
      }),
      FINALIZER,
    );
    assert.deepEqual(patchOf(decide(snap(a), at(30))).session, { turns: 1 });
  });
});

describe('sessions: idle suspend (issue 29 §2)', () => {
  it('idle past idleTimeoutSeconds, every turn saved → Suspended, Job deleted, Event, metric', () => {
    const d = decide(snap(session(30)), at(91));
    assert.deepEqual(kinds(d), ['patchStatus', 'deleteJob', 'recordEvent', 'observeMetric']);
    const status = patchOf(d);
    assert.equal(status.phase, 'Suspended');
    assert.deepEqual(status.session, { suspendedAt: iso(91) });
    assert.deepEqual(
      status.conditions.map((c) => [c.type, c.status, c.reason]),
      [['Ready', 'False', 'Suspended']],
    );
    assert.deepEqual(d.actions[1], { kind: 'deleteJob', ...JOB_REF });
    assert.deepEqual(eventsOf(d), ['Normal Suspended']);
    assert.deepEqual(metricsOf(d), [JSON.stringify({ metric: 'sessionSuspended', trigger: 'idle' })]);
  });

  it('not idle yet → nothing, re-checked at the idle deadline', () => {
    const d = decide(snap(session(30)), at(80));
    assert.deepEqual(d.actions, []);
    assert.equal(d.requeueAfterMs, 10_000);
  });

  it("the Station's idleTimeoutSeconds wins over the definition's", () => {
    const s = snap(session(30), { station: station('stn', { idleTimeoutSeconds: 200 }) });
    assert.deepEqual(decide(s, at(91)).actions, []);
    assert.equal(kinds(decide(s, at(231)))[0], 'patchStatus');
  });

  it('a turn in flight keeps it (a re-check later, never past the backstop)', () => {
    const a = annotated(session(30), { 'agents.re-cinq.com/session-turn-in-flight': '3' });
    const d = decide(snap(a), at(500));
    assert.deepEqual(d.actions, []);
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
  });

  it('a stale in-flight mark (a turn that ended) does not', () => {
    const a = annotated(session(30), { 'agents.re-cinq.com/session-turn-in-flight': '2' });
    assert.equal(patchOf(decide(snap(a), at(500))).phase, 'Suspended');
  });

  it('the last turn not saved yet keeps it', () => {
    assert.deepEqual(decide(snap(session(30, { turns: 3 })), at(500)).actions, []);
  });

  it('no saved turn at all keeps it (nothing to restore)', () => {
    const a = running('a', { status: { session: { lastPromptTime: iso(1) } } });
    assert.deepEqual(decide(snap(a), at(500)).actions, []);
  });

  it('without idleTimeoutSeconds: never idle', () => {
    const d = decide(
      snap(session(30), { definition: definition('def', { execution: 'realtime' }) }),
      at(5000),
    );
    assert.deepEqual(d.actions, []);
  });

  it('no store on this controller: never suspended', () => {
    const d = decide(snap(session(30), { options: { ...OPTIONS, sessions: { enabled: false } } }), at(5000));
    assert.deepEqual(d.actions, []);
  });

  it('a woken pod is not idle at once: idle counts from its start when that is later than the last prompt', () => {
    const woken = holding(
      running('a', {
        started: 200,
        status: { session: { turns: 2, savedTurn: 2, lastPromptTime: iso(30) } },
      }),
      FINALIZER,
    );
    const d = decide(snap(woken), at(205));
    assert.deepEqual(d.actions, []);
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs, 'the backstop comes before the idle deadline at 260 s');
    assert.equal(patchOf(decide(snap(woken), at(260))).phase, 'Suspended');
  });

  it('idle counts from the start when no prompt was recorded', () => {
    const a = holding(
      running('a', { started: 10, status: { session: { turns: 1, savedTurn: 1 } } }),
      FINALIZER,
    );
    assert.deepEqual(decide(snap(a), at(69)).actions, []);
    assert.equal(patchOf(decide(snap(a), at(70))).phase, 'Suspended');
  });

  it('suspend-requested → at once, taken once per value', () => {
    const asked = annotated(session(30), { 'agents.re-cinq.com/suspend-requested': iso(40) });
    const d = decide(snap(asked, { definition: definition('def', { execution: 'realtime' }) }), at(41));
    assert.equal(patchOf(d).phase, 'Suspended');
    assert.deepEqual(patchOf(d).session, { suspendedAt: iso(41), suspendRequest: iso(40) });
    assert.deepEqual(metricsOf(d), [JSON.stringify({ metric: 'sessionSuspended', trigger: 'requested' })]);
    // Woken later, the same value asks for nothing.
    const taken = annotated(session(30, { suspendRequest: iso(40) }), {
      'agents.re-cinq.com/suspend-requested': iso(40),
    });
    assert.deepEqual(
      decide(snap(taken, { definition: definition('def', { execution: 'realtime' }) }), at(41)).actions,
      [],
    );
  });
});

describe('sessions: Suspended and its wake (issue 29 §2)', () => {
  it('Suspended, asked for nothing, Job gone → nothing at all (no slot, no timer)', () => {
    assert.deepEqual(decide(snap(suspended(), { job: { kind: 'absent' } }), at(200)), { actions: [] });
  });

  it('Suspended, its old Job still there → deleted; being deleted → a re-check', () => {
    const d = decide(snap(suspended()), at(200));
    assert.deepEqual(d.actions, [{ kind: 'deleteJob', ...JOB_REF }]);
    const going = decide(
      snap(suspended(), {
        job: { kind: 'present', job: job('a', { deleting: true }), evidence: { kind: 'notGathered' } },
      }),
      at(200),
    );
    assert.deepEqual(going.actions, []);
    assert.ok((going.requeueAfterMs ?? 0) > 0);
  });

  it('wake-requested → admitted, a new Job built to restore, Running, Woken and SessionRestored', () => {
    const build = recordingBuilder();
    const a = annotated(suspended(), { 'agents.re-cinq.com/wake-requested': iso(190) });
    const d = decide(snap(a, { job: { kind: 'absent' }, policy: { kind: 'none' } }), at(200), build);
    assert.ok(kinds(d).includes('createJob'), kinds(d).join(', '));
    assert.equal(build.calls.at(-1)?.sessionRestore, true);
    const created = d.actions.find((x) => x.kind === 'createJob');
    const env = JSON.stringify(created);
    assert.match(env, /"name":"AGENT_SESSION_RESTORE","value":"true"/);
    const status = patchOf(d);
    assert.equal(status.phase, 'Running');
    assert.deepEqual(status.session, { wakeRequest: iso(190) });
    assert.deepEqual(eventsOf(d).slice(-2), ['Normal Woken', 'Normal SessionRestored']);
    assert.deepEqual(
      metricsOf(d).at(-1),
      JSON.stringify({ metric: 'sessionWoken', trigger: 'wake', seconds: 10 }),
    );
    assert.equal(
      metricsOf(d).some((m) => m.includes('runQueue')),
      false,
      'the queue time of the run is not observed again',
    );
  });

  it('a wake already taken asks for nothing', () => {
    const a = annotated(suspended({ wakeRequest: iso(190) }), {
      'agents.re-cinq.com/wake-requested': iso(190),
    });
    assert.deepEqual(decide(snap(a, { job: { kind: 'absent' } }), at(200)), { actions: [] });
  });

  it('wake under a full Station → it waits, still Suspended, Ready=False/Queued', () => {
    const full = station('stn', { maxConcurrentRuns: 1 });
    const other = running('b', { created: 5 });
    const a = annotated(suspended(), { 'agents.re-cinq.com/wake-requested': iso(190) });
    const d = decide(
      snap(a, {
        station: full,
        job: { kind: 'absent' },
        policy: { kind: 'none' },
        queue: queueOf(a, [a, other]),
      }),
      at(200),
    );
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
    const status = patchOf(d);
    assert.equal(status.phase, 'Suspended');
    assert.equal(status.session, undefined);
    assert.deepEqual(
      status.conditions.map((c) => [c.type, c.reason]),
      [['Ready', 'Queued']],
    );
  });

  it("the wake's Job made but its Running patch lost → adopted, the wake taken in the same patch", () => {
    const a = annotated(suspended(), { 'agents.re-cinq.com/wake-requested': iso(190) });
    const fresh = job('a', { created: 201, active: 1 });
    const d = decide(
      snap(a, {
        job: { kind: 'present', job: fresh, evidence: { kind: 'notGathered' } },
        policy: { kind: 'none' },
      }),
      at(202),
    );
    assert.equal(
      d.actions.some((x) => x.kind === 'createJob' || x.kind === 'deleteJob'),
      false,
    );
    assert.equal(patchOf(d).phase, 'Running');
    assert.deepEqual(patchOf(d).session, { wakeRequest: iso(190) });
  });

  it('deleted while Suspended → the stored session deleted, then the finalizer removed', () => {
    const d = decide(snap(deleting(suspended()), { job: { kind: 'absent' } }), at(200));
    assert.deepEqual(kinds(d), ['deleteSession', 'recordEvent', 'removeFinalizer']);
    assert.deepEqual(d.actions[0], { kind: 'deleteSession', ref: REF });
    assert.deepEqual(d.actions[2], { kind: 'removeFinalizer', ref: REF, finalizer: FINALIZER, index: 0 });
  });

  it('a failed delete is counted with a Warning and backoff; the fifth gives up naming what was left', () => {
    const failed = { kind: 'failed' as const, message: 'the store answered 503' };
    const d = decide(
      snap(deleting(suspended()), { job: { kind: 'absent' }, sessionCleanup: failed }),
      at(200),
    );
    assert.deepEqual(kinds(d), ['patchStatus', 'observeMetric', 'recordEvent']);
    assert.deepEqual(patchOf(d).session, { cleanupAttempts: 1 });
    assert.equal(d.requeueAfterMs, 5000);
    const last = decide(
      snap(deleting(suspended({ cleanupAttempts: 4 })), { job: { kind: 'absent' }, sessionCleanup: failed }),
      at(200),
    );
    assert.deepEqual(kinds(last), ['patchStatus', 'observeMetric', 'recordEvent', 'removeFinalizer']);
    const warning = last.actions.find((x) => x.kind === 'recordEvent');
    assert.match(
      warning?.kind === 'recordEvent' ? warning.message : '',
      /Gave up deleting the stored session sessions\/team\/uid-a\/ after 5 failed attempts/,
    );
  });

  it('deleted on a controller without a store → the finalizer goes with a Warning naming the prefix', () => {
    const d = decide(
      snap(deleting(suspended()), {
        job: { kind: 'absent' },
        options: { ...OPTIONS, sessions: { enabled: false } },
      }),
      at(200),
    );
    assert.deepEqual(kinds(d), ['recordEvent', 'removeFinalizer']);
    assert.deepEqual(eventsOf(d), ['Warning SessionCleanupFailed']);
  });
});

describe('sessions: pod loss (issue 29 §3)', () => {
  it('Job failed (pod lost) with a saved turn → Suspended with restorePending, restarts+1, Job deleted', () => {
    const lost = job('a', { conditions: failedBackoff, failed: 1 });
    const d = decide(
      snap(session(30), { job: { kind: 'present', job: lost, evidence: { kind: 'notGathered' } } }),
      at(50),
    );
    assert.deepEqual(kinds(d), ['patchStatus', 'deleteJob', 'recordEvent']);
    const status = patchOf(d);
    assert.equal(status.phase, 'Suspended');
    assert.deepEqual(status.session, { suspendedAt: iso(50), restorePending: iso(50), restarts: 1 });
    assert.deepEqual(eventsOf(d), ['Warning SessionRestored']);
  });

  it('Job gone → the same, nothing to delete', () => {
    const d = decide(snap(session(30), { job: { kind: 'absent' } }), at(50));
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
    assert.equal(patchOf(d).phase, 'Suspended');
  });

  it('the restore pending is admitted at once, without a wake annotation, and clears it', () => {
    const build = recordingBuilder();
    const a = suspended({ restorePending: iso(50), restarts: 1, suspendedAt: iso(50) });
    const d = decide(snap(a, { job: { kind: 'absent' }, policy: { kind: 'none' } }), at(52), build);
    assert.ok(kinds(d).includes('createJob'));
    assert.equal(build.calls.at(-1)?.sessionRestore, true);
    assert.deepEqual(patchOf(d).session, { restorePending: null });
    assert.deepEqual(eventsOf(d).slice(-1), ['Normal SessionRestored']);
    assert.deepEqual(
      metricsOf(d).at(-1),
      JSON.stringify({ metric: 'sessionWoken', trigger: 'restore', seconds: 2 }),
    );
  });

  it('after 3 restores the next loss ends the run Failed with a SessionLost Warning', () => {
    const lost = job('a', { conditions: failedBackoff, failed: 1 });
    const d = decide(
      snap(session(30, { restarts: 3 }), {
        job: { kind: 'present', job: lost, evidence: { kind: 'podGone' } },
      }),
      at(50),
    );
    assert.equal(patchOf(d).phase, 'Failed');
    assert.ok(eventsOf(d).includes('Warning SessionLost'), eventsOf(d).join(', '));
  });

  it('no saved turn → the run ends as before', () => {
    const lost = job('a', { conditions: failedBackoff, failed: 1 });
    const a = running('a');
    const d = decide(snap(a, { job: { kind: 'present', job: lost, evidence: { kind: 'podGone' } } }), at(50));
    assert.equal(patchOf(d).phase, 'Failed');
    assert.equal(eventsOf(d).includes('Warning SessionLost'), false);
  });

  it('a Job past its deadline is not restored', () => {
    const over = job('a', { conditions: deadlineExceeded, failed: 1 });
    const d = decide(
      snap(session(30), { job: { kind: 'present', job: over, evidence: { kind: 'podGone' } } }),
      at(50),
    );
    assert.equal(patchOf(d).phase, 'Failed');
  });

  it('a close (the Job completed) ends the run as before', () => {
    const closed = job('a', { conditions: [{ type: 'Complete', status: 'True' }], succeeded: 1 });
    const d = decide(
      snap(session(30), { job: { kind: 'present', job: closed, evidence: { kind: 'podGone' } } }),
      at(50),
    );
    assert.equal(patchOf(d).phase, 'Succeeded');
  });
});

describe('sessions: refusals at Pending', () => {
  it('idleTimeoutSeconds on a controller without a store → Failed naming the store', () => {
    const d = decide(
      snap(agent('a'), { job: { kind: 'absent' }, options: { ...OPTIONS, sessions: { enabled: false } } }),
      at(5),
    );
    assert.equal(patchOf(d).phase, 'Failed');
    assert.equal(patchOf(d).failureReason, FAILURE_NO_SESSION_STORE);
  });

  it('idleTimeoutSeconds on a Job run (definition or Station) → Failed', () => {
    const d = decide(
      snap(agent('a'), {
        job: { kind: 'absent' },
        definition: definition('def', {}),
        station: station('stn', { idleTimeoutSeconds: 30 }),
      }),
      at(5),
    );
    assert.equal(patchOf(d).phase, 'Failed');
    assert.equal(patchOf(d).failureReason, FAILURE_IDLE_NEEDS_REALTIME);
  });
});

describe('sessions: the Station keeps sessionHistoryLimit stored sessions of finished runs (issue 29 §5)', () => {
  const kept = (name: string, completed: number) =>
    holding(finished(name, 'Succeeded', completed), FINALIZER);

  it('a finished run beyond the limit → its stored session deleted, its finalizer removed (the Agent stays)', () => {
    const old = kept('a', 10);
    const newer = [kept('b', 20), kept('c', 30)];
    const d = decide(
      snap(old, {
        station: station('stn', { sessionHistoryLimit: 2 }),
        queue: queueOf(old, [old, ...newer]),
      }),
      at(40),
    );
    assert.deepEqual(kinds(d), ['deleteSession', 'recordEvent', 'removeFinalizer']);
  });

  it('within the limit, or without one → kept', () => {
    const newest = kept('c', 30);
    const others = [kept('a', 10), kept('b', 20)];
    const limited = snap(newest, {
      station: station('stn', { sessionHistoryLimit: 2 }),
      queue: queueOf(newest, [newest, ...others]),
    });
    assert.deepEqual(decide(limited, at(40)).actions, []);
    const old = kept('a', 10);
    assert.deepEqual(decide(snap(old, { queue: queueOf(old, [old, ...others]) }), at(40)).actions, []);
  });
});

describe('sessions: the Station book (no slot while Suspended; a wake queues by its time)', () => {
  it('Suspended holds no slot and is not queued; asked to wake it queues behind earlier waiters', () => {
    const book = new StationBook<Agent>();
    const holder = running('h', { created: 0 });
    const waiter = agent('w', { created: 150 });
    book.upsert('team/h', holder);
    book.upsert('team/w', waiter);
    book.upsert('team/a', suspended());
    assert.equal(book.placeOf('team/a'), 'none');
    assert.deepEqual(book.counts('team/stn'), { queued: 1, holding: 1, finished: 0 });
    // Woken at 190 s: behind the Pending run created at 150 s, though the Agent itself is older.
    book.upsert('team/a', annotated(suspended(), { 'agents.re-cinq.com/wake-requested': iso(190) }));
    assert.equal(book.placeOf('team/a'), 'queued');
    assert.deepEqual(book.heads('team/stn', 2), ['team/w', 'team/a']);
    // Admitted, Running, then Suspended again: the slot is given back.
    book.admit('team/a');
    assert.equal(book.placeOf('team/a'), 'holding');
    book.upsert('team/a', session(30));
    book.upsert('team/a', suspended({ wakeRequest: iso(190) }));
    assert.equal(book.placeOf('team/a'), 'none');
  });
});
