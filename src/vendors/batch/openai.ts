// OpenAI Batch API adapter (docs/reference/vendor-apis.md#openai-batch-api): one `/v1/responses` request per batch,
// uploaded first as a JSONL file
// through the Files API; results read from the output and error files and rendered as `codex exec --json` lines.
// Plain `fetch` through `vendorRequest`; every answer validated with valibot; no `node:` imports (Node and Deno).

import * as v from 'valibot';
import { err, ok, type Result } from '../../shared/result.ts';
import { type ErrorReader, safeJson, type VendorHttpResponse, vendorRequest } from './http.ts';
import {
  type BatchError,
  type BatchListPage,
  type BatchOutcome,
  type BatchRequest,
  type BatchState,
  type BatchVendor,
  type CleanupOutcome,
  type FindOutcome,
  LIST_PAGE_SIZE,
  type RenderContext,
  runCustomId,
  type SubmittedBatch,
  type VendorCall,
} from './port.ts';
import {
  CANCELLED_MESSAGE,
  EXPIRED_MESSAGE,
  OpenAIBatchLine,
  renderCodexFailure,
  renderCodexLine,
} from './render-codex.ts';

/** The one batch endpoint we use (docs/reference/vendor-apis.md#openai-input-upload: prefer the Responses API). */
export const OPENAI_BATCH_ENDPOINT = '/v1/responses';
/** Lifetime of the uploaded input file and of the output/error files (3 days; the API allows 3600..2592000 s). */
export const OPENAI_FILE_TTL_SECONDS = 259_200;
/** `find` also accepts batches created this long before `since` (clock skew between us and the vendor). */
export const OPENAI_FIND_SKEW_MS = 60_000;
/** Longest walk through `GET /batches` in one `find` before giving up with a protocol error. */
export const OPENAI_FIND_MAX_PAGES = 1_000;
/** Metadata keys written on every batch (≤ 16 pairs, values ≤ 512 characters). */
export const METADATA_RUN_KEY = 'agent_run';
export const METADATA_LABEL_KEY = 'run';
const MAX_METADATA_VALUE = 512;

const TRANSITIONAL: ReadonlySet<string> = new Set(['validating', 'in_progress', 'finalizing', 'cancelling']);
const TERMINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'expired', 'cancelled']);

const OpenAIErrorBody = v.looseObject({
  error: v.looseObject({
    message: v.nullish(v.unknown()),
    type: v.nullish(v.unknown()),
    code: v.nullish(v.unknown()),
  }),
});

const asText = (u: unknown): string =>
  typeof u === 'string' ? u : u === null || u === undefined ? '' : String(u);

/**
 * Reads OpenAI's error body `{"error":{"message","type","param","code"}}`
 * (docs/reference/vendor-apis.md#openai-errors): `type` is the error
 * type, else its code; `message` the vendor's message. Anything else yields empty strings (the caller falls back to
 * the raw text).
 */
export const readOpenAIError: ErrorReader = (_status, body) => {
  const parsed = v.safeParse(OpenAIErrorBody, body);
  if (!parsed.success) return { type: '', message: '' };
  const e = parsed.output.error;
  return { type: asText(e.type) || asText(e.code), message: asText(e.message) };
};

const FileObject = v.looseObject({ id: v.string() });
const FileDeleted = v.looseObject({ id: v.string(), deleted: v.boolean() });
const Metadata = v.nullish(v.record(v.string(), v.unknown()));
const Batch = v.looseObject({
  id: v.string(),
  status: v.string(),
  input_file_id: v.nullish(v.string()),
  output_file_id: v.nullish(v.string()),
  error_file_id: v.nullish(v.string()),
  errors: v.nullish(
    v.looseObject({
      data: v.nullish(
        v.array(v.looseObject({ code: v.nullish(v.unknown()), message: v.nullish(v.unknown()) })),
      ),
    }),
  ),
  metadata: Metadata,
});
type Batch = v.InferOutput<typeof Batch>;
const BatchList = v.looseObject({
  data: v.array(
    v.looseObject({
      id: v.string(),
      created_at: v.number(),
      status: v.optional(v.string()),
      metadata: Metadata,
    }),
  ),
  last_id: v.nullish(v.string()),
  has_more: v.nullish(v.boolean()),
});

/** One page of `GET /batches` (newest first) after the cursor `after`, validated. */
async function listBatches(
  after: string | undefined,
  call: VendorCall,
): Promise<Result<v.InferOutput<typeof BatchList>, BatchError>> {
  const query = `limit=${LIST_PAGE_SIZE}${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}`;
  const answer = await vendorRequest(
    call,
    { method: 'GET', url: `/batches?${query}`, headers: auth(call), idempotent: true },
    readOpenAIError,
  );
  return answer.ok ? decode(BatchList, answer.value, 'list batches') : answer;
}

function auth(call: VendorCall): Record<string, string> {
  return { authorization: `Bearer ${call.apiKey}` };
}

/** Validates a vendor answer; a non-JSON or misshapen answer is a `protocol` error naming `what` and the field. */
function decode<S extends v.GenericSchema>(
  schema: S,
  response: VendorHttpResponse,
  what: string,
): Result<v.InferOutput<S>, BatchError> {
  const json = safeJson(response.text);
  if (json === undefined) return err({ kind: 'protocol', message: `${what}: the answer is not JSON` });
  const parsed = v.safeParse(schema, json);
  if (parsed.success) return ok(parsed.output);
  const issue = parsed.issues[0];
  const path = v.getDotPath(issue);
  return err({ kind: 'protocol', message: `${what}: ${path ? `${path}: ` : ''}${issue.message}` });
}

/**
 * The one JSONL line of a batch's input file (docs/reference/vendor-apis.md#openai-input-upload,
 * docs/reference/vendor-apis.md#structured-output): `custom_id`, `POST`, `/v1/responses`, and a body
 * with `model`, the prompt as the one user input, `max_output_tokens`, and `text.format` (a strict `json_schema`
 * named `result`) only when `request.schema` is set. No sampling parameters. Ends with a newline.
 */
export function openaiBatchLine(request: BatchRequest): string {
  const body: Record<string, unknown> = {
    model: request.model,
    input: [{ role: 'user', content: request.prompt }],
    max_output_tokens: request.maxTokens,
  };
  if (request.schema !== undefined) {
    body.text = { format: { type: 'json_schema', name: 'result', schema: request.schema, strict: true } };
  }
  return `${JSON.stringify({ custom_id: request.customId, method: 'POST', url: OPENAI_BATCH_ENDPOINT, body })}\n`;
}

/**
 * The `POST /batches` body (docs/reference/vendor-apis.md#openai-create): the uploaded file, `/v1/responses`, `24h`,
 * metadata `agent_run` = the
 * custom id (what `find` matches) and `run` = the label (cut to 512 characters), and output files that expire after
 * OPENAI_FILE_TTL_SECONDS.
 */
export function openaiBatchCreateBody(request: BatchRequest, inputFileId: string): Record<string, unknown> {
  return {
    input_file_id: inputFileId,
    endpoint: OPENAI_BATCH_ENDPOINT,
    completion_window: '24h',
    metadata: {
      [METADATA_RUN_KEY]: request.customId,
      [METADATA_LABEL_KEY]: request.label.slice(0, MAX_METADATA_VALUE),
    },
    output_expires_after: { anchor: 'created_at', seconds: OPENAI_FILE_TTL_SECONDS },
  };
}

/**
 * The multipart form of the input upload (docs/reference/vendor-apis.md#openai-input-upload): purpose `batch`, the
 * file, and its expiry.
 */
function uploadForm(request: BatchRequest): FormData {
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append(
    'file',
    new Blob([openaiBatchLine(request)], { type: 'application/jsonl' }),
    `${request.customId}.jsonl`,
  );
  form.append('expires_after[anchor]', 'created_at');
  form.append('expires_after[seconds]', String(OPENAI_FILE_TTL_SECONDS));
  return form;
}

const isNotFound = (e: BatchError): boolean => e.kind === 'rejected' && e.status === 404;

async function getBatch(id: string, call: VendorCall): Promise<Result<Batch, BatchError>> {
  const answer = await vendorRequest(
    call,
    { method: 'GET', url: `/batches/${encodeURIComponent(id)}`, headers: auth(call), idempotent: true },
    readOpenAIError,
  );
  return answer.ok ? decode(Batch, answer.value, `batch ${id}`) : answer;
}

/** Deletes one file; a file already gone (404) counts as deleted. */
async function deleteFile(fileId: string, call: VendorCall): Promise<Result<void, BatchError>> {
  const answer = await vendorRequest(
    call,
    { method: 'DELETE', url: `/files/${encodeURIComponent(fileId)}`, headers: auth(call), idempotent: true },
    readOpenAIError,
  );
  if (!answer.ok) return isNotFound(answer.error) ? ok(undefined) : answer;
  const deleted = decode(FileDeleted, answer.value, `delete file ${fileId}`);
  if (!deleted.ok) return deleted;
  if (!deleted.value.deleted) return err({ kind: 'protocol', message: `file ${fileId} was not deleted` });
  return ok(undefined);
}

/** Every line of a JSONL result file, validated. */
async function readLines(fileId: string, call: VendorCall): Promise<Result<OpenAIBatchLine[], BatchError>> {
  const answer = await vendorRequest(
    call,
    {
      method: 'GET',
      url: `/files/${encodeURIComponent(fileId)}/content`,
      headers: auth(call),
      idempotent: true,
    },
    readOpenAIError,
  );
  if (!answer.ok) return answer;
  const lines: OpenAIBatchLine[] = [];
  const raw = answer.value.text.split('\n').filter((l) => l.trim() !== '');
  for (const [i, text] of raw.entries()) {
    const decoded = decode(
      OpenAIBatchLine,
      { status: answer.value.status, text },
      `file ${fileId} line ${i + 1}`,
    );
    if (!decoded.ok) return decoded;
    lines.push(decoded.value);
  }
  return ok(lines);
}

/** The reason a `failed` batch (validation failure) gives in `errors.data[]`. */
function batchFailedMessage(batch: Batch): string {
  const reasons = (batch.errors?.data ?? [])
    .map((e) => {
      const message = asText(e.message);
      return message !== '' ? message : asText(e.code);
    })
    .filter((m) => m !== '');
  return `batch failed: ${reasons.length > 0 ? reasons.join('; ') : 'no reason given'}`;
}

/** Reads both result files of a terminal batch and renders our one line. */
async function outcomeOf(
  batch: Batch,
  render: RenderContext,
  call: VendorCall,
): Promise<Result<BatchOutcome, BatchError>> {
  if (batch.status === 'failed') return ok(renderCodexFailure(batchFailedMessage(batch), render));
  const lines: OpenAIBatchLine[] = [];
  for (const fileId of [batch.output_file_id, batch.error_file_id]) {
    if (fileId === null || fileId === undefined || fileId === '') continue;
    const read = await readLines(fileId, call);
    if (!read.ok) return read;
    lines.push(...read.value);
  }
  const runTag = batch.metadata?.[METADATA_RUN_KEY];
  const customId = typeof runTag === 'string' ? runTag : runCustomId(render.sessionId);
  const line = lines.find((l) => l.custom_id === customId) ?? (lines.length === 1 ? lines[0] : undefined);
  if (line === undefined) {
    if (lines.length > 1) {
      return err({ kind: 'protocol', message: `batch ${batch.id}: no result line for ${customId}` });
    }
    if (batch.status === 'expired') return ok(renderCodexFailure(EXPIRED_MESSAGE, render));
    if (batch.status === 'cancelled') return ok(renderCodexFailure(CANCELLED_MESSAGE, render));
    return err({ kind: 'protocol', message: `batch ${batch.id} is ${batch.status} but has no result line` });
  }
  const rendered = renderCodexLine(line, render);
  return rendered.ok ? rendered : err({ kind: 'protocol', message: rendered.error });
}

/**
 * `POST /batches/{id}/cancel`. A batch that is unknown (404), or that answers 400/409 because it already ended or is
 * cancelling (confirmed by reading it), counts as cancelled.
 */
async function cancelBatch(id: string, call: VendorCall): Promise<Result<void, BatchError>> {
  const answer = await vendorRequest(
    call,
    {
      method: 'POST',
      url: `/batches/${encodeURIComponent(id)}/cancel`,
      headers: auth(call),
      idempotent: true,
    },
    readOpenAIError,
  );
  if (answer.ok) {
    const batch = decode(Batch, answer.value, `cancel batch ${id}`);
    return batch.ok ? ok(undefined) : batch;
  }
  const e = answer.error;
  if (isNotFound(e)) return ok(undefined);
  if (e.kind === 'rejected' && (e.status === 400 || e.status === 409)) {
    const got = await getBatch(id, call);
    if (got.ok && (TERMINAL.has(got.value.status) || got.value.status === 'cancelling')) return ok(undefined);
  }
  return answer;
}

/** Whether a failed create definitely did not create a batch (so its upload may be deleted). */
function createRefused(e: BatchError): boolean {
  return e.kind === 'rejected' || (e.kind === 'unavailable' && e.status === 429);
}

/**
 * The OpenAI adapter. `submit` uploads the JSONL input (`POST /files`) then creates the batch (`POST /batches`);
 * neither is retried except on 429. When the create is definitely refused (4xx, or 429 after the retries) the upload
 * is deleted again (best effort); when its answer was lost (network, 5xx, or a 2xx that does not parse) the upload
 * stays for the caller's `find` and `cleanup`. An upload whose own answer is lost is left to its expiry
 * (OPENAI_FILE_TTL_SECONDS).
 */
export const openaiBatches: BatchVendor = {
  provider: 'openai',

  async submit(request: BatchRequest, call: VendorCall): Promise<Result<SubmittedBatch, BatchError>> {
    const uploaded = await vendorRequest(
      call,
      { method: 'POST', url: '/files', headers: auth(call), form: uploadForm(request), idempotent: false },
      readOpenAIError,
    );
    if (!uploaded.ok) return uploaded;
    const file = decode(FileObject, uploaded.value, 'file upload');
    if (!file.ok) return file;
    const created = await vendorRequest(
      call,
      {
        method: 'POST',
        url: '/batches',
        headers: auth(call),
        json: openaiBatchCreateBody(request, file.value.id),
        idempotent: false,
      },
      readOpenAIError,
    );
    if (!created.ok) {
      if (createRefused(created.error)) await deleteFile(file.value.id, call);
      return created;
    }
    const batch = decode(Batch, created.value, 'batch create');
    return batch.ok ? ok({ id: batch.value.id }) : batch;
  },

  /**
   * `validating`, `in_progress`, `finalizing`, `cancelling` → inProgress. `failed` → a failed outcome
   * `batch failed: <errors.data[].message joined by "; ">`. `completed`, `expired`, `cancelled` → both result files
   * are read and the line for the batch's `metadata.agent_run` (else the only line) is rendered; an expired or
   * cancelled batch without a line → EXPIRED_MESSAGE / CANCELLED_MESSAGE. An unknown status is a protocol error.
   */
  async check(id: string, render: RenderContext, call: VendorCall): Promise<Result<BatchState, BatchError>> {
    const got = await getBatch(id, call);
    if (!got.ok) return got;
    const batch = got.value;
    if (TRANSITIONAL.has(batch.status)) return ok({ kind: 'inProgress', id });
    if (!TERMINAL.has(batch.status)) {
      return err({
        kind: 'protocol',
        message: `batch ${id}: unknown status ${JSON.stringify(batch.status)}`,
      });
    }
    const outcome = await outcomeOf(batch, render, call);
    return outcome.ok ? ok({ kind: 'ended', id, outcome: outcome.value }) : outcome;
  },

  cancel: cancelBatch,

  /**
   * Unknown batch (404) → done. Not yet terminal → cancel (unless already cancelling) and `pending`: the output and
   * error files exist only once the batch has ended. Terminal → deletes the input, output and error files (a file
   * already gone counts as deleted) → done; the batch object itself cannot be deleted at OpenAI.
   */
  async cleanup(id: string, call: VendorCall): Promise<Result<CleanupOutcome, BatchError>> {
    const got = await getBatch(id, call);
    if (!got.ok) return isNotFound(got.error) ? ok({ kind: 'done' }) : got;
    const batch = got.value;
    if (!TERMINAL.has(batch.status)) {
      if (batch.status !== 'cancelling') {
        const cancelled = await cancelBatch(id, call);
        if (!cancelled.ok) return cancelled;
      }
      return ok({ kind: 'pending', detail: `cancel requested; batch ${id} was ${batch.status}` });
    }
    let first: BatchError | undefined;
    for (const fileId of [batch.input_file_id, batch.output_file_id, batch.error_file_id]) {
      if (fileId === null || fileId === undefined || fileId === '') continue;
      const deleted = await deleteFile(fileId, call);
      if (!deleted.ok) first ??= deleted.error;
    }
    return first === undefined ? ok({ kind: 'done' }) : err(first);
  },

  /**
   * Walks `GET /batches` (newest first, cursor `after`) while batches were created at or after `since` minus
   * OPENAI_FIND_SKEW_MS, matching `metadata.agent_run === customId`: the oldest match is `id` (the original submission), newer ones
   * `duplicates`; none → absent. Never undecided.
   */
  async find(customId: string, since: Date, call: VendorCall): Promise<Result<FindOutcome, BatchError>> {
    const threshold = (since.getTime() - OPENAI_FIND_SKEW_MS) / 1000;
    const matches: { id: string; createdAt: number; seen: number }[] = [];
    let after: string | undefined;
    for (let page = 0; page < OPENAI_FIND_MAX_PAGES; page++) {
      const list = await listBatches(after, call);
      if (!list.ok) return list;
      let older = false;
      for (const batch of list.value.data) {
        if (batch.created_at < threshold) {
          older = true;
          continue;
        }
        if (batch.metadata?.[METADATA_RUN_KEY] === customId) {
          matches.push({ id: batch.id, createdAt: batch.created_at, seen: matches.length });
        }
      }
      const last = list.value.data.at(-1);
      if (older || list.value.has_more !== true || last === undefined) {
        // Oldest first; the list is newest first, so of two created in the same second the later-listed is older.
        const ordered = matches.sort((a, b) => a.createdAt - b.createdAt || b.seen - a.seen).map((m) => m.id);
        const [oldest, ...duplicates] = ordered;
        return ok(oldest === undefined ? { kind: 'absent' } : { kind: 'found', id: oldest, duplicates });
      }
      const next = list.value.last_id ?? last.id;
      if (next === after)
        return err({ kind: 'protocol', message: 'list batches: the cursor did not advance' });
      after = next;
    }
    return err({ kind: 'protocol', message: `list batches: more than ${OPENAI_FIND_MAX_PAGES} pages` });
  },

  async listPage(cursor, call): Promise<Result<BatchListPage, BatchError>> {
    const list = await listBatches(cursor, call);
    if (!list.ok) return list;
    // A batch listed without a status is reported as not ended: its own poll decides.
    const batches = list.value.data.map((b) => ({ id: b.id, ended: TERMINAL.has(b.status ?? '') }));
    const last = list.value.last_id ?? list.value.data.at(-1)?.id;
    const next = list.value.has_more === true && last !== undefined && last !== cursor ? last : undefined;
    return ok({ batches, next });
  },
};
