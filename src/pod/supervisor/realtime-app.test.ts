// The realtime prompt server's routes through `app.request()`, over a fake session: the token, the paths, body
// limits, the error shapes and the NDJSON framing of a turn. The session itself (turns of a real CLI, close, the
// deadline) is tested in test/host/realtime-supervisor.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../shared/log.ts';
import type { PromptDelivery } from '../../vendors/cli/index.ts';
import { createPromptApp, MAX_PROMPT_BODY_BYTES, type PromptPort, type TurnOutput } from './realtime-app.ts';
import { MAX_SESSION_ARCHIVE_BYTES } from './session-state.ts';

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
    restored: [] as { bytes: number[]; sessionId: string; turns: number }[],
    restoreRefusal: undefined as string | undefined,
  };
  const port: PromptPort = {
    token: TOKEN,
    log: createLogger('info', (line) => logs.push(line)),
    health: () => ({ sessionId: 'sess-1', busy: state.busy, turns: 2, restoring: false }),
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
    sessionState: async () => ({
      ok: true,
      archive: new Uint8Array([31, 139, 8, 0]),
      sessionId: 'sess-1',
      turns: 2,
    }),
    restoreRefusal: () => state.restoreRefusal,
    restoreState: async (archive, sessionId, turns) => {
      state.restored.push({ bytes: [...archive], sessionId, turns });
      return { ok: true, members: 3 };
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
      [200, { ok: true, sessionId: 'sess-1', busy: false, turns: 2, restoring: false }],
    );
    assert.equal(health.headers.get('content-type'), 'application/json');
    for (const [path, method] of [
      ['/healthz', 'HEAD'],
      ['/healthz', 'POST'],
      ['/prompt', 'GET'],
      ['/nothing', 'POST'],
      ['/session/state', 'HEAD'],
      ['/session/state', 'POST'],
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

  it('gives the session state: 200 application/gzip with the session id and turn count, the token required', async () => {
    const { app } = session();
    for (const headers of [{}, { authorization: 'Bearer nope' }]) {
      const res = await app.request('/session/state', { headers });
      assert.deepEqual([res.status, await res.json()], [401, { message: 'unauthorized' }]);
    }
    const res = await app.request('/session/state', { headers: auth });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/gzip');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('x-agent-session-id'), 'sess-1');
    assert.equal(res.headers.get('x-agent-turns'), '2');
    assert.deepEqual([...new Uint8Array(await res.arrayBuffer())], [31, 139, 8, 0]);
  });

  it("answers the session's refusals of a state read as they are: 409 between turns only, 413 past the cap", async () => {
    for (const [status, message] of [
      [409, 'a turn is in flight'],
      [413, 'the session state is larger than the cap (64 MiB)'],
    ] as const) {
      const { app } = session({ sessionState: async () => ({ ok: false, status, message }) });
      const res = await app.request('/session/state', { headers: auth });
      assert.deepEqual([res.status, await res.json()], [status, { message }]);
    }
  });

  const put = (body: Uint8Array, headers: Record<string, string>) =>
    new Request('http://pod/session/state', { method: 'PUT', headers, body });
  const restoreHeaders = {
    ...auth,
    'content-type': 'application/gzip',
    'x-agent-session-id': '0b9d-4e2a_x:1.2',
    'x-agent-turns': '7',
  };

  it('restores: the body, the session id and the turn count go to the session; 200 with what was written', async () => {
    const { app, state } = session();
    const res = await app.request(put(new Uint8Array([1, 2, 3]), restoreHeaders));
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      restored: true,
      sessionId: '0b9d-4e2a_x:1.2',
      turns: 7,
      members: 3,
    });
    assert.deepEqual(state.restored, [{ bytes: [1, 2, 3], sessionId: '0b9d-4e2a_x:1.2', turns: 7 }]);
  });

  it('refuses a restore without the token, of another type, with bad headers, or when the session takes none', async () => {
    const { app, state } = session();
    const cases: [Record<string, string>, number, string][] = [
      [{ ...restoreHeaders, authorization: 'Bearer nope' }, 401, 'unauthorized'],
      [
        { ...restoreHeaders, 'content-type': 'application/x-tar' },
        415,
        'the session state must be sent as application/gzip',
      ],
      [
        { ...restoreHeaders, 'x-agent-session-id': '--dangerously-skip-permissions' },
        400,
        '× x-agent-session-id must be a session id (letters, digits, . _ : -)\n  → at sessionId',
      ],
      [
        { ...restoreHeaders, 'x-agent-session-id': 'a b' },
        400,
        '× x-agent-session-id must be a session id (letters, digits, . _ : -)\n  → at sessionId',
      ],
      [
        { ...restoreHeaders, 'x-agent-turns': '-1' },
        400,
        '× x-agent-turns must be a whole number\n  → at turns',
      ],
      [
        { ...restoreHeaders, 'x-agent-turns': '07' },
        400,
        '× x-agent-turns must be a whole number\n  → at turns',
      ],
    ];
    for (const [headers, status, message] of cases) {
      const res = await app.request(put(new Uint8Array([1]), headers));
      assert.deepEqual([res.status, await res.json()], [status, { message }], JSON.stringify(headers));
    }
    const { 'x-agent-turns': _, ...noTurns } = restoreHeaders;
    const missing = await app.request(put(new Uint8Array([1]), noTurns));
    assert.equal(missing.status, 400);
    state.restoreRefusal = 'this pod was not started to restore a session';
    const refused = await app.request(put(new Uint8Array([1]), restoreHeaders));
    assert.deepEqual(
      [refused.status, await refused.json()],
      [409, { message: 'this pod was not started to restore a session' }],
    );
    assert.equal(refused.headers.get('connection'), 'close', 'the unread body is not kept');
    assert.deepEqual(state.restored, [], 'nothing reached the session');
  });

  it('refuses a restore body past the cap with 413 before reading it, and passes on what the session refused', async () => {
    const { app, state } = session();
    const big = await app.request(
      put(new Uint8Array([1]), {
        ...restoreHeaders,
        'content-length': String(MAX_SESSION_ARCHIVE_BYTES + 1),
      }),
    );
    assert.deepEqual(
      [big.status, await big.json()],
      [413, { message: `the session state is larger than ${MAX_SESSION_ARCHIVE_BYTES} bytes` }],
    );
    assert.deepEqual(state.restored, []);
    for (const [status, message] of [
      [400, 'the member "/etc/passwd" is not a safe relative path'],
      [413, 'the archive holds more than 67108864 bytes'],
      [500, 'EACCES'],
    ] as const) {
      const s = session({ restoreState: async () => ({ ok: false, status, message }) });
      const res = await s.app.request(put(new Uint8Array([1]), restoreHeaders));
      assert.deepEqual([res.status, await res.json()], [status, { message }]);
    }
  });
});
