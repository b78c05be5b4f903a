import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import type { EventNote, EventRecorder } from '../kube/index.ts';
import { createControllerMetrics } from '../metrics/index.ts';
import { type Action, REASON } from '../reconcile/index.ts';
import { NS } from '../reconcile/test-fixtures.ts';
import { createLogger } from '../shared/log.ts';
import { executeActions } from './execute.ts';
import { MAX_MEMORY_WRITES, readMemory } from './memory.ts';

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

const save = (content: string, readVersion?: string): Action => ({
  kind: 'saveMemory',
  ref: { namespace: NS, name: 'a', uid: 'uid-a' },
  namespace: NS,
  configMap: 'notes',
  content,
  ...(readVersion !== undefined ? { readVersion } : {}),
});
const after: Action = {
  kind: 'recordEvent',
  ref: { namespace: NS, name: 'a', uid: 'uid-a' },
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

describe('saveMemory (executor)', () => {
  it('creates the ConfigMap when it is missing: labelled as a memory, owned by nothing', async () => {
    const r = await execute([save('- notes', ''), after], (req) =>
      req.method === 'POST' ? { status: 201, body: configMap('10', { 'MEMORY.md': '- notes' }) } : notFound,
    );
    assert.deepEqual(r.outcome, { kind: 'done' });
    assert.deepEqual(calls(r.requests), [`GET ${PATH}`, `POST ${COLLECTION}`]);
    assert.deepEqual(r.requests[1]?.body, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'notes', namespace: NS, labels: { 'agents.re-cinq.com/memory': 'true' } },
      data: { 'MEMORY.md': '- notes' },
    });
    assert.deepEqual(r.reasons, ['Normal/MemorySaved', 'Normal/Later']);
    assert.equal(r.notes[0]?.message, 'Memory saved to ConfigMap notes (7 bytes)');
  });

  it('replaces MEMORY.md only, keeping every other field, with the resourceVersion as precondition', async () => {
    const current = configMap('41', { 'MEMORY.md': 'old', other: 'kept' }, { binaryData: { b: 'AAE=' } });
    const r = await execute([save('new', '41')], (req) =>
      req.method === 'PUT'
        ? { status: 200, body: { ...current, data: { other: 'kept', 'MEMORY.md': 'new' } } }
        : { status: 200, body: current },
    );
    assert.deepEqual(calls(r.requests), [`GET ${PATH}`, `PUT ${PATH}`]);
    const body = r.requests[1]?.body as Record<string, unknown> & { metadata: Record<string, unknown> };
    assert.equal(body.metadata.resourceVersion, '41');
    assert.deepEqual(body.metadata.labels, { team: 'a', 'agents.re-cinq.com/memory': 'true' });
    assert.deepEqual(body.data, { 'MEMORY.md': 'new', other: 'kept' });
    assert.deepEqual(body.binaryData, { b: 'AAE=' });
    assert.deepEqual(r.reasons, ['Normal/MemorySaved'], 'the version it read: no overwrite');
  });

  it('409 → reads again and writes again; the overwrite of a concurrent update is told (MemoryOverwritten)', async () => {
    const r = await execute([save('mine', '41'), after], (req, n) => {
      if (req.method === 'GET')
        return {
          status: 200,
          body: configMap(n === 0 ? '41' : '42', { 'MEMORY.md': n === 0 ? 'old' : 'theirs' }),
        };
      return n === 1 ? conflict : { status: 200, body: configMap('43', { 'MEMORY.md': 'mine' }) };
    });
    assert.deepEqual(r.outcome, { kind: 'done' });
    assert.deepEqual(calls(r.requests), [`GET ${PATH}`, `PUT ${PATH}`, `GET ${PATH}`, `PUT ${PATH}`]);
    assert.equal(
      (r.requests[3]?.body as { metadata?: { resourceVersion?: string } } | undefined)?.metadata
        ?.resourceVersion,
      '42',
    );
    assert.deepEqual(r.reasons, ['Normal/MemorySaved', 'Normal/MemoryOverwritten', 'Normal/Later']);
    assert.match(
      r.notes[1]?.message ?? '',
      /replaced a concurrent update of ConfigMap notes.*last writer wins/,
    );
  });

  it('a version written after the run read it is overwritten, never silently (no conflict needed)', async () => {
    const r = await execute([save('mine', '41')], (req) =>
      req.method === 'GET'
        ? { status: 200, body: configMap('57', { 'MEMORY.md': 'a concurrent run wrote this' }) }
        : { status: 200, body: configMap('58', { 'MEMORY.md': 'mine' }) },
    );
    assert.deepEqual(r.reasons, ['Normal/MemorySaved', 'Normal/MemoryOverwritten']);
    assert.match(r.notes[1]?.message ?? '', /after this run read it \(resourceVersion 41\)/);
    // Created by another run after this one found none: the POST is refused, the new one replaced.
    const raced = await execute([save('mine', '')], (req, n) => {
      if (req.method === 'GET')
        return n === 0 ? notFound : { status: 200, body: configMap('60', { 'MEMORY.md': 'theirs' }) };
      if (req.method === 'POST')
        return { status: 409, body: status(409, 'AlreadyExists', 'configmaps "notes" already exists') };
      return { status: 200, body: configMap('61', { 'MEMORY.md': 'mine' }) };
    });
    assert.deepEqual(calls(raced.requests), [
      `GET ${PATH}`,
      `POST ${COLLECTION}`,
      `GET ${PATH}`,
      `PUT ${PATH}`,
    ]);
    assert.deepEqual(raced.reasons, ['Normal/MemorySaved', 'Normal/MemoryOverwritten']);
  });

  it('an unchanged memory is not written', async () => {
    const r = await execute([save('same', '3'), after], () => ({
      status: 200,
      body: configMap('9', { 'MEMORY.md': 'same' }),
    }));
    assert.deepEqual(calls(r.requests), [`GET ${PATH}`]);
    assert.deepEqual(r.reasons, ['Normal/Later']);
  });

  it('a ConfigMap that exists without the memory label is never written (MemoryNotSaved)', async () => {
    const plain = configMap('9', { other: 'x' });
    const unlabelled = { ...plain, metadata: { ...plain.metadata, labels: {} } };
    const r = await execute([save('new', '3'), after], () => ({ status: 200, body: unlabelled }));
    assert.deepEqual(calls(r.requests), [`GET ${PATH}`]);
    assert.deepEqual(r.reasons, ['Warning/MemoryNotSaved', 'Normal/Later']);
    assert.match(r.notes[0]?.message ?? '', /not labelled agents\.re-cinq\.com\/memory=true/);
  });

  it('403 → Warning MemoryNotSaved naming the grant; the decision goes on', async () => {
    for (const script of [
      (): FakeReply => forbidden,
      (req: FakeRequest): FakeReply => (req.method === 'GET' ? notFound : forbidden),
      (req: FakeRequest): FakeReply =>
        req.method === 'GET' ? { status: 200, body: configMap('1', {}) } : forbidden,
    ]) {
      const r = await execute([save('x'), after], script);
      assert.deepEqual(r.outcome, { kind: 'done' });
      assert.deepEqual(r.reasons, ['Warning/MemoryNotSaved', 'Normal/Later']);
      assert.match(r.notes[0]?.message ?? '', /^Memory not saved to ConfigMap notes: .*forbidden/);
      assert.match(
        r.notes[0]?.message ?? '',
        /the controller needs configmaps get, create and update in this namespace \(deploy\/components\/memory\)$/,
      );
    }
  });

  it(`gives up after ${MAX_MEMORY_WRITES} conflicts, on an immutable ConfigMap and on other errors: Warning`, async () => {
    const busy = await execute([save('x')], (req, n) =>
      req.method === 'GET' ? { status: 200, body: configMap(String(n), { 'MEMORY.md': 'y' }) } : conflict,
    );
    assert.equal(busy.requests.filter((q) => q.method === 'PUT').length, MAX_MEMORY_WRITES);
    assert.deepEqual(busy.reasons, ['Warning/MemoryNotSaved']);
    assert.match(busy.notes[0]?.message ?? '', /kept changing while being written \(5 attempts\)/);
    const frozen = await execute([save('x')], () => ({
      status: 200,
      body: configMap('1', { 'MEMORY.md': 'y' }, { immutable: true }),
    }));
    assert.deepEqual(calls(frozen.requests), [`GET ${PATH}`]);
    assert.match(frozen.notes[0]?.message ?? '', /immutable/);
    const broken = await execute([save('x')], () => ({
      status: 500,
      body: status(500, 'InternalError', 'etcd down'),
    }));
    assert.deepEqual(broken.reasons, [`Warning/${REASON.memoryNotSaved}`]);
    assert.match(broken.notes[0]?.message ?? '', /etcd down/);
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
