// The usage writer against a fake API server that keeps one Agent (resourceVersion checked on every patch, as the
// API server does), on a manual clock: a run's calls are written at most once a second, together; a conflict is read
// again and added again; a failed write is kept and retried; usage of a gone Agent is dropped; a stop writes all.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GATEWAY_VENDORS } from '../api/gateway.ts';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import { createGatewayMetrics } from '../metrics/gateway.ts';
import { flushMicrotasks, ManualClock } from '../runtime/clock.ts';
import { createLogger } from '../shared/log.ts';
import { EMPTY_USAGE, oneCall } from './accumulator.ts';
import { agentSource } from './cluster.ts';
import { OWN_VIEW_TTL_MS, usageFlusher } from './flusher.ts';
import { REFUSAL_REASONS } from './refusals.ts';

const ANNOTATION = 'agents.re-cinq.com/gateway-usage';
const PATH = '/apis/agents.re-cinq.com/v1alpha1/namespaces/team-a/agents/fix-1';
const run = { namespace: 'team-a', name: 'fix-1', uid: 'uid-1' };
const tokens = (input: number, output: number) => ({ input, output, cacheRead: 0, cacheWrite: 0 });

/** One Agent as the API server keeps it; `before` may answer a request first (a fault, another writer). */
function fakeServer(
  before?: (
    req: FakeRequest,
    agent: { rv: number; usage: string | undefined },
  ) => FakeReply | Promise<FakeReply> | undefined,
) {
  const agent = { rv: 1, usage: undefined as string | undefined, exists: true };
  const object = () => ({
    metadata: {
      name: 'fix-1',
      namespace: 'team-a',
      uid: 'uid-1',
      resourceVersion: String(agent.rv),
      annotations: agent.usage === undefined ? {} : { [ANNOTATION]: agent.usage },
    },
    spec: { stationRef: 's' },
  });
  const transport = createFakeTransport({
    request(req) {
      if (req.path !== PATH) return { status: 404, body: { kind: 'Status', reason: 'NotFound', code: 404 } };
      const early = before?.(req, agent);
      if (early !== undefined) return early;
      if (!agent.exists) return { status: 404, body: { kind: 'Status', reason: 'NotFound', code: 404 } };
      if (req.method === 'GET') return { status: 200, body: object() };
      const patch = req.body as {
        metadata: { resourceVersion?: string; annotations: Record<string, string> };
      };
      if (patch.metadata.resourceVersion !== String(agent.rv))
        return { status: 409, body: { kind: 'Status', reason: 'Conflict', code: 409 } };
      agent.usage = patch.metadata.annotations[ANNOTATION];
      agent.rv++;
      return { status: 200, body: object() };
    },
  });
  return { transport, agent };
}

function setUp(server: ReturnType<typeof fakeServer>) {
  const clock = new ManualClock();
  const logger = createLogger('error', () => {});
  const metrics = createGatewayMetrics(REFUSAL_REASONS, GATEWAY_VENDORS, false);
  const agents = agentSource({ transport: server.transport, clock, random: () => 0.5, logger });
  const flusher = usageFlusher({ transport: server.transport, agents, clock, logger, metrics });
  const patches = () => server.transport.requests.filter((r) => r.method === 'PATCH');
  const usage = () => (server.agent.usage === undefined ? undefined : JSON.parse(server.agent.usage));
  return { clock, flusher, patches, usage, metrics };
}

describe('usageFlusher', () => {
  it('writes a run’s calls together, at most once a second, with the resourceVersion read', async () => {
    const server = fakeServer();
    const { clock, flusher, patches, usage } = setUp(server);
    flusher.record(run, oneCall('m', tokens(10, 1)));
    await clock.advance(0);
    assert.equal(patches().length, 1, 'the first call is written at once');
    assert.deepEqual(patches()[0]?.body, {
      metadata: {
        resourceVersion: '1',
        annotations: {
          [ANNOTATION]: '{"models":{"m":{"calls":1,"input":10,"output":1,"cacheRead":0,"cacheWrite":0}}}',
        },
      },
    });
    flusher.record(run, oneCall('m', tokens(5, 2)));
    flusher.record(run, oneCall('n', tokens(1, 1)));
    await clock.advance(999);
    assert.equal(patches().length, 1, 'not within the second');
    await clock.advance(1);
    assert.equal(patches().length, 2);
    assert.deepEqual(usage(), {
      models: {
        m: { calls: 2, input: 15, output: 3, cacheRead: 0, cacheWrite: 0 },
        n: { calls: 1, input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      },
    });
    assert.equal(flusher.pending(), 0);
  });

  it('reads the Agent again after a conflict and adds to what another writer wrote', async () => {
    let conflicts = 0;
    const server = fakeServer((req, agent) => {
      if (req.method !== 'PATCH' || conflicts > 0) return undefined;
      conflicts++;
      // Another replica wrote its count just before.
      agent.usage = '{"models":{"m":{"calls":4,"input":40,"output":4,"cacheRead":0,"cacheWrite":0}}}';
      agent.rv++;
      return { status: 409, body: { kind: 'Status', reason: 'Conflict', code: 409 } };
    });
    const { clock, flusher, usage, metrics } = setUp(server);
    flusher.record(run, oneCall('m', tokens(10, 1)));
    await clock.advance(0);
    assert.deepEqual(usage(), {
      models: { m: { calls: 5, input: 50, output: 5, cacheRead: 0, cacheWrite: 0 } },
    });
    assert.match(await metrics.registry.metrics(), /gateway_usage_writes_total\{result="conflict"\} 1/);
  });

  it('keeps a delta whose write failed and writes it later, with what came meanwhile', async () => {
    let failures = 1;
    const server = fakeServer((req) => {
      if (req.method !== 'PATCH' || failures === 0) return undefined;
      failures--;
      return { status: 500, body: { kind: 'Status', reason: 'InternalError', code: 500 } };
    });
    const { clock, flusher, usage, patches } = setUp(server);
    flusher.record(run, oneCall('m', tokens(10, 1)));
    await clock.advance(0);
    assert.equal(usage(), undefined);
    assert.equal(flusher.pending(), 1);
    flusher.record(run, oneCall('m', tokens(1, 1)));
    await clock.advance(2000);
    assert.deepEqual(usage(), {
      models: { m: { calls: 2, input: 11, output: 2, cacheRead: 0, cacheWrite: 0 } },
    });
    assert.equal(patches().length, 2);
    assert.equal(flusher.pending(), 0);
  });

  it('drops the usage of an Agent that is gone (or is another Agent of the name)', async () => {
    const server = fakeServer();
    server.agent.exists = false;
    const { clock, flusher, patches } = setUp(server);
    flusher.record(run, oneCall('m', tokens(1, 1)));
    await clock.advance(0);
    assert.equal(patches().length, 0);
    assert.equal(flusher.pending(), 0);
    server.agent.exists = true;
    flusher.record({ ...run, uid: 'uid-of-an-earlier-agent' }, oneCall('m', tokens(1, 1)));
    await clock.advance(1000);
    assert.equal(patches().length, 0);
    assert.equal(flusher.pending(), 0);
  });

  it('writes everything at once when asked to (a stop)', async () => {
    const server = fakeServer();
    const { clock, flusher, usage } = setUp(server);
    flusher.record(run, oneCall('m', tokens(1, 1)));
    await clock.advance(0);
    flusher.record(run, oneCall('m', tokens(2, 2)));
    const done = flusher.flushAll(5000);
    await flushMicrotasks();
    await done;
    assert.deepEqual(usage(), {
      models: { m: { calls: 2, input: 3, output: 3, cacheRead: 0, cacheWrite: 0 } },
    });
  });

  it('says what a run has not written, and what this replica knows its annotation to hold', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let patches = 0;
    const server = fakeServer((req) =>
      req.method === 'PATCH' && patches++ === 0
        ? gate.then(() => ({ status: 500, body: { kind: 'Status', reason: 'InternalError', code: 500 } }))
        : undefined,
    );
    const { clock, flusher, usage } = setUp(server);
    const a = oneCall('m', tokens(10, 1));
    flusher.record(run, a);
    assert.deepEqual(flusher.unwritten(run.uid), { pending: a, view: undefined });
    await clock.advance(0);
    await flushMicrotasks();
    // The write is on its way (held): its delta is in the view, not pending; a call meanwhile is pending.
    const b = oneCall('m', tokens(1, 1));
    flusher.record(run, b);
    assert.deepEqual(flusher.unwritten(run.uid), { pending: b, view: a });
    release();
    await flushMicrotasks();
    // It failed: the delta is pending again, with b; the view is the annotation as read (none yet).
    const both = { models: { m: { calls: 2, input: 11, output: 2, cacheRead: 0, cacheWrite: 0 } } };
    assert.deepEqual(flusher.unwritten(run.uid), { pending: both, view: EMPTY_USAGE });
    await clock.advance(2000);
    await flushMicrotasks();
    // Written: nothing pending, the view is what the annotation now holds.
    assert.deepEqual(usage(), both);
    assert.deepEqual(flusher.unwritten(run.uid), { pending: EMPTY_USAGE, view: both });
    await clock.advance(OWN_VIEW_TTL_MS + 1);
    assert.deepEqual(flusher.unwritten(run.uid), { pending: EMPTY_USAGE, view: undefined });
  });
});
