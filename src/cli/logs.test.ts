import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from './command.ts';
import { guarded } from './context.ts';
import { AGENTS_PATH, captureIo, FakeCluster, fakeDeps, PODS_PATH, until } from './fake-cluster.ts';
import { logsSpec, parseLogsRequest } from './logs.ts';
import { rawAgent } from './test-fixtures.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

const LINE = JSON.stringify({ type: 'item.completed', item: { type: 'agent_message', text: 'patched it' } });

const pod = (name: string, job: string, state: Record<string, unknown>) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name,
    namespace: 'team',
    uid: `uid-${name}`,
    resourceVersion: '1',
    creationTimestamp: '2026-12-01T12:00:01Z',
    labels: { 'job-name': job },
  },
  spec: { containers: [{ name: 'agent' }] },
  status: { phase: 'Running', containerStatuses: [{ name: 'agent', state }] },
});

describe('logs', () => {
  it('parses [agent] NAME, -f, --json, --tail', () => {
    assert.deepEqual(parseLogsRequest({ follow: true, json: true, tail: '20' }, ['agent', 'x']), {
      name: 'x',
      follow: true,
      raw: true,
      tail: 20,
    });
    assert.throws(() => parseLogsRequest({}, []), UsageError);
    assert.throws(() => parseLogsRequest({}, ['a', 'b']), /unexpected argument "b"/);
    assert.throws(() => parseLogsRequest({ tail: 'x' }, ['a']), /--tail takes a number/);
  });

  it("prints the pod's agent log as readable text, or raw with --json", async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('x', { phase: 'Succeeded', jobName: 'agent-job-x', exitCode: 0 }) as Obj);
    c.put(PODS_PATH, pod('agent-job-x-1', 'agent-job-x', { terminated: { exitCode: 0 } }) as Obj);
    c.override = (req) =>
      req.path.endsWith('/log') ? { status: 200, body: `${LINE}\nplain text\n` } : undefined;
    const io = captureIo(['x']);
    assert.equal(await guarded(logsSpec, io, fakeDeps(c)), 0);
    assert.equal(io.stdoutText(), 'patched it\nplain text\n');
    const log = c.calls('GET', `${PODS_PATH}/agent-job-x-1/log`)[0];
    assert.deepEqual(log?.query, { container: 'agent' });
    const raw = captureIo(['agent', 'x', '--json', '--tail', '5']);
    assert.equal(await guarded(logsSpec, raw, fakeDeps(c)), 0);
    assert.equal(raw.stdoutText(), `${LINE}\nplain text\n`);
    assert.equal(c.calls('GET', `${PODS_PATH}/agent-job-x-1/log`)[1]?.query.tailLines, 5);
  });

  it('falls back to the recorded output when the pod is gone, saying so', async () => {
    const c = new FakeCluster();
    c.put(
      AGENTS_PATH,
      rawAgent('x', {
        phase: 'Failed',
        jobName: 'agent-job-x',
        exitCode: 2,
        status: { output: `${LINE}\n` },
      }) as Obj,
    );
    const io = captureIo(['x']);
    assert.equal(await guarded(logsSpec, io, fakeDeps(c)), 0);
    assert.equal(io.stdoutText(), 'patched it\n');
    assert.equal(
      io.stderrText(),
      'note: the pod of job "agent-job-x" is gone: showing the output the run recorded (status.output, at most its last 256 KiB)\n',
    );
  });

  it('no pod and no output is an error; a missing Agent exit 4', async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('q', { ready: { reason: 'Queued' } }) as Obj);
    const io = captureIo(['q']);
    assert.equal(await guarded(logsSpec, io, fakeDeps(c)), 1);
    assert.equal(
      io.stderrText(),
      'error: no log for agent "q": the run has no pod, and the run recorded no output (phase Pending)\n',
    );
    const missing = captureIo(['nope']);
    assert.equal(await guarded(logsSpec, missing, fakeDeps(c)), 4);
    assert.equal(missing.stderrText(), 'error: agent "nope" in namespace "team" not found\n');
  });

  it('a container not started yet is said so', async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('x', { phase: 'Running', jobName: 'j' }) as Obj);
    c.put(PODS_PATH, pod('p', 'j', { waiting: { reason: 'PodInitializing' } }) as Obj);
    c.override = (req) =>
      req.path.endsWith('/log')
        ? {
            status: 400,
            body: {
              kind: 'Status',
              code: 400,
              message: 'container "agent" in pod "p" is waiting to start: PodInitializing',
            },
          }
        : undefined;
    const io = captureIo(['x']);
    assert.equal(await guarded(logsSpec, io, fakeDeps(c)), 1);
    assert.match(
      io.stderrText(),
      /^error: the agent container of pod "p" has not started yet: container "agent" in pod "p" is waiting to start/,
    );
  });

  it('-f waits for the run to start, then follows its log until the container ends', async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('x', { ready: { reason: 'Queued' } }) as Obj);
    c.logs.set('p', { chunks: [`2026-12-01T12:00:05Z ${LINE}\n`] });
    const io = captureIo(['x', '-f']);
    const deps = fakeDeps(c);
    const done = guarded(logsSpec, io, deps);
    await until(() => c.watching(AGENTS_PATH) > 0, 'the agents watch');
    assert.equal(io.stderrText(), 'waiting for agent "x" to start (Pending)…\n');
    c.put(AGENTS_PATH, { ...c.get(AGENTS_PATH, 'x')!, status: { phase: 'Running', jobName: 'j' } });
    await until(() => c.watching(PODS_PATH) > 0, 'the pods watch');
    c.put(PODS_PATH, pod('p', 'j', { running: { startedAt: 'x' } }) as Obj);
    // The stream ended cleanly, but the container still runs: the log is read on (from where it stopped) until
    // the container has ended.
    const podReads = () => c.calls('GET', `${PODS_PATH}/p`).filter((r) => r.path === `${PODS_PATH}/p`).length;
    await until(() => podReads() === 1, 'the container state asked for');
    c.put(PODS_PATH, pod('p', 'j', { terminated: { exitCode: 0 } }) as Obj);
    await deps.clock.advance(500);
    assert.equal(await done, 0);
    assert.equal(c.calls('GET', `${PODS_PATH}/p/log`)[1]?.query.sinceTime, '2026-12-01T12:00:05Z');
    assert.equal(io.stdoutText(), 'patched it\n');
    assert.deepEqual(c.calls('GET', `${PODS_PATH}/p/log`)[0]?.query, {
      container: 'agent',
      follow: true,
      timestamps: true,
    });
  });

  it('-f on a run that fails before its pod starts shows what the run recorded', async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('x', { ready: { reason: 'Queued' } }) as Obj);
    const io = captureIo(['x', '-f']);
    const done = guarded(logsSpec, io, fakeDeps(c));
    await until(() => c.watching(AGENTS_PATH) > 0, 'the agents watch');
    c.put(AGENTS_PATH, { ...c.get(AGENTS_PATH, 'x')!, status: { phase: 'Running', jobName: 'j' } });
    await until(() => c.watching(PODS_PATH) > 0, 'the pods watch');
    c.put(AGENTS_PATH, {
      ...c.get(AGENTS_PATH, 'x')!,
      status: { phase: 'Failed', jobName: 'j', failureReason: 'ImagePullFailed', output: 'pull failed\n' },
    });
    assert.equal(await done, 0);
    assert.equal(io.stdoutText(), 'pull failed\n');
    assert.equal(c.watching(PODS_PATH), 0, 'the pods watch is closed');
  });
});
