// The realtime prompt server's routes through `app.request()`, over a fake session: the token, the paths, body
// limits, the error shapes and the NDJSON framing of a turn. The session itself (turns of a real CLI, close, the
// deadline) is tested in test/host/realtime-supervisor.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../shared/log.ts';
import type { PromptDelivery } from '../../vendors/cli/index.ts';
import { createPromptApp, MAX_PROMPT_BODY_BYTES, type PromptPort, type TurnOutput } from './realtime-app.ts';

const TOKEN = 'tok-0123456789abcdef';
const auth = { authorization: `Bearer ${TOKEN}` };

/** A fake session: records what it was asked; `turn` is the output of the turn started last. */
function session(overrides: Partial<PromptPort> = {}) {
  const logs: string[] = [];
  const state = {
    busy: false,
    closed: 0,
    turn: undefined as TurnOutput | undefined,
    prompts: [] as string[],
  };
  const port: PromptPort = {
    token: TOKEN,
    log: createLogger('info', (line) => logs.push(line)),
    health: () => ({ sessionId: 'sess-1', busy: state.busy }),
    refusal: () => (state.busy ? 'a prompt is already in flight' : undefined),
    delivery: (prompt) => {
      state.prompts.push(prompt);
      return { ok: true, value: { argv: ['claude', prompt] } as PromptDelivery };
    },
    startTurn: (_delivery, out) => {
      state.busy = true;
      state.turn = out;
    },
    close: () => {
      state.closed++;
      return { sessionId: 'sess-1' };
    },
    ...overrides,
  };
  return { app: createPromptApp(port), state, logs };
}

const prompt = (body: string, headers: Record<string, string> = auth) =>
  new Request('http://pod/prompt', { method: 'POST', headers, body });

describe('the realtime prompt server (app.request)', () => {
  it('answers health without a token; anything else is 404 not found', async () => {
    const { app } = session();
    const health = await app.request('/healthz');
    assert.deepEqual(
      [health.status, await health.json()],
      [200, { ok: true, sessionId: 'sess-1', busy: false }],
    );
    assert.equal(health.headers.get('content-type'), 'application/json');
    for (const [path, method] of [
      ['/healthz', 'HEAD'],
      ['/healthz', 'POST'],
      ['/prompt', 'GET'],
      ['/nothing', 'POST'],
    ] as const) {
      const res = await app.request(path, { method, headers: auth });
      assert.equal(res.status, 404, `${method} ${path}`);
      if (method !== 'HEAD') assert.deepEqual(await res.json(), { message: 'not found' });
    }
  });

  it('refuses a missing or wrong token with 401 and no detail, starting nothing', async () => {
    const { app, state } = session();
    for (const headers of [
      {},
      { authorization: 'Bearer nope' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: TOKEN },
    ]) {
      const res = await app.request(prompt('{"prompt":"hi"}', headers));
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), { message: 'unauthorized' });
      const close = await app.request('/close', { method: 'POST', headers });
      assert.equal(close.status, 401);
    }
    assert.deepEqual([state.prompts, state.closed], [[], 0]);
  });

  it('refuses bad prompts: 400 for no JSON or no prompt, 413 past the limit, 409 while busy, 400 from the CLI', async () => {
    const { app, state } = session();
    const cases: [string, number, string][] = [
      ['nope', 400, 'the body must be JSON {"prompt": "..."}'],
      ['{"prompt":""}', 400, '× prompt must not be empty\n  → at prompt'],
      [
        JSON.stringify({ prompt: 'x'.repeat(MAX_PROMPT_BODY_BYTES) }),
        413,
        `the prompt request is larger than ${MAX_PROMPT_BODY_BYTES} bytes`,
      ],
    ];
    for (const [body, status, message] of cases) {
      const res = await app.request(prompt(body));
      assert.equal(res.status, status, body.slice(0, 40));
      assert.deepEqual(await res.json(), { message });
    }
    state.busy = true;
    const busy = await app.request(prompt('{"prompt":"later"}'));
    assert.deepEqual([busy.status, await busy.json()], [409, { message: 'a prompt is already in flight' }]);
    const refused = session({ delivery: () => ({ ok: false, error: 'the prompt is too long' }) });
    const cli = await refused.app.request(prompt('{"prompt":"x"}'));
    assert.deepEqual([cli.status, await cli.json()], [400, { message: 'the prompt is too long' }]);
  });

  it("streams a turn's lines back as NDJSON until the turn ends", async () => {
    const { app, state } = session();
    const res = await app.request(prompt('{"prompt":"go"}'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.deepEqual(state.prompts, ['go']);
    state.turn?.line('{"type":"system"}');
    state.turn?.line('{"type":"result"}');
    state.turn?.end();
    state.turn?.line('{"late":true}');
    assert.equal(await res.text(), '{"type":"system"}\n{"type":"result"}\n');
  });

  it('a turn that cannot start ends its stream with the error line', async () => {
    const { app, state } = session();
    const res = await app.request(prompt('{"prompt":"go"}'));
    state.turn?.end('{"type":"error","message":"the agent CLI could not be started"}\n');
    assert.equal(await res.text(), '{"type":"error","message":"the agent CLI could not be started"}\n');
  });

  it('a client that leaves mid-turn drops later lines; the turn goes on', async () => {
    const { app, state } = session();
    const res = await app.request(prompt('{"prompt":"go"}'));
    await res.body?.cancel();
    state.turn?.line('{"after":"leaving"}');
    state.turn?.end();
    assert.equal(state.busy, true, 'nothing stopped the turn');
  });

  it('closes: 200 with the session id and connection: close, the session told once', async () => {
    const { app, state } = session();
    const res = await app.request('/close', { method: 'POST', headers: auth });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('connection'), 'close');
    assert.deepEqual(await res.json(), { closed: true, sessionId: 'sess-1' });
    assert.equal(state.closed, 1);
  });

  it('answers a request whose handling throws 500 internal error, logged as a warning', async () => {
    const { app, logs } = session({
      delivery: () => {
        throw new Error('boom');
      },
    });
    const res = await app.request(prompt('{"prompt":"x"}'));
    assert.deepEqual([res.status, await res.json()], [500, { message: 'internal error' }]);
    const line = JSON.parse(logs[0] ?? '{}') as Record<string, unknown>;
    assert.deepEqual(
      [line.level, line.msg, line.error],
      ['warn', '[supervisor] prompt request failed', 'boom'],
    );
  });
});
