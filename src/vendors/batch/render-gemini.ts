// Renders one Gemini batch result as Gemini CLI stream-json lines
// (docs/reference/vendor-cli-events.md#as-gemini-cli-lines). Pure: no I/O, no
// clock, no randomness — the same item, context and `at` always give the same lines.

import * as v from 'valibot';
import type { BatchOutcome, RenderContext } from './port.ts';

/** `usageMetadata` of a GenerateContentResponse (only the counters we read). */
export const GeminiUsage = v.looseObject({
  promptTokenCount: v.optional(v.number()),
  candidatesTokenCount: v.optional(v.number()),
  thoughtsTokenCount: v.optional(v.number()),
  cachedContentTokenCount: v.optional(v.number()),
  toolUsePromptTokenCount: v.optional(v.number()),
  totalTokenCount: v.optional(v.number()),
});
export type GeminiUsage = v.InferOutput<typeof GeminiUsage>;

/** A `google.rpc.Status` as Gemini puts it in a failed request, a failed job, or an HTTP error body. */
export const GeminiStatus = v.looseObject({
  code: v.optional(v.number()),
  message: v.optional(v.string()),
  status: v.optional(v.string()),
});
export type GeminiStatus = v.InferOutput<typeof GeminiStatus>;

/** A GenerateContentResponse, reduced to what the renderer reads. */
export const GeminiResponse = v.looseObject({
  candidates: v.optional(
    v.array(
      v.looseObject({
        content: v.optional(
          v.looseObject({
            parts: v.optional(
              v.array(v.looseObject({ text: v.optional(v.string()), thought: v.optional(v.boolean()) })),
            ),
          }),
        ),
        finishReason: v.optional(v.string()),
      }),
    ),
  ),
  promptFeedback: v.optional(v.looseObject({ blockReason: v.optional(v.string()) })),
  usageMetadata: v.optional(GeminiUsage),
});
export type GeminiResponse = v.InferOutput<typeof GeminiResponse>;

/** One entry of `inlinedResponses.inlinedResponses[]`: the request's response, or its error. */
export const GeminiInlinedResponse = v.looseObject({
  response: v.optional(GeminiResponse),
  error: v.optional(GeminiStatus),
});
export type GeminiInlinedResponse = v.InferOutput<typeof GeminiInlinedResponse>;

/** The `type` of the `error` object on a failed `result` line (our names; the CLI's own are its error classes). */
export type GeminiFailureType =
  | 'request_error'
  | 'response_blocked'
  | 'prompt_blocked'
  | 'finish_reason'
  | 'empty_response'
  | 'invalid_json'
  | 'batch_failed'
  | 'batch_expired'
  | 'batch_cancelled';

/** A reason a batch run failed, as rendered on the error `result` line and as `BatchOutcome.message`. */
export interface GeminiFailure {
  readonly type: GeminiFailureType;
  readonly message: string;
}

/**
 * Finish reasons that mean the vendor withheld (part of) the answer. STOP, MAX_TOKENS and an absent or unspecified
 * reason count as a finished answer; any other reason (OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL, …) fails the run.
 */
export const BLOCKED_FINISH_REASONS: ReadonlySet<string> = new Set([
  'SAFETY',
  'PROHIBITED_CONTENT',
  'BLOCKLIST',
  'SPII',
  'RECITATION',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
]);
const FINISHED_REASONS: ReadonlySet<string> = new Set(['STOP', 'MAX_TOKENS', 'FINISH_REASON_UNSPECIFIED']);

/** The time put on every line when the caller gives none: the Unix epoch (fixed, so output stays reproducible). */
export const DEFAULT_RENDER_TIME = new Date(0);

/**
 * The assistant text of a response: `.text` of `candidates[0].content.parts[]` joined without separator, parts
 * marked `thought: true` skipped. Empty when there is no candidate or no text part.
 */
export function geminiText(response: GeminiResponse): string {
  const parts = response.candidates?.[0]?.content?.parts ?? [];
  return parts
    .filter((part) => part.thought !== true && typeof part.text === 'string')
    .map((part) => part.text)
    .join('');
}

/**
 * Renders one inlined batch response as Gemini CLI stream-json lines: `init` (session_id = `ctx.sessionId`,
 * model = `ctx.model`), the user `message` (`ctx.prompt`), the assistant `message` (`delta: true`, the full text;
 * left out when there is no text), and a `result` line. Every line carries `at` as its ISO timestamp.
 *
 * Succeeded: finishReason STOP, MAX_TOKENS or none, and — when `ctx.structured` — a text that parses as JSON, which
 * the `result` line then also carries as `structured_output`. Failed (error `result` line, `message` as below):
 * - per-request error → `batch request failed: <status or code>: <message>`;
 * - `promptFeedback.blockReason` → `the prompt was blocked (blockReason <X>)`;
 * - finishReason in `BLOCKED_FINISH_REASONS` → `the response was blocked (finishReason <X>)`;
 * - any other finishReason → `the response ended with finishReason <X>`;
 * - no candidate at all → `the response has no candidates`;
 * - `ctx.structured` and the text is not JSON → `the response is not valid JSON although a schema was sent`.
 */
export function renderGeminiResponse(
  item: GeminiInlinedResponse,
  ctx: RenderContext,
  at: Date = DEFAULT_RENDER_TIME,
): BatchOutcome {
  if (item.error !== undefined || item.response === undefined) {
    const e = item.error ?? {};
    const code = e.status ?? (e.code !== undefined ? String(e.code) : 'UNKNOWN');
    const message = item.error
      ? (e.message ?? 'no message')
      : 'the batch result holds neither a response nor an error';
    return renderGeminiFailure(
      ctx,
      item.error
        ? { type: 'request_error', message: `batch request failed: ${code}: ${message}` }
        : { type: 'empty_response', message },
      at,
    );
  }
  const response = item.response;
  const usage = response.usageMetadata;
  const blockReason = response.promptFeedback?.blockReason;
  if (blockReason !== undefined && blockReason !== 'BLOCK_REASON_UNSPECIFIED') {
    return renderGeminiFailure(
      ctx,
      { type: 'prompt_blocked', message: `the prompt was blocked (blockReason ${blockReason})` },
      at,
      usage,
    );
  }
  const candidate = response.candidates?.[0];
  const text = geminiText(response);
  if (candidate === undefined) {
    return renderGeminiFailure(
      ctx,
      { type: 'empty_response', message: 'the response has no candidates' },
      at,
      usage,
    );
  }
  const reason = candidate.finishReason;
  if (reason !== undefined && !FINISHED_REASONS.has(reason)) {
    const failure: GeminiFailure = BLOCKED_FINISH_REASONS.has(reason)
      ? { type: 'response_blocked', message: `the response was blocked (finishReason ${reason})` }
      : { type: 'finish_reason', message: `the response ended with finishReason ${reason}` };
    return renderGeminiFailure(ctx, failure, at, usage, text);
  }
  let structured: { value: unknown } | undefined;
  if (ctx.structured) {
    try {
      structured = { value: JSON.parse(text) as unknown };
    } catch {
      return renderGeminiFailure(
        ctx,
        { type: 'invalid_json', message: 'the response is not valid JSON although a schema was sent' },
        at,
        usage,
        text,
      );
    }
  }
  const timestamp = at.toISOString();
  const result = {
    type: 'result',
    timestamp,
    status: 'success',
    stats: stats(ctx, usage),
    ...(structured ? { structured_output: structured.value } : {}),
  };
  return { kind: 'succeeded', lines: [...opening(ctx, timestamp, text), JSON.stringify(result)] };
}

/**
 * Renders a run that failed: `init`, the user `message`, the assistant `message` when `text` is non-empty, then a
 * `result` line `{status: 'error', error: {type, message}, stats}` (stats from `usage`, zeros without it). The
 * outcome's `message` is `failure.message`. Used for failed, expired and cancelled batches and failed requests.
 */
export function renderGeminiFailure(
  ctx: RenderContext,
  failure: GeminiFailure,
  at: Date = DEFAULT_RENDER_TIME,
  usage?: GeminiUsage,
  text = '',
): BatchOutcome {
  const timestamp = at.toISOString();
  const result = {
    type: 'result',
    timestamp,
    status: 'error',
    error: { type: failure.type, message: failure.message },
    stats: stats(ctx, usage),
  };
  return {
    kind: 'failed',
    lines: [...opening(ctx, timestamp, text), JSON.stringify(result)],
    message: failure.message,
  };
}

function opening(ctx: RenderContext, timestamp: string, text: string): string[] {
  const lines = [
    JSON.stringify({ type: 'init', timestamp, session_id: ctx.sessionId, model: ctx.model }),
    JSON.stringify({ type: 'message', timestamp, role: 'user', content: ctx.prompt }),
  ];
  if (text !== '') {
    lines.push(JSON.stringify({ type: 'message', timestamp, role: 'assistant', content: text, delta: true }));
  }
  return lines;
}

/**
 * The CLI's `stats` object from `usageMetadata` (docs/reference/vendor-cli-events.md#batch-results-as-cli-lines).
 * `output_tokens` is `candidatesTokenCount` alone:
 * whether the CLI adds `thoughtsTokenCount` is UNCONFIRMED, so thought tokens show only in `total_tokens` (Gemini's
 * `totalTokenCount` includes them). Without `totalTokenCount` the total is the sum of the counters present.
 */
function stats(ctx: RenderContext, usage: GeminiUsage | undefined) {
  const inputTokens = count(usage?.promptTokenCount);
  const outputTokens = count(usage?.candidatesTokenCount);
  const cached = count(usage?.cachedContentTokenCount);
  const total =
    usage?.totalTokenCount !== undefined
      ? count(usage.totalTokenCount)
      : inputTokens + outputTokens + count(usage?.thoughtsTokenCount) + count(usage?.toolUsePromptTokenCount);
  const perModel = {
    total_tokens: total,
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    cached,
    input: Math.max(0, inputTokens - cached),
  };
  return {
    ...perModel,
    duration_ms: count(ctx.durationMs),
    tool_calls: 0,
    models: { [ctx.model]: perModel },
  };
}

function count(n: number | undefined): number {
  return n !== undefined && Number.isFinite(n) && n > 0 ? Math.round(n) : 0;
}
