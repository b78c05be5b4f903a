import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../shared/log.ts';
import { buildEvent, createEventRecorder, eventName, formatTime, truncateUtf8 } from './events.ts';
import { createFakeTransport, type FakeReply, type FakeRequest } from './fake-transport.ts';

const agent = {
  apiVersion: 'agents.re-cinq.com/v1alpha1',
  kind: 'Agent',
  metadata: { name: 'a1', namespace: 'ns', uid: 'u-1', resourceVersion: '10' },
};
const NOW = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

function quietLogger(lines: string[] = []) {
  return createLogger('debug', (l) => void lines.push(l));
}

describe('event helpers', () => {
  it('formats metav1.Time with whole seconds', () => assert.equal(formatTime(NOW), '2026-01-02T03:04:05Z'));
  it('names events <name>.<hex time><hex random>', () => {
    assert.equal(eventName('a1', 255, 0), 'a1.ff000000');
    assert.match(eventName('x'.repeat(300), NOW, 0.5), /^x{200}\.[0-9a-f]+$/);
  });
  it('truncates to a byte limit without splitting characters', () => {
    assert.equal(truncateUtf8('abc', 10), 'abc');
    assert.equal(truncateUtf8('aé', 2), 'a');
    assert.equal(truncateUtf8('€€', 5), '€');
  });
  it('builds a core/v1 Event about the object', () => {
    const e = buildEvent(
      agent,
      { type: 'Normal', reason: 'JobCreated', message: 'created job x' },
      {
        name: 'a1.1',
        namespace: 'ns',
        component: 'agent-controller',
        instance: 'pod-1',
        nowMs: NOW,
      },
    );
    assert.deepEqual(e, {
      metadata: { name: 'a1.1', namespace: 'ns' },
      involvedObject: {
        apiVersion: agent.apiVersion,
        kind: 'Agent',
        name: 'a1',
        namespace: 'ns',
        uid: 'u-1',
        resourceVersion: '10',
      },
      type: 'Normal',
      reason: 'JobCreated',
      message: 'created job x',
      source: { component: 'agent-controller' },
      reportingComponent: 'agent-controller',
      reportingInstance: 'pod-1',
      firstTimestamp: '2026-01-02T03:04:05Z',
      lastTimestamp: '2026-01-02T03:04:05Z',
      count: 1,
    });
  });
});

describe('createEventRecorder', () => {
  const setup = (reply: (req: FakeRequest) => FakeReply) => {
    let now = NOW;
    const lines: string[] = [];
    const t = createFakeTransport({ request: reply });
    const rec = createEventRecorder({
      transport: t,
      component: 'agent-controller',
      instance: 'pod-1',
      now: () => now,
      random: () => 0.25,
      logger: quietLogger(lines),
    });
    return { t, rec, lines, tick: (ms: number) => (now += ms) };
  };

  it('creates once, then aggregates repeats by patching count and lastTimestamp', async () => {
    const { t, rec, tick } = setup((req) => ({
      status: req.method === 'POST' ? 201 : 200,
      body: {
        metadata: { name: 'e', namespace: 'ns' },
        count: req.method === 'POST' ? 1 : (req.body as { count: number }).count,
      },
    }));
    const note = { type: 'Warning', reason: 'Failed', message: 'boom' } as const;
    await rec.record(agent, note);
    tick(2000);
    await rec.record(agent, note);
    await rec.record(agent, note);
    assert.deepEqual(
      t.requests.map((r) => r.method),
      ['POST', 'PATCH', 'PATCH'],
    );
    assert.equal(t.requests[0]?.path, '/api/v1/namespaces/ns/events');
    const name = (t.requests[0]?.body as { metadata: { name: string } } | undefined)?.metadata.name;
    assert.equal(t.requests[1]?.path, `/api/v1/namespaces/ns/events/${name}`);
    assert.equal(t.requests[1]?.contentType, 'application/merge-patch+json');
    assert.deepEqual(t.requests[1]?.body, { count: 2, lastTimestamp: '2026-01-02T03:04:07Z' });
    assert.deepEqual(t.requests[2]?.body, { count: 3, lastTimestamp: '2026-01-02T03:04:07Z' });
  });

  it('treats a different message or reason as a new event', async () => {
    const { t, rec } = setup(() => ({ status: 201, body: { metadata: {} } }));
    await rec.record(agent, { type: 'Normal', reason: 'A', message: 'x' });
    await rec.record(agent, { type: 'Normal', reason: 'A', message: 'y' });
    await rec.record(agent, { type: 'Normal', reason: 'B', message: 'x' });
    assert.deepEqual(
      t.requests.map((r) => r.method),
      ['POST', 'POST', 'POST'],
    );
  });

  it('creates a fresh event when the aggregated one expired (404)', async () => {
    const { t, rec } = setup((req) =>
      req.method === 'PATCH'
        ? { status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound' } }
        : { status: 201, body: { metadata: {} } },
    );
    const note = { type: 'Normal', reason: 'R', message: 'm' } as const;
    await rec.record(agent, note);
    await rec.record(agent, note);
    assert.deepEqual(
      t.requests.map((r) => r.method),
      ['POST', 'PATCH', 'POST'],
    );
  });

  it('never rejects: API failures are logged at warn', async () => {
    const { rec, lines } = setup(() => ({
      status: 403,
      body: { kind: 'Status', code: 403, reason: 'Forbidden', message: 'no' },
    }));
    await rec.record(agent, { type: 'Normal', reason: 'R', message: 'm' });
    const logged = lines.map((l) => JSON.parse(l));
    assert.equal(logged.length, 1);
    assert.equal(logged[0].level, 'warn');
    assert.match(logged[0].error, /403 Forbidden/);
  });

  it('serialises concurrent repeats so only one event is created', async () => {
    const { t, rec } = setup((req) => ({
      status: req.method === 'POST' ? 201 : 200,
      body: { metadata: {}, count: 2 },
    }));
    const note = { type: 'Normal', reason: 'R', message: 'm' } as const;
    await Promise.all([rec.record(agent, note), rec.record(agent, note)]);
    assert.deepEqual(
      t.requests.map((r) => r.method),
      ['POST', 'PATCH'],
    );
  });
});
