// Renders one OpenAI Batch API output/error line (a `/v1/responses` request) as the lines `codex exec --json` would
// have printed for the same prompt (docs/reference/vendor-cli-events.md#as-codex-lines). Pure: no I/O, no
// clock, no randomness, so rendering the same line twice yields byte-identical lines.

import * as v from 'valibot';
import { err, ok, type Result } from '../../shared/result.ts';
import type { BatchOutcome, RenderContext } from './port.ts';

/** Failure reasons (become `status.failureReason` and the `turn.failed` message). */
export const EXPIRED_MESSAGE = 'batch expired before the request ran';
export const CANCELLED_MESSAGE = 'batch was cancelled before the request ran';
export const REFUSAL_MESSAGE = 'the model refused the request (refusal)';
export const CONTENT_FILTER_MESSAGE = 'the response was blocked (incomplete: content_filter)';

/**
 * One line of a batch output or error file (docs/reference/vendor-apis.md#openai-results), validated leniently: only
 * the fields read here are
 * checked, anything else is kept. `response.body` is checked by the renderer, since its shape depends on the status.
 */
export const OpenAIBatchLine = v.looseObject({
  id: v.nullish(v.string()),
  custom_id: v.string(),
  response: v.nullish(
    v.looseObject({
      status_code: v.number(),
      request_id: v.nullish(v.string()),
      body: v.optional(v.unknown()),
    }),
  ),
  error: v.nullish(v.looseObject({ code: v.nullish(v.unknown()), message: v.nullish(v.unknown()) })),
});
export type OpenAIBatchLine = v.InferOutput<typeof OpenAIBatchLine>;

const ErrorBody = v.looseObject({
  error: v.looseObject({
    message: v.nullish(v.unknown()),
    type: v.nullish(v.unknown()),
    code: v.nullish(v.unknown()),
  }),
});

const OutputItem = v.looseObject({
  type: v.string(),
  content: v.nullish(v.array(v.unknown())),
  summary: v.nullish(v.array(v.unknown())),
});

const Part = v.looseObject({
  type: v.string(),
  text: v.optional(v.unknown()),
  refusal: v.optional(v.unknown()),
});

/** The parts of a Responses object (docs/reference/vendor-apis.md#openai-results) the renderer reads. */
const ResponsesBody = v.looseObject({
  status: v.nullish(v.string()),
  output: v.nullish(v.array(OutputItem)),
  usage: v.nullish(
    v.looseObject({
      input_tokens: v.nullish(v.number()),
      input_tokens_details: v.nullish(v.looseObject({ cached_tokens: v.nullish(v.number()) })),
      output_tokens: v.nullish(v.number()),
    }),
  ),
  incomplete_details: v.nullish(v.looseObject({ reason: v.nullish(v.string()) })),
  error: v.nullish(v.looseObject({ code: v.nullish(v.unknown()), message: v.nullish(v.unknown()) })),
});
type ResponsesBody = v.InferOutput<typeof ResponsesBody>;

/** `thread.started` + `turn.started`: every rendering begins with these two lines. */
function opening(ctx: RenderContext): string[] {
  return [
    JSON.stringify({ type: 'thread.started', thread_id: ctx.sessionId }),
    JSON.stringify({ type: 'turn.started' }),
  ];
}

/**
 * A failed run with no model output: `thread.started`, `turn.started`, `turn.failed {error:{message}}`; the outcome
 * message is `message`. `detail` (e.g. the refusal text) is appended to the `turn.failed` message only.
 */
export function renderCodexFailure(message: string, ctx: RenderContext, detail?: string): BatchOutcome {
  const shown = detail !== undefined && detail !== '' ? `${message}: ${detail}` : message;
  return {
    kind: 'failed',
    lines: [...opening(ctx), JSON.stringify({ type: 'turn.failed', error: { message: shown } })],
    message,
  };
}

const text = (u: unknown): string => {
  if (typeof u === 'string') return u;
  if (u === null || u === undefined) return '';
  return typeof u === 'object' ? JSON.stringify(u) : String(u);
};

/** `<code>: <message>`, dropping whichever is empty. */
function codeAndMessage(code: unknown, message: unknown): string {
  return [text(code), text(message)].filter((s) => s !== '').join(': ');
}

function parts(content: readonly unknown[] | null | undefined): v.InferOutput<typeof Part>[] {
  return (content ?? []).flatMap((p) => {
    const r = v.safeParse(Part, p);
    return r.success ? [r.output] : [];
  });
}

/** The joined `output_text` of every `message` output item (docs/reference/vendor-apis.md#openai-results). */
export function responsesText(body: ResponsesBody): string {
  return (body.output ?? [])
    .filter((item) => item.type === 'message')
    .flatMap((item) => parts(item.content))
    .flatMap((p) => (p.type === 'output_text' && typeof p.text === 'string' ? [p.text] : []))
    .join('');
}

/** The refusal texts of every `message` output item; undefined when the model did not refuse. */
function refusalOf(body: ResponsesBody): string | undefined {
  const refusals = (body.output ?? [])
    .filter((item) => item.type === 'message')
    .flatMap((item) => parts(item.content))
    .filter((p) => p.type === 'refusal');
  if (refusals.length === 0) return undefined;
  return refusals.map((p) => text(p.refusal)).join('');
}

/** The summary text of each `reasoning` output item that has any, in output order. */
function reasoningTexts(body: ResponsesBody): string[] {
  return (body.output ?? [])
    .filter((item) => item.type === 'reasoning')
    .map((item) =>
      parts(item.summary)
        .flatMap((p) => (typeof p.text === 'string' && p.text !== '' ? [p.text] : []))
        .join('\n\n'),
    )
    .filter((t) => t !== '');
}

/** Why a finished line failed, or undefined when it succeeded. */
function failureOf(body: ResponsesBody): { message: string; detail?: string } | undefined {
  const refusal = refusalOf(body);
  if (refusal !== undefined) return { message: REFUSAL_MESSAGE, detail: refusal };
  const status = body.status ?? 'completed';
  if (status === 'completed') return undefined;
  if (status === 'incomplete') {
    return body.incomplete_details?.reason === 'content_filter'
      ? { message: CONTENT_FILTER_MESSAGE }
      : undefined;
  }
  if (status === 'failed' && body.error) {
    return { message: `batch request failed: ${codeAndMessage(body.error.code, body.error.message)}` };
  }
  return { message: `batch request failed: the response ended with status ${status}` };
}

/**
 * The `codex exec --json` lines and outcome for one batch line:
 *
 * | line | lines | outcome |
 * |---|---|---|
 * | 200, body `completed` (or `incomplete` for `max_output_tokens`) | thread.started, turn.started, [reasoning item…], agent_message item, turn.completed | succeeded |
 * | 200, body with a `refusal` content part | thread.started, turn.started, turn.failed | failed, REFUSAL_MESSAGE |
 * | 200, body `incomplete` for `content_filter` | same | failed, CONTENT_FILTER_MESSAGE |
 * | 200, body `failed` (or any other status) | same | failed, `batch request failed: <code>: <message>` |
 * | `status_code >= 400` | same | failed, `batch request failed: <body.error.type or code>: <body.error.message>` |
 * | `error.code` `batch_expired` / `batch_cancelled` | same | failed, EXPIRED_MESSAGE / CANCELLED_MESSAGE |
 * | any other `error` | same | failed, `batch request failed: <code>: <message>` |
 *
 * `thread_id` is `ctx.sessionId`. Item ids are `item_<n>` from 0: one `reasoning` item per reasoning output item with
 * summary text (its summary parts joined by a blank line), then one `agent_message` whose text is the joined
 * `output_text` parts of every `message` item — with a schema, that text is the JSON string, as `codex exec
 * --output-schema` prints it. `turn.completed.usage` is `{input_tokens, cached_input_tokens ←
 * input_tokens_details.cached_tokens, output_tokens}` (0 when absent). A refusal's text is appended to the
 * `turn.failed` message. Errs (with a description) only when a 2xx line's body is not a Responses object or the line
 * has neither `response` nor `error`.
 */
export function renderCodexLine(line: OpenAIBatchLine, ctx: RenderContext): Result<BatchOutcome, string> {
  const response = line.response;
  if (response === null || response === undefined) {
    if (line.error === null || line.error === undefined) {
      return err(`line ${line.custom_id} has neither response nor error`);
    }
    const code = text(line.error.code);
    if (code === 'batch_expired') return ok(renderCodexFailure(EXPIRED_MESSAGE, ctx));
    if (code === 'batch_cancelled') return ok(renderCodexFailure(CANCELLED_MESSAGE, ctx));
    const why = codeAndMessage(code, line.error.message) || 'no reason given';
    return ok(renderCodexFailure(`batch request failed: ${why}`, ctx));
  }
  if (response.status_code >= 400) {
    const parsed = v.safeParse(ErrorBody, response.body);
    const why = parsed.success
      ? codeAndMessage(parsed.output.error.type ?? parsed.output.error.code, parsed.output.error.message)
      : '';
    return ok(renderCodexFailure(`batch request failed: ${why || `HTTP ${response.status_code}`}`, ctx));
  }
  const parsed = v.safeParse(ResponsesBody, response.body);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const path = v.getDotPath(issue) ?? '';
    return err(`line ${line.custom_id}: response body${path ? `.${path}` : ''}: ${issue.message}`);
  }
  const body = parsed.output;
  const failure = failureOf(body);
  if (failure !== undefined) return ok(renderCodexFailure(failure.message, ctx, failure.detail));
  const lines = opening(ctx);
  let n = 0;
  for (const reasoning of reasoningTexts(body)) {
    lines.push(
      JSON.stringify({
        type: 'item.completed',
        item: { id: `item_${n++}`, type: 'reasoning', text: reasoning },
      }),
    );
  }
  lines.push(
    JSON.stringify({
      type: 'item.completed',
      item: { id: `item_${n++}`, type: 'agent_message', text: responsesText(body) },
    }),
  );
  lines.push(
    JSON.stringify({
      type: 'turn.completed',
      usage: {
        input_tokens: body.usage?.input_tokens ?? 0,
        cached_input_tokens: body.usage?.input_tokens_details?.cached_tokens ?? 0,
        output_tokens: body.usage?.output_tokens ?? 0,
      },
    }),
  );
  return ok({ kind: 'succeeded', lines });
}
