// Publishing saturated keys against a fake API server that keeps the ConfigMap (resourceVersion checked when a patch
// carries one, as the API server does), on a manual clock.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { createFakeTransport, type FakeRequest } from '../../kube/fake-transport.ts';
import { createGatewayLimiterMetrics } from '../../metrics/gateway-limits.ts';
import { flushMicrotasks, ManualClock } from '../../runtime/clock.ts';
import { createLogger } from '../../shared/log.ts';
import { saturationPublisher } from './saturation.ts';

const PATH = '/api/v1/namespaces/gw/configmaps/agent-gateway-saturation';
const ID = { namespace: 'team-a', vendor: 'anthropic' as const, key: 'ANTHROPIC_API_KEY' };
const ENTRY = 'team-a.anthropic.ANTHROPIC_API_KEY';

function setup(exists = true) {
  const cm = { rv: 1, data: {} as Record<string, string> };
  const requests: FakeRequest[] = [];
  const transport = createFakeTransport({
    request(req) {
      requests.push(req);
      if (req.path !== PATH || !exists)
        return { status: 404, body: { kind: 'Status', reason: 'NotFound', code: 404 } };
      const object = () => ({
        metadata: { name: 'agent-gateway-saturation', resourceVersion: String(cm.rv) },
        data: cm.data,
      });
      if (req.method === 'GET') return { status: 200, body: object() };
      const patch = req.body as {
        metadata?: { resourceVersion?: string };
        data: Record<string, string | null>;
      };
      if (patch.metadata?.resourceVersion !== undefined && patch.metadata.resourceVersion !== String(cm.rv))
        return { status: 409, body: { kind: 'Status', reason: 'Conflict', code: 409 } };
      for (const [k, v] of Object.entries(patch.data))
        if (v === null) delete cm.data[k];
        else cm.data[k] = v;
      cm.rv++;
      return { status: 200, body: object() };
    },
  });
  const clock = new ManualClock(Date.parse('2026-12-07T06:00:00Z'));
  const registry = new Registry();
  const metrics = createGatewayLimiterMetrics(registry);
  const p = saturationPublisher({
    transport,
    namespace: 'gw',
    clock,
    logger: createLogger('error', () => undefined),
    metrics,
  });
  return { cm, requests, clock, p, registry };
}

const settle = async (clock: ManualClock, ms = 0) => {
  await clock.advance(ms);
  for (let i = 0; i < 5; i++) await flushMicrotasks();
};

describe('publishing saturated keys in agent-gateway-saturation', () => {
  it('writes the entry at once, a later time again, an earlier or equal one not; removes it once it is over', async () => {
    const { cm, requests, clock, p } = setup();
    p.saturated(ID, clock.now() + 20_000);
    await settle(clock);
    assert.deepEqual(cm.data, { [ENTRY]: '2026-12-07T06:00:20.000Z' });
    p.saturated(ID, clock.now() + 20_500);
    p.saturated(ID, clock.now() + 10_000);
    await settle(clock, 1000);
    assert.equal(requests.length, 1, 'less than a second later: not written again');
    p.saturated(ID, clock.now() + 30_000);
    await settle(clock, 1000);
    assert.deepEqual(cm.data, { [ENTRY]: '2026-12-07T06:00:31.000Z' });
    // Once over: read, and removed under the version read.
    await settle(clock, 40_000);
    assert.deepEqual(cm.data, {});
    const last = requests.at(-1);
    assert.equal(last?.method, 'PATCH');
    assert.deepEqual((last?.body as { data?: unknown } | undefined)?.data, { [ENTRY]: null });
  });

  it('does not remove an entry another replica moved later', async () => {
    const { cm, clock, p } = setup();
    p.saturated(ID, clock.now() + 5000);
    await settle(clock);
    cm.data[ENTRY] = '2026-12-07T06:01:00.000Z';
    cm.rv++;
    await settle(clock, 10_000);
    assert.deepEqual(cm.data, { [ENTRY]: '2026-12-07T06:01:00.000Z' });
  });

  it('a missing ConfigMap is counted and logged once, never created', async () => {
    const { requests, clock, p, registry } = setup(false);
    p.saturated(ID, clock.now() + 5000);
    await settle(clock);
    p.saturated({ ...ID, key: 'OTHER' }, clock.now() + 5000);
    await settle(clock, 1000);
    assert.ok(requests.every((r) => r.method !== 'POST'));
    assert.match(await registry.metrics(), /gateway_saturation_writes_total\{result="missing"\} 2/);
  });
});
