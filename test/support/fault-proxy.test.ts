import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type FaultProxy, injectedStatus, seededRandom, startFaultProxy } from './fault-proxy.ts';

// A throwaway CA and a fake HTTPS "apiserver" that echoes requests and streams a chunk every 50 ms.

function openssl(args: readonly string[]): void {
  const r = spawnSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.error?.message ?? r.stderr}`);
}

function makeCa(dir: string): { caCert: string; caKey: string; key: string; cert: string } {
  const caKey = join(dir, 'ca.key');
  const caCert = join(dir, 'ca.crt');
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', caKey]);
  openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    caKey,
    '-subj',
    '/CN=fault-proxy-test-ca',
    '-days',
    '1',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    '-out',
    caCert,
  ]);
  const key = join(dir, 'upstream.key');
  const csr = join(dir, 'upstream.csr');
  const ext = join(dir, 'upstream.ext');
  const cert = join(dir, 'upstream.crt');
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
  openssl(['req', '-new', '-key', key, '-subj', '/CN=fake-apiserver', '-out', csr]);
  writeFileSync(ext, 'extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      caCert,
      '-CAkey',
      caKey,
      '-set_serial',
      '0x1234',
      '-days',
      '1',
    ].concat(['-extfile', ext, '-out', cert]),
  );
  return { caCert, caKey, key, cert };
}

interface Echo {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface UpstreamStream {
  /** Resolves when the upstream side of the stream closes (client gone or ended). */
  readonly closed: Promise<void>;
  ended: boolean;
}

interface FakeUpstream {
  readonly url: string;
  readonly received: Echo[];
  readonly streams: UpstreamStream[];
  close(): Promise<void>;
}

async function startFakeUpstream(key: string, cert: string): Promise<FakeUpstream> {
  const received: Echo[] = [];
  const streams: UpstreamStream[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = https.createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    if (url.pathname === '/stream') {
      // A watch-like stream: one JSON line every 50 ms, `n` of them (default: until the client goes).
      const n = Number(url.searchParams.get('n') ?? Number.POSITIVE_INFINITY);
      res.writeHead(200, { 'content-type': 'application/json' });
      let closedResolve!: () => void;
      const s: UpstreamStream = { closed: new Promise((r) => (closedResolve = r)), ended: false };
      streams.push(s);
      let i = 0;
      const timer = setInterval(() => {
        if (i >= n) {
          s.ended = true;
          clearInterval(timer);
          res.end();
          return;
        }
        res.write(`${JSON.stringify({ type: 'ADDED', n: i++ })}\n`);
      }, 50);
      timers.add(timer);
      res.on('close', () => {
        clearInterval(timer);
        timers.delete(timer);
        closedResolve();
      });
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const echo = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(echo);
      const body = JSON.stringify(echo);
      res.writeHead(req.method === 'POST' ? 201 : 200, {
        'content-type': 'application/json',
        'x-upstream': 'fake',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    streams,
    close: () =>
      new Promise<void>((r) => {
        for (const t of timers) clearInterval(t);
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

// Client helpers (fresh connection per request).

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function send(
  proxy: FaultProxy,
  path: string,
  opts: { method?: string; headers?: OutgoingHttpHeaders; body?: readonly string[] } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${proxy.url}${path}`,
      { method: opts.method ?? 'GET', headers: opts.headers ?? {}, ca: proxy.caPem, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    for (const part of opts.body ?? []) req.write(part);
    req.end();
  });
}

interface OpenStream {
  readonly res: IncomingMessage;
  readonly lines: string[];
  /** 'end' when the response completed, 'aborted' when it ended abruptly. */
  readonly done: Promise<'end' | 'aborted'>;
  waitLines(n: number, timeoutMs?: number): Promise<void>;
}

function openStream(proxy: FaultProxy, path: string): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${proxy.url}${path}`, { ca: proxy.caPem, agent: false }, (res) => {
      const lines: string[] = [];
      let buf = '';
      const waiters = new Set<() => void>();
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        buf += c;
        let i = buf.indexOf('\n');
        while (i >= 0) {
          lines.push(buf.slice(0, i));
          buf = buf.slice(i + 1);
          i = buf.indexOf('\n');
        }
        for (const w of waiters) w();
      });
      res.on('error', () => {});
      const done = new Promise<'end' | 'aborted'>((r) =>
        res.on('close', () => r(res.complete ? 'end' : 'aborted')),
      );
      resolve({
        res,
        lines,
        done,
        waitLines: (n, timeoutMs = 2000) =>
          new Promise<void>((ok, fail) => {
            const check = (): void => {
              if (lines.length >= n) {
                waiters.delete(check);
                clearTimeout(t);
                ok();
              }
            };
            const t = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`only ${lines.length} of ${n} lines within ${timeoutMs} ms`));
            }, timeoutMs);
            waiters.add(check);
            check();
          }),
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('fault proxy', () => {
  let dir: string;
  let ca: ReturnType<typeof makeCa>;
  let upstream: FakeUpstream;
  let proxy: FaultProxy;
  const extra: FaultProxy[] = [];
  const start = async (random?: () => number, up = upstream.url): Promise<FaultProxy> => {
    const p = await startFaultProxy({
      upstream: up,
      caCertPath: ca.caCert,
      caKeyPath: ca.caKey,
      workDir: join(dir, 'proxy'),
      ...(random ? { random } : {}),
    });
    extra.push(p);
    return p;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fault-proxy-test-'));
    ca = makeCa(dir);
    upstream = await startFakeUpstream(ca.key, ca.cert);
    proxy = await startFaultProxy({
      upstream: upstream.url,
      caCertPath: ca.caCert,
      caKeyPath: ca.caKey,
      workDir: join(dir, 'proxy'),
    });
  });
  afterEach(() => {
    proxy.clearFaults();
    proxy.open();
  });
  after(async () => {
    await Promise.all([proxy.close(), ...extra.map((p) => p.close())]);
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('forwards method, path, query, headers (Authorization) and a streamed body; passes status and headers back', async () => {
    const before = proxy.stats();
    const reply = await send(proxy, '/api/v1/namespaces/ns/configmaps?labelSelector=a%3Db&limit=5', {
      method: 'POST',
      headers: {
        authorization: 'Bearer sa-token-123',
        'content-type': 'application/json',
        'x-custom': 'kept',
        'proxy-authorization': 'dropped',
        'keep-alive': 'timeout=5',
      },
      body: ['{"kind":', '"ConfigMap"}'],
    });
    assert.equal(reply.status, 201);
    assert.equal(reply.headers['x-upstream'], 'fake');
    const echo = JSON.parse(reply.body) as Echo;
    assert.equal(echo.method, 'POST');
    assert.equal(echo.url, '/api/v1/namespaces/ns/configmaps?labelSelector=a%3Db&limit=5');
    assert.equal(echo.headers.authorization, 'Bearer sa-token-123');
    assert.equal(echo.headers['x-custom'], 'kept');
    assert.equal(echo.headers['content-type'], 'application/json');
    assert.equal(echo.headers.host, new URL(upstream.url).host);
    assert.equal(echo.headers['proxy-authorization'], undefined);
    assert.equal(echo.headers['keep-alive'], undefined);
    assert.equal(echo.body, '{"kind":"ConfigMap"}');
    const after = proxy.stats();
    assert.equal(after.requests - before.requests, 1);
    assert.equal(after.forwarded - before.forwarded, 1);
  });

  it('streams response chunks as they come (before upstream ends)', async () => {
    const s = await openStream(proxy, '/stream?n=10');
    await s.waitLines(2);
    const up = upstream.streams.at(-1)!;
    assert.equal(up.ended, false, 'two chunks arrived while the upstream response was still open');
    assert.deepEqual(JSON.parse(s.lines[0]!), { type: 'ADDED', n: 0 });
    assert.equal(await s.done, 'end');
    assert.equal(s.lines.length, 10);
  });

  for (const [code, reason] of [
    [429, 'TooManyRequests'],
    [500, 'InternalError'],
    [503, 'ServiceUnavailable'],
  ] as const) {
    it(`errorRate 1 with ${code} answers a Kubernetes Status without forwarding`, async () => {
      proxy.setFaults({ errorRate: 1, errorCodes: [code], retryAfterSeconds: 7 });
      const before = proxy.stats();
      const seen = upstream.received.length;
      const reply = await send(proxy, '/api/v1/pods', {
        headers: { authorization: 'Bearer t' },
      });
      assert.equal(reply.status, code);
      assert.equal(reply.headers['content-type'], 'application/json');
      assert.equal(reply.headers['retry-after'], code === 500 ? undefined : '7');
      const status = JSON.parse(reply.body) as Record<string, unknown>;
      assert.deepEqual(status, injectedStatus(code, 7));
      assert.equal(status.reason, reason);
      assert.equal(status.code, code);
      assert.match(String(status.message), /\(injected by the chaos proxy\)$/);
      assert.deepEqual(status.details, { retryAfterSeconds: 7 });
      assert.equal(upstream.received.length, seen, 'not forwarded');
      const after = proxy.stats();
      assert.equal(after[`injected${code}`] - before[`injected${code}`], 1);
      assert.equal(after.forwarded, before.forwarded);
    });
  }

  it('delays requests by the configured latency', async () => {
    proxy.setFaults({ latencyMs: [200, 250] });
    const before = proxy.stats();
    const t0 = performance.now();
    const reply = await send(proxy, '/healthz');
    const elapsed = performance.now() - t0;
    assert.equal(reply.status, 200);
    assert.ok(elapsed >= 190, `took ${elapsed} ms`);
    assert.equal(proxy.stats().delayed - before.delayed, 1);
  });

  it('cut() ends an open stream abruptly (and upstream sees it) and accepts new connections', async () => {
    const s = await openStream(proxy, '/stream');
    await s.waitLines(1);
    const up = upstream.streams.at(-1)!;
    const before = proxy.stats();
    proxy.cut();
    assert.equal(await s.done, 'aborted');
    await up.closed;
    assert.ok(proxy.stats().cuts > before.cuts);
    assert.equal((await send(proxy, '/after-cut')).status, 200);
  });

  it('stall() stops bytes on an open stream and holds new connections; open() resumes; cut() ends', async () => {
    const s = await openStream(proxy, '/stream');
    await s.waitLines(1);
    const before = proxy.stats();
    proxy.stall();
    await sleep(100); // bytes already on the wire may still land
    const count = s.lines.length;
    let lateReply: Reply | undefined;
    const late = send(proxy, '/during-stall').then((r) => {
      lateReply = r;
      return r;
    });
    await sleep(400); // upstream wrote ~8 chunks meanwhile
    assert.equal(s.lines.length, count, 'no chunk while stalled');
    assert.equal(s.res.destroyed, false, 'still open');
    assert.equal(lateReply, undefined, 'a new connection is stalled too');
    assert.equal(proxy.stats().stalls - before.stalls, 2);
    proxy.open();
    await s.waitLines(count + 1);
    assert.equal((await late).status, 200);
    proxy.stall();
    proxy.cut();
    assert.equal(await s.done, 'aborted');
  });

  it('block() refuses connections until open()', async () => {
    const s = await openStream(proxy, '/stream');
    await s.waitLines(1);
    const before = proxy.stats();
    proxy.block();
    assert.equal(await s.done, 'aborted');
    await assert.rejects(send(proxy, '/blocked'));
    assert.ok(proxy.stats().refused > before.refused);
    proxy.open();
    assert.equal((await send(proxy, '/opened')).status, 200);
  });

  it('gives the same decisions for the same seed', async () => {
    const run = async (seed: number): Promise<number[]> => {
      const p = await start(seededRandom(seed));
      p.setFaults({ errorRate: 0.5, latencyMs: [0, 5] });
      const codes: number[] = [];
      for (let i = 0; i < 16; i++) codes.push((await send(p, `/seq/${i}`)).status);
      await p.close();
      return codes;
    };
    const a = await run(42);
    const b = await run(42);
    assert.deepEqual(a, b);
    assert.ok(a.includes(200) && a.some((c) => c !== 200), `a mix of outcomes: ${a}`);
    assert.notDeepEqual(await run(7), a);
  });

  it('answers 502 when upstream is down, counted as an upstream error, not injected', async () => {
    const p = await start(undefined, 'https://127.0.0.1:1');
    const reply = await send(p, '/api');
    assert.equal(reply.status, 502);
    assert.equal((JSON.parse(reply.body) as { kind: string }).kind, 'Status');
    const st = p.stats();
    assert.equal(st.forwarded, 1);
    assert.equal(st.upstreamErrors, 1);
    assert.equal(st.injected429 + st.injected500 + st.injected503, 0);
  });

  it('refuses upgrade requests with 501', async () => {
    const reply = await send(proxy, '/api/v1/namespaces/ns/pods/p/exec', {
      headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1' },
    });
    assert.equal(reply.status, 501);
  });

  it('rejects invalid settings', () => {
    assert.throws(() => proxy.setFaults({ errorRate: 2 }), RangeError);
    assert.throws(() => proxy.setFaults({ latencyMs: [5, 1] }), RangeError);
  });
});
