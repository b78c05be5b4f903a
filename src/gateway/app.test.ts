// The gateway's app with its ports filled by fakes (a fixed credential key, Agents and keys from maps, a recording
// usage writer) and the loopback model-API fakes as the vendors: each refusal row answers in the vendor's shape
// without reaching the vendor, and forwarded calls carry the key where the vendor wants it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  type ModelApiFake,
  startAnthropicModel,
  startGeminiModel,
  startOpenAIModel,
} from '../../test/support/model-api/index.ts';
import { GATEWAY_VENDORS, type GatewayUsage } from '../api/gateway.ts';
import { apiError } from '../kube/errors.ts';
import { createGatewayMetrics } from '../metrics/gateway.ts';
import { DEFAULT_PRICES } from '../reconcile/results/prices.ts';
import { mintGatewayCredential } from '../shared/gateway-credential.ts';
import { createLogger } from '../shared/log.ts';
import { err, ok } from '../shared/result.ts';
import { EMPTY_USAGE, mergeUsage, type RunRef } from './accumulator.ts';
import { createGatewayApp } from './app.ts';
import { type GatewayAgent, GatewayAgentSchema } from './authorize.ts';
import { REFUSAL_REASONS } from './refusals.ts';
import { LiveCalls } from './spend.ts';

const KEY = new Uint8Array(32).fill(3);
const agents = new Map<string, GatewayAgent>();
const secrets = new Map<string, Record<string, string>>();
let lookupFails = false;
const recorded: [RunRef, GatewayUsage][] = [];

function addAgent(name: string, status: unknown, usageAnnotation?: string): string {
  const uid = `uid-${name}`;
  agents.set(
    `team-a/${name}`,
    v.parse(GatewayAgentSchema, {
      metadata: {
        name,
        namespace: 'team-a',
        uid,
        resourceVersion: '1',
        ...(usageAnnotation === undefined
          ? {}
          : { annotations: { 'agents.re-cinq.com/gateway-usage': usageAnnotation } }),
      },
      spec: { stationRef: 'st' },
      status,
    }),
  );
  return mintGatewayCredential(KEY, { namespace: 'team-a', name, uid });
}

const fakes = {} as Record<'anthropic' | 'openai' | 'gemini', ModelApiFake>;
let app: ReturnType<typeof createGatewayApp>;
/** What happens while a call waits for its key's rate limit (another of the run's calls ending, say). */
let duringHold: () => void = () => {};
const holdsEnded: number[] = [];
const metrics = createGatewayMetrics(REFUSAL_REASONS, GATEWAY_VENDORS, false);

before(async () => {
  fakes.anthropic = await startAnthropicModel({ turns: [{ text: 'hi', usage: { input: 3, output: 2 } }] });
  fakes.openai = await startOpenAIModel({ turns: [{ text: 'hi', usage: { input: 4, output: 1 } }] });
  fakes.gemini = await startGeminiModel({ turns: [{ text: 'hi', usage: { input: 6, output: 2 } }] });
  secrets.set('team-a', {
    A: btoa(fakes.anthropic.apiKey),
    O: btoa(fakes.openai.apiKey),
    G: btoa(fakes.gemini.apiKey),
  });
  app = createGatewayApp({
    upstreams: {
      anthropic: fakes.anthropic.baseUrl,
      openai: new URL(fakes.openai.baseUrl).origin,
      gemini: fakes.gemini.baseUrl,
    },
    metrics,
    logger: createLogger('error', () => {}),
    flusher: {
      record: (run, usage) => void recorded.push([run, usage]),
      flushAll: async () => {},
      pending: () => 0,
      // Everything recorded is unwritten: this stub writes nothing.
      unwritten: (uid) => ({
        pending: recorded.filter(([r]) => r.uid === uid).reduce((a, [, u]) => mergeUsage(a, u), EMPTY_USAGE),
        view: undefined,
      }),
    },
    now: () => performance.now(),
    fetch,
    active: new Set(),
    live: new LiveCalls(),
    prices: () => DEFAULT_PRICES,
    hmacKey: () => KEY,
    agent: async (run) =>
      lookupFails ? err(apiError(500, undefined, 'down')) : ok(agents.get(`${run.namespace}/${run.name}`)),
    vendorKey: async (ns, name) => {
      const b64 = secrets.get(ns)?.[name];
      return ok(b64 === undefined ? undefined : atob(b64));
    },
    rateLimits: {
      hold: async () => {
        duringHold();
        return {
          kind: 'go',
          ended: (code) => void holdsEnded.push(code),
          answered: async (res) => res,
        };
      },
    },
  });
});
after(async () => {
  for (const f of Object.values(fakes)) await f.close();
});

const messages = (credential: string, body: unknown = { model: 'claude-x', max_tokens: 5, messages: [] }) =>
  app.request('/anthropic/v1/messages', {
    method: 'POST',
    headers: {
      'x-api-key': credential,
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });

describe('gateway app', () => {
  it('refuses, in the vendor’s shape and without calling it, every call it may not forward', async () => {
    const granted = { phase: 'Running', gateway: { keys: { anthropic: 'A' }, models: ['claude-*'] } };
    const ok1 = addAgent('ok', granted);
    const noGrant = addAgent('no-grant', { phase: 'Running' });
    const missingKey = addAgent('missing-key', {
      phase: 'Running',
      gateway: { keys: { anthropic: 'NOPE' } },
    });
    const before = fakes.anthropic.requests.length;
    const rows: [string, () => Response | Promise<Response>, number, string][] = [
      [
        'no credential',
        () => app.request('/anthropic/v1/messages', { method: 'POST', body: '{}' }),
        401,
        'authentication_error',
      ],
      [
        'a path not forwarded',
        () => app.request('/anthropic/v1/files', { method: 'POST' }),
        404,
        'not_found_error',
      ],
      ['a run without a grant', () => messages(noGrant), 401, 'authentication_error'],
      ['a key not in agent-secrets', () => messages(missingKey), 401, 'authentication_error'],
      ['no model while models are limited', () => messages(ok1, { messages: [] }), 403, 'permission_error'],
      [
        'a body that is not JSON while models are limited',
        () => messages(ok1, 'not json'),
        403,
        'permission_error',
      ],
    ];
    for (const [what, call, status, type] of rows) {
      const res = await call();
      assert.equal(res.status, status, what);
      const body = (await res.json()) as { type: string; error: { type: string; message: string } };
      assert.equal(body.type, 'error', what);
      assert.equal(body.error.type, type, what);
      assert.ok(!body.error.message.includes(fakes.anthropic.apiKey), 'no key in the message');
    }
    assert.equal(fakes.anthropic.requests.length, before, 'nothing reached the vendor');
    const other = await app.request('/elsewhere', { method: 'GET' });
    assert.equal(other.status, 404);
  });

  it('answers 503 with retry-after when the run cannot be looked up', async () => {
    const credential = addAgent('lookup', { phase: 'Running', gateway: { keys: { openai: 'O' } } });
    lookupFails = true;
    try {
      const res = await app.request('/openai/v1/responses', {
        method: 'POST',
        headers: { authorization: `Bearer ${credential}` },
        body: JSON.stringify({ model: 'gpt-5', input: 'x' }),
      });
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '2');
      assert.deepEqual(await res.json(), {
        error: {
          message: 'agent gateway: the run cannot be looked up now; try again',
          type: 'server_error',
          param: null,
          code: 'gateway_unavailable',
        },
      });
    } finally {
      lookupFails = false;
    }
  });

  it('forwards with the key where each vendor wants it: Anthropic Bearer credential, OpenAI, Gemini ?key=', async () => {
    const credential = addAgent('fwd', {
      phase: 'Running',
      gateway: { keys: { anthropic: 'A', openai: 'O', gemini: 'G' } },
    });
    recorded.length = 0;
    const a = await app.request('/anthropic/v1/messages?beta=true', {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-x', max_tokens: 5, messages: [{ role: 'user', content: 'q' }] }),
    });
    assert.equal(a.status, 200);
    assert.equal(((await a.json()) as { content: { text: string }[] }).content[0]?.text, 'hi');
    const o = await app.request('/openai/v1/responses', {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-5', input: 'q' }),
    });
    assert.equal(o.status, 200);
    await o.arrayBuffer();
    const g = await app.request(`/gemini/v1beta/models/gemini-2.5-pro:generateContent?key=${credential}`, {
      method: 'POST',
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'q' }] }] }),
    });
    assert.equal(g.status, 200);
    await g.arrayBuffer();
    const last = (f: ModelApiFake) => f.requests.at(-1);
    assert.deepEqual(
      [
        last(fakes.anthropic)?.apiKey,
        last(fakes.anthropic)?.query,
        last(fakes.anthropic)?.headers.authorization,
      ],
      [fakes.anthropic.apiKey, { beta: 'true' }, undefined],
    );
    assert.equal(
      last(fakes.openai)?.apiKey,
      fakes.openai.apiKey,
      'the key Secret value, its trailing newline trimmed',
    );
    assert.deepEqual([last(fakes.gemini)?.apiKey, last(fakes.gemini)?.query], [fakes.gemini.apiKey, {}]);
    assert.deepEqual(
      recorded.map(([run, usage]) => [run.name, usage]),
      [
        ['fwd', { models: { 'claude-x': { calls: 1, input: 3, output: 2, cacheRead: 0, cacheWrite: 0 } } }],
        ['fwd', { models: { 'gpt-5': { calls: 1, input: 4, output: 1, cacheRead: 0, cacheWrite: 0 } } }],
        [
          'fwd',
          { models: { 'gemini-2.5-pro': { calls: 1, input: 6, output: 2, cacheRead: 0, cacheWrite: 0 } } },
        ],
      ],
    );
  });

  it('passes a vendor error on as it is and meters no tokens for it', async () => {
    secrets.set('team-a', { ...secrets.get('team-a'), BAD: btoa('not-the-key') });
    const credential = addAgent('vendor-error', {
      phase: 'Running',
      gateway: { keys: { anthropic: 'BAD' } },
    });
    recorded.length = 0;
    const res = await messages(credential);
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), {
      type: 'error',
      error: { type: 'authentication_error', message: 'invalid x-api-key' },
      request_id: 'req_fake401',
    });
    assert.deepEqual(recorded, []);
  });

  it('a capped run: refused before forwarding once the annotation and the unwritten usage reach the cap', async () => {
    // The annotation holds 60 tokens of claude-sonnet-5-5; the fake answers 3 + 2 per call; the cap is 70 tokens.
    const annotation = JSON.stringify({
      models: { 'claude-sonnet-5-5': { calls: 2, input: 40, output: 10, cacheRead: 10, cacheWrite: 0 } },
    });
    const credential = addAgent(
      'capped',
      { phase: 'Running', gateway: { keys: { anthropic: 'A' }, budget: { tokens: 70 } } },
      annotation,
    );
    const call = () =>
      messages(credential, {
        model: 'claude-sonnet-5-5',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'q' }],
      });
    const before = fakes.anthropic.requests.length;
    // 60, 65: under the cap, forwarded; 70: at it, refused.
    for (const expected of [200, 200]) {
      const res = await call();
      assert.equal(res.status, expected);
      await res.arrayBuffer();
    }
    assert.equal(fakes.anthropic.requests.length, before + 2);
    const refusals = async () =>
      (await metrics.refusals.get()).values.find(
        (x) => x.labels.reason === 'budget' && x.labels.vendor === 'anthropic',
      )?.value;
    const refusedBefore = await refusals();
    const refused = await call();
    assert.equal(refused.status, 402);
    assert.deepEqual(await refused.json(), {
      type: 'error',
      error: {
        type: 'billing_error',
        message:
          'agent gateway: budget exceeded: the run has used 70 tokens of its cap of 70 tokens (team-a/capped)',
      },
    });
    assert.equal(fakes.anthropic.requests.length, before + 2, 'the refused call did not reach the vendor');
    assert.equal(await refusals(), (refusedBefore ?? 0) + 1);
    // A model list uses no tokens: it still passes to the vendor (whatever the fake answers it).
    const list = await app.request('/anthropic/v1/models', { headers: { 'x-api-key': credential } });
    await list.arrayBuffer();
    assert.equal(fakes.anthropic.requests.length, before + 3, 'the model list reached the vendor');
    assert.equal(fakes.anthropic.requests.at(-1)?.path, '/v1/models');
  });

  it('a USD cap priced with the table; the cost of each call on gateway_cost_usd_total', async () => {
    // claude-opus-5-5: 4 $/MTok in, 20 out. The annotation: 1,000,000 in → 4 USD. The cap: 4.00001 USD.
    const annotation = JSON.stringify({
      models: { 'claude-opus-5-5': { calls: 1, input: 1_000_000, output: 0, cacheRead: 0, cacheWrite: 0 } },
    });
    const credential = addAgent(
      'usd',
      { phase: 'Running', gateway: { keys: { anthropic: 'A' }, budget: { usd: '4.00001' } } },
      annotation,
    );
    const call = () =>
      messages(credential, {
        model: 'claude-opus-5-5',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'q' }],
      });
    const first = await call();
    assert.equal(first.status, 200);
    await first.arrayBuffer();
    // + 3 in, 2 out: 3 × 4 + 2 × 20 = 52 µ$ → 4.000052 ≥ 4.00001.
    const cost = (await metrics.cost.get()).values.find(
      (x) => x.labels.model === 'claude-opus-5-5' && x.labels.namespace === 'team-a',
    );
    assert.ok(cost !== undefined && Math.abs(cost.value - 52e-6) < 1e-12, JSON.stringify(cost));
    assert.deepEqual(cost?.labels, {
      namespace: 'team-a',
      station: 'st',
      model: 'claude-opus-5-5',
      vendor: 'anthropic',
    });
    const second = await call();
    assert.equal(second.status, 402);
    const body = (await second.json()) as { error: { message: string } };
    assert.equal(
      body.error.message,
      'agent gateway: budget exceeded: the run has spent 4.000052 USD of its cap of 4.00001 USD (team-a/usd)',
    );
  });

  it('a capped run’s calls in other vendors’ shapes: OpenAI 400, Gemini 403', async () => {
    const credential = addAgent('capped-0', {
      phase: 'Running',
      gateway: { keys: { openai: 'O', gemini: 'G' }, budget: { tokens: 0 } },
    });
    const o = await app.request('/openai/v1/responses', {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-5', input: 'q' }),
    });
    assert.equal(o.status, 400);
    assert.equal(((await o.json()) as { error: { code: string } }).error.code, 'budget_exceeded');
    const g = await app.request(`/gemini/v1beta/models/gemini-2.5-pro:generateContent?key=${credential}`, {
      method: 'POST',
      body: JSON.stringify({ contents: [] }),
    });
    assert.equal(g.status, 403);
    assert.equal(((await g.json()) as { error: { status: string } }).error.status, 'PERMISSION_DENIED');
  });

  it('a capped run’s call that waited for its key’s rate limit: asked again, refused when the run reached its cap meanwhile', async () => {
    const credential = addAgent('waited', {
      phase: 'Running',
      gateway: { keys: { anthropic: 'A' }, budget: { tokens: 100 } },
    });
    const before = fakes.anthropic.requests.length;
    holdsEnded.length = 0;
    // While this call waits, another call of the run ends with 150 tokens.
    duringHold = () =>
      void recorded.push([
        { namespace: 'team-a', name: 'waited', uid: 'uid-waited' },
        {
          models: { 'claude-sonnet-5-5': { calls: 1, input: 100, output: 50, cacheRead: 0, cacheWrite: 0 } },
        },
      ]);
    try {
      const res = await messages(credential, {
        model: 'claude-sonnet-5-5',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'q' }],
      });
      assert.equal(res.status, 402);
      const body = (await res.json()) as { error: { message: string } };
      assert.match(
        body.error.message,
        /budget exceeded: the run has used 150 tokens of its cap of 100 tokens/,
      );
    } finally {
      duringHold = () => {};
    }
    assert.equal(fakes.anthropic.requests.length, before, 'not forwarded');
    assert.deepEqual(holdsEnded, [402], "the rate limiter's charge is given back");
  });
});
