// A fake Anthropic Message Batches API on 127.0.0.1, built from
// docs/reference/vendor-apis.md#anthropic-message-batches: the five batch endpoints plus
// the list, Anthropic's error envelope, auth and version checks, and the 2026-10-21 refusal of sampling parameters.
// Tests drive it through `FakeVendorServer` (finish batches, inject faults, read the recorded requests).
//
// Choices where the vendor documentation is silent (UNCONFIRMED against the real API): a create may hold only one
// request (the
// `FakeBatch` model has one custom id); cancelling an ended batch answers 400 invalid_request_error; results of a
// batch that has not ended answer 400 invalid_request_error; only `anthropic-version: 2026-10-21` is accepted (the
// real API also accepts `2023-06-01`; the fake pins what our client must send). A `canceling` batch stays so until
// `finish()` (or, with `autoFinishMs`, that long after the cancel, as cancelled), as the OpenAI fake does.

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

/** The only `anthropic-version` the fake accepts. */
export const FAKE_ANTHROPIC_VERSION = '2026-10-21';
const BATCHES = '/v1/messages/batches';
const DAY_MS = 24 * 60 * 60 * 1000;
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const SAMPLING_PARAMS = ['temperature', 'top_p', 'top_k'] as const;

type ProcessingStatus = 'in_progress' | 'canceling' | 'ended';

interface Counts {
  processing: number;
  succeeded: number;
  errored: number;
  canceled: number;
  expired: number;
}

interface StoredBatch {
  readonly id: string;
  readonly seq: number;
  readonly customId: string;
  readonly model: string;
  readonly prompt: string;
  readonly params: unknown;
  /** `params.output_config.format` was a json_schema. */
  readonly structured: boolean;
  readonly createdAt: Date;
  status: ProcessingStatus;
  counts: Counts;
  endedAt: Date | null;
  cancelInitiatedAt: Date | null;
  resultsUrl: string | null;
  /** The `result` of the one JSONL line, fixed when the batch ends. */
  result: unknown;
  deleted: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
}

interface Reply {
  readonly status: number;
  readonly body: string;
  readonly contentType: string;
  readonly headers?: Readonly<Record<string, string>>;
}

interface PendingFault {
  readonly fault: FakeFault;
  remaining: number;
}

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function randomId(prefix: string): string {
  const bytes = randomBytes(24);
  let out = prefix;
  for (const b of bytes) out += BASE62[b % 62];
  return out;
}

function json(status: number, value: unknown, headers?: Record<string, string>): Reply {
  return {
    status,
    body: JSON.stringify(value),
    contentType: 'application/json',
    ...(headers === undefined ? {} : { headers }),
  };
}

/** Anthropic's error envelope (docs/reference/vendor-apis.md#anthropic-errors). */
function errorReply(status: number, message: string, type = ERROR_TYPES[status] ?? 'api_error'): Reply {
  return json(status, { type: 'error', error: { type, message }, request_id: randomId('req_') });
}

const isObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === 'object' && u !== null && !Array.isArray(u);

function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** The user text of the first message (a string, or the joined text blocks). */
function promptOf(messages: readonly unknown[]): string {
  const first = messages[0];
  if (!isObject(first)) return '';
  const content = first.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((block) => (isObject(block) && typeof block.text === 'string' ? block.text : ''))
      .join('');
  }
  return '';
}

/** The default outcome: an echo of the prompt (as JSON when a schema was sent). */
export function echoOutcome(batch: { readonly prompt: string; readonly params: unknown }): FakeOutcome {
  const params = batch.params;
  const structured = isObject(params) && params.output_config !== undefined;
  return {
    kind: 'succeeded',
    text: structured ? JSON.stringify({ echo: batch.prompt }) : `echo: ${batch.prompt}`,
  };
}

/**
 * Starts the fake on 127.0.0.1 (`options.port`, default any free port). It accepts exactly one of `x-api-key:
 * <key>` and `Authorization: Bearer <key>` (else 401 authentication_error), requires `anthropic-version:
 * 2026-10-21` (else 400), answers with the documented `MessageBatch`, list, results JSONL, delete and error shapes,
 * and records every request without the key. Batches stay `in_progress` until `finish()` (or `autoFinishMs`).
 */
export async function startFakeAnthropic(options: FakeVendorOptions = {}): Promise<FakeVendorServer> {
  const apiKey = options.apiKey ?? 'test-key-anthropic';
  const store = new Map<string, StoredBatch>();
  let requests: RecordedRequest[] = [];
  let faults: PendingFault[] = [];
  let seq = 0;
  let baseUrl = '';

  const view = (b: StoredBatch) => ({
    id: b.id,
    type: 'message_batch',
    processing_status: b.status,
    request_counts: { ...b.counts },
    ended_at: b.endedAt?.toISOString() ?? null,
    created_at: b.createdAt.toISOString(),
    expires_at: new Date(b.createdAt.getTime() + DAY_MS).toISOString(),
    archived_at: null,
    cancel_initiated_at: b.cancelInitiatedAt?.toISOString() ?? null,
    results_url: b.resultsUrl,
  });

  const snapshot = (b: StoredBatch): FakeBatch => ({
    id: b.id,
    customId: b.customId,
    model: b.model,
    prompt: b.prompt,
    params: b.params,
    state: b.status === 'in_progress' ? 'pending' : b.status === 'canceling' ? 'cancelling' : 'ended',
    vendorState: b.status,
    deleted: b.deleted,
    createdAt: b.createdAt,
  });

  function resultFor(b: StoredBatch, outcome: FakeOutcome): { result: unknown; bucket: keyof Counts } {
    switch (outcome.kind) {
      case 'succeeded':
      case 'refused': {
        const refused = outcome.kind === 'refused';
        const text = refused ? "I can't help with that request." : outcome.text;
        const thinking = refused
          ? []
          : [{ type: 'thinking', thinking: 'Answering the prompt.', signature: 'sig' }];
        const message = {
          id: randomId('msg_'),
          type: 'message',
          role: 'assistant',
          model: b.model,
          content: [...thinking, { type: 'text', text }],
          stop_reason: refused ? 'refusal' : 'end_turn',
          stop_sequence: null,
          usage: {
            input_tokens: tokens(b.prompt),
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
            output_tokens: tokens(text) + (refused ? 0 : 5),
            service_tier: 'batch',
          },
        };
        return { result: { type: 'succeeded', message }, bucket: 'succeeded' };
      }
      // Anthropic has no whole-batch failure: a failed batch is an errored request.
      case 'errored':
      case 'batchFailed':
        return {
          result: {
            type: 'errored',
            error: {
              type: 'error',
              error: { type: 'invalid_request_error', message: outcome.message },
              request_id: randomId('req_'),
            },
          },
          bucket: 'errored',
        };
      case 'expired':
        return { result: { type: 'expired' }, bucket: 'expired' };
      case 'cancelled':
        return { result: { type: 'canceled' }, bucket: 'canceled' };
    }
  }

  function end(b: StoredBatch, outcome: FakeOutcome): void {
    const { result, bucket } = resultFor(b, outcome);
    if (b.timer !== undefined) clearTimeout(b.timer);
    b.timer = undefined;
    b.status = 'ended';
    b.endedAt = new Date();
    b.resultsUrl = `${baseUrl}${BATCHES}/${b.id}/results`;
    b.counts = { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0, [bucket]: 1 };
    b.result = result;
  }

  function create(body: string): Reply {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return errorReply(400, 'request body is not valid JSON');
    }
    if (!isObject(parsed) || !Array.isArray(parsed.requests))
      return errorReply(400, 'requests: Field required');
    const list = parsed.requests;
    if (list.length === 0) return errorReply(400, 'requests: List should have at least 1 item');
    if (list.length > 1) return errorReply(400, 'requests: this fake accepts exactly one request per batch');
    const entry = list[0];
    if (!isObject(entry)) return errorReply(400, 'requests.0: Input should be an object');
    const customId = entry.custom_id;
    if (typeof customId !== 'string' || !CUSTOM_ID.test(customId)) {
      return errorReply(400, 'requests.0.custom_id: String should match pattern ^[a-zA-Z0-9_-]{1,64}$');
    }
    const params = entry.params;
    if (!isObject(params)) return errorReply(400, 'requests.0.params: Field required');
    const model = params.model;
    if (typeof model !== 'string' || model === '')
      return errorReply(400, 'requests.0.params.model: Field required');
    const maxTokens = params.max_tokens;
    if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) {
      return errorReply(400, 'requests.0.params.max_tokens: Input should be a positive integer');
    }
    const messages = params.messages;
    if (!Array.isArray(messages) || messages.length === 0) {
      return errorReply(400, 'requests.0.params.messages: Field required');
    }
    for (const name of SAMPLING_PARAMS) {
      if (name in params) {
        return errorReply(
          400,
          `requests.0.params.${name}: ${name} is not supported on anthropic-version ${FAKE_ANTHROPIC_VERSION}`,
        );
      }
    }
    if ('output_format' in params) {
      return errorReply(400, 'requests.0.params.output_format: Extra inputs are not permitted');
    }
    let structured = false;
    const outputConfig = params.output_config;
    if (outputConfig !== undefined) {
      const format = isObject(outputConfig) ? outputConfig.format : undefined;
      if (format !== undefined) {
        if (!isObject(format) || format.type !== 'json_schema' || !isObject(format.schema)) {
          return errorReply(
            400,
            'requests.0.params.output_config.format: expected {type: "json_schema", schema}',
          );
        }
        structured = true;
      }
    }
    const b: StoredBatch = {
      id: randomId('msgbatch_'),
      seq: seq++,
      customId,
      model,
      prompt: promptOf(messages),
      params,
      structured,
      createdAt: new Date(),
      status: 'in_progress',
      counts: { processing: 1, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
      endedAt: null,
      cancelInitiatedAt: null,
      resultsUrl: null,
      result: undefined,
      deleted: false,
      timer: undefined,
    };
    store.set(b.id, b);
    if (options.autoFinishMs !== undefined) {
      b.timer = setTimeout(() => {
        b.timer = undefined;
        if (b.status === 'ended' || b.deleted) return;
        const outcome: FakeOutcome | 'hold' =
          b.status === 'canceling'
            ? { kind: 'cancelled' }
            : (options.autoOutcome?.(snapshot(b)) ?? echoOutcome(b));
        if (outcome !== 'hold') end(b, outcome);
      }, options.autoFinishMs);
      b.timer.unref();
    }
    return json(200, view(b));
  }

  function list(query: URLSearchParams): Reply {
    const rawLimit = query.get('limit');
    const limit = rawLimit === null ? 20 : Number(rawLimit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      return errorReply(400, 'limit: Input should be an integer between 1 and 1000');
    }
    let all = [...store.values()].filter((b) => !b.deleted).sort((a, b) => b.seq - a.seq);
    const afterId = query.get('after_id');
    const beforeId = query.get('before_id');
    if (afterId !== null) {
      const at = all.findIndex((b) => b.id === afterId);
      all = at === -1 ? [] : all.slice(at + 1);
    }
    let data: StoredBatch[];
    let hasMore: boolean;
    if (beforeId !== null && afterId === null) {
      const at = all.findIndex((b) => b.id === beforeId);
      const newer = at === -1 ? [] : all.slice(0, at);
      data = newer.slice(Math.max(0, newer.length - limit));
      hasMore = newer.length > limit;
    } else {
      data = all.slice(0, limit);
      hasMore = all.length > limit;
    }
    return json(200, {
      data: data.map(view),
      has_more: hasMore,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
    });
  }

  function route(method: string, url: URL, body: string): Reply {
    const path = url.pathname;
    if (path === BATCHES) {
      if (method === 'POST') return create(body);
      if (method === 'GET') return list(url.searchParams);
      return errorReply(405, `method ${method} not allowed`, 'invalid_request_error');
    }
    if (!path.startsWith(`${BATCHES}/`)) return errorReply(404, 'Not found');
    const [rawId, action, ...rest] = path.slice(BATCHES.length + 1).split('/');
    const id = decodeURIComponent(rawId ?? '');
    const b = store.get(id);
    if (b === undefined || b.deleted || rest.length > 0) {
      return errorReply(404, `message batch ${id} not found`);
    }
    if (action === undefined) {
      if (method === 'GET') return json(200, view(b));
      if (method === 'DELETE') {
        if (b.status !== 'ended') {
          return errorReply(
            400,
            `message batch ${id} cannot be deleted before it has ended; cancel it first`,
          );
        }
        b.deleted = true;
        return json(200, { id: b.id, type: 'message_batch_deleted' });
      }
    } else if (action === 'cancel' && method === 'POST') {
      if (b.status === 'ended') return errorReply(400, `message batch ${id} has already ended`);
      if (b.status === 'in_progress') {
        b.status = 'canceling';
        b.cancelInitiatedAt = new Date();
        if (options.autoFinishMs !== undefined) {
          // The vendor processes a cancel eventually, whenever it comes (not only within autoFinishMs of creation).
          if (b.timer !== undefined) clearTimeout(b.timer);
          b.timer = setTimeout(() => {
            b.timer = undefined;
            if (b.status === 'canceling' && !b.deleted) end(b, { kind: 'cancelled' });
          }, options.autoFinishMs);
          b.timer.unref();
        }
      }
      return json(200, view(b));
    } else if (action === 'results' && method === 'GET') {
      if (b.status !== 'ended') return errorReply(400, `message batch ${id} is still processing`);
      return {
        status: 200,
        body: `${JSON.stringify({ custom_id: b.customId, result: b.result })}\n`,
        contentType: 'application/binary',
      };
    }
    return errorReply(404, 'Not found');
  }

  function authorize(req: IncomingMessage): Reply | undefined {
    const xKey = req.headers['x-api-key'];
    const bearer = req.headers.authorization;
    if (xKey !== undefined && bearer !== undefined) {
      return errorReply(401, 'send exactly one of x-api-key and Authorization');
    }
    const ok = xKey !== undefined ? xKey === apiKey : bearer === `Bearer ${apiKey}`;
    if (!ok) return errorReply(401, 'invalid x-api-key');
    const version = req.headers['anthropic-version'];
    if (version === undefined) return errorReply(400, 'anthropic-version: header is required');
    if (version !== FAKE_ANTHROPIC_VERSION) {
      return errorReply(400, `anthropic-version: ${JSON.stringify(version)} is not supported by this server`);
    }
    return undefined;
  }

  function takeFault(method: string, path: string): FakeFault | undefined {
    const pending = faults.find(
      (f) =>
        f.remaining > 0 &&
        (f.fault.method === undefined || f.fault.method.toUpperCase() === method) &&
        (f.fault.path === undefined || f.fault.path.test(path)),
    );
    if (pending === undefined) return undefined;
    pending.remaining--;
    faults = faults.filter((f) => f.remaining > 0);
    return pending.fault;
  }

  function faultReply(fault: FakeFault): Reply {
    const reply = errorReply(fault.status, `injected fault: HTTP ${fault.status}`);
    return fault.retryAfterSeconds === undefined
      ? reply
      : { ...reply, headers: { 'retry-after': String(fault.retryAfterSeconds) } };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const method = (req.method ?? 'GET').toUpperCase();
    const path = req.url ?? '/';
    const url = new URL(path, baseUrl);
    const denied = authorize(req);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (name === 'x-api-key' || name === 'authorization' || value === undefined) continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    requests.push({
      method,
      path,
      authorized: denied === undefined || denied.status !== 401,
      headers,
      body,
      at: Date.now(),
    });
    const fault = takeFault(method, path);
    let reply: Reply | undefined;
    if (fault === undefined || fault.afterEffect === true) reply = denied ?? route(method, url, body);
    if (fault !== undefined) reply = faultReply(fault);
    if (fault?.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
    if (res.destroyed || reply === undefined) return;
    res.writeHead(reply.status, {
      'content-type': reply.contentType,
      'request-id': randomId('req_'),
      ...reply.headers,
    });
    res.end(reply.body);
  }

  const server = createServer((req, res) => {
    res.on('error', () => {});
    handle(req, res).catch(() => {
      if (!res.headersSent && !res.destroyed) {
        const reply = errorReply(500, 'fake server error');
        res.writeHead(reply.status, { 'content-type': reply.contentType });
        res.end(reply.body);
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const clearTimers = () => {
    for (const b of store.values()) if (b.timer !== undefined) clearTimeout(b.timer);
  };

  return {
    provider: 'anthropic',
    baseUrl,
    apiKey,
    get requests() {
      return requests;
    },
    batches: () => [...store.values()].sort((a, b) => a.seq - b.seq).map(snapshot),
    finish(id, outcome) {
      const b = store.get(id);
      if (b === undefined || b.deleted) throw new Error(`fake anthropic: no batch ${id}`);
      if (b.status === 'ended') throw new Error(`fake anthropic: batch ${id} has already ended`);
      end(b, outcome);
    },
    inject(fault) {
      faults.push({ fault, remaining: fault.times ?? 1 });
    },
    reset() {
      clearTimers();
      store.clear();
      requests = [];
      faults = [];
    },
    async close() {
      clearTimers();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
