import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseStation } from './station.ts';
import { storedMeta } from './test-fixtures.ts';

const station = (spec: unknown) => ({ metadata: storedMeta('st1'), spec });
const template = {
  spec: { containers: [{ name: 'agent', image: 'x', securityContext: { runAsUser: 1000 } }] },
};

describe('parseStation', () => {
  it('applies the reference defaults', () => {
    const r = parseStation(station({ agentDefRef: 'def1', template }));
    assert.ok(r.ok, r.ok ? '' : r.error);
    assert.deepEqual(r.value.spec, {
      agentDefRef: 'def1',
      deadlineMinutes: 30,
      startTimeoutMinutes: 5,
      successfulRunsHistoryLimit: 3,
      failedRunsHistoryLimit: 3,
      maxConcurrentRuns: 0,
      concurrencyPolicy: 'Allow',
      podSecurityProfile: 'restricted',
      server: { replicas: 1 },
      template,
    });
  });

  it('reads podSecurityProfile; an unknown value reads as the safer restricted', () => {
    const of = (podSecurityProfile: unknown) => {
      const r = parseStation(station({ agentDefRef: 'def1', template, podSecurityProfile }));
      assert.ok(r.ok, r.ok ? '' : r.error);
      return r.value.spec.podSecurityProfile;
    };
    assert.equal(of('baseline'), 'baseline');
    assert.equal(of('restricted'), 'restricted');
    assert.equal(of('privileged'), 'restricted');
  });

  it('keeps the pod template as free-form JSON, unknown fields included', () => {
    const t = { metadata: null, spec: { volumes: [{ name: 'v', hostPath: { path: '/' } }] }, future: 1 };
    const r = parseStation(station({ agentDefRef: 'def1', template: t }));
    assert.ok(r.ok);
    assert.deepEqual(r.value.spec.template, t);
  });

  it('keeps explicit values', () => {
    const r = parseStation(
      station({
        agentDefRef: 'def1',
        template,
        deadlineMinutes: 1,
        successfulRunsHistoryLimit: 0,
        failedRunsHistoryLimit: 10,
        maxConcurrentRuns: 2,
        concurrencyPolicy: 'Replace',
      }),
    );
    assert.ok(r.ok);
    assert.equal(r.value.spec.deadlineMinutes, 1);
    assert.equal(r.value.spec.successfulRunsHistoryLimit, 0);
    assert.equal(r.value.spec.failedRunsHistoryLimit, 10);
    assert.equal(r.value.spec.maxConcurrentRuns, 2);
    assert.equal(r.value.spec.concurrencyPolicy, 'Replace');
  });

  it('reads each policy and an unknown policy string as Allow', () => {
    for (const p of ['Allow', 'Forbid', 'Replace'] as const) {
      const r = parseStation(station({ agentDefRef: 'd', template, concurrencyPolicy: p }));
      assert.ok(r.ok && r.value.spec.concurrencyPolicy === p);
    }
    const r = parseStation(station({ agentDefRef: 'd', template, concurrencyPolicy: 'Sometimes' }));
    assert.ok(r.ok);
    assert.equal(r.value.spec.concurrencyPolicy, 'Allow');
  });

  it('rejects what the CRD rejects, naming the field', () => {
    const cases: [unknown, RegExp][] = [
      [{ template }, /spec\.agentDefRef/],
      [{ agentDefRef: 'd' }, /spec\.template/],
      [{ agentDefRef: 'd', template: 'pod' }, /spec\.template/],
      [{ agentDefRef: 'd', template, deadlineMinutes: 0 }, /spec\.deadlineMinutes/],
      [{ agentDefRef: 'd', template, deadlineMinutes: '30' }, /spec\.deadlineMinutes/],
      [{ agentDefRef: 'd', template, successfulRunsHistoryLimit: -1 }, /spec\.successfulRunsHistoryLimit/],
      [{ agentDefRef: 'd', template, maxConcurrentRuns: 1.5 }, /spec\.maxConcurrentRuns/],
      [{ agentDefRef: 'd', template, concurrencyPolicy: 1 }, /spec\.concurrencyPolicy/],
    ];
    for (const [spec, re] of cases) {
      const r = parseStation(station(spec));
      assert.equal(r.ok, false, JSON.stringify(spec));
      if (!r.ok) assert.match(r.error, re);
    }
  });
});
