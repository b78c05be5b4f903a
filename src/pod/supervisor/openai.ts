// The OpenAI Chat Completions shapes of a server-mode run (`AGENT_EXECUTION=server`, see server.ts), so unmodified
// OpenAI client libraries can talk to a run: a request body validated and mapped onto one vendor-CLI turn, the
// completion, its stream chunks, the model list and the error bodies. Also what a turn's stream says: the assistant
// text of each CLI line, as src/vendors/cli classifies it. Pure: nothing here does I/O.
//
// Mapping (one request = one CLI turn): `system`/`developer` messages are appended to the system prompt (after the
// definition's own, a blank line between); with exactly one other message, a `user` one, the prompt is its text;
// otherwise the prompt is a plain transcript of the other messages (`User: …`, `Assistant: …`, `Tool: …`, a blank
// line between) ending with the last message, which must be from `user`. Text parts of one message are joined with
// a newline; parts of any other type are refused. An `assistant` message's content may be null or absent (a tool-call
// turn, as the SDK's ChatCompletionAssistantMessageParam allows): it contributes no text and is left out of the
// transcript, but a conversation must still end with the user; every other role needs content. `session_id` (an
// extension) resumes that CLI session.

import * as v from 'valibot';
import { err, ok, type Result } from '../../shared/result.ts';
import { classifySelectEvent, type TokenUsage, type Vendor } from '../../vendors/cli/index.ts';

/** Who a served model belongs to in `/v1/models`. */
export const MODEL_OWNER = 'agent-controller';

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool'] as const;
type Role = (typeof ROLES)[number];

const ContentSchema = v.union(
  [v.string(), v.array(v.unknown())],
  'content must be a string or an array of {"type":"text","text":...} parts',
);
const MessageSchema = v.variant(
  'role',
  [
    // Null or absent on a tool-call turn (OpenAI's ChatCompletionAssistantMessageParam).
    v.object({ role: v.literal('assistant'), content: v.optional(v.nullable(ContentSchema)) }),
    v.object({ role: v.picklist(['system', 'developer', 'user', 'tool'] as const), content: ContentSchema }),
  ],
  `role must be one of ${ROLES.join(', ')}`,
);
const TextPartSchema = v.object({
  type: v.literal('text'),
  text: v.string('a text part needs a string text'),
});
const PartTypeSchema = v.object({ type: v.string() });

/**
 * A chat completion request as served: what is used is validated, every other field (`temperature`, `max_tokens`,
 * `user`, `tools`, …) is accepted and ignored.
 */
export const ChatRequestSchema = v.object({
  messages: v.pipe(
    v.array(MessageSchema, 'messages must be an array'),
    v.minLength(1, 'messages must not be empty'),
  ),
  model: v.optional(v.nullable(v.string('model must be a string'))),
  stream: v.optional(v.nullable(v.boolean('stream must be a boolean'))),
  stream_options: v.optional(
    v.nullable(
      v.object({
        include_usage: v.optional(v.nullable(v.boolean('stream_options.include_usage must be a boolean'))),
      }),
    ),
  ),
  session_id: v.optional(
    v.nullable(
      v.pipe(v.string('session_id must be a string'), v.minLength(1, 'session_id must not be empty')),
    ),
  ),
});

/** One CLI turn, as a request asks for it. */
export interface ChatTurn {
  /** The prompt the CLI gets. */
  readonly prompt: string;
  /** The request's system and developer messages, joined (undefined when there are none). */
  readonly system: string | undefined;
  readonly stream: boolean;
  /** `stream_options.include_usage`: a usage chunk before `[DONE]`. */
  readonly includeUsage: boolean;
  /** The CLI session to resume. */
  readonly sessionId: string | undefined;
}

/** Why a request is refused (400): one line, and the request field it is about when there is one. */
export interface RequestProblem {
  readonly message: string;
  readonly param: string | null;
}

/** `messages.0.content` → `messages[0].content`. */
function paramPath(dotPath: string | null): string | null {
  if (dotPath === null || dotPath === '') return null;
  return dotPath.replace(/\.(\d+)(?=\.|$)/g, '[$1]');
}

const LABELS: Readonly<Record<Exclude<Role, 'system' | 'developer'>, string>> = {
  user: 'User',
  assistant: 'Assistant',
  tool: 'Tool',
};

/** The text of one message's content: a string as it is, text parts joined with a newline. */
function contentText(content: string | unknown[], at: string): Result<string, RequestProblem> {
  if (typeof content === 'string') return ok(content);
  const texts: string[] = [];
  for (const [j, part] of content.entries()) {
    const param = `${at}.content[${j}]`;
    const text = v.safeParse(TextPartSchema, part);
    if (text.success) {
      texts.push(text.output.text);
      continue;
    }
    const typed = v.safeParse(PartTypeSchema, part);
    const message =
      typed.success && typed.output.type !== 'text'
        ? `only text content parts are supported, got ${JSON.stringify(typed.output.type)}`
        : 'a content part must be {"type":"text","text":"..."}';
    return err({ message: `${param}: ${message}`, param });
  }
  return ok(texts.join('\n'));
}

/** Validates a parsed request body and maps it onto one CLI turn (see the header); a problem for a 400 otherwise. */
export function chatTurnOf(body: unknown): Result<ChatTurn, RequestProblem> {
  const parsed = v.safeParse(ChatRequestSchema, body);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const param = paramPath(v.getDotPath(issue));
    return err({ message: param === null ? issue.message : `${param}: ${issue.message}`, param });
  }
  const request = parsed.output;
  const system: string[] = [];
  // `text` undefined: an assistant message without content (a tool call), which says nothing but is still a turn.
  const said: { role: Exclude<Role, 'system' | 'developer'>; text: string | undefined }[] = [];
  for (const [i, message] of request.messages.entries()) {
    const content = message.content;
    if (content === null || content === undefined) {
      // Only an assistant message may have none (MessageSchema).
      said.push({ role: 'assistant', text: undefined });
      continue;
    }
    const text = contentText(content, `messages[${i}]`);
    if (!text.ok) return text;
    if (message.role === 'system' || message.role === 'developer') {
      if (text.value.trim() !== '') system.push(text.value);
    } else said.push({ role: message.role, text: text.value });
  }
  const last = said.at(-1);
  if (last === undefined || last.role !== 'user' || last.text === undefined)
    return err({
      message: 'the last message (besides system messages) must be from the user',
      param: 'messages',
    });
  if (last.text.trim() === '')
    return err({ message: 'the last user message has no text', param: 'messages' });
  const spoken = said.filter((m) => m.text !== undefined);
  const prompt =
    spoken.length === 1 ? last.text : spoken.map((m) => `${LABELS[m.role]}: ${m.text}`).join('\n\n');
  return ok({
    prompt,
    system: system.length === 0 ? undefined : system.join('\n\n'),
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
    sessionId: request.session_id ?? undefined,
  });
}

/** The system prompt of a turn: the definition's (when any) and then the request's, a blank line between. */
export function systemPromptOf(
  definition: string | undefined,
  request: string | undefined,
): string | undefined {
  const parts = [definition, request].filter((p): p is string => p !== undefined && p.trim() !== '');
  return parts.length === 0 ? undefined : parts.join('\n\n');
}

/** A completion id: `chatcmpl-` and the bytes in hex. */
export function completionId(random: Uint8Array): string {
  return `chatcmpl-${Array.from(random, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** OpenAI's usage object. */
export interface OpenAiUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly prompt_tokens_details: { readonly cached_tokens: number };
}

/**
 * A turn's token usage in OpenAI's terms: prompt tokens are all the input (uncached, cache reads and cache writes),
 * completion tokens the output, cached tokens the cache reads; zeros when the CLI reported none.
 */
export function openAiUsage(usage: TokenUsage | undefined): OpenAiUsage {
  const prompt = usage === undefined ? 0 : usage.input + usage.cacheRead + usage.cacheWrite;
  const completion = usage?.output ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: usage?.cacheRead ?? 0 },
  };
}

/** What every completion and chunk of one request shares. */
export interface CompletionHead {
  readonly id: string;
  /** Unix seconds. */
  readonly created: number;
  /** The served model (the recipe's), whatever the request named. */
  readonly model: string;
}

const sessionField = (sessionId: string | undefined) =>
  sessionId === undefined ? {} : { session_id: sessionId };

/** The `chat.completion` answer of a turn (`session_id`: the CLI session, an extension). */
export function chatCompletion(
  head: CompletionHead,
  answer: string,
  usage: TokenUsage | undefined,
  sessionId: string | undefined,
) {
  return {
    id: head.id,
    object: 'chat.completion' as const,
    created: head.created,
    model: head.model,
    choices: [
      {
        index: 0,
        // `refusal`: required by OpenAI's ChatCompletionMessage; null, as the answer is always content.
        message: { role: 'assistant' as const, content: answer, refusal: null },
        logprobs: null,
        finish_reason: 'stop' as const,
      },
    ],
    usage: openAiUsage(usage),
    ...sessionField(sessionId),
  };
}

/** The delta of a stream chunk: the role (first chunk), text, or nothing (the last chunk). */
export interface ChunkDelta {
  readonly role?: 'assistant';
  readonly content?: string;
}

/** One `chat.completion.chunk` with one choice. */
export function completionChunk(
  head: CompletionHead,
  delta: ChunkDelta,
  finishReason: 'stop' | null,
  sessionId: string | undefined,
) {
  return {
    id: head.id,
    object: 'chat.completion.chunk' as const,
    created: head.created,
    model: head.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...sessionField(sessionId),
  };
}

/** The usage chunk of a stream asked with `stream_options.include_usage`: no choices. */
export function usageChunk(
  head: CompletionHead,
  usage: TokenUsage | undefined,
  sessionId: string | undefined,
) {
  return {
    id: head.id,
    object: 'chat.completion.chunk' as const,
    created: head.created,
    model: head.model,
    choices: [],
    usage: openAiUsage(usage),
    ...sessionField(sessionId),
  };
}

/** `GET /v1/models`: the one model served. */
export function modelList(model: string, created: number) {
  return { object: 'list' as const, data: [modelObject(model, created)] };
}

/** `GET /v1/models/{id}` for the model served. */
export function modelObject(model: string, created: number) {
  return { id: model, object: 'model' as const, created, owned_by: MODEL_OWNER };
}

/** The error kinds a server answers with (`type` of the error body). */
export type ErrorType =
  | 'invalid_request_error'
  | 'rate_limit_exceeded'
  | 'timeout'
  | 'server_error'
  | 'not_found_error';

/** OpenAI's error body. */
export interface OpenAiError {
  readonly error: {
    readonly message: string;
    readonly type: ErrorType;
    readonly param: string | null;
    readonly code: string | null;
  };
}

export function openAiError(
  message: string,
  type: ErrorType,
  code: string | null = null,
  param: string | null = null,
): OpenAiError {
  return { error: { message, type, param, code } };
}

/** One server-sent event carrying `value` as JSON. */
export function sseData(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

/** The end of a completion stream. */
export const SSE_DONE = 'data: [DONE]\n\n';

const AssistantLine = v.looseObject({ type: v.literal('assistant') });
const AssistantRole = v.looseObject({ role: v.literal('assistant') });
const DeltaLine = v.looseObject({ delta: v.literal(true) });

/** True when a CLI line that classifies as a message is the assistant's (not an echoed user message). */
function fromAssistant(vendor: Vendor, line: unknown): boolean {
  switch (vendor) {
    case 'claude':
    case 'exec':
      return v.is(AssistantLine, line);
    case 'gemini':
      return v.is(AssistantRole, line);
    case 'codex':
    case 'opencode':
      // Their message lines are the agent's own (`agent_message`, `text`).
      return true;
  }
}

/** The text a turn streams, line by line. */
export interface StreamedText {
  /** The text to stream for one parsed CLI line ('' for none). */
  push(line: unknown): string;
  /** True once any text was streamed. */
  readonly said: boolean;
}

/**
 * Streams what the assistant says in a turn, as src/vendors/cli classifies its lines: each assistant message's text
 * as it comes (a blank line between two whole messages), Gemini's `delta` chunks appended as they are. A turn that
 * says one thing streams exactly its final answer; a turn that says several things (before and after tool calls)
 * streams all of them, while its non-streamed answer is the last one.
 */
export function streamedText(vendor: Vendor): StreamedText {
  let said = false;
  return {
    push(line) {
      const event = classifySelectEvent(vendor, line);
      if (event?.event !== 'message' || event.text === undefined || event.text === '') return '';
      if (!fromAssistant(vendor, line)) return '';
      const chunk = vendor === 'gemini' && v.is(DeltaLine, line);
      const text = said && !chunk ? `\n\n${event.text}` : event.text;
      said = true;
      return text;
    },
    get said() {
      return said;
    },
  };
}
