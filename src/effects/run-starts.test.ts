import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as v from 'valibot';
import { type ObjectEvent, ObjectEventSchema, type Pod, parsePod } from '../api/index.ts';
import { eventJobKey, podJobKey, RunStartIndex } from './run-starts.ts';

function pod(
  name: string,
  o: { job?: string; labels?: Record<string, string>; waiting?: string; phase?: string } = {},
): Pod {
  const r = parsePod({
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      resourceVersion: '1',
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: o.labels ?? { 'batch.kubernetes.io/job-name': o.job ?? 'job-a' },
    },
    status: {
      phase: o.phase ?? 'Pending',
      ...(o.waiting !== undefined
        ? { containerStatuses: [{ name: 'agent', state: { waiting: { reason: o.waiting } } }] }
        : {}),
    },
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

function event(
  name: string,
  o: { kind?: string; reason?: string; job?: string; message?: string; last?: string } = {},
): ObjectEvent {
  return v.parse(ObjectEventSchema, {
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      resourceVersion: '1',
      creationTimestamp: '2026-01-01T00:00:00Z',
    },
    involvedObject: { kind: o.kind ?? 'Job', namespace: 'ns', name: o.job ?? 'job-a', uid: 'uid-job-a' },
    reason: o.reason ?? 'FailedCreate',
    message: o.message ?? 'Error creating: pods "x" is forbidden: exceeded quota',
    lastTimestamp: o.last ?? '2026-01-01T00:00:05Z',
  });
}

describe('podJobKey / eventJobKey', () => {
  it('reads the Job from either job-name label, and only Job FailedCreate Events', () => {
    assert.equal(podJobKey(pod('p')), 'ns/job-a');
    assert.equal(podJobKey(pod('p', { labels: { 'job-name': 'job-b' } })), 'ns/job-b');
    assert.equal(podJobKey(pod('p', { labels: {} })), undefined);
    assert.equal(eventJobKey(event('e')), 'ns/job-a');
    assert.equal(eventJobKey(event('e', { reason: 'SuccessfulCreate' })), undefined);
    assert.equal(eventJobKey(event('e', { kind: 'Pod' })), undefined);
  });
});

describe('RunStartIndex', () => {
  it('indexes pods by Job and wakes only when the start signal changes', () => {
    const idx = new RunStartIndex();
    const p = pod('p');
    assert.equal(idx.podChanged({ type: 'added', object: p })?.job, 'ns/job-a');
    assert.deepEqual(idx.observe('ns', 'job-a').pods, [p]);
    const pulling = pod('p', { waiting: 'ContainerCreating' });
    assert.equal(
      idx.podChanged({ type: 'modified', old: p, object: pulling })?.job,
      undefined,
      'still pending',
    );
    assert.deepEqual(idx.observe('ns', 'job-a').pods, [pulling], 'the newest version is kept anyway');
    const failing = pod('p', { waiting: 'ErrImagePull' });
    assert.deepEqual(idx.podChanged({ type: 'modified', old: pulling, object: failing }), {
      job: 'ns/job-a',
      blocked: true,
    });
    const backoff = pod('p', { waiting: 'ImagePullBackOff' });
    assert.equal(
      idx.podChanged({ type: 'modified', old: failing, object: backoff })?.job,
      undefined,
      'same cause',
    );
    const started = pod('p', { phase: 'Running' });
    assert.deepEqual(idx.podChanged({ type: 'modified', old: backoff, object: started }), {
      job: 'ns/job-a',
      blocked: false,
    });
    assert.equal(idx.podChanged({ type: 'deleted', object: started })?.job, 'ns/job-a');
    assert.deepEqual(idx.observe('ns', 'job-a'), { pods: [], createFailures: [] });
    assert.equal(idx.size, 0, 'nothing kept for a Job without pods');
  });

  it('a pod whose job-name label changes moves to its new Job', () => {
    const idx = new RunStartIndex();
    const p = pod('p');
    idx.podChanged({ type: 'added', object: p });
    const moved = pod('p', { job: 'job-b' });
    assert.equal(idx.podChanged({ type: 'modified', old: p, object: moved })?.job, 'ns/job-b');
    assert.deepEqual(idx.observe('ns', 'job-a').pods, []);
    assert.deepEqual(idx.observe('ns', 'job-b').pods, [moved]);
    const unlabelled = pod('p', { labels: {} });
    assert.equal(idx.podChanged({ type: 'modified', old: moved, object: unlabelled })?.job, 'ns/job-b');
    assert.equal(idx.size, 0);
  });

  it('indexes FailedCreate Events by Job, keeping the uid, message and last occurrence', () => {
    const idx = new RunStartIndex();
    assert.equal(idx.eventChanged({ type: 'added', object: event('e', { reason: 'Other' }) }), undefined);
    const e = event('e');
    assert.equal(idx.eventChanged({ type: 'added', object: e }), 'ns/job-a');
    const again = event('e', { last: '2026-01-01T00:01:00Z', message: 'Error creating: later' });
    assert.equal(idx.eventChanged({ type: 'modified', old: e, object: again }), 'ns/job-a');
    assert.deepEqual(idx.observe('ns', 'job-a').createFailures, [
      { jobUid: 'uid-job-a', message: 'Error creating: later', lastSeen: '2026-01-01T00:01:00Z' },
    ]);
    assert.deepEqual(
      idx.observe('ns', 'job-a', false).createFailures,
      [],
      'left out until the Events are listed',
    );
    assert.equal(idx.eventChanged({ type: 'deleted', object: again }), undefined);
    assert.deepEqual(idx.observe('ns', 'job-a').createFailures, []);
  });
});
