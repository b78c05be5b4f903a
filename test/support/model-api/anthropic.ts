// A fake Anthropic Messages API on 127.0.0.1 that plays a script (./script.ts), as Claude Code and @anthropic-ai/sdk
// use it: `POST /v1/messages` (also `?beta=true`), streamed (SSE) or not; `POST /v1/messages/count_tokens`;
// `GET /v1/models`. Protocol facts from @anthropic-ai/sdk 1.17.0's types (`RawMessageStreamEvent`, `Message`,
// `Usage`, `MessageDeltaUsage`, the error envelope), proven by anthropic.test.ts with that SDK.
//
// Auth: `x-api-key: <key>` or `Authorization: Bearer <key>` (the SDK's `authToken`), else 401
// `authentication_error`; `anthropic-version` is required (any value; recorded in the headers).
// A streamed answer: `message_start` (usage: input and cache counts, output 1), `ping`, then per block
// `content_block_start` / `_delta` / `_stop` (thinking: `thinking_delta` ×n, `signature_delta`; text: `text_delta`
// ×n; tool_use: `input_json_delta` with the input JSON in three chunks), `message_delta` (stop_reason and the whole
// usage), `message_stop`. An error turn with `inStream` sends `message_start`, `ping`, then an `error` event.

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
  playFor,
  type RequestFacts,
  type ScriptUsage,
  SseWriter,
  scriptsOf,
  sendJson,
  serveLoopback,
} from './script.ts';

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

export interface AnthropicFakeOptions extends ModelApiOptions {
  /** What `count_tokens` answers as `input_tokens` (default 100). */
  readonly countTokens?: number;
}

/** Anthropic's error envelope. */
export function anthropicError(status: number, message: string): unknown {
  return {
    type: 'error',
    error: { type: ERROR_TYPES[status] ?? 'api_error', message },
    request_id: `req_fake${status}`,
  };
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((b) => (isObject(b) && typeof b.text === 'string' ? b.text : ''))
    .join('');
}

/** Model, stream flag, tool names and tool results of a Messages request body. */
export function anthropicFacts(body: unknown): RequestFacts & { modelTurns: number } {
  const b = isObject(body) ? body : {};
  const messages = asArray(b.messages);
  const toolResults: { id: string; content: string }[] = [];
  for (const m of messages) {
    if (!isObject(m) || m.role !== 'user') continue;
    for (const block of asArray(m.content)) {
      if (isObject(block) && block.type === 'tool_result') {
        toolResults.push({ id: String(block.tool_use_id), content: textOf(block.content) });
      }
    }
  }
  return {
    model: typeof b.model === 'string' ? b.model : undefined,
    stream: b.stream === true,
    tools: asArray(b.tools).flatMap((t) => (isObject(t) && typeof t.name === 'string' ? [t.name] : [])),
    toolResults,
    modelTurns: countModelTurns(
      messages.map((m) => (isObject(m) && m.role === 'assistant' ? 'model' : 'other')),
    ),
  };
}

function usageOf(u: ScriptUsage) {
  return {
    input_tokens: u.input,
    output_tokens: u.output,
    cache_creation_input_tokens: u.cacheWrite ?? 0,
    cache_read_input_tokens: u.cacheRead ?? 0,
    cache_creation: { ephemeral_5m_input_tokens: u.cacheWrite ?? 0, ephemeral_1h_input_tokens: 0 },
    output_tokens_details: { thinking_tokens: u.reasoning ?? 0 },
    server_tool_use: null,
    service_tier: 'standard',
    inference_geo: null,
    speed: 'standard',
  };
}

/** The content blocks of an answer, in the order they stream. */
function blocksOf(turn: AnswerTurn, step: number): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  if (turn.thinking !== undefined) {
    blocks.push({ type: 'thinking', thinking: turn.thinking, signature: `sig-step-${step}` });
  }
  if (turn.text !== undefined) blocks.push({ type: 'text', text: turn.text, citations: null });
  if (turn.toolCall !== undefined) {
    blocks.push({
      type: 'tool_use',
      id: callId(turn, step, 'toolu_fake'),
      name: turn.toolCall.name,
      input: turn.toolCall.input,
      caller: { type: 'direct' },
    });
  }
  return blocks;
}

function messageOf(step: number, model: string, content: unknown[], usage: unknown) {
  return {
    id: `msg_fake_step${step}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: null as string | null,
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage,
  };
}

const stopReasonOf = (turn: AnswerTurn): string =>
  turn.stopReason ?? (turn.toolCall !== undefined ? 'tool_use' : 'end_turn');

function streamAnswer(res: ServerResponse, turn: AnswerTurn, step: number, model: string): void {
  const usage = turn.usage ?? DEFAULT_USAGE;
  const sse = new SseWriter(res, { 'request-id': `req_fake_step${step}` });
  const startUsage = { ...usageOf(usage), output_tokens: 1 };
  sse.send('message_start', { type: 'message_start', message: messageOf(step, model, [], startUsage) });
  sse.send('ping', { type: 'ping' });
  blocksOf(turn, step).forEach((block, index) => {
    const send = (delta: unknown) =>
      sse.send('content_block_delta', { type: 'content_block_delta', index, delta });
    if (block.type === 'thinking') {
      sse.send('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      });
      for (const piece of chunks(String(block.thinking), 2))
        send({ type: 'thinking_delta', thinking: piece });
      send({ type: 'signature_delta', signature: block.signature });
    } else if (block.type === 'text') {
      sse.send('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'text', text: '', citations: null },
      });
      for (const piece of chunks(String(block.text), 3)) send({ type: 'text_delta', text: piece });
    } else {
      sse.send('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { ...block, input: {} },
      });
      for (const piece of chunks(JSON.stringify(block.input), 3)) {
        send({ type: 'input_json_delta', partial_json: piece });
      }
    }
    sse.send('content_block_stop', { type: 'content_block_stop', index });
  });
  const full = usageOf(usage);
  sse.send('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReasonOf(turn), stop_sequence: null, stop_details: null, container: null },
    usage: {
      input_tokens: full.input_tokens,
      output_tokens: full.output_tokens,
      cache_creation_input_tokens: full.cache_creation_input_tokens,
      cache_read_input_tokens: full.cache_read_input_tokens,
      output_tokens_details: full.output_tokens_details,
      server_tool_use: null,
    },
  });
  sse.send('message_stop', { type: 'message_stop' });
  sse.end();
}

function answerError(
  res: ServerResponse,
  turn: ErrorTurn,
  stream: boolean,
  model: string,
  step: number,
): void {
  const { status, retryAfter, inStream } = turn.error;
  const message = turn.error.message ?? (status === 529 ? 'Overloaded' : `scripted error ${status}`);
  if (inStream === true && stream) {
    const sse = new SseWriter(res);
    const usage = usageOf(DEFAULT_USAGE);
    sse.send('message_start', {
      type: 'message_start',
      message: messageOf(step, model, [], usage),
    });
    sse.send('ping', { type: 'ping' });
    const { request_id: _, ...event } = anthropicError(status, message) as Record<string, unknown>;
    sse.send('error', event);
    sse.end();
    return;
  }
  sendJson(res, status, anthropicError(status, message), {
    'request-id': `req_fake_step${step}`,
    ...(retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) }),
    ...(status === 529 || status >= 500 ? { 'x-should-retry': 'true' } : {}),
  });
}

/** Starts the fake; see the header. */
export async function startAnthropicModel(options: AnthropicFakeOptions = {}): Promise<ModelApiFake> {
  const apiKey = options.apiKey ?? 'test-key-anthropic';
  const models = options.models ?? ['claude-sonnet-5-5'];
  const scripts = scriptsOf(options);

  const keyOf = (i: Incoming): string | undefined => {
    const x = i.headers['x-api-key'];
    if (x !== undefined) return x;
    const auth = i.headers.authorization;
    return auth?.startsWith('Bearer ') === true ? auth.slice('Bearer '.length) : undefined;
  };

  /** Answers auth and version failures; true when it did. */
  const refuse = (i: Incoming, facts: RequestFacts): boolean => {
    const key = keyOf(i);
    if (key !== apiKey) {
      i.record(key, facts);
      sendJson(i.res, 401, anthropicError(401, 'invalid x-api-key'));
      return true;
    }
    if (i.headers['anthropic-version'] === undefined) {
      i.record(key, facts);
      sendJson(i.res, 400, anthropicError(400, 'anthropic-version: header is required'));
      return true;
    }
    return false;
  };

  const server = await serveLoopback(
    (i) => {
      if (i.method === 'POST' && i.path === '/v1/messages') {
        const facts = anthropicFacts(i.body);
        if (refuse(i, facts)) return true;
        const play = playFor(scripts, i.body, facts.modelTurns);
        i.record(keyOf(i), facts, play.step);
        const model = facts.model ?? models[0] ?? 'claude';
        if (play.kind === 'exhausted') {
          sendJson(i.res, 400, anthropicError(400, `script exhausted at step ${play.step}`));
        } else if (play.kind === 'error') {
          answerError(i.res, play.turn, facts.stream === true, model, play.step);
        } else if (facts.stream === true) {
          streamAnswer(i.res, play.turn, play.step, model);
        } else {
          const message = messageOf(
            play.step,
            model,
            blocksOf(play.turn, play.step),
            usageOf(play.turn.usage ?? DEFAULT_USAGE),
          );
          message.stop_reason = stopReasonOf(play.turn);
          sendJson(i.res, 200, message, { 'request-id': `req_fake_step${play.step}` });
        }
        return true;
      }
      if (i.method === 'POST' && i.path === '/v1/messages/count_tokens') {
        const facts = anthropicFacts(i.body);
        if (refuse(i, facts)) return true;
        i.record(keyOf(i), facts);
        sendJson(i.res, 200, { input_tokens: options.countTokens ?? 100 });
        return true;
      }
      if (i.method === 'GET' && i.path === '/v1/models') {
        if (refuse(i, {})) return true;
        i.record(keyOf(i), {});
        const data = models.map((id) => ({
          type: 'model',
          id,
          display_name: id,
          created_at: '2026-01-01T00:00:00Z',
        }));
        sendJson(i.res, 200, {
          data,
          has_more: false,
          first_id: models[0] ?? null,
          last_id: models.at(-1) ?? null,
        });
        return true;
      }
      return false;
    },
    (i) => {
      i.record(keyOf(i), {});
      sendJson(i.res, 404, anthropicError(404, `fake: no endpoint ${i.method} ${i.path}`));
    },
    options.host,
  );
  return {
    baseUrl: `http://${server.host}:${server.port}`,
    apiKey,
    requests: server.requests,
    close: server.close,
  };
}
