import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { guarded } from './context.ts';
import { AGENTS_PATH, captureIo, FakeCluster, fakeDeps } from './fake-cluster.ts';
import { resumeSpec, sessionRequest, suspendSpec } from './suspend.ts';
import { rawAgent } from './test-fixtures.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

const of = (phase: string) =>
  ({ metadata: { name: 'live' }, status: { phase } }) as Parameters<typeof sessionRequest>[1];

describe('suspend and resume: what each asks for by phase', () => {
  it('suspend asks a Running session, says so of a Suspended one, refuses the rest', () => {
    assert.deepEqual(sessionRequest('suspend', of('Running')), { kind: 'ask' });
    assert.deepEqual(sessionRequest('suspend', of('Suspended')), {
      kind: 'already',
      line: 'live is suspended already',
    });
    assert.deepEqual(sessionRequest('suspend', of('Succeeded')), {
      kind: 'refuse',
      line: 'live is Succeeded: only a Running realtime session can be suspended',
    });
  });

  it('resume asks a Suspended session, says so of a Running one, refuses the rest', () => {
    assert.deepEqual(sessionRequest('resume', of('Suspended')), { kind: 'ask' });
    assert.deepEqual(sessionRequest('resume', of('Running')), {
      kind: 'already',
      line: 'live is running already',
    });
    assert.equal(sessionRequest('resume', of('Pending')).kind, 'refuse');
  });
});

describe('suspend and resume against the cluster', () => {
  it('suspend annotates a Running Agent with the time (uid precondition); resume of it says so; 404 → 4', async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('live', { phase: 'Running' }) as Obj);
    c.override = (req) =>
      req.method === 'PATCH' ? { status: 200, body: c.get(AGENTS_PATH, 'live') } : undefined;
    const deps = fakeDeps(c);
    const io = captureIo(['live']);
    assert.equal(await guarded(suspendSpec, io, deps), 0);
    assert.equal(io.stdoutText(), 'live suspend requested\n');
    const patch = c.calls('PATCH', AGENTS_PATH)[0];
    assert.deepEqual(patch?.body, {
      metadata: {
        uid: 'uid-live',
        annotations: { 'agents.re-cinq.com/suspend-requested': new Date(deps.clock.now()).toISOString() },
      },
    });
    const again = captureIo(['live']);
    assert.equal(await guarded(resumeSpec, again, fakeDeps(c)), 0);
    assert.equal(again.stdoutText(), 'live is running already\n');
    const missing = captureIo(['nope']);
    assert.equal(await guarded(resumeSpec, missing, fakeDeps(c)), 4);
  });

  it('resume of a Succeeded Agent is refused (exit 1), nothing written', async () => {
    const c = new FakeCluster();
    c.put(AGENTS_PATH, rawAgent('done', { phase: 'Succeeded' }) as Obj);
    const io = captureIo(['done']);
    assert.equal(await guarded(resumeSpec, io, fakeDeps(c)), 1);
    assert.match(io.stderrText(), /only a Suspended session can be resumed/);
    assert.equal(c.calls('PATCH', AGENTS_PATH).length, 0);
  });
});
