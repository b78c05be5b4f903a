import { Agent, request as httpsRequest } from 'node:https';
import * as v from 'valibot';
import type { ClusterAccess } from '../test/support/index.ts';

/** What a benchmark write returns: the HTTP status and, for an error, a short reason. */
export type CallResult =
  | { readonly ok: true; readonly body: unknown }
  | { readonly ok: false; readonly error: string };

const StatusBody = v.looseObject({ reason: v.optional(v.string()), message: v.optional(v.string()) });

/**
 * The hot-path client of the benchmark: one keep-alive HTTPS agent with a socket per in-flight request (so the
 * client never queues requests the API server could take), JSON bodies, bounded time per call. Unlike the test
 * support client it never throws for an HTTP status: it returns a CallResult.
 */
export class BenchHttp {
  readonly #access: ClusterAccess;
  readonly #agent: Agent;
  readonly #timeoutMs: number;

  constructor(access: ClusterAccess, sockets: number, timeoutMs = 60_000) {
    this.#access = access;
    this.#timeoutMs = timeoutMs;
    this.#agent = new Agent({
      keepAlive: true,
      maxSockets: sockets,
      ...(access.ca !== undefined ? { ca: access.ca } : {}),
      ...(access.cert !== undefined ? { cert: access.cert } : {}),
      ...(access.key !== undefined ? { key: access.key } : {}),
      rejectUnauthorized: !access.insecure,
    });
  }

  /** Closes the keep-alive sockets. */
  close(): void {
    this.#agent.destroy();
  }

  /** Sends one JSON request; resolves with the parsed body on 2xx, else with a one-line error. Never rejects. */
  call(method: string, path: string, body: unknown, contentType = 'application/json'): Promise<CallResult> {
    const payload = JSON.stringify(body);
    const headers: Record<string, string> = {
      accept: 'application/json',
      'content-type': contentType,
      'content-length': String(Buffer.byteLength(payload)),
    };
    if (this.#access.token !== undefined) headers.authorization = `Bearer ${this.#access.token}`;
    return new Promise((resolve) => {
      const req = httpsRequest(new URL(path, this.#access.server), { method, headers, agent: this.#agent });
      req.setTimeout(this.#timeoutMs, () => req.destroy(new Error(`timed out after ${this.#timeoutMs} ms`)));
      req.on('error', (error) => resolve({ ok: false, error: `${method} ${path}: ${error.message}` }));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (error) => resolve({ ok: false, error: `${method} ${path}: ${error.message}` }));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            resolve({ ok: true, body: parsed });
            return;
          }
          const s = v.safeParse(StatusBody, parsed);
          const why = s.success ? (s.output.reason ?? s.output.message ?? '') : text.slice(0, 120);
          resolve({
            ok: false,
            error: `${method} ${path.replace(/\/[^/]+$/, '/…')}: HTTP ${status} ${why}`.trim(),
          });
        });
      });
      req.end(payload);
    });
  }
}

/**
 * Runs `task(i)` for i in [0, count) with at most `concurrency` tasks in flight, starting them in index order.
 * Resolves when all have settled; a task that rejects does not stop the others (its error is returned by index).
 * `signal` stops starting new tasks.
 */
export async function runPool(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
  signal?: AbortSignal,
): Promise<Map<number, unknown>> {
  const errors = new Map<number, unknown>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count && !signal?.aborted) {
      const i = next++;
      try {
        await task(i);
      } catch (error) {
        errors.set(i, error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, count)) }, worker));
  return errors;
}
