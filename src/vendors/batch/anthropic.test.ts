import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { startFakeAnthropic } from '../../../test/support/fake-vendors/anthropic.ts';
import type { FakeVendorServer } from '../../../test/support/fake-vendors/types.ts';
import { pollUntil } from '../../../test/support/poll.ts';
import type { Result } from '../../shared/result.ts';
import { classifyEvent } from '../cli/terminal.ts';
import { ANTHROPIC_VERSION, anthropicBatches } from './anthropic.ts';
import type { BatchError, BatchOutcome, BatchRequest, RenderContext, VendorCall } from './port.ts';
import { LIST_PAGE_SIZE } from './port.ts';
import {
  CANCELED_MESSAGE,
  type ClaudeBatchMessage,
  EXPIRED_MESSAGE,
  REFUSAL_MESSAGE,
  renderClaudeLines,
} from './render-claude.ts';

const SESSION = '0b7c2a52-9f0e-4c55-a1b9-3f6f0d2c9e11';
const MODEL = 'claude-opus-5-5';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const ctx = (over: Partial<RenderContext> = {}): RenderContext => ({
  sessionId: SESSION,
  model: MODEL,
  prompt: 'Say hello',
  structured: false,
  durationMs: 4321,
  ...over,
});

const message = (over: Partial<ClaudeBatchMessage> = {}): ClaudeBatchMessage => ({
  id: 'msg_01',
  type: 'message',
  role: 'assistant',
  model: MODEL,
  content: [
    { type: 'thinking', thinking: 'hmm', signature: 's' },
    { type: 'text', text: 'Hello' },
    { type: 'text', text: ' world' },
  ],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 10, output_tokens: 20, cache_read_input_tokens: 0, service_tier: 'batch' },
  ...over,
});

type Line = Record<string, unknown>;
const parseLines = (outcome: BatchOutcome): Line[] => outcome.lines.map((l) => JSON.parse(l) as Line);

function expectOk<T>(result: Result<T, BatchError>): T {
  if (!result.ok) assert.fail(`expected ok, got ${JSON.stringify(result.error)}`);
  return result.value;
}

function expectErr<T>(result: Result<T, BatchError>): BatchError {
  if (result.ok) assert.fail(`expected an error, got ${JSON.stringify(result.value)}`);
  return result.error;
}

describe('renderClaudeLines', () => {
  it('renders a success as init, assistant and a success result', () => {
    const msg = message();
    const outcome = renderClaudeLines({ type: 'succeeded', message: msg }, ctx());
    assert.equal(outcome.kind, 'succeeded');
    assert.equal(outcome.lines.length, 3);
    for (const line of outcome.lines) assert.ok(!line.includes('\n'));
    const [init, assistant, result] = parseLines(outcome);
    assert.deepEqual(
      { ...init, uuid: undefined },
      {
        type: 'system',
        subtype: 'init',
        session_id: SESSION,
        uuid: undefined,
        cwd: '/',
        model: MODEL,
        tools: [],
        mcp_servers: [],
        permissionMode: 'default',
        slash_commands: [],
        apiKeySource: 'ANTHROPIC_API_KEY',
        claude_code_version: 'batch',
        output_style: 'default',
        skills: [],
        plugins: [],
        agents: [],
      },
    );
    assert.equal(assistant?.type, 'assistant');
    assert.deepEqual(assistant?.message, msg);
    assert.equal(assistant?.session_id, SESSION);
    assert.equal(assistant?.parent_tool_use_id, null);
    assert.equal(result?.type, 'result');
    assert.equal(result?.subtype, 'success');
    assert.equal(result?.is_error, false);
    assert.equal(result?.result, 'Hello world');
    assert.deepEqual(result?.usage, msg.usage);
    assert.equal(result?.num_turns, 1);
    assert.equal(result?.total_cost_usd, 0);
    assert.equal(result?.duration_ms, 4321);
    assert.equal(result?.stop_reason, 'end_turn');
    assert.equal(result?.session_id, SESSION);
    assert.ok(!('structured_output' in (result ?? {})));
    assert.ok(!('errors' in (result ?? {})));
  });

  it('is deterministic: same input, same lines; distinct UUID-shaped line ids per session', () => {
    const a = renderClaudeLines({ type: 'succeeded', message: message() }, ctx());
    const b = renderClaudeLines({ type: 'succeeded', message: message() }, ctx());
    assert.deepEqual(a.lines, b.lines);
    const uuids = parseLines(a).map((l) => l.uuid);
    for (const id of uuids) assert.match(String(id), UUID);
    assert.equal(new Set(uuids).size, 3);
    const other = parseLines(
      renderClaudeLines({ type: 'succeeded', message: message() }, ctx({ sessionId: 'x' })),
    );
    assert.notEqual(other[0]?.uuid, uuids[0]);
  });

  it('classifies as the Claude CLI stream: init starts the session, the result line ends it', () => {
    const ok = parseLines(renderClaudeLines({ type: 'succeeded', message: message() }, ctx()));
    assert.deepEqual(classifyEvent('claude', ok[0]), { kind: 'started', sessionId: SESSION });
    assert.deepEqual(classifyEvent('claude', ok[2]), { kind: 'terminal-success' });
    const failed = parseLines(renderClaudeLines({ type: 'expired' }, ctx()));
    assert.deepEqual(classifyEvent('claude', failed.at(-1)), { kind: 'terminal-failure' });
  });

  it('a max_tokens stop still succeeds', () => {
    const outcome = renderClaudeLines(
      { type: 'succeeded', message: message({ stop_reason: 'max_tokens' }) },
      ctx(),
    );
    assert.equal(outcome.kind, 'succeeded');
    assert.equal(parseLines(outcome)[2]?.stop_reason, 'max_tokens');
  });

  it('adds structured_output when a schema was sent and the text is JSON', () => {
    const msg = message({ content: [{ type: 'text', text: '{"answer":42,"tags":["a"]}' }] });
    const outcome = renderClaudeLines({ type: 'succeeded', message: msg }, ctx({ structured: true }));
    assert.equal(outcome.kind, 'succeeded');
    const result = parseLines(outcome)[2];
    assert.deepEqual(result?.structured_output, { answer: 42, tags: ['a'] });
    assert.equal(result?.result, '{"answer":42,"tags":["a"]}');
  });

  it('a structured run whose text is not JSON succeeds without structured_output', () => {
    const msg = message({ content: [{ type: 'text', text: 'not json {' }] });
    const outcome = renderClaudeLines({ type: 'succeeded', message: msg }, ctx({ structured: true }));
    assert.equal(outcome.kind, 'succeeded');
    const result = parseLines(outcome)[2];
    assert.ok(!('structured_output' in (result ?? {})));
    assert.equal(result?.result, 'not json {');
  });

  it('never parses JSON text into structured_output without a schema', () => {
    const msg = message({ content: [{ type: 'text', text: '{"a":1}' }] });
    const result = parseLines(renderClaudeLines({ type: 'succeeded', message: msg }, ctx()))[2];
    assert.ok(!('structured_output' in (result ?? {})));
  });

  it('renders an errored request as init and an error result', () => {
    const outcome = renderClaudeLines(
      {
        type: 'errored',
        error: {
          type: 'error',
          error: { type: 'invalid_request_error', message: 'prompt is too long' },
          request_id: 'req_1',
        },
      },
      ctx(),
    );
    const expected = 'batch request failed: invalid_request_error: prompt is too long';
    assert.equal(outcome.kind, 'failed');
    assert.equal(outcome.kind === 'failed' ? outcome.message : '', expected);
    const lines = parseLines(outcome);
    assert.equal(lines.length, 2);
    assert.equal(lines[0]?.subtype, 'init');
    const result = lines[1];
    assert.equal(result?.type, 'result');
    assert.equal(result?.subtype, 'error_during_execution');
    assert.equal(result?.is_error, true);
    assert.deepEqual(result?.errors, [expected]);
    assert.equal(result?.session_id, SESSION);
    assert.ok(!('result' in (result ?? {})));
  });

  for (const [type, expected] of [
    ['expired', EXPIRED_MESSAGE],
    ['canceled', CANCELED_MESSAGE],
  ] as const) {
    it(`renders a ${type} request as a failure: ${expected}`, () => {
      const outcome = renderClaudeLines({ type }, ctx());
      assert.deepEqual(
        outcome.kind === 'failed' ? { kind: outcome.kind, message: outcome.message } : outcome,
        {
          kind: 'failed',
          message: expected,
        },
      );
      const lines = parseLines(outcome);
      assert.deepEqual(
        lines.map((l) => [l.type, l.subtype]),
        [
          ['system', 'init'],
          ['result', 'error_during_execution'],
        ],
      );
      assert.deepEqual(lines[1]?.errors, [expected]);
      assert.equal(lines[1]?.is_error, true);
    });
  }

  it('renders a refusal as a failure that keeps the assistant line', () => {
    const msg = message({ content: [{ type: 'text', text: 'I cannot help' }], stop_reason: 'refusal' });
    const outcome = renderClaudeLines({ type: 'succeeded', message: msg }, ctx());
    assert.equal(outcome.kind, 'failed');
    assert.equal(outcome.kind === 'failed' ? outcome.message : '', REFUSAL_MESSAGE);
    const lines = parseLines(outcome);
    assert.deepEqual(
      lines.map((l) => l.type),
      ['system', 'assistant', 'result'],
    );
    assert.deepEqual(lines[1]?.message, msg);
    assert.equal(lines[2]?.subtype, 'error_during_execution');
    assert.equal(lines[2]?.is_error, true);
    assert.equal(lines[2]?.stop_reason, 'refusal');
    assert.deepEqual(lines[2]?.errors, [REFUSAL_MESSAGE]);
    assert.ok(!('result' in (lines[2] ?? {})));
  });
});

// ---- HTTP level ----

interface Captured {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
}

/** Wraps a fetch and records what the adapter sent (headers included, which the fake never records). */
function capturing(inner: typeof fetch): { fetch: typeof fetch; calls: Captured[] } {
  const calls: Captured[] = [];
  const wrapped: typeof fetch = (input, init) => {
    calls.push({
      method: init?.method ?? 'GET',
      url: String(input),
      headers: { ...(init?.headers as Record<string, string>) },
    });
    return inner(input, init);
  };
  return { fetch: wrapped, calls };
}

/** A fetch answering from a routing function (for answers the fake never gives). */
function routed(route: (method: string, url: URL) => Response): { fetch: typeof fetch; calls: Captured[] } {
  return capturing(async (input, init) => route(init?.method ?? 'GET', new URL(String(input))));
}

const jsonResponse = (status: number, body: unknown, headers: Record<string, string> = {}): Response =>
  new Response(typeof body === 'string' ? body : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

const batchJson = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  type: 'message_batch',
  processing_status: 'ended',
  request_counts: { processing: 0, succeeded: 1, errored: 0, canceled: 0, expired: 0 },
  ended_at: new Date().toISOString(),
  created_at: new Date().toISOString(),
  expires_at: new Date(Date.now() + 86_400_000).toISOString(),
  archived_at: null,
  cancel_initiated_at: null,
  results_url: null,
  ...over,
});

const request = (over: Partial<BatchRequest> = {}): BatchRequest => ({
  customId: 'run-0b7c2a52-9f0e-4c55-a1b9-3f6f0d2c9e11',
  label: 'default/hello',
  model: MODEL,
  prompt: 'Say hello',
  maxTokens: 16000,
  ...over,
});

describe('anthropicBatches', () => {
  let fake: FakeVendorServer;
  let sleeps: number[] = [];
  const call = (over: Partial<VendorCall> = {}): VendorCall => ({
    apiKey: fake.apiKey,
    baseUrl: fake.baseUrl,
    fetch: globalThis.fetch,
    timeoutMs: 5000,
    attempts: 3,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...over,
  });
  const posts = (path: string) => fake.requests.filter((r) => r.method === 'POST' && r.path === path);

  before(async () => {
    fake = await startFakeAnthropic({ apiKey: 'sk-ant-test-secret-0123456789' });
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.reset();
    sleeps = [];
  });

  describe('submit', () => {
    it('creates a one-request batch with exactly the documented body and headers', async () => {
      const cap = capturing(globalThis.fetch);
      const submitted = expectOk(await anthropicBatches.submit(request(), call({ fetch: cap.fetch })));
      assert.match(submitted.id, /^msgbatch_/);
      assert.equal(cap.calls.length, 1);
      assert.equal(cap.calls[0]?.method, 'POST');
      assert.equal(cap.calls[0]?.url, `${fake.baseUrl}/v1/messages/batches`);
      assert.deepEqual(cap.calls[0]?.headers, {
        'x-api-key': fake.apiKey,
        'anthropic-version': '2026-10-21',
        'content-type': 'application/json',
      });
      const recorded = posts('/v1/messages/batches');
      assert.equal(recorded.length, 1);
      assert.equal(recorded[0]?.authorized, true);
      assert.ok(!JSON.stringify(fake.requests).includes(fake.apiKey));
      assert.deepEqual(JSON.parse(recorded[0]?.body ?? ''), {
        requests: [
          {
            custom_id: 'run-0b7c2a52-9f0e-4c55-a1b9-3f6f0d2c9e11',
            params: {
              model: MODEL,
              max_tokens: 16000,
              messages: [{ role: 'user', content: 'Say hello' }],
            },
          },
        ],
      });
      const batches = fake.batches();
      assert.equal(batches.length, 1);
      assert.deepEqual(
        { id: batches[0]?.id, state: batches[0]?.state, customId: batches[0]?.customId },
        { id: submitted.id, state: 'pending', customId: request().customId },
      );
      assert.equal(ANTHROPIC_VERSION, '2026-10-21');
    });

    it('sends output_config.format only with a schema, and never sampling parameters', async () => {
      const schema = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false };
      expectOk(await anthropicBatches.submit(request({ schema }), call()));
      const body = JSON.parse(posts('/v1/messages/batches')[0]?.body ?? '') as {
        requests: { params: Record<string, unknown> }[];
      };
      const params = body.requests[0]?.params ?? {};
      assert.deepEqual(params.output_config, { format: { type: 'json_schema', schema } });
      assert.deepEqual(Object.keys(params).sort(), ['max_tokens', 'messages', 'model', 'output_config']);
    });

    it('maps a wrong key to rejected 401 with the vendor message and never the key', async () => {
      const wrongKey = 'sk-ant-wrong-key-abcdef987654';
      const e = expectErr(await anthropicBatches.submit(request(), call({ apiKey: wrongKey })));
      assert.deepEqual(e, {
        kind: 'rejected',
        status: 401,
        type: 'authentication_error',
        message: 'invalid x-api-key',
      });
      assert.ok(!JSON.stringify(e).includes(wrongKey));
      assert.equal(fake.requests[0]?.authorized, false);
      assert.equal(fake.batches().length, 0);
    });

    it('scrubs the key should the vendor echo it in an error', async () => {
      const key = 'sk-ant-echoed-key-55555555';
      const r = routed(() =>
        jsonResponse(403, {
          type: 'error',
          error: { type: 'permission_error', message: `key ${key} may not use batches` },
        }),
      );
      const e = expectErr(await anthropicBatches.submit(request(), call({ apiKey: key, fetch: r.fetch })));
      assert.equal(e.kind, 'rejected');
      assert.ok(!JSON.stringify(e).includes(key));
      assert.match(e.kind === 'rejected' ? e.message : '', /\[redacted\]/);
    });

    it('retries a 429 on create (nothing was processed), honouring retry-after', async () => {
      fake.inject({ method: 'POST', path: /^\/v1\/messages\/batches$/, status: 429, retryAfterSeconds: 3 });
      const submitted = expectOk(await anthropicBatches.submit(request(), call()));
      assert.deepEqual(sleeps, [3000]);
      assert.equal(posts('/v1/messages/batches').length, 2);
      assert.deepEqual(
        fake.batches().map((b) => b.id),
        [submitted.id],
      );
    });

    it('does not retry a 500 on create', async () => {
      fake.inject({ method: 'POST', status: 500, times: 3 });
      const e = expectErr(await anthropicBatches.submit(request(), call()));
      assert.equal(e.kind, 'unavailable');
      assert.equal(e.kind === 'unavailable' ? e.status : 0, 500);
      assert.equal(posts('/v1/messages/batches').length, 1);
      assert.deepEqual(sleeps, []);
    });

    it('does not retry a network failure on create', async () => {
      let attempts = 0;
      const failing: typeof fetch = async () => {
        attempts++;
        throw new TypeError('fetch failed: ECONNRESET');
      };
      const e = expectErr(await anthropicBatches.submit(request(), call({ fetch: failing })));
      assert.equal(e.kind, 'network');
      assert.equal(attempts, 1);
    });

    it('a create whose answer was lost leaves a batch that find reports undecided, not absent', async () => {
      const since = new Date();
      fake.inject({ method: 'POST', status: 502, afterEffect: true });
      const e = expectErr(await anthropicBatches.submit(request(), call()));
      assert.equal(e.kind, 'unavailable');
      const [created] = fake.batches();
      assert.ok(created);
      const found = expectOk(await anthropicBatches.find(request().customId, since, call()));
      assert.deepEqual(found, { kind: 'undecided', candidates: [created.id] });
    });

    it('does not retry a create whose answer timed out (the batch exists at the vendor)', async () => {
      // The answer comes long after the deadline, and the deadline leaves the request time to reach the fake even
      // on a loaded machine (50 ms did not: the request never arrived, and its batch then showed up in the next test).
      fake.inject({ method: 'POST', status: 200, afterEffect: true, delayMs: 4000 });
      const e = expectErr(await anthropicBatches.submit(request(), call({ timeoutMs: 1000 })));
      assert.equal(e.kind, 'network');
      assert.match(e.kind === 'network' ? e.message : '', /no answer within 1000 ms/);
      assert.equal(posts('/v1/messages/batches').length, 1);
      assert.equal(fake.batches().length, 1);
    });

    it('answers protocol for a create answer without an id', async () => {
      const r = routed(() => jsonResponse(200, { type: 'message_batch' }));
      const e = expectErr(await anthropicBatches.submit(request(), call({ fetch: r.fetch })));
      assert.equal(e.kind, 'protocol');
    });
  });

  describe('check', () => {
    async function submitted(over: Partial<BatchRequest> = {}): Promise<string> {
      return expectOk(await anthropicBatches.submit(request(over), call())).id;
    }

    it('is inProgress until the batch ended, also while canceling', async () => {
      const id = await submitted();
      assert.deepEqual(expectOk(await anthropicBatches.check(id, ctx(), call())), { kind: 'inProgress', id });
      expectOk(await anthropicBatches.cancel(id, call()));
      assert.equal(fake.batches().find((b) => b.id === id)?.vendorState, 'canceling');
      assert.deepEqual(expectOk(await anthropicBatches.check(id, ctx(), call())), { kind: 'inProgress', id });
    });

    it('reads and renders the results of an ended batch with the same headers', async () => {
      const id = await submitted();
      fake.finish(id, { kind: 'succeeded', text: 'Hi there' });
      const cap = capturing(globalThis.fetch);
      const state = expectOk(await anthropicBatches.check(id, ctx(), call({ fetch: cap.fetch })));
      assert.equal(state.kind, 'ended');
      const outcome = state.kind === 'ended' ? state.outcome : assert.fail('not ended');
      assert.equal(outcome.kind, 'succeeded');
      const lines = parseLines(outcome);
      assert.equal(lines.length, 3);
      assert.equal(lines[2]?.result, 'Hi there');
      assert.equal((lines[2]?.usage as Record<string, unknown> | undefined)?.service_tier, 'batch');
      const assistant = lines[1]?.message as { content: { type: string }[] };
      assert.deepEqual(
        assistant.content.map((b) => b.type),
        ['thinking', 'text'],
      );
      assert.deepEqual(
        cap.calls.map((c) => [c.method, new URL(c.url).pathname]),
        [
          ['GET', `/v1/messages/batches/${id}`],
          ['GET', `/v1/messages/batches/${id}/results`],
        ],
      );
      for (const c of cap.calls) {
        assert.deepEqual(c.headers, { 'x-api-key': fake.apiKey, 'anthropic-version': '2026-10-21' });
      }
      // Re-checking renders byte-identical lines (status.output stays stable across polls).
      const again = expectOk(await anthropicBatches.check(id, ctx(), call()));
      assert.deepEqual(again, state);
    });

    it('renders structured output from the echo of a schema run', async () => {
      const id = await submitted({ schema: { type: 'object' } });
      const prompt = fake.batches()[0]?.prompt ?? '';
      fake.finish(id, { kind: 'succeeded', text: JSON.stringify({ echo: prompt }) });
      const state = expectOk(await anthropicBatches.check(id, ctx({ structured: true }), call()));
      const outcome = state.kind === 'ended' ? state.outcome : assert.fail('not ended');
      assert.deepEqual(parseLines(outcome)[2]?.structured_output, { echo: 'Say hello' });
    });

    const failures = [
      [
        { kind: 'errored', message: 'prompt is too long' },
        'batch request failed: invalid_request_error: prompt is too long',
      ],
      [{ kind: 'expired' }, EXPIRED_MESSAGE],
      [{ kind: 'cancelled' }, CANCELED_MESSAGE],
      [{ kind: 'refused' }, REFUSAL_MESSAGE],
      [{ kind: 'batchFailed', message: 'boom' }, 'batch request failed: invalid_request_error: boom'],
    ] as const;
    for (const [outcome, expected] of failures) {
      it(`maps a ${outcome.kind} result to a failure: ${expected}`, async () => {
        const id = await submitted();
        fake.finish(id, outcome);
        const state = expectOk(await anthropicBatches.check(id, ctx(), call()));
        const rendered = state.kind === 'ended' ? state.outcome : assert.fail('not ended');
        assert.equal(rendered.kind, 'failed');
        assert.equal(rendered.kind === 'failed' ? rendered.message : '', expected);
        assert.equal(parseLines(rendered).at(-1)?.is_error, true);
      });
    }

    it('retries a 429 with retry-after and a 500 on the (idempotent) poll', async () => {
      const id = await submitted();
      fake.inject({ method: 'GET', status: 429, retryAfterSeconds: 2 });
      fake.inject({ method: 'GET', status: 500 });
      assert.deepEqual(expectOk(await anthropicBatches.check(id, ctx(), call())), { kind: 'inProgress', id });
      assert.equal(sleeps.length, 2);
      assert.equal(sleeps[0], 2000);
      assert.equal(fake.requests.filter((r) => r.method === 'GET').length, 3);
    });

    it('reports unavailable once the retries are spent', async () => {
      const id = await submitted();
      fake.inject({ method: 'GET', status: 529, times: 3 });
      const e = expectErr(await anthropicBatches.check(id, ctx(), call()));
      assert.equal(e.kind, 'unavailable');
      assert.equal(e.kind === 'unavailable' ? e.status : 0, 529);
    });

    it('reads results from the default path when results_url is null or on another origin', async () => {
      for (const resultsUrl of [null, 'https://elsewhere.example/v1/messages/batches/msgbatch_x/results']) {
        const line = {
          custom_id: 'run-x',
          result: { type: 'succeeded', message: message({ content: [{ type: 'text', text: 'ok' }] }) },
        };
        const r = routed((_method, url) =>
          url.pathname.endsWith('/results')
            ? new Response(`\n${JSON.stringify(line)}\n`, { status: 200 })
            : jsonResponse(200, batchJson('msgbatch_x', { results_url: resultsUrl })),
        );
        const state = expectOk(
          await anthropicBatches.check(
            'msgbatch_x',
            ctx(),
            call({ fetch: r.fetch, baseUrl: 'http://base.test' }),
          ),
        );
        assert.equal(state.kind === 'ended' ? state.outcome.kind : '', 'succeeded');
        assert.equal(r.calls[1]?.url, 'http://base.test/v1/messages/batches/msgbatch_x/results');
      }
    });

    it('answers protocol for an unknown batch shape or results without a valid line', async () => {
      const noStatus = routed(() => jsonResponse(200, { id: 'msgbatch_x' }));
      assert.equal(
        expectErr(await anthropicBatches.check('msgbatch_x', ctx(), call({ fetch: noStatus.fetch }))).kind,
        'protocol',
      );
      const badResults = routed((_m, url) =>
        url.pathname.endsWith('/results')
          ? new Response('{"custom_id":"a","result":{"type":"mystery"}}\n', { status: 200 })
          : jsonResponse(200, batchJson('msgbatch_x')),
      );
      assert.equal(
        expectErr(await anthropicBatches.check('msgbatch_x', ctx(), call({ fetch: badResults.fetch }))).kind,
        'protocol',
      );
    });

    it('an unknown batch is rejected 404', async () => {
      const e = expectErr(await anthropicBatches.check('msgbatch_nope', ctx(), call()));
      assert.deepEqual(e.kind === 'rejected' ? [e.status, e.type] : e, [404, 'not_found_error']);
    });
  });

  describe('cancel', () => {
    it('cancels an in-progress batch, and is ok for an ended or unknown one', async () => {
      const { id } = expectOk(await anthropicBatches.submit(request(), call()));
      expectOk(await anthropicBatches.cancel(id, call()));
      assert.equal(fake.batches()[0]?.state, 'cancelling');
      fake.finish(id, { kind: 'cancelled' });
      expectOk(await anthropicBatches.cancel(id, call()));
      expectOk(await anthropicBatches.cancel('msgbatch_unknown', call()));
      assert.equal(posts(`/v1/messages/batches/${id}/cancel`).length, 2);
    });

    it('passes other rejections on', async () => {
      const e = expectErr(await anthropicBatches.cancel('msgbatch_x', call({ apiKey: 'wrong-key-123456' })));
      assert.equal(e.kind === 'rejected' ? e.status : 0, 401);
    });
  });

  describe('cleanup', () => {
    it('cancels first (pending), deletes once ended (done), and a gone batch is done', async () => {
      const { id } = expectOk(await anthropicBatches.submit(request(), call()));
      const first = expectOk(await anthropicBatches.cleanup(id, call()));
      assert.deepEqual(first, {
        kind: 'pending',
        detail: 'cancel requested; Anthropic deletes a batch only once it has ended',
      });
      assert.equal(fake.batches()[0]?.state, 'cancelling');
      assert.equal(expectOk(await anthropicBatches.cleanup(id, call())).kind, 'pending');
      assert.equal(posts(`/v1/messages/batches/${id}/cancel`).length, 1, 'no second cancel while canceling');
      fake.finish(id, { kind: 'cancelled' });
      assert.deepEqual(expectOk(await anthropicBatches.cleanup(id, call())), { kind: 'done' });
      assert.equal(fake.batches()[0]?.deleted, true);
      assert.equal(fake.requests.filter((r) => r.method === 'DELETE').length, 1);
      assert.deepEqual(expectOk(await anthropicBatches.cleanup(id, call())), { kind: 'done' });
      assert.deepEqual(expectOk(await anthropicBatches.cleanup('msgbatch_unknown', call())), {
        kind: 'done',
      });
    });

    it('a DELETE answered 404 counts as done', async () => {
      const r = routed((method) =>
        method === 'DELETE'
          ? jsonResponse(404, { type: 'error', error: { type: 'not_found_error', message: 'gone' } })
          : jsonResponse(200, batchJson('msgbatch_x')),
      );
      assert.deepEqual(expectOk(await anthropicBatches.cleanup('msgbatch_x', call({ fetch: r.fetch }))), {
        kind: 'done',
      });
      assert.deepEqual(
        r.calls.map((c) => c.method),
        ['GET', 'DELETE'],
      );
    });
  });

  describe('find', () => {
    const customId = request().customId;

    it('is absent when nothing was submitted, or only for other requests', async () => {
      const since = new Date();
      assert.deepEqual(expectOk(await anthropicBatches.find(customId, since, call())), { kind: 'absent' });
      const { id } = expectOk(await anthropicBatches.submit(request({ customId: 'run-other' }), call()));
      fake.finish(id, { kind: 'succeeded', text: 'x' });
      assert.deepEqual(expectOk(await anthropicBatches.find(customId, since, call())), { kind: 'absent' });
    });

    it('is undecided while a batch in the window has not ended', async () => {
      const since = new Date();
      const { id } = expectOk(await anthropicBatches.submit(request(), call()));
      assert.deepEqual(expectOk(await anthropicBatches.find(customId, since, call())), {
        kind: 'undecided',
        candidates: [id],
      });
    });

    it('finds an ended batch by the custom id of its result line', async () => {
      const since = new Date();
      const { id } = expectOk(await anthropicBatches.submit(request(), call()));
      fake.finish(id, { kind: 'succeeded', text: 'x' });
      assert.deepEqual(expectOk(await anthropicBatches.find(customId, since, call())), {
        kind: 'found',
        id,
        duplicates: [],
      });
    });

    it('reports the oldest confirmed batch with the others as duplicates', async () => {
      const since = new Date();
      const a = expectOk(await anthropicBatches.submit(request(), call())).id;
      const b = expectOk(await anthropicBatches.submit(request(), call())).id;
      const pending = expectOk(await anthropicBatches.submit(request(), call())).id;
      fake.finish(a, { kind: 'succeeded', text: 'x' });
      fake.finish(b, { kind: 'expired' });
      const found = expectOk(await anthropicBatches.find(customId, since, call()));
      assert.deepEqual(found, { kind: 'found', id: a, duplicates: [b] });
      assert.ok(!fake.requests.some((r) => r.path.includes(`${pending}/results`)));
    });

    it('ignores batches created before since minus 60 s', async () => {
      const { id } = expectOk(await anthropicBatches.submit(request(), call()));
      fake.finish(id, { kind: 'succeeded', text: 'x' });
      const since = new Date(Date.now() + 120_000);
      assert.deepEqual(expectOk(await anthropicBatches.find(customId, since, call())), { kind: 'absent' });
      assert.ok(!fake.requests.some((r) => r.path.endsWith('/results')));
      const skewed = new Date(Date.now() + 30_000);
      assert.equal(expectOk(await anthropicBatches.find(customId, skewed, call())).kind, 'found');
    });

    it('walks list pages with after_id', async () => {
      const since = new Date();
      const target = expectOk(await anthropicBatches.submit(request(), call())).id;
      fake.finish(target, { kind: 'succeeded', text: 'x' });
      for (let i = 0; i < LIST_PAGE_SIZE + 4; i++) {
        expectOk(await anthropicBatches.submit(request({ customId: `run-other-${i}` }), call()));
      }
      const found = expectOk(await anthropicBatches.find(customId, since, call()));
      assert.equal(found.kind, 'found');
      assert.equal(found.kind === 'found' ? found.id : '', target);
      const lists = fake.requests.filter(
        (r) => r.method === 'GET' && r.path.startsWith('/v1/messages/batches?'),
      );
      assert.equal(lists.length, 2);
      assert.equal(lists[0]?.path, `/v1/messages/batches?limit=${LIST_PAGE_SIZE}`);
      assert.match(lists[1]?.path ?? '', /[?&]after_id=msgbatch_/);
    });

    it('skips batches that do not hold exactly one request', async () => {
      const r = routed(() =>
        jsonResponse(200, {
          data: [
            batchJson('msgbatch_many', {
              request_counts: { processing: 0, succeeded: 2, errored: 0, canceled: 0, expired: 0 },
            }),
          ],
          has_more: false,
          first_id: 'msgbatch_many',
          last_id: 'msgbatch_many',
        }),
      );
      assert.deepEqual(
        expectOk(await anthropicBatches.find(customId, new Date(), call({ fetch: r.fetch }))),
        {
          kind: 'absent',
        },
      );
      assert.equal(r.calls.length, 1);
    });

    it('answers protocol for a list without data', async () => {
      const r = routed(() => jsonResponse(200, { has_more: false }));
      assert.equal(
        expectErr(await anthropicBatches.find(customId, new Date(), call({ fetch: r.fetch }))).kind,
        'protocol',
      );
    });
  });

  describe('the fake', () => {
    it('refuses sampling parameters, a bad custom_id, a missing version and two auth headers', async () => {
      const send = (body: unknown, headers: Record<string, string>) =>
        fetch(`${fake.baseUrl}/v1/messages/batches`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(body),
        }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));
      const good = { 'x-api-key': fake.apiKey, 'anthropic-version': '2026-10-21' };
      const params = { model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] };
      const sampled = await send(
        { requests: [{ custom_id: 'a', params: { ...params, temperature: 1 } }] },
        good,
      );
      assert.equal(sampled.status, 400);
      assert.equal((sampled.body.error as Record<string, unknown>).type, 'invalid_request_error');
      assert.equal((await send({ requests: [{ custom_id: 'a b', params }] }, good)).status, 400);
      const noVersion = await send({ requests: [{ custom_id: 'a', params }] }, { 'x-api-key': fake.apiKey });
      assert.equal(noVersion.status, 400);
      const both = await send(
        { requests: [{ custom_id: 'a', params }] },
        { ...good, authorization: `Bearer ${fake.apiKey}` },
      );
      assert.equal(both.status, 401);
      const bearer = await send(
        { requests: [{ custom_id: 'a', params }] },
        { authorization: `Bearer ${fake.apiKey}`, 'anthropic-version': '2026-10-21' },
      );
      assert.equal(bearer.status, 200);
      assert.equal(bearer.body.processing_status, 'in_progress');
      assert.deepEqual(bearer.body.request_counts, {
        processing: 1,
        succeeded: 0,
        errored: 0,
        canceled: 0,
        expired: 0,
      });
      assert.equal(bearer.body.results_url, null);
      assert.equal(fake.batches().length, 1);
    });

    it('with autoFinishMs, a held batch cancelled late still ends (cancelled) that long after the cancel', async () => {
      const auto = await startFakeAnthropic({ autoFinishMs: 20, autoOutcome: () => 'hold' });
      try {
        const c = call({ apiKey: auto.apiKey, baseUrl: auto.baseUrl });
        const { id } = expectOk(await anthropicBatches.submit(request(), c));
        await new Promise((r) => setTimeout(r, 60)); // the creation timer has fired: the batch is held
        assert.equal(auto.batches()[0]?.state, 'pending');
        expectOk(await anthropicBatches.cancel(id, c));
        const ended = await pollUntil(
          async () => (auto.batches()[0]?.state === 'ended' ? auto.batches()[0] : undefined),
          { timeoutMs: 5000, intervalMs: 5, description: 'the cancelled batch to end' },
        );
        assert.equal(ended?.vendorState, 'ended');
        const cleaned = expectOk(await anthropicBatches.cleanup(id, c));
        assert.equal(cleaned.kind, 'done');
      } finally {
        await auto.close();
      }
    });

    it('refuses results and delete before the batch ended, and finishes on its own with autoFinishMs', async () => {
      const auto = await startFakeAnthropic({ autoFinishMs: 1 });
      try {
        const c = call({ apiKey: auto.apiKey, baseUrl: auto.baseUrl });
        const { id } = expectOk(await anthropicBatches.submit(request({ schema: { type: 'object' } }), c));
        const state = await pollUntil(
          async () => {
            const polled = expectOk(await anthropicBatches.check(id, ctx({ structured: true }), c));
            return polled.kind === 'ended' ? polled : undefined;
          },
          { timeoutMs: 5000, intervalMs: 5, description: 'the auto-finished batch to end' },
        );
        const outcome = state.outcome;
        assert.deepEqual(parseLines(outcome)[2]?.structured_output, { echo: 'Say hello' });
      } finally {
        await auto.close();
      }
      const { id } = expectOk(await anthropicBatches.submit(request(), call()));
      const headers = { 'x-api-key': fake.apiKey, 'anthropic-version': '2026-10-21' };
      const results = await fetch(`${fake.baseUrl}/v1/messages/batches/${id}/results`, { headers });
      assert.equal(results.status, 400);
      const del = await fetch(`${fake.baseUrl}/v1/messages/batches/${id}`, { method: 'DELETE', headers });
      assert.equal(del.status, 400);
      assert.equal(((await del.json()) as { error: { type: string } }).error.type, 'invalid_request_error');
    });
  });
});
