// Contract: the official openai SDK streams and reads every scripted turn kind from the fake Responses and Chat
// Completions APIs (its Responses accumulator checks every index, item id and call id) and accumulates exactly what
// the script states; its retry and auth-error handling see the vendor's status codes and error shapes.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import OpenAI, { AuthenticationError, RateLimitError } from 'openai';
import { startOpenAIModel } from './openai.ts';

const MODEL = 'gpt-5.5-codex';
const FUNCTIONS = [
  { type: 'function' as const, name: 'shell', parameters: { type: 'object', properties: {} }, strict: false },
  {
    type: 'function' as const,
    name: 'apply_patch',
    parameters: { type: 'object', properties: {} },
    strict: false,
  },
];

test('OpenAI Responses: a streamed conversation (reasoning + text, a function call, the answer) as the SDK accumulates it', async (t) => {
  const fake = await startOpenAIModel({
    turns: [
      { thinking: 'Look first.', text: 'Checking.', usage: { input: 100, output: 20, reasoning: 8 } },
      { toolCall: { name: 'shell', input: { command: ['ls', '-la'] }, id: 'call_01' } },
      { text: 'done', usage: { input: 400, output: 9, cacheRead: 350, cacheWrite: 30, reasoning: 2 } },
    ],
  });
  t.after(() => fake.close());
  const client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });

  const textDeltas: string[] = [];
  const s1 = client.responses.stream({ model: MODEL, input: 'list the workspace', tools: FUNCTIONS });
  s1.on('response.output_text.delta', (e) => textDeltas.push(e.delta));
  const first = await s1.finalResponse();
  assert.equal(first.status, 'completed');
  assert.equal(first.output_text, 'Checking.');
  assert.ok(textDeltas.length >= 2, 'the text arrives in several deltas');
  assert.deepEqual(
    first.output.map((o) => o.type),
    ['reasoning', 'message'],
  );
  const reasoning = first.output[0];
  assert.ok(reasoning?.type === 'reasoning');
  assert.deepEqual(reasoning.summary, [{ type: 'summary_text', text: 'Look first.' }]);
  assert.deepEqual(first.usage, {
    input_tokens: 100,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: 20,
    output_tokens_details: { reasoning_tokens: 8 },
    total_tokens: 120,
  });

  const history: OpenAI.Responses.ResponseInputItem[] = [
    { role: 'user', content: 'list the workspace' },
    ...(first.output as OpenAI.Responses.ResponseInputItem[]),
    { role: 'user', content: 'go on' },
  ];
  const second = await client.responses
    .stream({ model: MODEL, input: history, tools: FUNCTIONS })
    .finalResponse();
  const call = second.output[0];
  assert.ok(call?.type === 'function_call');
  assert.equal(call.name, 'shell');
  assert.equal(call.call_id, 'call_01');
  assert.deepEqual(JSON.parse(call.arguments), { command: ['ls', '-la'] });
  assert.equal(second.output_text, '');

  const third = await client.responses
    .stream({
      model: MODEL,
      tools: FUNCTIONS,
      input: [...history, call, { type: 'function_call_output', call_id: 'call_01', output: 'marker.txt' }],
    })
    .finalResponse();
  assert.equal(third.output_text, 'done');
  assert.deepEqual(third.usage, {
    input_tokens: 400,
    input_tokens_details: { cached_tokens: 350, cache_write_tokens: 30 },
    output_tokens: 9,
    output_tokens_details: { reasoning_tokens: 2 },
    total_tokens: 409,
  });

  assert.deepEqual(
    fake.requests.map((r) => [r.method, r.path, r.model, r.stream, r.step, r.status, r.apiKey]),
    [
      ['POST', '/v1/responses', MODEL, true, 0, 200, fake.apiKey],
      ['POST', '/v1/responses', MODEL, true, 1, 200, fake.apiKey],
      ['POST', '/v1/responses', MODEL, true, 2, 200, fake.apiKey],
    ],
  );
  assert.deepEqual(fake.requests[0]?.tools, ['shell', 'apply_patch']);
  assert.deepEqual(fake.requests[2]?.toolResults, [{ id: 'call_01', content: 'marker.txt' }]);
});

test('OpenAI Responses: responses.create, not streamed and streamed by hand', async (t) => {
  const fake = await startOpenAIModel({
    turns: [
      {
        text: 'patching',
        toolCall: { name: 'apply_patch', input: { patch: '*** Begin' } },
        usage: { input: 3, output: 4 },
      },
    ],
  });
  t.after(() => fake.close());
  const client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const response = await client.responses.create({ model: MODEL, input: 'p' });
  assert.equal(response.output_text, 'patching');
  assert.deepEqual(
    response.output.map((o) =>
      o.type === 'function_call' ? [o.name, JSON.parse(o.arguments), o.call_id] : o.type,
    ),
    ['message', ['apply_patch', { patch: '*** Begin' }, 'call_fake0']],
  );
  assert.deepEqual(
    [response.usage?.input_tokens, response.usage?.output_tokens, response.usage?.total_tokens],
    [3, 4, 7],
  );

  const types: string[] = [];
  let args = '';
  for await (const event of await client.responses.create({ model: MODEL, input: 'p', stream: true })) {
    types.push(event.type);
    if (event.type === 'response.function_call_arguments.delta') args += event.delta;
  }
  assert.deepEqual(JSON.parse(args), { patch: '*** Begin' });
  assert.equal(types[0], 'response.created');
  assert.equal(types[1], 'response.in_progress');
  assert.equal(types.at(-1), 'response.completed');
  for (const kind of [
    'response.output_item.added',
    'response.content_part.added',
    'response.output_text.done',
    'response.function_call_arguments.done',
  ]) {
    assert.ok(types.includes(kind), `${kind} streamed`);
  }
});

test('OpenAI Chat Completions: streamed with tool_calls deltas and the usage chunk, then [DONE]; and not streamed', async (t) => {
  const fake = await startOpenAIModel({
    turns: [
      {
        text: 'Running it.',
        toolCall: { name: 'bash', input: { command: 'echo hi' }, id: 'call_9' },
        usage: { input: 50, output: 12, cacheRead: 40 },
      },
      { text: 'hi was printed', usage: { input: 70, output: 4, reasoning: 1 } },
    ],
  });
  t.after(() => fake.close());
  const client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const tools = [
    { type: 'function' as const, function: { name: 'bash', parameters: { type: 'object', properties: {} } } },
  ];
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'say hi' }];
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages,
    tools,
    stream: true,
    stream_options: { include_usage: true },
  });
  let content = '';
  let args = '';
  const calls: { id?: string | undefined; name?: string | undefined }[] = [];
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | null | undefined;
  let chunksSeen = 0;
  for await (const chunk of stream) {
    chunksSeen++;
    const choice = chunk.choices[0];
    if (choice?.delta.content) content += choice.delta.content;
    for (const tc of choice?.delta.tool_calls ?? []) {
      if (tc.id !== undefined) calls.push({ id: tc.id, name: tc.function?.name });
      args += tc.function?.arguments ?? '';
    }
    if (choice?.finish_reason) finish = choice.finish_reason;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(chunksSeen > 4);
  assert.equal(content, 'Running it.');
  assert.deepEqual(calls, [{ id: 'call_9', name: 'bash' }]);
  assert.deepEqual(JSON.parse(args), { command: 'echo hi' });
  assert.equal(finish, 'tool_calls');
  assert.deepEqual(usage, {
    prompt_tokens: 50,
    completion_tokens: 12,
    total_tokens: 62,
    prompt_tokens_details: { cached_tokens: 40, cache_write_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  });

  // The SDK's own chunk accumulator (chat.completions.stream) agrees.
  const final = await client.chat.completions.stream({ model: MODEL, messages, tools }).finalChatCompletion();
  assert.equal(final.choices[0]?.message.content, 'Running it.');
  assert.deepEqual(
    final.choices[0]?.message.tool_calls?.map((c) =>
      c.type === 'function' ? [c.id, c.function.name, c.function.arguments] : c.type,
    ),
    [['call_9', 'bash', '{"command":"echo hi"}']],
  );

  const answer = await client.chat.completions.create({
    model: MODEL,
    tools,
    messages: [
      ...messages,
      {
        role: 'assistant',
        content: 'Running it.',
        tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'bash', arguments: args } }],
      },
      { role: 'tool', tool_call_id: 'call_9', content: 'hi' },
    ],
  });
  assert.equal(answer.choices[0]?.message.content, 'hi was printed');
  assert.equal(answer.choices[0]?.finish_reason, 'stop');
  assert.deepEqual(
    [answer.usage?.prompt_tokens, answer.usage?.completion_tokens, answer.usage?.total_tokens],
    [70, 4, 74],
  );
  assert.deepEqual(
    fake.requests.map((r) => [r.path, r.stream, r.step]),
    [
      ['/v1/chat/completions', true, 0],
      ['/v1/chat/completions', true, 0],
      ['/v1/chat/completions', false, 1],
    ],
  );
  assert.deepEqual(fake.requests[2]?.toolResults, [{ id: 'call_9', content: 'hi' }]);
  assert.deepEqual(fake.requests[0]?.tools, ['bash']);
});

test('OpenAI: models.list and an unknown endpoint recorded as 404', async (t) => {
  const fake = await startOpenAIModel({ models: ['gpt-a', 'gpt-b'] });
  t.after(() => fake.close());
  const client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const ids: string[] = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['gpt-a', 'gpt-b']);
  await assert.rejects(client.embeddings.create({ model: 'e', input: 'x' }), { status: 404 });
  assert.deepEqual(
    fake.requests.map((r) => [r.method, r.path, r.status]),
    [
      ['GET', '/v1/models', 200],
      ['POST', '/v1/embeddings', 404],
    ],
  );
});

test('OpenAI: 429 with retry-after is retried by the SDK; 429 and 500 carry the vendor error shapes', async (t) => {
  const fake = await startOpenAIModel({
    turns: [{ error: { status: 429, retryAfter: 1 } }, { text: 'after the limit' }],
  });
  t.after(() => fake.close());
  const client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 1 });
  const response = await client.responses.stream({ model: MODEL, input: 'hi' }).finalResponse();
  assert.equal(response.output_text, 'after the limit');
  assert.deepEqual(
    fake.requests.map((r) => r.status),
    [429, 200],
  );
  const [first, second] = fake.requests;
  assert.ok(
    second!.at - first!.at >= 900,
    `the SDK waited the retry-after second (${second!.at - first!.at} ms)`,
  );

  const chatFake = await startOpenAIModel({
    turns: [{ error: { status: 429, retryAfter: 3 } }, { error: { status: 500 } }, { text: 'x' }],
  });
  t.after(() => chatFake.close());
  const chat = new OpenAI({ apiKey: chatFake.apiKey, baseURL: chatFake.baseUrl, maxRetries: 0 });
  const params = { model: MODEL, messages: [{ role: 'user' as const, content: 'hi' }] };
  const limited = await chat.chat.completions.create(params).then(
    () => assert.fail('429 expected'),
    (e: unknown) => e,
  );
  assert.ok(limited instanceof RateLimitError);
  assert.equal(limited.code, 'rate_limit_exceeded');
  assert.equal(limited.headers?.get('retry-after'), '3');
  await assert.rejects(chat.chat.completions.create(params), OpenAI.InternalServerError);
  assert.equal((await chat.chat.completions.create(params)).choices[0]?.message.content, 'x');
});

test('OpenAI: a failure inside the stream: response.failed (Responses), an error payload (Chat)', async (t) => {
  const fake = await startOpenAIModel({
    turns: [{ error: { status: 500, inStream: true, message: 'boom' } }, { text: 'x' }],
  });
  t.after(() => fake.close());
  const client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const failed = await client.responses
    .stream({ model: MODEL, input: 'hi' })
    .finalResponse()
    .then(
      (r) => r,
      (e: unknown) => e,
    );
  // The SDK ends the stream with the failed response (status and error), not an exception.
  assert.ok(!(failed instanceof Error), String(failed));
  assert.equal((failed as OpenAI.Responses.Response).status, 'failed');
  assert.deepEqual((failed as OpenAI.Responses.Response).error, { code: 'server_error', message: 'boom' });

  const chatFake = await startOpenAIModel({
    turns: [{ error: { status: 500, inStream: true, message: 'boom' } }, { text: 'x' }],
  });
  t.after(() => chatFake.close());
  const chat = new OpenAI({ apiKey: chatFake.apiKey, baseURL: chatFake.baseUrl, maxRetries: 0 });
  const stream = await chat.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  await assert.rejects(
    (async () => {
      for await (const _ of stream);
    })(),
    (e: unknown) => e instanceof OpenAI.APIError && e.message.includes('boom'),
  );
});

test('OpenAI: a wrong key is the SDK AuthenticationError with the invalid_api_key code', async (t) => {
  const fake = await startOpenAIModel({ turns: [{ text: 'hi' }] });
  t.after(() => fake.close());
  const wrong = new OpenAI({ apiKey: 'sk-wrong-key-1234', baseURL: fake.baseUrl, maxRetries: 0 });
  const err = await wrong.responses.create({ model: MODEL, input: 'hi' }).then(
    () => assert.fail('401 expected'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof AuthenticationError);
  assert.equal(err.code, 'invalid_api_key');
  assert.equal(err.type, 'invalid_request_error');
  await assert.rejects(wrong.models.list(), AuthenticationError);
  assert.deepEqual(
    fake.requests.map((r) => [r.path, r.status, r.apiKey]),
    [
      ['/v1/responses', 401, 'sk-wrong-key-1234'],
      ['/v1/models', 401, 'sk-wrong-key-1234'],
    ],
  );
});

test("OpenAI Responses: Codex's custom tool calls and their outputs count in the history like function calls", async (t) => {
  const fake = await startOpenAIModel({ turns: [{ text: 'patching' }, { text: 'patched' }] });
  t.after(() => fake.close());
  const client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const response = await client.responses.create({
    model: MODEL,
    input: [
      { role: 'user', content: [{ type: 'input_text', text: 'patch it' }] },
      { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch' },
      { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done!' },
    ],
  });
  assert.equal(response.output_text, 'patched');
  assert.equal(fake.requests[0]?.step, 1);
  assert.deepEqual(fake.requests[0]?.toolResults, [{ id: 'call_p', content: 'Done!' }]);
});

test('OpenAI: a Responses WebSocket upgrade (what Codex tries first) is answered 404 and recorded', async (t) => {
  const fake = await startOpenAIModel({ turns: [{ text: 'x' }] });
  t.after(() => fake.close());
  const url = new URL(fake.baseUrl);
  const status = await new Promise<number | undefined>((resolve, reject) => {
    const req = request({
      host: url.hostname,
      port: url.port,
      path: '/v1/responses',
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        authorization: `Bearer ${fake.apiKey}`,
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('upgrade', () => reject(new Error('the fake must not upgrade')));
    req.on('error', reject);
    req.end();
  });
  assert.equal(status, 404);
  assert.deepEqual(
    fake.requests.map((r) => [r.method, r.path, r.status, r.headers.upgrade]),
    [['GET', '/v1/responses', 404, 'websocket']],
  );
});
