import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { startFakeGemini } from '../../../test/support/fake-vendors/gemini.ts';
import type { FakeVendorServer } from '../../../test/support/fake-vendors/types.ts';
import type { Result } from '../../shared/result.ts';
import { GEMINI_FIND_SKEW_MS, geminiBatches, geminiPhase } from './gemini.ts';
import type {
  BatchError,
  BatchOutcome,
  BatchRequest,
  BatchState,
  RenderContext,
  VendorCall,
} from './port.ts';
import {
  type GeminiInlinedResponse,
  geminiText,
  renderGeminiFailure,
  renderGeminiResponse,
} from './render-gemini.ts';

const MODEL = 'gemini-3.8-flash';
const CTX: RenderContext = {
  sessionId: '7c0c3a52-5d7e-4c1e-9f51-0a9d2a8e1b11',
  model: MODEL,
  prompt: 'Say hello',
  structured: false,
  durationMs: 4321,
};
const REQUEST: BatchRequest = {
  customId: 'run-7c0c3a52-5d7e-4c1e-9f51-0a9d2a8e1b11',
  label: 'team-a/hello',
  model: MODEL,
  prompt: 'Say hello',
  maxTokens: 16000,
};
const AT = new Date('2026-11-30T10:00:00.000Z');

interface Harness {
  readonly call: VendorCall;
  /** Every wait the adapter asked for, in ms. */
  readonly sleeps: number[];
}

function harness(fake: FakeVendorServer, overrides: Partial<VendorCall> = {}): Harness {
  const sleeps: number[] = [];
  const call: VendorCall = {
    apiKey: fake.apiKey,
    baseUrl: fake.baseUrl,
    fetch: globalThis.fetch,
    timeoutMs: 5_000,
    attempts: 3,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...overrides,
  };
  return { call, sleeps };
}

/** A `fetch` answering from `route` (for answers the fake never gives), recording each URL. */
function stubFetch(route: (url: URL, method: string) => { status: number; body: unknown }) {
  const seen: string[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    seen.push(`${init?.method ?? 'GET'} ${url.pathname}${url.search}`);
    const answer = route(url, init?.method ?? 'GET');
    return new Response(JSON.stringify(answer.body), {
      status: answer.status,
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof globalThis.fetch;
  return { fetch, seen };
}

function stubCall(fetch: typeof globalThis.fetch): VendorCall {
  return {
    apiKey: 'stub-key-123456',
    baseUrl: 'https://gemini.example',
    fetch,
    timeoutMs: 5_000,
    attempts: 3,
    sleep: async () => {},
  };
}

function value<T>(result: Result<T, BatchError>): T {
  if (!result.ok) assert.fail(`expected ok, got ${JSON.stringify(result.error)}`);
  return result.value;
}

function failure<T>(result: Result<T, BatchError>): BatchError {
  if (result.ok) assert.fail(`expected an error, got ${JSON.stringify(result.value)}`);
  return result.error;
}

function ended(state: BatchState): BatchOutcome {
  if (state.kind !== 'ended') assert.fail(`expected ended, got ${state.kind}`);
  return state.outcome;
}

const lines = (outcome: BatchOutcome) =>
  outcome.lines.map((line) => JSON.parse(line) as Record<string, unknown>);

async function withFake(fn: (fake: FakeVendorServer) => Promise<void>) {
  const fake = await startFakeGemini();
  try {
    await fn(fake);
  } finally {
    await fake.close();
  }
}

describe('geminiPhase', () => {
  it('matches on the suffix and accepts both prefixes', () => {
    assert.equal(geminiPhase('BATCH_STATE_RUNNING'), 'RUNNING');
    assert.equal(geminiPhase('JOB_STATE_SUCCEEDED'), 'SUCCEEDED');
    assert.equal(geminiPhase('JOB_STATE_CANCELLED'), 'CANCELLED');
    assert.equal(geminiPhase('BATCH_STATE_EXPIRED'), 'EXPIRED');
    assert.equal(geminiPhase('BATCH_STATE_UNSPECIFIED'), undefined);
    assert.equal(geminiPhase(undefined), undefined);
  });
});

describe('renderGeminiResponse', () => {
  const success: GeminiInlinedResponse = {
    response: {
      candidates: [
        {
          content: {
            parts: [{ text: 'Let me think.', thought: true }, { text: 'Hello' }, { text: ', world' }],
          },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: {
        promptTokenCount: 12,
        candidatesTokenCount: 5,
        thoughtsTokenCount: 30,
        cachedContentTokenCount: 4,
        totalTokenCount: 47,
      },
    },
  };

  /** The lines `success` renders to, written out, stamped `ts`. */
  const successLines = (ts: string): string[] => {
    const models = { total_tokens: 47, input_tokens: 12, output_tokens: 5, cached: 4, input: 8 };
    return [
      JSON.stringify({ type: 'init', timestamp: ts, session_id: CTX.sessionId, model: MODEL }),
      JSON.stringify({ type: 'message', timestamp: ts, role: 'user', content: 'Say hello' }),
      JSON.stringify({
        type: 'message',
        timestamp: ts,
        role: 'assistant',
        content: 'Hello, world',
        delta: true,
      }),
      JSON.stringify({
        type: 'result',
        timestamp: ts,
        status: 'success',
        stats: { ...models, duration_ms: 4321, tool_calls: 0, models: { [MODEL]: models } },
      }),
    ];
  };

  it('renders init, user message, assistant delta and a success result', () => {
    const outcome = renderGeminiResponse(success, CTX, AT);
    assert.equal(outcome.kind, 'succeeded');
    assert.deepEqual(outcome.lines, successLines('2026-11-30T10:00:00.000Z'));
  });

  it('is deterministic and uses a fixed time when none is given', () => {
    for (let i = 0; i < 2; i++) {
      assert.deepEqual(renderGeminiResponse(success, CTX, AT), {
        kind: 'succeeded',
        lines: successLines('2026-11-30T10:00:00.000Z'),
      });
    }
    assert.deepEqual(renderGeminiResponse(success, CTX).lines, successLines('1970-01-01T00:00:00.000Z'));
  });

  it('skips thought parts when joining the text', () => {
    assert.equal(geminiText(success.response!), 'Hello, world');
  });

  it('counts MAX_TOKENS as a finished answer', () => {
    const item: GeminiInlinedResponse = {
      response: { candidates: [{ content: { parts: [{ text: 'Hel' }] }, finishReason: 'MAX_TOKENS' }] },
    };
    const outcome = renderGeminiResponse(item, CTX, AT);
    assert.equal(outcome.kind, 'succeeded');
    assert.equal(lines(outcome)[2]!.content, 'Hel');
  });

  it('parses the text into structured_output when a schema was sent', () => {
    const item: GeminiInlinedResponse = {
      response: { candidates: [{ content: { parts: [{ text: '{"answer":42}' }] }, finishReason: 'STOP' }] },
    };
    const outcome = renderGeminiResponse(item, { ...CTX, structured: true }, AT);
    assert.equal(outcome.kind, 'succeeded');
    const result = lines(outcome).at(-1)!;
    assert.deepEqual(result.structured_output, { answer: 42 });
    assert.equal(lines(outcome)[2]!.content, '{"answer":42}');
  });

  it('fails a structured run whose text is not JSON', () => {
    const item: GeminiInlinedResponse = {
      response: {
        candidates: [{ content: { parts: [{ text: '{"answer":' }] }, finishReason: 'MAX_TOKENS' }],
      },
    };
    const outcome = renderGeminiResponse(item, { ...CTX, structured: true }, AT);
    assert.equal(outcome.kind, 'failed');
    assert.match(outcome.kind === 'failed' ? outcome.message : '', /not valid JSON/);
  });

  it('renders a per-request error as a failed result', () => {
    const item: GeminiInlinedResponse = {
      error: { code: 400, message: 'Request payload size exceeds the limit' },
    };
    const outcome = renderGeminiResponse(item, CTX, AT);
    assert.deepEqual(outcome, {
      kind: 'failed',
      message: 'batch request failed: 400: Request payload size exceeds the limit',
      lines: [
        outcome.lines[0],
        outcome.lines[1],
        JSON.stringify({
          type: 'result',
          timestamp: AT.toISOString(),
          status: 'error',
          error: {
            type: 'request_error',
            message: 'batch request failed: 400: Request payload size exceeds the limit',
          },
          stats: {
            total_tokens: 0,
            input_tokens: 0,
            output_tokens: 0,
            cached: 0,
            input: 0,
            duration_ms: 4321,
            tool_calls: 0,
            models: { [MODEL]: { total_tokens: 0, input_tokens: 0, output_tokens: 0, cached: 0, input: 0 } },
          },
        }),
      ],
    });
    assert.deepEqual(
      lines(outcome).map((l) => l.type),
      ['init', 'message', 'result'],
    );
  });

  it('prefers the status name over the code in a request error', () => {
    const outcome = renderGeminiResponse(
      { error: { code: 3, status: 'INVALID_ARGUMENT', message: 'bad' } },
      CTX,
      AT,
    );
    assert.equal(outcome.kind === 'failed' && outcome.message, 'batch request failed: INVALID_ARGUMENT: bad');
  });

  it('fails a SAFETY stop without an assistant line', () => {
    const item: GeminiInlinedResponse = {
      response: {
        candidates: [{ finishReason: 'SAFETY' }],
        usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
      },
    };
    const outcome = renderGeminiResponse(item, CTX, AT);
    assert.equal(
      outcome.kind === 'failed' && outcome.message,
      'the response was blocked (finishReason SAFETY)',
    );
    const parsed = lines(outcome);
    assert.deepEqual(
      parsed.map((l) => [l.type, l.role]),
      [
        ['init', undefined],
        ['message', 'user'],
        ['result', undefined],
      ],
    );
    assert.deepEqual(parsed[2]!.error, {
      type: 'response_blocked',
      message: 'the response was blocked (finishReason SAFETY)',
    });
    assert.equal((parsed[2]!.stats as Record<string, unknown>).input_tokens, 9);
  });

  it('keeps the partial text of a RECITATION stop and fails', () => {
    const item: GeminiInlinedResponse = {
      response: { candidates: [{ content: { parts: [{ text: 'Once upon' }] }, finishReason: 'RECITATION' }] },
    };
    const outcome = renderGeminiResponse(item, CTX, AT);
    assert.equal(
      outcome.kind === 'failed' && outcome.message,
      'the response was blocked (finishReason RECITATION)',
    );
    assert.equal(lines(outcome)[2]!.content, 'Once upon');
    assert.equal(lines(outcome)[3]!.status, 'error');
  });

  it('fails a blocked prompt', () => {
    const item: GeminiInlinedResponse = {
      response: { promptFeedback: { blockReason: 'PROHIBITED_CONTENT' } },
    };
    const outcome = renderGeminiResponse(item, CTX, AT);
    assert.equal(
      outcome.kind === 'failed' && outcome.message,
      'the prompt was blocked (blockReason PROHIBITED_CONTENT)',
    );
  });

  it('fails other finish reasons and a response without candidates', () => {
    const other = renderGeminiResponse({ response: { candidates: [{ finishReason: 'OTHER' }] } }, CTX, AT);
    assert.equal(other.kind === 'failed' && other.message, 'the response ended with finishReason OTHER');
    const none = renderGeminiResponse({ response: {} }, CTX, AT);
    assert.equal(none.kind === 'failed' && none.message, 'the response has no candidates');
  });

  it('renderGeminiFailure ends with the error result line', () => {
    const outcome = renderGeminiFailure(
      CTX,
      { type: 'batch_expired', message: 'batch expired before the request ran' },
      AT,
    );
    assert.equal(outcome.kind, 'failed');
    const result = lines(outcome).at(-1)!;
    assert.deepEqual(result.error, {
      type: 'batch_expired',
      message: 'batch expired before the request ran',
    });
  });
});

describe('geminiBatches against the fake server', () => {
  let fake: FakeVendorServer;
  before(async () => {
    fake = await startFakeGemini();
  });
  afterEach(() => fake.reset());
  after(() => fake.close());

  async function submitted(request: BatchRequest = REQUEST): Promise<string> {
    return value(await geminiBatches.submit(request, harness(fake).call)).id;
  }

  describe('submit', () => {
    it('posts the exact inline create body to the model path with the key header', async () => {
      const seenHeaders: Headers[] = [];
      const { call } = harness(fake, {
        fetch: (input, init) => {
          seenHeaders.push(new Headers(init?.headers));
          return globalThis.fetch(input, init);
        },
      });
      const id = value(await geminiBatches.submit(REQUEST, call)).id;
      assert.match(id, /^batches\/\d+$/);
      assert.equal(fake.requests.length, 1);
      const sent = fake.requests[0]!;
      assert.equal(sent.method, 'POST');
      assert.equal(sent.path, `/v1beta/models/${MODEL}:batchGenerateContent`);
      assert.equal(sent.authorized, true);
      assert.equal(sent.headers['content-type'], 'application/json');
      assert.equal(sent.headers['x-goog-api-key'], undefined);
      assert.equal(seenHeaders[0]!.get('x-goog-api-key'), fake.apiKey);
      assert.deepEqual(JSON.parse(sent.body), {
        batch: {
          displayName: REQUEST.customId,
          inputConfig: {
            requests: {
              requests: [
                {
                  request: {
                    contents: [{ role: 'user', parts: [{ text: 'Say hello' }] }],
                    generationConfig: { maxOutputTokens: 16000 },
                  },
                  metadata: { key: REQUEST.customId },
                },
              ],
            },
          },
        },
      });
      const [batch] = fake.batches();
      assert.equal(batch!.id, id);
      assert.equal(batch!.customId, REQUEST.customId);
      assert.equal(batch!.model, MODEL);
      assert.equal(batch!.prompt, 'Say hello');
      assert.equal(batch!.vendorState, 'BATCH_STATE_PENDING');
    });

    it('sends the schema as responseMimeType + responseJsonSchema', async () => {
      const schema = { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'] };
      await submitted({ ...REQUEST, schema });
      const body = JSON.parse(fake.requests[0]!.body);
      assert.deepEqual(body.batch.inputConfig.requests.requests[0].request.generationConfig, {
        maxOutputTokens: 16000,
        responseMimeType: 'application/json',
        responseJsonSchema: schema,
      });
    });

    it('accepts a model given as models/<name>', async () => {
      await submitted({ ...REQUEST, model: `models/${MODEL}` });
      assert.equal(fake.requests[0]!.path, `/v1beta/models/${MODEL}:batchGenerateContent`);
    });

    it('retries 429 RESOURCE_EXHAUSTED without retry-after with backoff', async () => {
      fake.inject({ method: 'POST', path: /batchGenerateContent/, status: 429 });
      const h = harness(fake);
      const id = value(await geminiBatches.submit(REQUEST, h.call)).id;
      assert.match(id, /^batches\//);
      assert.deepEqual(h.sleeps, [500]);
      assert.equal(fake.requests.length, 2);
      assert.equal(fake.batches().length, 1);
    });

    it('honours retry-after on 429', async () => {
      fake.inject({ method: 'POST', status: 429, retryAfterSeconds: 2 });
      const h = harness(fake);
      value(await geminiBatches.submit(REQUEST, h.call));
      assert.deepEqual(h.sleeps, [2000]);
    });

    it('does not retry a 500 on create', async () => {
      fake.inject({ method: 'POST', status: 500, times: 2 });
      const h = harness(fake);
      const e = failure(await geminiBatches.submit(REQUEST, h.call));
      assert.equal(e.kind, 'unavailable');
      assert.equal(fake.requests.length, 1);
      assert.deepEqual(h.sleeps, []);
    });

    it('leaves a create whose answer was lost findable', async () => {
      fake.inject({ method: 'POST', status: 503, afterEffect: true });
      const e = failure(await geminiBatches.submit(REQUEST, harness(fake).call));
      assert.equal(e.kind, 'unavailable');
      const [batch] = fake.batches();
      const found = value(await geminiBatches.find(REQUEST.customId, new Date(), harness(fake).call));
      assert.deepEqual(found, { kind: 'found', id: batch!.id, duplicates: [] });
    });

    it('maps a wrong key to rejected 401 with the vendor message, never the key', async () => {
      const wrong = 'AIzaWrongKey-0123456789';
      const e = failure(await geminiBatches.submit(REQUEST, harness(fake, { apiKey: wrong }).call));
      assert.deepEqual(e, {
        kind: 'rejected',
        status: 401,
        type: 'API_KEY_INVALID',
        message: 'API key not valid. Please pass a valid API key.',
      });
      assert.equal(JSON.stringify(e).includes(wrong), false);
      assert.equal(fake.requests[0]!.authorized, false);
      assert.equal(fake.batches().length, 0);
    });

    it('maps a missing key to rejected 403 PERMISSION_DENIED', async () => {
      const e = failure(await geminiBatches.submit(REQUEST, harness(fake, { apiKey: '' }).call));
      assert.equal(e.kind, 'rejected');
      assert.equal(e.kind === 'rejected' && e.status, 403);
      assert.equal(e.kind === 'rejected' && e.type, 'PERMISSION_DENIED');
    });

    it('maps injected 401 and 403 to rejected with the vendor message', async () => {
      for (const status of [401, 403]) {
        fake.inject({ status });
        const e = failure(await geminiBatches.submit(REQUEST, harness(fake).call));
        assert.equal(e.kind, 'rejected');
        if (e.kind !== 'rejected') return;
        assert.equal(e.status, status);
        assert.equal(e.type, status === 401 ? 'UNAUTHENTICATED' : 'PERMISSION_DENIED');
        assert.ok(e.message.length > 0);
        assert.equal(e.message.includes(fake.apiKey), false);
      }
    });

    it('answers protocol for a create answer without a batch name', async () => {
      const { fetch } = stubFetch(() => ({ status: 200, body: { done: false } }));
      const e = failure(await geminiBatches.submit(REQUEST, stubCall(fetch)));
      assert.equal(e.kind, 'protocol');
      assert.match(e.kind === 'protocol' ? e.message : '', /name/);
    });
  });

  describe('check', () => {
    it('reports a pending batch in progress (the fake moves it to RUNNING)', async () => {
      const id = await submitted();
      const state = value(await geminiBatches.check(id, CTX, harness(fake).call));
      assert.deepEqual(state, { kind: 'inProgress', id });
      assert.equal(fake.requests.at(-1)!.path, `/v1beta/${id}`);
      assert.equal(fake.batches()[0]!.vendorState, 'BATCH_STATE_RUNNING');
    });

    it('renders a succeeded batch from response.inlinedResponses, thoughts skipped, stamped at endTime', async () => {
      const id = await submitted();
      fake.finish(id, { kind: 'succeeded', text: 'Hello there' });
      const outcome = ended(value(await geminiBatches.check(id, CTX, harness(fake).call)));
      assert.equal(outcome.kind, 'succeeded');
      const parsed = lines(outcome);
      assert.deepEqual(
        parsed.map((l) => l.type),
        ['init', 'message', 'message', 'result'],
      );
      assert.equal(parsed[0]!.session_id, CTX.sessionId);
      assert.equal(parsed[2]!.content, 'Hello there');
      assert.equal(parsed[2]!.delta, true);
      const stats = parsed[3]!.stats as Record<string, number>;
      // 'Say hello' = 3 tokens, 'Hello there' = 3 tokens, 7 thought tokens in the fake's total.
      assert.equal(stats.input_tokens, 3);
      assert.equal(stats.output_tokens, 3);
      assert.equal(stats.total_tokens, 13);
      const answer = await fetch(`${fake.baseUrl}/v1beta/${id}`, {
        headers: { 'x-goog-api-key': fake.apiKey },
      });
      const raw = (await answer.json()) as { metadata: { endTime: string } };
      assert.equal(parsed[0]!.timestamp, raw.metadata.endTime);
      // Re-rendering gives identical lines.
      const again = ended(value(await geminiBatches.check(id, CTX, harness(fake).call)));
      assert.deepEqual(again.lines, outcome.lines);
    });

    it('renders a structured answer', async () => {
      const echo = await startFakeGemini({ autoFinishMs: 0 });
      try {
        const h = harness(echo);
        const id = value(await geminiBatches.submit({ ...REQUEST, schema: { type: 'object' } }, h.call)).id;
        let state = value(await geminiBatches.check(id, { ...CTX, structured: true }, h.call));
        for (let i = 0; state.kind === 'inProgress' && i < 100; i++) {
          await new Promise((resolve) => setImmediate(resolve));
          state = value(await geminiBatches.check(id, { ...CTX, structured: true }, h.call));
        }
        const outcome = ended(state);
        assert.equal(outcome.kind, 'succeeded');
        assert.deepEqual(lines(outcome).at(-1)!.structured_output, { echo: 'Say hello' });
      } finally {
        await echo.close();
      }
    });

    it('fails a per-request error', async () => {
      const id = await submitted();
      fake.finish(id, { kind: 'errored', message: 'The input token count exceeds the maximum' });
      const outcome = ended(value(await geminiBatches.check(id, CTX, harness(fake).call)));
      assert.equal(
        outcome.kind === 'failed' && outcome.message,
        'batch request failed: 400: The input token count exceeds the maximum',
      );
      assert.equal(lines(outcome).at(-1)!.status, 'error');
    });

    it('fails a SAFETY refusal', async () => {
      const id = await submitted();
      fake.finish(id, { kind: 'refused' });
      const outcome = ended(value(await geminiBatches.check(id, CTX, harness(fake).call)));
      assert.equal(
        outcome.kind === 'failed' && outcome.message,
        'the response was blocked (finishReason SAFETY)',
      );
      assert.equal(outcome.lines.length, 3);
    });

    it('fails an expired batch', async () => {
      const id = await submitted();
      fake.finish(id, { kind: 'expired' });
      const outcome = ended(value(await geminiBatches.check(id, CTX, harness(fake).call)));
      assert.equal(outcome.kind === 'failed' && outcome.message, 'batch expired before the request ran');
    });

    it('fails a cancelled batch', async () => {
      const id = await submitted();
      fake.finish(id, { kind: 'cancelled' });
      const outcome = ended(value(await geminiBatches.check(id, CTX, harness(fake).call)));
      assert.equal(
        outcome.kind === 'failed' && outcome.message,
        'batch was cancelled before the request ran',
      );
    });

    it('fails a batch whose whole job failed', async () => {
      const id = await submitted();
      fake.finish(id, { kind: 'batchFailed', message: 'Internal error while processing the batch' });
      const outcome = ended(value(await geminiBatches.check(id, CTX, harness(fake).call)));
      assert.equal(
        outcome.kind === 'failed' && outcome.message,
        'batch failed: Internal error while processing the batch',
      );
      assert.deepEqual(lines(outcome).at(-1)!.error, {
        type: 'batch_failed',
        message: 'batch failed: Internal error while processing the batch',
      });
    });

    it('retries a 500 on GET with backoff', async () => {
      const id = await submitted();
      fake.inject({ method: 'GET', status: 500, times: 2 });
      const h = harness(fake);
      const state = value(await geminiBatches.check(id, CTX, h.call));
      assert.equal(state.kind, 'inProgress');
      assert.deepEqual(h.sleeps, [500, 1000]);
      assert.equal(fake.requests.filter((r) => r.method === 'GET').length, 3);
    });

    it('answers unavailable when 5xx outlasts the attempts', async () => {
      const id = await submitted();
      fake.inject({ method: 'GET', status: 503, times: 5 });
      const e = failure(await geminiBatches.check(id, CTX, harness(fake).call));
      assert.equal(e.kind, 'unavailable');
      assert.equal(e.kind === 'unavailable' && e.status, 503);
    });

    it('answers rejected 404 for an unknown batch', async () => {
      const e = failure(await geminiBatches.check('batches/404404', CTX, harness(fake).call));
      assert.equal(e.kind === 'rejected' && e.status, 404);
      assert.equal(e.kind === 'rejected' && e.type, 'NOT_FOUND');
    });
  });

  describe('cancel', () => {
    it('cancels a pending batch, which then reads CANCELLED', async () => {
      const id = await submitted();
      value(await geminiBatches.cancel(id, harness(fake).call));
      assert.equal(fake.requests.at(-1)!.path, `/v1beta/${id}:cancel`);
      assert.equal(fake.requests.at(-1)!.method, 'POST');
      assert.equal(fake.batches()[0]!.vendorState, 'BATCH_STATE_CANCELLED');
      const outcome = ended(value(await geminiBatches.check(id, CTX, harness(fake).call)));
      assert.equal(
        outcome.kind === 'failed' && outcome.message,
        'batch was cancelled before the request ran',
      );
    });

    it('is not an error for an ended or unknown batch', async () => {
      const id = await submitted();
      fake.finish(id, { kind: 'succeeded', text: 'done' });
      value(await geminiBatches.cancel(id, harness(fake).call));
      assert.equal(fake.batches()[0]!.vendorState, 'BATCH_STATE_SUCCEEDED');
      value(await geminiBatches.cancel('batches/404404', harness(fake).call));
    });

    it('accepts a refusal when the batch has ended, not when it still runs', async () => {
      let state = 'JOB_STATE_SUCCEEDED';
      const { fetch } = stubFetch((url) =>
        url.pathname.endsWith(':cancel')
          ? {
              status: 400,
              body: { error: { code: 400, message: 'Batch is done', status: 'FAILED_PRECONDITION' } },
            }
          : { status: 200, body: { name: 'batches/9', metadata: { state } } },
      );
      value(await geminiBatches.cancel('batches/9', stubCall(fetch)));
      state = 'JOB_STATE_RUNNING';
      const e = failure(await geminiBatches.cancel('batches/9', stubCall(fetch)));
      assert.equal(e.kind === 'rejected' && e.type, 'FAILED_PRECONDITION');
    });
  });

  describe('cleanup', () => {
    it('deletes the batch (even a running one) and counts a later 404 as done', async () => {
      const id = await submitted();
      assert.deepEqual(value(await geminiBatches.cleanup(id, harness(fake).call)), { kind: 'done' });
      assert.equal(fake.requests.at(-1)!.method, 'DELETE');
      assert.equal(fake.requests.at(-1)!.path, `/v1beta/${id}`);
      assert.equal(fake.batches()[0]!.deleted, true);
      assert.deepEqual(value(await geminiBatches.cleanup(id, harness(fake).call)), { kind: 'done' });
      assert.equal(fake.requests.at(-1)!.path, `/v1beta/${id}`);
      const e = failure(await geminiBatches.check(id, CTX, harness(fake).call));
      assert.equal(e.kind === 'rejected' && e.status, 404);
    });

    it('retries a 500 on delete', async () => {
      const id = await submitted();
      fake.inject({ method: 'DELETE', status: 500 });
      const h = harness(fake);
      assert.deepEqual(value(await geminiBatches.cleanup(id, h.call)), { kind: 'done' });
      assert.deepEqual(h.sleeps, [500]);
    });
  });

  describe('find', () => {
    it('finds the oldest batch of the display name and lists the others as duplicates', async () => {
      const first = await submitted();
      await submitted({ ...REQUEST, customId: 'run-other' });
      const second = await submitted();
      const found = value(await geminiBatches.find(REQUEST.customId, new Date(), harness(fake).call));
      assert.deepEqual(found, { kind: 'found', id: first, duplicates: [second] });
      assert.equal(fake.requests.at(-1)!.path, '/v1beta/batches?pageSize=100');
    });

    it('answers absent when no batch carries the display name', async () => {
      await submitted({ ...REQUEST, customId: 'run-other' });
      assert.deepEqual(value(await geminiBatches.find(REQUEST.customId, new Date(), harness(fake).call)), {
        kind: 'absent',
      });
    });

    it('answers absent for an empty list (proto-JSON leaves operations out)', async () => {
      assert.deepEqual(value(await geminiBatches.find(REQUEST.customId, new Date(), harness(fake).call)), {
        kind: 'absent',
      });
    });

    it('walks to the next page for an old match', async () => {
      const oldest = await submitted();
      for (let i = 0; i < 100; i++) await submitted({ ...REQUEST, customId: `run-filler-${i}` });
      const found = value(await geminiBatches.find(REQUEST.customId, new Date(), harness(fake).call));
      assert.deepEqual(found, { kind: 'found', id: oldest, duplicates: [] });
      const lists = fake.requests.filter((r) => r.path.startsWith('/v1beta/batches?'));
      assert.equal(lists.length, 2);
      assert.match(lists[1]!.path, /^\/v1beta\/batches\?pageSize=100&pageToken=.+/);
    });
  });
});

describe('geminiBatches with hand-built answers', () => {
  const op = (state: string, extra: Record<string, unknown> = {}) => ({
    name: 'batches/77',
    metadata: { state, displayName: 'run-x', endTime: AT.toISOString(), ...extra },
    done: true,
  });
  const item = {
    response: {
      candidates: [{ content: { parts: [{ text: 'from metadata.output' }] }, finishReason: 'STOP' }],
    },
  };

  it('reads results from metadata.output.inlinedResponses (SDK path) with a JOB_STATE_ state', async () => {
    const { fetch, seen } = stubFetch(() => ({
      status: 200,
      body: op('JOB_STATE_SUCCEEDED', { output: { inlinedResponses: { inlinedResponses: [item] } } }),
    }));
    const outcome = ended(value(await geminiBatches.check('batches/77', CTX, stubCall(fetch))));
    assert.equal(outcome.kind, 'succeeded');
    assert.equal(lines(outcome)[2]!.content, 'from metadata.output');
    assert.equal(lines(outcome)[0]!.timestamp, AT.toISOString());
    assert.deepEqual(seen, ['GET /v1beta/batches/77']);
  });

  it('reads results from response.inlinedResponses (REST path)', async () => {
    const { fetch } = stubFetch(() => ({
      status: 200,
      body: { ...op('BATCH_STATE_SUCCEEDED'), response: { inlinedResponses: { inlinedResponses: [item] } } },
    }));
    const outcome = ended(value(await geminiBatches.check('batches/77', CTX, stubCall(fetch))));
    assert.equal(lines(outcome)[2]!.content, 'from metadata.output');
  });

  it('treats JOB_STATE_ non-terminal states as in progress', async () => {
    const { fetch } = stubFetch(() => ({ status: 200, body: { ...op('JOB_STATE_RUNNING'), done: false } }));
    assert.deepEqual(value(await geminiBatches.check('batches/77', CTX, stubCall(fetch))), {
      kind: 'inProgress',
      id: 'batches/77',
    });
  });

  it('fails on a top-level error even without a state', async () => {
    const { fetch } = stubFetch(() => ({
      status: 200,
      body: { name: 'batches/77', done: true, error: { code: 13, message: 'boom' } },
    }));
    const outcome = ended(value(await geminiBatches.check('batches/77', CTX, stubCall(fetch))));
    assert.equal(outcome.kind === 'failed' && outcome.message, 'batch failed: boom');
  });

  it('renders a JOB_STATE_EXPIRED batch as expired', async () => {
    const { fetch } = stubFetch(() => ({ status: 200, body: op('JOB_STATE_EXPIRED') }));
    const outcome = ended(value(await geminiBatches.check('batches/77', CTX, stubCall(fetch))));
    assert.equal(outcome.kind === 'failed' && outcome.message, 'batch expired before the request ran');
  });

  it('answers protocol for a malformed result item', async () => {
    const { fetch } = stubFetch(() => ({
      status: 200,
      body: {
        ...op('BATCH_STATE_SUCCEEDED'),
        response: { inlinedResponses: { inlinedResponses: [{ error: 'x' }] } },
      },
    }));
    const e = failure(await geminiBatches.check('batches/77', CTX, stubCall(fetch)));
    assert.equal(e.kind, 'protocol');
  });

  it('answers protocol for a non-JSON answer', async () => {
    const fetch = (async () => new Response('<html>', { status: 200 })) as typeof globalThis.fetch;
    const e = failure(await geminiBatches.check('batches/77', CTX, stubCall(fetch)));
    assert.deepEqual(e, { kind: 'protocol', message: 'GET batches/77: the answer is not JSON' });
  });

  it('stops walking the list at batches older than since − 60 s', async () => {
    const since = new Date('2026-11-30T12:00:00Z');
    const old = new Date(since.getTime() - GEMINI_FIND_SKEW_MS - 1).toISOString();
    const { fetch, seen } = stubFetch(() => ({
      status: 200,
      body: {
        operations: [{ name: 'batches/1', metadata: { displayName: 'run-other', createTime: old } }],
        nextPageToken: 'more',
      },
    }));
    assert.deepEqual(value(await geminiBatches.find('run-x', since, stubCall(fetch))), { kind: 'absent' });
    assert.equal(seen.length, 1);
  });

  it('keeps walking while pages hold recent batches, and accepts a batches: [...] list', async () => {
    const since = new Date('2026-11-30T12:00:00Z');
    const recent = new Date(since.getTime() - GEMINI_FIND_SKEW_MS).toISOString();
    const older = new Date(since.getTime() - 3_600_000).toISOString();
    const { fetch, seen } = stubFetch((url) =>
      url.searchParams.get('pageToken') === null
        ? {
            status: 200,
            body: {
              operations: [{ name: 'batches/3', metadata: { displayName: 'run-x', createTime: recent } }],
              nextPageToken: 'p2',
            },
          }
        : {
            status: 200,
            body: { batches: [{ name: 'batches/2', displayName: 'run-x', createTime: older }] },
          },
    );
    assert.deepEqual(value(await geminiBatches.find('run-x', since, stubCall(fetch))), {
      kind: 'found',
      id: 'batches/2',
      duplicates: ['batches/3'],
    });
    assert.deepEqual(seen, [
      'GET /v1beta/batches?pageSize=100',
      'GET /v1beta/batches?pageSize=100&pageToken=p2',
    ]);
  });
});

describe('fake Gemini server', () => {
  it('refuses sampling parameters, unknown fields and a missing displayName with 400 INVALID_ARGUMENT', async () => {
    await withFake(async (fake) => {
      const post = async (batch: unknown) => {
        const response = await fetch(`${fake.baseUrl}/v1beta/models/${MODEL}:batchGenerateContent`, {
          method: 'POST',
          headers: { 'x-goog-api-key': fake.apiKey, 'content-type': 'application/json' },
          body: JSON.stringify({ batch }),
        });
        return { status: response.status, body: (await response.json()) as { error?: { status?: string } } };
      };
      const inline = (generationConfig: unknown, extra: Record<string, unknown> = {}) => ({
        displayName: 'run-a',
        inputConfig: {
          requests: {
            requests: [
              { request: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig } },
            ],
          },
        },
        ...extra,
      });
      for (const bad of [
        inline({ maxOutputTokens: 10, temperature: 0.2 }),
        inline({ maxOutputTokens: 10, top_p: 0.9 }),
        inline({ maxOutputTokens: 10, maxTokens: 5 }),
        inline({ maxOutputTokens: 10 }, { displayName: '' }),
        inline({ maxOutputTokens: 10, responseJsonSchema: { type: 'object' } }),
      ]) {
        const answer = await post(bad);
        assert.equal(answer.status, 400, JSON.stringify(bad));
        assert.equal(answer.body.error?.status, 'INVALID_ARGUMENT');
      }
      assert.equal(fake.batches().length, 0);
      const good = await post(inline({ max_output_tokens: 10 }));
      assert.equal(good.status, 200);
      assert.equal(fake.batches().length, 1);
    });
  });

  it('never records the key, also when sent as a query parameter', async () => {
    await withFake(async (fake) => {
      await fetch(`${fake.baseUrl}/v1beta/batches?pageSize=5&key=${fake.apiKey}`);
      await fetch(`${fake.baseUrl}/v1beta/batches`, { headers: { 'x-goog-api-key': fake.apiKey } });
      assert.deepEqual(
        fake.requests.map((r) => [r.path, r.authorized]),
        [
          ['/v1beta/batches?pageSize=5', true],
          ['/v1beta/batches', true],
        ],
      );
      assert.equal(JSON.stringify(fake.requests).includes(fake.apiKey), false);
    });
  });

  it('finishes on its own after autoFinishMs with autoOutcome', async () => {
    const fake = await startFakeGemini({ autoFinishMs: 0, autoOutcome: () => ({ kind: 'expired' }) });
    try {
      const { call } = harness(fake);
      const id = value(await geminiBatches.submit(REQUEST, call)).id;
      let state = value(await geminiBatches.check(id, CTX, call));
      for (let i = 0; state.kind === 'inProgress' && i < 100; i++) {
        await new Promise((resolve) => setImmediate(resolve));
        state = value(await geminiBatches.check(id, CTX, call));
      }
      const outcome = ended(state);
      assert.equal(outcome.kind === 'failed' && outcome.message, 'batch expired before the request ran');
      assert.throws(() => fake.finish(id, { kind: 'cancelled' }), /already ended/);
    } finally {
      await fake.close();
    }
  });
});
