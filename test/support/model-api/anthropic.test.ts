// Contract: @anthropic-ai/sdk (the vendor's own client) streams and reads every scripted turn kind from the fake
// Messages API and accumulates exactly what the script states; its retry and auth-error handling see the vendor's
// status codes and error shapes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Anthropic, { AuthenticationError, InternalServerError } from '@anthropic-ai/sdk';
import { startAnthropicModel } from './anthropic.ts';

const MODEL = 'claude-sonnet-5-5';
const TOOLS = [
  { name: 'Bash', description: 'run a command', input_schema: { type: 'object' as const, properties: {} } },
  { name: 'Write', description: 'write a file', input_schema: { type: 'object' as const, properties: {} } },
];

test('Anthropic: a streamed conversation (thinking + text, then a tool call, then the answer) as the SDK accumulates it', async (t) => {
  const fake = await startAnthropicModel({
    turns: [
      {
        thinking: 'I should look first.',
        text: 'Let me check.',
        usage: { input: 120, output: 30, reasoning: 12 },
      },
      { toolCall: { name: 'Bash', input: { command: 'ls -la /workspace', timeout: 5 }, id: 'toolu_01' } },
      { text: 'done', usage: { input: 300, output: 7, cacheRead: 250, cacheWrite: 40 } },
    ],
  });
  t.after(() => fake.close());
  const client = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const user = { role: 'user' as const, content: 'list the workspace' };

  const first = await client.messages
    .stream({ model: MODEL, max_tokens: 1024, messages: [user], tools: TOOLS })
    .finalMessage();
  assert.deepEqual(
    first.content.map((b) =>
      b.type === 'thinking'
        ? [b.type, b.thinking, b.signature]
        : b.type === 'text'
          ? [b.type, b.text]
          : [b.type],
    ),
    [
      ['thinking', 'I should look first.', 'sig-step-0'],
      ['text', 'Let me check.'],
    ],
  );
  assert.equal(first.stop_reason, 'end_turn');
  assert.equal(first.usage.input_tokens, 120);
  assert.equal(first.usage.output_tokens, 30);
  assert.equal(first.usage.output_tokens_details?.thinking_tokens, 12);

  const history = [
    user,
    { role: 'assistant' as const, content: first.content },
    { role: 'user' as const, content: 'go on' },
  ];
  const stream = client.messages.stream({ model: MODEL, max_tokens: 1024, messages: history, tools: TOOLS });
  const jsonDeltas: string[] = [];
  stream.on('inputJson', (partial) => jsonDeltas.push(partial));
  const second = await stream.finalMessage();
  assert.equal(second.stop_reason, 'tool_use');
  const call = second.content[0];
  assert.ok(call?.type === 'tool_use');
  assert.equal(call.name, 'Bash');
  assert.equal(call.id, 'toolu_01');
  assert.deepEqual(call.input, { command: 'ls -la /workspace', timeout: 5 });
  assert.ok(jsonDeltas.length >= 2, `the input arrives in several chunks, got ${jsonDeltas.length}`);
  assert.equal(second.usage.input_tokens, 10);
  assert.equal(second.usage.output_tokens, 5);

  const third = await client.messages
    .stream({
      model: MODEL,
      max_tokens: 1024,
      tools: TOOLS,
      messages: [
        ...history,
        { role: 'assistant', content: second.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'marker.txt' }] },
      ],
    })
    .finalMessage();
  assert.deepEqual(
    third.content.map((b) => (b.type === 'text' ? b.text : b.type)),
    ['done'],
  );
  assert.equal(third.stop_reason, 'end_turn');
  assert.equal(third.usage.input_tokens, 300);
  assert.equal(third.usage.output_tokens, 7);
  assert.equal(third.usage.cache_read_input_tokens, 250);
  assert.equal(third.usage.cache_creation_input_tokens, 40);

  assert.deepEqual(
    fake.requests.map((r) => [r.method, r.path, r.model, r.stream, r.step, r.status, r.apiKey]),
    [
      ['POST', '/v1/messages', MODEL, true, 0, 200, fake.apiKey],
      ['POST', '/v1/messages', MODEL, true, 1, 200, fake.apiKey],
      ['POST', '/v1/messages', MODEL, true, 2, 200, fake.apiKey],
    ],
  );
  assert.deepEqual(fake.requests[0]?.tools, ['Bash', 'Write']);
  assert.deepEqual(fake.requests[2]?.toolResults, [{ id: 'toolu_01', content: 'marker.txt' }]);
  // @anthropic-ai/sdk 1.17.0 sends its apiKey as `Authorization: Bearer` (Claude Code sends `x-api-key`).
  assert.equal(fake.requests[0]?.headers.authorization, `Bearer ${fake.apiKey}`);
  assert.equal(fake.requests[0]?.headers['anthropic-version'], '2026-10-21');
});

test('Anthropic: a retry of the same request gets the same answer (the place in the script comes from the history)', async (t) => {
  const fake = await startAnthropicModel({ turns: [{ text: 'one' }, { text: 'two' }] });
  t.after(() => fake.close());
  const client = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const ask = async () =>
    (
      await client.messages.create({
        model: MODEL,
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
      })
    ).content;
  assert.deepEqual(await ask(), [{ type: 'text', text: 'one', citations: null }]);
  assert.deepEqual(await ask(), [{ type: 'text', text: 'one', citations: null }]);
});

test('Anthropic: messages.create (not streamed) and the beta endpoint, with a tool call', async (t) => {
  const fake = await startAnthropicModel({
    turns: [
      {
        text: 'writing',
        toolCall: { name: 'Write', input: { path: 'a.txt', content: 'x' } },
        usage: { input: 5, output: 6 },
      },
    ],
  });
  t.after(() => fake.close());
  const client = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const message = await client.messages.create({
    model: MODEL,
    max_tokens: 100,
    messages: [{ role: 'user', content: 'w' }],
  });
  assert.equal(message.stop_reason, 'tool_use');
  assert.deepEqual(
    message.content.map((b) =>
      b.type === 'tool_use' ? [b.name, b.input, b.id] : b.type === 'text' ? b.text : b.type,
    ),
    ['writing', ['Write', { path: 'a.txt', content: 'x' }, 'toolu_fake0']],
  );
  assert.deepEqual([message.usage.input_tokens, message.usage.output_tokens], [5, 6]);

  // As Claude Code calls it: `x-api-key` and `POST /v1/messages?beta=true`.
  const asClaudeCode = new Anthropic({
    apiKey: null,
    baseURL: fake.baseUrl,
    maxRetries: 0,
    defaultHeaders: { 'x-api-key': fake.apiKey },
    defaultQuery: { beta: 'true' },
  });
  const beta = await asClaudeCode.beta.messages
    .stream({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'w' }],
      betas: ['interleaved-thinking-2025-05-14'],
    })
    .finalMessage();
  assert.equal(beta.stop_reason, 'tool_use');
  assert.equal(fake.requests[1]?.path, '/v1/messages');
  assert.equal(fake.requests[1]?.query.beta, 'true');
  assert.equal(fake.requests[1]?.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14');
  assert.equal(fake.requests[1]?.headers['x-api-key'], fake.apiKey);
  assert.equal(fake.requests[1]?.apiKey, fake.apiKey);
});

test('Anthropic: count_tokens, models.list, an unknown endpoint recorded as 404', async (t) => {
  const fake = await startAnthropicModel({
    countTokens: 77,
    models: ['claude-opus-5-5', 'claude-haiku-5-5'],
  });
  t.after(() => fake.close());
  const client = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const count = await client.messages.countTokens({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(count.input_tokens, 77);
  const ids: string[] = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['claude-opus-5-5', 'claude-haiku-5-5']);
  await assert.rejects(
    client.files.list().then((page) => page.data),
    { status: 404 },
  );
  assert.deepEqual(
    fake.requests.map((r) => [r.method, r.path, r.status]),
    [
      ['POST', '/v1/messages/count_tokens', 200],
      ['GET', '/v1/models', 200],
      ['GET', '/v1/files', 404],
    ],
  );
});

test('Anthropic: 429 with retry-after is retried by the SDK, then the answer', async (t) => {
  const fake = await startAnthropicModel({
    turns: [{ error: { status: 429, retryAfter: 1 } }, { text: 'after the limit' }],
  });
  t.after(() => fake.close());
  const client = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 1 });
  const message = await client.messages
    .stream({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
    .finalMessage();
  assert.deepEqual(
    message.content.map((b) => (b.type === 'text' ? b.text : b.type)),
    ['after the limit'],
  );
  assert.deepEqual(
    fake.requests.map((r) => r.status),
    [429, 200],
  );
});

test('Anthropic: 429 carries the vendor error shape and retry-after; 529 overloaded and 500 are retried', async (t) => {
  const fake = await startAnthropicModel({
    turns: [
      { error: { status: 429, retryAfter: 7 } },
      { error: { status: 529 } },
      { error: { status: 500 } },
      { text: 'ok' },
    ],
  });
  t.after(() => fake.close());
  const client = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const params = { model: MODEL, max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };
  const limited = await client.messages.create(params).then(
    () => assert.fail('429 expected'),
    (e: unknown) => e,
  );
  assert.ok(limited instanceof Anthropic.RateLimitError);
  assert.equal(limited.headers?.get('retry-after'), '7');
  assert.deepEqual(limited.error, {
    type: 'error',
    error: { type: 'rate_limit_error', message: 'scripted error 429' },
    request_id: 'req_fake429',
  });
  const overloaded = await client.messages.create(params).then(
    () => assert.fail('529 expected'),
    (e: unknown) => e,
  );
  assert.ok(overloaded instanceof InternalServerError);
  assert.equal(overloaded.status, 529);
  assert.equal((overloaded.error as { error: { type: string } }).error.type, 'overloaded_error');
  const retrying = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 1 });
  const message = await retrying.messages.create(params);
  assert.deepEqual(
    message.content.map((b) => (b.type === 'text' ? b.text : b.type)),
    ['ok'],
  );
  assert.deepEqual(
    fake.requests.map((r) => r.status),
    [429, 529, 500, 200],
  );
});

test('Anthropic: an error event inside the stream surfaces as the SDK error', async (t) => {
  const fake = await startAnthropicModel({
    turns: [{ error: { status: 529, inStream: true } }, { text: 'x' }],
  });
  t.after(() => fake.close());
  const client = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  await assert.rejects(
    client.messages
      .stream({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage(),
    (e: unknown) => e instanceof Anthropic.APIError && /overloaded_error/.test(String(e.message)),
  );
});

test('Anthropic: a wrong key is the SDK AuthenticationError; x-api-key and Authorization Bearer (authToken) are accepted', async (t) => {
  const fake = await startAnthropicModel({ turns: [{ text: 'hi' }] });
  t.after(() => fake.close());
  const wrong = new Anthropic({ apiKey: 'sk-wrong', baseURL: fake.baseUrl, maxRetries: 0 });
  const params = { model: MODEL, max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };
  const err = await wrong.messages.create(params).then(
    () => assert.fail('401 expected'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof AuthenticationError);
  assert.equal((err.error as { error: { type: string } }).error.type, 'authentication_error');
  const bearer = new Anthropic({
    apiKey: null,
    authToken: fake.apiKey,
    baseURL: fake.baseUrl,
    maxRetries: 0,
  });
  const message = await bearer.messages.create(params);
  assert.deepEqual(
    message.content.map((b) => (b.type === 'text' ? b.text : b.type)),
    ['hi'],
  );
  const wrongXKey = new Anthropic({
    apiKey: null,
    baseURL: fake.baseUrl,
    maxRetries: 0,
    defaultHeaders: { 'x-api-key': 'sk-wrong-x' },
  });
  await assert.rejects(wrongXKey.messages.create(params), AuthenticationError);
  assert.deepEqual(
    fake.requests.map((r) => [r.status, r.apiKey]),
    [
      [401, 'sk-wrong'],
      [200, fake.apiKey],
      [401, 'sk-wrong-x'],
    ],
  );
  assert.equal(fake.requests[1]?.headers.authorization, `Bearer ${fake.apiKey}`);
});
