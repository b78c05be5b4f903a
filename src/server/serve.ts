import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { serve as serveNode } from '@hono/node-server';
import type { Env, Hono } from 'hono';

/**
 * A listening server. `close` stops accepting (idle keep-alive connections are closed) and resolves once every
 * connection is closed. A Node server keeps a connection whose answer ends after `close` open until the client
 * closes it (or it says `connection: close`): `closeIdleConnections` closes the ones idle now, `closeConnections`
 * cuts every one still open. Both are no-ops on `Deno.serve`, whose close ends each connection once its answer is out.
 */
export interface RunningServer {
  readonly port: number;
  close(): Promise<void>;
  closeIdleConnections(): void;
  closeConnections(): void;
}

/** PEM certificate and key files to serve over TLS. */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** PEM CA bundle: clients may present a certificate it signed (Node only; verified, never required). */
  readonly clientCa?: string | undefined;
}

/** How to serve, besides where. */
export interface ServeOptions {
  /** Idle keep-alive timeout of a Node server, ms (default 65 s). */
  readonly keepAliveMs?: number;
  /**
   * Serve with `node:http` on Deno too (its Node compatibility), not `Deno.serve`. A response saying
   * `connection: close` then closes its connection without reading what is left of the request body, on both
   * runtimes; `Deno.serve` reads (and drops) a request body to its end first, however long it is (the run pod's
   * servers refuse oversized and unauthenticated bodies without reading them).
   */
  readonly nodeHttp?: boolean;
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
 * Serves `app` on `hostname:port` with `Deno.serve` on Deno (unless `options.nodeHttp`) and `@hono/node-server` on
 * Node; over TLS when `tls` names a PEM certificate and key. Port 0 picks a free port; the chosen one is in the result.
 * The controller's servers and the run pod's (realtime prompts, server mode) are served by this one function.
 */
export async function serveApp<E extends Env>(
  app: Hono<E>,
  port: number,
  hostname = '0.0.0.0',
  tls?: TlsFiles,
  options: ServeOptions = {},
): Promise<RunningServer> {
  const pem =
    tls === undefined
      ? undefined
      : { cert: readFileSync(tls.certFile, 'utf8'), key: readFileSync(tls.keyFile, 'utf8') };
  const deno = (globalThis as { Deno?: DenoServeApi }).Deno;
  if (deno && typeof deno.serve === 'function' && options.nodeHttp !== true) {
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
      closeIdleConnections: () => undefined,
      closeConnections: () => undefined,
    };
  }
  return new Promise((resolve, reject) => {
    const clientAuth =
      tls?.clientCa === undefined ? {} : { requestCert: true, rejectUnauthorized: false, ca: tls.clientCa };
    const secure =
      pem === undefined ? {} : { createServer: createHttpsServer, serverOptions: { ...pem, ...clientAuth } };
    const server = serveNode({ fetch: app.fetch, port, hostname, ...secure }, (info) => {
      resolve({
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Node closes idle keep-alive connections on close; said here for runtimes whose compatibility may not.
            if ('closeIdleConnections' in server) server.closeIdleConnections();
          }),
        closeIdleConnections: () => {
          if ('closeIdleConnections' in server) server.closeIdleConnections();
        },
        closeConnections: () => {
          if ('closeAllConnections' in server) server.closeAllConnections();
        },
      });
    });
    server.once('error', reject);
    // Idle keep-alive connections outlive the clients' own idle timeouts (Node's default 5 s closes sockets that a
    // client is about to reuse: its next request fails). HTTP/1 servers only.
    if ('keepAliveTimeout' in server) {
      const keepAlive = options.keepAliveMs ?? KEEP_ALIVE_MS;
      server.keepAliveTimeout = keepAlive;
      server.headersTimeout = keepAlive + 1000;
    }
  });
}

/** Idle keep-alive timeout of the Node servers. */
const KEEP_ALIVE_MS = 65_000;
