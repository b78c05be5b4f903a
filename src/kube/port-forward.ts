// Port-forwarding to a pod through the API server, as `kubectl port-forward` does it: POST the pod's `portforward`
// subresource asking to upgrade to SPDY/3.1 with the `portforward.k8s.io` protocol; the API server proxies the
// upgraded connection to the node's kubelet. Each forwarded connection is a pair of streams, `error` and `data`,
// sharing a request id; the kubelet writes a failure (e.g. nothing listening on the port) to the error stream.
// Why SPDY and not the API server's WebSocket port-forward (which is this same SPDY tunnelled through WebSocket):
// docs/design/kubernetes.md#port-forward.
import { Buffer } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Result } from '../shared/result.ts';
import { err, ok } from '../shared/result.ts';
import type { ClusterConfig } from './config.ts';
import { apiErrorFromResponse, type KubeError } from './errors.ts';
import { SpdySession } from './spdy/session.ts';
import { tlsOptions } from './tls.ts';

export const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';
export const SPDY_UPGRADE = 'SPDY/3.1';

/** An open port-forward session to one pod: connections to its ports, until closed. */
export interface PortForward {
  /** A connection to `port` in the pod. It errors with the kubelet's message when the pod refuses it. */
  connect(port: number): Duplex;
  /** Serves `port` on 127.0.0.1 (an ephemeral local port unless given); each local connection is forwarded. */
  listen(port: number, localPort?: number): Promise<{ readonly port: number; close(): void }>;
  /** Called once when the session ends (the API server or kubelet closed it, or `close()`). */
  onClose(listener: (error?: Error) => void): void;
  close(): void;
}

export interface PortForwardTarget {
  readonly namespace: string;
  readonly pod: string;
  readonly timeoutMs?: number;
}

/** Opens a port-forward session to a pod with the cluster's credentials; `api` errors carry the server's Status. */
export async function openPortForward(
  cluster: ClusterConfig,
  target: PortForwardTarget,
): Promise<Result<PortForward, KubeError>> {
  const creds = await cluster.credentials({ refresh: false });
  if (!creds.ok) return creds;
  const base = new URL(cluster.server);
  const path = `${base.pathname.replace(/\/+$/, '')}/api/v1/namespaces/${encodeURIComponent(target.namespace)}/pods/${encodeURIComponent(target.pod)}/portforward`;
  const url = new URL(path, base);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const timeoutMs = target.timeoutMs ?? 30_000;
  return await new Promise<Result<PortForward, KubeError>>((resolve) => {
    let settled = false;
    const settle = (result: Result<PortForward, KubeError>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const req = send(url, {
      method: 'POST',
      headers: {
        ...creds.value.headers,
        connection: 'Upgrade',
        upgrade: SPDY_UPGRADE,
        'x-stream-protocol-version': PORT_FORWARD_PROTOCOL,
        'content-length': '0',
      },
      ...(url.protocol === 'https:' ? tlsOptions(creds.value.tls) : {}),
    });
    const timer = setTimeout(() => {
      req.destroy();
      settle(err({ kind: 'timeout', idle: false, message: `no port-forward answer within ${timeoutMs} ms` }));
    }, timeoutMs);
    req.on('upgrade', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      const protocol = String(res.headers['x-stream-protocol-version'] ?? '');
      if (protocol !== PORT_FORWARD_PROTOCOL) {
        socket.destroy();
        settle(
          err({
            kind: 'decode',
            message: `the server agreed to protocol "${protocol}", not ${PORT_FORWARD_PROTOCOL}`,
          }),
        );
        return;
      }
      socket.setNoDelay(true);
      if (head.length > 0) socket.unshift(head);
      settle(ok(portForwardOn(new SpdySession(socket, { role: 'client' }))));
    });
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        settle(err(apiErrorFromResponse(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')))),
      );
      res.on('error', (e) => settle(err({ kind: 'network', message: e.message })));
    });
    req.on('error', (e) => settle(err({ kind: 'network', message: e.message })));
    req.end();
  });
}

/** The client side of `portforward.k8s.io` on an upgraded SPDY session. */
export function portForwardOn(session: SpdySession): PortForward {
  let requestId = 0;
  const connect = (port: number): Duplex => {
    const headers = { port: String(port), requestid: String(requestId++) };
    const errors = session.open({ streamtype: 'error', ...headers });
    errors.end(); // we never write to it; the kubelet may
    const data = session.open({ streamtype: 'data', ...headers });
    let message = '';
    errors.on('data', (chunk: Buffer) => {
      message += chunk.toString('utf8');
    });
    errors.on('error', () => {});
    errors.on('end', () => {
      if (message.trim() !== '') data.destroy(new Error(message.trim()));
    });
    return data;
  };
  return {
    connect,
    listen: (port, localPort = 0) =>
      new Promise((resolve, reject) => {
        if (session.closed) {
          reject(new Error('the port-forward session is closed'));
          return;
        }
        const server = createServer({ allowHalfOpen: true }, (local) => {
          if (session.closed) {
            local.destroy();
            return;
          }
          const remote = connect(port);
          local.pipe(remote);
          remote.pipe(local);
          local.on('error', () => remote.destroy());
          remote.on('error', () => local.destroy());
          local.on('close', () => remote.destroy());
        });
        session.onClose(() => server.close());
        server.on('error', reject); // before listening: the reason it failed; after: nothing more to do
        server.listen(localPort, '127.0.0.1', () => {
          const address = server.address();
          resolve({
            port: typeof address === 'object' && address !== null ? address.port : localPort,
            close: () => server.close(),
          });
        });
      }),
    onClose: (listener) => session.onClose(listener),
    close: () => session.close(),
  };
}
