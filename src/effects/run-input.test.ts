import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildRunInput, type InputConfigMapManifest } from '../jobs/index.ts';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import { agent, at, definition, NS, station } from '../reconcile/test-fixtures.ts';
import { createRunInput, deleteRunInput } from './run-input.ts';

const COLLECTION = `/api/v1/namespaces/${NS}/configmaps`;
const PATH = `${COLLECTION}/agent-job-a-input`;
const opts = { fieldManager: 'test', timeoutMs: 1000 };

const status = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});
const exists: FakeReply = {
  status: 409,
  body: status(409, 'AlreadyExists', 'configmaps "agent-job-a-input" already exists'),
};
const forbidden: FakeReply = {
  status: 403,
  body: status(403, 'Forbidden', 'configmaps is forbidden: User "agent-controller" cannot create'),
};

/** The input ConfigMap of run `a` (prompt `Do {thing}`), as the reconcile core builds it. */
const input: InputConfigMapManifest = buildRunInput({
  agent: agent('a'),
  station: station(),
  definition: definition(),
  agentImage: 'agent-controller:e2e',
  now: at(0),
});

/** The ConfigMap of that name as the API server returns it: this run's input unless overridden. */
const found = (
  o: {
    ownerUid?: string | null;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    data?: Record<string, string>;
    deleting?: boolean;
  } = {},
): FakeReply => ({
  status: 200,
  body: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: input.metadata.name,
      namespace: NS,
      uid: 'uid-cm',
      resourceVersion: '12',
      creationTimestamp: '2025-03-01T12:00:00Z',
      labels: o.labels ?? input.metadata.labels,
      ...(o.annotations !== undefined ? { annotations: o.annotations } : {}),
      ...(o.deleting === true ? { deletionTimestamp: '2025-03-01T12:00:30Z' } : {}),
      ...(o.ownerUid === null
        ? {}
        : {
            ownerReferences: [
              {
                ...input.metadata.ownerReferences[0],
                uid: o.ownerUid ?? input.metadata.ownerReferences[0].uid,
              },
            ],
          }),
    },
    immutable: true,
    data: o.data ?? input.data,
  },
});

/** Runs `createRunInput` against scripted answers (`n` counts the requests before this one). */
async function create(replies: (req: FakeRequest, n: number) => FakeReply) {
  let n = 0;
  const t = createFakeTransport({ request: (req) => replies(req, n++) });
  const out = await createRunInput(t, input, opts);
  return { out, requests: t.requests, calls: t.requests.map((r) => `${r.method} ${r.path}`) };
}

describe('createRunInput (the run input ConfigMap, issue 10 §1)', () => {
  it('201 → created: one POST of the manifest to configmaps, with the field manager', async () => {
    const { out, requests, calls } = await create((req) => ({ status: 201, body: req.body }));
    assert.deepEqual(out, { kind: 'created' });
    assert.deepEqual(calls, [`POST ${COLLECTION}`]);
    assert.equal(requests[0]?.query.fieldManager, 'test');
    assert.deepEqual(requests[0]?.body, { ...input });
    assert.equal(input.metadata.name, 'agent-job-a-input');
    assert.equal(input.immutable, true);
  });

  it('409 → the ConfigMap of that name read back and reported as found (owner, annotations, data), nothing else written', async () => {
    const { out, calls } = await create((req) =>
      req.method === 'POST'
        ? exists
        : found({ data: { prompt: 'other' }, annotations: { 'agents.re-cinq.com/agent-uid': 'uid-a' } }),
    );
    assert.deepEqual(out, {
      kind: 'found',
      found: {
        key: `ConfigMap ${NS}/agent-job-a-input`,
        uid: 'uid-cm',
        deleting: false,
        controller: {
          uid: input.metadata.ownerReferences[0].uid,
          kind: 'Agent',
          apiVersion: 'agents.re-cinq.com/v1alpha1',
          name: 'a',
        },
        labels: input.metadata.labels,
        annotations: { 'agents.re-cinq.com/agent-uid': 'uid-a' },
        data: { prompt: 'other' },
      },
    });
    assert.deepEqual(calls, [`POST ${COLLECTION}`, `GET ${PATH}`], 'whose it is is decided by the core');
    const orphan = await create((req) =>
      req.method === 'POST' ? exists : found({ ownerUid: null, deleting: true }),
    );
    assert.equal(orphan.out.kind === 'found' && orphan.out.found.controller, undefined);
    assert.equal(orphan.out.kind === 'found' && orphan.out.found.deleting, true);
  });

  it('deleteRunInput: DELETE with the uid precondition', async () => {
    const t = createFakeTransport({ request: () => ({ status: 200, body: status(200, 'Success', '') }) });
    assert.deepEqual(await deleteRunInput(t, NS, 'agent-job-a-input', 'uid-cm', 1000), {
      ok: true,
      value: undefined,
    });
    assert.deepEqual(
      t.requests.map((r) => `${r.method} ${r.path}`),
      [`DELETE ${PATH}`],
    );
    assert.deepEqual((t.requests[0]?.body as { preconditions?: unknown } | undefined)?.preconditions, {
      uid: 'uid-cm',
    });
  });

  it('409, then the ConfigMap is gone when read → stale; it cannot be read (403) → refused', async () => {
    const gone = await create((req) =>
      req.method === 'POST' ? exists : { status: 404, body: status(404, 'NotFound', 'not found') },
    );
    assert.deepEqual(gone.out, {
      kind: 'stale',
      message: `ConfigMap ${NS}/agent-job-a-input vanished after a name collision`,
    });
    const unreadable = await create((req) => (req.method === 'POST' ? exists : forbidden));
    assert.equal(unreadable.out.kind, 'refused');
    assert.match(
      unreadable.out.kind === 'refused' ? unreadable.out.message : '',
      /^ConfigMap team\/agent-job-a-input exists and cannot be read: api 403 Forbidden: /,
    );
  });

  it('403 → refused with the API server’s answer, naming the ConfigMap', async () => {
    const { out, calls } = await create(() => forbidden);
    assert.deepEqual(out, {
      kind: 'refused',
      message: `ConfigMap ${NS}/agent-job-a-input: api 403 Forbidden: configmaps is forbidden: User "agent-controller" cannot create`,
    });
    assert.deepEqual(calls, [`POST ${COLLECTION}`]);
  });

  it('422 and 400 → refused', async () => {
    for (const [code, reason] of [
      [422, 'Invalid'],
      [400, 'BadRequest'],
    ] as const) {
      const { out } = await create(() => ({ status: code, body: status(code, reason, 'data: Too long') }));
      assert.equal(out.kind, 'refused', `${code}`);
      assert.match(out.kind === 'refused' ? out.message : '', /^ConfigMap team\/agent-job-a-input: api \d+ /);
    }
  });

  it('500 → error (retried with backoff); a network failure too', async () => {
    const { out, calls } = await create(() => ({
      status: 500,
      body: status(500, 'InternalError', 'etcdserver: leader changed'),
    }));
    assert.equal(out.kind, 'error');
    assert.equal(out.kind === 'error' && out.error.kind === 'api' && out.error.code, 500);
    assert.deepEqual(calls, [`POST ${COLLECTION}`]);
    const network = await create(() => ({ error: { kind: 'network', message: 'connect ECONNREFUSED' } }));
    assert.equal(network.out.kind === 'error' && network.out.error.kind, 'network');
  });
});
