// Rate limits per vendor key at the model gateway (issue 28 §5, docs/design/gateway.md#rate-limits), on the control
// plane with the gateway from the bundle (the runtime named by AGENT_E2E_RUNTIME), the Anthropic and OpenAI
// model-API fakes as the vendors and their SDKs as the clients: a key configured at N requests per minute lets N go,
// the next waits the longest wait and gets 429 in the vendor's shape with retry-after, never reaching the vendor;
// calls beyond the burst wait and go as the key refills, released round-robin across runs (a run with one call is
// served in the first round, not behind another's five); a vendor's 429 with retry-after blocks the key (the gateway
// refuses at once while the block outlasts the longest wait), the gateway publishes it in the ConfigMap
// agent-gateway-saturation, and the controller holds a new Agent using that key (Ready=False/KeySaturated) and
// starts it once the block is over. Admission is the pure core's and the API server's: that part runs in the Node
// pass only; the gateway's part on both runtimes.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import * as v from 'valibot';
import { mintGatewayCredential } from '../../src/shared/gateway-credential.ts';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway.ts';
import {
  AgentSchema,
  agentManifest,
  applyCrds,
  collectionPath,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  openScenario,
  pollUntil,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import { type ModelApiFake, startAnthropicModel, startOpenAIModel } from '../support/model-api/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

const KEY = randomBytes(32);
const MAX_WAIT_S = 8;
/** The vendor's 429 blocks its key this long. */
const BLOCK_S = 25;
const ANTHROPIC_KEY = 'test-key-anthropic';
const OPENAI_KEY = 'test-key-openai';
const LIMITS = {
  LIMITED_ANTHROPIC: { requestsPerMinute: 2 },
  LIMITED_OPENAI: { requestsPerMinute: 1 },
  FAIR_ANTHROPIC: { requestsPerMinute: 60 },
};
const ConfigMapSchema = v.looseObject({ data: v.optional(v.nullable(v.record(v.string(), v.string()))) });
const SecretSchema = v.looseObject({ data: v.record(v.string(), v.string()) });

describe(`model gateway: rate limits per vendor key (${runtime})`, { skip }, () => {
  let s: Scenario;
  let gw: GatewayProcess;
  let anthropic: ModelApiFake;
  let openai: ModelApiFake;

  before(async () => {
    if (typeof cluster === 'string') return;
    await applyCrds(cluster.client);
    s = await openScenario(cluster, 'gw-limits');
    anthropic = await startAnthropicModel({
      apiKey: ANTHROPIC_KEY,
      conversations: [
        {
          match: (b) => JSON.stringify(b).includes('limit me'),
          turns: [{ error: { status: 429, retryAfter: BLOCK_S } }, { text: 'fine' }],
        },
        { turns: [{ text: 'ok', usage: { input: 5, output: 1 } }] },
      ],
    });
    openai = await startOpenAIModel({
      apiKey: OPENAI_KEY,
      turns: [{ text: 'ok', usage: { input: 5, output: 1 } }],
    });
    await s.create(
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'agent-controller-gateway' },
        type: 'Opaque',
        data: { 'hmac-key': KEY.toString('base64') },
      },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'agent-gateway-saturation' } },
    );
    await s.client.create(collectionPath('Secret', s.ns), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'agent-secrets',
        annotations: { 'agents.re-cinq.com/rate-limits': JSON.stringify(LIMITS) },
      },
      type: 'Opaque',
      stringData: {
        ANTHROPIC_API_KEY: ANTHROPIC_KEY,
        LIMITED_ANTHROPIC: ANTHROPIC_KEY,
        FAIR_ANTHROPIC: ANTHROPIC_KEY,
        LIMITED_OPENAI: OPENAI_KEY,
      },
    });
    gw = await startGatewayProcess({
      kubeconfig: cluster.kubeconfig,
      namespace: s.ns,
      upstreams: {
        anthropic: new URL(anthropic.baseUrl).origin,
        openai: new URL(openai.baseUrl).origin,
        gemini: 'http://127.0.0.1:9',
      },
      env: { AGENT_GATEWAY_MAX_WAIT_SECONDS: String(MAX_WAIT_S) },
      logLevel: 'info',
    });
    s.replicas.push(gw.process);
  });

  after(async () => {
    await s?.finish();
    await anthropic?.close();
    await openai?.close();
  });

  /** An Agent with status Running and `keys` as its grant, and its credential. */
  async function run(name: string, keys: Record<string, string>): Promise<string> {
    await s.create(agentManifest(name, `station-${name}`));
    const agent = await s.client.get(`${collectionPath('Agent', s.ns)}/${name}`, AgentSchema);
    await s.client.patch(`${collectionPath('Agent', s.ns)}/${name}/status`, {
      status: { phase: 'Running', gateway: { keys } },
    });
    return mintGatewayCredential(KEY, { namespace: s.ns, name, uid: agent.metadata.uid ?? '' });
  }

  const claude = (credential: string) =>
    new Anthropic({ apiKey: credential, baseURL: `${gw.url}/anthropic`, maxRetries: 0 });
  const ask = (credential: string, text: string) =>
    claude(credential).messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 10,
      messages: [{ role: 'user', content: text }],
    });
  const toFake = (fake: ModelApiFake, marker: string) =>
    fake.requests.filter((r) => JSON.stringify(r.body).includes(marker));

  it('a key at N requests per minute: N go, the next waits the longest wait, then 429 with retry-after in the vendor’s shape', async () => {
    const credential = await run('limited', { anthropic: 'LIMITED_ANTHROPIC', openai: 'LIMITED_OPENAI' });
    for (let i = 0; i < 2; i++) await ask(credential, `limited ${i}`);
    const started = Date.now();
    const refused = await ask(credential, 'limited 2').then(
      () => assert.fail('the third call went through'),
      (e: unknown) => e,
    );
    const waited = Date.now() - started;
    assert.ok(refused instanceof Anthropic.RateLimitError, String(refused));
    assert.equal(refused.status, 429);
    assert.equal((refused.error as { error?: { type?: string } }).error?.type, 'rate_limit_error');
    assert.match(
      refused.message,
      /agent gateway: the anthropic key LIMITED_ANTHROPIC of .* is at its rate limit/,
    );
    const retryAfter = Number(refused.headers?.get('retry-after'));
    // The key refills one call each 30 s; the call waited 8 of them.
    assert.ok(retryAfter >= 15 && retryAfter <= 30, `retry-after ${retryAfter}`);
    assert.ok(waited >= MAX_WAIT_S * 1000 - 200 && waited < MAX_WAIT_S * 1000 + 5000, `waited ${waited} ms`);
    assert.equal(toFake(anthropic, 'limited').length, 2, 'the third call never reached the vendor');
    // OpenAI, one a minute: the second is refused in OpenAI's shape.
    const gpt = new OpenAI({ apiKey: credential, baseURL: `${gw.url}/openai/v1`, maxRetries: 0 });
    await gpt.responses.create({ model: 'gpt-5', input: 'openai limited 0' });
    const second = await gpt.responses.create({ model: 'gpt-5', input: 'openai limited 1' }).then(
      () => assert.fail('the second call went through'),
      (e: unknown) => e,
    );
    assert.ok(second instanceof OpenAI.RateLimitError, String(second));
    assert.equal(second.code, 'rate_limit_exceeded');
    assert.ok(Number(second.headers?.get('retry-after')) > 0);
    assert.equal(toFake(openai, 'openai limited').length, 1);
    assert.ok(
      (await gw.process.metric('gateway_throttled_total', {
        namespace: s.ns,
        vendor: 'anthropic',
        reason: 'refused',
      })) >= 1,
    );
    assert.ok(
      (await gw.process.metric('gateway_throttled_total', {
        namespace: s.ns,
        vendor: 'openai',
        reason: 'refused',
      })) >= 1,
    );
  });

  it('fair: calls past the burst wait and go as the key refills, one per run in turn; a single call is not stuck behind five', async () => {
    const busy = await run('busy', { anthropic: 'FAIR_ANTHROPIC' });
    const single = await run('single', { anthropic: 'FAIR_ANTHROPIC' });
    const queued = () =>
      gw.process.metric('gateway_throttled_total', {
        namespace: s.ns,
        vendor: 'anthropic',
        reason: 'queued',
      });
    const waits = () =>
      gw.process.metric('gateway_limiter_wait_seconds_count', { namespace: s.ns, vendor: 'anthropic' });
    // The burst: 60 calls a minute, all at once.
    await Promise.all(Array.from({ length: 60 }, (_, i) => ask(busy, `warm ${i}`)));
    const [queuedBefore, waitsBefore] = [await queued(), await waits()];
    const from = anthropic.requests.length;
    const started = Date.now();
    const calls = Array.from({ length: 5 }, (_, i) => ask(busy, `fair busy ${i}`));
    // Each of the busy run's calls has either gone (the bucket refilled a little meanwhile) or waits.
    const immediate = await pollUntil(
      async () => {
        // Gone at once = at the fake, less those that waited first (only those are timed).
        const released = (await waits()) - waitsBefore;
        const now = toFake(anthropic, 'fair busy').length - released;
        const waited = (await queued()) - queuedBefore;
        return now + waited === 5 && waited > 0 ? now : undefined;
      },
      { timeoutMs: 5000, intervalMs: 10, description: 'the busy run’s calls gone or queued' },
    );
    calls.push(ask(single, 'fair single'));
    const answers = await Promise.all(calls);
    assert.equal(answers.length, 6);
    const order = anthropic.requests
      .slice(from)
      .map((r) => JSON.stringify(r.body).match(/fair (busy \d|single)/)?.[1])
      .filter((x) => x !== undefined);
    assert.equal(order.length, 6, order.join(', '));
    // In the first round: right after the busy run's next call, not after all of its calls.
    const at = order.indexOf('single');
    assert.ok(
      at >= 0 && at <= immediate + 1,
      `the single call was released in the first round: ${order.join(', ')}`,
    );
    // They waited for the refill (one a second), not for the longest wait.
    const took = Date.now() - started;
    assert.ok(took < MAX_WAIT_S * 1000, `took ${took} ms`);
    assert.equal((await waits()) - waitsBefore, 6 - immediate, 'the calls that waited');
  });

  it('a vendor’s 429 blocks the key: refused at once meanwhile, published as saturated; a new Agent waits (KeySaturated) and starts after', {
    // Admission is decided by the pure core and the API server, the same on every runtime.
    skip: runtime === 'deno' ? 'admission is the same on every runtime: the Node pass runs it' : false,
  }, async () => {
    if (typeof cluster === 'string') return;
    await s.create(
      execDefinition('nap', ['sh', '-c', 'sleep 60'], {
        resources: { secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'ANTHROPIC_API_KEY' }] },
      }),
      stationManifest('naps', 'nap'),
      agentManifest('first', 'naps'),
    );
    await s.startReplica({ env: { AGENT_GATEWAY_URL: gw.url } });
    const first = await s.waitForAgent('first', (a) => a.status.phase === 'Running', 'Running');
    assert.deepEqual((first.status as Record<string, unknown>).gateway, {
      keys: { anthropic: 'ANTHROPIC_API_KEY' },
    });
    // The run's own credential, from its Secret (what its pod reads).
    const secret = await s.client.get(`/api/v1/namespaces/${s.ns}/secrets/agent-gateway-first`, SecretSchema);
    const credential = Buffer.from(secret.data.credential ?? '', 'base64').toString('utf8');
    const blockedAt = Date.now();
    const vendor429 = await ask(credential, 'limit me').then(
      () => assert.fail('the vendor answered'),
      (e: unknown) => e,
    );
    assert.ok(vendor429 instanceof Anthropic.RateLimitError, String(vendor429));
    assert.equal(
      vendor429.headers?.get('retry-after'),
      String(BLOCK_S),
      'the vendor’s own 429 passes through',
    );
    // Blocked past the longest wait: the gateway refuses at once, without asking the vendor.
    const before429 = anthropic.requests.length;
    const t = Date.now();
    const refused = await ask(credential, 'limit me again').then(
      () => assert.fail('went through'),
      (e: unknown) => e,
    );
    assert.ok(
      refused instanceof Anthropic.RateLimitError && /agent gateway/.test(refused.message),
      String(refused),
    );
    assert.ok(Date.now() - t < 2000, 'refused at once');
    assert.equal(anthropic.requests.length, before429);
    // Published for the controller.
    const entry = `${s.ns}.anthropic.ANTHROPIC_API_KEY`;
    const until = await pollUntil(
      async () => {
        const cm = await s.client.get(
          `/api/v1/namespaces/${s.ns}/configmaps/agent-gateway-saturation`,
          ConfigMapSchema,
        );
        const at = cm.data?.[entry];
        return at === undefined ? undefined : Date.parse(at);
      },
      { timeoutMs: 10_000, description: `the entry ${entry}` },
    );
    assert.ok(
      Math.abs(until - (blockedAt + BLOCK_S * 1000)) < 3000,
      `until ${new Date(until).toISOString()}`,
    );
    // A new run of that key waits, told why and until when, and starts once the block is over.
    await s.create(agentManifest('second', 'naps'));
    const held = await s.waitForAgent(
      'second',
      (a) => a.status.conditions?.some((c) => c.type === 'Ready' && c.reason === 'KeySaturated') === true,
      'Ready=False/KeySaturated',
      20_000,
    );
    assert.equal(held.status.phase, 'Pending');
    const ready = held.status.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.match(
      ready?.message ?? '',
      /the anthropic key ANTHROPIC_API_KEY of agent-secrets: saturated at the model gateway until \d{4}-\d\d-\d\dT/,
    );
    const started = await s.waitForAgent('second', (a) => a.status.phase === 'Running', 'Running', 60_000);
    const startedAt = Date.parse(started.status.startedAt ?? '');
    assert.ok(
      startedAt >= until - 1000,
      `started ${started.status.startedAt}, saturated until ${new Date(until).toISOString()}`,
    );
    assert.ok(startedAt < until + 15_000, `started soon after: ${started.status.startedAt}`);
    await s.waitForEvents('second', started.metadata.uid, ['Normal/KeySaturated', 'Normal/Started']);
    for (const name of ['first', 'second'])
      await s.client.delete(`${collectionPath('Agent', s.ns)}/${name}`).catch(() => undefined);
  });
});
