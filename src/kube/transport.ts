import { Buffer } from 'node:buffer';
import * as http from 'node:http';
import * as https from 'node:https';
import type { Result } from '../shared/result.ts';
import { err, ok } from '../shared/result.ts';
import { VERSION } from '../shared/version.ts';
import { type AgentPool, createAgentPool } from './agent-pool.ts';
import { apiErrorFromResponse, type KubeError } from './errors.ts';
import { type Query, queryString } from './paths.ts';
import { type TlsMaterial, tlsOptions } from './tls.ts';

/** What a request needs to authenticate: headers (e.g. `Authorization`) and TLS material. */
export interface Credentials {
  readonly headers: Readonly<Record<string, string>>;
  readonly tls: TlsMaterial;
}

/**
 * Supplies credentials before every request. It may cache; with `refresh: true` (after a 401) it must re-read its
 * sources (token file, exec plugin). Never throws: failures are `config` errors.
 */
export type CredentialSource = (opts: {
  readonly refresh: boolean;
}) => Promise<Result<Credentials, KubeError>>;

/** One completed request, for metrics: verb, HTTP code or error kind, and wall time. Never carries paths or bodies. */
export interface RequestSample {
  readonly verb: string;
  readonly code: string;
  readonly durationMs: number;
  readonly stream: boolean;
}

export interface TransportOptions {
  /** API server base URL, e.g. `https://127.0.0.1:6443` (a path prefix is kept). */
  readonly server: string;
  readonly credentials: CredentialSource;
  /** Default per-request timeout for non-streaming requests (default 30 000 ms). */
  readonly timeoutMs?: number;
  /** Largest response body accepted by `request` (default 64 MiB); larger bodies fail with `decode`. */
  readonly maxBodyBytes?: number;
  /** Called once per finished request (including failures). */
  readonly observe?: (sample: RequestSample) => void;
  /** Monotonic-enough clock for request durations (default `performance.now`). */
  readonly now?: () => number;
  /**
   * Who is asking, added to the User-Agent (`agent-controller/<version> (<identity>)`): the API server's audit log
   * then tells the writes of one replica from another's (they share one ServiceAccount).
   */
  readonly identity?: string;
}

export interface RequestOptions {
  readonly query?: Query | undefined;
  /** A string is sent as is; anything else is JSON-encoded. */
  readonly body?: unknown;
  /** Default `application/json` when a body is given. */
  readonly contentType?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Overrides the transport's default timeout. */
  readonly timeoutMs?: number | undefined;
}

/** A 2xx answer. `text` is the UTF-8 body. */
export interface Response {
  readonly status: number;
  readonly text: string;
}

export interface StreamOptions {
  readonly query?: Query | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Tear the connection down after this long without a byte (including waiting for headers). */
  readonly idleTimeoutMs: number;
  /** Receives every body chunk of a 2xx response, in order. */
  readonly onData: (chunk: Uint8Array) => void;
}

/**
 * The one HTTP client to the API server. One keep-alive agent is shared by all requests (it is replaced only when
 * the TLS material changes, e.g. a rotated exec client certificate). Never throws.
 */
export interface Transport {
  /**
   * Sends one request and reads the whole answer. Guarantees: 2xx → `ok`; non-2xx → `api` error with the parsed
   * Status; 401 → credentials refreshed and the request retried exactly once.
   */
  request(method: string, path: string, opts?: RequestOptions): Promise<Result<Response, KubeError>>;
  /**
   * GETs a streaming response (watch), handing each chunk to `onData`. Resolves `ok` when the server ends the stream
   * cleanly; `timeout` with `idle: true` when silent for `idleTimeoutMs`; `aborted` when the signal fires; `network`
   * when the connection drops mid-stream; `api` for a non-2xx answer.
   */
  stream(path: string, opts: StreamOptions): Promise<Result<{ readonly status: number }, KubeError>>;
  /** Closes idle keep-alive sockets and every agent; in-flight requests fail with `network`. */
  close(): void;
}

const USER_AGENT = `agent-controller/${VERSION}`;

/** The User-Agent of a transport for `identity`: parentheses and control characters are left out of it. */
export function userAgentFor(identity: string | undefined): string {
  const safe = (identity ?? '').replace(/[^\x20-\x7e]|[()]/g, '').trim();
  return safe === '' ? USER_AGENT : `${USER_AGENT} (${safe})`;
}

/** Where the API server is (from its URL): what `http(s).request` needs, and the path prefix kept before every path. */
export interface ApiServerEndpoint {
  readonly protocol: 'http:' | 'https:';
  readonly secure: boolean;
  /** Without the brackets of an IPv6 literal. */
  readonly hostname: string;
  /** The URL's port, else the scheme's (443 or 80). */
  readonly port: string | number;
  /** The URL's path without trailing slashes (`''` for none). */
  readonly basePath: string;
}

/** The endpoint of an API server URL (pure). Throws on a scheme other than http and https. */
export function apiServerEndpoint(server: string): ApiServerEndpoint {
  const base = new URL(server);
  const secure = base.protocol === 'https:';
  if (!secure && base.protocol !== 'http:') throw new Error(`unsupported API server URL ${server}`);
  return {
    protocol: secure ? 'https:' : 'http:',
    secure,
    hostname: base.hostname.replace(/^\[|\]$/g, ''),
    port: base.port || (secure ? 443 : 80),
    basePath: base.pathname.replace(/\/+$/, ''),
  };
}

/** A request body as sent (pure): a string as is, anything else JSON-encoded; undefined when there is none. */
export function encodeBody(body: unknown): string | undefined {
  if (body === undefined) return undefined;
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/**
 * The headers of one request (pure): Accept and User-Agent, then the credentials' headers (which may override
 * them), then for a body its Content-Type (default JSON) and its Content-Length in bytes.
 */
export function requestHeaders(
  userAgent: string,
  credentialHeaders: Readonly<Record<string, string>>,
  body: string | undefined,
  contentType: string | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {
    Accept: 'application/json, */*',
    'User-Agent': userAgent,
    ...credentialHeaders,
  };
  if (body !== undefined) {
    headers['Content-Type'] = contentType ?? 'application/json';
    headers['Content-Length'] = String(Buffer.byteLength(body));
  }
  return headers;
}

/** The error of a request out of time (pure): no answer within `timeoutMs`, or (a stream) no data for that long. */
export function timeoutError(
  request: { readonly method: string; readonly path: string; readonly timeoutMs: number },
  streaming: boolean,
): KubeError {
  const { method, path, timeoutMs } = request;
  return {
    kind: 'timeout',
    idle: streaming,
    message: streaming
      ? `no data for ${timeoutMs} ms on ${method} ${path}`
      : `no answer within ${timeoutMs} ms for ${method} ${path}`,
  };
}

/** The `code` of a request's metrics sample (pure): the HTTP status, else the error's kind. */
export function sampleCode(outcome: Result<{ readonly status: number }, KubeError>): string {
  if (outcome.ok) return String(outcome.value.status);
  return outcome.error.kind === 'api' ? String(outcome.error.code) : outcome.error.kind;
}

/** One request as sent: a whole-answer request, or a stream when `onData` is set. */
interface Exchange {
  readonly method: string;
  readonly path: string;
  readonly query: Query | undefined;
  readonly body: string | undefined;
  readonly contentType: string | undefined;
  readonly signal: AbortSignal | undefined;
  /** Total deadline (request) or idle deadline (stream). */
  readonly timeoutMs: number;
  readonly onData: ((chunk: Uint8Array) => void) | undefined;
}
type Outcome = Result<{ status: number; text: string }, KubeError>;

/** What every request of one transport shares. */
interface Connection {
  readonly endpoint: ApiServerEndpoint;
  readonly agents: AgentPool<http.Agent>;
  readonly userAgent: string;
  readonly maxBodyBytes: number;
}

/** A keep-alive agent to the API server: https with the TLS material, or plain http (which has none). */
function keepAliveAgent(secure: boolean, tls: TlsMaterial): http.Agent {
  return secure
    ? new https.Agent({ keepAlive: true, keepAliveMsecs: 30_000, ...tlsOptions(tls) })
    : new http.Agent({ keepAlive: true, keepAliveMsecs: 30_000 });
}

/**
 * Sends `ex` once with `creds` over the connection's current agent and settles with its outcome: the whole body
 * (up to the limit) or, for a stream, each chunk handed on; the deadline is re-armed by every chunk of a stream.
 */
function sendOnce(conn: Connection, ex: Exchange, creds: Credentials): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    if (conn.agents.isClosed()) return resolve(err({ kind: 'network', message: 'transport closed' }));
    if (ex.signal?.aborted) return resolve(err({ kind: 'aborted', message: 'aborted before sending' }));
    const { endpoint, maxBodyBytes } = conn;
    const entry = conn.agents.acquire(creds.tls);
    const streaming = ex.onData !== undefined;
    let settled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let req: http.ClientRequest | undefined;
    const onAbort = (): void => finish(err({ kind: 'aborted', message: 'aborted by caller' }));
    const finish = (outcome: Outcome): void => {
      if (settled) return;
      settled = true;
      if (timer !== undefined) clearTimeout(timer);
      ex.signal?.removeEventListener('abort', onAbort);
      if (!outcome.ok && req && !req.destroyed) req.destroy();
      conn.agents.release(entry);
      resolve(outcome);
    };
    const arm = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(() => finish(err(timeoutError(ex, streaming))), ex.timeoutMs);
    };
    ex.signal?.addEventListener('abort', onAbort, { once: true });
    arm();
    try {
      req = (endpoint.secure ? https : http).request({
        protocol: endpoint.protocol,
        hostname: endpoint.hostname,
        port: endpoint.port,
        method: ex.method,
        path: `${endpoint.basePath}${ex.path}${queryString(ex.query)}`,
        headers: requestHeaders(conn.userAgent, creds.headers, ex.body, ex.contentType),
        agent: entry.agent,
      });
    } catch (e) {
      return finish(err({ kind: 'network', message: e instanceof Error ? e.message : String(e) }));
    }
    req.on('error', (e) => finish(err({ kind: 'network', message: e.message })));
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const success = status >= 200 && status < 300;
      const chunks: Buffer[] = [];
      let size = 0;
      if (streaming) arm();
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        if (streaming && success) {
          arm();
          ex.onData?.(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          return;
        }
        size += chunk.length;
        if (size > maxBodyBytes) {
          finish(err({ kind: 'decode', message: `response body over ${maxBodyBytes} bytes` }));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (success) finish(ok({ status, text }));
        else finish(err(apiErrorFromResponse(status, text)));
      });
      res.on('error', (e) => finish(err({ kind: 'network', message: e.message })));
      res.on('close', () => {
        if (!res.complete)
          finish(err({ kind: 'network', message: 'connection closed before the response ended' }));
      });
    });
    if (ex.body !== undefined) req.write(ex.body);
    req.end();
  });
}

/** Creates the transport. Nothing connects until the first request. */
export function createTransport(options: TransportOptions): Transport {
  const endpoint = apiServerEndpoint(options.server);
  const conn: Connection = {
    endpoint,
    agents: createAgentPool((tls) => keepAliveAgent(endpoint.secure, tls)),
    userAgent: userAgentFor(options.identity),
    maxBodyBytes: options.maxBodyBytes ?? 64 * 1024 * 1024,
  };
  const defaultTimeout = options.timeoutMs ?? 30_000;
  const now = options.now ?? (() => performance.now());
  const observe = options.observe ?? (() => {});

  /** Sends with the cached credentials; after a 401, once more with refreshed ones. Observes the outcome. */
  const exchange = async (ex: Exchange): Promise<Outcome> => {
    const started = now();
    let creds = await options.credentials({ refresh: false });
    let outcome: Outcome = creds.ok ? await sendOnce(conn, ex, creds.value) : creds;
    if (!outcome.ok && outcome.error.kind === 'api' && outcome.error.code === 401) {
      creds = await options.credentials({ refresh: true });
      outcome = creds.ok ? await sendOnce(conn, ex, creds.value) : creds;
    }
    observe({
      verb: ex.method,
      code: sampleCode(outcome),
      durationMs: now() - started,
      stream: ex.onData !== undefined,
    });
    return outcome;
  };

  return {
    async request(method, path, opts = {}) {
      const r = await exchange({
        method,
        path,
        query: opts.query,
        body: encodeBody(opts.body),
        contentType: opts.contentType,
        signal: opts.signal,
        timeoutMs: opts.timeoutMs ?? defaultTimeout,
        onData: undefined,
      });
      return r.ok ? ok({ status: r.value.status, text: r.value.text }) : r;
    },
    async stream(path, opts) {
      const r = await exchange({
        method: 'GET',
        path,
        query: opts.query,
        body: undefined,
        contentType: undefined,
        signal: opts.signal,
        timeoutMs: opts.idleTimeoutMs,
        onData: opts.onData,
      });
      return r.ok ? ok({ status: r.value.status }) : r;
    },
    close: () => conn.agents.close(),
  };
}
