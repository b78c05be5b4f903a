// Contract: @google/genai (the vendor's own client) streams and reads every scripted turn kind from the fake Gemini
// API and gets exactly what the script states; its retries and error handling see Google's codes and error shapes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError, type Content, type FunctionCall, GoogleGenAI, type Part } from '@google/genai';
import { startGeminiModel } from './gemini.ts';

const MODEL = 'gemini-3.5-pro';
const TOOLS = [
  {
    functionDeclarations: [
      { name: 'run_shell_command', description: 'run a command', parametersJsonSchema: { type: 'object' } },
      { name: 'write_file', description: 'write a file', parametersJsonSchema: { type: 'object' } },
    ],
  },
];

/** Everything a stream yields, accumulated: non-thought text, thought text, function calls, the last usage. */
async function collect(stream: AsyncGenerator<import('@google/genai').GenerateContentResponse>) {
  let text = '';
  let thoughts = '';
  const calls: FunctionCall[] = [];
  const parts: Part[] = [];
  let finishReason: string | undefined;
  let usage: unknown;
  for await (const chunk of stream) {
    for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
      parts.push(part);
      if (part.thought === true) thoughts += part.text ?? '';
      else if (part.text !== undefined) text += part.text;
    }
    calls.push(...(chunk.functionCalls ?? []));
    finishReason = chunk.candidates?.[0]?.finishReason ?? finishReason;
    if (chunk.usageMetadata !== undefined) usage = chunk.usageMetadata;
  }
  return { text, thoughts, calls, parts, finishReason, usage };
}

test('Gemini: a streamed conversation (thought + text, a function call, the answer) as the SDK reads it', async (t) => {
  const fake = await startGeminiModel({
    turns: [
      {
        thinking: 'Look first.',
        text: 'Checking the workspace.',
        usage: { input: 90, output: 15, reasoning: 6 },
      },
      { toolCall: { name: 'run_shell_command', input: { command: 'ls -la' }, id: 'call_g1' } },
      { text: 'done', usage: { input: 200, output: 3, cacheRead: 150 } },
    ],
  });
  t.after(() => fake.close());
  // v1beta, as Gemini CLI calls it (the SDK's own default is v1, see the next test).
  const ai = new GoogleGenAI({
    apiKey: fake.apiKey,
    httpOptions: { baseUrl: fake.baseUrl, apiVersion: 'v1beta' },
  });
  const contents: Content[] = [{ role: 'user', parts: [{ text: 'list the workspace' }] }];

  const first = await collect(
    await ai.models.generateContentStream({ model: MODEL, contents, config: { tools: TOOLS } }),
  );
  assert.equal(first.text, 'Checking the workspace.');
  assert.equal(first.thoughts, 'Look first.');
  assert.deepEqual(first.calls, []);
  assert.equal(first.finishReason, 'STOP');
  assert.deepEqual(first.usage, {
    promptTokenCount: 90,
    candidatesTokenCount: 15,
    totalTokenCount: 111,
    thoughtsTokenCount: 6,
  });

  contents.push({ role: 'model', parts: first.parts }, { role: 'user', parts: [{ text: 'go on' }] });
  const second = await collect(
    await ai.models.generateContentStream({ model: MODEL, contents, config: { tools: TOOLS } }),
  );
  assert.deepEqual(second.calls, [{ id: 'call_g1', name: 'run_shell_command', args: { command: 'ls -la' } }]);
  assert.equal(second.text, '');
  assert.deepEqual(second.usage, { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 });

  contents.push(
    { role: 'model', parts: second.parts },
    {
      role: 'user',
      parts: [
        {
          functionResponse: { id: 'call_g1', name: 'run_shell_command', response: { output: 'marker.txt' } },
        },
      ],
    },
  );
  const third = await collect(
    await ai.models.generateContentStream({ model: MODEL, contents, config: { tools: TOOLS } }),
  );
  assert.equal(third.text, 'done');
  assert.deepEqual(third.usage, {
    promptTokenCount: 200,
    candidatesTokenCount: 3,
    totalTokenCount: 203,
    cachedContentTokenCount: 150,
  });

  assert.deepEqual(
    fake.requests.map((r) => [r.method, r.path, r.query.alt, r.model, r.stream, r.step, r.status, r.apiKey]),
    [
      ['POST', `/v1beta/models/${MODEL}:streamGenerateContent`, 'sse', MODEL, true, 0, 200, fake.apiKey],
      ['POST', `/v1beta/models/${MODEL}:streamGenerateContent`, 'sse', MODEL, true, 1, 200, fake.apiKey],
      ['POST', `/v1beta/models/${MODEL}:streamGenerateContent`, 'sse', MODEL, true, 2, 200, fake.apiKey],
    ],
  );
  assert.deepEqual(fake.requests[0]?.tools, ['run_shell_command', 'write_file']);
  assert.deepEqual(fake.requests[2]?.toolResults, [{ id: 'call_g1', content: '{"output":"marker.txt"}' }]);
  assert.equal(fake.requests[0]?.headers['x-goog-api-key'], fake.apiKey);
});

test('Gemini: generateContent (not streamed) with text and a function call; countTokens; models.list; 404 recorded', async (t) => {
  const fake = await startGeminiModel({
    turns: [
      {
        text: 'Writing it.',
        toolCall: { name: 'write_file', input: { path: 'a.txt', content: 'x' } },
        usage: { input: 4, output: 8 },
      },
    ],
    countTokens: 55,
    models: ['gemini-a', 'gemini-b'],
  });
  t.after(() => fake.close());
  const ai = new GoogleGenAI({ apiKey: fake.apiKey, httpOptions: { baseUrl: fake.baseUrl } });
  const response = await ai.models.generateContent({ model: MODEL, contents: 'write a.txt' });
  assert.deepEqual(
    response.candidates?.[0]?.content?.parts?.map((p) => p.text ?? p.functionCall?.name),
    ['Writing it.', 'write_file'],
  );
  assert.deepEqual(response.functionCalls, [
    { id: 'call_fake0', name: 'write_file', args: { path: 'a.txt', content: 'x' } },
  ]);
  assert.deepEqual(response.usageMetadata, {
    promptTokenCount: 4,
    candidatesTokenCount: 8,
    totalTokenCount: 12,
  });
  const count = await ai.models.countTokens({ model: MODEL, contents: 'hi' });
  assert.equal(count.totalTokens, 55);
  const names: string[] = [];
  for await (const m of await ai.models.list()) names.push(String(m.name));
  assert.deepEqual(names, ['models/gemini-a', 'models/gemini-b']);
  await assert.rejects(
    ai.caches.get({ name: 'cachedContents/x' }),
    (e: unknown) => e instanceof ApiError && e.status === 404,
  );
  assert.deepEqual(
    fake.requests.map((r) => [r.method, r.path, r.status]),
    [
      ['POST', `/v1/models/${MODEL}:generateContent`, 200],
      ['POST', `/v1/models/${MODEL}:countTokens`, 200],
      ['GET', '/v1/models', 200],
      ['GET', '/v1/cachedContents/x', 404],
    ],
  );
});

test("Gemini: a 429 is retried by the SDK (retryOptions) and carries Google's RESOURCE_EXHAUSTED shape", async (t) => {
  const fake = await startGeminiModel({
    turns: [{ error: { status: 429, retryAfter: 1 } }, { error: { status: 503 } }, { text: 'ok' }],
  });
  t.after(() => fake.close());
  const once = new GoogleGenAI({ apiKey: fake.apiKey, httpOptions: { baseUrl: fake.baseUrl } });
  const err = await once.models.generateContent({ model: MODEL, contents: 'hi' }).then(
    () => assert.fail('429 expected'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError);
  assert.equal(err.status, 429);
  assert.deepEqual(JSON.parse(err.message), {
    error: {
      code: 429,
      message: 'scripted error 429',
      status: 'RESOURCE_EXHAUSTED',
      details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }],
    },
  });
  const retrying = new GoogleGenAI({
    apiKey: fake.apiKey,
    httpOptions: { baseUrl: fake.baseUrl, retryOptions: { attempts: 2, initialDelay: 0.01, jitter: 0 } },
  });
  const answer = await collect(await retrying.models.generateContentStream({ model: MODEL, contents: 'hi' }));
  assert.equal(answer.text, 'ok');
  assert.deepEqual(
    fake.requests.map((r) => r.status),
    [429, 503, 200],
  );
});

test('Gemini: an error chunk inside the stream is thrown by the SDK', async (t) => {
  const fake = await startGeminiModel({
    turns: [{ error: { status: 500, inStream: true, message: 'boom' } }, { text: 'x' }],
  });
  t.after(() => fake.close());
  const ai = new GoogleGenAI({ apiKey: fake.apiKey, httpOptions: { baseUrl: fake.baseUrl } });
  await assert.rejects(
    collect(await ai.models.generateContentStream({ model: MODEL, contents: 'hi' })),
    /boom/,
  );
});

test('Gemini: a wrong key is 400 API_KEY_INVALID, as Google answers; the key also works as ?key=', async (t) => {
  const fake = await startGeminiModel({ turns: [{ text: 'hi' }] });
  t.after(() => fake.close());
  const wrong = new GoogleGenAI({ apiKey: 'wrong-key', httpOptions: { baseUrl: fake.baseUrl } });
  const err = await wrong.models.generateContent({ model: MODEL, contents: 'hi' }).then(
    () => assert.fail('an auth error expected'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError);
  assert.equal(err.status, 400);
  assert.match(err.message, /API_KEY_INVALID/);
  const res = await fetch(`${fake.baseUrl}/v1beta/models/${MODEL}:generateContent?key=${fake.apiKey}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  });
  assert.equal(res.status, 200);
  const noKey = await fetch(`${fake.baseUrl}/v1beta/models`);
  assert.equal(noKey.status, 403);
  assert.equal(((await noKey.json()) as { error: { status: string } }).error.status, 'PERMISSION_DENIED');
  assert.deepEqual(
    fake.requests.map((r) => [r.status, r.apiKey]),
    [
      [400, 'wrong-key'],
      [200, fake.apiKey],
      [403, undefined],
    ],
  );
});
