// A fake Gemini Developer API batch server (docs/reference/vendor-apis.md#gemini-batch-api), loopback only. It speaks
// the REST shapes the adapter
// must handle: long-running Operations for create / get / list, `BATCH_STATE_*` states, inline results under
// `response.inlinedResponses.inlinedResponses` (the REST sample path) and `metadata.output.inlinedResponses…` (where
// @google/genai reads them; sdk-contract.test.ts), Google's error bodies, and proto-JSON's
// rejection of unknown fields.
//
// Keys, as the real API answers them: a missing `x-goog-api-key` → 403 PERMISSION_DENIED; a wrong one → 400
// INVALID_ARGUMENT with an ErrorInfo detail `reason: API_KEY_INVALID`. A `key` query parameter is accepted too (the
// real API allows it) and is stripped from the recorded path.
//
// Fake-only limits: exactly one inline request per batch (what the controller sends); any model name is accepted;
// a cancel or delete of a batch acts at once (the real API may take a moment).

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

const TYPE_PREFIX = 'type.googleapis.com/google.ai.generativelanguage.v1beta';
const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;

const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'NOT_IMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};
const FAULT_MESSAGES: Readonly<Record<number, string>> = {
  401: 'Request had invalid authentication credentials.',
  403: 'The caller does not have permission',
  429: 'Resource has been exhausted (e.g. check quota).',
  500: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  503: 'The service is currently unavailable.',
};

interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

interface Held {
  id: string;
  customId: string;
  model: string;
  prompt: string;
  params: unknown;
  structured: boolean;
  state: FakeBatch['state'];
  vendorState: string;
  deleted: boolean;
  createdAt: Date;
  updatedAt: Date;
  endedAt?: Date;
  /** Whether a GET has been answered (PENDING → RUNNING on the first one). */
  polled: boolean;
  /** `response` of the Operation once done with results. */
  item?: unknown;
  error?: { code: number; message: string };
  outcome?: FakeOutcome;
  timer: NodeJS.Timeout | undefined;
}

interface QueuedFault {
  fault: FakeFault;
  left: number;
}

function googleError(status: number, message: string, details?: unknown[]): Answer {
  return {
    status,
    body: {
      error: {
        code: status,
        message,
        status: STATUS_NAMES[status] ?? 'UNKNOWN',
        ...(details ? { details } : {}),
      },
    },
  };
}

/** A create body the fake refuses, with the answer to send. */
class Rejection {
  constructor(readonly answer: Answer) {}
}

const invalid = (message: string): Rejection => new Rejection(googleError(400, message));
const notFound = (): Answer => googleError(404, 'Requested entity was not found.');

/** camelCase of a proto-JSON field name (proto-JSON accepts both spellings). */
function isRejected(value: unknown): value is Rejection {
  return value instanceof Rejection;
}

function camel(name: string): string {
  return name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The object with camelCase keys, or an Answer naming the first field not in `known` (as proto-JSON does). */
function fields(value: unknown, known: readonly string[], at: string): Record<string, unknown> | Rejection {
  if (!isObject(value)) {
    return invalid(`Invalid value at '${at}', expected an object.`);
  }
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    const name = camel(key);
    if (!known.includes(name)) {
      return invalid(`Invalid JSON payload received. Unknown name "${key}" at '${at}': Cannot find field.`);
    }
    out[name] = inner;
  }
  return out;
}

const GENERATION_CONFIG_FIELDS = [
  'maxOutputTokens',
  'responseMimeType',
  'responseJsonSchema',
  'responseSchema',
  'stopSequences',
  'candidateCount',
  'thinkingConfig',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'responseLogprobs',
  'logprobs',
  'responseModalities',
  'mediaResolution',
  'speechConfig',
  'enableEnhancedCivicAnswers',
];
const SAMPLING_FIELDS = ['temperature', 'topP', 'topK'];

interface ParsedCreate {
  displayName: string;
  prompt: string;
  request: unknown;
  structured: boolean;
}

/**
 * Validates a `batchGenerateContent` body (docs/reference/vendor-apis.md#gemini-create, inline mode, one request).
 */
function parseCreate(body: unknown): ParsedCreate | Rejection {
  const top = fields(body, ['batch'], 'batch_generate_content_request');
  if (isRejected(top)) return top;
  const batch = fields(
    top.batch,
    ['displayName', 'inputConfig', 'priority', 'webhookConfig', 'model'],
    'batch',
  );
  if (isRejected(batch)) return batch;
  const displayName = batch.displayName;
  if (typeof displayName !== 'string' || displayName === '') {
    return invalid('* GenerateContentBatch.display_name: display_name is required.');
  }
  const input = fields(batch.inputConfig, ['requests', 'fileName'], 'batch.input_config');
  if (isRejected(input)) return input;
  if (input.fileName !== undefined)
    return invalid('This fake supports inline requests only (input_config.requests).');
  const wrapper = fields(input.requests, ['requests'], 'batch.input_config.requests');
  if (isRejected(wrapper)) return wrapper;
  const list = wrapper.requests;
  if (!Array.isArray(list) || list.length === 0) {
    return invalid('* BatchGenerateContentRequest.batch.input_config.requests: requests must not be empty.');
  }
  if (list.length !== 1) return invalid('This fake supports exactly one inline request per batch.');
  const at = 'batch.input_config.requests.requests[0]';
  const entry = fields(list[0], ['request', 'metadata'], at);
  if (isRejected(entry)) return entry;
  if (entry.metadata !== undefined && !isObject(entry.metadata)) {
    return invalid(`Invalid value at '${at}.metadata', expected an object.`);
  }
  const request = fields(
    entry.request,
    [
      'model',
      'contents',
      'generationConfig',
      'systemInstruction',
      'safetySettings',
      'tools',
      'toolConfig',
      'cachedContent',
    ],
    `${at}.request`,
  );
  if (isRejected(request)) return request;
  const contents = request.contents;
  if (!Array.isArray(contents) || contents.length === 0) {
    return invalid('* GenerateContentRequest.contents: contents is not specified');
  }
  let prompt = '';
  for (const [i, content] of contents.entries()) {
    const c = fields(content, ['role', 'parts'], `${at}.request.contents[${i}]`);
    if (isRejected(c)) return c;
    const parts = c.parts;
    if (!Array.isArray(parts) || parts.length === 0) {
      return invalid(`* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.`);
    }
    for (const part of parts) {
      if (isObject(part) && typeof part.text === 'string' && c.role !== 'model') prompt += part.text;
    }
  }
  let structured = false;
  if (request.generationConfig !== undefined) {
    const gcAt = `${at}.request.generation_config`;
    if (!isObject(request.generationConfig))
      return invalid(`Invalid value at '${gcAt}', expected an object.`);
    for (const key of Object.keys(request.generationConfig)) {
      if (SAMPLING_FIELDS.includes(camel(key))) {
        return invalid(
          `* GenerateContentRequest.generation_config.${snake(camel(key))}: sampling parameters are not accepted by this fake (deprecated).`,
        );
      }
    }
    const gc = fields(request.generationConfig, GENERATION_CONFIG_FIELDS, gcAt);
    if (isRejected(gc)) return gc;
    const max = gc.maxOutputTokens;
    if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max <= 0)) {
      return invalid(`Invalid value at '${gcAt}.max_output_tokens' (TYPE_INT32), ${JSON.stringify(max)}`);
    }
    if (gc.responseJsonSchema !== undefined && gc.responseSchema !== undefined) {
      return invalid(
        '* GenerateContentRequest.generation_config: only one of response_schema and response_json_schema may be set.',
      );
    }
    const schema = gc.responseJsonSchema ?? gc.responseSchema;
    const mime = gc.responseMimeType;
    if (schema !== undefined && mime !== 'application/json') {
      return invalid(
        '* GenerateContentRequest.generation_config.response_mime_type: a response schema needs response_mime_type application/json.',
      );
    }
    structured = schema !== undefined || mime === 'application/json';
  }
  return { displayName, prompt, request: entry.request, structured };
}

/** Starts a fake Gemini batch server on 127.0.0.1 (see the file comment for what it checks). */
export async function startFakeGemini(options: FakeVendorOptions = {}): Promise<FakeVendorServer> {
  const apiKey = options.apiKey ?? 'test-key-gemini';
  const held = new Map<string, Held>();
  const requests: RecordedRequest[] = [];
  let faults: QueuedFault[] = [];
  let nextId = 0;
  let nextResponse = 0;

  const view = (b: Held): FakeBatch => ({
    id: b.id,
    customId: b.customId,
    model: b.model,
    prompt: b.prompt,
    params: b.params,
    state: b.state,
    vendorState: b.vendorState,
    deleted: b.deleted,
    createdAt: b.createdAt,
  });

  const operation = (b: Held) => {
    const done = b.state === 'ended';
    const stats: Record<string, string> = { requestCount: '1' };
    const o = b.outcome;
    if (!done) stats.pendingRequestCount = '1';
    else if (o?.kind === 'succeeded' || o?.kind === 'refused') stats.successfulRequestCount = '1';
    else if (o?.kind === 'errored') stats.failedRequestCount = '1';
    return {
      name: b.id,
      metadata: {
        '@type': `${TYPE_PREFIX}.GenerateContentBatch`,
        model: `models/${b.model}`,
        name: b.id,
        displayName: b.customId,
        state: b.vendorState,
        createTime: b.createdAt.toISOString(),
        updateTime: b.updatedAt.toISOString(),
        ...(b.endedAt ? { endTime: b.endedAt.toISOString() } : {}),
        batchStats: stats,
        // The results also in the batch metadata, where @google/genai reads them (`metadata.output`).
        ...(b.item !== undefined ? { output: { inlinedResponses: { inlinedResponses: [b.item] } } } : {}),
      },
      done,
      ...(b.item !== undefined
        ? {
            response: {
              '@type': `${TYPE_PREFIX}.GenerateContentBatchOutput`,
              inlinedResponses: { inlinedResponses: [b.item] },
            },
          }
        : {}),
      ...(b.error ? { error: b.error } : {}),
    };
  };

  const echo = (b: FakeBatch): FakeOutcome => {
    const structured = held.get(b.id)?.structured ?? false;
    return { kind: 'succeeded', text: structured ? JSON.stringify({ echo: b.prompt }) : `echo: ${b.prompt}` };
  };

  const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

  const finishHeld = (b: Held, outcome: FakeOutcome) => {
    if (b.deleted) throw new Error(`fake gemini: ${b.id} was deleted`);
    if (b.state === 'ended') throw new Error(`fake gemini: ${b.id} has already ended (${b.vendorState})`);
    if (b.timer) clearTimeout(b.timer);
    const now = new Date();
    b.state = 'ended';
    b.updatedAt = now;
    b.endedAt = now;
    b.outcome = outcome;
    const promptTokens = tokens(b.prompt);
    const responseId = `fake-response-${++nextResponse}`;
    switch (outcome.kind) {
      case 'succeeded': {
        const thoughts = 7;
        const output = tokens(outcome.text);
        b.vendorState = 'BATCH_STATE_SUCCEEDED';
        b.item = {
          response: {
            candidates: [
              {
                content: {
                  role: 'model',
                  parts: [{ text: 'thinking…', thought: true }, { text: outcome.text }],
                },
                finishReason: 'STOP',
                index: 0,
              },
            ],
            usageMetadata: {
              promptTokenCount: promptTokens,
              candidatesTokenCount: output,
              thoughtsTokenCount: thoughts,
              totalTokenCount: promptTokens + output + thoughts,
              promptTokensDetails: [{ modality: 'TEXT', tokenCount: promptTokens }],
            },
            modelVersion: b.model,
            responseId,
          },
        };
        break;
      }
      case 'errored':
        b.vendorState = 'BATCH_STATE_SUCCEEDED';
        b.item = { error: { code: 400, message: outcome.message, details: [] } };
        break;
      case 'refused':
        b.vendorState = 'BATCH_STATE_SUCCEEDED';
        b.item = {
          response: {
            candidates: [
              {
                finishReason: 'SAFETY',
                index: 0,
                safetyRatings: [
                  { category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true },
                ],
              },
            ],
            usageMetadata: { promptTokenCount: promptTokens, totalTokenCount: promptTokens },
            modelVersion: b.model,
            responseId,
          },
        };
        break;
      case 'expired':
        b.vendorState = 'BATCH_STATE_EXPIRED';
        break;
      case 'cancelled':
        b.vendorState = 'BATCH_STATE_CANCELLED';
        break;
      case 'batchFailed':
        b.vendorState = 'BATCH_STATE_FAILED';
        b.error = { code: 13, message: outcome.message };
        break;
    }
  };

  const live = (name: string): Held | undefined => {
    const b = held.get(name);
    return b && !b.deleted ? b : undefined;
  };

  const create = (model: string, body: unknown): Answer => {
    const parsed = parseCreate(body);
    if (isRejected(parsed)) return parsed.answer;
    const now = new Date();
    nextId += 1;
    const id = `batches/${String(1_000_000_000 + nextId * 7919)}`;
    const b: Held = {
      id,
      customId: parsed.displayName,
      model,
      prompt: parsed.prompt,
      params: parsed.request,
      structured: parsed.structured,
      state: 'pending',
      vendorState: 'BATCH_STATE_PENDING',
      deleted: false,
      createdAt: now,
      updatedAt: now,
      polled: false,
      timer: undefined,
    };
    held.set(id, b);
    if (options.autoFinishMs !== undefined) {
      b.timer = setTimeout(() => {
        b.timer = undefined;
        if (b.deleted || b.state === 'ended') return;
        const outcome = options.autoOutcome?.(view(b)) ?? echo(view(b));
        if (outcome !== 'hold') finishHeld(b, outcome);
      }, options.autoFinishMs);
    }
    return { status: 200, body: operation(b) };
  };

  const list = (query: URLSearchParams): Answer => {
    const sizeText = query.get('pageSize');
    let size = DEFAULT_PAGE_SIZE;
    if (sizeText !== null) {
      size = Number(sizeText);
      if (!Number.isInteger(size) || size < 0)
        return invalid(`Invalid value at 'page_size' (TYPE_INT32), "${sizeText}"`).answer;
      if (size === 0) size = DEFAULT_PAGE_SIZE;
      size = Math.min(size, MAX_PAGE_SIZE);
    }
    let offset = 0;
    const token = query.get('pageToken');
    if (token !== null && token !== '') {
      const decoded = /^o:(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
      if (!decoded) return invalid('Invalid page token.').answer;
      offset = Number(decoded[1]);
    }
    const all = [...held.values()]
      .filter((b) => !b.deleted)
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || b.id.localeCompare(a.id));
    const page = all.slice(offset, offset + size);
    const next =
      offset + size < all.length ? Buffer.from(`o:${offset + size}`).toString('base64url') : undefined;
    // Proto-JSON leaves out empty repeated fields and unset strings.
    return {
      status: 200,
      body: {
        ...(page.length > 0 ? { operations: page.map(operation) } : {}),
        ...(next ? { nextPageToken: next } : {}),
      },
    };
  };

  const route = (method: string, pathname: string, query: URLSearchParams, bodyText: string): Answer => {
    const createMatch = /^\/v1beta\/models\/([^/:]+):batchGenerateContent$/.exec(pathname);
    if (createMatch) {
      if (method !== 'POST') return googleError(404, 'Method not found.');
      let body: unknown;
      try {
        body = JSON.parse(bodyText);
      } catch {
        return invalid('Invalid JSON payload received. Unexpected token.').answer;
      }
      return create(decodeURIComponent(createMatch[1]!), body);
    }
    if (pathname === '/v1beta/batches') {
      if (method !== 'GET') return googleError(404, 'Method not found.');
      return list(query);
    }
    const batchMatch = /^\/v1beta\/(batches\/[^/:]+)(:cancel)?$/.exec(pathname);
    if (batchMatch) {
      const name = decodeURIComponent(batchMatch[1]!);
      const b = live(name);
      if (batchMatch[2] === ':cancel') {
        if (method !== 'POST') return googleError(404, 'Method not found.');
        if (!b) return notFound();
        if (b.state !== 'ended') {
          const now = new Date();
          if (b.timer) clearTimeout(b.timer);
          b.timer = undefined;
          b.state = 'ended';
          b.vendorState = 'BATCH_STATE_CANCELLED';
          b.outcome = { kind: 'cancelled' };
          b.updatedAt = now;
          b.endedAt = now;
        }
        return { status: 200, body: {} };
      }
      if (method === 'GET') {
        if (!b) return notFound();
        if (!b.polled && b.state === 'pending') {
          b.vendorState = 'BATCH_STATE_RUNNING';
          b.updatedAt = new Date();
        }
        b.polled = true;
        return { status: 200, body: operation(b) };
      }
      if (method === 'DELETE') {
        if (!b) return notFound();
        if (b.timer) clearTimeout(b.timer);
        b.timer = undefined;
        b.deleted = true;
        return { status: 200, body: {} };
      }
      return googleError(404, 'Method not found.');
    }
    return googleError(404, 'Method not found.');
  };

  const authorize = (req: IncomingMessage, query: URLSearchParams): Answer | undefined => {
    const header = req.headers['x-goog-api-key'];
    const given = typeof header === 'string' ? header : (query.get('key') ?? undefined);
    if (given === undefined || given === '') {
      return googleError(
        403,
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
      );
    }
    if (given !== apiKey) {
      return googleError(400, 'API key not valid. Please pass a valid API key.', [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'API_KEY_INVALID',
          domain: 'googleapis.com',
          metadata: { service: 'generativelanguage.googleapis.com' },
        },
      ]);
    }
    return undefined;
  };

  const takeFault = (method: string, path: string): FakeFault | undefined => {
    const queued = faults.find(
      (q) =>
        q.left > 0 &&
        (!q.fault.method || q.fault.method === method) &&
        (!q.fault.path || q.fault.path.test(path)),
    );
    if (!queued) return undefined;
    queued.left -= 1;
    faults = faults.filter((q) => q.left > 0);
    return queued.fault;
  };

  const faultAnswer = (fault: FakeFault): Answer => {
    const answer = googleError(
      fault.status,
      FAULT_MESSAGES[fault.status] ?? `Injected fault ${fault.status}.`,
    );
    return fault.retryAfterSeconds !== undefined
      ? { ...answer, headers: { 'retry-after': String(fault.retryAfterSeconds) } }
      : answer;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const bodyText = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const query = url.searchParams;
    const recordedQuery = new URLSearchParams(query);
    recordedQuery.delete('key');
    const qs = recordedQuery.toString();
    const path = `${url.pathname}${qs ? `?${qs}` : ''}`;
    const method = req.method ?? 'GET';
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (name === 'x-goog-api-key' || name === 'authorization' || value === undefined) continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const denied = authorize(req, query);
    requests.push({
      method,
      path,
      authorized: denied === undefined,
      headers,
      body: bodyText,
      at: Date.now(),
    });

    const fault = takeFault(method, path);
    let answer: Answer;
    if (fault && !fault.afterEffect) {
      answer = faultAnswer(fault);
    } else {
      answer = denied ?? route(method, url.pathname, query, bodyText);
      if (fault) answer = faultAnswer(fault);
    }
    if (fault?.delayMs) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
    if (res.destroyed) return;
    res.writeHead(answer.status, { 'content-type': 'application/json; charset=UTF-8', ...answer.headers });
    res.end(JSON.stringify(answer.body));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json; charset=UTF-8' });
      res.end(JSON.stringify(googleError(500, String(error)).body));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  const clearTimers = () => {
    for (const b of held.values()) {
      if (b.timer) clearTimeout(b.timer);
      b.timer = undefined;
    }
  };

  return {
    provider: 'gemini',
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    batches: () => [...held.values()].map(view),
    finish(id: string, outcome: FakeOutcome) {
      const b = held.get(id);
      if (!b) throw new Error(`fake gemini: no batch ${id}`);
      finishHeld(b, outcome);
    },
    inject(fault: FakeFault) {
      faults.push({ fault, left: fault.times ?? 1 });
    },
    reset() {
      clearTimers();
      held.clear();
      requests.length = 0;
      faults = [];
    },
    async close() {
      clearTimers();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}
