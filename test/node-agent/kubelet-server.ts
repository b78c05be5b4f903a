// The node's kubelet endpoint (HTTPS on loopback, client certificates required): container logs for the
// API server's pods/log proxy, and /healthz.
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../../src/shared/log.ts';
import { type LogEntry, type LogQuery, parseCriLog, renderLog } from './logs.ts';
import type { ContainerLogInfo } from './pod-worker.ts';

/** Finds a running or finished pod by namespace and name. */
export type PodLookup = (
  namespace: string,
  name: string,
) => { readonly logInfo: (container: string) => ContainerLogInfo | undefined } | undefined;

export interface KubeletServerOptions {
  readonly host: string;
  readonly port: number;
  readonly certFile: string;
  readonly keyFile: string;
  /** CA that client certificates (the API server's kubelet client cert) must chain to. */
  readonly clientCaFile: string;
  readonly lookup: PodLookup;
  readonly log: Logger;
}

function intParam(params: URLSearchParams, name: string): number | undefined | 'bad' {
  const raw = params.get(name);
  if (raw === null || raw === '') return undefined;
  return /^\d+$/.test(raw) ? Number(raw) : 'bad';
}

function readEntries(file: string): LogEntry[] {
  try {
    return parseCriLog(readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
}

/** Starts the kubelet HTTPS server; resolves once it listens. */
export async function startKubeletServer(opts: KubeletServerOptions): Promise<Server> {
  const server = createServer(
    {
      cert: readFileSync(opts.certFile),
      key: readFileSync(opts.keyFile),
      ca: readFileSync(opts.clientCaFile),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const url = new URL(req.url ?? '/', 'https://node.invalid');
      const fail = (code: number, message: string): void => {
        res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(message);
      };
      if (req.method !== 'GET') return fail(405, 'method not allowed');
      if (url.pathname === '/healthz') return fail(200, 'ok');
      const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)\/?$/.exec(url.pathname);
      if (!m) return fail(404, `the test node does not serve ${url.pathname}`);
      const [ns, podName, container] = [m[1], m[2], m[3]].map((s) => decodeURIComponent(s ?? ''));
      const pod = opts.lookup(ns ?? '', podName ?? '');
      if (!pod) return fail(404, `pod "${ns}/${podName}" not found on this node`);
      const info = pod.logInfo(container ?? '');
      if (!info) return fail(400, `container ${container} is not valid for pod ${podName}`);
      const params = url.searchParams;
      const tailLines = intParam(params, 'tailLines');
      const limitBytes = intParam(params, 'limitBytes');
      const sinceSeconds = intParam(params, 'sinceSeconds');
      if (tailLines === 'bad' || limitBytes === 'bad' || sinceSeconds === 'bad') {
        return fail(400, 'tailLines, limitBytes and sinceSeconds must be non-negative integers');
      }
      const sinceTime = params.get('sinceTime');
      const sinceMs =
        sinceSeconds !== undefined
          ? Date.now() - sinceSeconds * 1000
          : sinceTime
            ? Date.parse(sinceTime)
            : undefined;
      const previous = params.get('previous') === 'true';
      const follow = params.get('follow') === 'true';
      const file = previous ? info.files.at(-2) : info.files.at(-1);
      if (!file) {
        return previous
          ? fail(400, `previous terminated container "${container}" in pod "${podName}" not found`)
          : fail(
              400,
              `container "${container}" in pod "${podName}" is waiting to start: ${info.waitingReason ?? 'ContainerCreating'}`,
            );
      }
      const query: LogQuery = {
        ...(tailLines !== undefined ? { tailLines } : {}),
        ...(limitBytes !== undefined ? { limitBytes } : {}),
        ...(sinceMs !== undefined && !Number.isNaN(sinceMs) ? { sinceMs } : {}),
        timestamps: params.get('timestamps') === 'true',
      };
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      const entries = readEntries(file);
      const first = renderLog(entries, query);
      if (!follow || previous) {
        res.end(first);
        return;
      }
      void followLog(
        file,
        entries.length,
        first,
        query,
        () => pod.logInfo(container ?? '')?.running ?? false,
        res,
      );
    },
  );
  server.on('tlsClientError', (error) => opts.log.debug('Kubelet TLS client error', { error }));
  await new Promise<void>((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolvePromise();
    });
  });
  return server;
}

/** Writes `first`, then streams records appended after the first `seen`, until the container stops. */
async function followLog(
  file: string,
  seen: number,
  first: Buffer,
  query: LogQuery,
  running: () => boolean,
  res: ServerResponse,
): Promise<void> {
  res.write(first);
  const { tailLines: _ignored, ...rest } = query;
  let bytes = first.length;
  let count = seen;
  let closed = false;
  res.on('close', () => {
    closed = true;
  });
  for (;;) {
    const stillRunning = running();
    const entries = readEntries(file);
    if (entries.length > count) {
      let chunk = renderLog(entries.slice(count), rest);
      if (query.limitBytes !== undefined) chunk = chunk.subarray(0, Math.max(0, query.limitBytes - bytes));
      res.write(chunk);
      bytes += chunk.length;
      count = entries.length;
    }
    if (closed || !stillRunning || (query.limitBytes !== undefined && bytes >= query.limitBytes)) break;
    await delay(200);
  }
  res.end();
}
