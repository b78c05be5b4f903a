// The wiring in process: startController over a fake API server (no sockets) on a manual clock. Watches hang until
// the test pushes an event; every reconcile's debug line is captured, with the reason its key was queued for.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseControllerConfig } from '../config/index.ts';
import { createFakeTransport, type FakeRequest, type FakeStreamControl } from '../kube/fake-transport.ts';
import { createControllerMetrics } from '../metrics/index.ts';
import { agent, NS, station } from '../reconcile/test-fixtures.ts';
import { flushMicrotasks, ManualClock } from '../runtime/clock.ts';
import { createLogger } from '../shared/log.ts';
import { startController } from './run-controller.ts';

const POLL_MS = 15_000;
const AGENTS_PATH = `/apis/agents.re-cinq.com/v1alpha1/namespaces/${NS}/agents`;
const STATIONS_PATH = `/apis/agents.re-cinq.com/v1alpha1/namespaces/${NS}/stations`;

/** A fake API server: LISTs answer from `lists` by path (others: empty), watches hang and can be pushed to. */
function fakeApi(lists: Record<string, unknown[]>) {
  const watches = new Map<string, FakeStreamControl>();
  const transport = createFakeTransport({
    request: (req: FakeRequest) => {
      if (req.method === 'GET' && req.path.startsWith('/apis/') && req.path.endsWith('/agentpolicies'))
        return { status: 404, body: { kind: 'Status', reason: 'NotFound', code: 404 } };
      if (
        req.method === 'GET' &&
        req.query.watch === undefined &&
        !/\/namespaces\/[^/]+\/[^/]+\/[^/]+$/.test(req.path)
      )
        return { status: 200, body: { metadata: { resourceVersion: '10' }, items: lists[req.path] ?? [] } };
      return { status: 404, body: { kind: 'Status', reason: 'NotFound', code: 404 } };
    },
    stream: (req, ctl) => {
      watches.set(req.path, ctl);
      return ctl.aborted().then(() => 'end' as const);
    },
  });
  return { transport, watches };
}

/** The `Reconciled` debug lines: `key reason`. */
function reconcileLog() {
  const lines: string[] = [];
  const logger = createLogger('debug', (line) => {
    const record = JSON.parse(line) as { msg: string; agent?: string; reason?: string };
    if (record.msg === 'Reconciled') lines.push(`${record.agent} ${record.reason}`);
  });
  return { lines, logger };
}

/** Yields to the event loop until `cond` holds (no timer: the clock is manual). */
async function until(cond: () => boolean, what: string, seen: () => string = () => ''): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await flushMicrotasks();
  }
  assert.fail(`condition not reached: ${what} ${seen()}`);
}

describe('startController wiring (fake API server, manual clock)', () => {
  it('queues each key with the reason that woke it: the watch, the poll', async () => {
    const config = parseControllerConfig(
      { namespace: NS },
      { AGENT_LEADER_ELECTION: 'false', AGENT_POLL_INTERVAL_MS: String(POLL_MS) },
      undefined,
    );
    assert.ok(config.ok, config.ok ? '' : config.error);
    // A queued Agent never told it waits, in a Station without a limit (so it is also a head of its queue).
    const queued = agent('q1', { created: 1 });
    // A server: the poll re-checks every one (its objects are not watched).
    const server = agent('srv', { created: 0, status: { phase: 'Serving' } });
    const api = fakeApi({ [AGENTS_PATH]: [queued, server], [STATIONS_PATH]: [station('stn')] });
    const { lines, logger } = reconcileLog();
    const clock = new ManualClock();
    const controller = startController({
      config: config.value,
      transport: api.transport,
      metrics: createControllerMetrics(false),
      logger,
      clock,
      random: () => 0.5,
    });
    try {
      await until(() => lines.some((l) => l.startsWith('team/q1 ')), 'the first reconcile');
      // Without leader election the term begins at once: the initial LIST's `added` queues the Agent while the term
      // waits for its caches, and the term's own wake-up merges into that entry (the first reason stays).
      assert.equal(
        lines.find((l) => l.startsWith('team/q1 ')),
        'team/q1 agent-changed',
      );
      assert.equal(controller.isLeader(), true);

      const before = lines.length;
      await until(() => api.watches.has(AGENTS_PATH), 'the Agent watch');
      const changed = {
        ...queued,
        metadata: { ...queued.metadata, resourceVersion: '11', labels: { x: 'y' } },
      };
      api.watches.get(AGENTS_PATH)?.push(`${JSON.stringify({ type: 'MODIFIED', object: changed })}\n`);
      await until(
        () => lines.length > before && lines.slice(before).some((l) => l.startsWith('team/q1 agent-changed')),
        'the watch event',
      );

      const beforePoll = lines.length;
      await clock.advance(POLL_MS);
      await until(
        () => lines.slice(beforePoll).includes('team/srv server-recheck'),
        'the poll',
        () => lines.join('; '),
      );
    } finally {
      await controller.stop();
    }
  });
});
