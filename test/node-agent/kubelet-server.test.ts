// The process node's port-forward endpoint agrees with the real kubelet's (issue 26): the product's client is
// forwarded to the pod, and a SPDY header block that does not end with a sync flush closes the session, as the
// container runtime's Go SPDY reader does (it cannot decode the header block after such a one).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { request } from 'node:https';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PORT_FORWARD_PROTOCOL, portForwardOn, SPDY_UPGRADE } from '../../src/kube/port-forward.ts';
import {
  controlFrame,
  encodeHeaders,
  FrameReader,
  FrameType,
  HEADER_DICTIONARY,
  synStreamBody,
} from '../../src/kube/spdy/frames.ts';
import { SpdySession } from '../../src/kube/spdy/session.ts';
import { adler32 } from '../../src/kube/spdy/zlib.ts';
import { createLogger } from '../../src/shared/log.ts';
import { HAVE_OPENSSL, selfSignedCert } from '../support/self-signed.ts';
import { startKubeletServer } from './kubelet-server.ts';

describe('test node: the kubelet port-forward endpoint', { skip: !HAVE_OPENSSL && 'needs openssl' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-server-'));
  let tls: ReturnType<typeof selfSignedCert>;
  let kubeletPort = 0;
  let podPort = 0;
  const closers: (() => void)[] = [];

  before(async () => {
    // One self-signed certificate is the kubelet's, the API server's client certificate and the CA of both.
    tls = selfSignedCert(dir);
    const pod = createServer((c) => c.end('hello from the pod\n'));
    await new Promise<void>((resolve) => pod.listen(0, '127.0.0.1', resolve));
    podPort = (pod.address() as AddressInfo).port;
    const kubelet = await startKubeletServer({
      host: '127.0.0.1',
      port: 0,
      certFile: tls.certFile,
      keyFile: tls.keyFile,
      clientCaFile: tls.certFile,
      lookup: (ns, name) =>
        ns === 'ns' && name === 'pod' ? { podIP: '127.0.0.1', logInfo: () => undefined } : undefined,
      log: createLogger('error', () => undefined),
    });
    kubeletPort = (kubelet.address() as AddressInfo).port;
    closers.push(
      () => pod.close(),
      () => {
        kubelet.closeAllConnections();
        kubelet.close();
      },
    );
  });
  after(() => {
    for (const close of closers) close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The upgraded connection of `POST /portForward/ns/pod`, as the API server opens it. */
  function upgrade(): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port: kubeletPort,
        path: '/portForward/ns/pod',
        method: 'POST',
        ca: tls.cert,
        cert: tls.cert,
        key: tls.key,
        headers: {
          connection: 'Upgrade',
          upgrade: SPDY_UPGRADE,
          'x-stream-protocol-version': PORT_FORWARD_PROTOCOL,
          'content-length': '0',
        },
      });
      req.on('upgrade', (_res: IncomingMessage, socket: Socket) => resolve(socket));
      req.on('response', (res: IncomingMessage) => reject(new Error(`no upgrade: ${res.statusCode}`)));
      req.on('error', reject);
      req.end();
    });
  }

  it("forwards the product's client to the pod", async () => {
    const socket = await upgrade();
    const session = new SpdySession(socket, { role: 'client' });
    const stream = portForwardOn(session).connect(podPort);
    let text = '';
    stream.setEncoding('utf8').on('data', (c: string) => {
      text += c;
    });
    await new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    session.close();
    assert.equal(text, 'hello from the pod\n');
  });

  it('closes the session at a header block without the sync-flush marker, as the real node does', {
    timeout: 10_000,
  }, async () => {
    const socket = await upgrade();
    // A SYN_STREAM whose header block is one stored block and nothing after it (no empty stored block).
    const block = encodeHeaders({ streamtype: 'error', port: String(podPort), requestid: '0' });
    const dictionaryId = [24, 16, 8, 0].map((shift) => (adler32(HEADER_DICTIONARY) >>> shift) & 0xff);
    const unflushed = Uint8Array.of(
      0x78,
      0x20,
      ...dictionaryId,
      0x00,
      block.length & 0xff,
      block.length >>> 8,
      ~block.length & 0xff,
      (~block.length >>> 8) & 0xff,
      ...block,
    );
    const frames = new FrameReader();
    const seen: number[] = [];
    socket.on('data', (chunk: Uint8Array) => {
      for (const f of frames.push(chunk)) if (f.kind === 'control') seen.push(f.type);
    });
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(controlFrame(FrameType.synStream, 0, synStreamBody(1, unflushed)));
    await closed;
    assert.deepEqual(seen, [FrameType.goAway], 'GOAWAY, no SYN_REPLY, then the connection closes');
  });
});
