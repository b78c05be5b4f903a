import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeTransport } from '../../kube/fake-transport.ts';
import { createLogger } from '../../shared/log.ts';
import { promptPorts } from './prompt-ports.ts';

const request = (token: string) =>
  new Request('http://x/', { headers: { authorization: `Bearer ${token}` } });

function ports(
  opts: { authenticated?: boolean; allowed?: boolean; delayMs?: number; patchStatus?: number } = {},
) {
  let clock = 0;
  const transport = createFakeTransport({
    request: async (req) => {
      if (opts.delayMs !== undefined) await new Promise((r) => setTimeout(r, opts.delayMs));
      if (req.path.endsWith('/tokenreviews'))
        return {
          status: 201,
          body: {
            status: {
              authenticated: opts.authenticated ?? true,
              user: { username: 'system:serviceaccount:ns:bot', groups: ['system:serviceaccounts'] },
            },
          },
        };
      if (req.path.endsWith('/subjectaccessreviews'))
        return { status: 201, body: { status: { allowed: opts.allowed ?? true } } };
      if (req.method === 'PATCH') return { status: opts.patchStatus ?? 200, body: {} };
      return { status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound' } };
    },
  });
  const p = promptPorts({
    transport,
    tokens: () => undefined,
    logger: createLogger('error', () => {}),
    now: () => clock,
  });
  const count = (suffix: string) => transport.requests.filter((r) => r.path.endsWith(suffix)).length;
  const advance = (ms: number): void => {
    clock += ms;
  };
  return { p, count, advance, transport };
}

describe('prompt API ports', () => {
  it('one TokenReview for callers that arrive together with the same token, reused for 10 s', async () => {
    const t = ports({ delayMs: 20 });
    const ids = await Promise.all(
      Array.from({ length: 10 }, () => t.p.authenticate(request('tok'), undefined)),
    );
    for (const id of ids)
      assert.deepEqual(id, { username: 'system:serviceaccount:ns:bot', groups: ['system:serviceaccounts'] });
    assert.equal(t.count('/tokenreviews'), 1);
    await t.p.authenticate(request('tok'), undefined);
    assert.equal(t.count('/tokenreviews'), 1, 'cached');
    t.advance(10_001);
    await t.p.authenticate(request('tok'), undefined);
    assert.equal(t.count('/tokenreviews'), 2, 'reviewed again after 10 s');
    await t.p.authenticate(request('other'), undefined);
    assert.equal(t.count('/tokenreviews'), 3, 'another token, another review');
  });

  it('no bearer token and no certificate is anonymous; a rejected token is too', async () => {
    assert.equal(await ports().p.authenticate(new Request('http://x/'), undefined), undefined);
    assert.equal(await ports({ authenticated: false }).p.authenticate(request('bad'), undefined), undefined);
  });

  it('a verified client certificate is the user (CN) with its groups (O), without a TokenReview', async () => {
    const t = ports();
    const id = await t.p.authenticate(new Request('http://x/'), {
      authorized: true,
      commonName: 'alice',
      organizations: ['devs'],
    });
    assert.deepEqual(id, { username: 'alice', groups: ['devs', 'system:authenticated'] });
    const unverified = await t.p.authenticate(new Request('http://x/'), {
      authorized: false,
      commonName: 'mallory',
      organizations: ['system:masters'],
    });
    assert.equal(unverified, undefined, 'an unverified certificate is nobody');
    assert.equal(t.count('/tokenreviews'), 0);
  });

  it('reuses an allowing SubjectAccessReview for 10 s, never a refusal', async () => {
    const caller = { username: 'alice', groups: [] };
    const target = { namespace: 'ns', name: 'a', subresource: 'prompt' as const };
    const yes = ports();
    assert.equal(await yes.p.authorize(caller, target), true);
    assert.equal(await yes.p.authorize(caller, target), true);
    assert.equal(yes.count('/subjectaccessreviews'), 1);
    assert.equal(await yes.p.authorize(caller, { ...target, subresource: 'close' }), true);
    assert.equal(yes.count('/subjectaccessreviews'), 2, 'another subresource, another review');
    const no = ports({ allowed: false });
    assert.equal(await no.p.authorize(caller, target), false);
    assert.equal(await no.p.authorize(caller, target), false);
    assert.equal(no.count('/subjectaccessreviews'), 2, 'refusals are asked again');
  });

  it('a status.jobName that is not an object name never reaches a label selector', async () => {
    const t = ports();
    for (const jobName of ['', 'a,job-name!=x', 'x'.repeat(64), 'UPPER']) {
      const r = await t.p.endpoint({
        namespace: 'ns',
        name: 'a',
        uid: 'u',
        phase: 'Running',
        jobName,
        sessionId: undefined,
      });
      assert.deepEqual(r, { kind: 'notRealtime' }, jobName);
    }
    assert.equal(t.count('/pods'), 0, 'no pod list was asked');
  });

  it('reports a session id as the annotation decide reads (uid-guarded merge patch), once per run and id; no status write, no Event', async () => {
    const t = ports();
    const target = {
      namespace: 'ns',
      name: 'a',
      uid: 'uid-a',
      phase: 'Running',
      jobName: 'a-job',
      sessionId: undefined,
    };
    const patches = () => t.transport.requests.filter((r) => r.method === 'PATCH');
    const settled = async (n: number) => {
      for (let i = 0; i < 50 && patches().length < n; i++) await new Promise((r) => setImmediate(r));
      assert.equal(patches().length, n);
    };
    t.p.sessionSeen(target, 'ses-1');
    t.p.sessionSeen(target, 'ses-1');
    await settled(1);
    const [first] = patches();
    assert.equal(first?.path, '/apis/agents.re-cinq.com/v1alpha1/namespaces/ns/agents/a');
    assert.deepEqual(first?.body, {
      metadata: { uid: 'uid-a', annotations: { 'agents.re-cinq.com/session-id': 'ses-1' } },
    });
    t.p.sessionSeen(target, 'ses-2');
    await settled(2);
    assert.ok(t.transport.requests.every((r) => !r.path.endsWith('/status') && !r.path.includes('/events')));
  });

  it('reports an id again after its report failed', async () => {
    const t = ports({ patchStatus: 500 });
    const target = {
      namespace: 'ns',
      name: 'a',
      uid: 'uid-a',
      phase: 'Running',
      jobName: 'j',
      sessionId: undefined,
    };
    const patches = () => t.transport.requests.filter((r) => r.method === 'PATCH').length;
    t.p.sessionSeen(target, 'ses-1');
    for (let i = 0; i < 50 && patches() < 1; i++) await new Promise((r) => setImmediate(r));
    // The failure is handled a few turns later: the next sighting is sent again once it was.
    for (let i = 0; i < 50 && patches() < 2; i++) {
      t.p.sessionSeen(target, 'ses-1');
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(patches(), 2);
  });
});
