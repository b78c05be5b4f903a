import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  compareQueueOrder,
  exitCodeOf,
  fitLine,
  ordinal,
  queueInfo,
  runView,
  sameView,
  statusLine,
} from './status.ts';
import { painter } from './style.ts';
import { agentOf, stationOf } from './test-fixtures.ts';

const QUEUED = {
  reason: 'Queued',
  message: 'Waiting for a free run slot: Station hello allows 1 run at once',
};

describe('queueInfo: the position behind the Station limit, as the controller admits', () => {
  const holder = agentOf('a-running', { phase: 'Running', jobName: 'agent-job-a-running', created: 0 });
  const first = agentOf('b-first', { created: 5, ready: QUEUED });
  const me = agentOf('c-me', { created: 10, ready: QUEUED });
  const later = agentOf('d-later', { created: 20 });
  const sameTimeEarlierName = agentOf('a-same', { created: 10 });
  const elsewhere = agentOf('e-other-station', { station: 'other', created: 1 });
  const otherNs = agentOf('f-other-ns', { created: 1, namespace: 'elsewhere' });
  const done = agentOf('g-done', { phase: 'Succeeded', exitCode: 0, created: 1 });
  const deleting = agentOf('h-deleting', { created: 1, deleting: true });
  const deps = agentOf('i-deps', { created: 1, ready: { reason: 'WaitingForDependencies', message: 'svc' } });
  const admitted = agentOf('j-admitted', { created: 2, jobName: 'agent-job-j' });
  const all = [
    holder,
    first,
    me,
    later,
    sameTimeEarlierName,
    elsewhere,
    otherNs,
    done,
    deleting,
    deps,
    admitted,
  ];

  it('counts queued Agents ahead in FIFO order (creationTimestamp, then name) and slot holders', () => {
    assert.deepEqual(queueInfo(me, all, stationOf('hello', { maxConcurrentRuns: 1 })), {
      position: 3,
      queued: 4,
      running: 2,
      limit: 1,
    });
  });

  it('reads the limit as admission does: Forbid and Replace allow one, Allow with 0 any number', () => {
    assert.equal(queueInfo(me, all, stationOf('hello', { concurrencyPolicy: 'Forbid' }))?.limit, 1);
    assert.equal(
      queueInfo(me, all, stationOf('hello', { maxConcurrentRuns: 3, concurrencyPolicy: 'Replace' }))?.limit,
      1,
    );
    assert.equal(queueInfo(me, all, stationOf('hello'))?.limit, 0);
    assert.equal(queueInfo(me, all, undefined)?.limit, undefined);
  });

  it('is undefined for a run that holds a slot, finished, is deleted or waits for dependencies', () => {
    for (const a of [holder, done, deleting, deps, admitted])
      assert.equal(queueInfo(a, all, undefined), undefined);
  });

  it('a lone Agent heads its queue', () => {
    assert.deepEqual(queueInfo(me, [me], undefined), {
      position: 1,
      queued: 1,
      running: 0,
      limit: undefined,
    });
  });

  it('queue order is total: time, then name, then uid', () => {
    assert.ok(compareQueueOrder(first, me) < 0);
    assert.ok(compareQueueOrder(sameTimeEarlierName, me) < 0);
    assert.equal(compareQueueOrder(me, me), 0);
  });

  it('ordinal', () => {
    assert.deepEqual([1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111].map(ordinal), [
      '1st',
      '2nd',
      '3rd',
      '4th',
      '11th',
      '12th',
      '13th',
      '21st',
      '22nd',
      '23rd',
      '101st',
      '111th',
    ]);
  });
});

describe('runView and statusLine', () => {
  const plain = painter(false);
  const queue = { position: 2, queued: 3, running: 1, limit: 1 };

  it('a queued run shows its position behind the limit', () => {
    const view = runView(agentOf('x', { ready: QUEUED }), queue);
    assert.equal(
      statusLine(view, 12_000, plain),
      'x  Pending · queued 2nd of 3 (1 running, Station allows 1 at once) · 12s',
    );
    const unlimited = runView(agentOf('x', { ready: QUEUED }), { ...queue, limit: 0 });
    assert.match(unlimited.detail, /Station allows any number at once/);
    const unknown = runView(agentOf('x', { ready: QUEUED }), { ...queue, limit: undefined });
    assert.equal(unknown.detail, 'queued 2nd of 3 (1 running)');
  });

  it('a queued run without the picture repeats the controller message', () => {
    assert.equal(runView(agentOf('x', { ready: QUEUED }), undefined).detail, `queued: ${QUEUED.message}`);
  });

  it('a fresh run waits for the controller; behind others it is queued already', () => {
    assert.equal(
      runView(agentOf('x'), { ...queue, position: 1, queued: 1 }).detail,
      'waiting for the controller',
    );
    assert.match(runView(agentOf('x'), queue).detail, /^queued 2nd of 3/);
  });

  it('waiting for dependencies, running, blocked, being deleted', () => {
    assert.equal(
      runView(
        agentOf('x', { ready: { reason: 'WaitingForDependencies', message: 'service db\nnot ready' } }),
        undefined,
      ).detail,
      'waiting for dependencies: service db not ready',
    );
    assert.equal(
      runView(agentOf('x', { phase: 'Running', jobName: 'agent-job-x' }), undefined).detail,
      'job agent-job-x',
    );
    assert.equal(runView(agentOf('x', { phase: 'Running' }), undefined).detail, 'started');
    assert.equal(
      runView(
        agentOf('x', {
          phase: 'Running',
          jobName: 'j',
          startBlocked: { reason: 'ImagePullFailed', message: 'ErrImagePull: no such image' },
        }),
        undefined,
      ).detail,
      'pod not starting: ImagePullFailed: ErrImagePull: no such image',
    );
    assert.equal(runView(agentOf('x', { deleting: true }), undefined).detail, 'being deleted');
  });

  it('cluster text in the status line is made safe (the blocked reason, the job name)', () => {
    const E = '\x1b[2J\x9b1A\u202e';
    const a = agentOf('x', {
      phase: 'Running',
      jobName: `j${E}`,
      startBlocked: { reason: 'Pull', message: `m${E}` },
    });
    // The parser checks a reason's format; the CLI does not count on it.
    const conditions = a.status.conditions.map((c) => ({ ...c, reason: `Pull${E}\nFailed` }));
    const view = runView({ ...a, status: { ...a.status, conditions } }, undefined);
    assert.equal(view.detail, 'pod not starting: Pull^[[2J^[[1A<U+202E> Failed: m^[[2J^[[1A<U+202E>');
    const running = runView(agentOf('x', { phase: 'Running', jobName: `j${E}` }), undefined);
    assert.equal(running.detail, 'job j^[[2J^[[1A<U+202E>');
    assert.doesNotMatch(statusLine(running, 0, painter(false)), /[\x1b\x9b\u202e]/);
  });

  it('finished runs show their exit code and failure reason', () => {
    assert.equal(
      statusLine(runView(agentOf('x', { phase: 'Succeeded', exitCode: 0 }), undefined), 65_000, plain),
      'x  Succeeded · exit 0 · 1m05s',
    );
    assert.equal(
      runView(agentOf('x', { phase: 'Failed', exitCode: 7, failureReason: 'Job failed' }), undefined).detail,
      'exit 7 · Job failed',
    );
    assert.equal(
      runView(
        agentOf('x', {
          phase: 'Failed',
          ready: { reason: 'MissingReference', message: 'Station or AgentDefinition not found' },
        }),
        undefined,
      ).detail,
      'exit 1 · Station or AgentDefinition not found',
    );
  });

  it('colours the phase only, and fits the line to the terminal', () => {
    const view = runView(agentOf('x', { phase: 'Failed', exitCode: 2 }), undefined);
    assert.equal(statusLine(view, 0, painter(true)), 'x  \x1b[31mFailed\x1b[0m · exit 2 · 0s');
    assert.equal(statusLine(view, 0, plain, 12), 'x  Failed …');
    assert.equal(fitLine('abcdef', 20), 'abcdef');
    assert.equal(fitLine('abcdefghijklmnop', 12), 'abcdefghij…');
    assert.equal(fitLine('abc', undefined), 'abc');
  });

  it('sameView ignores time and sees any other change', () => {
    const a = runView(agentOf('x', { ready: QUEUED }), queue);
    assert.ok(sameView(a, runView(agentOf('x', { ready: QUEUED }), queue)));
    assert.ok(!sameView(a, runView(agentOf('x', { ready: QUEUED }), { ...queue, position: 1 })));
    assert.ok(!sameView(undefined, a));
  });
});

describe('exitCodeOf', () => {
  it('Succeeded → 0; Failed → its exit code, 1 without one or with a code out of range', () => {
    assert.equal(exitCodeOf(agentOf('x', { phase: 'Succeeded', exitCode: 0 })), 0);
    assert.equal(exitCodeOf(agentOf('x', { phase: 'Succeeded' })), 0);
    assert.equal(exitCodeOf(agentOf('x', { phase: 'Failed', exitCode: 7 })), 7);
    assert.equal(exitCodeOf(agentOf('x', { phase: 'Failed', exitCode: 124 })), 124);
    assert.equal(exitCodeOf(agentOf('x', { phase: 'Failed' })), 1);
    assert.equal(exitCodeOf(agentOf('x', { phase: 'Failed', exitCode: 0 })), 1);
    assert.equal(exitCodeOf(agentOf('x', { phase: 'Failed', exitCode: 300 })), 1);
    assert.equal(exitCodeOf(agentOf('x', { phase: 'Failed', exitCode: -1 })), 1);
  });
});
