import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { selectHistoryToPrune } from './prune.ts';
import type { AgentRunView } from './runs.ts';

const T0 = Date.parse('2025-01-01T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

interface Opts {
  readonly station?: string;
  readonly completed?: number | null;
  readonly created?: number;
  readonly rv?: string | null;
  readonly deleting?: boolean;
  readonly ns?: string;
}

function run(name: string, phase: string, o: Opts = {}): AgentRunView {
  return {
    metadata: {
      name,
      namespace: o.ns ?? 'ns',
      uid: `uid-${name}`,
      ...(o.rv === null ? {} : { resourceVersion: o.rv ?? `rv-${name}` }),
      creationTimestamp: at(o.created ?? 0),
      ...(o.deleting ? { deletionTimestamp: at(999) } : {}),
    },
    spec: { stationRef: o.station ?? 's' },
    status: {
      phase,
      ...(o.completed === null || o.completed === undefined ? {} : { completedAt: at(o.completed) }),
    },
  };
}

const pruned = (station: Parameters<typeof selectHistoryToPrune>[0], agents: readonly AgentRunView[]) =>
  selectHistoryToPrune(station, agents).map((c) => c.agent.metadata.name);

const history = [
  run('s1', 'Succeeded', { completed: 10 }),
  run('s2', 'Succeeded', { completed: 30 }),
  run('s3', 'Succeeded', { completed: 20 }),
  run('f1', 'Failed', { completed: 15 }),
  run('f2', 'Failed', { completed: 25 }),
  run('running', 'Running'),
  run('pending', 'Pending'),
  run('nophase', ''),
];

describe('selectHistoryToPrune', () => {
  it('keeps none with limits 0 (Succeeded first, newest first)', () => {
    assert.deepEqual(
      pruned({ name: 's', successfulRunsHistoryLimit: 0, failedRunsHistoryLimit: 0 }, history),
      ['s2', 's3', 's1', 'f2', 'f1'],
    );
  });

  it('keeps the newest one per phase with limits 1', () => {
    assert.deepEqual(
      pruned({ name: 's', successfulRunsHistoryLimit: 1, failedRunsHistoryLimit: 1 }, history),
      ['s3', 's1', 'f1'],
    );
  });

  it('keeps n per phase, independently', () => {
    assert.deepEqual(
      pruned({ name: 's', successfulRunsHistoryLimit: 2, failedRunsHistoryLimit: 5 }, history),
      ['s1'],
    );
    assert.deepEqual(
      pruned({ name: 's', successfulRunsHistoryLimit: 3, failedRunsHistoryLimit: 1 }, history),
      ['f1'],
    );
  });

  it('defaults absent limits to 3 and treats negative ones as 0', () => {
    const many = Array.from({ length: 5 }, (_, i) => run(`s${i}`, 'Succeeded', { completed: i }));
    assert.deepEqual(pruned({ name: 's' }, many), ['s1', 's0']);
    assert.deepEqual(pruned({ name: 's', successfulRunsHistoryLimit: -1 }, many), [
      's4',
      's3',
      's2',
      's1',
      's0',
    ]);
  });

  it('never prunes Pending or Running Agents', () => {
    const got = pruned({ name: 's', successfulRunsHistoryLimit: 0, failedRunsHistoryLimit: 0 }, history);
    assert.equal(got.includes('running'), false);
    assert.equal(got.includes('pending'), false);
    assert.equal(got.includes('nophase'), false);
  });

  it('orders by completedAt, not by creation or list order; a missing completedAt is oldest', () => {
    const agents = [
      run('created-last-finished-first', 'Succeeded', { created: 100, completed: 1 }),
      run('no-completed', 'Succeeded', { created: 200, completed: null }),
      run('created-first-finished-last', 'Succeeded', { created: 0, completed: 50 }),
    ];
    assert.deepEqual(pruned({ name: 's', successfulRunsHistoryLimit: 1 }, agents), [
      'created-last-finished-first',
      'no-completed',
    ]);
  });

  it('breaks completedAt ties by creation order, keeping the newest', () => {
    const agents = [
      run('b', 'Failed', { completed: 5, created: 1 }),
      run('a', 'Failed', { completed: 5, created: 2 }),
    ];
    assert.deepEqual(pruned({ name: 's', failedRunsHistoryLimit: 1 }, agents), ['b']);
  });

  it('only touches the given Station (and its namespace)', () => {
    const agents = [
      run('mine', 'Succeeded', { completed: 1 }),
      run('theirs', 'Succeeded', { completed: 2, station: 'other' }),
      run('other-ns', 'Succeeded', { completed: 3, ns: 'elsewhere' }),
    ];
    assert.deepEqual(pruned({ name: 's', namespace: 'ns', successfulRunsHistoryLimit: 0 }, agents), ['mine']);
  });

  it('carries the resourceVersion, and skips Agents without one or already being deleted', () => {
    const agents = [
      run('a', 'Succeeded', { completed: 1, rv: '41' }),
      run('b', 'Succeeded', { completed: 2, rv: null }),
      run('c', 'Succeeded', { completed: 3, deleting: true }),
    ];
    const got = selectHistoryToPrune({ name: 's', successfulRunsHistoryLimit: 0 }, agents);
    assert.deepEqual(
      got.map((c) => [c.agent.metadata.name, c.agent.metadata.resourceVersion, c.phase, c.limit]),
      [['a', '41', 'Succeeded', 0]],
    );
  });

  it('counts excluded Agents toward the kept runs but never returns them', () => {
    const agents = [
      run('old', 'Succeeded', { completed: 1 }),
      run('just-done', 'Succeeded', { completed: 9 }),
    ];
    const exclude = (a: AgentRunView) => a.metadata.name === 'just-done';
    assert.deepEqual(
      selectHistoryToPrune({ name: 's', successfulRunsHistoryLimit: 1 }, agents, exclude).map(
        (c) => c.agent.metadata.name,
      ),
      ['old'],
    );
    assert.deepEqual(
      selectHistoryToPrune({ name: 's', successfulRunsHistoryLimit: 0 }, agents, exclude).map(
        (c) => c.agent.metadata.name,
      ),
      ['old'],
    );
  });
});
