// Raw API-server figures for choices the controller could make (issue 15 §3–4): how to read a large collection at
// start (paginated LIST at the controller's page size or larger, one unpaginated LIST, or a streaming list: a watch
// with sendInitialEvents), and HTTP/1.1 keep-alive against HTTP/2 for many small requests in flight. No controller
// is involved; every figure includes reading and JSON-decoding the whole answer. Prints figures; asserts nothing.
import { type ClientHttp2Session, constants as h2, connect as http2Connect } from 'node:http2';
import { Agent, request as httpsRequest } from 'node:https';
import type { ClusterAccess } from '../test/support/index.ts';
import { runPool } from './http.ts';
import { type Summary, summarize } from './stats.ts';

const now = (): number => performance.timeOrigin + performance.now();

/** One answer: status and body text. */
interface Answer {
  readonly status: number;
  readonly body: string;
}

/** A transport to measure: one request at a time per call, any number of calls in flight. */
export interface ApiClient {
  readonly name: string;
  request(method: string, path: string, body?: unknown): Promise<Answer>;
  /** Streams the answer's lines to `onLine` until it returns true (then the request is cancelled) or the answer ends. */
  stream(path: string, onLine: (line: string) => boolean): Promise<void>;
  close(): void;
}

function headersOf(access: ClusterAccess, body: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (access.token !== undefined) headers.authorization = `Bearer ${access.token}`;
  return headers;
}

function tlsOf(access: ClusterAccess) {
  return {
    ...(access.ca !== undefined ? { ca: access.ca } : {}),
    ...(access.cert !== undefined ? { cert: access.cert } : {}),
    ...(access.key !== undefined ? { key: access.key } : {}),
    rejectUnauthorized: !access.insecure,
  };
}

/** Splits a byte stream into lines, calling `onLine` for each complete one; returns whether to stop. */
function lineSplitter(onLine: (line: string) => boolean): (chunk: Buffer) => boolean {
  let rest = '';
  return (chunk) => {
    rest += chunk.toString('utf8');
    let nl = rest.indexOf('\n');
    while (nl >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      if (line !== '' && onLine(line)) return true;
      nl = rest.indexOf('\n');
    }
    return false;
  };
}

/** HTTP/1.1 with a keep-alive pool of `sockets` connections (what the controller's transport does). */
export function http1Client(access: ClusterAccess, sockets: number): ApiClient {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets, ...tlsOf(access) });
  return {
    name: `HTTP/1.1 keep-alive, ${sockets} sockets`,
    request: (method, path, body) =>
      new Promise((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const req = httpsRequest(new URL(path, access.server), {
          method,
          headers: headersOf(access, payload),
          agent,
        });
        req.on('error', reject);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
          );
        });
        req.end(payload);
      }),
    stream: (path, onLine) =>
      new Promise((resolve, reject) => {
        const req = httpsRequest(new URL(path, access.server), {
          headers: headersOf(access, undefined),
          agent,
        });
        req.on('error', reject);
        req.on('response', (res) => {
          const feed = lineSplitter(onLine);
          res.on('data', (c: Buffer) => {
            if (feed(c)) {
              req.destroy();
              resolve();
            }
          });
          res.on('error', reject);
          res.on('end', () => resolve());
        });
        req.end();
      }),
    close: () => agent.destroy(),
  };
}

/** HTTP/2: one TLS connection, every request a stream on it. */
export function http2Client(access: ClusterAccess): ApiClient {
  let session: ClientHttp2Session | undefined;
  const open = (): ClientHttp2Session => {
    if (session === undefined || session.closed || session.destroyed) {
      session = http2Connect(access.server.origin, tlsOf(access));
      session.on('error', () => undefined);
    }
    return session;
  };
  const start = (method: string, path: string, payload: string | undefined) =>
    open().request({
      [h2.HTTP2_HEADER_METHOD]: method,
      [h2.HTTP2_HEADER_PATH]: path,
      ...headersOf(access, payload),
    });
  return {
    name: 'HTTP/2, one connection',
    request: (method, path, body) =>
      new Promise((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const req = start(method, path, payload);
        let status = 0;
        const chunks: Buffer[] = [];
        req.on('response', (headers) => {
          status = Number(headers[h2.HTTP2_HEADER_STATUS] ?? 0);
        });
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('error', reject);
        req.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString('utf8') }));
        req.end(payload);
      }),
    stream: (path, onLine) =>
      new Promise((resolve, reject) => {
        const req = start('GET', path, undefined);
        const feed = lineSplitter(onLine);
        req.on('data', (c: Buffer) => {
          if (feed(c)) {
            req.close(h2.NGHTTP2_CANCEL);
            resolve();
          }
        });
        req.on('error', reject);
        req.on('end', () => resolve());
        req.end();
      }),
    close: () => session?.close(),
  };
}

/** Reads the whole collection `path` with pages of `limit` (0: one answer); returns the items read. */
export async function listAll(client: ApiClient, path: string, limit: number): Promise<number> {
  let items = 0;
  let cont: string | undefined;
  do {
    const q = new URLSearchParams();
    if (limit > 0) q.set('limit', String(limit));
    if (cont !== undefined) q.set('continue', cont);
    const query = q.toString();
    const a = await client.request('GET', query === '' ? path : `${path}?${query}`);
    if (a.status !== 200) throw new Error(`LIST ${path}: HTTP ${a.status}`);
    const page = JSON.parse(a.body) as { items?: unknown[]; metadata?: { continue?: string } };
    items += page.items?.length ?? 0;
    cont = page.metadata?.continue || undefined;
  } while (cont !== undefined);
  return items;
}

/**
 * Reads the whole collection as a streaming list: a watch with `sendInitialEvents=true` (the API server's WatchList,
 * served from its watch cache) until the bookmark annotated `k8s.io/initial-events-end`; returns the objects read,
 * or throws when the API server refuses it (the feature gate is off) or ends the stream before that bookmark.
 */
export async function streamingList(client: ApiClient, path: string): Promise<number> {
  let items = 0;
  let ended = false;
  let refused: string | undefined;
  const q = 'watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true';
  await client.stream(`${path}?${q}`, (line) => {
    const e = JSON.parse(line) as {
      type?: string;
      object?: { kind?: string; message?: string; metadata?: { annotations?: Record<string, string> } };
    };
    if (e.type === 'ADDED') items++;
    else if (
      e.type === 'BOOKMARK' &&
      e.object?.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true'
    )
      ended = true;
    else if (e.type === 'ERROR' || e.object?.kind === 'Status')
      refused = e.object?.message ?? line.slice(0, 200);
    return ended || refused !== undefined;
  });
  if (refused !== undefined) throw new Error(`streaming list refused: ${refused}`);
  if (!ended) throw new Error('streaming list ended before the initial-events-end bookmark');
  return items;
}

/** Times `read` `times` times; the item count of the last read is returned with the summary. */
export async function timeReads(
  times: number,
  read: () => Promise<number>,
): Promise<{ readonly ms: Summary; readonly items: number }> {
  const samples: number[] = [];
  let items = 0;
  for (let k = 0; k < times; k++) {
    const t = now();
    items = await read();
    samples.push(now() - t);
  }
  return { ms: summarize(samples), items };
}

/** `count` requests made by `make(i)` with `concurrency` in flight: latency summary and requests per second. */
export async function timeRequests(
  count: number,
  concurrency: number,
  make: (i: number) => Promise<Answer>,
): Promise<{ readonly ms: Summary; readonly perSecond: number; readonly failed: number }> {
  const samples: number[] = [];
  let failed = 0;
  const t0 = now();
  await runPool(count, concurrency, async (i) => {
    const t = now();
    const a = await make(i).catch(() => ({ status: 0, body: '' }));
    if (a.status >= 200 && a.status < 300) samples.push(now() - t);
    else failed++;
  });
  const seconds = (now() - t0) / 1000;
  return { ms: summarize(samples), perSecond: samples.length / seconds, failed };
}

/** The figures of {@link measureApiPaths}. */
export interface ApiPathsReport {
  readonly items: number;
  /** Reading the whole collection, by method (ms per read, 3 reads each). */
  readonly reads: ReadonlyArray<{ readonly method: string; readonly ms: Summary; readonly error?: string }>;
  /** Small requests with `concurrency` in flight, by kind and transport. */
  readonly requests: ReadonlyArray<{
    readonly what: string;
    readonly transport: string;
    readonly ms: Summary;
    readonly perSecond: number;
    readonly failed: number;
  }>;
}

/**
 * Measures the read and request paths against `collection` (a namespaced collection path holding the objects to
 * read, e.g. the scenario's Agents; `names` are some of them) and writes ConfigMaps into `configMaps` (the caller
 * deletes the namespace). HTTP/1.1 uses `concurrency` sockets, as the controller's transport does.
 */
export async function measureApiPaths(input: {
  readonly access: ClusterAccess;
  readonly collection: string;
  readonly names: readonly string[];
  readonly configMaps: string;
  readonly requests: number;
  readonly concurrency: number;
  readonly info: (text: string) => void;
}): Promise<ApiPathsReport> {
  const { access, collection, names, configMaps, requests, concurrency, info } = input;
  const h1 = http1Client(access, concurrency);
  const h2c = http2Client(access);
  const reads: Array<ApiPathsReport['reads'][number]> = [];
  const out: Array<ApiPathsReport['requests'][number]> = [];
  let items = 0;
  try {
    const readBy = async (method: string, read: () => Promise<number>): Promise<void> => {
      info(`API paths: ${method}`);
      try {
        const r = await timeReads(3, read);
        items = Math.max(items, r.items);
        reads.push({ method, ms: r.ms });
      } catch (error) {
        reads.push({
          method,
          ms: summarize([]),
          error: error instanceof Error ? error.message : String(error),
        });
      }
    };
    await readBy('paginated LIST, limit 500 (the controller), HTTP/1.1', () => listAll(h1, collection, 500));
    await readBy('paginated LIST, limit 2000, HTTP/1.1', () => listAll(h1, collection, 2000));
    await readBy('one LIST (no limit), HTTP/1.1', () => listAll(h1, collection, 0));
    await readBy('paginated LIST, limit 500, HTTP/2', () => listAll(h2c, collection, 500));
    await readBy('streaming list (watch, sendInitialEvents), HTTP/1.1', () => streamingList(h1, collection));
    for (const client of [h1, h2c]) {
      info(`API paths: ${requests} GETs by name, ${client.name}`);
      const g = await timeRequests(requests, concurrency, (i) =>
        client.request('GET', `${collection}/${names[i % names.length] ?? ''}`),
      );
      out.push({ what: 'GET one Agent', transport: client.name, ...g });
    }
    for (const [k, client] of [h1, h2c].entries()) {
      info(`API paths: ${requests} ConfigMap POSTs, ${client.name}`);
      const p = await timeRequests(requests, concurrency, (i) =>
        client.request('POST', configMaps, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `api-paths-${k}-${i}` },
          data: { n: String(i) },
        }),
      );
      out.push({ what: 'POST a ConfigMap', transport: client.name, ...p });
    }
  } finally {
    h1.close();
    h2c.close();
  }
  return { items, reads, requests: out };
}

const fmt = (x: number): string => (Number.isFinite(x) ? x.toFixed(0) : 'n/a');
const msOf = (s: Summary): string => (s.count === 0 ? 'n/a' : `${fmt(s.p50)} / ${fmt(s.p99)} ms`);

/** The API paths figures as two Markdown tables. */
export function formatApiPaths(r: ApiPathsReport): string {
  const lines = [
    `### Reading all ${r.items} objects (3 reads each, p50 / p99, JSON decoded)`,
    '',
    '| method | time | note |',
    '|---|---|---|',
    ...r.reads.map((x) => `| ${x.method} | ${msOf(x.ms)} | ${x.error ?? ''} |`),
    '',
    '### Small requests in flight (p50 / p99, requests per second)',
    '',
    '| request | transport | latency | per second | failed |',
    '|---|---|---|---|---|',
    ...r.requests.map(
      (x) => `| ${x.what} | ${x.transport} | ${msOf(x.ms)} | ${x.perSecond.toFixed(1)} | ${x.failed} |`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}
