import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTerminalPhase, parseAgent } from './agent.ts';
import { storedMeta } from './test-fixtures.ts';

const base = (spec: unknown = { stationRef: 'st1' }, status?: unknown) => ({
  apiVersion: 'agents.re-cinq.com/v1alpha1',
  kind: 'Agent',
  metadata: storedMeta(),
  spec,
  ...(status === undefined ? {} : { status }),
});

function ok(u: unknown) {
  const r = parseAgent(u);
  if (!r.ok) assert.fail(`expected ok, got ${r.error}`);
  return r.value;
}

function bad(u: unknown): string {
  const r = parseAgent(u);
  assert.equal(r.ok, false, 'expected a parse error');
  return r.ok ? '' : r.error;
}

describe('parseAgent', () => {
  it('reads an Agent without status as Pending with empty conditions', () => {
    const a = ok(base());
    assert.equal(a.status.phase, 'Pending');
    assert.deepEqual(a.status.conditions, []);
    assert.equal(a.spec.stationRef, 'st1');
    assert.deepEqual(a.spec.parameters, {});
    assert.equal(a.spec.model, undefined);
  });

  it('keeps metadata the controller needs and drops unknown fields everywhere', () => {
    const a = ok({
      ...base({ stationRef: 'st1', someFutureField: true }, { phase: 'Running', extra: 1 }),
      topLevelExtra: 'x',
    });
    assert.deepEqual(a.metadata, {
      name: 'a1',
      namespace: 'ns1',
      uid: 'uid-a1',
      resourceVersion: '42',
      generation: 1,
      creationTimestamp: '2026-01-02T03:04:05Z',
      labels: {},
      annotations: {},
      ownerReferences: [],
      finalizers: [],
    });
    assert.equal('someFutureField' in a.spec, false);
    assert.equal('extra' in a.status, false);
    assert.equal('topLevelExtra' in a, false);
  });

  it('reads every spec field including model and resumeSession', () => {
    const a = ok(
      base({
        stationRef: 'st1',
        taskId: 'T-1',
        targetRepo: 'o/r',
        branch: 'main',
        parameters: { topic: 'x', n: '3' },
        model: 'gpt-5',
        resumeSession: 'sess-1',
      }),
    );
    assert.deepEqual(a.spec, {
      stationRef: 'st1',
      taskId: 'T-1',
      targetRepo: 'o/r',
      branch: 'main',
      parameters: { topic: 'x', n: '3' },
      model: 'gpt-5',
      resumeSession: 'sess-1',
    });
  });

  it('reads every status field', () => {
    const status = {
      phase: 'Failed',
      jobName: 'j',
      startedAt: '2026-01-02T03:04:05Z',
      completedAt: '2026-01-02T03:05:05Z',
      exitCode: 7,
      output: 'out',
      failureReason: 'BackoffLimitExceeded: x',
      prUrl: 'https://example.invalid/pr/1',
      conditions: [
        {
          type: 'Succeeded',
          status: 'False',
          reason: 'JobFailed',
          message: 'm',
          lastTransitionTime: '2026-01-02T03:05:05Z',
          observedGeneration: 1,
        },
      ],
      observedGeneration: 1,
      batchId: 'b1',
      batchProvider: 'anthropic',
      batchFallback: true,
      batchCleanupAttempts: 2,
      sessionId: 's1',
    };
    assert.deepEqual(ok(base(undefined, status)).status, status);
  });

  it('reads an unknown phase string as Pending (reference leniency)', () => {
    assert.equal(ok(base(undefined, { phase: 'Exploded' })).status.phase, 'Pending');
  });

  it('rejects a type mismatch with the field path', () => {
    assert.match(bad(base(undefined, { exitCode: 'boom' })), /^invalid Agent: status\.exitCode: .*number/);
    assert.match(bad(base(undefined, { phase: 3 })), /status\.phase/);
    assert.match(bad(base({ stationRef: 'st1', parameters: { n: 3 } })), /spec\.parameters\.n/);
    assert.match(bad(base(undefined, { exitCode: 1.5 })), /status\.exitCode/);
  });

  it('rejects a missing or malformed stationRef and a missing spec', () => {
    assert.match(bad(base({})), /spec\.stationRef/);
    assert.match(bad(base({ stationRef: 'Not_DNS' })), /spec\.stationRef/);
    assert.match(bad(base({ stationRef: 'a'.repeat(254) })), /spec\.stationRef/);
    assert.match(bad({ metadata: storedMeta() }), /spec/);
  });

  it('rejects metadata without the fields the API server always sets', () => {
    const meta = storedMeta();
    delete meta.uid;
    assert.match(bad({ ...base(), metadata: meta }), /metadata\.uid/);
    assert.match(bad(null), /^invalid Agent: /);
  });

  it('rejects a malformed condition', () => {
    const cond = { type: 'Ready', status: 'Maybe', reason: 'R', message: '', lastTransitionTime: 't' };
    assert.match(bad(base(undefined, { conditions: [cond] })), /status\.conditions\.0\.status/);
  });

  it('classifies terminal phases', () => {
    assert.equal(isTerminalPhase('Succeeded'), true);
    assert.equal(isTerminalPhase('Failed'), true);
    assert.equal(isTerminalPhase('Running'), false);
    assert.equal(isTerminalPhase('Pending'), false);
  });
});
