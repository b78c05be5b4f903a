// A fake OpenAI API on 127.0.0.1 that plays a script (./script.ts): the Responses API (`POST /v1/responses`, what
// Codex uses), Chat Completions (`POST /v1/chat/completions`, what OpenCode's OpenAI-compatible providers use), both
// streamed (SSE) or not, and `GET /v1/models`. Protocol facts from openai 7.60.0's types (`ResponseStreamEvent`,
// `Response`, `ResponseUsage`, `ChatCompletionChunk`, `CompletionUsage`) and its stream accumulator, which checks
// indexes, item ids and call ids; proven by openai.test.ts with that SDK. Codex's Responses WebSocket transport is
// not served (an upgrade request is answered 404 and recorded).
//
// Auth: `Authorization: Bearer <key>`, else 401 `invalid_api_key`. Errors: `{error: {message, type, param, code}}`.
// A streamed Responses answer: `response.created`, `response.in_progress`, then per output item (reasoning with its
// summary, message with one `output_text` part, function_call with its arguments in three chunks) `…output_item.added`,
// the part / delta / done events, `…output_item.done`, and `response.completed` with the whole response and usage.
// An error turn with `inStream` streams `response.created` then `response.failed` (Responses) or an `error` payload
// (Chat). A streamed Chat answer: a role chunk, content chunks, `tool_calls` deltas, the finish chunk, the usage chunk
// (`choices: []`, only with `stream_options.include_usage`), then `data: [DONE]`.

import type { ServerResponse } from 'node:http';
import {
  type AnswerTurn,
  asArray,
  callId,
  chunks,
  countModelTurns,
  DEFAULT_USAGE,
  type ErrorTurn,
  type Incoming,
  isObject,
  type ModelApiFake,
  type ModelApiOptions,
  type Play,
  playFor,
  type RequestFacts,
  type ScriptUsage,
  SseWriter,
  scriptsOf,
  sendJson,
  serveLoopback,
} from './script.ts';

const CREATED = 1_780_000_000;

const ERRORS: Readonly<Record<number, { type: string; code: string | null }>> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  404: { type: 'invalid_request_error', code: 'unknown_url' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
  500: { type: 'server_error', code: 'server_error' },
  503: { type: 'server_error', code: 'server_is_overloaded' },
};

/** OpenAI's error envelope. */
export function openaiError(status: number, message: string): unknown {
  const { type, code } = ERRORS[status] ?? { type: 'server_error', code: null };
  return { error: { message, type, param: null, code } };
}

const toolName = (t: unknown): string[] => {
  if (!isObject(t)) return [];
  if (typeof t.name === 'string') return [t.name];
  if (isObject(t.function) && typeof t.function.name === 'string') return [t.function.name];
  return typeof t.type === 'string' ? [t.type] : [];
};

const outputText = (output: unknown): string =>
  typeof output === 'string'
    ? output
    : asArray(output)
        .map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : ''))
        .join('');

/** Facts of a Responses body: `input` items are the history. */
export function responsesFacts(body: unknown): RequestFacts & { modelTurns: number } {
  const b = isObject(body) ? body : {};
  const input = typeof b.input === 'string' ? [{ role: 'user', content: b.input }] : asArray(b.input);
  // Model items: assistant messages, reasoning and every kind of call (`function_call`, Codex's `custom_tool_call`
  // and `local_shell_call`, …); tool results: every `…_call_output`.
  const isModel = (item: unknown): boolean =>
    isObject(item) &&
    (item.role === 'assistant' ||
      item.type === 'reasoning' ||
      (typeof item.type === 'string' && item.type.endsWith('_call')));
  return {
    model: typeof b.model === 'string' ? b.model : undefined,
    stream: b.stream === true,
    tools: asArray(b.tools).flatMap(toolName),
    toolResults: input.flatMap((item) =>
      isObject(item) && typeof item.type === 'string' && item.type.endsWith('_call_output')
        ? [{ id: String(item.call_id), content: outputText(item.output) }]
        : [],
    ),
    modelTurns: countModelTurns(input.map((item) => (isModel(item) ? 'model' : 'other'))),
  };
}

/** Facts of a Chat Completions body. */
export function chatFacts(body: unknown): RequestFacts & { modelTurns: number; includeUsage: boolean } {
  const b = isObject(body) ? body : {};
  const messages = asArray(b.messages);
  return {
    model: typeof b.model === 'string' ? b.model : undefined,
    stream: b.stream === true,
    tools: asArray(b.tools).flatMap(toolName),
    toolResults: messages.flatMap((m) =>
      isObject(m) && m.role === 'tool'
        ? [{ id: String(m.tool_call_id), content: outputText(m.content) }]
        : [],
    ),
    modelTurns: countModelTurns(
      messages.map((m) => (isObject(m) && m.role === 'assistant' ? 'model' : 'other')),
    ),
    includeUsage: isObject(b.stream_options) && b.stream_options.include_usage === true,
  };
}

const responsesUsage = (u: ScriptUsage) => ({
  input_tokens: u.input,
  input_tokens_details: { cached_tokens: u.cacheRead ?? 0, cache_write_tokens: u.cacheWrite ?? 0 },
  output_tokens: u.output,
  output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
  total_tokens: u.input + u.output,
});

const chatUsage = (u: ScriptUsage) => ({
  prompt_tokens: u.input,
  completion_tokens: u.output,
  total_tokens: u.input + u.output,
  prompt_tokens_details: { cached_tokens: u.cacheRead ?? 0, cache_write_tokens: u.cacheWrite ?? 0 },
  completion_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
});

/** The output items of an answer, completed, in order: reasoning, message, function_call. */
function outputItems(turn: AnswerTurn, step: number): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  if (turn.thinking !== undefined) {
    items.push({
      id: `rs_fake_step${step}`,
      type: 'reasoning',
      summary: [{ type: 'summary_text', text: turn.thinking }],
      encrypted_content: null,
      status: 'completed',
    });
  }
  if (turn.text !== undefined) {
    items.push({
      id: `msg_fake_step${step}`,
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: turn.text, annotations: [], logprobs: [] }],
    });
  }
  if (turn.toolCall !== undefined) {
    items.push({
      id: `fc_fake_step${step}`,
      type: 'function_call',
      call_id: callId(turn, step, 'call_fake'),
      ...(turn.toolCall.namespace !== undefined ? { namespace: turn.toolCall.namespace } : {}),
      name: turn.toolCall.name,
      arguments: JSON.stringify(turn.toolCall.input),
      status: 'completed',
    });
  }
  return items;
}

function responseOf(step: number, model: string, status: string, output: unknown[], extra: object = {}) {
  return {
    id: `resp_fake_step${step}`,
    object: 'response',
    created_at: CREATED,
    status,
    error: null,
    incomplete_details: null,
    instructions: null,
    metadata: {},
    model,
    output,
    parallel_tool_calls: true,
    temperature: null,
    tool_choice: 'auto',
    tools: [],
    top_p: null,
    usage: null,
    ...extra,
  };
}

function streamResponse(res: ServerResponse, play: Play, model: string): void {
  const sse = new SseWriter(res);
  let seq = 0;
  const send = (type: string, data: object) => sse.send(type, { type, sequence_number: seq++, ...data });
  const step = play.step;
  send('response.created', { response: responseOf(step, model, 'in_progress', []) });
  if (play.kind === 'error') {
    const { status, message } = play.turn.error;
    const code = status === 429 ? 'rate_limit_exceeded' : 'server_error';
    const error = { code, message: message ?? `scripted error ${status}` };
    send('response.failed', { response: responseOf(step, model, 'failed', [], { error }) });
    sse.end();
    return;
  }
  if (play.kind !== 'answer') return;
  send('response.in_progress', { response: responseOf(step, model, 'in_progress', []) });
  const items = outputItems(play.turn, step);
  items.forEach((item, output_index) => {
    const item_id = String(item.id);
    if (item.type === 'reasoning') {
      const text = String(play.turn.thinking);
      send('response.output_item.added', {
        output_index,
        item: { ...item, summary: [], status: 'in_progress' },
      });
      const at = { item_id, output_index, summary_index: 0 };
      send('response.reasoning_summary_part.added', { ...at, part: { type: 'summary_text', text: '' } });
      for (const delta of chunks(text, 2)) send('response.reasoning_summary_text.delta', { ...at, delta });
      send('response.reasoning_summary_text.done', { ...at, text });
      send('response.reasoning_summary_part.done', { ...at, part: { type: 'summary_text', text } });
    } else if (item.type === 'message') {
      const text = String(play.turn.text);
      send('response.output_item.added', {
        output_index,
        item: { ...item, content: [], status: 'in_progress' },
      });
      const at = { item_id, output_index, content_index: 0 };
      const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      send('response.content_part.added', { ...at, part });
      for (const delta of chunks(text, 3)) send('response.output_text.delta', { ...at, delta, logprobs: [] });
      send('response.output_text.done', { ...at, text, logprobs: [] });
      send('response.content_part.done', { ...at, part: { ...part, text } });
    } else {
      const args = String(item.arguments);
      send('response.output_item.added', {
        output_index,
        item: { ...item, arguments: '', status: 'in_progress' },
      });
      for (const delta of chunks(args, 3))
        send('response.function_call_arguments.delta', { item_id, output_index, delta });
      send('response.function_call_arguments.done', {
        item_id,
        output_index,
        name: item.name,
        arguments: args,
      });
    }
    send('response.output_item.done', { output_index, item });
  });
  const usage = responsesUsage(play.turn.usage ?? DEFAULT_USAGE);
  send('response.completed', { response: responseOf(step, model, 'completed', items, { usage }) });
  sse.end();
}

function streamChat(res: ServerResponse, play: Play, model: string, includeUsage: boolean): void {
  const sse = new SseWriter(res);
  const chunk = (choices: unknown[], usage: unknown = null) =>
    sse.send(undefined, {
      id: `chatcmpl-fake-step${play.step}`,
      object: 'chat.completion.chunk',
      created: CREATED,
      model,
      system_fingerprint: 'fp_fake',
      choices,
      usage,
    });
  const delta = (d: object, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  delta({ role: 'assistant', content: '', refusal: null });
  if (play.kind === 'error') {
    const { status, message } = play.turn.error;
    sse.send(undefined, openaiError(status, message ?? `scripted error ${status}`));
    sse.end();
    return;
  }
  if (play.kind !== 'answer') return;
  const turn = play.turn;
  if (turn.text !== undefined) for (const content of chunks(turn.text, 3)) delta({ content });
  if (turn.toolCall !== undefined) {
    const args = chunks(JSON.stringify(turn.toolCall.input), 3);
    const id = callId(turn, play.step, 'call_fake');
    args.forEach((piece, i) => {
      const head =
        i === 0 ? { id, type: 'function', function: { name: turn.toolCall?.name, arguments: piece } } : {};
      delta({ tool_calls: [{ index: 0, ...(i === 0 ? head : { function: { arguments: piece } }) }] });
    });
  }
  delta({}, turn.toolCall !== undefined ? 'tool_calls' : 'stop');
  if (includeUsage) chunk([], chatUsage(turn.usage ?? DEFAULT_USAGE));
  sse.send(undefined, '[DONE]');
  sse.end();
}

function chatCompletion(turn: AnswerTurn, step: number, model: string) {
  const message: Record<string, unknown> = { role: 'assistant', content: turn.text ?? null, refusal: null };
  if (turn.toolCall !== undefined) {
    message.tool_calls = [
      {
        id: callId(turn, step, 'call_fake'),
        type: 'function',
        function: { name: turn.toolCall.name, arguments: JSON.stringify(turn.toolCall.input) },
      },
    ];
  }
  return {
    id: `chatcmpl-fake-step${step}`,
    object: 'chat.completion',
    created: CREATED,
    model,
    system_fingerprint: 'fp_fake',
    choices: [
      {
        index: 0,
        message,
        logprobs: null,
        finish_reason: turn.toolCall !== undefined ? 'tool_calls' : 'stop',
      },
    ],
    usage: chatUsage(turn.usage ?? DEFAULT_USAGE),
  };
}

function answerError(res: ServerResponse, turn: ErrorTurn): void {
  const { status, retryAfter, message } = turn.error;
  sendJson(res, status, openaiError(status, message ?? `scripted error ${status}`), {
    ...(retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) }),
  });
}

/** Starts the fake; its `baseUrl` ends in `/v1`, as `OPENAI_BASE_URL` and the SDK's `baseURL` take it. */
export async function startOpenAIModel(options: ModelApiOptions = {}): Promise<ModelApiFake> {
  const apiKey = options.apiKey ?? 'test-key-openai';
  const models = options.models ?? ['gpt-5.5-codex'];
  const scripts = scriptsOf(options);
  const keyOf = (i: Incoming): string | undefined => {
    const auth = i.headers.authorization;
    return auth?.startsWith('Bearer ') === true ? auth.slice('Bearer '.length) : undefined;
  };
  const refuse = (i: Incoming, facts: RequestFacts): boolean => {
    const key = keyOf(i);
    if (key === apiKey) return false;
    i.record(key, facts);
    const shown = key === undefined ? 'none' : `${key.slice(0, 3)}***${key.slice(-4)}`;
    sendJson(i.res, 401, openaiError(401, `Incorrect API key provided: ${shown}.`));
    return true;
  };

  const server = await serveLoopback(
    (i) => {
      const responses = i.path === '/v1/responses';
      if (i.method === 'POST' && (responses || i.path === '/v1/chat/completions')) {
        const facts = responses ? responsesFacts(i.body) : chatFacts(i.body);
        if (refuse(i, facts)) return true;
        const play = playFor(scripts, i.body, facts.modelTurns);
        i.record(keyOf(i), facts, play.step);
        const model = facts.model ?? models[0] ?? 'gpt';
        if (play.kind === 'exhausted') {
          sendJson(i.res, 400, openaiError(400, `script exhausted at step ${play.step}`));
        } else if (play.kind === 'error' && !(play.turn.error.inStream === true && facts.stream === true)) {
          answerError(i.res, play.turn);
        } else if (facts.stream === true && responses) {
          streamResponse(i.res, play, model);
        } else if (facts.stream === true) {
          streamChat(i.res, play, model, 'includeUsage' in facts && facts.includeUsage === true);
        } else if (play.kind === 'answer' && responses) {
          const output = outputItems(play.turn, play.step);
          const usage = responsesUsage(play.turn.usage ?? DEFAULT_USAGE);
          sendJson(i.res, 200, responseOf(play.step, model, 'completed', output, { usage }));
        } else if (play.kind === 'answer') {
          sendJson(i.res, 200, chatCompletion(play.turn, play.step, model));
        }
        return true;
      }
      if (i.method === 'GET' && i.path === '/v1/models') {
        if (refuse(i, {})) return true;
        i.record(keyOf(i), {});
        const data = models.map((id) => ({ id, object: 'model', created: CREATED, owned_by: 'openai' }));
        sendJson(i.res, 200, { object: 'list', data });
        return true;
      }
      return false;
    },
    (i) => {
      i.record(keyOf(i), {});
      sendJson(i.res, 404, openaiError(404, `Invalid URL (${i.method} ${i.path})`));
    },
    options.host,
  );
  return {
    baseUrl: `http://${server.host}:${server.port}/v1`,
    apiKey,
    requests: server.requests,
    close: server.close,
  };
}
