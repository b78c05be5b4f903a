import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Pod, parsePod } from '../api/index.ts';
import { apiErrorFromResponse } from '../kube/index.ts';
import {
  admitLine,
  agentStarted,
  logPath,
  pickPod,
  type Resume,
  sinceTimeOf,
  splitTimestamp,
} from './log-stream.ts';
import { isFatal } from './watch.ts';

const pod = (name: string, created: string, agent: Record<string, unknown> | undefined): Pod => {
  const r = parsePod({
    metadata: { name, namespace: 'team', uid: name, resourceVersion: '1', creationTimestamp: created },
    spec: { containers: [{ name: 'agent' }] },
    status: { phase: 'Running', containerStatuses: agent ? [{ name: 'agent', state: agent }] : [] },
  });
  assert.ok(r.ok);
  return r.value;
};

describe('log timestamps', () => {
  it('splits the RFC 3339 time off a line into a sortable key', () => {
    assert.deepEqual(splitTimestamp('2026-12-01T12:00:01.5Z hello world'), {
      key: '2026-12-01T12:00:01.500000000',
      text: 'hello world',
    });
    assert.deepEqual(splitTimestamp('2026-12-01T12:00:01.123456789Z {"a":1}'), {
      key: '2026-12-01T12:00:01.123456789',
      text: '{"a":1}',
    });
    assert.equal(
      splitTimestamp('2026-12-01T13:00:01+01:00 x').key,
      '2026-12-01T12:00:01.000000000',
      'to UTC',
    );
    assert.deepEqual(splitTimestamp('no time here'), { key: undefined, text: 'no time here' });
    assert.deepEqual(splitTimestamp('2026-13-45T99:00:00Z x'), {
      key: undefined,
      text: '2026-13-45T99:00:00Z x',
    });
  });

  it('keys sort as times do, whatever the fraction length', () => {
    const a = splitTimestamp('2026-12-01T12:00:01.5Z a').key!;
    const b = splitTimestamp('2026-12-01T12:00:01.45Z b').key!;
    assert.ok(b < a);
  });

  it('resumes from the whole second of the last line seen', () => {
    assert.equal(sinceTimeOf('2026-12-01T12:00:01.500000000'), '2026-12-01T12:00:01Z');
  });

  it('after a reconnect, skips the replayed lines up to the last one seen, then shows everything', () => {
    let resume: Resume = { lastKey: '2026-12-01T12:00:01.500000000', replaying: true };
    const shown: string[] = [];
    for (const line of [
      '2026-12-01T12:00:01.100000000Z old',
      '2026-12-01T12:00:01.500000000Z last seen',
      '2026-12-01T12:00:01.600000000Z new',
      '2026-12-01T12:00:01.600000000Z same instant, new',
      'untimed',
    ]) {
      const { key, text } = splitTimestamp(line);
      const r = admitLine(resume, key);
      resume = r.resume;
      if (r.show) shown.push(text);
    }
    assert.deepEqual(shown, ['new', 'same instant, new', 'untimed']);
  });

  it('while not replaying, every line shows', () => {
    const r = admitLine({ lastKey: 'z', replaying: false }, 'a');
    assert.equal(r.show, true);
    assert.equal(admitLine({ lastKey: undefined, replaying: true }, undefined).show, false);
  });
});

describe('the pod to read', () => {
  it('the newest pod whose agent container started', () => {
    const waiting = pod('c-new-waiting', '2026-12-01T12:00:03Z', { waiting: { reason: 'PodInitializing' } });
    const running = pod('b-running', '2026-12-01T12:00:02Z', { running: { startedAt: 'x' } });
    const ended = pod('a-ended', '2026-12-01T12:00:01Z', { terminated: { exitCode: 0 } });
    assert.equal(pickPod([ended, waiting, running])?.metadata.name, 'b-running');
    assert.equal(pickPod([waiting]), undefined);
    assert.ok(agentStarted(ended));
    assert.ok(!agentStarted(pod('none', '2026-12-01T12:00:00Z', undefined)));
    assert.equal(logPath('team', 'p'), '/api/v1/namespaces/team/pods/p/log');
  });
});

describe('watch: when to give up', () => {
  const api = (code: number) => apiErrorFromResponse(code, '{}');
  it('before the first list, any failure; after it, refusals and 404s only', () => {
    assert.ok(isFatal({ kind: 'network', message: 'x' }, false));
    assert.ok(!isFatal({ kind: 'aborted', message: 'x' }, false));
    assert.ok(!isFatal({ kind: 'network', message: 'x' }, true));
    assert.ok(!isFatal(api(500), true));
    for (const code of [401, 403, 404]) assert.ok(isFatal(api(code), true), String(code));
  });
});
