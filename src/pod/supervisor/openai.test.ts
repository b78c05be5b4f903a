import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import { extractRunResult, type TokenUsage, type Vendor } from '../../vendors/cli/index.ts';
import {
  type ChatTurn,
  chatCompletion,
  chatTurnOf,
  completionChunk,
  completionId,
  modelList,
  openAiError,
  openAiUsage,
  SSE_DONE,
  sseData,
  streamedText,
  systemPromptOf,
  usageChunk,
} from './openai.ts';

/** The turn of a request that must be accepted. */
function turn(body: unknown): ChatTurn {
  const r = chatTurnOf(body);
  if (!r.ok) assert.fail(`refused: ${r.error.message}`);
  return r.value;
}

/** The problem of a request that must be refused. */
function refused(body: unknown): { message: string; param: string | null } {
  const r = chatTurnOf(body);
  if (r.ok) assert.fail(`accepted: ${JSON.stringify(r.value)}`);
  return r.error;
}

const user = (content: unknown) => ({ role: 'user', content });

describe('chat request validation', () => {
  it('accepts one user message: its text is the prompt, nothing else set', () => {
    assert.deepEqual(turn({ messages: [user('hello')] }), {
      prompt: 'hello',
      system: undefined,
      stream: false,
      includeUsage: false,
      sessionId: undefined,
    });
  });

  it('ignores what it does not use (model, temperature, max_tokens, user, unknown fields) and takes stream options', () => {
    const t = turn({
      model: 'gpt-4o',
      messages: [user('x')],
      temperature: 0.2,
      max_tokens: 10,
      user: 'u-1',
      n: 1,
      whatever: { deep: true },
      stream: true,
      stream_options: { include_usage: true },
      session_id: 'sess-1',
    });
    assert.equal(t.stream, true);
    assert.equal(t.includeUsage, true);
    assert.equal(t.sessionId, 'sess-1');
  });

  it('treats null optional fields as absent', () => {
    const t = turn({
      messages: [user('x')],
      model: null,
      stream: null,
      stream_options: null,
      session_id: null,
    });
    assert.equal(t.stream, false);
    assert.equal(t.includeUsage, false);
    assert.equal(t.sessionId, undefined);
  });

  it('include_usage without stream is kept but harmless; stream false is not a stream', () => {
    const t = turn({ messages: [user('x')], stream: false, stream_options: { include_usage: true } });
    assert.equal(t.stream, false);
  });

  const bad: [string, unknown, RegExp, string | null][] = [
    ['no messages', {}, /messages/, 'messages'],
    ['empty messages', { messages: [] }, /must not be empty/, 'messages'],
    ['messages not an array', { messages: 'hi' }, /messages must be an array/, 'messages'],
    [
      'an unknown role',
      { messages: [{ role: 'robot', content: 'x' }] },
      /role must be one of/,
      'messages[0].role',
    ],
    ['content missing', { messages: [{ role: 'user' }] }, /Expected "content"/, 'messages[0].content'],
    ...(['user', 'system', 'developer', 'tool'] as const).map((role): [string, unknown, RegExp, string] => [
      `${role} content null (only an assistant message may have none)`,
      { messages: [user('x'), { role, content: null }, user('y')] },
      /content must be a string or an array/,
      'messages[1].content',
    ]),
    [
      'assistant content a number',
      { messages: [{ role: 'assistant', content: 3 }, user('x')] },
      /content must be a string or an array/,
      'messages[0].content',
    ],
    [
      'content a number',
      { messages: [user(5)] },
      /content must be a string or an array/,
      'messages[0].content',
    ],
    ['stream not a boolean', { messages: [user('x')], stream: 'yes' }, /stream must be a boolean/, 'stream'],
    [
      'include_usage not a boolean',
      { messages: [user('x')], stream_options: { include_usage: 1 } },
      /include_usage/,
      'stream_options.include_usage',
    ],
    [
      'an empty session_id',
      { messages: [user('x')], session_id: '' },
      /session_id must not be empty/,
      'session_id',
    ],
    [
      'a session_id not a string',
      { messages: [user('x')], session_id: 7 },
      /session_id must be a string/,
      'session_id',
    ],
    ['a model not a string', { messages: [user('x')], model: 4 }, /model must be a string/, 'model'],
    ['a body that is not an object', 'hello', /object/i, null],
    ['a null body', null, /object/i, null],
  ];
  for (const [what, body, message, param] of bad) {
    it(`refuses ${what}`, () => {
      const p = refused(body);
      assert.match(p.message, message);
      assert.equal(p.param, param);
      if (param !== null) assert.ok(p.message.startsWith(`${param}: `), p.message);
    });
  }

  it('refuses content parts other than text, naming the part and its type', () => {
    const p = refused({
      messages: [
        user([
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'https://x' } },
        ]),
      ],
    });
    assert.equal(p.param, 'messages[0].content[1]');
    assert.equal(p.message, 'messages[0].content[1]: only text content parts are supported, got "image_url"');
  });

  it('refuses a malformed text part', () => {
    for (const part of [{ type: 'text' }, { type: 'text', text: 3 }, 'text', null, { text: 'no type' }]) {
      const p = refused({ messages: [user([part])] });
      assert.equal(p.param, 'messages[0].content[0]', JSON.stringify(part));
      assert.match(p.message, /a content part must be/);
    }
  });

  it('refuses a conversation that does not end with the user', () => {
    for (const messages of [
      [{ role: 'system', content: 'only a system prompt' }],
      [user('q'), { role: 'assistant', content: 'a' }],
      [user('q'), { role: 'tool', content: 'result' }],
      [user('q'), { role: 'assistant', content: 'a' }, { role: 'developer', content: 'late system' }],
    ]) {
      const p = refused({ messages });
      assert.equal(p.param, 'messages');
      assert.match(p.message, /last message .* must be from the user/);
    }
  });

  it('refuses a last user message without text', () => {
    for (const content of ['', '   \n', []])
      assert.match(refused({ messages: [user(content)] }).message, /no text/);
  });
});

describe('prompt mapping', () => {
  it('joins text parts of one message with a newline', () => {
    assert.equal(
      turn({
        messages: [
          user([
            { type: 'text', text: 'one' },
            { type: 'text', text: 'two' },
          ]),
        ],
      }).prompt,
      'one\ntwo',
    );
  });

  it('moves system and developer messages, wherever they are, to the system prompt', () => {
    const t = turn({
      messages: [
        { role: 'system', content: 'Be brief.' },
        user('hello'),
        { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
      ],
    });
    assert.equal(t.prompt, 'hello', 'one user message besides system ones: its text alone');
    assert.equal(t.system, 'Be brief.\n\nAnswer in French.');
  });

  it('skips blank system messages', () => {
    assert.equal(turn({ messages: [{ role: 'system', content: '  ' }, user('x')] }).system, undefined);
  });

  it('turns a conversation into a transcript ending with the last user message', () => {
    const t = turn({
      messages: [
        { role: 'system', content: 'sys' },
        user('What is 2+2?'),
        { role: 'assistant', content: '4' },
        { role: 'tool', content: 'calculator: 4' },
        user([{ type: 'text', text: 'And 3+3?' }]),
      ],
    });
    assert.equal(t.prompt, 'User: What is 2+2?\n\nAssistant: 4\n\nTool: calculator: 4\n\nUser: And 3+3?');
    assert.equal(t.system, 'sys');
  });

  it("leaves an assistant tool-call message without content (null or absent, as the SDK's types allow) out of the transcript", () => {
    const toolCall = { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const t = turn({
      messages: [
        user('run it'),
        { role: 'assistant', content: null, tool_calls: [toolCall] },
        { role: 'tool', tool_call_id: 'c1', content: 'ok' },
        { role: 'assistant', tool_calls: [toolCall] },
        user('and now?'),
      ],
    });
    assert.equal(t.prompt, 'User: run it\n\nTool: ok\n\nUser: and now?');
    // It says nothing, so it neither ends a conversation nor makes one of a lone user message.
    assert.match(
      refused({ messages: [user('q'), { role: 'assistant', content: null }] }).message,
      /last message .* must be from the user/,
    );
    assert.equal(turn({ messages: [{ role: 'assistant', content: null }, user('q')] }).prompt, 'q');
  });

  it('two user messages in a row are a transcript too', () => {
    assert.equal(turn({ messages: [user('a'), user('b')] }).prompt, 'User: a\n\nUser: b');
  });

  it('keeps the text as it is (no trimming, unicode intact)', () => {
    assert.equal(turn({ messages: [user('  héllo 🌍\n')] }).prompt, '  héllo 🌍\n');
  });

  it('puts the definition system prompt before the request one', () => {
    assert.equal(systemPromptOf('def', 'req'), 'def\n\nreq');
    assert.equal(systemPromptOf(undefined, 'req'), 'req');
    assert.equal(systemPromptOf('def', undefined), 'def');
    assert.equal(systemPromptOf(' \n', undefined), undefined);
    assert.equal(systemPromptOf(undefined, undefined), undefined);
  });
});

describe('responses', () => {
  const head = { id: 'chatcmpl-ab', created: 1_800_000_000, model: 'claude-opus-5-5' };
  const usage: TokenUsage = { input: 12, output: 7, cacheRead: 3, cacheWrite: 2, total: 24 };

  it('makes ids of chatcmpl- and the random bytes in hex', () => {
    assert.equal(completionId(new Uint8Array([0, 1, 171, 255])), 'chatcmpl-0001abff');
    assert.match(completionId(new Uint8Array(12)), /^chatcmpl-[0]{24}$/);
  });

  it('counts all input as prompt tokens, output as completion tokens, cache reads as cached', () => {
    assert.deepEqual(openAiUsage(usage), {
      prompt_tokens: 17,
      completion_tokens: 7,
      total_tokens: 24,
      prompt_tokens_details: { cached_tokens: 3 },
    });
    assert.deepEqual(openAiUsage(undefined), {
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      prompt_tokens_details: { cached_tokens: 0 },
    });
  });

  it('builds a chat.completion with the answer, usage and the session', () => {
    assert.deepEqual(chatCompletion(head, 'the answer', usage, 'sess-1'), {
      id: 'chatcmpl-ab',
      object: 'chat.completion',
      created: 1_800_000_000,
      model: 'claude-opus-5-5',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'the answer', refusal: null },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: openAiUsage(usage),
      session_id: 'sess-1',
    });
    assert.ok(!('session_id' in chatCompletion(head, '', undefined, undefined)), 'no session, no field');
  });

  it("gives the message refusal: null, which the openai SDK's ChatCompletionMessage requires", () => {
    const completion: ChatCompletion = chatCompletion(head, 'the answer', usage, undefined);
    const message = completion.choices[0]?.message;
    assert.ok(message !== undefined && Object.hasOwn(message, 'refusal'), 'refusal is present');
    assert.equal(message.refusal, null);
  });

  it('builds chunks: role first, content deltas, the last one with finish_reason, the usage one without choices', () => {
    assert.deepEqual(completionChunk(head, { role: 'assistant', content: '' }, null, undefined), {
      id: 'chatcmpl-ab',
      object: 'chat.completion.chunk',
      created: 1_800_000_000,
      model: 'claude-opus-5-5',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    });
    const last = completionChunk(head, {}, 'stop', 's');
    assert.deepEqual(last.choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
    assert.equal(last.session_id, 's');
    const u = usageChunk(head, usage, undefined);
    assert.deepEqual(u.choices, []);
    assert.equal(u.object, 'chat.completion.chunk');
    assert.equal(u.usage.total_tokens, 24);
  });

  it('frames server-sent events', () => {
    assert.equal(sseData({ a: 'b\nc' }), 'data: {"a":"b\\nc"}\n\n');
    assert.equal(SSE_DONE, 'data: [DONE]\n\n');
  });

  it('lists the served model', () => {
    assert.deepEqual(modelList('m-1', 5), {
      object: 'list',
      data: [{ id: 'm-1', object: 'model', created: 5, owned_by: 'agent-controller' }],
    });
  });

  it('shapes errors as OpenAI does', () => {
    assert.deepEqual(openAiError('Invalid API key', 'invalid_request_error', 'invalid_api_key'), {
      error: {
        message: 'Invalid API key',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    });
    assert.deepEqual(openAiError('slow', 'timeout'), {
      error: { message: 'slow', type: 'timeout', param: null, code: null },
    });
    assert.equal(openAiError('x', 'invalid_request_error', 'c', 'messages').error.param, 'messages');
  });
});

describe('streamed text', () => {
  /** Everything a turn streams for `lines`. */
  const streamOf = (vendor: Vendor, lines: unknown[]) => {
    const s = streamedText(vendor);
    const deltas = lines.map((l) => s.push(l)).filter((d) => d !== '');
    return { deltas, said: s.said };
  };
  const claudeText = (text: string) => ({
    type: 'assistant',
    message: { role: 'assistant', content: [{ type: 'text', text }] },
  });

  it('claude: streams assistant text, not tool calls, tool results, user lines or the result', () => {
    const lines = [
      { type: 'system', subtype: 'init', session_id: 's' },
      { type: 'assistant', message: { content: [{ type: 'tool_use', id: 't', name: 'Bash', input: {} }] } },
      { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't', content: 'ok' }] } },
      { type: 'user', message: { content: [{ type: 'text', text: 'an echoed user text' }] } },
      claudeText('The answer.'),
      { type: 'result', subtype: 'success', result: 'The answer.' },
    ];
    const { deltas, said } = streamOf('claude', lines);
    assert.deepEqual(deltas, ['The answer.']);
    assert.equal(said, true);
    assert.equal(
      deltas.join(''),
      extractRunResult('claude', lines).result,
      'one message: the stream is the answer',
    );
  });

  it('claude: a blank line between two messages of one turn', () => {
    assert.deepEqual(streamOf('claude', [claudeText('Looking.'), claudeText('Done.')]).deltas, [
      'Looking.',
      '\n\nDone.',
    ]);
  });

  it('gemini: delta chunks are appended as they are; the user message is not streamed', () => {
    const lines = [
      { type: 'init', session_id: 's', model: 'gemini-3' },
      { type: 'message', role: 'user', content: 'the prompt' },
      { type: 'message', role: 'assistant', content: 'Hel', delta: true },
      { type: 'message', role: 'assistant', content: 'lo ', delta: true },
      { type: 'message', role: 'assistant', content: 'there', delta: true },
      { type: 'result', status: 'success', stats: {} },
    ];
    const { deltas } = streamOf('gemini', lines);
    assert.deepEqual(deltas, ['Hel', 'lo ', 'there']);
    assert.equal(deltas.join(''), extractRunResult('gemini', lines).result);
  });

  it('gemini: a whole assistant message after others is set apart', () => {
    assert.deepEqual(
      streamOf('gemini', [
        { type: 'message', role: 'assistant', content: 'a', delta: true },
        { type: 'message', role: 'assistant', content: 'whole' },
      ]).deltas,
      ['a', '\n\nwhole'],
    );
  });

  it('codex: agent messages, not commands', () => {
    const lines = [
      { type: 'thread.started', thread_id: 't' },
      { type: 'item.completed', item: { type: 'command_execution', command: 'ls' } },
      { type: 'item.completed', item: { type: 'agent_message', text: 'Done' } },
      { type: 'turn.completed', usage: {} },
    ];
    const { deltas } = streamOf('codex', lines);
    assert.deepEqual(deltas, ['Done']);
    assert.equal(deltas.join(''), extractRunResult('codex', lines).result);
  });

  it('opencode: text parts', () => {
    assert.deepEqual(
      streamOf('opencode', [{ type: 'text', part: { text: 'hi' } }, { type: 'done' }]).deltas,
      ['hi'],
    );
  });

  it('says nothing for lines without assistant text (garbage included)', () => {
    const { deltas, said } = streamOf('claude', [
      null,
      5,
      'text',
      [],
      {},
      { type: 'assistant' },
      claudeText(''),
    ]);
    assert.deepEqual(deltas, []);
    assert.equal(said, false);
  });
});
