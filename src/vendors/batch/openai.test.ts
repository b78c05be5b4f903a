import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { startFakeOpenAI } from '../../../test/support/fake-vendors/openai.ts';
import type { FakeVendorServer, RecordedRequest } from '../../../test/support/fake-vendors/types.ts';
import { pollUntil } from '../../../test/support/poll.ts';
import {
  OPENAI_FILE_TTL_SECONDS,
  openaiBatchCreateBody,
  openaiBatches,
  openaiBatchLine,
  readOpenAIError,
} from './openai.ts';
import {
  type BatchError,
  type BatchRequest,
  type RenderContext,
  runCustomId,
  type VendorCall,
} from './port.ts';
import {
  CANCELLED_MESSAGE,
  CONTENT_FILTER_MESSAGE,
  EXPIRED_MESSAGE,
  type OpenAIBatchLine,
  REFUSAL_MESSAGE,
  renderCodexLine,
} from './render-codex.ts';

const UID = '0b5e2f4a-1c3d-4e5f-8a9b-0c1d2e3f4a5b';
const CUSTOM_ID = runCustomId(UID);
const REQUEST: BatchRequest = {
  customId: CUSTOM_ID,
  label: 'team-a/agent-1',
  model: 'gpt-6.1-sol',
  prompt: 'Say hi',
  maxTokens: 16000,
};
const SCHEMA = {
  type: 'object',
  properties: { echo: { type: 'string' } },
  required: ['echo'],
  additionalProperties: false,
};
const CTX: RenderContext = {
  sessionId: UID,
  model: 'gpt-6.1-sol',
  prompt: 'Say hi',
  structured: false,
  durationMs: 1234,
};

const THREAD = JSON.stringify({ type: 'thread.started', thread_id: UID });
const TURN = JSON.stringify({ type: 'turn.started' });
const failedLine = (message: string): string => JSON.stringify({ type: 'turn.failed', error: { message } });

interface TestCall extends VendorCall {
  readonly sleeps: number[];
}

function callFor(fake: FakeVendorServer, overrides: Partial<VendorCall> = {}): TestCall {
  const sleeps: number[] = [];
  return {
    apiKey: fake.apiKey,
    baseUrl: fake.baseUrl,
    fetch: globalThis.fetch,
    timeoutMs: 2000,
    attempts: 3,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...overrides,
    sleeps,
  };
}

function value<T, E>(r: { ok: true; value: T } | { ok: false; error: E }): T {
  if (!r.ok) assert.fail(`expected ok, got ${JSON.stringify(r.error)}`);
  return r.value;
}

function error<T, E>(r: { ok: true; value: T } | { ok: false; error: E }): E {
  if (r.ok) assert.fail(`expected an error, got ${JSON.stringify(r.value)}`);
  return r.error;
}

const matching = (fake: FakeVendorServer, method: string, path: RegExp): RecordedRequest[] =>
  fake.requests.filter((r) => r.method === method && path.test(r.path));

async function formOf(recorded: RecordedRequest): Promise<FormData> {
  return new Request('http://test.invalid/', {
    method: 'POST',
    headers: { 'content-type': recorded.headers['content-type'] ?? '' },
    body: recorded.body,
  }).formData();
}

/** A direct call to the fake, with or without the key. */
async function api(
  fake: FakeVendorServer,
  method: string,
  path: string,
  init: { body?: string | FormData; key?: string | null } = {},
): Promise<{ status: number; json: unknown; text: string }> {
  const headers: Record<string, string> = {};
  const key = init.key === undefined ? fake.apiKey : init.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (typeof init.body === 'string') headers['content-type'] = 'application/json';
  const response = await fetch(`${fake.baseUrl}${path}`, { method, headers, body: init.body ?? null });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

async function uploadLine(fake: FakeVendorServer, line: unknown, purpose = 'batch'): Promise<string> {
  const form = new FormData();
  form.append('purpose', purpose);
  form.append('file', new Blob([`${JSON.stringify(line)}\n`]), 'in.jsonl');
  const answer = await api(fake, 'POST', '/files', { body: form });
  assert.equal(answer.status, 200, answer.text);
  return (answer.json as { id: string }).id;
}

function line(fields: Partial<OpenAIBatchLine>): OpenAIBatchLine {
  return { id: 'batch_req_1', custom_id: CUSTOM_ID, response: null, error: null, ...fields };
}

function okLine(body: unknown): OpenAIBatchLine {
  return line({ response: { status_code: 200, request_id: 'req_1', body } });
}

function message(...content: unknown[]): unknown {
  return { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content };
}

const outputText = (text: string): unknown => ({ type: 'output_text', text, annotations: [] });

describe('openaiBatchLine and openaiBatchCreateBody', () => {
  it('builds the exact JSONL line: custom_id, POST, /v1/responses, model, one user input, max_output_tokens', () => {
    assert.equal(
      openaiBatchLine(REQUEST),
      `{"custom_id":"${CUSTOM_ID}","method":"POST","url":"/v1/responses","body":{"model":"gpt-6.1-sol",` +
        `"input":[{"role":"user","content":"Say hi"}],"max_output_tokens":16000}}\n`,
    );
  });

  it('adds a strict json_schema text.format named result when a schema is given, and no sampling params', () => {
    const parsed = JSON.parse(openaiBatchLine({ ...REQUEST, schema: SCHEMA })) as {
      body: Record<string, unknown>;
    };
    assert.deepEqual(parsed.body, {
      model: 'gpt-6.1-sol',
      input: [{ role: 'user', content: 'Say hi' }],
      max_output_tokens: 16000,
      text: { format: { type: 'json_schema', name: 'result', schema: SCHEMA, strict: true } },
    });
    for (const key of ['temperature', 'top_p', 'top_k']) assert.equal(key in parsed.body, false);
  });

  it('builds the batch create body with metadata and output expiry, cutting the label to 512 characters', () => {
    assert.deepEqual(openaiBatchCreateBody({ ...REQUEST, label: 'x'.repeat(600) }, 'file-1'), {
      input_file_id: 'file-1',
      endpoint: '/v1/responses',
      completion_window: '24h',
      metadata: { agent_run: CUSTOM_ID, run: 'x'.repeat(512) },
      output_expires_after: { anchor: 'created_at', seconds: OPENAI_FILE_TTL_SECONDS },
    });
  });

  it('reads the OpenAI error body, falling back to the code when there is no type', () => {
    assert.deepEqual(readOpenAIError(400, { error: { message: 'bad', type: 'invalid_request_error' } }), {
      type: 'invalid_request_error',
      message: 'bad',
    });
    assert.deepEqual(readOpenAIError(429, { error: { message: 'slow', type: null, code: 'rate_limit' } }), {
      type: 'rate_limit',
      message: 'slow',
    });
    assert.deepEqual(readOpenAIError(502, '<html>'), { type: '', message: '' });
  });
});

describe('renderCodexLine', () => {
  const reasoning = {
    id: 'rs_1',
    type: 'reasoning',
    summary: [
      { type: 'summary_text', text: 'First.' },
      { type: 'summary_text', text: 'Second.' },
    ],
  };
  const usage = {
    input_tokens: 120,
    input_tokens_details: { cached_tokens: 100 },
    output_tokens: 45,
    output_tokens_details: { reasoning_tokens: 20 },
    total_tokens: 165,
  };

  it('renders a success as thread.started, turn.started, reasoning, agent_message, turn.completed', () => {
    const body = {
      id: 'resp_1',
      object: 'response',
      status: 'completed',
      output: [reasoning, message(outputText('Hello, '), outputText('world')), message(outputText('!'))],
      usage,
      incomplete_details: null,
      error: null,
    };
    const expected = {
      kind: 'succeeded',
      lines: [
        THREAD,
        TURN,
        '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"First.\\n\\nSecond."}}',
        '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Hello, world!"}}',
        '{"type":"turn.completed","usage":{"input_tokens":120,"cached_input_tokens":100,"output_tokens":45}}',
      ],
    };
    assert.deepEqual(value(renderCodexLine(okLine(body), CTX)), expected);
    // A second line renders the same: item numbering starts again at item_0 (no state across lines).
    assert.deepEqual(value(renderCodexLine(okLine(body), CTX)), expected);
  });

  it('numbers the agent_message item_0 without reasoning summary, and reports zero usage when absent', () => {
    const body = {
      status: 'completed',
      output: [{ type: 'reasoning', summary: [] }, message(outputText('hi'))],
    };
    assert.deepEqual(value(renderCodexLine(okLine(body), CTX)).lines.slice(2), [
      '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"hi"}}',
      '{"type":"turn.completed","usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0}}',
    ]);
  });

  it('puts structured output as the JSON string of the agent_message, with no extra field', () => {
    const json = '{"echo":"Say hi"}';
    const outcome = value(
      renderCodexLine(okLine({ status: 'completed', output: [message(outputText(json))] }), {
        ...CTX,
        structured: true,
      }),
    );
    assert.equal(outcome.kind, 'succeeded');
    const item = JSON.parse(outcome.lines[2]!) as { item: Record<string, unknown> };
    assert.deepEqual(item.item, { id: 'item_0', type: 'agent_message', text: json });
  });

  it('fails a refusal, appending the refusal text to turn.failed only', () => {
    const body = {
      status: 'completed',
      output: [message({ type: 'refusal', refusal: "I can't help with that." })],
    };
    assert.deepEqual(value(renderCodexLine(okLine(body), CTX)), {
      kind: 'failed',
      lines: [THREAD, TURN, failedLine(`${REFUSAL_MESSAGE}: I can't help with that.`)],
      message: REFUSAL_MESSAGE,
    });
  });

  it('fails a content-filtered incomplete response but succeeds one cut by max_output_tokens', () => {
    const filtered = {
      status: 'incomplete',
      incomplete_details: { reason: 'content_filter' },
      output: [message(outputText('partial'))],
    };
    assert.deepEqual(value(renderCodexLine(okLine(filtered), CTX)), {
      kind: 'failed',
      lines: [THREAD, TURN, failedLine(CONTENT_FILTER_MESSAGE)],
      message: CONTENT_FILTER_MESSAGE,
    });
    const cut = { ...filtered, incomplete_details: { reason: 'max_output_tokens' } };
    const outcome = value(renderCodexLine(okLine(cut), CTX));
    assert.equal(outcome.kind, 'succeeded');
    assert.equal(
      outcome.lines[2],
      '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"partial"}}',
    );
  });

  it('fails a response whose own status is failed', () => {
    const body = { status: 'failed', error: { code: 'server_error', message: 'boom' }, output: [] };
    assert.equal(
      (value(renderCodexLine(okLine(body), CTX)) as { message: string }).message,
      'batch request failed: server_error: boom',
    );
  });

  it('fails an API-rejected request with the error type (or code) and message', () => {
    const rejected = line({
      response: {
        status_code: 400,
        request_id: 'req_1',
        body: {
          error: { message: 'prompt is too long', type: 'invalid_request_error', param: null, code: null },
        },
      },
    });
    assert.deepEqual(value(renderCodexLine(rejected, CTX)), {
      kind: 'failed',
      lines: [THREAD, TURN, failedLine('batch request failed: invalid_request_error: prompt is too long')],
      message: 'batch request failed: invalid_request_error: prompt is too long',
    });
    const coded = line({
      response: { status_code: 429, body: { error: { message: 'slow down', code: 'rate_limit_exceeded' } } },
    });
    assert.equal(
      (value(renderCodexLine(coded, CTX)) as { message: string }).message,
      'batch request failed: rate_limit_exceeded: slow down',
    );
    const bare = line({ response: { status_code: 500, body: 'oops' } });
    assert.equal(
      (value(renderCodexLine(bare, CTX)) as { message: string }).message,
      'batch request failed: HTTP 500',
    );
  });

  it('maps error lines: batch_expired, batch_cancelled, and any other code', () => {
    const expired = line({ error: { code: 'batch_expired', message: 'not run' } });
    assert.deepEqual(value(renderCodexLine(expired, CTX)), {
      kind: 'failed',
      lines: [THREAD, TURN, failedLine(EXPIRED_MESSAGE)],
      message: EXPIRED_MESSAGE,
    });
    const cancelled = line({ error: { code: 'batch_cancelled', message: 'not run' } });
    assert.equal((value(renderCodexLine(cancelled, CTX)) as { message: string }).message, CANCELLED_MESSAGE);
    const timeout = line({ error: { code: 'request_timeout', message: 'took too long' } });
    assert.equal(
      (value(renderCodexLine(timeout, CTX)) as { message: string }).message,
      'batch request failed: request_timeout: took too long',
    );
  });

  it('errs on a line with neither response nor error, and on a 200 body that is not a Responses object', () => {
    assert.match(error(renderCodexLine(line({}), CTX)), /neither response nor error/);
    assert.match(error(renderCodexLine(okLine({ output: 'nope' }), CTX)), /response body\.output/);
  });
});

describe('openaiBatches against the fake OpenAI', () => {
  let fake: FakeVendorServer;
  before(async () => {
    fake = await startFakeOpenAI({ apiKey: 'sk-test-0123456789abcdef' });
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => fake.reset());

  describe('submit', () => {
    it('uploads the JSONL as multipart, then creates the batch with the Bearer key', async () => {
      const submitted = value(await openaiBatches.submit(REQUEST, callFor(fake)));
      assert.deepEqual(
        fake.requests.map((r) => `${r.method} ${r.path}`),
        ['POST /v1/files', 'POST /v1/batches'],
      );
      const [upload, create] = fake.requests as [RecordedRequest, RecordedRequest];
      assert.equal(upload.authorized, true);
      assert.equal('authorization' in upload.headers, false);
      assert.match(upload.headers['content-type'] ?? '', /^multipart\/form-data; boundary=/);
      const form = await formOf(upload);
      assert.deepEqual(
        [...form.keys()].sort(),
        ['expires_after[anchor]', 'expires_after[seconds]', 'file', 'purpose'].sort(),
      );
      assert.equal(form.get('purpose'), 'batch');
      assert.equal(form.get('expires_after[anchor]'), 'created_at');
      assert.equal(form.get('expires_after[seconds]'), String(OPENAI_FILE_TTL_SECONDS));
      const file = form.get('file') as File;
      assert.equal(file.name, `${CUSTOM_ID}.jsonl`);
      assert.equal(await file.text(), openaiBatchLine(REQUEST));

      assert.equal(create.authorized, true);
      assert.equal(create.headers['content-type'], 'application/json');
      const [batch] = fake.batches();
      assert.ok(batch);
      const inputId = batch.files?.find((f) => f.role === 'input')?.id;
      assert.ok(inputId);
      assert.deepEqual(JSON.parse(create.body), openaiBatchCreateBody(REQUEST, inputId));
      assert.equal(submitted.id, batch.id);
      assert.match(batch.id, /^batch_/);
      assert.equal(batch.customId, CUSTOM_ID);
      assert.equal(batch.prompt, 'Say hi');
      assert.equal(batch.vendorState, 'validating');
    });

    it('sends the schema as text.format', async () => {
      value(await openaiBatches.submit({ ...REQUEST, schema: SCHEMA }, callFor(fake)));
      const params = fake.batches()[0]?.params as { text: unknown };
      assert.deepEqual(params.text, {
        format: { type: 'json_schema', name: 'result', schema: SCHEMA, strict: true },
      });
    });

    it('answers a wrong key with rejected 401 and the vendor message, never the key, without retrying', async () => {
      const key = 'sk-wrong-key-9876543210fedcba';
      const e = error(await openaiBatches.submit(REQUEST, callFor(fake, { apiKey: key })));
      assert.equal(e.kind, 'rejected');
      const rejected = e as Extract<BatchError, { kind: 'rejected' }>;
      assert.equal(rejected.status, 401);
      assert.equal(rejected.type, 'invalid_request_error');
      assert.match(rejected.message, /^Incorrect API key provided/);
      assert.equal(rejected.message.includes(key), false);
      assert.equal(fake.requests.length, 1);
      assert.equal(fake.requests[0]?.authorized, false);
      assert.equal(fake.batches().length, 0);
    });

    it('retries a 429 upload after retry-after', async () => {
      fake.inject({ method: 'POST', path: /^\/v1\/files$/, status: 429, retryAfterSeconds: 2 });
      const call = callFor(fake);
      value(await openaiBatches.submit(REQUEST, call));
      assert.deepEqual(call.sleeps, [2000]);
      assert.equal(matching(fake, 'POST', /^\/v1\/files$/).length, 2);
      assert.equal(fake.batches().length, 1);
    });

    it('retries a 429 create (nothing was created) but not a 500 create, which keeps the upload', async () => {
      fake.inject({ method: 'POST', path: /^\/v1\/batches$/, status: 429, retryAfterSeconds: 1 });
      value(await openaiBatches.submit(REQUEST, callFor(fake)));
      assert.equal(matching(fake, 'POST', /^\/v1\/batches$/).length, 2);

      fake.reset();
      fake.inject({ method: 'POST', path: /^\/v1\/batches$/, status: 500 });
      const call = callFor(fake);
      const e = error(await openaiBatches.submit(REQUEST, call));
      assert.deepEqual(
        { kind: e.kind, status: (e as { status?: number }).status },
        { kind: 'unavailable', status: 500 },
      );
      assert.equal(matching(fake, 'POST', /^\/v1\/batches$/).length, 1);
      assert.deepEqual(call.sleeps, []);
      assert.equal(matching(fake, 'DELETE', /^\/v1\/files\//).length, 0);
      assert.equal(fake.batches().length, 0);
    });

    it('deletes the upload when the create is definitely rejected', async () => {
      fake.inject({ method: 'POST', path: /^\/v1\/batches$/, status: 400 });
      const e = error(await openaiBatches.submit(REQUEST, callFor(fake)));
      assert.equal(e.kind, 'rejected');
      const uploadAnswer = matching(fake, 'POST', /^\/v1\/files$/);
      assert.equal(uploadAnswer.length, 1);
      const deletes = matching(fake, 'DELETE', /^\/v1\/files\/file-/);
      assert.equal(deletes.length, 1);
      const fileId = deletes[0]!.path.slice('/v1/files/'.length);
      assert.equal((await api(fake, 'GET', `/files/${fileId}/content`)).status, 404);
    });

    it('treats any 4xx create answer (here 404) as a definite rejection and deletes the upload', async () => {
      fake.inject({ method: 'POST', path: /^\/v1\/batches$/, status: 404 });
      const e = error(await openaiBatches.submit(REQUEST, callFor(fake)));
      assert.deepEqual(
        { kind: e.kind, status: (e as { status: number }).status },
        { kind: 'rejected', status: 404 },
      );
      assert.equal(matching(fake, 'DELETE', /^\/v1\/files\//).length, 1);
    });

    it('leaves a create whose answer was lost to find', async () => {
      // The answer comes long after the deadline; the deadline leaves the upload and the create time to reach the
      // fake even on a loaded machine (100 ms did not).
      fake.inject({ method: 'POST', path: /^\/v1\/batches$/, status: 502, afterEffect: true, delayMs: 4000 });
      const since = new Date();
      const e = error(await openaiBatches.submit(REQUEST, callFor(fake, { timeoutMs: 1500 })));
      assert.equal(e.kind, 'network');
      assert.match((e as { message: string }).message, /no answer within 1500 ms/);
      const [batch] = fake.batches();
      assert.ok(batch);
      assert.deepEqual(value(await openaiBatches.find(CUSTOM_ID, since, callFor(fake))), {
        kind: 'found',
        id: batch.id,
        duplicates: [],
      });
      assert.equal(
        batch.files?.every((f) => f.exists),
        true,
      );
    });
  });

  describe('check', () => {
    async function submitted(request: BatchRequest = REQUEST): Promise<string> {
      return value(await openaiBatches.submit(request, callFor(fake))).id;
    }

    it('is inProgress while validating or running, and renders the success once completed', async () => {
      const id = await submitted();
      assert.deepEqual(value(await openaiBatches.check(id, CTX, callFor(fake))), { kind: 'inProgress', id });
      assert.equal(fake.batches()[0]?.vendorState, 'in_progress');
      fake.finish(id, { kind: 'succeeded', text: 'hello there' });
      assert.deepEqual(value(await openaiBatches.check(id, CTX, callFor(fake))), {
        kind: 'ended',
        id,
        outcome: {
          kind: 'succeeded',
          lines: [
            THREAD,
            TURN,
            JSON.stringify({
              type: 'item.completed',
              item: {
                id: 'item_0',
                type: 'reasoning',
                text: '**Answering the request**\n\nReplying directly.',
              },
            }),
            '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"hello there"}}',
            // Fake usage: ceil(6/4) = 2 input tokens; ceil(11/4) + 16 reasoning = 19 output tokens.
            '{"type":"turn.completed","usage":{"input_tokens":2,"cached_input_tokens":0,"output_tokens":19}}',
          ],
        },
      });
      const output = fake.batches()[0]?.files?.find((f) => f.role === 'output');
      assert.ok(output);
      assert.equal(matching(fake, 'GET', new RegExp(`^/v1/files/${output.id}/content$`)).length, 1);
    });

    it('renders structured output as the JSON string', async () => {
      const id = await submitted({ ...REQUEST, schema: SCHEMA });
      fake.finish(id, { kind: 'succeeded', text: '{"echo":"Say hi"}' });
      const state = value(await openaiBatches.check(id, { ...CTX, structured: true }, callFor(fake)));
      assert.equal(state.kind, 'ended');
      const outcome = (state as { outcome: { kind: string; lines: readonly string[] } }).outcome;
      assert.equal(outcome.kind, 'succeeded');
      assert.equal(
        outcome.lines[3],
        '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"{\\"echo\\":\\"Say hi\\"}"}}',
      );
    });

    const failures: ReadonlyArray<
      readonly [string, Parameters<FakeVendorServer['finish']>[1], string, string]
    > = [
      [
        'an errored request (error file)',
        { kind: 'errored', message: 'prompt is too long' },
        'batch request failed: invalid_request_error: prompt is too long',
        'completed',
      ],
      ['an expired batch', { kind: 'expired' }, EXPIRED_MESSAGE, 'expired'],
      ['a cancelled batch', { kind: 'cancelled' }, CANCELLED_MESSAGE, 'cancelled'],
      ['a refusal', { kind: 'refused' }, REFUSAL_MESSAGE, 'completed'],
      [
        'a failed batch',
        { kind: 'batchFailed', message: 'bad line 1' },
        'batch failed: bad line 1',
        'failed',
      ],
    ];
    for (const [what, outcome, reason, vendorState] of failures) {
      it(`renders ${what} as a failure: ${reason}`, async () => {
        const id = await submitted();
        fake.finish(id, outcome);
        assert.equal(fake.batches()[0]?.vendorState, vendorState);
        const state = value(await openaiBatches.check(id, CTX, callFor(fake)));
        assert.equal(state.kind, 'ended');
        const ended = (state as { outcome: { kind: string; lines: readonly string[]; message?: string } })
          .outcome;
        assert.equal(ended.kind, 'failed');
        assert.equal(ended.message, reason);
        assert.deepEqual(ended.lines.slice(0, 2), [THREAD, TURN]);
        assert.equal(JSON.parse(ended.lines.at(-1)!).type, 'turn.failed');
        assert.equal(ended.lines.length, 3);
      });
    }

    it('reads the error file of a batch that has one', async () => {
      const id = await submitted();
      fake.finish(id, { kind: 'expired' });
      value(await openaiBatches.check(id, CTX, callFor(fake)));
      const errorFile = fake.batches()[0]?.files?.find((f) => f.role === 'error');
      assert.ok(errorFile);
      assert.equal(matching(fake, 'GET', new RegExp(`^/v1/files/${errorFile.id}/content$`)).length, 1);
    });

    it('finishes on its own with the echo outcome when autoFinishMs is set', async () => {
      const auto = await startFakeOpenAI({ autoFinishMs: 5 });
      try {
        const call = callFor(auto);
        const id = value(await openaiBatches.submit({ ...REQUEST, schema: SCHEMA }, call)).id;
        const state = await pollUntil(
          async () => {
            const s = value(await openaiBatches.check(id, { ...CTX, structured: true }, call));
            return s.kind === 'ended' ? s : undefined;
          },
          { timeoutMs: 5000, intervalMs: 10, description: 'the auto-finished batch' },
        );
        const outcome = (state as { outcome: { lines: readonly string[] } }).outcome;
        assert.match(outcome.lines[3] ?? '', /"text":"\{\\"echo\\":\\"Say hi\\"\}"/);
      } finally {
        await auto.close();
      }
    });

    it('retries a 500 poll and reports an unknown batch as rejected 404', async () => {
      const id = await submitted();
      fake.inject({ method: 'GET', path: /^\/v1\/batches\/batch_/, status: 500 });
      const call = callFor(fake);
      assert.deepEqual(value(await openaiBatches.check(id, CTX, call)), { kind: 'inProgress', id });
      assert.equal(call.sleeps.length, 1);
      const e = error(await openaiBatches.check('batch_unknown', CTX, callFor(fake)));
      assert.deepEqual(
        { kind: e.kind, status: (e as { status: number }).status },
        { kind: 'rejected', status: 404 },
      );
    });

    it('gives up on a poll that keeps failing with 503 after the attempts', async () => {
      const id = await submitted();
      fake.inject({ method: 'GET', path: /^\/v1\/batches\//, status: 503, times: 3 });
      const call = callFor(fake);
      const e = error(await openaiBatches.check(id, CTX, call));
      assert.deepEqual(
        { kind: e.kind, status: (e as { status: number }).status },
        { kind: 'unavailable', status: 503 },
      );
      assert.equal(call.sleeps.length, 2);
    });
  });

  describe('cancel', () => {
    it('cancels a running batch, and accepts a batch that already ended or is unknown', async () => {
      const id = value(await openaiBatches.submit(REQUEST, callFor(fake))).id;
      value(await openaiBatches.cancel(id, callFor(fake)));
      assert.equal(fake.batches()[0]?.vendorState, 'cancelling');
      value(await openaiBatches.cancel(id, callFor(fake)));
      fake.finish(id, { kind: 'cancelled' });
      value(await openaiBatches.cancel(id, callFor(fake)));
      value(await openaiBatches.cancel('batch_unknown', callFor(fake)));
      assert.deepEqual(
        fake.requests.slice(1).map((r) => `${r.method} ${r.path.replace(id, '<id>')}`),
        [
          'POST /v1/batches',
          'POST /v1/batches/<id>/cancel',
          'POST /v1/batches/<id>/cancel',
          'POST /v1/batches/<id>/cancel',
          'GET /v1/batches/<id>',
          'POST /v1/batches/batch_unknown/cancel',
        ],
      );
    });

    it('reports a wrong key', async () => {
      const e = error(await openaiBatches.cancel('batch_x', callFor(fake, { apiKey: 'sk-nope-000000000' })));
      assert.deepEqual(
        { kind: e.kind, status: (e as { status: number }).status },
        { kind: 'rejected', status: 401 },
      );
    });
  });

  describe('cleanup', () => {
    it('cancels a running batch and answers pending, then deletes its files once it ended', async () => {
      const id = value(await openaiBatches.submit(REQUEST, callFor(fake))).id;
      const first = value(await openaiBatches.cleanup(id, callFor(fake)));
      assert.equal(first.kind, 'pending');
      assert.equal(fake.batches()[0]?.vendorState, 'cancelling');
      assert.equal(fake.batches()[0]?.files?.[0]?.exists, true);
      assert.equal(value(await openaiBatches.cleanup(id, callFor(fake))).kind, 'pending');
      assert.equal(matching(fake, 'POST', /\/cancel$/).length, 1);

      fake.finish(id, { kind: 'cancelled' });
      assert.deepEqual(value(await openaiBatches.cleanup(id, callFor(fake))), { kind: 'done' });
      const batch = fake.batches()[0];
      assert.deepEqual(
        batch?.files?.map((f) => [f.role, f.exists]),
        [
          ['input', false],
          ['error', false],
        ],
      );
      assert.equal(batch?.deleted, true);
      assert.deepEqual(value(await openaiBatches.cleanup(id, callFor(fake))), { kind: 'done' });
    });

    it('deletes the input and output files of a completed batch', async () => {
      const id = value(await openaiBatches.submit(REQUEST, callFor(fake))).id;
      fake.finish(id, { kind: 'succeeded', text: 'ok' });
      assert.deepEqual(value(await openaiBatches.cleanup(id, callFor(fake))), { kind: 'done' });
      assert.deepEqual(
        fake.batches()[0]?.files?.map((f) => [f.role, f.exists]),
        [
          ['input', false],
          ['output', false],
        ],
      );
    });

    it('is done for an unknown batch', async () => {
      assert.deepEqual(value(await openaiBatches.cleanup('batch_unknown', callFor(fake))), { kind: 'done' });
    });
  });

  describe('find', () => {
    it('finds the oldest batch for a custom id with newer ones as duplicates, and nothing for another id', async () => {
      const since = new Date();
      const first = value(await openaiBatches.submit(REQUEST, callFor(fake))).id;
      value(await openaiBatches.submit({ ...REQUEST, customId: 'run-other' }, callFor(fake)));
      const second = value(await openaiBatches.submit(REQUEST, callFor(fake))).id;
      assert.deepEqual(value(await openaiBatches.find(CUSTOM_ID, since, callFor(fake))), {
        kind: 'found',
        id: first,
        duplicates: [second],
      });
      assert.deepEqual(value(await openaiBatches.find('run-absent', since, callFor(fake))), {
        kind: 'absent',
      });
      assert.deepEqual(matching(fake, 'GET', /^\/v1\/batches\?/)[0]?.path, '/v1/batches?limit=100');
    });

    it('ignores batches created more than a minute before since', async () => {
      value(await openaiBatches.submit(REQUEST, callFor(fake)));
      const later = new Date(Date.now() + 2 * 60_000);
      assert.deepEqual(value(await openaiBatches.find(CUSTOM_ID, later, callFor(fake))), { kind: 'absent' });
    });

    it('walks the pages with the after cursor', async () => {
      const since = new Date();
      const target = value(await openaiBatches.submit(REQUEST, callFor(fake))).id;
      for (let i = 0; i < 100; i++) {
        value(await openaiBatches.submit({ ...REQUEST, customId: `run-filler-${i}` }, callFor(fake)));
      }
      assert.deepEqual(value(await openaiBatches.find(CUSTOM_ID, since, callFor(fake))), {
        kind: 'found',
        id: target,
        duplicates: [],
      });
      const lists = matching(fake, 'GET', /^\/v1\/batches\?/).map((r) => r.path);
      assert.equal(lists.length, 2);
      assert.match(lists[1] ?? '', /^\/v1\/batches\?limit=100&after=batch_/);
    });

    it('reports a misshapen list as a protocol error', async () => {
      const broken: typeof fetch = async () =>
        new Response(JSON.stringify({ object: 'list', data: [{ id: 1 }] }), { status: 200 });
      const e = error(await openaiBatches.find(CUSTOM_ID, new Date(), callFor(fake, { fetch: broken })));
      assert.equal(e.kind, 'protocol');
      assert.match((e as { message: string }).message, /^list batches: data\.0\.id: /);
    });
  });
});

describe('cleanup of a batch with input, output and error files', () => {
  it('deletes all three, counting a 404 as deleted', async () => {
    const seen: string[] = [];
    const stub: typeof fetch = async (input, init) => {
      const url = new URL(String(input));
      seen.push(`${init?.method ?? 'GET'} ${url.pathname}`);
      if (init?.method === 'DELETE') {
        const id = url.pathname.split('/').at(-1);
        if (id === 'file-out')
          return new Response('{"error":{"message":"No such File object"}}', { status: 404 });
        return new Response(JSON.stringify({ id, object: 'file', deleted: true }), { status: 200 });
      }
      const batch = {
        id: 'batch_1',
        object: 'batch',
        status: 'completed',
        input_file_id: 'file-in',
        output_file_id: 'file-out',
        error_file_id: 'file-err',
      };
      return new Response(JSON.stringify(batch), { status: 200 });
    };
    const call: VendorCall = {
      apiKey: 'sk-x',
      baseUrl: 'https://api.openai.test/v1',
      fetch: stub,
      timeoutMs: 1000,
      attempts: 1,
      sleep: async () => {},
    };
    assert.deepEqual(value(await openaiBatches.cleanup('batch_1', call)), { kind: 'done' });
    assert.deepEqual(seen, [
      'GET /v1/batches/batch_1',
      'DELETE /v1/files/file-in',
      'DELETE /v1/files/file-out',
      'DELETE /v1/files/file-err',
    ]);
  });
});

describe('the fake OpenAI', () => {
  let fake: FakeVendorServer;
  before(async () => {
    fake = await startFakeOpenAI();
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => fake.reset());

  const goodLine = {
    custom_id: 'run-1',
    method: 'POST',
    url: '/v1/responses',
    body: { model: 'gpt-6.1-sol', input: [{ role: 'user', content: 'hi' }], max_output_tokens: 100 },
  };
  const create = (fileId: string, extra: Record<string, unknown> = {}) =>
    api(fake, 'POST', '/batches', {
      body: JSON.stringify({
        input_file_id: fileId,
        endpoint: '/v1/responses',
        completion_window: '24h',
        ...extra,
      }),
    });

  it('requires the Bearer key and never echoes it', async () => {
    const missing = await api(fake, 'GET', '/batches', { key: null });
    assert.equal(missing.status, 401);
    const wrongKey = 'sk-proj-secretsecretsecret1234';
    const wrong = await api(fake, 'GET', '/batches', { key: wrongKey });
    assert.equal(wrong.status, 401);
    assert.deepEqual(
      { ...(wrong.json as { error: Record<string, unknown> }).error, message: undefined },
      { message: undefined, type: 'invalid_request_error', param: null, code: 'invalid_api_key' },
    );
    assert.equal(wrong.text.includes(wrongKey), false);
    assert.equal(
      fake.requests.every((r) => !JSON.stringify(r).includes(wrongKey)),
      true,
    );
  });

  it('answers an unknown route with Invalid URL', async () => {
    const answer = await api(fake, 'GET', '/nothing');
    assert.equal(answer.status, 404);
    assert.match(JSON.stringify(answer.json), /Invalid URL \(GET \/v1\/nothing\)/);
  });

  it('rejects uploads that are not purpose batch or not .jsonl', async () => {
    const form = new FormData();
    form.append('purpose', 'assistants');
    form.append('file', new Blob(['{}\n']), 'in.jsonl');
    assert.equal((await api(fake, 'POST', '/files', { body: form })).status, 400);
    const csv = new FormData();
    csv.append('purpose', 'batch');
    csv.append('file', new Blob(['{}\n']), 'in.csv');
    assert.equal((await api(fake, 'POST', '/files', { body: csv })).status, 400);
  });

  it('rejects sampling parameters, a url other than the endpoint, a bad window and too much metadata', async () => {
    const cases: ReadonlyArray<readonly [unknown, Record<string, unknown>, RegExp]> = [
      [{ ...goodLine, body: { ...goodLine.body, temperature: 0.2 } }, {}, /temperature/],
      [{ ...goodLine, body: { ...goodLine.body, top_p: 0.9 } }, {}, /top_p/],
      [{ ...goodLine, url: '/v1/chat/completions' }, {}, /url/],
      [{ ...goodLine, method: 'GET' }, {}, /method/],
      [goodLine, { completion_window: '48h' }, /completion_window/],
      [
        goodLine,
        { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
        /16/,
      ],
      [goodLine, { output_expires_after: { anchor: 'created_at', seconds: 60 } }, /seconds/],
    ];
    for (const [input, extra, why] of cases) {
      const answer = await create(await uploadLine(fake, input), extra);
      assert.equal(answer.status, 400, JSON.stringify(input));
      assert.match(JSON.stringify(answer.json), why);
    }
    assert.equal(fake.batches().length, 0);
    assert.equal((await create('file-missing')).status, 400);
  });

  it('creates a validating batch that runs on the next GET, lists newest first, and 409s a late cancel', async () => {
    const fileId = await uploadLine(fake, goodLine);
    const created = await create(fileId, { metadata: { agent_run: 'run-1' } });
    assert.equal(created.status, 200);
    const batch = created.json as Record<string, unknown>;
    assert.equal(batch.status, 'validating');
    assert.equal(batch.object, 'batch');
    assert.equal(batch.input_file_id, fileId);
    assert.equal(Number.isInteger(batch.created_at), true);
    assert.ok(Math.abs((batch.created_at as number) - Date.now() / 1000) < 5);
    const id = batch.id as string;
    const got = await api(fake, 'GET', `/batches/${id}`);
    assert.equal((got.json as { status: string }).status, 'in_progress');

    const second = await create(await uploadLine(fake, goodLine));
    const secondId = (second.json as { id: string }).id;
    const list = await api(fake, 'GET', '/batches?limit=1');
    assert.deepEqual(
      { ...(list.json as Record<string, unknown>), data: undefined },
      { object: 'list', data: undefined, first_id: secondId, last_id: secondId, has_more: true },
    );
    const rest = await api(fake, 'GET', `/batches?limit=1&after=${secondId}`);
    assert.equal((rest.json as { data: { id: string }[] }).data[0]?.id, id);
    assert.equal((rest.json as { has_more: boolean }).has_more, false);

    fake.finish(id, { kind: 'succeeded', text: 'done' });
    const ended = (await api(fake, 'GET', `/batches/${id}`)).json as Record<string, unknown>;
    assert.equal(ended.status, 'completed');
    assert.deepEqual(ended.request_counts, { total: 1, completed: 1, failed: 0 });
    assert.equal(ended.error_file_id, null);
    const content = await api(fake, 'GET', `/files/${ended.output_file_id}/content`);
    const resultLine = JSON.parse(content.text) as { custom_id: string; response: { status_code: number } };
    assert.equal(resultLine.custom_id, 'run-1');
    assert.equal(resultLine.response.status_code, 200);
    const cancel = await api(fake, 'POST', `/batches/${id}/cancel`);
    assert.equal(cancel.status, 409);
    assert.throws(() => fake.finish(id, { kind: 'expired' }), /already ended/);

    const deleted = await api(fake, 'DELETE', `/files/${fileId}`);
    assert.deepEqual(deleted.json, { id: fileId, object: 'file', deleted: true });
    assert.equal((await api(fake, 'DELETE', `/files/${fileId}`)).status, 404);
  });
});
