// The server-mode API's routes through `app.request()`: an ApiServer whose turns run a scripted fake CLI (no process),
// so routing, the API key, body limits, error shapes, the streams' framing, the concurrency limit, the timeout, a
// client leaving and the metrics are tested without spawning anything. The process itself (a real CLI, signals,
// sockets) is tested in test/host/server-supervisor.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApiServer, parseServerConfig, type RunCli, serverContext } from './server.ts';
import type { TurnEnd } from './server-turn.ts';
import { prepare, type SupervisorIo } from './supervise.ts';

const KEY = 'sk-test-0123456789abcdef';
const MODEL = 'claude-opus-5-5';
const RECIPE = JSON.stringify({ model: MODEL, permissionMode: 'bypass' });
const auth = { authorization: `Bearer ${KEY}` };
const usage = { input: 10, output: 5, cacheRead: 2, cacheWrite: 1, total: 18 };
const claudeText = (text: string) => ({
  type: 'assistant',
  message: { role: 'assistant', content: [{ type: 'text', text }] },
});
const exited = (code: number, result?: string, sessionId?: string): TurnEnd => ({
  kind: 'exited',
  code,
  result: result === undefined ? {} : { result, usage },
  sessionId,
});

/** An ApiServer over a fake CLI (`runCli`), its key file in `dir`, its log lines in `logs`. */
function apiServer(dir: string, runCli: RunCli, env: Record<string, string> = {}, timeoutMs?: number) {
  const logs: string[] = [];
  const out = { write: () => true, once: () => undefined, on: () => undefined };
  const err = {
    write: (chunk: string | Uint8Array) => {
      logs.push(String(chunk));
      return true;
    },
    once: () => undefined,
    on: () => undefined,
  };
  const io: SupervisorIo = {
    argv: [],
    env: {
      AGENT_SERVER_API_KEY_FILE: join(dir, 'api-key'),
      AGENT_RUN_RECIPE: RECIPE,
      AGENT_MODEL: MODEL,
      AGENT_SERVER_MAX_BODY_BYTES: '4096',
      ...env,
    },
    stdout: out,
    stderr: err,
    now: () => Date.parse('2026-01-01T00:00:00Z'),
    onSignal: () => () => undefined,
  };
  const parsed = parseServerConfig(io.env);
  assert.ok(parsed.ok);
  const config = timeoutMs === undefined ? parsed.value : { ...parsed.value, requestTimeoutMs: timeoutMs };
  const server = new ApiServer(serverContext(prepare(io), config), config, { runCli });
  return { server, app: server.app, logs };
}

const chatBody = (prompt: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: prompt }], ...extra });

const post = (body: string, headers: Record<string, string> = auth, signal?: AbortSignal) =>
  new Request('http://pod/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    ...(signal ? { signal } : {}),
  });

/** A metric's value in the exposition text (0 when absent). */
async function metric(app: ApiServer['app'], series: string): Promise<number> {
  const text = await (await app.request('/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** The counted requests settle after the answer (a stream's when it ends): wait for the count to reach `n`. */
async function counted(app: ApiServer['app'], code: number, n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await metric(app, `agent_server_requests_total{code="${code}"}`)) === n) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.equal(await metric(app, `agent_server_requests_total{code="${code}"}`), n, `requests with ${code}`);
}

describe('the server-mode API (app.request)', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'srv-app-'));
    await writeFile(join(dir, 'api-key'), `${KEY}\n`);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const never: RunCli = async () => assert.fail('no CLI may run');

  it('refuses a missing or wrong key with 401, no detail, connection: close; probes need none', async () => {
    const { app, logs } = apiServer(dir, never);
    for (const headers of [
      {},
      { authorization: 'Bearer nope' },
      { authorization: `Bearer ${KEY}x` },
      { authorization: KEY },
    ]) {
      const res = await app.request(post(chatBody('hi'), headers));
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('connection'), 'close');
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.deepEqual(await res.json(), {
        error: {
          message: 'Invalid API key',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      });
    }
    assert.equal((await app.request('/v1/models')).status, 401);
    const health = await app.request('/healthz');
    assert.deepEqual([health.status, await health.json()], [200, { ok: true, inFlight: 0 }]);
    assert.deepEqual(await (await app.request('/readyz')).json(), { ok: true, inFlight: 0 });
    assert.equal((await app.request('/metrics')).status, 200);
    assert.equal(await metric(app, 'agent_server_requests_total{code="401"}'), 5);
    assert.ok(!logs.join('').includes(KEY), 'the key is never logged');
  });

  it('lists the served model and names it by id; another id is 404 model_not_found', async () => {
    const { app } = apiServer(dir, never);
    const list = await app.request('/v1/models', { headers: auth });
    assert.deepEqual(await list.json(), {
      object: 'list',
      data: [{ id: MODEL, object: 'model', created: 1767225600, owned_by: 'agent-controller' }],
    });
    assert.equal(
      ((await (await app.request(`/v1/models/${MODEL}`, { headers: auth })).json()) as { id: string }).id,
      MODEL,
    );
    const other = await app.request('/v1/models/other%2Fmodel', { headers: auth });
    assert.equal(other.status, 404);
    assert.deepEqual(await other.json(), {
      error: {
        message: 'No such model',
        type: 'invalid_request_error',
        param: 'model',
        code: 'model_not_found',
      },
    });
  });

  it('answers unknown paths 404 and wrong methods 405 in the OpenAI shape; a body left unread closes', async () => {
    const { app } = apiServer(dir, never);
    // A request built here has no framing headers of its own: the ones a client sends say it has a body.
    const missing = await app.request('/v1/embeddings', {
      method: 'POST',
      headers: { ...auth, 'content-length': '2' },
      body: '{}',
    });
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('connection'), 'close', 'its body is not read: the connection closes');
    assert.deepEqual(await missing.json(), {
      error: { message: 'Unknown endpoint', type: 'invalid_request_error', param: null, code: 'unknown_url' },
    });
    const bare = await app.request('/');
    assert.equal(bare.status, 404);
    assert.equal(bare.headers.get('connection'), null, 'no body: the connection stays');
    assert.equal((await app.request('/v1/models/', { headers: auth })).status, 404);
    const wrong = await app.request('/v1/chat/completions', { headers: auth });
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.get('allow'), 'POST');
    assert.equal(((await wrong.json()) as { error: { code: string } }).error.code, 'method_not_allowed');
    assert.equal((await app.request('/v1/models', { method: 'HEAD', headers: auth })).status, 405);
    const probe = await app.request('/healthz', {
      method: 'POST',
      headers: { 'transfer-encoding': 'chunked' },
      body: 'x',
    });
    assert.equal(probe.status, 405);
    assert.equal(probe.headers.get('allow'), 'GET');
    assert.equal(probe.headers.get('connection'), 'close');
    assert.deepEqual(await probe.json(), {
      error: { message: 'Method not allowed', type: 'invalid_request_error', param: null, code: null },
    });
  });

  it('without a usable key answers every API request 503 api_key_unavailable and fails /readyz', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'srv-app-nokey-'));
    try {
      const { app, logs } = apiServer(empty, never);
      for (const headers of [auth, {}]) {
        const res = await app.request(post(chatBody('anyone?'), headers));
        assert.equal(res.status, 503);
        assert.equal(res.headers.get('retry-after'), '5');
        assert.equal(res.headers.get('connection'), 'close');
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'api_key_unavailable');
      }
      const ready = await app.request('/readyz');
      assert.equal(ready.status, 503);
      assert.deepEqual(await ready.json(), {
        ok: false,
        inFlight: 0,
        reason: 'no usable API key: the API key file is missing',
      });
      assert.ok(logs.some((l) => l.includes('"level":"warn"') && l.includes('no usable API key')));
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it("answers with the CLI's final answer, its usage and session, naming the request", async () => {
    const seen: string[] = [];
    const { app, logs } = apiServer(dir, async (_ctx, plan, onLine) => {
      seen.push(plan.delivery.argv.at(-1) ?? '');
      onLine(claudeText('the answer'), 'sess-1');
      return exited(0, 'the answer', 'sess-1');
    });
    const res = await app.request(post(chatBody('hello there')));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const id = res.headers.get('x-request-id') ?? '';
    assert.match(id, /^chatcmpl-[0-9a-f]{24}$/);
    assert.equal(res.headers.get('x-session-id'), 'sess-1');
    assert.deepEqual(await res.json(), {
      id,
      object: 'chat.completion',
      created: 1767225600,
      model: MODEL,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'the answer', refusal: null },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: {
        prompt_tokens: 13,
        completion_tokens: 5,
        total_tokens: 18,
        prompt_tokens_details: { cached_tokens: 2 },
      },
      session_id: 'sess-1',
    });
    assert.deepEqual(seen, ['hello there']);
    const served = logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === '[supervisor] server: request served');
    assert.equal(served?.level, 'info');
    assert.equal(served?.requestId, id);
    assert.equal(served?.status, 200);
    await counted(app, 200, 1);
  });

  it('streams role, deltas, the stop chunk, usage and [DONE] as server-sent events', async () => {
    const { app } = apiServer(dir, async (_ctx, _plan, onLine) => {
      onLine(claudeText('one'), 'sess-2');
      onLine(
        { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't', content: 'x' }] } },
        'sess-2',
      );
      onLine(claudeText('two'), 'sess-2');
      return exited(0, 'two', 'sess-2');
    });
    const res = await app.request(
      post(chatBody('stream me', { stream: true, stream_options: { include_usage: true } })),
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.equal(res.headers.get('x-accel-buffering'), 'no');
    const id = res.headers.get('x-request-id') ?? '';
    const head = { id, object: 'chat.completion.chunk', created: 1767225600, model: MODEL };
    const chunk = (delta: object, finish: string | null, session?: string) =>
      `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(session ? { session_id: session } : {}) })}\n\n`;
    const usageEvent = `data: ${JSON.stringify({ ...head, choices: [], usage: { prompt_tokens: 13, completion_tokens: 5, total_tokens: 18, prompt_tokens_details: { cached_tokens: 2 } }, session_id: 'sess-2' })}\n\n`;
    assert.equal(
      await res.text(),
      [
        chunk({ role: 'assistant', content: '' }, null),
        chunk({ content: 'one' }, null, 'sess-2'),
        chunk({ content: '\n\ntwo' }, null, 'sess-2'),
        chunk({}, 'stop', 'sess-2'),
        usageEvent,
        'data: [DONE]\n\n',
      ].join(''),
    );
    await counted(app, 200, 1);
  });

  it('ends a failed stream with an error event and no [DONE], counted by how it ended (500)', async () => {
    const { app } = apiServer(dir, async () => exited(3));
    const res = await app.request(post(chatBody('fail', { stream: true })));
    assert.equal(res.status, 200, 'the status line is out before the turn runs');
    const events = (await res.text()).split('\n\n').filter((e) => e !== '');
    assert.equal(events.length, 2);
    assert.deepEqual(JSON.parse(events[1]?.slice('data: '.length) ?? ''), {
      error: {
        message: 'The agent CLI exited with code 3',
        type: 'server_error',
        param: null,
        code: 'agent_failed',
      },
    });
    await counted(app, 500, 1);
    assert.equal(await metric(app, 'agent_server_requests_total{code="200"}'), 0);
  });

  it('refuses bodies over the limit with 413 and connection: close: declared, or read past the limit', async () => {
    const { app } = apiServer(dir, never);
    const declared = await app.request(post(chatBody('x'.repeat(5000))));
    assert.equal(declared.status, 413);
    assert.equal(declared.headers.get('connection'), 'close');
    assert.equal(((await declared.json()) as { error: { code: string } }).error.code, 'request_too_large');
    // A chunked body that never ends: refused once it passes the limit, the rest never asked for.
    let pulls = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        controller.enqueue(new Uint8Array(1024).fill(120));
      },
    });
    const chunked = await app.request(
      new Request('http://pod/v1/chat/completions', {
        method: 'POST',
        headers: auth,
        body: endless,
        duplex: 'half',
      } as RequestInit),
    );
    assert.equal(chunked.status, 413);
    assert.equal(chunked.headers.get('connection'), 'close');
    assert.ok(pulls < 10, `read ${pulls} KiB of a 4 KiB limit`);
  });

  it('refuses invalid requests with 400 naming the field, running nothing', async () => {
    const { app } = apiServer(dir, never);
    const cases: [string, string | null, string][] = [
      ['not json', null, 'invalid_json'],
      [JSON.stringify({ messages: [] }), 'messages', 'invalid_request'],
      [chatBody('x', { stream: 'yes' }), 'stream', 'invalid_request'],
      [chatBody('x', { session_id: '-rf' }), 'session_id', 'invalid_request'],
    ];
    for (const [body, param, code] of cases) {
      const res = await app.request(post(body));
      assert.equal(res.status, 400, body);
      const { error } = (await res.json()) as { error: { param: string | null; code: string; type: string } };
      assert.deepEqual([error.type, error.param, error.code], ['invalid_request_error', param, code], body);
      assert.match(res.headers.get('x-request-id') ?? '', /^chatcmpl-/);
    }
  });

  it('lets one of two requests read in the same tick through at a limit of 1, refusing the other 429', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { app, server } = apiServer(
      dir,
      async () => {
        await gate;
        return exited(0, 'done');
      },
      { AGENT_SERVER_CONCURRENCY: '1' },
    );
    const answers = [app.request(post(chatBody('a'))), app.request(post(chatBody('b')))];
    const refused = await Promise.race(answers);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.equal(((await refused.json()) as { error: { type: string } }).error.type, 'rate_limit_exceeded');
    assert.equal(server.inFlight(), 1);
    release();
    const statuses = (await Promise.all(answers)).map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 429]);
    assert.equal(server.inFlight(), 0, 'the slot is given back');
  });

  it('stops the turn of a client that leaves mid-stream, counted as 499, its slot freed', async () => {
    let stopped: string | undefined;
    const { app, server } = apiServer(dir, async (_ctx, plan, onLine) => {
      onLine(claudeText('partial'), undefined);
      stopped = await plan.turn.whenStopped;
      return exited(143);
    });
    const res = await app.request(post(chatBody('stall', { stream: true })));
    const reader = res.body?.getReader();
    assert.ok(reader);
    let text = '';
    while (!text.includes('partial')) text += new TextDecoder().decode((await reader.read()).value);
    assert.equal(server.inFlight(), 1);
    await reader.cancel();
    await counted(app, 499, 1);
    assert.equal(stopped, 'disconnected');
    assert.equal(server.inFlight(), 0);
  });

  it('stops the turn of a client that leaves before a plain answer, counted as 499', async () => {
    const abort = new AbortController();
    let started: () => void = () => undefined;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let stopped: string | undefined;
    const { app, server } = apiServer(dir, async (_ctx, plan) => {
      started();
      stopped = await plan.turn.whenStopped;
      return exited(143);
    });
    const answer = app.request(post(chatBody('stall'), auth, abort.signal));
    await running;
    abort.abort();
    assert.equal((await answer).status, 499);
    assert.equal(stopped, 'disconnected');
    await counted(app, 499, 1);
    assert.equal(server.inFlight(), 0);
  });

  it('stops a turn past the request timeout and answers 504 (a stream: an error event)', async () => {
    const { app } = apiServer(
      dir,
      async (_ctx, plan) => {
        assert.equal(await plan.turn.whenStopped, 'timeout');
        return exited(143);
      },
      {},
      20,
    );
    const plain = await app.request(post(chatBody('slow')));
    assert.equal(plain.status, 504);
    assert.deepEqual(await plain.json(), {
      error: {
        message: 'The turn did not finish within 0.02 s and was stopped',
        type: 'timeout',
        param: null,
        code: 'timeout',
      },
    });
    const streamed = await app.request(post(chatBody('slow', { stream: true })));
    assert.match(await streamed.text(), /"type":"timeout"/);
    await counted(app, 504, 2);
  });

  it('answers a CLI that cannot start 500 agent_not_started; a thrown error 500 Internal error, logged', async () => {
    const notStarted = apiServer(dir, async () => ({ kind: 'not-started' }));
    const res = await notStarted.app.request(post(chatBody('x')));
    assert.equal(res.status, 500);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'agent_not_started');
    const broken = apiServer(dir, async () => {
      throw new Error('boom');
    });
    const thrown = await broken.app.request(post(chatBody('x')));
    assert.equal(thrown.status, 500);
    assert.deepEqual(await thrown.json(), {
      error: { message: 'Internal error', type: 'server_error', param: null, code: null },
    });
    assert.ok(
      broken.logs.some(
        (l) => l.includes('"level":"warn"') && l.includes('[supervisor] server request failed'),
      ),
    );
    assert.equal(broken.server.inFlight(), 0);
  });
});
