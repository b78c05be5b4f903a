import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { serve as serveNode } from '@hono/node-server';
import type { Env, Hono } from 'hono';

/** A listening server; `close` stops accepting and resolves when it is closed. */
export interface RunningServer {
  readonly port: number;
  close(): Promise<void>;
}

interface DenoServeApi {
  serve(
    options: {
      port: number;
      hostname: string;
      cert?: string;
      key?: string;
      onListen?: (addr: { port: number }) => void;
      signal?: AbortSignal;
    },
    handler: (request: Request) => Response | Promise<Response>,
  ): { finished: Promise<void>; addr: { port: number } };
}

/**
 * Serves `app` on `hostname:port` with `Deno.serve` on Deno and `@hono/node-server` on Node; over TLS when `tls`
 * names a PEM certificate and key. Port 0 picks a free port; the chosen one is in the result.
 */
export async function serveApp<E extends Env>(
  app: Hono<E>,
  port: number,
  hostname = '0.0.0.0',
  tls?: {
    readonly certFile: string;
    readonly keyFile: string;
    /** PEM CA bundle: clients may present a certificate it signed (Node only; verified, never required). */
    readonly clientCa?: string | undefined;
  },
): Promise<RunningServer> {
  const pem =
    tls === undefined
      ? undefined
      : { cert: readFileSync(tls.certFile, 'utf8'), key: readFileSync(tls.keyFile, 'utf8') };
  const deno = (globalThis as { Deno?: DenoServeApi }).Deno;
  if (deno && typeof deno.serve === 'function') {
    const abort = new AbortController();
    const server = deno.serve(
      { port, hostname, signal: abort.signal, onListen: () => {}, ...(pem ?? {}) },
      app.fetch,
    );
    return {
      port: server.addr.port,
      close: async () => {
        abort.abort();
        await server.finished;
      },
    };
  }
  return new Promise((resolve, reject) => {
    const clientAuth =
      tls?.clientCa === undefined ? {} : { requestCert: true, rejectUnauthorized: false, ca: tls.clientCa };
    const options =
      pem === undefined ? {} : { createServer: createHttpsServer, serverOptions: { ...pem, ...clientAuth } };
    const server = serveNode({ fetch: app.fetch, port, hostname, ...options }, (info) => {
      resolve({
        port: info.port,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
    server.once('error', reject);
    // Idle keep-alive connections outlive the clients' own idle timeouts (Node's default 5 s closes sockets that a
    // client is about to reuse: its next request fails). HTTP/1 servers only.
    if ('keepAliveTimeout' in server) {
      server.keepAliveTimeout = KEEP_ALIVE_MS;
      server.headersTimeout = KEEP_ALIVE_MS + 1000;
    }
  });
}

/** Idle keep-alive timeout of the Node servers. */
const KEEP_ALIVE_MS = 65_000;
