// The node's kubelet endpoint (HTTPS on loopback, client certificates required): container logs for the
// API server's pods/log proxy, port-forwarding for its pods/portforward proxy (SPDY/3.1, `portforward.k8s.io`),
// and /healthz.

import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { PORT_FORWARD_PROTOCOL, SPDY_UPGRADE } from '../../src/kube/port-forward.ts';
import { SpdySession, type SpdyStream } from '../../src/kube/spdy/session.ts';
import type { Logger } from '../../src/shared/log.ts';
import { type LogEntry, type LogQuery, parseCriLog, renderLog, waitingToStartMessage } from './logs.ts';
import type { ContainerLogInfo } from './pod-worker.ts';

/** Finds a running or finished pod by namespace and name. */
export type PodLookup = (
  namespace: string,
  name: string,
) =>
  | {
      readonly logInfo: (container: string) => ContainerLogInfo | undefined;
      readonly podIP: string | undefined;
    }
  | undefined;

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
          : fail(400, waitingToStartMessage(container ?? '', podName ?? '', info.waitingReason));
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
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    servePortForward(req, socket, head, opts),
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

/**
 * `POST /portForward/{namespace}/{pod}[/{uid}]` upgraded to SPDY/3.1: every pair of `error` and `data` streams with
 * the same request id becomes one TCP connection to the pod's IP at the stream's port. A refused connection is
 * reported on the error stream, as the kubelet does.
 */
function servePortForward(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  opts: KubeletServerOptions,
): void {
  const refuse = (code: number, message: string): void => {
    socket.end(
      `HTTP/1.1 ${code} ${code === 404 ? 'Not Found' : 'Bad Request'}\r\ncontent-type: text/plain\r\n` +
        `content-length: ${Buffer.byteLength(message)}\r\nconnection: close\r\n\r\n${message}`,
    );
  };
  const url = new URL(req.url ?? '/', 'https://node.invalid');
  const m = /^\/portForward\/([^/]+)\/([^/]+)(?:\/[^/]+)?\/?$/.exec(url.pathname);
  if (!m) {
    refuse(404, `the test node does not serve ${url.pathname}`);
    return;
  }
  const [ns, podName] = [m[1], m[2]].map((s) => decodeURIComponent(s ?? ''));
  const pod = opts.lookup(ns ?? '', podName ?? '');
  if (!pod) {
    refuse(404, `pod "${ns}/${podName}" not found on this node`);
    return;
  }
  const podIP = pod.podIP;
  if (podIP === undefined) {
    refuse(400, `pod "${ns}/${podName}" has no IP yet`);
    return;
  }
  const offered = String(req.headers['x-stream-protocol-version'] ?? '')
    .split(',')
    .map((p) => p.trim());
  if (String(req.headers.upgrade ?? '').toLowerCase() !== SPDY_UPGRADE.toLowerCase()) {
    refuse(400, `unsupported upgrade ${String(req.headers.upgrade ?? '')}; this node speaks ${SPDY_UPGRADE}`);
    return;
  }
  if (!offered.includes(PORT_FORWARD_PROTOCOL)) {
    refuse(400, `none of the offered stream protocols (${offered.join(', ')}) is ${PORT_FORWARD_PROTOCOL}`);
    return;
  }
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${SPDY_UPGRADE}\r\n` +
      `X-Stream-Protocol-Version: ${PORT_FORWARD_PROTOCOL}\r\n\r\n`,
  );
  if (head.length > 0) socket.unshift(head);
  const pairs = new Map<string, { error?: SpdyStream; data?: SpdyStream }>();
  const session = new SpdySession(socket, {
    role: 'server',
    onStream: (stream, headers) => {
      const type = headers.get('streamtype');
      const id = headers.get('requestid') ?? '';
      const port = Number(headers.get('port'));
      if ((type !== 'error' && type !== 'data') || !Number.isInteger(port) || port < 1 || port > 65535) {
        stream.reset();
        return;
      }
      stream.reply();
      stream.on('error', () => {});
      const pair = pairs.get(id) ?? {};
      pair[type] = stream;
      pairs.set(id, pair);
      const { error, data } = pair;
      if (error === undefined || data === undefined) return;
      pairs.delete(id);
      error.resume(); // the client sends nothing on it but its end
      const target = connect({ host: podIP, port });
      target.on('connect', () => {
        data.pipe(target);
        target.pipe(data);
      });
      target.on('error', (e) => {
        error.end(`error forwarding port ${port} to pod ${podName}: ${e.message}`);
        data.destroy();
      });
      target.on('close', () => {
        if (!error.writableEnded) error.end();
      });
      data.on('close', () => target.destroy());
    },
  });
  session.onClose((e) => {
    if (e) opts.log.debug('Port-forward session ended', { error: e.message });
  });
}
