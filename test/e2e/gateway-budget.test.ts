// The run's cap at the model gateway (issue 28 §4, docs/design/gateway.md#the-runs-cap) on the control
// plane, on the runtime named by AGENT_E2E_RUNTIME: real Agents whose status.gateway (its budget included) is written
// here as the controller would, the gateway from the bundle, the Anthropic fake as the vendor behind a relay the test
// opens and closes, and the official SDK as the client. The overshoot bound: N streamed calls admitted while the run
// is under its cap and held at the vendor are all answered and all counted when released past the cap, and the next
// call is refused (402 billing_error, `budget exceeded`, the cap named) without reaching the vendor; a call still
// streaming counts what it has carried so far; a second replica refuses once the first has written the usage; the
// USD cap is priced with the price table, and with the agent-prices overrides of PRICES_FILE (a model only they
// price); the refusals are counted under reason `budget`.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { mintGatewayCredential } from '../../src/shared/gateway-credential.ts';
import {
  type GatewayProcess,
  type HoldingRelay,
  startGatewayProcess,
  startHoldingRelay,
} from '../support/gateway.ts';
import {
  AgentSchema,
  agentManifest,
  applyCrds,
  collectionPath,
  controllerSkipReason,
  e2eCluster,
  openScenario,
  pollUntil,
  type Scenario,
} from '../support/index.ts';
import { type ModelApiFake, startAnthropicModel } from '../support/model-api/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);

const KEY = randomBytes(32);
const ANNOTATION = 'agents.re-cinq.com/gateway-usage';
const UNREACHABLE = 'http://127.0.0.1:9';
const MODEL = 'claude-sonnet-5-5';

/** A relay to `target` that keeps every call until `release()`, then passes them (and later ones) on. */
async function startGate(target: string): Promise<{
  url: string;
  waiting(): number;
  release(): void;
  close(): Promise<void>;
}> {
  let open = false;
  const queue: (() => void)[] = [];
  const pass = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', target);
    const upstream = httpRequest(
      url,
      { method: req.method, headers: { ...req.headers, host: url.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  };
  const server = createServer((req, res) => {
    if (open) pass(req, res);
    else queue.push(() => pass(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    waiting: () => queue.length,
    release() {
      open = true;
      for (const go of queue.splice(0)) go();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The first event of an Anthropic stream stating 1,200 input tokens, held open by the relay. */
const HELD_FIRST_EVENT = `event: message_start\ndata: ${JSON.stringify({
  type: 'message_start',
  message: {
    id: 'msg_held',
    type: 'message',
    role: 'assistant',
    model: MODEL,
    content: [],
    stop_reason: null,
    usage: {
      input_tokens: 1200,
      output_tokens: 1,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    },
  },
})}\n\n`;

describe('model gateway: the run’s cap', { skip }, () => {
  let s: Scenario;
  let fake: ModelApiFake;
  let gate: Awaited<ReturnType<typeof startGate>>;
  let holding: HoldingRelay;
  let gw: GatewayProcess;

  before(async () => {
    if (typeof cluster === 'string') return;
    await applyCrds(cluster.client);
    s = await openScenario(cluster, 'gateway-budget');
    // Every call is answered with 300 input and 20 output tokens (320 in all).
    fake = await startAnthropicModel({
      turns: [{ text: 'Counted.', usage: { input: 300, output: 20, cacheRead: 0, cacheWrite: 0 } }],
    });
    gate = await startGate(fake.baseUrl);
    holding = await startHoldingRelay(fake.baseUrl, HELD_FIRST_EVENT);
    await s.create(
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'agent-secrets' },
        type: 'Opaque',
        stringData: { ANTHROPIC_API_KEY: fake.apiKey },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'agent-controller-gateway' },
        type: 'Opaque',
        data: { 'hmac-key': KEY.toString('base64') },
      },
    );
  });

  after(async () => {
    await s?.finish();
    await fake?.close();
    await gate?.close();
    await holding?.close();
  });

  /** An Agent with status Running and a grant with `budget`, and its credential. */
  async function run(name: string, budget: unknown) {
    await s.create(agentManifest(name, `station-${name}`));
    const agent = await s.client.get(`${collectionPath('Agent', s.ns)}/${name}`, AgentSchema);
    const uid = agent.metadata.uid ?? '';
    await s.client.patch(`${collectionPath('Agent', s.ns)}/${name}/status`, {
      status: { phase: 'Running', gateway: { keys: { anthropic: 'ANTHROPIC_API_KEY' }, budget } },
    });
    return mintGatewayCredential(KEY, { namespace: s.ns, name, uid });
  }

  const usageOf = async (name: string): Promise<unknown> => {
    const text = (await s.agent(name))?.metadata.annotations?.[ANNOTATION];
    return text === undefined ? undefined : JSON.parse(text);
  };

  async function waitUsage(name: string, expected: unknown): Promise<void> {
    await pollUntil(
      async (observe) => {
        const usage = await usageOf(name);
        observe(JSON.stringify(usage) ?? 'no annotation');
        return isDeepStrictEqual(usage, expected) ? true : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, description: `the usage of ${name}` },
    );
  }

  const client = (base: string, credential: string) =>
    new Anthropic({ apiKey: credential, baseURL: `${base}/anthropic`, maxRetries: 0 });

  const ask = (c: Anthropic, headers: Record<string, string> = {}) =>
    c.messages
      .stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'spend' }] }, { headers })
      .finalMessage();

  /** A call that must be refused over the cap: its error, and that it never reached the vendor. */
  async function refused(
    c: Anthropic,
    vendorCalls: () => number,
  ): Promise<InstanceType<typeof Anthropic.APIError>> {
    const before = vendorCalls();
    const error = await ask(c).then(
      () => assert.fail('the call over the cap was answered'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof Anthropic.APIError, String(error));
    assert.equal(vendorCalls(), before, 'the refused call did not reach the vendor');
    return error;
  }

  it('N streamed calls admitted under the cap and released past it are all counted; the next call is refused', async () => {
    if (typeof cluster === 'string') return;
    gw = await startGatewayProcess({
      kubeconfig: cluster.kubeconfig,
      namespace: s.ns,
      upstreams: { anthropic: gate.url, openai: UNREACHABLE, gemini: UNREACHABLE },
    });
    s.replicas.push(gw.process);
    // The cap: 1,000 tokens. Four calls of 320 come in together while the run has used nothing: all are admitted
    // (they wait at the vendor), and when they are answered the run has used 1,280, over its cap by what was in
    // flight (280 < 4 × 320).
    const credential = await run('concurrent', { tokens: 1000 });
    const c = client(gw.url, credential);
    const N = 4;
    const calls = Array.from({ length: N }, () => ask(c));
    await pollUntil(() => (gate.waiting() === N ? true : undefined), {
      timeoutMs: 20_000,
      description: `${N} calls held at the vendor`,
    });
    gate.release();
    const answers = await Promise.all(calls);
    assert.deepEqual(
      answers.map((m) => m.content[0]?.type === 'text' && m.content[0].text),
      Array(N).fill('Counted.'),
    );
    const vendorCalls = () => fake.requests.filter((r) => r.path === '/v1/messages').length;
    assert.equal(vendorCalls(), N);
    // All N counted, whatever the cap.
    await waitUsage('concurrent', {
      models: { [MODEL]: { calls: N, input: N * 300, output: N * 20, cacheRead: 0, cacheWrite: 0 } },
    });
    const refusedBefore = await gw.process.metric('gateway_refusals_total', {
      vendor: 'anthropic',
      reason: 'budget',
    });
    const error = await refused(c, vendorCalls);
    assert.equal(error.status, 402);
    assert.deepEqual(error.error, {
      type: 'error',
      error: {
        type: 'billing_error',
        message: `agent gateway: budget exceeded: the run has used 1280 tokens of its cap of 1000 tokens (${s.ns}/concurrent)`,
      },
    });
    assert.equal(
      await gw.process.metric('gateway_refusals_total', { vendor: 'anthropic', reason: 'budget' }),
      refusedBefore + 1,
    );
    const line = gw.process.logged('Refused a call').find((l) => l.reason === 'budget');
    assert.ok(line !== undefined, 'the refusal is logged with its reason');
    assert.equal(line.agent, 'concurrent');
  });

  it('a call still streaming counts what it has carried: its input over the cap refuses the next call', async () => {
    if (typeof cluster === 'string') return;
    const second = await startGatewayProcess({
      kubeconfig: cluster.kubeconfig,
      namespace: s.ns,
      upstreams: { anthropic: holding.url, openai: UNREACHABLE, gemini: UNREACHABLE },
      identity: 'gateway-holding',
    });
    s.replicas.push(second.process);
    const credential = await run('streaming', { tokens: 1000 });
    const c = client(second.url, credential);
    // The held call's first event states 1,200 input tokens; it stays open.
    const abort = new AbortController();
    const stream = c.messages.stream(
      { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'spend' }] },
      { headers: { 'x-test-hold': '1' }, signal: abort.signal },
    );
    const first = await new Promise<string>((resolve, reject) => {
      stream.on('streamEvent', (e) => resolve(e.type));
      stream.on('error', reject);
    });
    assert.equal(first, 'message_start');
    const held = await holding.waitHeld(1);
    assert.equal(held.closedAt, undefined, 'still streaming');
    const error = await refused(c, () => fake.requests.length + holding.held.length);
    assert.equal(error.status, 402);
    assert.match(error.message, /budget exceeded: the run has used 1201 tokens of its cap of 1000 tokens/);
    abort.abort();
    await stream.done().catch(() => undefined);
    // Cut short, it counts what it carried.
    await waitUsage('streaming', {
      models: { [MODEL]: { calls: 1, input: 1200, output: 1, cacheRead: 0, cacheWrite: 0 } },
    });
  });

  it('another replica refuses once the first has written the run’s usage; a USD cap is priced with the table', async () => {
    if (typeof cluster === 'string') return;
    const other = await startGatewayProcess({
      kubeconfig: cluster.kubeconfig,
      namespace: s.ns,
      upstreams: { anthropic: gate.url, openai: UNREACHABLE, gemini: UNREACHABLE },
      identity: 'gateway-other',
    });
    s.replicas.push(other.process);
    // claude-sonnet-5-5 at 2 and 10 USD per million tokens: a call of 300 in and 20 out is 800 µ$. Cap: 0.001 USD.
    const credential = await run('usd', { usd: '0.001' });
    const vendorCalls = () => fake.requests.filter((r) => r.path === '/v1/messages').length;
    const on = (g: GatewayProcess) => client(g.url, credential);
    assert.equal((await ask(on(gw))).content.length, 1);
    // 800 µ$: under the cap; the second call (through the other replica) is admitted too.
    await waitUsage('usd', {
      models: { [MODEL]: { calls: 1, input: 300, output: 20, cacheRead: 0, cacheWrite: 0 } },
    });
    assert.equal((await ask(on(other))).content.length, 1);
    // 1,600 µ$ ≥ 1,000 µ$: once written, both replicas refuse.
    await waitUsage('usd', {
      models: { [MODEL]: { calls: 2, input: 600, output: 40, cacheRead: 0, cacheWrite: 0 } },
    });
    for (const g of [other, gw]) {
      const error = await refused(on(g), vendorCalls);
      assert.equal(error.status, 402);
      assert.match(error.message, /budget exceeded: the run has spent 0\.0016 USD of its cap of 0\.001 USD/);
    }
    // What each replica measured, priced: 800 µ$ apiece, on gateway_cost_usd_total.
    for (const g of [gw, other]) {
      const usd = await g.process.metric('gateway_cost_usd_total', {
        namespace: s.ns,
        station: 'station-usd',
        model: MODEL,
        vendor: 'anthropic',
      });
      assert.ok(Math.abs(usd - 0.0008) < 1e-9, `${usd}`);
    }
  });

  it('prices with the agent-prices overrides (PRICES_FILE): a model only the overrides price has a USD cap', async () => {
    if (typeof cluster === 'string') return;
    const dir = mkdtempSync(join(tmpdir(), 'gateway-prices-'));
    try {
      const file = join(dir, 'prices.json');
      // 1,000 USD per million tokens in and out: a call of 320 tokens is 0.32 USD.
      writeFileSync(file, JSON.stringify({ 'house-model-*': { inputPerMTok: 1000, outputPerMTok: 1000 } }));
      const priced = await startGatewayProcess({
        kubeconfig: cluster.kubeconfig,
        namespace: s.ns,
        upstreams: { anthropic: gate.url, openai: UNREACHABLE, gemini: UNREACHABLE },
        identity: 'gateway-priced',
        env: { PRICES_FILE: file },
      });
      s.replicas.push(priced.process);
      const credential = await run('house', { usd: '0.3' });
      const c = client(priced.url, credential);
      const call = () =>
        c.messages
          .stream({ model: 'house-model-1', max_tokens: 100, messages: [{ role: 'user', content: 'spend' }] })
          .finalMessage();
      assert.equal((await call()).content.length, 1);
      const vendorCalls = () => fake.requests.filter((r) => r.path === '/v1/messages').length;
      const before = vendorCalls();
      const error = await call().then(
        () => assert.fail('the call over the cap was answered'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof Anthropic.APIError && error.status === 402, String(error));
      assert.match(error.message, /budget exceeded: the run has spent 0\.32 USD of its cap of 0\.3 USD/);
      assert.equal(vendorCalls(), before, 'the refused call did not reach the vendor');
      const usd = await priced.process.metric('gateway_cost_usd_total', {
        namespace: s.ns,
        station: 'station-house',
        model: 'house-model-1',
        vendor: 'anthropic',
      });
      assert.ok(Math.abs(usd - 0.32) < 1e-9, `${usd}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
