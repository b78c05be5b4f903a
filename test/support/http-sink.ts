// A recording HTTP sink for end-to-end tests: a server on 127.0.0.1 (port 0) that keeps every request it receives
// (method, path, headers, body) in arrival order and answers POSTs with a chosen status (default 200). Run pods on
// the test node share the host's loopback, so a run's http sink can name `http://127.0.0.1:<port>/...`.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as v from 'valibot';
import { pollUntil } from './poll.ts';

/** Largest request body the sink records; a larger one is answered 413 and recorded truncated. */
export const MAX_SINK_BODY_BYTES = 8 * 1024 * 1024;

/** One request the sink received. */
export interface RecordedRequest {
  /** 0-based arrival index (order in which bodies were complete). */
  readonly seq: number;
  readonly method: string;
  /** Path and query as sent. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The body as UTF-8 text. */
  readonly body: string;
  /** The status the sink answered. */
  readonly status: number;
}

/** What a request looks like to `respond` before it is answered. */
export type PendingRequest = Omit<RecordedRequest, 'status'>;

export interface HttpSinkOptions {
  /**
   * Chooses the status of each POST (default 200; a non-POST is always answered 405). Lets a test make a sink fail
   * some or all deliveries.
   */
  readonly respond?: (req: PendingRequest) => number;
}

/**
 * The `source` of a pod event envelope (docs/design/reference-behaviour.md#sinks-and-the-envelope): empty ids are
 * omitted.
 */
export const EnvelopeSourceSchema = v.strictObject({
  agent: v.optional(v.string()),
  station: v.optional(v.string()),
  task: v.optional(v.string()),
  pod: v.optional(v.string()),
  namespace: v.optional(v.string()),
});

/** One delivered pod event: exactly `{source, event}`, nothing else. */
export const EnvelopeSchema = v.strictObject({ source: EnvelopeSourceSchema, event: v.unknown() });
export type Envelope = v.InferOutput<typeof EnvelopeSchema>;

/** A running recording sink; `close()` it at the end of the test. */
export class HttpSink {
  readonly port: number;
  /** Every request received so far, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  readonly #server: Server;

  constructor(server: Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  /** The URL of `path` on this sink (`http://127.0.0.1:<port><path>`). */
  url(path = '/'): string {
    return `http://127.0.0.1:${this.port}${path.startsWith('/') ? path : `/${path}`}`;
  }

  /** The POSTs received on `path` (every POST when omitted), in arrival order. */
  posts(path?: string): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && (path === undefined || r.path === path));
  }

  /**
   * The envelopes POSTed to `path` (every POST when omitted), in arrival order. Throws, naming the request, when a
   * body is not JSON or not exactly a `{source, event}` envelope.
   */
  envelopes(path?: string): Envelope[] {
    return this.posts(path).map((r) => {
      let json: unknown;
      try {
        json = JSON.parse(r.body);
      } catch {
        throw new Error(`sink request #${r.seq} (${r.path}) is not JSON: ${r.body.slice(0, 200)}`);
      }
      const parsed = v.safeParse(EnvelopeSchema, json);
      if (!parsed.success) {
        throw new Error(
          `sink request #${r.seq} (${r.path}) is not a {source, event} envelope: ${v.summarize(parsed.issues)}; body ${r.body.slice(0, 200)}`,
        );
      }
      return parsed.output;
    });
  }

  /**
   * Polls until `check(requests)` returns something other than undefined and returns it; the request count and
   * the last bodies are in the timeout error.
   */
  waitFor<T>(
    check: (requests: readonly RecordedRequest[]) => T | undefined,
    description: string,
    timeoutMs = 15_000,
  ): Promise<T> {
    return pollUntil(
      (observe) => {
        observe({ requests: this.requests.length, last: this.requests.slice(-3).map((r) => r.body) });
        return check(this.requests);
      },
      { timeoutMs, intervalMs: 50, description: `sink: ${description}` },
    );
  }

  /** A readable listing of every request, for failure reports. */
  dump(): string {
    return this.requests.map((r) => `#${r.seq} ${r.method} ${r.path} -> ${r.status}: ${r.body}`).join('\n');
  }

  /** Stops listening and drops open connections. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}

/** Starts a recording sink on 127.0.0.1 with an OS-chosen port. */
export async function startHttpSink(opts: HttpSinkOptions = {}): Promise<HttpSink> {
  let seq = 0;
  let sink: HttpSink | undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_SINK_BODY_BYTES) {
        tooLarge = true;
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      const pending: PendingRequest = {
        seq: seq++,
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      let status = 200;
      if (pending.method !== 'POST') status = 405;
      else if (tooLarge) status = 413;
      else if (opts.respond) status = opts.respond(pending);
      sink?.requests.push({ ...pending, status });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status < 300 ? '{"ok":true}' : '{"ok":false}');
    });
    req.on('error', () => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  sink = new HttpSink(server, (server.address() as AddressInfo).port);
  return sink;
}
