import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildRunInput, type InputConfigMapManifest } from '../jobs/index.ts';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import { agent, at, definition, NS, station } from '../reconcile/test-fixtures.ts';
import { createRunInput } from './run-input.ts';

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

  it('409, this run’s with the same data (a retried start) → exists, nothing else is written', async () => {
    const { out, calls } = await create((req) => (req.method === 'POST' ? exists : found()));
    assert.deepEqual(out, { kind: 'exists' });
    assert.deepEqual(calls, [`POST ${COLLECTION}`, `GET ${PATH}`]);
  });

  it('409, this run’s with other data (its memory changed) → DELETE with the uid precondition, POST again → created', async () => {
    const { out, requests, calls } = await create((req, n) => {
      if (req.method === 'POST') return n === 0 ? exists : { status: 201, body: req.body };
      if (req.method === 'GET')
        return found({ data: { ...input.data, prompt: 'Do {thing} (older memory)' } });
      return { status: 200, body: status(200, 'Success', '') };
    });
    assert.deepEqual(out, { kind: 'created' });
    assert.deepEqual(calls, [`POST ${COLLECTION}`, `GET ${PATH}`, `DELETE ${PATH}`, `POST ${COLLECTION}`]);
    assert.deepEqual((requests[2]?.body as { preconditions?: unknown } | undefined)?.preconditions, {
      uid: 'uid-cm',
    });
    assert.deepEqual(requests[3]?.body, { ...input });
  });

  it('this run’s with other data again after the DELETE → stale (retried later), not an endless loop', async () => {
    const { out, calls } = await create((req) => {
      if (req.method === 'POST') return exists;
      if (req.method === 'GET') return found({ data: { prompt: 'other' } });
      return { status: 200, body: status(200, 'Success', '') };
    });
    assert.equal(out.kind, 'stale');
    assert.match(out.kind === 'stale' ? out.message : '', /keeps changing$/);
    assert.deepEqual(calls, [
      `POST ${COLLECTION}`,
      `GET ${PATH}`,
      `DELETE ${PATH}`,
      `POST ${COLLECTION}`,
      `GET ${PATH}`,
    ]);
  });

  it('409, an earlier Agent’s of the same name (same run labels, other owner uid) → stale', async () => {
    const { out, calls } = await create((req) =>
      req.method === 'POST' ? exists : found({ ownerUid: 'uid-previous' }),
    );
    assert.deepEqual(out, {
      kind: 'stale',
      message: `ConfigMap ${NS}/agent-job-a-input of an earlier Agent of this name is still there`,
    });
    assert.deepEqual(calls, [`POST ${COLLECTION}`, `GET ${PATH}`], 'never deletes what is not this run’s');
  });

  it('409, one being deleted → stale', async () => {
    const { out } = await create((req) =>
      req.method === 'POST' ? exists : found({ ownerUid: null, labels: { team: 'x' }, deleting: true }),
    );
    assert.equal(out.kind, 'stale');
  });

  it('409, an unrelated ConfigMap of that name → refused, never deleted', async () => {
    for (const reply of [found({ ownerUid: null, labels: { team: 'x' } }), found({ ownerUid: null })]) {
      const { out, calls } = await create((req) => (req.method === 'POST' ? exists : reply));
      assert.deepEqual(out, {
        kind: 'refused',
        message: `ConfigMap ${NS}/agent-job-a-input already exists and is not this run's`,
      });
      assert.deepEqual(calls, [`POST ${COLLECTION}`, `GET ${PATH}`]);
    }
  });

  it('409, owned by another Agent (an earlier one of this name, whatever its Station) → stale, never deleted', async () => {
    const { out, calls } = await create((req) =>
      req.method === 'POST' ? exists : found({ ownerUid: 'uid-other', labels: { team: 'x' } }),
    );
    assert.deepEqual(out, {
      kind: 'stale',
      message: `ConfigMap ${NS}/agent-job-a-input of an earlier Agent of this name is still there`,
    });
    assert.deepEqual(calls, [`POST ${COLLECTION}`, `GET ${PATH}`]);
  });

  it('409, an orphaned run input (no owner, our Agent-uid annotation) → deleted (uid precondition), created again', async () => {
    let posts = 0;
    const { out, calls, requests } = await create((req) => {
      if (req.method === 'POST') return posts++ === 0 ? exists : { status: 201, body: req.body };
      if (req.method === 'DELETE') return { status: 200, body: status(200, 'Success', '') };
      return found({ ownerUid: null, annotations: { 'agents.re-cinq.com/agent-uid': 'uid-gone' } });
    });
    assert.deepEqual(out, { kind: 'created' });
    assert.deepEqual(calls, [`POST ${COLLECTION}`, `GET ${PATH}`, `DELETE ${PATH}`, `POST ${COLLECTION}`]);
    assert.deepEqual((requests[2]?.body as { preconditions?: unknown } | undefined)?.preconditions, {
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

  it('this run’s outdated one it may not delete (403) → refused; already gone (404) → created anyway', async () => {
    const outdated = (deleteReply: FakeReply) =>
      create((req, n) => {
        if (req.method === 'POST') return n === 0 ? exists : { status: 201, body: req.body };
        if (req.method === 'GET') return found({ data: { prompt: 'old' } });
        return deleteReply;
      });
    const denied = await outdated(forbidden);
    assert.equal(denied.out.kind, 'refused');
    assert.match(
      denied.out.kind === 'refused' ? denied.out.message : '',
      /^ConfigMap team\/agent-job-a-input is outdated and cannot be deleted: api 403 Forbidden: /,
    );
    assert.deepEqual(denied.calls, [`POST ${COLLECTION}`, `GET ${PATH}`, `DELETE ${PATH}`]);
    const gone = await outdated({ status: 404, body: status(404, 'NotFound', 'not found') });
    assert.deepEqual(gone.out, { kind: 'created' });
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
