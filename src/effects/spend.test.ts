import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, parseAgent, type SpendLedger } from '../api/index.ts';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import type { Action } from '../reconcile/index.ts';
import { DEFAULT_PRICES } from '../reconcile/results/prices.ts';
import { Store } from '../runtime/index.ts';
import { createLogger } from '../shared/log.ts';
import { observeSpend, recordSpend } from './spend.ts';

const H = 3_600_000;
const NOW = Date.parse('2026-01-10T12:00:00.000Z');
const PATH = '/api/v1/namespaces/team/configmaps/agent-spend';
const logger = createLogger('error', () => undefined);
const at = (ms: number) => new Date(ms).toISOString();

const action = (
  set: Extract<Action, { kind: 'recordSpend' }>['set'],
  gone: string[] = [],
): Extract<Action, { kind: 'recordSpend' }> => ({
  kind: 'recordSpend',
  namespace: 'team',
  set,
  gone,
  hourMs: H,
  nowMs: NOW,
});
const cm = (ledger: SpendLedger, rv: string) => ({
  status: 200,
  body: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'agent-spend', namespace: 'team', resourceVersion: rv },
    data: { 'spend.json': JSON.stringify(ledger) },
  },
});
const conflict: FakeReply = {
  status: 409,
  body: { kind: 'Status', status: 'Failure', reason: 'Conflict', code: 409, message: 'changed' },
};
const written = (req: FakeRequest) => {
  const body = req.body as { data: Record<string, string>; metadata: { resourceVersion?: string } };
  return {
    ledger: JSON.parse(body.data['spend.json'] ?? '') as SpendLedger,
    rv: body.metadata.resourceVersion,
  };
};

describe('recordSpend: the ledger write', () => {
  const entry = { station: 's', at: at(NOW - 1000), usd: '1.5', tokens: 10 };

  it('creates the ledger when there is none', async () => {
    const t = createFakeTransport({
      request: (req) =>
        req.method === 'GET'
          ? { status: 404, body: {} }
          : {
              status: 201,
              body: cm({ runs: {}, hours: {} }, '1').body,
            },
    });
    const r = await recordSpend(action([{ uid: 'u1', entry }]), { transport: t, logger });
    assert.deepEqual(r, { ok: true });
    assert.equal(t.requests[0]?.path, PATH, 'read by name');
    const post = t.requests.find((q) => q.method === 'POST');
    assert.ok(post !== undefined);
    assert.equal(post.path, '/api/v1/namespaces/team/configmaps');
    assert.deepEqual(written(post).ledger, { runs: { u1: entry }, hours: {} });
  });

  it('a 409 reads it again and writes on top of what another write added; never loses it', async () => {
    const first: SpendLedger = { runs: {}, hours: {} };
    const other = { station: 's', at: at(NOW - 5000), usd: '2', tokens: 1 };
    const second: SpendLedger = { runs: { u2: other }, hours: {} };
    let gets = 0;
    let puts = 0;
    const t = createFakeTransport({
      request: (req) => {
        if (req.method === 'GET') return gets++ === 0 ? cm(first, '1') : cm(second, '2');
        return puts++ === 0 ? conflict : { status: 200, body: req.body };
      },
    });
    const r = await recordSpend(action([{ uid: 'u1', entry }]), { transport: t, logger });
    assert.deepEqual(r, { ok: true });
    const put = t.requests.filter((q) => q.method === 'PUT');
    assert.equal(put.length, 2);
    assert.equal(written(put[0] as FakeRequest).rv, '1');
    assert.deepEqual(written(put[1] as FakeRequest), {
      ledger: { runs: { u1: entry, u2: other }, hours: {} },
      rv: '2',
    });
  });

  it('a replay that changes nothing writes nothing', async () => {
    const t = createFakeTransport({
      request: (req) => (req.method === 'GET' ? cm({ runs: { u1: entry }, hours: {} }, '3') : conflict),
    });
    assert.deepEqual(await recordSpend(action([{ uid: 'u1', entry }]), { transport: t, logger }), {
      ok: true,
    });
    assert.deepEqual(
      t.requests.map((q) => q.method),
      ['GET'],
    );
  });

  it('gives up after five conflicts (the reconcile retries)', async () => {
    const t = createFakeTransport({
      request: (req) => (req.method === 'GET' ? cm({ runs: {}, hours: {} }, '1') : conflict),
    });
    const r = await recordSpend(action([{ uid: 'u1', entry }]), { transport: t, logger });
    assert.equal(r.ok, false);
    assert.equal(t.requests.filter((q) => q.method === 'PUT').length, 5);
  });
});

describe('observeSpend: the namespace as the caches show it', () => {
  const agentOf = (name: string, ns: string, status: Record<string, unknown>): Agent => {
    const r = parseAgent({
      metadata: {
        name,
        namespace: ns,
        uid: `uid-${name}`,
        resourceVersion: '1',
        creationTimestamp: at(NOW - 60_000),
      },
      spec: { stationRef: 's' },
      status,
    });
    if (!r.ok) throw new Error(r.error);
    return r.value;
  };
  it('counts the Agents of the namespace that spent, knows every uid, reads the ledger', () => {
    const agents = new Store<Agent>();
    agents.replace([
      agentOf('spent', 'team', {
        phase: 'Succeeded',
        startedAt: at(NOW - 30_000),
        costEstimate: { usd: '0.25', source: 'cli' },
        tokenUsage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
      }),
      agentOf('pending', 'team', { phase: 'Pending' }),
      agentOf('elsewhere', 'other', { phase: 'Succeeded', costEstimate: { usd: '9', source: 'cli' } }),
    ]);
    const ledgers = new Store();
    const ledger: SpendLedger = { runs: {}, hours: { s: { [at(NOW - H)]: { usd: '1', tokens: 3 } } } };
    ledgers.replace([cm(ledger, '4').body as never]);
    const o = observeSpend('team', agents, ledgers, DEFAULT_PRICES);
    assert.deepEqual([...o.live].sort(), ['uid-pending', 'uid-spent']);
    assert.deepEqual(
      [...o.runs],
      [['uid-spent', { station: 's', atMs: NOW - 30_000, usdMicros: 250_000, tokens: 2 }]],
    );
    assert.deepEqual(o.ledger, ledger);
    assert.equal(o.unreadable, undefined);
    const none = observeSpend('other', agents, undefined, DEFAULT_PRICES);
    assert.deepEqual(none.ledger, { runs: {}, hours: {} });
  });
});
