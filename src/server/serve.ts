import { serve as serveNode } from '@hono/node-server';
import type { Hono } from 'hono';

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
      onListen?: (addr: { port: number }) => void;
      signal?: AbortSignal;
    },
    handler: (request: Request) => Response | Promise<Response>,
  ): { finished: Promise<void>; addr: { port: number } };
}

/**
 * Serves `app` on `hostname:port` with `Deno.serve` on Deno and `@hono/node-server` on Node.
 * Port 0 picks a free port; the chosen one is in the result.
 */
export async function serveApp(app: Hono, port: number, hostname = '0.0.0.0'): Promise<RunningServer> {
  const deno = (globalThis as { Deno?: DenoServeApi }).Deno;
  if (deno && typeof deno.serve === 'function') {
    const abort = new AbortController();
    const server = deno.serve({ port, hostname, signal: abort.signal, onListen: () => {} }, app.fetch);
    return {
      port: server.addr.port,
      close: async () => {
        abort.abort();
        await server.finished;
      },
    };
  }
  return new Promise((resolve, reject) => {
    const server = serveNode({ fetch: app.fetch, port, hostname }, (info) => {
      resolve({
        port: info.port,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
    server.once('error', reject);
  });
}
