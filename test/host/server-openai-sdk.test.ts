// The server mode's OpenAI-compatible API called with the official `openai` SDK (issue 25 §2), as the chat front-ends
// and bots README "Serving an agent" promises work with it: /v1/models, a plain and a streamed chat completion (read
// chunk by chunk and through the SDK's own accumulator), and a wrong key as the SDK's AuthenticationError. The real
// `supervisor` subcommand on Node from source around the mock agent CLI as `claude` (server-supervisor.test.ts covers
// the same server on Deno from the bundle, with plain HTTP).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import OpenAI, { AuthenticationError } from 'openai';
import { capture, freePort, waitFor } from './harness.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MOCK = join(ROOT, 'test', 'mock-agent', 'mock-agent.mjs');
const KEY = 'sk-test-sdk-0123456789abcdef0123456789';
const MODEL = 'claude-opus-5-5';
const SESSION = 'sess-sdk-1';
const T = { timeout: 30_000 };

describe('server mode with the official openai SDK', () => {
  let bin: string;
  let proc: ChildProcess;
  let client: OpenAI;
  let stderr: () => string;

  before(async () => {
    bin = await mkdtemp(join(tmpdir(), 'srv-sdk-'));
    await writeFile(join(bin, 'claude'), `#!/bin/sh\nexec "${process.execPath}" "${MOCK}" "$@"\n`);
    await chmod(join(bin, 'claude'), 0o755);
    await writeFile(join(bin, 'api-key'), `${KEY}\n`);
    const port = await freePort();
    proc = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), 'supervisor', '--', 'claude'],
      {
        cwd: ROOT,
        env: {
          PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
          HOME: process.env.HOME ?? '/tmp',
          AGENT_NAME: 'srv',
          POD_NAME: 'srv-pod',
          POD_NAMESPACE: 'ns',
          AGENT_MODEL: MODEL,
          AGENT_EXECUTION: 'server',
          AGENT_SERVER_API_KEY_FILE: join(bin, 'api-key'),
          AGENT_SERVER_PORT: String(port),
          AGENT_POD_IP: '127.0.0.1',
          AGENT_RUN_RECIPE: JSON.stringify({ model: MODEL, permissionMode: 'bypass' }),
          AGENT_EXIT_GRACE_MS: '500',
          MOCK_STYLE: 'claude',
          MOCK_ECHO_PROMPT: '1',
          MOCK_SESSION: SESSION,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    ({ stderr } = capture(proc));
    const url = `http://127.0.0.1:${port}`;
    await waitFor(
      async () => {
        if (proc.exitCode !== null)
          assert.fail(`the supervisor exited early (${proc.exitCode}): ${stderr()}`);
        return (await fetch(`${url}/healthz`).then(
          (r) => r.ok,
          () => false,
        ))
          ? true
          : undefined;
      },
      20_000,
      'the API server',
    );
    client = new OpenAI({ apiKey: KEY, baseURL: `${url}/v1`, maxRetries: 0 });
  });

  after(async () => {
    if (proc !== undefined && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGKILL');
      await exited;
    }
    await rm(bin, { recursive: true, force: true });
  });

  it('models.list and models.retrieve name the served model', T, async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.deepEqual(ids, [MODEL]);
    const one = await client.models.retrieve(MODEL);
    assert.equal(one.id, MODEL);
    assert.equal(one.object, 'model');
  });

  it('chat.completions.create answers with the CLI answer and its usage', T, async () => {
    const completion = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello there' },
      ],
    });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, MODEL);
    assert.equal(completion.choices.length, 1);
    assert.equal(completion.choices[0]?.message.role, 'assistant');
    assert.equal(completion.choices[0]?.message.content, 'echo: hello there');
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
    // The mock's usage: 12 uncached input, 3 cache reads, 2 cache writes, 7 output.
    assert.deepEqual(
      [completion.usage?.prompt_tokens, completion.usage?.completion_tokens, completion.usage?.total_tokens],
      [17, 7, 24],
    );
    assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, 3);
  });

  it(
    'a streamed completion read chunk by chunk: the deltas, one finish, the usage chunk, the end',
    T,
    async () => {
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'stream me' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let content = '';
      const finishes: string[] = [];
      let usage: OpenAI.CompletionUsage | null | undefined;
      let chunks = 0;
      for await (const chunk of stream) {
        chunks++;
        assert.equal(chunk.object, 'chat.completion.chunk');
        for (const choice of chunk.choices) {
          content += choice.delta.content ?? '';
          if (choice.finish_reason !== null) finishes.push(choice.finish_reason);
        }
        if (chunk.usage) usage = chunk.usage;
      }
      assert.ok(chunks >= 3, `several chunks (${chunks})`);
      assert.equal(content, 'echo: stream me');
      assert.deepEqual(finishes, ['stop']);
      assert.deepEqual([usage?.prompt_tokens, usage?.completion_tokens, usage?.total_tokens], [17, 7, 24]);
    },
  );

  it("the SDK's own stream accumulator (chat.completions.stream) ends with the whole answer", T, async () => {
    const runner = client.chat.completions.stream({
      model: MODEL,
      messages: [{ role: 'user', content: 'accumulate me' }],
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    runner.on('content', (delta) => deltas.push(delta));
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices[0]?.message.content, 'echo: accumulate me');
    assert.equal(final.choices[0]?.finish_reason, 'stop');
    assert.equal(deltas.join(''), 'echo: accumulate me');
    assert.equal(await runner.finalContent(), 'echo: accumulate me');
  });

  it(
    'text content parts and parameters the server ignores (max_completion_tokens, temperature, n)',
    T,
    async () => {
      const completion = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'in parts' }] }],
        max_completion_tokens: 100,
        temperature: 0,
        n: 1,
      });
      assert.equal(completion.choices[0]?.message.content, 'echo: in parts');
    },
  );

  // The two mismatches the SDK showed (issue 25 §2), fixed in src/pod/supervisor/openai.ts.
  it(
    "a history with an assistant tool-call message whose content is null (the SDK's ChatCompletionAssistantMessageParam) is answered",
    T,
    async () => {
      const completion = await client.chat.completions.create({
        model: MODEL,
        messages: [
          { role: 'user', content: 'run it' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'ok' },
          { role: 'user', content: 'and now?' },
        ],
      });
      // The mock echoes the prompt: the transcript, without the tool call, which says nothing.
      assert.equal(
        completion.choices[0]?.message.content,
        'echo: User: run it\n\nTool: ok\n\nUser: and now?',
      );
    },
  );

  it(
    "the answer's message carries refusal: null, as the SDK's ChatCompletionMessage type requires",
    T,
    async () => {
      const completion = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'x' }],
      });
      assert.equal(completion.choices[0]?.message.refusal, null);
    },
  );

  it('a wrong key is the SDK AuthenticationError with the invalid_api_key code', T, async () => {
    const wrong = new OpenAI({ apiKey: `${KEY}x`, baseURL: client.baseURL, maxRetries: 0 });
    const err = await wrong.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => assert.fail('401 expected'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof AuthenticationError);
    assert.equal(err.code, 'invalid_api_key');
    await assert.rejects(wrong.models.list(), AuthenticationError);
  });
});
