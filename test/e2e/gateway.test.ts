// The model gateway (`agent-controller gateway`, docs/design/gateway.md) on the control plane, on the runtime named
// by AGENT_E2E_RUNTIME: real Agents (their status.gateway written here as the controller would), the credential key
// and agent-secrets as real Secrets, the model-API fakes (test/support/model-api) as the vendors, and the vendors'
// official SDKs as the clients. For each vendor: a streamed and a whole call reach the fake with the namespace's key
// and without the credential, the answer streams back, and the run's usage annotation equals what the fake sent; a
// credential of an ended run, of another incarnation of the run, with a wrong MAC, or for a model the grant does not
// allow is refused in the vendor's own error shape and never reaches the fake; a client that goes away mid-stream
// makes the gateway close the vendor's stream. The gateway waits for the credential key the controller makes.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { isDeepStrictEqual as isDeepEqual } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import * as v from 'valibot';
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
import {
  type ModelApiFake,
  type ModelRequest,
  startAnthropicModel,
  startGeminiModel,
  startOpenAIModel,
  type Turn,
} from '../support/model-api/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);

const KEY = randomBytes(32);
const OTHER_KEY = randomBytes(32);
const ANNOTATION = 'agents.re-cinq.com/gateway-usage';
const VENDOR_KEYS = {
  ANTHROPIC_API_KEY: 'test-key-anthropic',
  OPENAI_API_KEY: 'test-key-openai',
  GEMINI_API_KEY: 'test-key-gemini',
};
const GRANT_KEYS = { anthropic: 'ANTHROPIC_API_KEY', openai: 'OPENAI_API_KEY', gemini: 'GEMINI_API_KEY' };

/** A conversation answered to requests whose body mentions `marker`. */
const said = (marker: string, turn: Turn) => ({
  match: (body: unknown) => JSON.stringify(body).includes(marker),
  turns: [turn],
});

/** The first event of each vendor's stream, as the holding relay sends it before holding the stream open. */
const HELD_FIRST_EVENT = {
  anthropic: `event: message_start\ndata: ${JSON.stringify({
    type: 'message_start',
    message: {
      id: 'msg_held',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [],
      stop_reason: null,
      usage: {
        input_tokens: 13,
        output_tokens: 1,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      },
    },
  })}\n\n`,
  openai: `event: response.created\ndata: ${JSON.stringify({
    type: 'response.created',
    sequence_number: 0,
    response: { id: 'resp_held', object: 'response', status: 'in_progress', output: [], usage: null },
  })}\n\n`,
  gemini: `data: ${JSON.stringify({
    candidates: [{ content: { role: 'model', parts: [{ text: 'Hel' }] }, index: 0 }],
    usageMetadata: { promptTokenCount: 13 },
  })}\n\n`,
};

type Vendor = keyof typeof GRANT_KEYS;

describe('model gateway', { skip }, () => {
  let s: Scenario;
  let gw: GatewayProcess;
  const fakes = {} as Record<Vendor, ModelApiFake>;
  const relays = {} as Record<Vendor, HoldingRelay>;

  before(async () => {
    if (typeof cluster === 'string') return;
    await applyCrds(cluster.client);
    s = await openScenario(cluster, 'gateway');
    fakes.anthropic = await startAnthropicModel({
      conversations: [
        said('stream please', {
          text: 'Streamed through the gateway.',
          usage: { input: 100, output: 20, cacheRead: 300, cacheWrite: 40 },
        }),
        said('whole please', { text: 'Whole through the gateway.', usage: { input: 7, output: 3 } }),
      ],
    });
    fakes.openai = await startOpenAIModel({
      conversations: [
        said('responses stream', {
          text: 'Responses streamed.',
          usage: { input: 500, output: 50, cacheRead: 200, cacheWrite: 100 },
        }),
        said('responses whole', { text: 'Responses whole.', usage: { input: 30, output: 5 } }),
        said('chat stream', { text: 'Chat streamed.', usage: { input: 60, output: 6, cacheRead: 10 } }),
        said('chat whole', { text: 'Chat whole.', usage: { input: 9, output: 1 } }),
      ],
    });
    fakes.gemini = await startGeminiModel({
      conversations: [
        said('stream please', {
          text: 'Gemini streamed through.',
          usage: { input: 800, output: 40, cacheRead: 300, reasoning: 10 },
        }),
        said('whole please', { text: 'Gemini whole.', usage: { input: 11, output: 2 } }),
      ],
    });
    for (const vendor of ['anthropic', 'openai', 'gemini'] as const)
      relays[vendor] = await startHoldingRelay(
        new URL(fakes[vendor].baseUrl).origin,
        HELD_FIRST_EVENT[vendor],
      );
    await s.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'agent-secrets' },
      type: 'Opaque',
      stringData: VENDOR_KEYS,
    });
  });

  after(async () => {
    await s?.finish();
    for (const f of Object.values(fakes)) await f.close();
    for (const r of Object.values(relays)) await r.close();
  });

  /** An Agent of Station `station` with status `phase` and `grant`, and a credential for it (under `key`). */
  async function run(name: string, grant: unknown, phase = 'Running', key: Uint8Array = KEY) {
    await s.create(agentManifest(name, `station-${name}`));
    const agent = await s.client.get(`${collectionPath('Agent', s.ns)}/${name}`, AgentSchema);
    const uid = agent.metadata.uid ?? '';
    await s.client.patch(`${collectionPath('Agent', s.ns)}/${name}/status`, {
      status: { phase, gateway: grant },
    });
    return { uid, credential: mintGatewayCredential(key, { namespace: s.ns, name, uid }) };
  }

  /** Waits until the Agent's usage annotation is `expected`. */
  async function waitUsage(name: string, expected: unknown): Promise<void> {
    await pollUntil(
      async (observe) => {
        const a = await s.agent(name);
        const text = a?.metadata.annotations?.[ANNOTATION];
        observe(text ?? 'no annotation');
        return text !== undefined && isDeepEqual(JSON.parse(text), expected) ? true : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, description: `the usage of ${name}` },
    );
  }

  /** The requests `fake` got since `from`: each carried the real key and nothing of the credential. */
  function seenSince(vendor: Vendor, from: number, credential: string): ModelRequest[] {
    const seen = fakes[vendor].requests.slice(from);
    for (const r of seen) {
      assert.equal(r.apiKey, fakes[vendor].apiKey, `${r.path} carried the namespace's key`);
      const text = JSON.stringify([r.headers, r.query]);
      assert.ok(
        !text.includes(credential) && !text.includes('acgw1.'),
        `${r.path} carried no credential: ${text}`,
      );
    }
    return seen;
  }

  it('waits for the credential key the controller makes: not ready, and calls answered 503 meanwhile', async () => {
    if (typeof cluster === 'string') return;
    gw = await startGatewayProcess({
      kubeconfig: cluster.kubeconfig,
      namespace: s.ns,
      upstreams: { anthropic: relays.anthropic.url, openai: relays.openai.url, gemini: relays.gemini.url },
      waitReady: false,
    });
    s.replicas.push(gw.process);
    await gw.process.waitForLog('Waiting for the credential key (the controller creates it)');
    assert.equal((await gw.process.http('/readyz/credential-key')).status, 503);
    assert.equal(await gw.process.metric('gateway_ready'), 0, 'gateway_ready says what /readyz says');
    const early = await fetch(`${gw.url}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'acgw1.x.y', 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(early.status, 503);
    assert.equal(early.headers.get('retry-after'), '2');
    assert.equal(((await early.json()) as { error: { type: string } }).error.type, 'overloaded_error');
    await s.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'agent-controller-gateway' },
      type: 'Opaque',
      data: { 'hmac-key': KEY.toString('base64') },
    });
    await gw.process.waitReady();
    assert.equal(await gw.process.metric('gateway_ready'), 1);
    assert.equal(gw.process.logged('Loaded the credential key').length, 1);
  });

  it('Anthropic: a streamed and a whole Messages call reach the vendor with its key, stream back, are metered', async () => {
    const { credential } = await run('anthropic-calls', { keys: GRANT_KEYS, models: ['claude-*'] });
    const client = new Anthropic({ apiKey: credential, baseURL: `${gw.url}/anthropic`, maxRetries: 0 });
    const from = fakes.anthropic.requests.length;
    const stream = client.messages.stream({
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'stream please' }],
    });
    let text = '';
    let deltas = 0;
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
        text += event.delta.text;
        deltas++;
      }
    }
    assert.equal(text, 'Streamed through the gateway.');
    assert.ok(deltas > 1, `the answer came in ${deltas} deltas`);
    assert.deepEqual((await stream.finalMessage()).usage.cache_read_input_tokens, 300);
    const whole = await client.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'whole please' }],
    });
    assert.deepEqual(whole.content, [{ type: 'text', text: 'Whole through the gateway.', citations: null }]);
    const models = await client.models.list();
    assert.deepEqual(
      models.data.map((m) => m.id),
      ['claude-sonnet-5-5'],
    );
    const seen = seenSince('anthropic', from, credential);
    assert.deepEqual(
      seen.map((r) => [r.method, r.path, r.stream]),
      [
        ['POST', '/v1/messages', true],
        ['POST', '/v1/messages', false],
        ['GET', '/v1/models', false],
      ],
    );
    await waitUsage('anthropic-calls', {
      models: { 'claude-sonnet-4-5': { calls: 2, input: 107, output: 23, cacheRead: 300, cacheWrite: 40 } },
    });
    const labels = { namespace: s.ns, station: 'station-anthropic-calls', vendor: 'anthropic' };
    assert.equal(await gw.process.metric('gateway_requests_total', { ...labels, code: '200' }), 3);
    assert.equal(await gw.process.metric('gateway_tokens_total', { ...labels, kind: 'input' }), 107);
    assert.equal(await gw.process.metric('gateway_tokens_total', { ...labels, kind: 'cache_read' }), 300);
  });

  it('OpenAI: Responses and Chat Completions, streamed and whole, reach the vendor with its key and are metered', async () => {
    const { credential } = await run('openai-calls', { keys: GRANT_KEYS });
    const client = new OpenAI({ apiKey: credential, baseURL: `${gw.url}/openai/v1`, maxRetries: 0 });
    const from = fakes.openai.requests.length;
    let text = '';
    let deltas = 0;
    const stream = await client.responses.create({
      model: 'gpt-5.5-codex',
      input: 'responses stream',
      stream: true,
    });
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') {
        text += event.delta;
        deltas++;
      }
    }
    assert.equal(text, 'Responses streamed.');
    assert.ok(deltas > 1, `the answer came in ${deltas} deltas`);
    const whole = await client.responses.create({ model: 'gpt-5.5-codex', input: 'responses whole' });
    assert.equal(whole.output_text, 'Responses whole.');
    let chat = '';
    const chatStream = await client.chat.completions.create({
      model: 'gpt-5-mini',
      messages: [{ role: 'user', content: 'chat stream' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of chatStream) chat += chunk.choices[0]?.delta.content ?? '';
    assert.equal(chat, 'Chat streamed.');
    const chatWhole = await client.chat.completions.create({
      model: 'gpt-5-mini',
      messages: [{ role: 'user', content: 'chat whole' }],
    });
    assert.equal(chatWhole.choices[0]?.message.content, 'Chat whole.');
    const seen = seenSince('openai', from, credential);
    assert.deepEqual(
      seen.map((r) => [r.path, r.model, r.stream]),
      [
        ['/v1/responses', 'gpt-5.5-codex', true],
        ['/v1/responses', 'gpt-5.5-codex', false],
        ['/v1/chat/completions', 'gpt-5-mini', true],
        ['/v1/chat/completions', 'gpt-5-mini', false],
      ],
    );
    await waitUsage('openai-calls', {
      models: {
        // input_tokens less the cached and cache-written parts: (500 - 200 - 100) + 30; (60 - 10) + 9.
        'gpt-5.5-codex': { calls: 2, input: 230, output: 55, cacheRead: 200, cacheWrite: 100 },
        'gpt-5-mini': { calls: 2, input: 59, output: 7, cacheRead: 10, cacheWrite: 0 },
      },
    });
  });

  it('Gemini: a streamed and a whole generateContent reach the vendor with its key, stream back, are metered', async () => {
    const { credential } = await run('gemini-calls', { keys: GRANT_KEYS, models: ['gemini-2.5-*'] });
    const ai = new GoogleGenAI({
      apiKey: credential,
      httpOptions: { baseUrl: `${gw.url}/gemini`, apiVersion: 'v1beta' },
    });
    const from = fakes.gemini.requests.length;
    let text = '';
    let chunks = 0;
    for await (const chunk of await ai.models.generateContentStream({
      model: 'gemini-2.5-pro',
      contents: 'stream please',
    })) {
      text += chunk.text ?? '';
      chunks++;
    }
    assert.equal(text, 'Gemini streamed through.');
    assert.ok(chunks > 1, `the answer came in ${chunks} chunks`);
    const whole = await ai.models.generateContent({ model: 'gemini-2.5-pro', contents: 'whole please' });
    assert.equal(whole.text, 'Gemini whole.');
    const seen = seenSince('gemini', from, credential);
    assert.deepEqual(
      seen.map((r) => [r.path, r.query]),
      [
        ['/v1beta/models/gemini-2.5-pro:streamGenerateContent', { alt: 'sse' }],
        ['/v1beta/models/gemini-2.5-pro:generateContent', {}],
      ],
    );
    // input = promptTokenCount - cachedContentTokenCount: (800 - 300) + 11; output with thoughts: 40 + 10 + 2.
    await waitUsage('gemini-calls', {
      models: { 'gemini-2.5-pro': { calls: 2, input: 511, output: 52, cacheRead: 300, cacheWrite: 0 } },
    });
  });

  /** One whole call of `vendor` with `credential` through its SDK; the error it ends in, if any. */
  async function callThrough(vendor: Vendor, credential: string, model: string): Promise<unknown> {
    try {
      if (vendor === 'anthropic') {
        const client = new Anthropic({ apiKey: credential, baseURL: `${gw.url}/anthropic`, maxRetries: 0 });
        await client.messages.create({
          model,
          max_tokens: 10,
          messages: [{ role: 'user', content: 'whole please' }],
        });
      } else if (vendor === 'openai') {
        const client = new OpenAI({ apiKey: credential, baseURL: `${gw.url}/openai/v1`, maxRetries: 0 });
        await client.responses.create({ model, input: 'responses whole' });
      } else {
        const ai = new GoogleGenAI({
          apiKey: credential,
          httpOptions: { baseUrl: `${gw.url}/gemini`, apiVersion: 'v1beta', retryOptions: { attempts: 1 } },
        });
        await ai.models.generateContent({ model, contents: 'whole please' });
      }
      return undefined;
    } catch (error) {
      return error;
    }
  }

  /** The status and the vendor's error type or code that `error` (from its SDK) carries. */
  function vendorError(vendor: Vendor, error: unknown): [number, string] {
    if (vendor === 'anthropic') {
      assert.ok(error instanceof Anthropic.APIError, String(error));
      const body = v.parse(v.looseObject({ error: v.looseObject({ type: v.string() }) }), error.error);
      return [error.status ?? 0, body.error.type];
    }
    if (vendor === 'openai') {
      assert.ok(error instanceof OpenAI.APIError, String(error));
      return [error.status ?? 0, String(error.code)];
    }
    assert.ok(error instanceof ApiError, String(error));
    const body = v.parse(
      v.looseObject({ error: v.looseObject({ status: v.string() }) }),
      JSON.parse(error.message),
    );
    return [error.status, body.error.status];
  }

  const MODELS: Record<Vendor, { allowed: string; refused: string; glob: string }> = {
    anthropic: { allowed: 'claude-sonnet-4-5', refused: 'claude-opus-4-1', glob: 'claude-sonnet-*' },
    openai: { allowed: 'gpt-5.5-codex', refused: 'gpt-4o', glob: 'gpt-5*' },
    gemini: { allowed: 'gemini-2.5-pro', refused: 'gemini-1.5-pro', glob: 'gemini-2.5-*' },
  };
  const UNAUTHENTICATED: Record<Vendor, string> = {
    anthropic: 'authentication_error',
    openai: 'invalid_api_key',
    gemini: 'UNAUTHENTICATED',
  };
  const FORBIDDEN: Record<Vendor, string> = {
    anthropic: 'permission_error',
    openai: 'model_not_allowed',
    gemini: 'PERMISSION_DENIED',
  };

  for (const vendor of ['anthropic', 'openai', 'gemini'] as const) {
    it(`${vendor}: refuses an ended run, another incarnation of the run, a wrong MAC and a model not allowed, in its own error shape`, async () => {
      const { allowed, refused, glob } = MODELS[vendor];
      const grant = { keys: GRANT_KEYS, models: [glob] };
      const ended = await run(`${vendor}-ended`, grant, 'Succeeded');
      const live = await run(`${vendor}-live`, grant);
      const otherIncarnation = mintGatewayCredential(KEY, {
        namespace: s.ns,
        name: `${vendor}-live`,
        uid: `${live.uid}0`,
      });
      const wrongMac = mintGatewayCredential(OTHER_KEY, {
        namespace: s.ns,
        name: `${vendor}-live`,
        uid: live.uid,
      });
      const from = fakes[vendor].requests.length;
      const refusalsBefore = await gw.process.metric('gateway_refusals_total', { vendor });
      const cases: [string, string, string, [number, string]][] = [
        ['an ended run', ended.credential, allowed, [401, UNAUTHENTICATED[vendor]]],
        ['another incarnation', otherIncarnation, allowed, [401, UNAUTHENTICATED[vendor]]],
        ['a wrong MAC', wrongMac, allowed, [401, UNAUTHENTICATED[vendor]]],
        ['a model not allowed', live.credential, refused, [403, FORBIDDEN[vendor]]],
      ];
      for (const [what, credential, model, expected] of cases)
        assert.deepEqual(vendorError(vendor, await callThrough(vendor, credential, model)), expected, what);
      assert.deepEqual(fakes[vendor].requests.slice(from), [], 'nothing refused reached the vendor');
      assert.equal(await gw.process.metric('gateway_refusals_total', { vendor }), refusalsBefore + 4);
      assert.equal(await callThrough(vendor, live.credential, allowed), undefined, 'the live run may call');
    });
  }

  it('refuses a run’s credential once its run has ended', async () => {
    const { credential } = await run('ends-later', { keys: GRANT_KEYS });
    assert.equal(await callThrough('anthropic', credential, 'claude-sonnet-4-5'), undefined);
    await s.client.patch(`${collectionPath('Agent', s.ns)}/ends-later/status`, {
      status: { phase: 'Failed' },
    });
    await pollUntil(
      async (observe) => {
        const error = await callThrough('anthropic', credential, 'claude-sonnet-4-5');
        observe(String(error));
        return error !== undefined ? error : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, description: 'the call to be refused' },
    ).then((error) => assert.deepEqual(vendorError('anthropic', error), [401, 'authentication_error']));
  });

  const HOLD: Record<
    Vendor,
    { path: string; headers: Record<string, string>; body: unknown; usage: unknown }
  > = {
    anthropic: {
      path: '/anthropic/v1/messages',
      headers: { 'anthropic-version': '2023-06-01' },
      body: {
        model: 'claude-sonnet-4-5',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'hold' }],
      },
      usage: { 'claude-sonnet-4-5': { calls: 1, input: 13, output: 1, cacheRead: 0, cacheWrite: 0 } },
    },
    openai: {
      path: '/openai/v1/responses',
      headers: {},
      body: { model: 'gpt-5.5-codex', input: 'hold', stream: true },
      usage: { 'gpt-5.5-codex': { calls: 1, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } },
    },
    gemini: {
      path: '/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse',
      headers: {},
      body: { contents: [{ role: 'user', parts: [{ text: 'hold' }] }] },
      usage: { 'gemini-2.5-pro': { calls: 1, input: 13, output: 0, cacheRead: 0, cacheWrite: 0 } },
    },
  };
  const credentialHeader = (vendor: Vendor, credential: string): Record<string, string> =>
    vendor === 'anthropic'
      ? { 'x-api-key': credential }
      : vendor === 'openai'
        ? { authorization: `Bearer ${credential}` }
        : { 'x-goog-api-key': credential };

  for (const vendor of ['anthropic', 'openai', 'gemini'] as const) {
    it(`${vendor}: passes the first event on while the vendor still streams, and closes the vendor's stream when the client goes away`, async () => {
      const name = `${vendor}-cut`;
      const { credential } = await run(name, { keys: GRANT_KEYS });
      const hold = HOLD[vendor];
      const client = new AbortController();
      const res = await fetch(`${gw.url}${hold.path}`, {
        method: 'POST',
        headers: {
          ...credentialHeader(vendor, credential),
          ...hold.headers,
          'content-type': 'application/json',
          'x-test-hold': '1',
        },
        body: JSON.stringify(hold.body),
        signal: client.signal,
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
      const reader = res.body?.getReader();
      assert.ok(reader);
      let first = '';
      const decoder = new TextDecoder();
      while (!first.endsWith('\n\n')) {
        const { value, done } = await reader.read();
        assert.equal(done, false, 'the stream is still open');
        first += decoder.decode(value, { stream: true });
      }
      assert.equal(first, HELD_FIRST_EVENT[vendor]);
      const held = await relays[vendor].waitHeld(relays[vendor].held.length);
      assert.equal(held.closedAt, undefined, 'the vendor stream is open while the client reads');
      const sent = JSON.stringify(held.headers);
      assert.ok(
        sent.includes(VENDOR_KEYS[GRANT_KEYS[vendor] as keyof typeof VENDOR_KEYS]),
        'the key went upstream',
      );
      assert.ok(!sent.includes(credential), 'the credential did not');
      client.abort();
      await pollUntil(() => (held.closedAt !== undefined ? true : undefined), {
        timeoutMs: 10_000,
        intervalMs: 20,
        description: 'the gateway to close the vendor stream',
      });
      await waitUsage(name, { models: hold.usage });
    });
  }

  it('never logs a key or a credential', () => {
    const log = gw.process.logText();
    for (const key of Object.values(VENDOR_KEYS)) assert.ok(!log.includes(key), `no ${key} in the log`);
    assert.ok(!log.includes('acgw1.'), 'no credential in the log');
    assert.ok(!log.includes(KEY.toString('base64')), 'no credential key in the log');
  });
});
