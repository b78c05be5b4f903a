import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import { agent, definition, NS } from '../reconcile/test-fixtures.ts';
import { observeServer, probeApiKeySecret } from './server.ts';

const SECRET = 'a-server-api-key';
const COLLECTION = `/api/v1/namespaces/${NS}/secrets`;

const status = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});

/** The dry-run create as the API server answers it when no Secret of the name exists: the object it would store. */
const created: FakeReply = {
  status: 201,
  body: {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: SECRET,
      namespace: NS,
      uid: 'uid-dry',
      creationTimestamp: '2025-03-01T12:00:00Z',
      labels: { 'agents.re-cinq.com/component': 'server-api-key' },
    },
    type: 'Opaque',
  },
};
const exists: FakeReply = {
  status: 409,
  body: status(409, 'AlreadyExists', `secrets "${SECRET}" already exists`),
};
const forbidden: FakeReply = {
  status: 403,
  body: status(
    403,
    'Forbidden',
    `secrets "${SECRET}" is forbidden: User "system:serviceaccount:agents:agent-controller" cannot create resource "secrets" in API group "" in the namespace "${NS}"`,
  ),
};
const invalid: FakeReply = {
  status: 422,
  body: status(
    422,
    'Invalid',
    `Secret "${SECRET}" is invalid: metadata.labels: Invalid value: "x": a valid label must be 63 characters or less`,
  ),
};

/** A fake API server answering the Secret probe with `reply` (anything else: 404), and what it was asked. */
function probed(reply: FakeReply) {
  const transport = createFakeTransport({
    request: (req) =>
      req.method === 'POST' && req.path === COLLECTION
        ? reply
        : { status: 404, body: status(404, 'NotFound', 'not found') },
  });
  return { deps: { transport, timeoutMs: 1000 }, requests: transport.requests };
}

/** Asserts the one request is the dry-run create of an empty Secret of the name, and nothing else was asked. */
function assertProbe(requests: readonly FakeRequest[]): void {
  const posts = requests.filter((r) => r.method !== 'GET');
  assert.equal(posts.length, 1, 'one write-shaped request: the probe');
  const [req] = posts;
  assert.ok(req);
  assert.equal(req.method, 'POST');
  assert.equal(req.path, COLLECTION, 'the secrets collection, no object path');
  assert.equal(req.query.dryRun, 'All', 'a dry run: nothing is stored');
  const body = req.body as Record<string, unknown>;
  assert.equal(body.kind, 'Secret');
  assert.equal(body.apiVersion, 'v1');
  assert.deepEqual((body.metadata as Record<string, unknown>).name, SECRET);
  assert.deepEqual((body.metadata as Record<string, unknown>).namespace, NS);
  assert.ok(!('data' in body), 'no data');
  assert.ok(!('stringData' in body), 'no stringData');
  assert.ok(!JSON.stringify(body).includes('sk-'), 'no key anywhere in the body');
  assert.equal(
    requests.filter((r) => r.path.startsWith(`${COLLECTION}/`)).length,
    0,
    'the Secret itself is never read',
  );
}

describe('probeApiKeySecret (a dry-run create of a Secret without data)', () => {
  it('a success (201) says the Secret is absent', async () => {
    const { deps, requests } = probed(created);
    assert.deepEqual(await probeApiKeySecret(deps, NS, SECRET), { ok: true, value: { kind: 'absent' } });
    assertProbe(requests);
    assert.equal(requests.length, 1);
  });

  it('409 AlreadyExists says the Secret is present', async () => {
    const { deps, requests } = probed(exists);
    assert.deepEqual(await probeApiKeySecret(deps, NS, SECRET), { ok: true, value: { kind: 'present' } });
    assertProbe(requests);
    assert.equal(requests.length, 1);
  });

  for (const [what, reply, code, reason] of [
    ['403 Forbidden', forbidden, 403, 'Forbidden'],
    ['422 Invalid', invalid, 422, 'Invalid'],
  ] as const) {
    it(`${what} is the error, naming the Secret; neither present nor absent`, async () => {
      const { deps, requests } = probed(reply);
      const r = await probeApiKeySecret(deps, NS, SECRET);
      if (r.ok) assert.fail(`read as ${r.value.kind}`);
      assert.equal(r.error.kind, 'api');
      assert.ok(r.error.kind === 'api');
      assert.equal(r.error.code, code);
      assert.equal(r.error.reason, reason);
      assert.ok(r.error.message.includes(SECRET), r.error.message);
      assertProbe(requests);
    });

    it(`${what}: reading the server's objects fails, saying which Secret could not be checked and why`, async () => {
      const { deps, requests } = probed(reply);
      const r = await observeServer(deps, agent('a'), definition(), undefined);
      if (r.ok) assert.fail('read as observed');
      assert.ok(r.error.includes(`API-key Secret ${SECRET}`), r.error);
      assert.ok(r.error.includes(`${code} ${reason}`), r.error);
      assertProbe(requests);
    });
  }
});
