// What the run pod's two HTTP servers share (the realtime prompt server, realtime-app.ts; the server-mode API,
// server-app.ts): both are Hono apps served by the controller's one serve adapter (src/server/serve.ts), with the
// bearer check, JSON answers, a bounded body reader and the error handler here.
//
// They are served with `node:http` on Deno too (`nodeHttp`): a response saying `connection: close` then closes its
// connection without the rest of the request body read, on both runtimes (`Deno.serve` would read a body to its end
// first, however long), and a client that goes away aborts its request's signal and cancels its response stream.

import type { Env, Hono } from 'hono';
import { type RunningServer, serveApp } from '../../server/serve.ts';
import { constantTimeEqual } from '../../shared/constant-time.ts';
import type { Logger } from '../../shared/log.ts';

/** How long an idle connection to a pod server is kept (longer than the clients' own idle timeouts). */
export const POD_KEEP_ALIVE_MS = 120_000;

/**
 * Serves a pod server's app on `host:port` (resolves once listening). Idle keep-alive connections stay open longer
 * than any client keeps them (the controller's connection to a pod is reused turn after turn): a server closing an
 * idle socket as the client reuses it fails that request.
 */
export function servePod<E extends Env>(app: Hono<E>, port: number, host: string): Promise<RunningServer> {
  return serveApp(app, port, host, undefined, { keepAliveMs: POD_KEEP_ALIVE_MS, nodeHttp: true });
}

/** True when an `Authorization` header is `Bearer <expected>` (compared in constant time). */
export function bearerMatches(expected: string, header: string | null | undefined): boolean {
  const presented = /^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '';
  return constantTimeEqual(expected, presented);
}

/** An answer with `body` as JSON (and any extra `headers`). */
export function jsonResponse(
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...headers, 'content-type': 'application/json' },
  });
}

/** True when a request says it has a body. */
export function hasBody(request: Request): boolean {
  const length = request.headers.get('content-length');
  return request.headers.has('transfer-encoding') || (length !== null && length.trim() !== '0');
}

/** A request body as read: its text, too large, or nothing (the client went away first). */
export type Body =
  | { readonly kind: 'read'; readonly text: string }
  | { readonly kind: 'tooLarge' }
  | { readonly kind: 'gone' };

/**
 * Reads a request body of at most `max` bytes. A body declared larger is refused before any of it is read; one that
 * turns out larger is refused as soon as it passes `max`, and reading stops there (not cancelled: on Node a cancelled
 * body destroys the connection before the answer is out; the caller answers 413, with `connection: close` when the
 * rest must never be read). A request whose client goes away first is `gone`.
 */
export async function readBody(request: Request, max: number): Promise<Body> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > max) return { kind: 'tooLarge' };
  if (request.body === null) return { kind: 'read', text: '' };
  const reader = request.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { kind: 'read', text: text + decoder.decode() };
      size += value.length;
      if (size > max) return { kind: 'tooLarge' };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { kind: 'gone' };
  } finally {
    reader.releaseLock();
  }
}

/** A binary request body as read: its bytes, too large, or nothing (the client went away first). */
export type BytesBody =
  | { readonly kind: 'read'; readonly bytes: Uint8Array }
  | { readonly kind: 'tooLarge' }
  | { readonly kind: 'gone' };

/** Reads a binary request body of at most `max` bytes, as `readBody` reads text (the same refusals). */
export async function readBytes(request: Request, max: number): Promise<BytesBody> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > max) return { kind: 'tooLarge' };
  if (request.body === null) return { kind: 'read', bytes: new Uint8Array(0) };
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > max) return { kind: 'tooLarge' };
      chunks.push(value);
    }
  } catch {
    return { kind: 'gone' };
  } finally {
    reader.releaseLock();
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return { kind: 'read', bytes };
}

/**
 * The error handler of a pod server: a request whose handling throws is logged (`[supervisor] <what> request
 * failed`, the error's message only) and answered 500 with `internalError`.
 */
export function failedRequest(log: Logger, what: string, internalError: unknown): (error: Error) => Response {
  return (error) => {
    log.warn(`[supervisor] ${what} request failed`, { error: error.message });
    return jsonResponse(500, internalError);
  };
}

/** A response body written piece by piece (see `textStream`). */
export interface TextStream {
  readonly stream: ReadableStream<Uint8Array>;
  /** Queues `text` (UTF-8); nothing once the stream is closed or the client has left. */
  write(text: string): void;
  /** Ends the stream; false when the client had left before (nothing was ended). */
  close(): boolean;
  /** Ends the stream with an error (the server cuts the response off). */
  fail(error: unknown): void;
}

/**
 * A response stream fed as the answer comes. The server writes it to the client as fast as the client reads (waiting
 * for the socket to drain); what the client has not taken yet waits in the stream's queue, so a slow client never
 * holds up the CLI (whose lines also go to stdout and the sinks). A client that leaves cancels it (`onCancel`); later
 * writes are dropped.
 */
export function textStream(onCancel: () => void = () => undefined): TextStream {
  const encoder = new TextEncoder();
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let open = true;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {
      if (!open) return;
      open = false;
      onCancel();
    },
  });
  return {
    stream,
    write(text) {
      if (open) controller?.enqueue(encoder.encode(text));
    },
    close() {
      if (!open) return false;
      open = false;
      controller?.close();
      return true;
    },
    fail(error) {
      if (!open) return;
      open = false;
      controller?.error(error);
    },
  };
}
