import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJob, parsePod } from './core.ts';
import { storedMeta } from './test-fixtures.ts';

describe('parseJob', () => {
  it('reads a fresh Job without status', () => {
    const r = parseJob({ apiVersion: 'batch/v1', kind: 'Job', metadata: storedMeta('j1'), spec: {} });
    assert.ok(r.ok, r.ok ? '' : r.error);
    assert.deepEqual(r.value.status.conditions, []);
    assert.equal(r.value.status.active, undefined);
  });

  it('reads status counts, times and conditions; null reads as absent', () => {
    const r = parseJob({
      metadata: storedMeta('j1', {
        ownerReferences: [{ apiVersion: 'a', kind: 'Agent', name: 'a', uid: 'u' }],
      }),
      spec: {
        activeDeadlineSeconds: 1800,
        backoffLimit: 0,
        ttlSecondsAfterFinished: 3600,
        template: { spec: {} },
      },
      status: {
        active: 0,
        failed: 1,
        startTime: '2026-01-01T00:00:00Z',
        completionTime: null,
        uncountedTerminatedPods: {},
        conditions: [
          { type: 'FailureTarget', status: 'True', reason: 'BackoffLimitExceeded', message: 'x' },
          { type: 'Failed', status: 'Maybe', reason: null, lastProbeTime: null },
        ],
      },
    });
    assert.ok(r.ok, r.ok ? '' : r.error);
    const j = r.value;
    assert.equal(j.spec.activeDeadlineSeconds, 1800);
    assert.equal(j.spec.backoffLimit, 0);
    assert.equal(j.status.failed, 1);
    assert.equal(j.status.completionTime, undefined);
    assert.equal(j.status.conditions[0]?.reason, 'BackoffLimitExceeded');
    assert.equal(j.status.conditions[1]?.status, 'Unknown');
    assert.equal(j.status.conditions[1]?.reason, undefined);
    assert.equal(j.metadata.ownerReferences[0]?.uid, 'u');
  });

  it('rejects a type mismatch', () => {
    const r = parseJob({ metadata: storedMeta('j1'), status: { failed: 'one' } });
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /^invalid Job: status\.failed/);
  });
});

describe('parsePod', () => {
  it('reads container names and terminated/waiting/running states', () => {
    const r = parsePod({
      metadata: storedMeta('p1'),
      spec: { containers: [{ name: 'agent', image: 'x' }], initContainers: [{ name: 'init' }] },
      status: {
        phase: 'Failed',
        initContainerStatuses: [
          { name: 'init', state: { terminated: { exitCode: 0, reason: 'Completed' } } },
        ],
        containerStatuses: [
          {
            name: 'agent',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 7, reason: 'Error', startedAt: null, finishedAt: null } },
            lastState: {},
          },
          { name: 'side', state: { waiting: { reason: 'CreateContainerConfigError', message: 'no key' } } },
          { name: 'run', state: { running: { startedAt: '2026-01-01T00:00:00Z' } } },
        ],
      },
    });
    assert.ok(r.ok, r.ok ? '' : r.error);
    const p = r.value;
    assert.deepEqual(
      p.spec.containers.map((c) => c.name),
      ['agent'],
    );
    assert.equal(p.spec.initContainers[0]?.name, 'init');
    assert.equal(p.status.phase, 'Failed');
    assert.equal(p.status.initContainerStatuses[0]?.state.terminated?.exitCode, 0);
    assert.equal(p.status.containerStatuses[0]?.state.terminated?.exitCode, 7);
    assert.equal(p.status.containerStatuses[0]?.state.terminated?.startedAt, undefined);
    assert.equal(p.status.containerStatuses[1]?.state.waiting?.reason, 'CreateContainerConfigError');
    assert.equal(p.status.containerStatuses[1]?.restartCount, 0);
    assert.equal(p.status.containerStatuses[2]?.state.running?.startedAt, '2026-01-01T00:00:00Z');
  });

  it('reads a pod without status as Pending and an unknown phase as Unknown', () => {
    const a = parsePod({ metadata: storedMeta('p1'), spec: { containers: [{ name: 'agent' }] } });
    assert.ok(a.ok);
    assert.equal(a.value.status.phase, 'Pending');
    assert.deepEqual(a.value.status.containerStatuses, []);
    const b = parsePod({ metadata: storedMeta('p1'), status: { phase: 'Evicted?' } });
    assert.ok(b.ok);
    assert.equal(b.value.status.phase, 'Unknown');
  });

  it('rejects a terminated state without an exit code', () => {
    const r = parsePod({
      metadata: storedMeta('p1'),
      status: { containerStatuses: [{ name: 'agent', state: { terminated: { reason: 'Error' } } }] },
    });
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /status\.containerStatuses\.0\.state\.terminated\.exitCode/);
  });
});
