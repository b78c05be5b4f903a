// A fake OpenAI Batch API + Files API on loopback HTTP, built from docs/reference/vendor-apis.md#openai-batch-api.
// Only what a `/v1/responses` batch of one request needs: files upload/content/delete, batches create/get/list/cancel.
//
// Choices where the spec is silent (documented so tests can rely on them):
// - Input lines are validated synchronously at `POST /v1/batches` (400), not as a later `failed` batch as the real
//   API does: exactly one line, `method` POST, `url` equal to the endpoint, a `body` with `model` and `input`, no
//   `temperature` / `top_p` / `top_k`, `max_output_tokens` ≥ 16, a well-formed `text.format` json_schema.
// - Only `/v1/responses` is accepted as the endpoint and only `batch` as the upload purpose.
// - Cancelling a terminal batch answers 409 `invalid_request_error` ("Cannot cancel a batch with status …");
//   cancelling a `cancelling` batch answers it unchanged.
// - A batch moves `validating` → `in_progress` on the first GET (one or list) after its create.
// - A `cancelling` batch stays so until `finish()` (or, with `autoFinishMs`, that long after the cancel, as `cancelled`).
// - `FakeBatch.deleted` is true once the batch is terminal and all its files are deleted (OpenAI has no batch delete).
// - A fault with a status below 400 only delays (`delayMs`) and then answers normally (with `afterEffect`, the
//   request is processed before the delay).
// - Faults match only requests that carry the right key (a 401 never consumes one); an `afterEffect` fault processes
//   the request first, then waits `delayMs`, then answers the fault.

import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  FakeBatch,
  FakeFault,
  FakeOutcome,
  FakeVendorOptions,
  FakeVendorServer,
  RecordedRequest,
} from './types.ts';

const ENDPOINT = '/v1/responses';
const KNOWN_ENDPOINTS = new Set([
  '/v1/responses',
  '/v1/chat/completions',
  '/v1/embeddings',
  '/v1/completions',
  '/v1/moderations',
  '/v1/images/generations',
  '/v1/images/edits',
  '/v1/videos',
]);
const MIN_EXPIRY_SECONDS = 3600;
const MAX_EXPIRY_SECONDS = 2_592_000;
const WINDOW_SECONDS = 86_400;
const FORBIDDEN_SAMPLING = ['temperature', 'top_p', 'top_k'];
const SCHEMA_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

type Status =
  | 'validating'
  | 'in_progress'
  | 'finalizing'
  | 'cancelling'
  | 'completed'
  | 'failed'
  | 'expired'
  | 'cancelled';
const TERMINAL: ReadonlySet<Status> = new Set(['completed', 'failed', 'expired', 'cancelled']);

interface StoredFile {
  readonly id: string;
  readonly purpose: string;
  readonly filename: string;
  readonly content: string;
  readonly bytes: number;
  readonly createdAt: number;
  readonly expiresAt: number | null;
  deleted: boolean;
}

type Timestamp =
  | 'in_progress_at'
  | 'finalizing_at'
  | 'completed_at'
  | 'failed_at'
  | 'expired_at'
  | 'cancelling_at'
  | 'cancelled_at';

interface StoredBatch {
  readonly id: string;
  readonly seq: number;
  readonly customId: string;
  readonly model: string;
  readonly prompt: string;
  readonly params: Record<string, unknown>;
  readonly structured: boolean;
  readonly inputFileId: string;
  readonly metadata: Record<string, string> | null;
  readonly outputExpirySeconds: number | null;
  readonly createdAtMs: number;
  status: Status;
  times: Record<Timestamp, number | null>;
  outputFileId: string | null;
  errorFileId: string | null;
  errors: { object: 'list'; data: { code: string; message: string; param: null; line: null }[] } | null;
  counts: { total: number; completed: number; failed: number };
  usage: { input: number; output: number; reasoning: number };
  timer: ReturnType<typeof setTimeout> | undefined;
}

interface Answer {
  readonly status: number;
  readonly body: unknown;
  /** Sent as is (file content) instead of JSON. */
  readonly raw?: string;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type = 'invalid_request_error',
  ) {
    super(message);
  }
}

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
const nowSec = (): number => Math.floor(Date.now() / 1000);
const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === 'object' && u !== null && !Array.isArray(u);

function errorBody(message: string, type: string, param: string | null, code: string | null): unknown {
  return { error: { message, type, param, code } };
}

function faultBody(status: number): unknown {
  if (status === 429) {
    return errorBody(
      'Rate limit reached for requests. Please try again in 1s.',
      'requests',
      null,
      'rate_limit_exceeded',
    );
  }
  if (status >= 500) {
    return errorBody(
      'The server had an error while processing your request. Sorry about that!',
      'server_error',
      null,
      null,
    );
  }
  return errorBody(`Injected failure (HTTP ${status}).`, 'invalid_request_error', null, null);
}

/** The user text of a Responses `input` (a string, or the first user message's text). */
function promptOf(input: unknown): string | undefined {
  if (typeof input === 'string') return input;
  if (!Array.isArray(input)) return undefined;
  for (const item of input) {
    if (!isRecord(item) || item.role !== 'user') continue;
    const content = item.content;
    if (typeof content === 'string') return content;
    if (Array.isArray(content)) {
      return content
        .filter((p): p is Record<string, unknown> => isRecord(p) && p.type === 'input_text')
        .map((p) => String(p.text ?? ''))
        .join('');
    }
  }
  return undefined;
}

function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/**
 * Starts a fake OpenAI on 127.0.0.1 (`baseUrl` ends in `/v1`, as `OPENAI_BASE_URL` expects). Faithful to
 * docs/reference/vendor-apis.md#openai-batch-api for the calls the adapter makes; see the header of this file for the
 * choices it makes where the spec is
 * silent. Requires `Authorization: Bearer <apiKey>`; never echoes or records a key.
 */
export async function startFakeOpenAI(options: FakeVendorOptions = {}): Promise<FakeVendorServer> {
  const apiKey = options.apiKey ?? 'test-key-openai';
  const files = new Map<string, StoredFile>();
  const batches = new Map<string, StoredBatch>();
  const requests: RecordedRequest[] = [];
  const faults: { fault: FakeFault; left: number }[] = [];
  const delays = new Set<ReturnType<typeof setTimeout>>();
  let seq = 0;

  function addFile(
    purpose: string,
    filename: string,
    content: string,
    expirySeconds: number | null,
  ): StoredFile {
    const createdAt = nowSec();
    const file: StoredFile = {
      id: `file-${hex(12)}`,
      purpose,
      filename,
      content,
      bytes: Buffer.byteLength(content),
      createdAt,
      expiresAt: expirySeconds === null ? null : createdAt + expirySeconds,
      deleted: false,
    };
    files.set(file.id, file);
    return file;
  }

  function fileJson(file: StoredFile): unknown {
    return {
      id: file.id,
      object: 'file',
      bytes: file.bytes,
      created_at: file.createdAt,
      filename: file.filename,
      purpose: file.purpose,
      status: 'processed',
      status_details: null,
      expires_at: file.expiresAt,
    };
  }

  function batchJson(b: StoredBatch): unknown {
    const createdAt = Math.floor(b.createdAtMs / 1000);
    return {
      id: b.id,
      object: 'batch',
      endpoint: ENDPOINT,
      model: b.model,
      errors: b.errors,
      input_file_id: b.inputFileId,
      completion_window: '24h',
      status: b.status,
      output_file_id: b.outputFileId,
      error_file_id: b.errorFileId,
      created_at: createdAt,
      expires_at: createdAt + WINDOW_SECONDS,
      ...b.times,
      request_counts: b.counts,
      usage: {
        input_tokens: b.usage.input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: b.usage.output,
        output_tokens_details: { reasoning_tokens: b.usage.reasoning },
        total_tokens: b.usage.input + b.usage.output,
      },
      metadata: b.metadata,
    };
  }

  /** A GET shows a freshly created batch as `in_progress`. */
  function observe(b: StoredBatch): void {
    if (b.status === 'validating') {
      b.status = 'in_progress';
      b.times.in_progress_at = nowSec();
    }
  }

  function snapshot(b: StoredBatch): FakeBatch {
    const roles: { id: string; role: 'input' | 'output' | 'error' }[] = [
      { id: b.inputFileId, role: 'input' },
    ];
    if (b.outputFileId !== null) roles.push({ id: b.outputFileId, role: 'output' });
    if (b.errorFileId !== null) roles.push({ id: b.errorFileId, role: 'error' });
    const listed = roles.map((f) => ({ ...f, exists: files.get(f.id)?.deleted === false }));
    const ended = TERMINAL.has(b.status);
    return {
      id: b.id,
      customId: b.customId,
      model: b.model,
      prompt: b.prompt,
      params: b.params,
      state: ended ? 'ended' : b.status === 'cancelling' ? 'cancelling' : 'pending',
      vendorState: b.status,
      deleted: ended && listed.every((f) => !f.exists),
      createdAt: new Date(b.createdAtMs),
      files: listed,
    };
  }

  function schedule(b: StoredBatch, outcome: () => FakeOutcome | 'hold'): void {
    if (options.autoFinishMs === undefined) return;
    if (b.timer !== undefined) clearTimeout(b.timer);
    b.timer = setTimeout(() => {
      b.timer = undefined;
      if (TERMINAL.has(b.status)) return;
      const chosen = outcome();
      if (chosen !== 'hold') finish(b.id, chosen);
    }, options.autoFinishMs);
  }

  function echo(b: FakeBatch, structured: boolean): FakeOutcome {
    return {
      kind: 'succeeded',
      text: structured ? JSON.stringify({ echo: b.prompt }) : `echo: ${b.prompt}`,
    };
  }

  function responseBody(b: StoredBatch, content: Record<string, unknown>, text: string): unknown {
    const input = tokens(b.prompt);
    const reasoning = 16;
    const output = tokens(text) + reasoning;
    b.usage = {
      input: b.usage.input + input,
      output: b.usage.output + output,
      reasoning: b.usage.reasoning + reasoning,
    };
    return {
      id: `resp_${hex(16)}`,
      object: 'response',
      created_at: Math.floor(b.createdAtMs / 1000),
      status: 'completed',
      background: false,
      error: null,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: b.params.max_output_tokens ?? null,
      model: b.model,
      output: [
        {
          id: `rs_${hex(16)}`,
          type: 'reasoning',
          summary: [{ type: 'summary_text', text: '**Answering the request**\n\nReplying directly.' }],
        },
        { id: `msg_${hex(16)}`, type: 'message', status: 'completed', role: 'assistant', content: [content] },
      ],
      parallel_tool_calls: true,
      text: b.params.text ?? { format: { type: 'text' } },
      usage: {
        input_tokens: input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: output,
        output_tokens_details: { reasoning_tokens: reasoning },
        total_tokens: input + output,
      },
      metadata: {},
    };
  }

  function resultLine(b: StoredBatch, response: unknown, error: unknown): string {
    return JSON.stringify({ id: `batch_req_${hex(12)}`, custom_id: b.customId, response, error });
  }

  function finish(id: string, outcome: FakeOutcome): void {
    const b = batches.get(id);
    if (b === undefined) throw new Error(`fake openai: no batch ${id}`);
    if (TERMINAL.has(b.status)) throw new Error(`fake openai: batch ${id} already ended (${b.status})`);
    if (b.timer !== undefined) clearTimeout(b.timer);
    b.timer = undefined;
    const now = nowSec();
    const wasCancelling = b.status === 'cancelling';
    if (b.status === 'validating' && outcome.kind !== 'batchFailed') b.times.in_progress_at = now;
    const output: string[] = [];
    const errors: string[] = [];
    const ok = (body: unknown) => ({ status_code: 200, request_id: `req_${hex(16)}`, body });
    switch (outcome.kind) {
      case 'succeeded': {
        const part = { type: 'output_text', text: outcome.text, annotations: [], logprobs: [] };
        output.push(resultLine(b, ok(responseBody(b, part, outcome.text)), null));
        break;
      }
      case 'refused': {
        const refusal = "I'm sorry, but I can't help with that.";
        output.push(resultLine(b, ok(responseBody(b, { type: 'refusal', refusal }, refusal)), null));
        break;
      }
      case 'errored': {
        const body = errorBody(outcome.message, 'invalid_request_error', null, null);
        errors.push(resultLine(b, { status_code: 400, request_id: `req_${hex(16)}`, body }, null));
        break;
      }
      case 'expired':
        errors.push(
          resultLine(b, null, {
            code: 'batch_expired',
            message: 'This request could not be executed before the completion window expired.',
          }),
        );
        break;
      case 'cancelled':
        errors.push(
          resultLine(b, null, {
            code: 'batch_cancelled',
            message: 'This request was not executed because the batch was cancelled.',
          }),
        );
        break;
      case 'batchFailed':
        b.errors = {
          object: 'list',
          data: [{ code: 'invalid_request', message: outcome.message, param: null, line: null }],
        };
        break;
    }
    const expiry = b.outputExpirySeconds;
    if (output.length > 0) {
      b.outputFileId = addFile('batch_output', `${b.id}_output.jsonl`, `${output.join('\n')}\n`, expiry).id;
    }
    if (errors.length > 0) {
      b.errorFileId = addFile('batch_output', `${b.id}_error.jsonl`, `${errors.join('\n')}\n`, expiry).id;
    }
    if (outcome.kind === 'batchFailed') {
      b.status = 'failed';
      b.times.failed_at = now;
      b.counts = { total: 0, completed: 0, failed: 0 };
      return;
    }
    b.counts = { total: 1, completed: output.length, failed: errors.length };
    if (outcome.kind === 'expired') {
      b.status = 'expired';
      b.times.expired_at = now;
    } else if (outcome.kind === 'cancelled' || wasCancelling) {
      b.status = 'cancelled';
      b.times.cancelling_at ??= now;
      b.times.cancelled_at = now;
    } else {
      b.status = 'completed';
      b.times.finalizing_at = now;
      b.times.completed_at = now;
    }
  }

  function expirySeconds(anchor: unknown, seconds: unknown, param: string): number | null {
    if (anchor === undefined && seconds === undefined) return null;
    if (anchor !== 'created_at') {
      throw new HttpError(
        400,
        `Invalid value for '${param}.anchor': expected 'created_at'.`,
        `${param}.anchor`,
      );
    }
    const n = typeof seconds === 'string' && /^\d+$/.test(seconds) ? Number(seconds) : seconds;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < MIN_EXPIRY_SECONDS || n > MAX_EXPIRY_SECONDS) {
      throw new HttpError(
        400,
        `Invalid '${param}.seconds': expected an integer between ${MIN_EXPIRY_SECONDS} and ${MAX_EXPIRY_SECONDS}.`,
        `${param}.seconds`,
      );
    }
    return n;
  }

  async function uploadFile(raw: Buffer, contentType: string): Promise<Answer> {
    if (!contentType.toLowerCase().startsWith('multipart/form-data')) {
      throw new HttpError(400, `Invalid Content-Type header (${contentType}), expected multipart/form-data.`);
    }
    let form: FormData;
    try {
      form = await new Request('http://fake.invalid/v1/files', {
        method: 'POST',
        headers: { 'content-type': contentType },
        body: new Uint8Array(raw),
      }).formData();
    } catch {
      throw new HttpError(400, 'Could not parse multipart form data.');
    }
    const purpose = form.get('purpose');
    if (purpose === null) throw new HttpError(400, "Missing required parameter: 'purpose'.", 'purpose');
    if (purpose !== 'batch') {
      throw new HttpError(400, `Invalid value for 'purpose': this fake accepts only 'batch'.`, 'purpose');
    }
    const file = form.get('file');
    if (file === null || typeof file === 'string') {
      throw new HttpError(400, "Missing required parameter: 'file'.", 'file');
    }
    if (!file.name.endsWith('.jsonl')) {
      throw new HttpError(400, 'Invalid file format for Batch API. Must be .jsonl', 'file');
    }
    const expiry = expirySeconds(
      form.get('expires_after[anchor]') ?? undefined,
      form.get('expires_after[seconds]') ?? undefined,
      'expires_after',
    );
    const stored = addFile('batch', file.name, await file.text(), expiry);
    return { status: 200, body: fileJson(stored) };
  }

  function parseLine(source: string, n: number): Record<string, unknown> {
    let line: unknown;
    try {
      line = JSON.parse(source);
    } catch {
      throw new HttpError(400, `Line ${n} of the input file is not valid JSON.`, 'input_file_id');
    }
    const bad = (why: string) => new HttpError(400, `Line ${n}: ${why}`, 'input_file_id');
    if (!isRecord(line)) throw bad('expected a JSON object.');
    if (typeof line.custom_id !== 'string' || line.custom_id === '') throw bad("missing 'custom_id'.");
    if (line.method !== 'POST') throw bad("'method' must be 'POST'.");
    if (line.url !== ENDPOINT) throw bad(`'url' must equal the batch endpoint '${ENDPOINT}'.`);
    const body = line.body;
    if (!isRecord(body)) throw bad("missing 'body'.");
    if (typeof body.model !== 'string' || body.model === '') throw bad("missing 'body.model'.");
    if (promptOf(body.input) === undefined) throw bad("'body.input' must hold a user message.");
    for (const key of FORBIDDEN_SAMPLING) {
      if (key in body) throw bad(`Unsupported parameter: '${key}' is not supported with this model.`);
    }
    const max = body.max_output_tokens;
    if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max < 16)) {
      throw bad("Invalid 'max_output_tokens': expected an integer >= 16.");
    }
    const text = body.text;
    if (text !== undefined) {
      const format = isRecord(text) ? text.format : undefined;
      if (!isRecord(format)) throw bad("Invalid 'text.format'.");
      if (format.type === 'json_schema') {
        if (typeof format.name !== 'string' || !SCHEMA_NAME.test(format.name)) {
          throw bad("Invalid 'text.format.name': expected ^[a-zA-Z0-9_-]{1,64}$.");
        }
        if (!isRecord(format.schema)) throw bad("Invalid 'text.format.schema': expected an object.");
      } else if (format.type !== 'text' && format.type !== 'json_object') {
        throw bad("Invalid 'text.format.type'.");
      }
    }
    return line;
  }

  function createBatch(raw: Buffer): Answer {
    let req: unknown;
    try {
      req = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new HttpError(400, 'We could not parse the JSON body of your request.');
    }
    if (!isRecord(req)) throw new HttpError(400, 'We could not parse the JSON body of your request.');
    const fileId = req.input_file_id;
    if (typeof fileId !== 'string') {
      throw new HttpError(400, "Missing required parameter: 'input_file_id'.", 'input_file_id');
    }
    const file = files.get(fileId);
    if (file === undefined || file.deleted) {
      throw new HttpError(400, `No such File object: ${fileId}`, 'input_file_id');
    }
    if (file.purpose !== 'batch') {
      throw new HttpError(
        400,
        `File ${fileId} has purpose '${file.purpose}', expected 'batch'.`,
        'input_file_id',
      );
    }
    const endpoint = req.endpoint;
    if (endpoint !== ENDPOINT) {
      const why = KNOWN_ENDPOINTS.has(String(endpoint)) ? 'this fake supports only' : 'expected';
      throw new HttpError(400, `Invalid value for 'endpoint': ${why} '${ENDPOINT}'.`, 'endpoint');
    }
    if (req.completion_window !== '24h') {
      throw new HttpError(400, "Invalid value for 'completion_window': expected '24h'.", 'completion_window');
    }
    const metadata = req.metadata ?? null;
    if (metadata !== null) {
      if (!isRecord(metadata))
        throw new HttpError(400, "Invalid 'metadata': expected an object.", 'metadata');
      const entries = Object.entries(metadata);
      if (entries.length > 16) throw new HttpError(400, "Invalid 'metadata': at most 16 pairs.", 'metadata');
      for (const [key, value] of entries) {
        if (key.length > 64)
          throw new HttpError(400, "Invalid 'metadata': keys ≤ 64 characters.", 'metadata');
        if (typeof value !== 'string' || value.length > 512) {
          throw new HttpError(400, "Invalid 'metadata': values are strings ≤ 512 characters.", 'metadata');
        }
      }
    }
    const after = req.output_expires_after;
    if (after !== undefined && !isRecord(after)) {
      throw new HttpError(400, "Invalid 'output_expires_after'.", 'output_expires_after');
    }
    const outputExpiry =
      after === undefined ? null : expirySeconds(after.anchor, after.seconds, 'output_expires_after');
    const texts = file.content.split('\n').filter((l) => l.trim() !== '');
    if (texts.length !== 1) {
      throw new HttpError(
        400,
        `This fake accepts exactly one request per batch (got ${texts.length}).`,
        'input_file_id',
      );
    }
    const line = parseLine(texts[0]!, 1);
    const body = line.body as Record<string, unknown>;
    const b: StoredBatch = {
      id: `batch_${hex(16)}`,
      seq: seq++,
      customId: line.custom_id as string,
      model: body.model as string,
      prompt: promptOf(body.input) ?? '',
      params: body,
      structured:
        isRecord(body.text) && isRecord(body.text.format) && body.text.format.type === 'json_schema',
      inputFileId: fileId,
      metadata: metadata as Record<string, string> | null,
      outputExpirySeconds: outputExpiry,
      createdAtMs: Date.now(),
      status: 'validating',
      times: {
        in_progress_at: null,
        finalizing_at: null,
        completed_at: null,
        failed_at: null,
        expired_at: null,
        cancelling_at: null,
        cancelled_at: null,
      },
      outputFileId: null,
      errorFileId: null,
      errors: null,
      counts: { total: 1, completed: 0, failed: 0 },
      usage: { input: 0, output: 0, reasoning: 0 },
      timer: undefined,
    };
    batches.set(b.id, b);
    schedule(b, () => {
      const view = snapshot(b);
      return options.autoOutcome?.(view) ?? echo(view, b.structured);
    });
    return { status: 200, body: batchJson(b) };
  }

  function listBatches(query: URLSearchParams): Answer {
    const limitText = query.get('limit');
    const limit = limitText === null ? 20 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw new HttpError(400, "Invalid 'limit': expected an integer between 1 and 100.", 'limit');
    }
    const ordered = [...batches.values()].sort((a, b) => b.seq - a.seq);
    const after = query.get('after');
    const start = after === null ? 0 : ordered.findIndex((b) => b.id === after) + 1;
    const page = start === 0 && after !== null ? [] : ordered.slice(start, start + limit);
    page.forEach(observe);
    return {
      status: 200,
      body: {
        object: 'list',
        data: page.map(batchJson),
        first_id: page[0]?.id ?? null,
        last_id: page.at(-1)?.id ?? null,
        has_more: start + page.length < ordered.length && page.length > 0,
      },
    };
  }

  function batchOr404(id: string): StoredBatch {
    const b = batches.get(id);
    if (b === undefined) throw new HttpError(404, `No batch found with id '${id}'.`, 'batch_id');
    return b;
  }

  function fileOr404(id: string): StoredFile {
    const f = files.get(id);
    if (f === undefined || f.deleted) throw new HttpError(404, `No such File object: ${id}`, 'id');
    return f;
  }

  function cancelBatch(id: string): Answer {
    const b = batchOr404(id);
    if (TERMINAL.has(b.status)) {
      throw new HttpError(409, `Cannot cancel a batch with status '${b.status}'.`);
    }
    if (b.status !== 'cancelling') {
      b.status = 'cancelling';
      b.times.cancelling_at = nowSec();
      schedule(b, () => ({ kind: 'cancelled' }));
    }
    return { status: 200, body: batchJson(b) };
  }

  async function route(method: string, url: URL, raw: Buffer, contentType: string): Promise<Answer> {
    const path = url.pathname;
    const parts = path.split('/').filter((p) => p !== '');
    if (parts[0] === 'v1') {
      const [, collection, id, action] = parts;
      if (collection === 'files') {
        if (method === 'POST' && parts.length === 2) return uploadFile(raw, contentType);
        if (method === 'GET' && id !== undefined && parts.length === 3) {
          return { status: 200, body: fileJson(fileOr404(id)) };
        }
        if (method === 'GET' && id !== undefined && action === 'content' && parts.length === 4) {
          return { status: 200, body: undefined, raw: fileOr404(id).content };
        }
        if (method === 'DELETE' && id !== undefined && parts.length === 3) {
          fileOr404(id).deleted = true;
          return { status: 200, body: { id, object: 'file', deleted: true } };
        }
      }
      if (collection === 'batches') {
        if (method === 'POST' && parts.length === 2) return createBatch(raw);
        if (method === 'GET' && parts.length === 2) return listBatches(url.searchParams);
        if (method === 'GET' && id !== undefined && parts.length === 3) {
          const b = batchOr404(id);
          observe(b);
          return { status: 200, body: batchJson(b) };
        }
        if (method === 'POST' && id !== undefined && action === 'cancel' && parts.length === 4) {
          return cancelBatch(id);
        }
      }
    }
    throw new HttpError(404, `Invalid URL (${method} ${path})`);
  }

  async function answer(method: string, url: URL, raw: Buffer, contentType: string): Promise<Answer> {
    try {
      return await route(method, url, raw, contentType);
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      return { status: e.status, body: errorBody(e.message, e.type, e.param, e.code) };
    }
  }

  function takeFault(method: string, pathAndQuery: string): FakeFault | undefined {
    const i = faults.findIndex(
      ({ fault }) =>
        (fault.method === undefined || fault.method.toUpperCase() === method) &&
        (fault.path === undefined || fault.path.test(pathAndQuery)),
    );
    if (i < 0) return undefined;
    const entry = faults[i]!;
    entry.left -= 1;
    if (entry.left <= 0) faults.splice(i, 1);
    return entry.fault;
  }

  function wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        delays.delete(t);
        resolve();
      }, ms);
      delays.add(t);
    });
  }

  function send(res: ServerResponse, a: Answer): void {
    if (res.destroyed || res.writableEnded) return;
    const headers = {
      'content-type': a.raw !== undefined ? 'application/octet-stream' : 'application/json',
      'x-request-id': `req_${hex(16)}`,
    };
    res.writeHead(a.status, headers);
    res.end(a.raw ?? JSON.stringify(a.body));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const method = (req.method ?? 'GET').toUpperCase();
    const pathAndQuery = req.url ?? '/';
    const url = new URL(pathAndQuery, 'http://127.0.0.1');
    const authorization = req.headers.authorization;
    const authorized = authorization === `Bearer ${apiKey}`;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (name === 'authorization' || value === undefined) continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    requests.push({
      method,
      path: pathAndQuery,
      authorized,
      headers,
      body: raw.toString('utf8'),
      at: Date.now(),
    });
    if (!authorized) {
      const provided = authorization?.startsWith('Bearer ') ? authorization.slice(7) : '';
      const message =
        provided === ''
          ? "You didn't provide an API key. You need to provide your API key in an Authorization header using " +
            'Bearer auth (i.e. Authorization: Bearer YOUR_KEY).'
          : `Incorrect API key provided: ${provided.length >= 8 ? provided.slice(0, 3) : ''}…[hidden]. ` +
            'You can find your API key at https://platform.openai.com/account/api-keys.';
      const code = provided === '' ? null : 'invalid_api_key';
      send(res, { status: 401, body: errorBody(message, 'invalid_request_error', null, code) });
      return;
    }
    const contentType = req.headers['content-type'] ?? '';
    const fault = takeFault(method, pathAndQuery);
    if (fault === undefined) {
      send(res, await answer(method, url, raw, contentType));
      return;
    }
    if (fault.status < 400) {
      // A slow answer: with `afterEffect` the request is processed at once and only its answer is late (a create
      // whose 200 a client that gives up, or dies, never sees); without, the whole request waits.
      const answered = fault.afterEffect === true ? await answer(method, url, raw, contentType) : undefined;
      if (fault.delayMs !== undefined) await wait(fault.delayMs);
      send(res, answered ?? (await answer(method, url, raw, contentType)));
      return;
    }
    if (fault.afterEffect === true) await answer(method, url, raw, contentType);
    if (fault.delayMs !== undefined) await wait(fault.delayMs);
    res.setHeader('x-request-id', `req_${hex(16)}`);
    if (fault.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(fault.retryAfterSeconds));
    send(res, { status: fault.status, body: faultBody(fault.status) });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      send(res, {
        status: 500,
        body: errorBody(
          `fake openai: ${e instanceof Error ? e.message : String(e)}`,
          'server_error',
          null,
          null,
        ),
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  function clearTimers(): void {
    for (const b of batches.values()) if (b.timer !== undefined) clearTimeout(b.timer);
    for (const t of delays) clearTimeout(t);
    delays.clear();
  }

  return {
    provider: 'openai',
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey,
    get requests(): readonly RecordedRequest[] {
      return requests;
    },
    batches: () => [...batches.values()].sort((a, b) => a.seq - b.seq).map(snapshot),
    finish,
    inject(fault: FakeFault): void {
      faults.push({ fault, left: fault.times ?? 1 });
    },
    reset(): void {
      clearTimers();
      batches.clear();
      files.clear();
      requests.length = 0;
      faults.length = 0;
    },
    async close(): Promise<void> {
      clearTimers();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
