import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Agent } from '../api/index.ts';
import type { KubeObject } from '../kube/index.ts';
import { laneKey, StationBook } from '../reconcile/index.ts';
import type { StationConcurrency } from '../reconcile/station/admission.ts';
import { agent, complete, finished, job, NS, running } from '../reconcile/test-fixtures.ts';
import {
  createTriggers,
  type ReconcileReason,
  type Source,
  type SourceEvents,
  TRIGGERS,
} from './triggers.ts';

/** What one event queued: `key reason`, `!` after the key when urgent. */
type Queued = string;

/** A book and Station settings by lane; every trigger of TRIGGERS interpreted, what they queue recorded. */
function setup(agents: Agent[], stations: Record<string, Omit<StationConcurrency, 'name'>>, jobOwners = {}) {
  const book = new StationBook<Agent>();
  for (const a of agents) book.upsert(`${a.metadata.namespace}/${a.metadata.name}`, a);
  const queued: Queued[] = [];
  let active = true;
  const triggers = createTriggers(
    TRIGGERS,
    {
      book,
      stationOf: (lane) => stations[lane],
      agents: () => agents,
      ownerOfJob: (jobKey) => (jobOwners as Record<string, string>)[jobKey],
    },
    (key: string, urgent: boolean, reason: ReconcileReason) =>
      queued.push(`${key}${urgent ? '!' : ''} ${reason}`),
    () => active,
  );
  const fire = <S extends Source>(source: S, event: SourceEvents[S]): Queued[] => {
    queued.length = 0;
    triggers.fire(source, event);
    return [...queued];
  };
  const setActive = (on: boolean): void => {
    active = on;
  };
  return { book, fire, setActive };
}

const LANE = laneKey(NS, 'stn');
const OTHER = laneKey(NS, 'other');
const q = (name: string, created: number, station = 'stn') => agent(name, { created, station });
const raw = (o: unknown) => o as KubeObject;

describe('the trigger table', () => {
  it('an Agent change queues the Agent, then the heads of its queue; a move wakes both queues', () => {
    const moved = q('m', 9, 'other');
    const { fire } = setup([running('r'), q('q1', 1), q('q2', 2), q('o1', 1, 'other'), moved], {
      [LANE]: { maxConcurrentRuns: 2 },
      [OTHER]: { maxConcurrentRuns: 1 },
    });
    assert.deepEqual(fire('agent', { type: 'added', object: running('r') }), [
      'team/r agent-changed',
      'team/q1 slot-may-have-freed',
    ]);
    assert.deepEqual(fire('agent', { type: 'modified', old: q('m', 9), object: moved }), [
      'team/m agent-changed',
      'team/o1 slot-may-have-freed',
      'team/q1 slot-may-have-freed',
    ]);
    // Deleted: nothing left to reconcile, but its slot may have freed.
    assert.deepEqual(fire('agent', { type: 'deleted', object: running('gone') }), [
      'team/q1 slot-may-have-freed',
    ]);
  });

  it('a run that finishes wakes the finished runs of its Station holding a stored session (sessionHistoryLimit)', () => {
    const holding = (a: Agent): Agent => ({
      ...a,
      metadata: { ...a.metadata, finalizers: ['agents.re-cinq.com/session-state'] },
    });
    const kept = holding(finished('old', 'Succeeded', 10));
    const plain = finished('plain', 'Succeeded', 11);
    const { fire } = setup([kept, plain, running('r')], { [LANE]: { maxConcurrentRuns: 0 } });
    const queued = fire('agent', {
      type: 'modified',
      old: running('r'),
      object: finished('r', 'Succeeded', 20),
    });
    assert.ok(queued.includes('team/old session-history'), queued.join(', '));
    assert.equal(
      queued.some((x) => x.startsWith('team/plain')),
      false,
    );
    // A finished run changing again (an echo) wakes nobody for this.
    const echo = fire('agent', {
      type: 'modified',
      old: finished('r', 'Succeeded', 20),
      object: finished('r', 'Succeeded', 20),
    });
    assert.equal(
      echo.some((x) => x.endsWith('session-history')),
      false,
    );
  });

  it('a Job wakes its Agent when it appears, finishes (urgently) or vanishes; not on progress', () => {
    const { fire } = setup([running('r'), q('q1', 1)], { [LANE]: { maxConcurrentRuns: 1 } });
    const runningJob = raw(job('r', { active: 1 }));
    const progressed = raw(job('r', { active: 1, succeeded: 0 }));
    const done = raw(job('r', { conditions: complete, succeeded: 1 }));
    assert.deepEqual(fire('job', { type: 'added', object: runningJob }), ['team/r job-changed']);
    assert.deepEqual(fire('job', { type: 'modified', old: runningJob, object: progressed }), []);
    assert.deepEqual(fire('job', { type: 'modified', old: progressed, object: done }), [
      'team/r! job-changed',
    ]);
    assert.deepEqual(fire('job', { type: 'modified', old: done, object: done }), []);
    // Gone: its Agent, and the heads of the Agent's queue (r still holds a slot in this book: none free).
    assert.deepEqual(fire('job', { type: 'deleted', object: done }), ['team/r job-changed']);
    assert.deepEqual(fire('job', { type: 'added', object: raw(job('x', { owner: null })) }), []);
  });

  it('a Station wakes its own queue; a definition or an EndpointSlice its namespace; a policy every queue', () => {
    const { fire } = setup([q('q1', 1), q('o1', 1, 'other'), agent('z', { created: 1 })], {
      [LANE]: { maxConcurrentRuns: 1 },
      [OTHER]: {},
    });
    const stationObj = raw({ metadata: { name: 'other', namespace: NS } });
    assert.deepEqual(fire('station', { type: 'added', object: stationObj }), ['team/o1 station-changed']);
    const inNs = raw({ metadata: { name: 'x', namespace: NS } });
    const elsewhere = raw({ metadata: { name: 'x', namespace: 'elsewhere' } });
    assert.deepEqual(fire('definition', { type: 'added', object: inNs }).sort(), [
      'team/o1 definition-changed',
      'team/q1 definition-changed',
    ]);
    assert.deepEqual(fire('definition', { type: 'added', object: elsewhere }), []);
    assert.deepEqual(fire('endpointSlice', { type: 'deleted', object: elsewhere }), []);
    assert.deepEqual(fire('policy', { type: 'added', object: raw({ metadata: { name: 'p' } }) }).sort(), [
      'team/o1 policy-changed',
      'team/q1 policy-changed',
    ]);
  });

  it('a start problem wakes the Job owner when blocked, or when the Agent shows one that may have gone', () => {
    const showing = running('s', {
      status: {
        conditions: [
          {
            type: 'StartBlocked',
            status: 'True',
            reason: 'ImagePullBackOff',
            message: 'x',
            lastTransitionTime: '2025-03-01T12:00:00Z',
          },
        ],
      },
    });
    const { fire } = setup([running('r'), showing], {}, { 'team/job-r': 'team/r', 'team/job-s': 'team/s' });
    assert.deepEqual(fire('startProblem', { job: 'team/job-r', blocked: true }), ['team/r start-problem']);
    assert.deepEqual(fire('startProblem', { job: 'team/job-r', blocked: false }), []);
    assert.deepEqual(fire('startProblem', { job: 'team/unknown', blocked: true }), []);
    const cleared = fire('startProblem', { job: 'team/job-s', blocked: false });
    assert.deepEqual(cleared, ['team/s start-problem']);
  });

  it('a batch end is urgent; the poll wakes the heads and every server; a term starts with holders and heads', () => {
    const server = agent('srv', { status: { phase: 'Serving' } });
    const { fire } = setup([running('r'), q('q1', 1), q('q2', 2), server], {
      [LANE]: { maxConcurrentRuns: 2 },
    });
    assert.deepEqual(fire('batchEnded', { key: 'team/b' }), ['team/b! batch-ended']);
    assert.deepEqual(fire('poll', undefined), ['team/q1 poll', 'team/srv server-recheck']);
    assert.deepEqual(fire('termStart', undefined), [
      'team/r term-start',
      'team/q1 term-start',
      'team/q2 term-start',
      'team/srv term-start',
      'team/q1 term-start',
    ]);
  });

  it('queues nothing outside a term', () => {
    const { fire, setActive } = setup([q('q1', 1)], {});
    setActive(false);
    assert.deepEqual(fire('agent', { type: 'added', object: q('q1', 1) }), []);
    assert.deepEqual(fire('poll', undefined), []);
  });

  it('every source has a row', () => {
    const sources = new Set(TRIGGERS.map((t) => t.source));
    assert.deepEqual([...sources].sort(), [
      'agent',
      'batchEnded',
      'definition',
      'endpointSlice',
      'job',
      'policy',
      'poll',
      'startProblem',
      'station',
      'termStart',
    ]);
  });
});
