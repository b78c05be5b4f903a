import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Agent } from '../../api/index.ts';
import { agent, finished, NS, running } from '../test-fixtures.ts';
import { laneKey, StationBook } from './book.ts';
import { termStartKeys, toldItWaits, wakeableHeads } from './wake.ts';

const LANE = laneKey(NS, 'stn');
const OTHER = laneKey(NS, 'other');

function bookOf(...agents: Agent[]): StationBook<Agent> {
  const b = new StationBook<Agent>();
  for (const a of agents) b.upsert(`${NS}/${a.metadata.name}`, a);
  return b;
}
const queued = (n: number, station = 'stn'): Agent[] =>
  Array.from({ length: n }, (_, i) => agent(`q${i + 1}`, { created: i + 1, station }));
const waiting = (name: string, created: number): Agent =>
  agent(name, {
    created,
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'Queued',
          message: 'waits',
          lastTransitionTime: '2025-03-01T12:00:00Z',
        },
      ],
    },
  });
const withFinalizer = (a: Agent, finalizer: string): Agent => ({
  ...a,
  metadata: { ...a.metadata, finalizers: [finalizer] },
});

describe('wakeableHeads', () => {
  it('wakes the first limit − holders queued Agents in queue order', () => {
    const b = bookOf(running('r'), ...queued(4));
    assert.deepEqual(wakeableHeads(b, LANE, { maxConcurrentRuns: 3 }), ['team/q1', 'team/q2']);
    assert.deepEqual(wakeableHeads(b, LANE, { maxConcurrentRuns: 1 }), []);
  });

  it('wakes every queued Agent when unlimited, or when the Station is missing or invalid', () => {
    const b = bookOf(running('r'), ...queued(3));
    assert.deepEqual(wakeableHeads(b, LANE, {}), ['team/q1', 'team/q2', 'team/q3']);
    assert.deepEqual(wakeableHeads(b, LANE, undefined), ['team/q1', 'team/q2', 'team/q3']);
  });

  it('wakes the head under Replace even with every slot taken (it may preempt); none under Forbid', () => {
    const b = bookOf(running('r'), ...queued(3));
    assert.deepEqual(wakeableHeads(b, LANE, { maxConcurrentRuns: 1, concurrencyPolicy: 'Replace' }), [
      'team/q1',
    ]);
    assert.deepEqual(wakeableHeads(b, LANE, { concurrencyPolicy: 'Forbid' }), []);
  });

  it('wakes nobody in a lane without queued Agents, and only its own lane', () => {
    const b = bookOf(running('r'), ...queued(2, 'other'));
    assert.deepEqual(wakeableHeads(b, LANE, {}), []);
    assert.deepEqual(wakeableHeads(b, OTHER, { maxConcurrentRuns: 1 }), ['team/q1']);
  });
});

describe('termStartKeys', () => {
  it('slot holders, servers, queued Agents never told they wait, half-done cleanups, then the heads', () => {
    const agents = [
      running('r'),
      agent('s', { created: 1, status: { phase: 'Serving' } }),
      waiting('told', 2),
      agent('fresh', { created: 3 }),
      withFinalizer(finished('b', 'Succeeded', 5), 'agents.re-cinq.com/batch-cleanup'),
      withFinalizer(finished('c', 'Failed', 6), 'agents.re-cinq.com/cleanup'),
      // Deleted while no controller ran: its spend still has to reach the ledger (issue 28 §4).
      withFinalizer(finished('spent', 'Succeeded', 7, { deleting: true }), 'agents.re-cinq.com/spend'),
      // Not deleted: its own status counts its spend, nothing to do.
      withFinalizer(finished('kept', 'Succeeded', 7), 'agents.re-cinq.com/spend'),
      finished('done', 'Succeeded', 7),
    ];
    const b = bookOf(...agents);
    const keys = termStartKeys(agents, b, () => ({ maxConcurrentRuns: 3 }));
    // Limit 3, one holder (r; a server holds no slot): two heads, in queue order (told, created 2, then fresh).
    assert.deepEqual(keys, [
      'team/r',
      'team/s',
      'team/fresh',
      'team/b',
      'team/c',
      'team/spent',
      'team/told',
      'team/fresh',
    ]);
  });

  it('toldItWaits reads Ready=False/Queued only', () => {
    assert.equal(toldItWaits(waiting('w', 0)), true);
    assert.equal(toldItWaits(agent('a')), false);
  });
});
