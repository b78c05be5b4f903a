// Gemini Developer API batches, inline mode (docs/reference/vendor-apis.md#gemini-batch-api): one
// `batchGenerateContent` per run, polled as a
// long-running Operation, results read inline from the batch, the batch deleted afterwards. Plain `fetch` through
// `vendorRequest`; every answer validated with valibot (lenient objects, only the fields read here).

import * as v from 'valibot';
import { err, ok, type Result } from '../../shared/result.ts';
import { type ErrorReader, safeJson, vendorRequest } from './http.ts';
import {
  type BatchError,
  type BatchListPage,
  type BatchRequest,
  type BatchState,
  type BatchVendor,
  type CleanupOutcome,
  type FindOutcome,
  LIST_PAGE_SIZE,
  type RenderContext,
  type SubmittedBatch,
  type VendorCall,
} from './port.ts';
import {
  GeminiInlinedResponse,
  GeminiStatus,
  renderGeminiFailure,
  renderGeminiResponse,
} from './render-gemini.ts';

/** The API version path every call goes through. */
export const GEMINI_API_VERSION = '/v1beta';
/** `find` also looks at batches created this long before `since` (clock skew between us and Google). */
export const GEMINI_FIND_SKEW_MS = 60_000;
/** Longest list walk; beyond it `find` answers a protocol error instead of looping. */
const MAX_LIST_PAGES = 1_000;

/** Error reasons (google.rpc.ErrorInfo `reason`) that Google sends with a 400 when the key itself is bad. */
const KEY_REASONS: ReadonlySet<string> = new Set(['API_KEY_INVALID', 'API_KEY_EXPIRED']);

const ErrorBody = v.looseObject({
  error: v.looseObject({
    code: v.optional(v.unknown()),
    message: v.optional(v.unknown()),
    status: v.optional(v.unknown()),
    details: v.optional(v.unknown()),
  }),
});

/**
 * Reads Google's error body `{"error":{"code","message","status","details"}}`: `type` is `status`
 * (`RESOURCE_EXHAUSTED`, …), or the ErrorInfo `reason` when it names a bad key (`API_KEY_INVALID`), else `HTTP <n>`.
 */
export const readGeminiError: ErrorReader = (status, body) => {
  const parsed = v.safeParse(ErrorBody, body);
  if (!parsed.success) return { type: `HTTP ${status}`, message: '' };
  const e = parsed.output.error;
  const reason = keyReason(e.details);
  const type = reason ?? (typeof e.status === 'string' && e.status !== '' ? e.status : `HTTP ${status}`);
  return { type, message: typeof e.message === 'string' ? e.message : '' };
};

function keyReason(details: unknown): string | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const detail of details) {
    if (typeof detail !== 'object' || detail === null) continue;
    const reason = (detail as { reason?: unknown }).reason;
    if (typeof reason === 'string' && KEY_REASONS.has(reason)) return reason;
  }
  return undefined;
}

const InlinedResponses = v.looseObject({
  inlinedResponses: v.optional(
    v.looseObject({ inlinedResponses: v.optional(v.array(GeminiInlinedResponse)) }),
  ),
});

/** A long-running Operation whose metadata is a GenerateContentBatch (create, get and list answers). */
const Operation = v.looseObject({
  name: v.pipe(v.string(), v.startsWith('batches/')),
  done: v.optional(v.boolean()),
  metadata: v.optional(
    v.looseObject({
      state: v.optional(v.string()),
      displayName: v.optional(v.string()),
      createTime: v.optional(v.string()),
      updateTime: v.optional(v.string()),
      endTime: v.optional(v.string()),
      output: v.optional(InlinedResponses),
    }),
  ),
  response: v.optional(InlinedResponses),
  error: v.optional(GeminiStatus),
});
type Operation = v.InferOutput<typeof Operation>;

/** A bare GenerateContentBatch, as a `batches: [...]` list would hold it (accepted for leniency). */
const BareBatch = v.looseObject({
  name: v.pipe(v.string(), v.startsWith('batches/')),
  displayName: v.optional(v.string()),
  createTime: v.optional(v.string()),
  state: v.optional(v.string()),
});

const ListPage = v.looseObject({
  operations: v.optional(v.array(Operation)),
  batches: v.optional(v.array(BareBatch)),
  nextPageToken: v.optional(v.string()),
});

type Phase = 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'EXPIRED';
const TERMINAL: ReadonlySet<Phase> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED']);

/**
 * The phase a state string names, matched on its suffix so both the REST enum (`BATCH_STATE_RUNNING`) and the
 * SDK's (`JOB_STATE_RUNNING`) work; undefined for anything else (`…_UNSPECIFIED`, unknown values).
 */
export function geminiPhase(state: string | undefined): Phase | undefined {
  const match =
    state === undefined ? null : /(?:^|_)(PENDING|RUNNING|SUCCEEDED|FAILED|CANCELLED|EXPIRED)$/.exec(state);
  return match ? (match[1] as Phase) : undefined;
}

function headers(call: VendorCall): Record<string, string> {
  return { 'x-goog-api-key': call.apiKey };
}

/** `batches/<id>` as a URL path under the version, with the id segment escaped. */
function batchPath(id: string): string {
  const bare = id.startsWith('batches/') ? id.slice('batches/'.length) : id;
  return `${GEMINI_API_VERSION}/batches/${encodeURIComponent(bare)}`;
}

function parse<S extends v.GenericSchema>(
  schema: S,
  text: string,
  what: string,
): Result<v.InferOutput<S>, BatchError> {
  const json = safeJson(text);
  if (json === undefined) return err({ kind: 'protocol', message: `${what}: the answer is not JSON` });
  const parsed = v.safeParse(schema, json);
  if (parsed.success) return ok(parsed.output);
  const issue = parsed.issues[0];
  const path = v.getDotPath(issue);
  return err({ kind: 'protocol', message: `${what}: ${path ? `${path}: ` : ''}${issue.message}` });
}

function timeOf(...values: (string | undefined)[]): Date | undefined {
  for (const value of values) {
    if (value === undefined) continue;
    const at = Date.parse(value);
    if (!Number.isNaN(at)) return new Date(at);
  }
  return undefined;
}

/** The inlined results of a finished batch: `response…` (REST sample) or `metadata.output…` (SDK), either. */
function inlined(op: Operation) {
  return (
    op.response?.inlinedResponses?.inlinedResponses ?? op.metadata?.output?.inlinedResponses?.inlinedResponses
  );
}

/**
 * The outcome of a terminal batch (docs/reference/vendor-apis.md#gemini-poll,
 * docs/reference/vendor-apis.md#gemini-results).
 */
function outcomeOf(op: Operation, phase: Phase | undefined, ctx: RenderContext) {
  const at = timeOf(op.metadata?.endTime, op.metadata?.updateTime, op.metadata?.createTime);
  if (op.error !== undefined) {
    const why = op.error.message ?? op.error.status ?? `code ${op.error.code ?? 'unknown'}`;
    return renderGeminiFailure(ctx, { type: 'batch_failed', message: `batch failed: ${why}` }, at);
  }
  const item = inlined(op)?.[0];
  if (item !== undefined) return renderGeminiResponse(item, ctx, at);
  switch (phase) {
    case 'EXPIRED':
      return renderGeminiFailure(
        ctx,
        { type: 'batch_expired', message: 'batch expired before the request ran' },
        at,
      );
    case 'CANCELLED':
      return renderGeminiFailure(
        ctx,
        { type: 'batch_cancelled', message: 'batch was cancelled before the request ran' },
        at,
      );
    default: {
      const state = op.metadata?.state ?? 'without a state';
      return renderGeminiFailure(
        ctx,
        { type: 'batch_failed', message: `batch failed: it ended ${state} without a result` },
        at,
      );
    }
  }
}

/**
 * The Gemini batch adapter. `submit` creates one inline batch (`displayName` = request `metadata.key` = custom id)
 * and is never retried on 5xx or a lost answer; `check` reads the Operation and, once terminal, renders its one
 * inlined response; `cancel` and `cleanup` (HTTP DELETE) treat a batch already gone as done; `find` matches
 * `displayName` over the list and never answers `undecided`. A key Google calls invalid (400 with ErrorInfo reason
 * `API_KEY_INVALID` / `API_KEY_EXPIRED`) comes back as `rejected` with status 401, like the other vendors' wrong key.
 */
export const geminiBatches: BatchVendor = {
  provider: 'gemini',

  async submit(request: BatchRequest, call: VendorCall): Promise<Result<SubmittedBatch, BatchError>> {
    const model = request.model.startsWith('models/') ? request.model.slice('models/'.length) : request.model;
    const generationConfig: Record<string, unknown> = { maxOutputTokens: request.maxTokens };
    if (request.schema !== undefined) {
      generationConfig.responseMimeType = 'application/json';
      generationConfig.responseJsonSchema = request.schema;
    }
    const body = {
      batch: {
        displayName: request.customId,
        inputConfig: {
          requests: {
            requests: [
              {
                request: {
                  contents: [{ role: 'user', parts: [{ text: request.prompt }] }],
                  generationConfig,
                },
                metadata: { key: request.customId },
              },
            ],
          },
        },
      },
    };
    const answer = await send(call, {
      method: 'POST',
      url: `${GEMINI_API_VERSION}/models/${encodeURIComponent(model)}:batchGenerateContent`,
      json: body,
      idempotent: false,
    });
    if (!answer.ok) return answer;
    const op = parse(Operation, answer.value, 'batchGenerateContent');
    return op.ok ? ok({ id: op.value.name }) : op;
  },

  async check(id: string, render: RenderContext, call: VendorCall): Promise<Result<BatchState, BatchError>> {
    const answer = await send(call, { method: 'GET', url: batchPath(id), idempotent: true });
    if (!answer.ok) return answer;
    const op = parse(Operation, answer.value, `GET ${id}`);
    if (!op.ok) return op;
    const phase = geminiPhase(op.value.metadata?.state);
    const terminal = op.value.done === true || (phase !== undefined && TERMINAL.has(phase));
    if (!terminal) return ok({ kind: 'inProgress', id });
    return ok({ kind: 'ended', id, outcome: outcomeOf(op.value, phase, render) });
  },

  async cancel(id: string, call: VendorCall): Promise<Result<void, BatchError>> {
    const answer = await send(call, { method: 'POST', url: `${batchPath(id)}:cancel`, idempotent: true });
    if (answer.ok) return ok(undefined);
    const e = answer.error;
    if (e.kind !== 'rejected') return answer;
    if (e.status === 404) return ok(undefined);
    if (e.status === 401 || e.status === 403) return answer;
    // A refusal (e.g. FAILED_PRECONDITION) is fine when the batch has already ended.
    const poll = await send(call, { method: 'GET', url: batchPath(id), idempotent: true });
    if (!poll.ok) return poll.error.kind === 'rejected' && poll.error.status === 404 ? ok(undefined) : answer;
    const op = parse(Operation, poll.value, `GET ${id}`);
    if (!op.ok) return answer;
    const phase = geminiPhase(op.value.metadata?.state);
    return op.value.done === true || (phase !== undefined && TERMINAL.has(phase)) ? ok(undefined) : answer;
  },

  async cleanup(id: string, call: VendorCall): Promise<Result<CleanupOutcome, BatchError>> {
    const answer = await send(call, { method: 'DELETE', url: batchPath(id), idempotent: true });
    if (answer.ok) return ok({ kind: 'done' });
    if (answer.error.kind === 'rejected' && answer.error.status === 404) return ok({ kind: 'done' });
    return answer;
  },

  async find(customId: string, since: Date, call: VendorCall): Promise<Result<FindOutcome, BatchError>> {
    const cutoff = since.getTime() - GEMINI_FIND_SKEW_MS;
    const matches: { id: string; created: number }[] = [];
    const seenTokens = new Set<string>();
    let token: string | undefined;
    for (let page = 0; ; page++) {
      if (page >= MAX_LIST_PAGES) {
        return err({ kind: 'protocol', message: `GET /batches: more than ${MAX_LIST_PAGES} pages` });
      }
      const list = await listBatches(token, call);
      if (!list.ok) return list;
      const items = [
        ...(list.value.operations ?? []).map((op) => ({
          name: op.name,
          displayName: op.metadata?.displayName,
          createTime: op.metadata?.createTime,
        })),
        ...(list.value.batches ?? []),
      ];
      let recent = items.length === 0;
      for (const item of items) {
        const created = timeOf(item.createTime)?.getTime();
        // An item without a readable createTime could be recent: keep walking.
        if (created === undefined || created >= cutoff) recent = true;
        if (item.displayName === customId) matches.push({ id: item.name, created: created ?? 0 });
      }
      token = list.value.nextPageToken;
      if (!recent || token === undefined || token === '' || seenTokens.has(token)) break;
      seenTokens.add(token);
    }
    if (matches.length === 0) return ok({ kind: 'absent' });
    const ids = [...new Map(matches.sort((a, b) => a.created - b.created).map((m) => [m.id, m])).keys()];
    return ok({ kind: 'found', id: ids[0]!, duplicates: ids.slice(1) });
  },

  async listPage(cursor, call): Promise<Result<BatchListPage, BatchError>> {
    const list = await listBatches(cursor, call);
    if (!list.ok) return list;
    const ended = (state: string | undefined): boolean => {
      const phase = geminiPhase(state);
      return phase !== undefined && TERMINAL.has(phase);
    };
    const batches = [
      ...(list.value.operations ?? []).map((op) => ({
        id: op.name,
        ended: op.done === true || ended(op.metadata?.state),
      })),
      ...(list.value.batches ?? []).map((b) => ({ id: b.name, ended: ended(b.state) })),
    ];
    const token = list.value.nextPageToken;
    return ok({ batches, next: token === undefined || token === '' || token === cursor ? undefined : token });
  },
};

/** One page of `GET /batches` after the page token `token`, validated. */
async function listBatches(
  token: string | undefined,
  call: VendorCall,
): Promise<Result<v.InferOutput<typeof ListPage>, BatchError>> {
  const query = `pageSize=${LIST_PAGE_SIZE}${token ? `&pageToken=${encodeURIComponent(token)}` : ''}`;
  const answer = await send(call, {
    method: 'GET',
    url: `${GEMINI_API_VERSION}/batches?${query}`,
    idempotent: true,
  });
  return answer.ok ? parse(ListPage, answer.value, 'GET /batches') : answer;
}

/** `vendorRequest` with the key header and Google's error reader; a bad-key 400 becomes a 401 `rejected`. */
async function send(
  call: VendorCall,
  request: { method: 'GET' | 'POST' | 'DELETE'; url: string; json?: unknown; idempotent: boolean },
): Promise<Result<string, BatchError>> {
  const answer = await vendorRequest(call, { ...request, headers: headers(call) }, readGeminiError);
  if (answer.ok) return ok(answer.value.text);
  const e = answer.error;
  if (e.kind === 'rejected' && e.status === 400 && KEY_REASONS.has(e.type)) return err({ ...e, status: 401 });
  return answer;
}
