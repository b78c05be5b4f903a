import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  agentExitCode,
  coherentExitCode,
  isJobFinished,
  jobFailureReason,
  type PodView,
  parseJobOutcome,
  pickRunPod,
} from './outcome.ts';

const cond = (type: string, status = 'True', reason?: string, message?: string) => ({
  type,
  status,
  ...(reason !== undefined ? { reason } : {}),
  ...(message !== undefined ? { message } : {}),
});

describe('parseJobOutcome', () => {
  const cases: [string, Parameters<typeof parseJobOutcome>[0], ReturnType<typeof parseJobOutcome>][] = [
    ['no status', {}, { kind: 'running' }],
    ['empty status', { status: {} }, { kind: 'running' }],
    ['active only', { status: { conditions: [] } }, { kind: 'running' }],
    ['Suspended is not a verdict', { status: { conditions: [cond('Suspended')] } }, { kind: 'running' }],
    [
      'Complete True',
      { status: { conditions: [cond('Complete', 'True', 'CompletionsReached')] } },
      { kind: 'succeeded', early: false },
    ],
    [
      'Complete False is not a verdict',
      { status: { conditions: [cond('Complete', 'False')] } },
      { kind: 'running' },
    ],
    [
      'SuccessCriteriaMet alone (Kubernetes >= 1.31, before Complete)',
      { status: { conditions: [cond('SuccessCriteriaMet', 'True', 'CompletionsReached')] } },
      { kind: 'succeeded', early: true },
    ],
    [
      'SuccessCriteriaMet then Complete: the final condition decides',
      { status: { conditions: [cond('SuccessCriteriaMet'), cond('Complete')] } },
      { kind: 'succeeded', early: false },
    ],
    [
      'Failed with reason and message',
      { status: { conditions: [cond('Failed', 'True', 'DeadlineExceeded', 'too slow')] } },
      { kind: 'failed', reason: 'DeadlineExceeded: too slow', early: false },
    ],
    [
      'Failed with reason only',
      { status: { conditions: [cond('Failed', 'True', 'BackoffLimitExceeded')] } },
      { kind: 'failed', reason: 'BackoffLimitExceeded', early: false },
    ],
    [
      'Failed with message only',
      { status: { conditions: [cond('Failed', 'True', undefined, 'pod failed')] } },
      { kind: 'failed', reason: 'pod failed', early: false },
    ],
    [
      'Failed with neither',
      { status: { conditions: [cond('Failed')] } },
      { kind: 'failed', reason: 'Job failed', early: false },
    ],
    [
      'FailureTarget alone (Kubernetes >= 1.31, before Failed)',
      {
        status: {
          conditions: [
            cond(
              'FailureTarget',
              'True',
              'BackoffLimitExceeded',
              'Job has reached the specified backoff limit',
            ),
          ],
        },
      },
      {
        kind: 'failed',
        reason: 'BackoffLimitExceeded: Job has reached the specified backoff limit',
        early: true,
      },
    ],
    [
      'FailureTarget then Failed: the final reason wins',
      {
        status: {
          conditions: [
            cond('FailureTarget', 'True', 'Early', 'e'),
            cond('Failed', 'True', 'DeadlineExceeded', 'd'),
          ],
        },
      },
      { kind: 'failed', reason: 'DeadlineExceeded: d', early: false },
    ],
    ['succeeded count without conditions', { status: { succeeded: 1 } }, { kind: 'succeeded', early: false }],
    [
      'failed count without conditions',
      { status: { failed: 1 } },
      { kind: 'failed', reason: 'Job failed', early: false },
    ],
    [
      'a True verdict wins over counts',
      { status: { failed: 1, conditions: [cond('Complete')] } },
      { kind: 'succeeded', early: false },
    ],
  ];
  for (const [name, job, want] of cases) {
    it(name, () => {
      assert.deepEqual(parseJobOutcome(job), want);
      assert.equal(isJobFinished(job), want.kind !== 'running');
    });
  }
});

describe('jobFailureReason', () => {
  it('joins reason and message, trims, and falls back to "Job failed"', () => {
    assert.equal(jobFailureReason('R', 'm'), 'R: m');
    assert.equal(jobFailureReason(' R ', ''), 'R');
    assert.equal(jobFailureReason(undefined, ' m'), 'm');
    assert.equal(jobFailureReason('', '  '), 'Job failed');
    assert.equal(jobFailureReason(undefined, undefined), 'Job failed');
  });
});

const pod = (name: string, created: string, agentExit?: number, sidecarExit?: number): PodView => ({
  metadata: { name, creationTimestamp: created },
  status: {
    containerStatuses: [
      ...(sidecarExit !== undefined
        ? [{ name: 'sidecar', state: { terminated: { exitCode: sidecarExit } } }]
        : []),
      agentExit !== undefined
        ? { name: 'agent', state: { terminated: { exitCode: agentExit } } }
        : { name: 'agent', state: {} },
    ],
  },
});

describe('agentExitCode', () => {
  it('reads only the agent container', () => {
    assert.equal(agentExitCode(pod('p', '2025-01-01T00:00:00Z', 7, 3)), 7);
    assert.equal(agentExitCode(pod('p', '2025-01-01T00:00:00Z', 0, 3)), 0);
    assert.equal(agentExitCode(pod('p', '2025-01-01T00:00:00Z', undefined, 3)), undefined);
    assert.equal(agentExitCode({}), undefined);
  });
});

describe('pickRunPod', () => {
  it('is undefined for no pods', () => {
    assert.equal(pickRunPod([]), undefined);
  });
  it('prefers the newest pod whose agent container terminated', () => {
    const old = pod('a', '2025-01-01T00:00:00Z', 1);
    const newer = pod('b', '2025-01-01T00:01:00Z', 2);
    const newestRunning = pod('c', '2025-01-01T00:02:00Z');
    assert.equal(pickRunPod([old, newestRunning, newer]), newer);
  });
  it('falls back to the newest pod, ties broken by name', () => {
    const a = pod('a', '2025-01-01T00:00:00Z');
    const b = pod('b', '2025-01-01T00:00:00Z');
    assert.equal(pickRunPod([a, b]), b);
    assert.equal(pickRunPod([b, a]), b);
  });
});

describe('coherentExitCode', () => {
  const cases: ['Succeeded' | 'Failed', number | undefined, number][] = [
    ['Succeeded', 0, 0],
    ['Succeeded', 9, 0],
    ['Succeeded', undefined, 0],
    ['Failed', 7, 7],
    ['Failed', 137, 137],
    ['Failed', -1, -1],
    ['Failed', 0, 1],
    ['Failed', undefined, 1],
  ];
  for (const [phase, pod, want] of cases) {
    it(`${phase} with pod code ${String(pod)} → ${want}`, () => {
      assert.equal(coherentExitCode(phase, pod), want);
    });
  }
});
