// Usage read per wire protocol: answers written out as the vendors send them (the field names of the SDKs' types:
// @anthropic-ai/sdk Message / RawMessageStreamEvent, openai Response / ResponseStreamEvent / ChatCompletion(Chunk),
// @google/genai GenerateContentResponse), whole and streamed, the streams cut at every byte.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { UsageApi } from './routes.ts';
import { SseDecoder } from './sse.ts';
import { streamMeter, type Tokens, usageFromBody } from './usage.ts';

const sse = (events: readonly [string | undefined, unknown][]) =>
  events
    .map(
      ([name, data]) =>
        `${name === undefined ? '' : `event: ${name}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`,
    )
    .join('');

/** The usage a meter reads from `text` fed in two pieces cut at byte `cut`. */
function metered(api: UsageApi, text: string, cut: number): Tokens | undefined {
  const meter = streamMeter(api);
  const decoder = new SseDecoder((e) => meter.event(e));
  const bytes = new TextEncoder().encode(text);
  decoder.feed(bytes.subarray(0, cut));
  decoder.feed(bytes.subarray(cut));
  decoder.end();
  return meter.tokens();
}

/** Every cut gives `expected`. */
function assertEveryCut(api: UsageApi, text: string, expected: Tokens): void {
  const length = new TextEncoder().encode(text).length;
  for (let cut = 0; cut <= length; cut++)
    assert.deepEqual(metered(api, text, cut), expected, `cut at ${cut}`);
}

const ANTHROPIC_STREAM = sse([
  [
    'message_start',
    {
      type: 'message_start',
      message: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [],
        stop_reason: null,
        usage: {
          input_tokens: 120,
          output_tokens: 1,
          cache_creation_input_tokens: 30,
          cache_read_input_tokens: 400,
        },
      },
    },
  ],
  ['ping', { type: 'ping' }],
  [
    'content_block_start',
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  ],
  [
    'content_block_delta',
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hé €😀' } },
  ],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  [
    'message_delta',
    {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: {
        input_tokens: null,
        output_tokens: 57,
        cache_creation_input_tokens: null,
        cache_read_input_tokens: null,
      },
    },
  ],
  ['message_stop', { type: 'message_stop' }],
]);

const RESPONSES_USAGE = {
  input_tokens: 500,
  input_tokens_details: { cached_tokens: 300, cache_write_tokens: 50 },
  output_tokens: 80,
  output_tokens_details: { reasoning_tokens: 20 },
  total_tokens: 580,
};

const RESPONSES_STREAM = sse([
  [
    'response.created',
    {
      type: 'response.created',
      sequence_number: 0,
      response: { id: 'resp_1', status: 'in_progress', usage: null },
    },
  ],
  ['response.output_text.delta', { type: 'response.output_text.delta', sequence_number: 4, delta: 'ok ü' }],
  [
    'response.completed',
    {
      type: 'response.completed',
      sequence_number: 9,
      response: { id: 'resp_1', status: 'completed', usage: RESPONSES_USAGE },
    },
  ],
]);

const CHAT_STREAM = sse([
  [
    undefined,
    {
      id: 'c1',
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: { role: 'assistant' } }],
      usage: null,
    },
  ],
  [
    undefined,
    {
      id: 'c1',
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: { content: 'hï' } }],
      usage: null,
    },
  ],
  [
    undefined,
    {
      id: 'c1',
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
      usage: null,
    },
  ],
  [
    undefined,
    {
      id: 'c1',
      object: 'chat.completion.chunk',
      choices: [],
      usage: {
        prompt_tokens: 200,
        completion_tokens: 40,
        total_tokens: 240,
        prompt_tokens_details: { cached_tokens: 64 },
      },
    },
  ],
  [undefined, '[DONE]'],
]);

const GEMINI_STREAM = sse([
  [
    undefined,
    {
      candidates: [{ content: { role: 'model', parts: [{ text: 'Hal' }] } }],
      usageMetadata: { promptTokenCount: 1000, totalTokenCount: 1000 },
    },
  ],
  [
    undefined,
    {
      candidates: [{ content: { role: 'model', parts: [{ text: 'lo' }] }, finishReason: 'STOP' }],
      usageMetadata: {
        promptTokenCount: 1000,
        candidatesTokenCount: 30,
        thoughtsTokenCount: 12,
        cachedContentTokenCount: 600,
        toolUsePromptTokenCount: 5,
        totalTokenCount: 1047,
      },
    },
  ],
]);

describe('usage of streamed answers, cut at every byte', () => {
  it('Anthropic Messages: message_start, then message_delta’s cumulative counts (null keeps the last)', () => {
    assertEveryCut('anthropic-messages', ANTHROPIC_STREAM, {
      input: 120,
      output: 57,
      cacheRead: 400,
      cacheWrite: 30,
    });
  });
  it('OpenAI Responses: response.completed’s usage; cached and cache-written tokens taken out of input', () => {
    assertEveryCut('openai-responses', RESPONSES_STREAM, {
      input: 150,
      output: 80,
      cacheRead: 300,
      cacheWrite: 50,
    });
  });
  it('OpenAI Chat Completions: the usage chunk before [DONE]', () => {
    assertEveryCut('openai-chat', CHAT_STREAM, { input: 136, output: 40, cacheRead: 64, cacheWrite: 0 });
  });
  it('Gemini: the last chunk’s usageMetadata; tool-use prompt in input, thoughts in output', () => {
    assertEveryCut('gemini', GEMINI_STREAM, { input: 405, output: 42, cacheRead: 600, cacheWrite: 0 });
  });

  it('Anthropic: a message_delta that updates input counts too (server tools) wins', () => {
    const text = sse([
      [
        'message_start',
        { type: 'message_start', message: { usage: { input_tokens: 10, output_tokens: 1 } } },
      ],
      [
        'message_delta',
        {
          type: 'message_delta',
          usage: {
            input_tokens: 25,
            output_tokens: 9,
            cache_read_input_tokens: 3,
            cache_creation_input_tokens: null,
          },
        },
      ],
    ]);
    assertEveryCut('anthropic-messages', text, { input: 25, output: 9, cacheRead: 3, cacheWrite: 0 });
  });
  it('Anthropic: a stream cut before message_delta has the start’s counts (what the vendor bills for the input)', () => {
    const text = ANTHROPIC_STREAM.slice(0, ANTHROPIC_STREAM.indexOf('event: message_delta'));
    assertEveryCut('anthropic-messages', text, { input: 120, output: 1, cacheRead: 400, cacheWrite: 30 });
  });
  it('OpenAI Responses: response.incomplete and response.failed count too', () => {
    for (const type of ['response.incomplete', 'response.failed']) {
      const text = sse([[type, { type, response: { usage: { input_tokens: 7, output_tokens: 2 } } }]]);
      assert.deepEqual(metered('openai-responses', text, 3), {
        input: 7,
        output: 2,
        cacheRead: 0,
        cacheWrite: 0,
      });
    }
  });
  it('no usage event: none', () => {
    assert.equal(
      metered(
        'openai-chat',
        sse([
          [undefined, { choices: [] }],
          [undefined, '[DONE]'],
        ]),
        5,
      ),
      undefined,
    );
    assert.equal(
      metered(
        'openai-responses',
        sse([['response.created', { type: 'response.created', response: { usage: null } }]]),
        1,
      ),
      undefined,
    );
    assert.equal(
      metered(
        'anthropic-messages',
        sse([['error', { type: 'error', error: { type: 'overloaded_error' } }]]),
        0,
      ),
      undefined,
    );
    assert.equal(metered('gemini', 'data: not json\n\n', 2), undefined);
  });
});

describe('usage of whole answers', () => {
  it('Anthropic Message', () => {
    assert.deepEqual(
      usageFromBody('anthropic-messages', {
        id: 'msg_1',
        type: 'message',
        content: [{ type: 'text', text: 'hi' }],
        usage: {
          input_tokens: 12,
          output_tokens: 34,
          cache_creation_input_tokens: null,
          cache_read_input_tokens: 56,
          cache_creation: null,
          server_tool_use: null,
          service_tier: 'standard',
        },
      }),
      { input: 12, output: 34, cacheRead: 56, cacheWrite: 0 },
    );
  });
  it('OpenAI Response', () => {
    assert.deepEqual(
      usageFromBody('openai-responses', { id: 'resp_1', output: [], usage: RESPONSES_USAGE }),
      {
        input: 150,
        output: 80,
        cacheRead: 300,
        cacheWrite: 50,
      },
    );
  });
  it('OpenAI ChatCompletion', () => {
    assert.deepEqual(
      usageFromBody('openai-chat', {
        choices: [],
        usage: {
          prompt_tokens: 90,
          completion_tokens: 10,
          total_tokens: 100,
          prompt_tokens_details: { cached_tokens: 20, cache_write_tokens: 5 },
          completion_tokens_details: { reasoning_tokens: 4 },
        },
      }),
      { input: 65, output: 10, cacheRead: 20, cacheWrite: 5 },
    );
  });
  it('Gemini GenerateContentResponse, and a streamGenerateContent answered as a JSON array', () => {
    const last = {
      promptTokenCount: 40,
      candidatesTokenCount: 8,
      cachedContentTokenCount: 10,
      totalTokenCount: 48,
    };
    assert.deepEqual(usageFromBody('gemini', { candidates: [], usageMetadata: last }), {
      input: 30,
      output: 8,
      cacheRead: 10,
      cacheWrite: 0,
    });
    assert.deepEqual(
      usageFromBody('gemini', [
        { candidates: [], usageMetadata: { promptTokenCount: 40 } },
        { candidates: [], usageMetadata: last },
        { candidates: [] },
      ]),
      { input: 30, output: 8, cacheRead: 10, cacheWrite: 0 },
    );
  });
  it('no usage, or counts of the wrong type: none or zero, never negative', () => {
    assert.equal(usageFromBody('anthropic-messages', { content: [] }), undefined);
    assert.equal(usageFromBody('openai-chat', 'text'), undefined);
    assert.equal(usageFromBody('gemini', [{ candidates: [] }]), undefined);
    assert.deepEqual(usageFromBody('openai-responses', { usage: { input_tokens: '5', output_tokens: -3 } }), {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
    });
    assert.deepEqual(
      usageFromBody('openai-chat', {
        usage: { prompt_tokens: 5, prompt_tokens_details: { cached_tokens: 9 } },
      }),
      { input: 0, output: 0, cacheRead: 9, cacheWrite: 0 },
    );
  });
});
