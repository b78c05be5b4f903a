// Renders one Anthropic Message Batches result as the lines `claude -p … --output-format stream-json --verbose`
// would have printed for the same prompt (docs/reference/vendor-cli-events.md#as-claude-code-lines). Pure: no I/O, no
// clock, no randomness, so rendering the same result twice yields byte-identical lines.

import type { BatchOutcome, RenderContext } from './port.ts';

/** One content block of a Messages response; only `type` and, for text blocks, `text` are read. */
export interface ClaudeContentBlock {
  readonly type: string;
  readonly text?: string | undefined;
  readonly [key: string]: unknown;
}

/**
 * A Messages response as found in a `succeeded` batch result (docs/reference/vendor-apis.md#anthropic-results);
 * copied as is into the assistant line.
 */
export interface ClaudeBatchMessage {
  readonly content: readonly ClaudeContentBlock[];
  readonly stop_reason?: string | null | undefined;
  readonly usage?: Readonly<Record<string, unknown>> | undefined;
  readonly [key: string]: unknown;
}

/** The `error` of an `errored` batch result: Anthropic's error envelope `{type:'error', error:{type, message}}`. */
export interface ClaudeBatchError {
  readonly error?: { readonly type?: string | undefined; readonly message?: string | undefined } | undefined;
  readonly [key: string]: unknown;
}

/**
 * The `result` of one batch results line (docs/reference/vendor-apis.md#anthropic-results), already validated by the
 * adapter.
 */
export type ClaudeBatchResult =
  | { readonly type: 'succeeded'; readonly message: ClaudeBatchMessage }
  | { readonly type: 'errored'; readonly error: ClaudeBatchError }
  | { readonly type: 'expired' }
  | { readonly type: 'canceled' };

/** Failure reasons (become `status.failureReason` and the `errors` entry of the error result line). */
export const EXPIRED_MESSAGE = 'batch expired before the request ran';
export const CANCELED_MESSAGE = 'batch was cancelled before the request ran';
export const REFUSAL_MESSAGE = 'the model refused the request (stop_reason refusal)';

/** Usage of a result line when the vendor reported none (the request never ran). */
const ZERO_USAGE = {
  input_tokens: 0,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  output_tokens: 0,
} as const;

/**
 * The CLI lines and outcome for one batch result:
 *
 * | result | lines | outcome |
 * |---|---|---|
 * | `succeeded`, any stop reason but `refusal` (`max_tokens` included) | init, assistant, `result` success | succeeded |
 * | `succeeded` with `stop_reason: "refusal"` | init, assistant, `result` error | failed, REFUSAL_MESSAGE |
 * | `errored` | init, `result` error | failed, `batch request failed: <error.type>: <error.message>` |
 * | `expired` / `canceled` | init, `result` error | failed, EXPIRED_MESSAGE / CANCELED_MESSAGE |
 *
 * The success line's `result` is the joined text of the `text` blocks (thinking and other blocks skipped); when
 * `ctx.structured` and that text parses as JSON, it also carries `structured_output`. A structured run whose text
 * does not parse still succeeds, without `structured_output` (the CLI would retry; a batch cannot, and the text is
 * kept for the reader). Error result lines have `subtype: "error_during_execution"`, `is_error: true`,
 * `errors: [message]` and no `result` field. `session_id` is `ctx.sessionId` on every line; each line's `uuid` is
 * derived from the session id and the line number. `total_cost_usd` is 0 (no price table).
 */
export function renderClaudeLines(result: ClaudeBatchResult, ctx: RenderContext): BatchOutcome {
  const init = initLine(ctx);
  switch (result.type) {
    case 'succeeded': {
      const message = result.message;
      const assistant = assistantLine(message, ctx);
      const usage = message.usage ?? ZERO_USAGE;
      const stopReason = message.stop_reason ?? null;
      if (stopReason === 'refusal') {
        const lines = [init, assistant, errorResultLine(REFUSAL_MESSAGE, 1, usage, stopReason, ctx, 2)];
        return { kind: 'failed', lines, message: REFUSAL_MESSAGE };
      }
      const text = joinedText(message);
      const structured = ctx.structured ? parseJson(text) : undefined;
      const success = {
        type: 'result',
        subtype: 'success',
        is_error: false,
        duration_ms: ctx.durationMs,
        num_turns: 1,
        result: text,
        stop_reason: stopReason,
        session_id: ctx.sessionId,
        total_cost_usd: 0,
        usage,
        permission_denials: [],
        ...(structured === undefined ? {} : { structured_output: structured.value }),
        uuid: lineUuid(ctx.sessionId, 2),
      };
      return { kind: 'succeeded', lines: [init, assistant, JSON.stringify(success)] };
    }
    case 'errored': {
      const type = result.error.error?.type || 'unknown_error';
      const detail = result.error.error?.message || 'no message';
      const message = `batch request failed: ${type}: ${detail}`;
      return {
        kind: 'failed',
        lines: [init, errorResultLine(message, 0, ZERO_USAGE, null, ctx, 1)],
        message,
      };
    }
    case 'expired':
      return {
        kind: 'failed',
        lines: [init, errorResultLine(EXPIRED_MESSAGE, 0, ZERO_USAGE, null, ctx, 1)],
        message: EXPIRED_MESSAGE,
      };
    case 'canceled':
      return {
        kind: 'failed',
        lines: [init, errorResultLine(CANCELED_MESSAGE, 0, ZERO_USAGE, null, ctx, 1)],
        message: CANCELED_MESSAGE,
      };
  }
}

/** The joined `text` of the message's `text` blocks, in order. */
export function joinedText(message: ClaudeBatchMessage): string {
  return message.content
    .filter((block) => block.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text)
    .join('');
}

function initLine(ctx: RenderContext): string {
  return JSON.stringify({
    type: 'system',
    subtype: 'init',
    session_id: ctx.sessionId,
    uuid: lineUuid(ctx.sessionId, 0),
    cwd: '/',
    model: ctx.model,
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
  });
}

function assistantLine(message: ClaudeBatchMessage, ctx: RenderContext): string {
  return JSON.stringify({
    type: 'assistant',
    message,
    parent_tool_use_id: null,
    session_id: ctx.sessionId,
    uuid: lineUuid(ctx.sessionId, 1),
  });
}

function errorResultLine(
  message: string,
  turns: number,
  usage: Readonly<Record<string, unknown>>,
  stopReason: string | null,
  ctx: RenderContext,
  index: number,
): string {
  return JSON.stringify({
    type: 'result',
    subtype: 'error_during_execution',
    is_error: true,
    duration_ms: ctx.durationMs,
    num_turns: turns,
    stop_reason: stopReason,
    session_id: ctx.sessionId,
    total_cost_usd: 0,
    usage,
    permission_denials: [],
    errors: [message],
    uuid: lineUuid(ctx.sessionId, index),
  });
}

function parseJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/**
 * A UUID-shaped id (version nibble 8, "custom") that depends only on `sessionId` and `index`: four FNV-1a 32-bit
 * hashes of `<index>:<sessionId>` with different offsets. Not a secret, only stable and unlikely to collide.
 */
export function lineUuid(sessionId: string, index: number): string {
  const input = `${index}:${sessionId}`;
  let hex = '';
  for (let part = 0; part < 4; part++) {
    let hash = (0x811c9dc5 ^ Math.imul(part + 1, 0x9e3779b1)) >>> 0;
    for (let i = 0; i < input.length; i++) {
      hash ^= input.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    hex += hash.toString(16).padStart(8, '0');
  }
  const variant = ((Number.parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
