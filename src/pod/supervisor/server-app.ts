// The routes of a server-mode run's OpenAI-compatible API (server.ts runs the turns behind them), as a Hono app over
// a port, so routing, auth, body limits, error shapes and the streams' framing are tested with `app.request()`:
//
// - `GET /healthz`, `GET /readyz`, `GET /metrics`: no auth, not counted; another method → 405 (`allow: GET`);
// - `GET /v1/models`, `GET /v1/models/{id}`, `POST /v1/chat/completions`: another method → 405 `method_not_allowed`
//   (`allow`), then no usable key → 503 `api_key_unavailable`, then a wrong or missing `Authorization: Bearer <key>`
//   → 401 `invalid_api_key` (both with `connection: close`, the body never read);
// - any other path → 404 `unknown_url`.
//
// A request answered without its body being read, when it has one, says `connection: close`: the server closes the
// connection after the answer rather than read the body (whoever sent it, however long it is). While the server stops,
// every answer says `connection: close`, so the shutdown does not wait on connections kept alive. Every API request is
// counted in `agent_server_requests_total` by how it ended: the status of its answer, a stream's own ending (its
// status line says 200 before its turn runs), or 499 when the client left first.

import { Hono } from 'hono';
import type { Logger } from '../../shared/log.ts';
import { bearerMatches, failedRequest, hasBody, jsonResponse } from './http.ts';
import { type ErrorType, modelList, modelObject, type OpenAiError, openAiError } from './openai.ts';
import type { ApiKeyState } from './server-key.ts';
import type { ServerMetrics } from './server-metrics.ts';

/** The problem of a request as an HTTP status and an OpenAI error body. */
export interface Refusal {
  readonly status: number;
  readonly body: OpenAiError;
  readonly headers?: Readonly<Record<string, string>>;
  /** Answered with `connection: close`, the request body left unread. */
  readonly close?: true;
}

export const refusal = (
  status: number,
  message: string,
  type: ErrorType,
  code: string | null = null,
  param: string | null = null,
  headers?: Readonly<Record<string, string>>,
): Refusal => ({ status, body: openAiError(message, type, code, param), ...(headers ? { headers } : {}) });

const UNAUTHORIZED: Refusal = {
  ...refusal(401, 'Invalid API key', 'invalid_request_error', 'invalid_api_key'),
  close: true,
};
/** Every API request while the key file holds no usable key; the body is never read. */
const NO_API_KEY: Refusal = {
  ...refusal(
    503,
    'The server has no usable API key yet (its key file is missing, empty or too short); retry later',
    'server_error',
    'api_key_unavailable',
    null,
    { 'retry-after': '5' },
  ),
  close: true,
};

/** The answer of a refusal (with `extra` headers, and `connection: close` when it says so). */
export function refusalResponse(r: Refusal, extra: Readonly<Record<string, string>> = {}): Response {
  return jsonResponse(r.status, r.body, {
    ...r.headers,
    ...extra,
    ...(r.close ? { connection: 'close' } : {}),
  });
}

/** A chat completion's answer, and how the request ended (a stream's ending comes once it is over). */
export interface ChatAnswer {
  readonly response: Response;
  /** The status the request is counted with. */
  readonly settled: Promise<number>;
}

/** What the API needs from the server. */
export interface ApiPort {
  /** The served model. */
  readonly model: string;
  /** Unix seconds of the start (the model's `created`). */
  readonly startedAt: number;
  readonly log: Logger;
  readonly metrics: ServerMetrics;
  stopping(): boolean;
  /** Turns in flight. */
  inFlight(): number;
  /** The API key as of at most a second ago. */
  key(): Promise<ApiKeyState>;
  /** `POST /v1/chat/completions` of an authenticated client: reads the body, runs the turn, answers. */
  chat(request: Request): Promise<ChatAnswer>;
}

type ApiEnv = { Variables: { settled: Promise<number>; bodyRead: boolean } };

/** The API app. */
export type ApiApp = Hono<ApiEnv>;

/** The paths of the probes: no auth, not counted. */
const PROBES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/** Builds the API app. */
export function createApiApp(api: ApiPort): ApiApp {
  const app = new Hono<ApiEnv>();
  app.use('*', async (c, next) => {
    const probe = PROBES.has(c.req.path);
    const start = performance.now();
    await next();
    // A body left unread closes the connection after the answer; so does every answer while the server stops.
    if ((c.get('bodyRead') !== true && hasBody(c.req.raw)) || api.stopping())
      c.res.headers.set('connection', 'close');
    if (probe) return;
    const signal = c.req.raw.signal;
    const settled = c.get('settled') ?? Promise.resolve(c.res.status);
    void settled.then((status) =>
      api.metrics.requestDone(
        signal.aborted && status < 499 ? 499 : status,
        (performance.now() - start) / 1000,
      ),
    );
  });
  probes(app, api);
  app.all('/v1/models', async (c) => {
    const refused = wrongMethod(c.req.raw, 'GET') ?? (await authorize(api, c.req.raw));
    if (refused !== undefined) return refused;
    return jsonResponse(200, modelList(api.model, api.startedAt));
  });
  app.all('/v1/models/*', async (c) => {
    const id = modelIdOf(c.req.url);
    if (id === undefined) return unknownUrl();
    const refused = wrongMethod(c.req.raw, 'GET') ?? (await authorize(api, c.req.raw));
    if (refused !== undefined) return refused;
    if (id === api.model) return jsonResponse(200, modelObject(api.model, api.startedAt));
    return refusalResponse(
      refusal(404, 'No such model', 'invalid_request_error', 'model_not_found', 'model'),
    );
  });
  app.all('/v1/chat/completions', async (c) => {
    const refused = wrongMethod(c.req.raw, 'POST') ?? (await authorize(api, c.req.raw));
    if (refused !== undefined) return refused;
    c.set('bodyRead', true);
    const answer = await api.chat(c.req.raw);
    c.set('settled', answer.settled);
    return answer.response;
  });
  app.notFound(unknownUrl);
  app.onError(failedRequest(api.log, 'server', openAiError('Internal error', 'server_error')));
  return app;
}

/** `/healthz` (alive), `/readyz` (alive, not stopping, with a usable key), `/metrics`; GET only. */
function probes(app: Hono<ApiEnv>, api: ApiPort): void {
  const notGet = (request: Request): Response | undefined =>
    request.method === 'GET'
      ? undefined
      : jsonResponse(405, openAiError('Method not allowed', 'invalid_request_error'), { allow: 'GET' });
  app.all('/healthz', (c) => {
    const stopping = api.stopping();
    return (
      notGet(c.req.raw) ?? jsonResponse(stopping ? 503 : 200, { ok: !stopping, inFlight: api.inFlight() })
    );
  });
  app.all('/readyz', async (c) => {
    const refused = notGet(c.req.raw);
    if (refused !== undefined) return refused;
    const key = await api.key();
    const reason = api.stopping()
      ? 'shutting down'
      : key.kind === 'unusable'
        ? `no usable API key: ${key.why}`
        : undefined;
    return jsonResponse(reason === undefined ? 200 : 503, {
      ok: reason === undefined,
      inFlight: api.inFlight(),
      ...(reason !== undefined ? { reason } : {}),
    });
  });
  app.all('/metrics', async (c) => {
    const refused = notGet(c.req.raw);
    if (refused !== undefined) return refused;
    const metrics = await api.metrics.render();
    return new Response(metrics.body, { status: 200, headers: { 'content-type': metrics.contentType } });
  });
}

/** 405 naming the one method a path takes, when the request used another (HEAD included). */
function wrongMethod(request: Request, method: 'GET' | 'POST'): Response | undefined {
  if (request.method === method) return undefined;
  return refusalResponse(
    refusal(405, 'Method not allowed', 'invalid_request_error', 'method_not_allowed', null, {
      allow: method,
    }),
  );
}

/** 503 without a usable key (nobody can be told apart: nothing is read, nothing runs), 401 without this key. */
async function authorize(api: ApiPort, request: Request): Promise<Response | undefined> {
  const key = await api.key();
  if (key.kind !== 'usable') return refusalResponse(NO_API_KEY);
  // Not a byte of the body is read for a client without the key.
  if (!bearerMatches(key.key, request.headers.get('authorization'))) return refusalResponse(UNAUTHORIZED);
  return undefined;
}

function unknownUrl(): Response {
  return refusalResponse(refusal(404, 'Unknown endpoint', 'invalid_request_error', 'unknown_url'));
}

/** The model id of a `/v1/models/{id}` URL (percent-decoded; '' when it cannot be), undefined when it has none. */
function modelIdOf(url: string): string | undefined {
  const raw = new URL(url).pathname.slice('/v1/models/'.length);
  if (raw === '') return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return '';
  }
}
