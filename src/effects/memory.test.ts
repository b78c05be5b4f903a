import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import type { EventNote, EventRecorder } from '../kube/index.ts';
import { createControllerMetrics } from '../metrics/index.ts';
import type { Action } from '../reconcile/index.ts';
import { NS } from '../reconcile/test-fixtures.ts';
import { createLogger } from '../shared/log.ts';
import { executeActions } from './execute.ts';
import { observeMemoryConfigMap, readMemory } from './memory.ts';

const COLLECTION = `/api/v1/namespaces/${NS}/configmaps`;
const PATH = `${COLLECTION}/notes`;

const status = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});
const notFound: FakeReply = { status: 404, body: status(404, 'NotFound', 'configmaps "notes" not found') };
const forbidden: FakeReply = {
  status: 403,
  body: status(403, 'Forbidden', 'configmaps "notes" is forbidden: User "agent-controller" cannot get'),
};
const conflict: FakeReply = {
  status: 409,
  body: status(
    409,
    'Conflict',
    'the object has been modified; please apply your changes to the latest version',
  ),
};

/** A ConfigMap as the API server returns it. */
const configMap = (rv: string, data: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'notes',
    namespace: NS,
    uid: 'uid-cm',
    resourceVersion: rv,
    creationTimestamp: '2025-03-01T12:00:00Z',
    labels: { team: 'a', 'agents.re-cinq.com/memory': 'true' },
  },
  data,
  ...extra,
});

const memoryRef = { namespace: NS, name: 'a', uid: 'uid-a' };
const created = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'notes', namespace: NS, labels: { 'agents.re-cinq.com/memory': 'true' } },
  data: { 'MEMORY.md': '- notes' },
};
const create: Action = { kind: 'saveMemory', ref: memoryRef, namespace: NS, configMap: created };
const read = configMap('41', { 'MEMORY.md': 'new', other: 'kept' }, { binaryData: { b: 'AAE=' } });
const replace: Action = {
  kind: 'saveMemory',
  ref: memoryRef,
  namespace: NS,
  configMap: read,
  replace: { resourceVersion: '41' },
};
const after: Action = {
  kind: 'recordEvent',
  ref: memoryRef,
  type: 'Normal',
  reason: 'Later',
  message: 'the decision goes on',
};

/** Runs `actions` against scripted answers; returns the requests, the Events recorded and the outcome. */
async function execute(actions: readonly Action[], replies: (req: FakeRequest, n: number) => FakeReply) {
  let n = 0;
  const transport = createFakeTransport({ request: (req) => replies(req, n++) });
  const notes: EventNote[] = [];
  const events: EventRecorder = {
    record(_obj, note) {
      notes.push(note);
      return Promise.resolve();
    },
  };
  const outcome = await executeActions(actions, {
    transport,
    events,
    metrics: createControllerMetrics(false),
    logger: createLogger('error', () => undefined),
    timeoutMs: 1000,
  });
  return { outcome, requests: transport.requests, notes, reasons: notes.map((e) => `${e.type}/${e.reason}`) };
}

const calls = (requests: readonly FakeRequest[]) => requests.map((r) => `${r.method} ${r.path}`);

describe('saveMemory (executor): the one write decide chose, nothing decided', () => {
  it('a create POSTs the ConfigMap as decided, reads nothing, tells nothing; the decision goes on', async () => {
    const r = await execute([create, after], () => ({ status: 201, body: configMap('10', created.data) }));
    assert.deepEqual(r.outcome, { kind: 'done' });
    assert.deepEqual(calls(r.requests), [`POST ${COLLECTION}`]);
    assert.deepEqual(r.requests[0]?.body, created);
    assert.deepEqual(r.reasons, ['Normal/Later'], 'the Events are the decision’s, not the handler’s');
  });

  it('a replace PUTs the ConfigMap as decided (everything read kept) with the resourceVersion as precondition', async () => {
    const r = await execute([replace], () => ({
      status: 200,
      body: configMap('42', { 'MEMORY.md': 'new' }),
    }));
    assert.deepEqual(r.outcome, { kind: 'done' });
    assert.deepEqual(calls(r.requests), [`PUT ${PATH}`]);
    const body = r.requests[0]?.body as Record<string, unknown> & { metadata: Record<string, unknown> };
    assert.equal(body.metadata.resourceVersion, '41');
    assert.deepEqual(body.metadata.labels, { team: 'a', 'agents.re-cinq.com/memory': 'true' });
    assert.deepEqual(body.data, { 'MEMORY.md': 'new', other: 'kept' });
    assert.deepEqual(body.binaryData, { b: 'AAE=' });
  });

  it('a ConfigMap changed since it was read stops the decision to read it again (409 AlreadyExists, 409, 404 on a replace)', async () => {
    const exists: FakeReply = {
      status: 409,
      body: status(409, 'AlreadyExists', 'configmaps "notes" already exists'),
    };
    for (const [action, reply] of [
      [create, exists],
      [replace, conflict],
      [replace, notFound],
    ] as const) {
      const r = await execute([action, after], () => reply);
      assert.equal(r.outcome.kind, 'memoryChanged', `${action.replace ? 'PUT' : 'POST'} ${reply.status}`);
      assert.equal(r.requests.length, 1, 'one write, no read');
      assert.deepEqual(r.reasons, [], 'the rest of the decision is dropped');
    }
  });

  it('403 and other failures stop the decision with the answer, for decide to tell (a create’s 404 too)', async () => {
    const refused = await execute([replace, after], () => forbidden);
    assert.equal(refused.outcome.kind, 'memoryForbidden');
    assert.match(refused.outcome.kind === 'memoryForbidden' ? refused.outcome.message : '', /forbidden/);
    const broken = await execute([create, after], () => ({
      status: 500,
      body: status(500, 'InternalError', 'etcd down'),
    }));
    assert.equal(broken.outcome.kind, 'memoryFailed');
    assert.match(broken.outcome.kind === 'memoryFailed' ? broken.outcome.message : '', /etcd down/);
    const gone = await execute([create], () => notFound);
    assert.equal(gone.outcome.kind, 'memoryFailed');
    assert.deepEqual([...refused.reasons, ...broken.reasons, ...gone.reasons], []);
  });

  it('is fenced: nothing is written once this replica may not write', async () => {
    const transport = createFakeTransport({ request: () => ({ status: 201, body: created }) });
    const outcome = await executeActions([create], {
      transport,
      events: { record: () => Promise.resolve() },
      metrics: createControllerMetrics(false),
      logger: createLogger('error', () => undefined),
      mayWrite: () => false,
    });
    assert.equal(outcome.kind, 'notLeading');
    assert.deepEqual(transport.requests, []);
  });
});

describe('observeMemoryConfigMap', () => {
  const io = (reply: FakeReply) => ({
    transport: createFakeTransport({ request: () => reply }),
    logger: createLogger('error', () => undefined),
  });

  it('present with the ConfigMap as read; 404 → absent; a refusal or failure → failed with the answer', async () => {
    const cm = configMap('41', { 'MEMORY.md': 'm' }, { immutable: true });
    assert.deepEqual(await observeMemoryConfigMap(io({ status: 200, body: cm }), NS, 'notes'), {
      kind: 'present',
      configMap: cm,
    });
    assert.deepEqual(await observeMemoryConfigMap(io(notFound), NS, 'notes'), { kind: 'absent' });
    const refused = await observeMemoryConfigMap(io(forbidden), NS, 'notes');
    assert.equal(refused.kind === 'failed' && refused.forbidden, true);
    assert.match(refused.kind === 'failed' ? refused.message : '', /cannot get/);
    const broken = await observeMemoryConfigMap(
      io({ status: 500, body: status(500, 'InternalError', 'etcd down') }),
      NS,
      'notes',
    );
    assert.deepEqual(broken.kind === 'failed' && [broken.forbidden, /etcd down/.test(broken.message)], [
      false,
      true,
    ]);
  });
});

describe('readMemory', () => {
  const io = (reply: FakeReply) => ({
    transport: createFakeTransport({ request: () => reply }),
    logger: createLogger('error', () => undefined),
  });

  it('reads MEMORY.md and the resourceVersion; a missing ConfigMap or key is an empty memory', async () => {
    assert.deepEqual(
      await readMemory(io({ status: 200, body: configMap('41', { 'MEMORY.md': 'm' }) }), NS, 'notes'),
      {
        ok: true,
        value: { kind: 'read', content: 'm', resourceVersion: '41' },
      },
    );
    assert.deepEqual(await readMemory(io({ status: 200, body: configMap('41', {}) }), NS, 'notes'), {
      ok: true,
      value: { kind: 'read', content: '', resourceVersion: '41' },
    });
    assert.deepEqual(await readMemory(io(notFound), NS, 'notes'), {
      ok: true,
      value: { kind: 'read', content: '' },
    });
  });

  it('asks the API server whether it may update the memory; when not, the run fails before it starts', async () => {
    const scripted = (allowed: unknown, found: FakeReply) => {
      const requests: FakeRequest[] = [];
      return {
        requests,
        io: {
          transport: createFakeTransport({
            request: (req) => {
              requests.push(req);
              return req.method === 'GET' ? found : { status: 201, body: { status: allowed } };
            },
          }),
          logger: createLogger('error', () => undefined),
        },
      };
    };
    const existing = { status: 200, body: configMap('41', { 'MEMORY.md': 'm' }) };
    for (const found of [existing, notFound]) {
      const denied = scripted({ allowed: false }, found);
      const r = await readMemory(denied.io, NS, 'notes');
      assert.deepEqual(r, {
        ok: true,
        value: {
          kind: 'forbidden',
          message: `configmaps "notes" is forbidden: the controller cannot update ConfigMaps in namespace "${NS}"`,
        },
      });
      assert.deepEqual(
        denied.requests.map((q) => [q.method, q.path]),
        [
          ['GET', PATH],
          ['POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews'],
        ],
      );
      assert.deepEqual((denied.requests[1]?.body as { spec?: unknown } | undefined)?.spec, {
        resourceAttributes: { namespace: NS, verb: 'update', resource: 'configmaps', name: 'notes' },
      });
    }
    // Allowed, or no clear answer: the memory is read (a save that fails later says why).
    for (const allowed of [{ allowed: true }, {}, 'garbage']) {
      const other = scripted(allowed, existing);
      assert.deepEqual(await readMemory(other.io, NS, 'notes'), {
        ok: true,
        value: { kind: 'read', content: 'm', resourceVersion: '41' },
      });
    }
  });

  it('a ConfigMap not labelled as a memory is never read into a run', async () => {
    const plain = configMap('41', { 'MEMORY.md': 'secret notes of another team' });
    const unlabelled = { ...plain, metadata: { ...plain.metadata, labels: { team: 'b' } } };
    assert.deepEqual(await readMemory(io({ status: 200, body: unlabelled }), NS, 'notes'), {
      ok: true,
      value: { kind: 'notMemory' },
    });
  });

  it('403 is an answer (the run fails naming the grant); other errors are retried', async () => {
    const denied = await readMemory(io(forbidden), NS, 'notes');
    assert.ok(denied.ok && denied.value.kind === 'forbidden');
    assert.match(denied.value.kind === 'forbidden' ? denied.value.message : '', /forbidden/);
    const broken = await readMemory(
      io({ status: 503, body: status(503, 'ServiceUnavailable', 'busy') }),
      NS,
      'notes',
    );
    assert.equal(broken.ok, false);
  });
});
