import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Agent } from '../../api/index.ts';
import { agent, finished, NS, running } from '../test-fixtures.ts';
import { laneKey, StationBook } from './book.ts';

const key = (a: Agent) => `${NS}/${a.metadata.name}`;
const LANE = laneKey(NS, 'stn');

function bookOf(...agents: Agent[]): StationBook<Agent> {
  const b = new StationBook<Agent>();
  for (const a of agents) b.upsert(key(a), a);
  return b;
}

describe('StationBook', () => {
  it('queues Pending Agents by creationTimestamp, then name, then uid, whatever the insertion order', () => {
    const b = bookOf(
      agent('c', { created: 1 }),
      agent('b', { created: 1, uid: 'u2' }),
      agent('z', { created: 0 }),
      agent('a', { created: 2 }),
      agent('b2', { created: 1 }),
    );
    assert.deepEqual(
      b.heads(LANE, 100).map((k) => k.split('/')[1]),
      ['z', 'b', 'b2', 'c', 'a'],
    );
    assert.equal(b.view(`${NS}/c`)?.ahead, 3);
    assert.equal(b.view(`${NS}/z`)?.ahead, 0);
    assert.deepEqual(b.heads(LANE, 2), [`${NS}/z`, `${NS}/b`]);
  });

  it('an Agent without a creationTimestamp queues last', () => {
    const late = { ...agent('a'), metadata: { ...agent('a').metadata, creationTimestamp: '' } };
    const b = bookOf(late, agent('b', { created: 5 }));
    assert.deepEqual(b.heads(LANE, 100), [`${NS}/b`, `${NS}/a`]);
  });

  it('separates Stations and namespaces into lanes', () => {
    const b = bookOf(agent('a'), agent('b', { station: 'other' }));
    assert.deepEqual(b.lanes().sort(), [laneKey(NS, 'other'), LANE].sort());
    assert.equal(b.view(`${NS}/a`)?.ahead, 0);
    assert.equal(b.view(`${NS}/b`)?.ahead, 0);
  });

  it('holders are Running Agents, Agents with a Job, and admitted Agents; never the candidate itself', () => {
    const b = bookOf(
      running('r'),
      agent('j', { created: 1 }),
      agent('p', { created: 2 }),
      agent('q', { created: 3 }),
    );
    b.jobSeen(`${NS}/agent-job-j`, 'uid-j');
    b.admit(`${NS}/p`);
    assert.deepEqual(b.counts(LANE), { queued: 1, holding: 3, finished: 0 });
    const q = b.view(`${NS}/q`);
    assert.deepEqual(q?.holders.map((a) => a.metadata.name).sort(), ['j', 'p', 'r']);
    assert.equal(q?.ahead, 0);
    assert.equal(q?.holdsSlot, false);
    const p = b.view(`${NS}/p`);
    assert.equal(p?.holdsSlot, true);
    assert.deepEqual(p?.holders.map((a) => a.metadata.name).sort(), ['j', 'r']);
  });

  it('an admission holds until the Agent finishes; the echo of its Running status keeps it holding', () => {
    const b = bookOf(agent('a'));
    b.admit(`${NS}/a`);
    b.upsert(`${NS}/a`, agent('a', { rv: '2', status: { phase: 'Pending', conditions: [] } }));
    assert.equal(b.placeOf(`${NS}/a`), 'holding', 'a later Pending version does not drop the admission');
    b.upsert(`${NS}/a`, running('a'));
    assert.equal(b.placeOf(`${NS}/a`), 'holding');
    b.upsert(`${NS}/a`, finished('a', 'Succeeded', 3));
    assert.equal(b.placeOf(`${NS}/a`), 'finished');
    assert.deepEqual(
      b.finished(LANE).map((a) => a.metadata.name),
      ['a'],
    );
  });

  it('release gives an admission back; a Job keeps holding after it', () => {
    const b = bookOf(agent('a'));
    b.admit(`${NS}/a`);
    b.release(`${NS}/a`);
    assert.equal(b.placeOf(`${NS}/a`), 'queued');
    b.jobSeen(`${NS}/agent-job-a`, 'uid-a');
    b.admit(`${NS}/a`);
    b.release(`${NS}/a`);
    assert.equal(b.placeOf(`${NS}/a`), 'holding');
    b.jobGone(`${NS}/agent-job-a`);
    assert.equal(b.placeOf(`${NS}/a`), 'queued');
  });

  it('a Job seen before its Agent counts once the Agent arrives; a Job of an earlier Agent of that name does not', () => {
    const b = new StationBook<Agent>();
    b.jobSeen(`${NS}/agent-job-a`, 'uid-a');
    b.jobSeen(`${NS}/agent-job-b`, 'uid-old-b');
    b.upsert(`${NS}/a`, agent('a'));
    b.upsert(`${NS}/b`, agent('b', { uid: 'uid-new-b' }));
    assert.equal(b.placeOf(`${NS}/a`), 'holding');
    assert.equal(b.placeOf(`${NS}/b`), 'queued');
  });

  it('Agents being deleted (deletionTimestamp or a claimed delete) are counted nowhere', () => {
    const b = bookOf(running('r'), agent('d', { deleting: true, created: 1 }), agent('p', { created: 2 }));
    assert.equal(b.placeOf(`${NS}/d`), 'none');
    b.setDeleting('uid-r', true);
    assert.equal(b.placeOf(`${NS}/r`), 'none');
    assert.deepEqual(b.view(`${NS}/p`), { holders: [], holdsSlot: false, ahead: 0, finished: [] });
    b.setDeleting('uid-r', false);
    assert.equal(b.placeOf(`${NS}/r`), 'holding');
    b.setDeleting('uid-unknown', true);
    assert.equal(b.size, 3);
  });

  it('remove forgets the Agent, its admission and its deletion mark; a new Agent of the same name starts clean', () => {
    const b = bookOf(agent('a'));
    b.admit(`${NS}/a`);
    b.remove(`${NS}/a`);
    assert.equal(b.view(`${NS}/a`), undefined);
    assert.deepEqual(b.lanes(), []);
    b.upsert(`${NS}/a`, agent('a', { uid: 'uid-a2' }));
    assert.equal(b.placeOf(`${NS}/a`), 'queued');
  });

  it('counts phases across updates and removals', () => {
    const b = bookOf(agent('a'), running('b'), finished('c', 'Failed', 1));
    b.upsert(`${NS}/a`, running('a'));
    b.remove(`${NS}/c`);
    assert.equal(b.phaseCount('Pending'), 0);
    assert.equal(b.phaseCount('Running'), 2);
    assert.equal(b.phaseCount('Failed'), 0);
  });

  it('moving an Agent to another Station moves it between lanes, keeping its admission', () => {
    const b = bookOf(agent('a'), agent('b', { created: 1 }), agent('c', { created: 2 }));
    b.admit(`${NS}/c`);
    b.upsert(`${NS}/c`, agent('c', { created: 2, station: 'third', rv: '2' }));
    assert.equal(b.placeOf(`${NS}/c`), 'holding');
    assert.deepEqual(b.counts(laneKey(NS, 'third')), { queued: 0, holding: 1, finished: 0 });
    b.upsert(`${NS}/a`, agent('a', { station: 'other', rv: '2' }));
    assert.equal(b.view(`${NS}/b`)?.ahead, 0);
    assert.deepEqual(b.heads(laneKey(NS, 'other'), 100), [`${NS}/a`]);
  });
});
