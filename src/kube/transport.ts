import { Buffer } from 'node:buffer';
import * as http from 'node:http';
import * as https from 'node:https';
import type { Result } from '../shared/result.ts';
import { err, ok } from '../shared/result.ts';
import { VERSION } from '../shared/version.ts';
import { apiErrorFromResponse, type KubeError } from './errors.ts';
import { type Query, queryString } from './paths.ts';

/** TLS material for the connection to the API server. Strings are PEM. */
export interface TlsMaterial {
  readonly ca?: string | Uint8Array | undefined;
  readonly cert?: string | Uint8Array | undefined;
  readonly key?: string | Uint8Array | undefined;
  /** false only when the kubeconfig says insecure-skip-tls-verify. */
  readonly rejectUnauthorized?: boolean | undefined;
  /** TLS server name override (kubeconfig `tls-server-name`). */
  readonly servername?: string | undefined;
}

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

interface AgentEntry {
  readonly agent: http.Agent;
  readonly tls: TlsMaterial;
  inflight: number;
  retired: boolean;
}

const sameBytes = (a: string | Uint8Array | undefined, b: string | Uint8Array | undefined): boolean => {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  const ta = typeof a === 'string' ? new TextEncoder().encode(a) : a;
  const tb = typeof b === 'string' ? new TextEncoder().encode(b) : b;
  if (ta.length !== tb.length) return false;
  for (let i = 0; i < ta.length; i++) if (ta[i] !== tb[i]) return false;
  return true;
};

/** True when two TLS materials would produce the same connections. */
export function sameTls(a: TlsMaterial, b: TlsMaterial): boolean {
  return (
    sameBytes(a.ca, b.ca) &&
    sameBytes(a.cert, b.cert) &&
    sameBytes(a.key, b.key) &&
    a.rejectUnauthorized === b.rejectUnauthorized &&
    a.servername === b.servername
  );
}

const USER_AGENT = `agent-controller/${VERSION}`;

/** The User-Agent of a transport for `identity`: parentheses and control characters are left out of it. */
export function userAgentFor(identity: string | undefined): string {
  const safe = (identity ?? '').replace(/[^\x20-\x7e]|[()]/g, '').trim();
  return safe === '' ? USER_AGENT : `${USER_AGENT} (${safe})`;
}

/** Creates the transport. Nothing connects until the first request. */
export function createTransport(options: TransportOptions): Transport {
  const base = new URL(options.server);
  const secure = base.protocol === 'https:';
  if (!secure && base.protocol !== 'http:') throw new Error(`unsupported API server URL ${options.server}`);
  const basePath = base.pathname.replace(/\/+$/, '');
  const defaultTimeout = options.timeoutMs ?? 30_000;
  const maxBody = options.maxBodyBytes ?? 64 * 1024 * 1024;
  const userAgent = userAgentFor(options.identity);
  const now = options.now ?? (() => performance.now());
  const observe = options.observe ?? (() => {});
  let current: AgentEntry | undefined;
  const all = new Set<AgentEntry>();
  let closed = false;

  const acquire = (tls: TlsMaterial): AgentEntry => {
    if (current && sameTls(current.tls, tls)) {
      current.inflight++;
      return current;
    }
    if (current) {
      current.retired = true;
      if (current.inflight === 0) {
        current.agent.destroy();
        all.delete(current);
      }
    }
    const agentOptions = { keepAlive: true, keepAliveMsecs: 30_000, ...tlsOptions(tls) };
    const agent = secure
      ? new https.Agent(agentOptions)
      : new http.Agent({ keepAlive: true, keepAliveMsecs: 30_000 });
    current = { agent, tls, inflight: 1, retired: false };
    all.add(current);
    return current;
  };
  const release = (entry: AgentEntry): void => {
    entry.inflight--;
    if (entry.retired && entry.inflight === 0) {
      entry.agent.destroy();
      all.delete(entry);
    }
  };

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

  const once = (ex: Exchange, creds: Credentials): Promise<Outcome> =>
    new Promise<Outcome>((resolve) => {
      if (closed) return resolve(err({ kind: 'network', message: 'transport closed' }));
      if (ex.signal?.aborted) return resolve(err({ kind: 'aborted', message: 'aborted before sending' }));
      const entry = acquire(creds.tls);
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
        release(entry);
        resolve(outcome);
      };
      const arm = (): void => {
        if (timer !== undefined) clearTimeout(timer);
        timer = setTimeout(
          () =>
            finish(
              err({
                kind: 'timeout',
                idle: streaming,
                message: streaming
                  ? `no data for ${ex.timeoutMs} ms on ${ex.method} ${ex.path}`
                  : `no answer within ${ex.timeoutMs} ms for ${ex.method} ${ex.path}`,
              }),
            ),
          ex.timeoutMs,
        );
      };
      const headers: Record<string, string> = {
        Accept: 'application/json, */*',
        'User-Agent': userAgent,
        ...creds.headers,
      };
      if (ex.body !== undefined) {
        headers['Content-Type'] = ex.contentType ?? 'application/json';
        headers['Content-Length'] = String(Buffer.byteLength(ex.body));
      }
      ex.signal?.addEventListener('abort', onAbort, { once: true });
      arm();
      const transportModule = secure ? https : http;
      try {
        req = transportModule.request({
          protocol: base.protocol,
          hostname: base.hostname.replace(/^\[|\]$/g, ''),
          port: base.port || (secure ? 443 : 80),
          method: ex.method,
          path: `${basePath}${ex.path}${queryString(ex.query)}`,
          headers,
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
          if (size > maxBody) {
            finish(err({ kind: 'decode', message: `response body over ${maxBody} bytes` }));
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

  const exchange = async (ex: Exchange): Promise<Outcome> => {
    const started = now();
    let creds = await options.credentials({ refresh: false });
    let outcome: Outcome = creds.ok ? await once(ex, creds.value) : creds;
    if (!outcome.ok && outcome.error.kind === 'api' && outcome.error.code === 401) {
      creds = await options.credentials({ refresh: true });
      outcome = creds.ok ? await once(ex, creds.value) : creds;
    }
    observe({
      verb: ex.method,
      code: outcome.ok
        ? String(outcome.value.status)
        : outcome.error.kind === 'api'
          ? String(outcome.error.code)
          : outcome.error.kind,
      durationMs: now() - started,
      stream: ex.onData !== undefined,
    });
    return outcome;
  };

  return {
    async request(method, path, opts = {}) {
      const body =
        opts.body === undefined
          ? undefined
          : typeof opts.body === 'string'
            ? opts.body
            : JSON.stringify(opts.body);
      const r = await exchange({
        method,
        path,
        query: opts.query,
        body,
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
    close() {
      closed = true;
      for (const e of all) e.agent.destroy();
      all.clear();
      current = undefined;
    },
  };
}

function toPem(v: string | Uint8Array): string | Buffer {
  return typeof v === 'string' ? v : Buffer.from(v);
}

/** node:https options for connections to the API server with this TLS material. */
export function tlsOptions(
  tls: TlsMaterial,
): Pick<https.AgentOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername'> {
  return {
    ...(tls.ca !== undefined ? { ca: toPem(tls.ca) } : {}),
    ...(tls.cert !== undefined ? { cert: toPem(tls.cert) } : {}),
    ...(tls.key !== undefined ? { key: toPem(tls.key) } : {}),
    ...(tls.rejectUnauthorized !== undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : {}),
    ...(tls.servername !== undefined ? { servername: tls.servername } : {}),
  };
}
