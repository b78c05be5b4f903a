// Anthropic Message Batches adapter (docs/reference/vendor-apis.md#anthropic-message-batches): plain `fetch` through
// `vendorRequest`, every answer
// validated with valibot, results rendered as Claude Code stream-JSON lines (render-claude.ts).

import * as v from 'valibot';
import { err, ok, type Result } from '../../shared/result.ts';
import { type ErrorReader, safeJson, type VendorHttpRequest, vendorRequest } from './http.ts';
import {
  type BatchError,
  type BatchListPage,
  type BatchState,
  type BatchVendor,
  type CleanupOutcome,
  type FindOutcome,
  LIST_PAGE_SIZE,
  type VendorCall,
} from './port.ts';
import { type ClaudeBatchResult, renderClaudeLines } from './render-claude.ts';

/**
 * The pinned wire version (docs/reference/vendor-apis.md#anthropic-headers): sampling parameters are refused on it,
 * and we send none.
 */
export const ANTHROPIC_VERSION = '2026-10-21';
/** Where the batch endpoints live under the base URL. */
const BATCHES = '/v1/messages/batches';
/** A batch created up to this long before `since` is still a candidate in `find` (clock skew). */
export const FIND_SKEW_MS = 60_000;
/** Pages `find` reads at most; a window holding more batches than this answers `undecided`. */
export const FIND_MAX_PAGES = 50;

// ---- vendor answers (lenient objects, only the fields read) ----

const ErrorBody = v.looseObject({
  error: v.looseObject({ type: v.optional(v.string()), message: v.optional(v.string()) }),
});

const Created = v.looseObject({ id: v.pipe(v.string(), v.nonEmpty()) });

const Counts = v.looseObject({
  processing: v.optional(v.number()),
  succeeded: v.optional(v.number()),
  errored: v.optional(v.number()),
  canceled: v.optional(v.number()),
  expired: v.optional(v.number()),
});

const Batch = v.looseObject({
  id: v.pipe(v.string(), v.nonEmpty()),
  processing_status: v.string(),
  results_url: v.nullish(v.string()),
  created_at: v.optional(v.string()),
  request_counts: v.optional(Counts),
});
type Batch = v.InferOutput<typeof Batch>;

const ListPage = v.looseObject({
  data: v.array(v.looseObject({ ...Batch.entries, created_at: v.string() })),
  has_more: v.boolean(),
  last_id: v.nullish(v.string()),
});

const Deleted = v.looseObject({ id: v.string() });

const ContentBlock = v.looseObject({ type: v.string(), text: v.optional(v.string()) });
const Message = v.looseObject({
  content: v.array(ContentBlock),
  stop_reason: v.nullish(v.string()),
  usage: v.optional(v.looseObject({})),
});
const ResultBody = v.variant('type', [
  v.looseObject({ type: v.literal('succeeded'), message: Message }),
  v.looseObject({
    type: v.literal('errored'),
    error: v.looseObject({
      error: v.optional(v.looseObject({ type: v.optional(v.string()), message: v.optional(v.string()) })),
    }),
  }),
  v.looseObject({ type: v.literal('expired') }),
  v.looseObject({ type: v.literal('canceled') }),
]);
const ResultLine = v.looseObject({ custom_id: v.string(), result: ResultBody });
type ResultLine = v.InferOutput<typeof ResultLine>;

/** Anthropic's error body `{"type":"error","error":{"type","message"},"request_id"}` into `{type, message}`. */
export const readAnthropicError: ErrorReader = (_status, body) => {
  const parsed = v.safeParse(ErrorBody, body);
  if (!parsed.success) return { type: '', message: '' };
  return { type: parsed.output.error.type ?? '', message: parsed.output.error.message ?? '' };
};

function headers(call: VendorCall): Record<string, string> {
  return { 'x-api-key': call.apiKey, 'anthropic-version': ANTHROPIC_VERSION };
}

function send(call: VendorCall, request: Omit<VendorHttpRequest, 'headers'>) {
  return vendorRequest(call, { ...request, headers: headers(call) }, readAnthropicError);
}

/** Parses and validates a JSON answer; a non-JSON or wrongly shaped answer is a `protocol` error. */
function decode<S extends v.GenericSchema>(
  schema: S,
  text: string,
  what: string,
): Result<v.InferOutput<S>, BatchError> {
  const parsed = v.safeParse(schema, safeJson(text));
  if (parsed.success) return ok(parsed.output);
  return err({ kind: 'protocol', message: `${what}: ${describeIssues(parsed.issues)}` });
}

function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  const first = issues[0];
  if (first === undefined) return 'invalid answer';
  const path = v.getDotPath(first);
  return path ? `${path}: ${first.message}` : first.message;
}

const batchPath = (id: string): string => `${BATCHES}/${encodeURIComponent(id)}`;

const isGone = (e: BatchError): boolean => e.kind === 'rejected' && e.status === 404;

async function getBatch(id: string, call: VendorCall): Promise<Result<Batch, BatchError>> {
  const answer = await send(call, { method: 'GET', url: batchPath(id), idempotent: true });
  if (!answer.ok) return answer;
  return decode(Batch, answer.value.text, `GET batch ${id}`);
}

/**
 * The URL the results are read from: the batch's `results_url` when it is on the configured base URL's origin,
 * else `<base>/v1/messages/batches/{id}/results` (a null `results_url`, or one pointing elsewhere, e.g. past a
 * proxy set as base URL — the key is never sent to another origin).
 */
function resultsUrl(batch: Batch, call: VendorCall): string {
  const fallback = `${batchPath(batch.id)}/results`;
  if (!batch.results_url) return fallback;
  try {
    return new URL(batch.results_url).origin === new URL(call.baseUrl).origin ? batch.results_url : fallback;
  } catch {
    return fallback;
  }
}

/** Reads an ended batch's results: every valid JSONL line (blank lines skipped). */
async function readResults(batch: Batch, call: VendorCall): Promise<Result<ResultLine[], BatchError>> {
  const answer = await send(call, { method: 'GET', url: resultsUrl(batch, call), idempotent: true });
  if (!answer.ok) return answer;
  const lines: ResultLine[] = [];
  let firstProblem: string | undefined;
  for (const raw of answer.value.text.split('\n')) {
    if (raw.trim() === '') continue;
    const parsed = v.safeParse(ResultLine, safeJson(raw));
    if (parsed.success) lines.push(parsed.output);
    else firstProblem ??= describeIssues(parsed.issues);
  }
  if (lines.length === 0) {
    return err({
      kind: 'protocol',
      message: `results of ${batch.id}: ${firstProblem === undefined ? 'no result line' : `no valid result line (${firstProblem})`}`,
    });
  }
  return ok(lines);
}

/** A shape conversion only: the valibot output is a `ClaudeBatchResult` with the same fields. */
function toClaudeResult(result: ResultLine['result']): ClaudeBatchResult {
  switch (result.type) {
    case 'succeeded':
      return { type: 'succeeded', message: result.message };
    case 'errored':
      return { type: 'errored', error: result.error };
    case 'expired':
      return { type: 'expired' };
    case 'canceled':
      return { type: 'canceled' };
  }
}

function requestTotal(batch: Batch): number | undefined {
  const c = batch.request_counts;
  if (c === undefined) return undefined;
  return (c.processing ?? 0) + (c.succeeded ?? 0) + (c.errored ?? 0) + (c.canceled ?? 0) + (c.expired ?? 0);
}

async function cancelBatch(id: string, call: VendorCall): Promise<Result<void, BatchError>> {
  const answer = await send(call, { method: 'POST', url: `${batchPath(id)}/cancel`, idempotent: true });
  if (answer.ok) {
    const batch = decode(Batch, answer.value.text, `cancel batch ${id}`);
    return batch.ok ? ok(undefined) : batch;
  }
  if (isGone(answer.error)) return ok(undefined);
  if (answer.error.kind === 'rejected' && (answer.error.status === 400 || answer.error.status === 409)) {
    // A batch that already ended may refuse a cancel; it is what the caller wanted anyway.
    const batch = await getBatch(id, call);
    if (batch.ok && batch.value.processing_status === 'ended') return ok(undefined);
    if (!batch.ok && isGone(batch.error)) return ok(undefined);
  }
  return answer;
}

/**
 * The Anthropic Message Batches adapter. Sends `x-api-key` (the only auth header) and `anthropic-version:
 * 2026-10-21` on every request; never sends `temperature`, `top_p` or `top_k`.
 *
 * - `submit` creates a one-request batch (`custom_id` = the request's `customId`; `output_config.format` only when a
 *   schema is given); not retried on 5xx or a lost answer (only on 429).
 * - `check` maps `in_progress`/`canceling` (and any future non-terminal status) to `inProgress`; `ended` reads the
 *   results (one request per batch: the first valid line) and renders them with `renderClaudeLines`.
 * - `cancel` answers ok for a batch that is gone (404) or already ended.
 * - `cleanup` deletes an ended batch; otherwise sends cancel (unless already `canceling`) and answers `pending`.
 * - `find` walks the batch list (newest first) back to `since` − FIND_SKEW_MS; only batches of exactly one request
 *   are candidates; an ended candidate is confirmed when a result line has the custom id, an unfinished one cannot
 *   be confirmed yet (`undecided`).
 */
/** One page of the batch list (newest first) after `afterId`, validated. */
async function listBatches(
  afterId: string | undefined,
  call: VendorCall,
): Promise<Result<v.InferOutput<typeof ListPage>, BatchError>> {
  const query = `?limit=${LIST_PAGE_SIZE}${afterId === undefined ? '' : `&after_id=${encodeURIComponent(afterId)}`}`;
  const answer = await send(call, { method: 'GET', url: `${BATCHES}${query}`, idempotent: true });
  return answer.ok ? decode(ListPage, answer.value.text, 'list batches') : answer;
}

export const anthropicBatches: BatchVendor = {
  provider: 'anthropic',

  async submit(request, call) {
    const params = {
      model: request.model,
      max_tokens: request.maxTokens,
      messages: [{ role: 'user', content: request.prompt }],
      ...(request.schema === undefined
        ? {}
        : { output_config: { format: { type: 'json_schema', schema: request.schema } } }),
    };
    const answer = await send(call, {
      method: 'POST',
      url: BATCHES,
      json: { requests: [{ custom_id: request.customId, params }] },
      idempotent: false,
    });
    if (!answer.ok) return answer;
    const created = decode(Created, answer.value.text, 'create batch');
    if (!created.ok) return created;
    return ok({ id: created.value.id });
  },

  async check(id, render, call): Promise<Result<BatchState, BatchError>> {
    const batch = await getBatch(id, call);
    if (!batch.ok) return batch;
    if (batch.value.processing_status !== 'ended') return ok({ kind: 'inProgress', id });
    const lines = await readResults(batch.value, call);
    if (!lines.ok) return lines;
    const line = lines.value[0]!;
    return ok({ kind: 'ended', id, outcome: renderClaudeLines(toClaudeResult(line.result), render) });
  },

  cancel: cancelBatch,

  async cleanup(id, call): Promise<Result<CleanupOutcome, BatchError>> {
    const batch = await getBatch(id, call);
    if (!batch.ok) return isGone(batch.error) ? ok({ kind: 'done' }) : batch;
    if (batch.value.processing_status !== 'ended') {
      if (batch.value.processing_status !== 'canceling') {
        const cancelled = await cancelBatch(id, call);
        if (!cancelled.ok) return cancelled;
      }
      return ok({
        kind: 'pending',
        detail: 'cancel requested; Anthropic deletes a batch only once it has ended',
      });
    }
    const answer = await send(call, { method: 'DELETE', url: batchPath(id), idempotent: true });
    if (!answer.ok) return isGone(answer.error) ? ok({ kind: 'done' }) : answer;
    const deleted = decode(Deleted, answer.value.text, `delete batch ${id}`);
    return deleted.ok ? ok({ kind: 'done' }) : deleted;
  },

  async find(customId, since, call): Promise<Result<FindOutcome, BatchError>> {
    const windowStart = since.getTime() - FIND_SKEW_MS;
    const confirmed: string[] = [];
    const unconfirmed: string[] = [];
    let afterId: string | undefined;
    let complete = false;
    for (let page = 0; page < FIND_MAX_PAGES && !complete; page++) {
      const listed = await listBatches(afterId, call);
      if (!listed.ok) return listed;
      for (const batch of listed.value.data) {
        const created = Date.parse(batch.created_at);
        if (Number.isNaN(created)) {
          return err({ kind: 'protocol', message: `list batches: created_at of ${batch.id} is not a date` });
        }
        if (created < windowStart) {
          complete = true; // newest first: everything further is older still
          break;
        }
        const total = requestTotal(batch);
        if (total !== undefined && total !== 1) continue;
        if (batch.processing_status !== 'ended') {
          unconfirmed.push(batch.id);
          continue;
        }
        const lines = await readResults(batch, call);
        if (!lines.ok) {
          if (isGone(lines.error)) continue; // deleted meanwhile
          return lines;
        }
        if (lines.value.some((line) => line.custom_id === customId)) confirmed.push(batch.id);
      }
      if (complete || !listed.value.has_more) {
        complete = true;
        break;
      }
      const last = listed.value.last_id ?? listed.value.data.at(-1)?.id;
      if (last === undefined || last === afterId) {
        return err({ kind: 'protocol', message: 'list batches: has_more without a usable last_id' });
      }
      afterId = last;
    }
    if (confirmed.length > 0) {
      // Listed newest first: the oldest confirmed batch is the original submission.
      const [first, ...others] = [...confirmed].reverse();
      return ok({ kind: 'found', id: first!, duplicates: others });
    }
    if (unconfirmed.length > 0 || !complete) return ok({ kind: 'undecided', candidates: unconfirmed });
    return ok({ kind: 'absent' });
  },

  async listPage(cursor, call): Promise<Result<BatchListPage, BatchError>> {
    const listed = await listBatches(cursor, call);
    if (!listed.ok) return listed;
    const batches = listed.value.data.map((b) => ({ id: b.id, ended: b.processing_status === 'ended' }));
    const last = listed.value.last_id ?? listed.value.data.at(-1)?.id;
    const next = listed.value.has_more && last !== undefined && last !== cursor ? last : undefined;
    return ok({ batches, next });
  },
};
