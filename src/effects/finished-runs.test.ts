import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Job, type Pod, parseJob, parsePod } from '../api/index.ts';
import type { LogRead } from '../reconcile/snapshot.ts';
import { FinishedRunIndex } from './finished-runs.ts';

const JOB_UID = 'uid-job-a';

function pod(
  name: string,
  o: { phase?: string; job?: string; jobUid?: string; created?: string; exitCode?: number } = {},
): Pod {
  const r = parsePod({
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      resourceVersion: '1',
      creationTimestamp: o.created ?? '2026-01-01T00:00:00Z',
      labels: {
        'batch.kubernetes.io/job-name': o.job ?? 'job-a',
        'batch.kubernetes.io/controller-uid': o.jobUid ?? JOB_UID,
      },
    },
    status: {
      phase: o.phase ?? 'Succeeded',
      ...(o.exitCode !== undefined
        ? { containerStatuses: [{ name: 'agent', state: { terminated: { exitCode: o.exitCode } } }] }
        : {}),
    },
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

function job(status: Record<string, number>, name = 'job-a', uid = JOB_UID): Job {
  const r = parseJob({
    metadata: { name, namespace: 'ns', uid, resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z' },
    status: { ...status, conditions: [{ type: 'Complete', status: 'True' }] },
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

const index = (maxLogBytes = 1 << 20, maxReads = 4) => new FinishedRunIndex({ maxLogBytes, maxReads });

/** A log read the test settles by hand. */
function manualRead(): { read: (p: Pod) => Promise<LogRead>; settle: (r: LogRead) => void; calls: string[] } {
  const calls: string[] = [];
  let settle: (r: LogRead) => void = () => undefined;
  return {
    calls,
    settle: (r) => settle(r),
    read: (p) => {
      calls.push(p.metadata.name);
      return new Promise((resolve) => {
        settle = resolve;
      });
    },
  };
}

describe('FinishedRunIndex.podChanged', () => {
  it('returns a pod when it is first seen finished (added, or modified from a running phase), not on later changes', () => {
    const x = index();
    const p = pod('p1');
    assert.equal(x.podChanged({ type: 'added', object: p }), p);
    assert.equal(x.podChanged({ type: 'modified', old: p, object: pod('p1') }), undefined);
    const running = pod('p2', { phase: 'Running' });
    const ended = pod('p2', { phase: 'Failed' });
    assert.equal(x.podChanged({ type: 'modified', old: running, object: ended }), ended);
    assert.equal(x.size, 2);
  });

  it('forgets a pod deleted, or no longer finished, and a pod without a Job label is ignored', () => {
    const x = index();
    const p = pod('p1');
    x.podChanged({ type: 'added', object: p });
    x.podChanged({ type: 'deleted', object: p });
    assert.equal(x.size, 0);
    x.podChanged({ type: 'added', object: p });
    x.podChanged({ type: 'modified', old: p, object: pod('p1', { phase: 'Running' }) });
    assert.equal(x.size, 0);
    const loose = parsePod({
      metadata: {
        name: 'x',
        namespace: 'ns',
        uid: 'u',
        resourceVersion: '1',
        creationTimestamp: '2026-01-01T00:00:00Z',
      },
      status: { phase: 'Succeeded' },
    });
    assert.ok(loose.ok);
    if (loose.ok) assert.equal(x.podChanged({ type: 'added', object: loose.value }), undefined);
    assert.equal(x.size, 0);
  });
});

describe('FinishedRunIndex.take', () => {
  it('gives the finished pod and the log read ahead, once; a second take has the pod but no log', async () => {
    const x = index();
    const p = pod('p1', { exitCode: 0 });
    x.podChanged({ type: 'added', object: p });
    const r = manualRead();
    assert.equal(x.readAhead(p, r.read), true);
    assert.equal(x.readAhead(p, r.read), false, 'one read per pod');
    assert.deepEqual(r.calls, ['p1']);
    r.settle({ kind: 'read', text: 'the answer\n' });
    const first = x.take(job({ succeeded: 1 }));
    assert.equal(first?.pod, p);
    assert.deepEqual(await first?.log, { kind: 'read', text: 'the answer\n' });
    const second = x.take(job({ succeeded: 1 }));
    assert.equal(second?.pod, p);
    assert.equal(second?.log, undefined);
    assert.equal(x.logs, 0);
  });

  it('hands over a read still in flight (the verdict came first)', async () => {
    const x = index();
    const p = pod('p1');
    x.podChanged({ type: 'added', object: p });
    const r = manualRead();
    x.readAhead(p, r.read);
    const taken = x.take(job({ failed: 1 }));
    assert.ok(taken?.log);
    r.settle({ kind: 'read', text: 'late' });
    assert.deepEqual(await taken?.log, { kind: 'read', text: 'late' });
  });

  it('vouches for nothing while pods are active or terminating, or fewer are cached than the Job counts', () => {
    const x = index();
    x.podChanged({ type: 'added', object: pod('p1', { exitCode: 1 }) });
    assert.equal(x.take(job({ failed: 1, active: 1 })), undefined);
    assert.equal(x.take(job({ failed: 1, terminating: 1 })), undefined);
    assert.equal(x.take(job({ failed: 2 })), undefined);
    assert.equal(x.take(job({})), undefined, 'a Job that counts no pod');
    assert.equal(x.take(job({ failed: 1 }, 'job-b')), undefined, 'another Job');
    assert.ok(x.take(job({ failed: 1 })));
  });

  it('counts the pods the Job has seen finish but not yet counted (an early SuccessCriteriaMet)', () => {
    const x = index();
    x.podChanged({ type: 'added', object: pod('p1', { exitCode: 0 }) });
    const early = parseJob({
      metadata: {
        name: 'job-a',
        namespace: 'ns',
        uid: JOB_UID,
        resourceVersion: '1',
        creationTimestamp: '2026-01-01T00:00:00Z',
      },
      status: {
        uncountedTerminatedPods: { succeeded: ['uid-p1'] },
        conditions: [{ type: 'SuccessCriteriaMet', status: 'True' }],
      },
    });
    assert.ok(early.ok);
    if (early.ok) assert.equal(x.take(early.value)?.pod.metadata.name, 'p1');
    const twoUncounted = parseJob({
      metadata: {
        name: 'job-a',
        namespace: 'ns',
        uid: JOB_UID,
        resourceVersion: '1',
        creationTimestamp: '2026-01-01T00:00:00Z',
      },
      status: { succeeded: 1, uncountedTerminatedPods: { failed: ['uid-other'] } },
    });
    assert.ok(twoUncounted.ok);
    if (twoUncounted.ok) assert.equal(x.take(twoUncounted.value), undefined, 'a second pod the cache lacks');
  });

  it('leaves out pods of an earlier Job of the same name (controller-uid)', () => {
    const x = index();
    x.podChanged({
      type: 'added',
      object: pod('old', { jobUid: 'uid-earlier', exitCode: 1, phase: 'Failed' }),
    });
    assert.equal(x.take(job({ succeeded: 1 })), undefined, 'the earlier pod alone does not count');
    const own = pod('own', { created: '2025-12-01T00:00:00Z' });
    x.podChanged({ type: 'added', object: own });
    assert.equal(x.take(job({ succeeded: 1 }))?.pod, own, 'an older own pod wins over a newer foreign one');
  });

  it('forgets the logs of every pod of that Job name, whatever it answers', async () => {
    const x = index();
    const mine = pod('mine');
    const foreign = pod('foreign', { jobUid: 'uid-earlier' });
    for (const p of [mine, foreign]) {
      x.podChanged({ type: 'added', object: p });
      x.readAhead(p, async () => ({ kind: 'read', text: p.metadata.name }));
    }
    assert.equal(x.logs, 2);
    assert.equal(x.take(job({ succeeded: 1, active: 1 })), undefined);
    assert.equal(x.logs, 0);
  });

  it('picks the pod whose agent container terminated, newest first, among several', () => {
    const x = index();
    const older = pod('p-old', { created: '2026-01-01T00:00:00Z', exitCode: 2, phase: 'Failed' });
    const newer = pod('p-new', { created: '2026-01-01T00:01:00Z', exitCode: 0 });
    x.podChanged({ type: 'added', object: older });
    x.podChanged({ type: 'added', object: newer });
    assert.equal(x.take(job({ succeeded: 1, failed: 1 }))?.pod, newer);
  });
});

describe('FinishedRunIndex: logs nobody takes', () => {
  it('sweep forgets logs held longer than the age given; clearLogs forgets all', async () => {
    let now = 1000;
    const x = new FinishedRunIndex({ maxLogBytes: 1 << 20, maxReads: 4, now: () => now });
    const a = pod('a');
    const b = pod('b');
    x.readAhead(a, async () => ({ kind: 'read', text: 'a' }));
    now = 5000;
    x.readAhead(b, async () => ({ kind: 'read', text: 'b' }));
    await new Promise((r) => setImmediate(r));
    assert.equal(x.logBytes, 4);
    assert.equal(x.sweep(3000), 1, 'only the log read 4 s ago');
    assert.equal(x.logs, 1);
    assert.equal(x.logBytes, 2);
    x.clearLogs();
    assert.equal(x.logs, 0);
    assert.equal(x.logBytes, 0);
  });

  it('tells onHeld the logs and bytes held on every change: start, settle, take, sweep, clear, a failed read', async () => {
    let now = 0;
    const held: string[] = [];
    const x = new FinishedRunIndex({
      maxLogBytes: 1 << 20,
      maxReads: 4,
      now: () => now,
      onHeld: (logs, bytes) => held.push(`${logs}/${bytes}`),
    });
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => pod(n, { job: `job-${n}` })) as [Pod, Pod, Pod, Pod];
    for (const p of [a, b, c, d]) x.podChanged({ type: 'added', object: p });
    x.readAhead(a, async () => ({ kind: 'read', text: 'aa' }));
    x.readAhead(b, async () => ({ kind: 'unavailable', detail: 'HTTP 500', transient: true }));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(held, ['1/0', '2/0', '2/4', '1/4'], 'started, started, a settled (4 bytes), b failed');
    x.take(job({ succeeded: 1 }, 'job-a'));
    assert.deepEqual(held.at(-1), '0/0', 'taken by the verdict');
    x.readAhead(c, async () => ({ kind: 'read', text: 'c' }));
    now = 10_000;
    x.readAhead(d, async () => ({ kind: 'read', text: 'd' }));
    await new Promise((r) => setImmediate(r));
    assert.equal(held.at(-1), '2/4');
    x.sweep(5_000);
    assert.equal(held.at(-1), '1/2', 'the old one swept');
    x.clearLogs();
    assert.equal(held.at(-1), '0/0', 'cleared');
  });

  it('a pod replaced by one of the same name (another uid) forgets the old log and is new', async () => {
    const x = index();
    const old = pod('p1');
    x.podChanged({ type: 'added', object: old });
    x.readAhead(old, async () => ({ kind: 'read', text: 'old' }));
    const fresh = parsePod({ ...structuredClone(old), metadata: { ...old.metadata, uid: 'uid-new' } });
    assert.ok(fresh.ok);
    if (!fresh.ok) return;
    assert.equal(x.podChanged({ type: 'modified', old, object: fresh.value }), fresh.value);
    assert.equal(x.logs, 0);
  });
});

describe('FinishedRunIndex.readAhead budget', () => {
  it('starts at most maxReads reads at once', () => {
    const x = index(1 << 20, 2);
    const reads = [manualRead(), manualRead(), manualRead()];
    const pods = ['a', 'b', 'c'].map((n) => pod(n));
    const started = pods.map((p, i) => x.readAhead(p, (reads[i] as ReturnType<typeof manualRead>).read));
    assert.deepEqual(started, [true, true, false]);
  });

  it('keeps no log past the byte budget, and none that failed; a slot frees when a read settles', async () => {
    const x = index(10, 1);
    const a = pod('a');
    const b = pod('b');
    x.podChanged({ type: 'added', object: a });
    x.podChanged({ type: 'added', object: b });
    const big = manualRead();
    x.readAhead(a, big.read);
    big.settle({ kind: 'read', text: 'far more than ten bytes' });
    await new Promise((r) => setImmediate(r));
    assert.equal(x.logs, 0, 'over budget: dropped');
    const failing = manualRead();
    assert.equal(x.readAhead(b, failing.read), true, 'the slot is free again');
    failing.settle({ kind: 'unavailable', detail: 'HTTP 500', transient: true });
    await new Promise((r) => setImmediate(r));
    assert.equal(x.logs, 0, 'a failed read is not kept');
  });

  it('turns a read that throws into an unavailable log', async () => {
    const x = index();
    const p = pod('p1');
    x.podChanged({ type: 'added', object: p });
    x.readAhead(p, () => Promise.reject(new Error('socket hang up')));
    const taken = x.take(job({ succeeded: 1 }));
    const log = await taken?.log;
    assert.equal(log?.kind, 'unavailable');
  });

  it('forgets the log of a pod deleted before its Job finished', async () => {
    const x = index();
    const p = pod('p1');
    x.podChanged({ type: 'added', object: p });
    const r = manualRead();
    x.readAhead(p, r.read);
    r.settle({ kind: 'read', text: 'x' });
    await new Promise((res) => setImmediate(res));
    assert.equal(x.logs, 1);
    x.podChanged({ type: 'deleted', object: p });
    assert.equal(x.logs, 0);
    assert.equal(x.size, 0);
  });
});
