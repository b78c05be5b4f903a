import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  clientCredential,
  downstreamHeaders,
  matchRoute,
  modelOf,
  upstreamHeaders,
  upstreamUrl,
  vendorOf,
} from './routes.ts';

const headersOf = (h: Record<string, string>) => (name: string) => h[name];

describe('gateway route table', () => {
  it('splits the vendor prefix off', () => {
    assert.deepEqual(vendorOf('/anthropic/v1/messages'), { vendor: 'anthropic', rest: '/v1/messages' });
    assert.deepEqual(vendorOf('/openai/v1/responses'), { vendor: 'openai', rest: '/v1/responses' });
    assert.deepEqual(vendorOf('/gemini/v1beta/models'), { vendor: 'gemini', rest: '/v1beta/models' });
    assert.equal(vendorOf('/anthropicx/v1/messages'), undefined);
    assert.equal(vendorOf('/v1/messages'), undefined);
    assert.equal(vendorOf('/anthropic'), undefined);
  });

  const rows: [string, string, string, string | undefined, string | undefined][] = [
    // vendor, method, path after the prefix, usage api, model source
    ['anthropic', 'POST', '/v1/messages', 'anthropic-messages', 'body'],
    ['anthropic', 'POST', '/v1/messages/count_tokens', undefined, 'body'],
    ['anthropic', 'GET', '/v1/models', undefined, undefined],
    ['openai', 'POST', '/v1/responses', 'openai-responses', 'body'],
    ['openai', 'POST', '/v1/chat/completions', 'openai-chat', 'body'],
    ['openai', 'GET', '/v1/models', undefined, undefined],
    ['gemini', 'POST', '/v1beta/models/gemini-2.5-pro:generateContent', 'gemini', 'path'],
    ['gemini', 'POST', '/v1beta/models/gemini-2.5-pro:streamGenerateContent', 'gemini', 'path'],
    ['gemini', 'POST', '/v1/models/gemini-2.5-pro:generateContent', 'gemini', 'path'],
    ['gemini', 'POST', '/v1beta/models/gemini-2.5-pro:countTokens', undefined, 'path'],
    ['gemini', 'GET', '/v1beta/models', undefined, undefined],
  ];
  for (const [vendor, method, path, usage, model] of rows) {
    it(`forwards ${vendor} ${method} ${path}`, () => {
      const route = matchRoute(vendor as 'anthropic', method, path);
      assert.ok(route, 'a route');
      assert.equal(route.upstreamPath, path);
      assert.equal(route.usage, usage);
      assert.equal(route.model?.from, model);
    });
  }

  it('forwards nothing else: other paths, other methods, a WebSocket upgrade path with GET, other vendors’ paths', () => {
    assert.equal(matchRoute('anthropic', 'GET', '/v1/messages'), undefined);
    assert.equal(matchRoute('anthropic', 'POST', '/v1/messages/batches'), undefined);
    assert.equal(matchRoute('anthropic', 'POST', '/v1/files'), undefined);
    assert.equal(matchRoute('openai', 'GET', '/v1/responses'), undefined);
    assert.equal(matchRoute('openai', 'POST', '/v1/batches'), undefined);
    assert.equal(matchRoute('openai', 'POST', '/v1/messages'), undefined);
    assert.equal(matchRoute('gemini', 'POST', '/v1beta/models/x:batchGenerateContent'), undefined);
    assert.equal(matchRoute('gemini', 'POST', '/v1beta/cachedContents'), undefined);
    assert.equal(matchRoute('gemini', 'DELETE', '/v1beta/models'), undefined);
  });

  it('reads an encoded colon of a Gemini path as a colon', () => {
    const route = matchRoute('gemini', 'POST', '/v1beta/models/gemini-2.5-pro%3AgenerateContent');
    assert.equal(route?.usage, 'gemini');
    assert.equal(route && modelOf(route, undefined), 'gemini-2.5-pro');
  });

  it('takes the model from the body, or from the path for Gemini', () => {
    const messages = matchRoute('anthropic', 'POST', '/v1/messages');
    assert.ok(messages);
    assert.equal(modelOf(messages, { model: 'claude-sonnet-4-5', messages: [] }), 'claude-sonnet-4-5');
    assert.equal(modelOf(messages, { messages: [] }), undefined);
    assert.equal(modelOf(messages, { model: 7 }), undefined);
    assert.equal(modelOf(messages, { model: '' }), undefined);
    assert.equal(modelOf(messages, ['model']), undefined);
    assert.equal(modelOf(messages, undefined), undefined);
    const gemini = matchRoute('gemini', 'POST', '/v1beta/models/gemini-3-flash:streamGenerateContent');
    assert.ok(gemini);
    assert.equal(modelOf(gemini, { model: 'ignored' }), 'gemini-3-flash');
    const models = matchRoute('openai', 'GET', '/v1/models');
    assert.ok(models);
    assert.equal(modelOf(models, { model: 'x' }), undefined);
  });
});

describe('the client credential', () => {
  const none = new URLSearchParams();
  it('Anthropic: x-api-key, else Authorization: Bearer', () => {
    assert.equal(clientCredential('anthropic', headersOf({ 'x-api-key': 'acgw1.a.b' }), none), 'acgw1.a.b');
    assert.equal(
      clientCredential('anthropic', headersOf({ authorization: 'Bearer acgw1.c.d' }), none),
      'acgw1.c.d',
    );
    assert.equal(clientCredential('anthropic', headersOf({ authorization: 'Basic eA==' }), none), undefined);
  });
  it('OpenAI: Authorization: Bearer only', () => {
    assert.equal(
      clientCredential('openai', headersOf({ authorization: 'Bearer acgw1.e.f' }), none),
      'acgw1.e.f',
    );
    assert.equal(clientCredential('openai', headersOf({ 'x-api-key': 'acgw1.e.f' }), none), undefined);
  });
  it('Gemini: x-goog-api-key, else ?key=', () => {
    assert.equal(clientCredential('gemini', headersOf({ 'x-goog-api-key': 'acgw1.g.h' }), none), 'acgw1.g.h');
    assert.equal(
      clientCredential('gemini', headersOf({}), new URLSearchParams('alt=sse&key=acgw1.i.j')),
      'acgw1.i.j',
    );
    assert.equal(clientCredential('gemini', headersOf({}), none), undefined);
  });
});

describe('the upstream request', () => {
  const client: [string, string][] = [
    ['Authorization', 'Bearer acgw1.cred.mac'],
    ['x-api-key', 'acgw1.cred.mac'],
    ['x-goog-api-key', 'acgw1.cred.mac'],
    ['Cookie', 'session=1'],
    ['Content-Type', 'application/json'],
    ['anthropic-version', '2023-06-01'],
    ['Connection', 'keep-alive, x-private-hop'],
    ['x-private-hop', '1'],
    ['Keep-Alive', 'timeout=5'],
    ['Transfer-Encoding', 'chunked'],
    ['Host', 'agent-gateway:8080'],
    ['Content-Length', '42'],
    ['Accept-Encoding', 'gzip, br'],
    ['User-Agent', 'claude-cli/2.1'],
  ];

  it('Anthropic: the key in x-api-key; no credential, no hop-by-hop header; identity encoding', () => {
    assert.deepEqual(upstreamHeaders('anthropic', client, 'sk-ant-real'), [
      ['content-type', 'application/json'],
      ['anthropic-version', '2023-06-01'],
      ['user-agent', 'claude-cli/2.1'],
      ['accept-encoding', 'identity'],
      ['x-api-key', 'sk-ant-real'],
    ]);
  });
  it('OpenAI: the key as Authorization: Bearer', () => {
    const out = upstreamHeaders('openai', client, 'sk-real');
    assert.deepEqual(out.at(-1), ['authorization', 'Bearer sk-real']);
    assert.equal(out.filter(([n]) => n === 'authorization').length, 1);
    assert.ok(!out.some(([n]) => n === 'x-api-key' || n === 'x-goog-api-key'));
  });
  it('Gemini: the key in x-goog-api-key, ?key= dropped, other query kept', () => {
    const out = upstreamHeaders('gemini', client, 'AIza-real');
    assert.deepEqual(out.at(-1), ['x-goog-api-key', 'AIza-real']);
    assert.ok(!out.some(([n]) => n === 'authorization'));
    const route = matchRoute('gemini', 'POST', '/v1beta/models/gemini-2.5-pro:streamGenerateContent');
    assert.ok(route);
    assert.equal(
      upstreamUrl(
        'https://generativelanguage.googleapis.com',
        route,
        new URLSearchParams('alt=sse&key=acgw1.x.y'),
      ),
      'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse',
    );
  });
  it('keeps the query and a base path', () => {
    const route = matchRoute('anthropic', 'POST', '/v1/messages');
    assert.ok(route);
    assert.equal(
      upstreamUrl('http://127.0.0.1:9/proxy', route, new URLSearchParams('beta=true')),
      'http://127.0.0.1:9/proxy/v1/messages?beta=true',
    );
    assert.equal(
      upstreamUrl('https://api.anthropic.com', route, new URLSearchParams()),
      'https://api.anthropic.com/v1/messages',
    );
  });
  it('passes the answer headers on without hop-by-hop ones, length or encoding', () => {
    assert.deepEqual(
      downstreamHeaders([
        ['Content-Type', 'text/event-stream'],
        ['Content-Length', '10'],
        ['Content-Encoding', 'gzip'],
        ['Connection', 'keep-alive'],
        ['Transfer-Encoding', 'chunked'],
        ['request-id', 'req_1'],
        ['retry-after', '3'],
      ]),
      [
        ['content-type', 'text/event-stream'],
        ['request-id', 'req_1'],
        ['retry-after', '3'],
      ],
    );
  });
});
