import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ok } from '../shared/result.ts';
import type { CredentialSource } from './transport.ts';
import { createTransport, sameTls } from './transport.ts';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

describe('createTransport (against a loopback HTTP server)', () => {
  let server: http.Server;
  let base = '';
  let handler: Handler = (_q, res) => res.end('{}');
  let connections = 0;

  before(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => handler(req, res, body));
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const creds =
    (token = 't0'): CredentialSource =>
    async () =>
      ok({ headers: { Authorization: `Bearer ${token}` }, tls: {} });

  it('returns the body of a 2xx and sends method, path, query, headers and JSON body', async () => {
    let seen: Record<string, string | undefined> = {};
    handler = (req, res, body) => {
      seen = {
        method: req.method,
        url: req.url,
        auth: req.headers.authorization,
        ct: req.headers['content-type'],
        body,
      };
      res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
    };
    const t = createTransport({ server: `${base}/prefix/`, credentials: creds() });
    const r = await t.request('POST', '/api/v1/x', { query: { a: 'b c' }, body: { k: 1 } });
    t.close();
    assert.ok(r.ok);
    assert.equal(r.value.status, 201);
    assert.equal(r.value.text, '{"ok":true}');
    assert.deepEqual(seen, {
      method: 'POST',
      url: '/prefix/api/v1/x?a=b%20c',
      auth: 'Bearer t0',
      ct: 'application/json',
      body: '{"k":1}',
    });
  });

  it('sends a User-Agent naming the version, and the identity when given (without parentheses or controls)', async () => {
    const agents: (string | undefined)[] = [];
    handler = (req, res) => {
      agents.push(req.headers['user-agent']);
      res.end('{}');
    };
    for (const identity of [undefined, 'replica-a', 'pod (x)\n']) {
      const t = createTransport({
        server: base,
        credentials: creds(),
        ...(identity !== undefined ? { identity } : {}),
      });
      await t.request('GET', '/x');
      t.close();
    }
    assert.match(agents[0] ?? '', /^agent-controller\/[^ ]+$/);
    assert.match(agents[1] ?? '', /^agent-controller\/[^ ]+ \(replica-a\)$/);
    assert.match(agents[2] ?? '', /^agent-controller\/[^ ]+ \(pod x\)$/);
  });

  it('maps a non-2xx Status to an api error', async () => {
    handler = (_q, res) =>
      res.writeHead(409).end(
        JSON.stringify({
          kind: 'Status',
          code: 409,
          reason: 'Conflict',
          message: 'the object has been modified',
        }),
      );
    const t = createTransport({ server: base, credentials: creds() });
    const r = await t.request('PATCH', '/x', { body: '{}', contentType: 'application/merge-patch+json' });
    t.close();
    assert.ok(!r.ok && r.error.kind === 'api' && r.error.code === 409 && r.error.reason === 'Conflict');
  });

  it('reuses one keep-alive connection for sequential requests', async () => {
    handler = (_q, res) => res.end('{}');
    const t = createTransport({ server: base, credentials: creds() });
    const before = connections;
    for (let i = 0; i < 5; i++) assert.ok((await t.request('GET', '/x')).ok);
    t.close();
    assert.equal(connections - before, 1);
  });

  it('refreshes credentials and retries exactly once after a 401', async () => {
    const auths: (string | undefined)[] = [];
    handler = (req, res) => {
      auths.push(req.headers.authorization);
      if (req.headers.authorization === 'Bearer fresh') res.end('{}');
      else res.writeHead(401).end(JSON.stringify({ kind: 'Status', code: 401, reason: 'Unauthorized' }));
    };
    const refreshes: boolean[] = [];
    const source: CredentialSource = async ({ refresh }) => {
      refreshes.push(refresh);
      return ok({ headers: { Authorization: refresh ? 'Bearer fresh' : 'Bearer stale' }, tls: {} });
    };
    const t = createTransport({ server: base, credentials: source });
    assert.ok((await t.request('GET', '/x')).ok);
    assert.deepEqual(auths, ['Bearer stale', 'Bearer fresh']);
    assert.deepEqual(refreshes, [false, true]);
    auths.length = 0;
    const alwaysStale: CredentialSource = async () =>
      ok({ headers: { Authorization: 'Bearer stale' }, tls: {} });
    const t2 = createTransport({ server: base, credentials: alwaysStale });
    const r = await t2.request('GET', '/x');
    assert.ok(!r.ok && r.error.kind === 'api' && r.error.code === 401);
    assert.equal(auths.length, 2);
    t.close();
    t2.close();
  });

  it('times out a request that gets no answer', async () => {
    handler = () => {};
    const t = createTransport({ server: base, credentials: creds() });
    const r = await t.request('GET', '/slow', { timeoutMs: 100 });
    t.close();
    assert.ok(!r.ok && r.error.kind === 'timeout' && !r.error.idle);
  });

  it('reports an abort by the caller', async () => {
    handler = () => {};
    const t = createTransport({ server: base, credentials: creds() });
    const ctl = new AbortController();
    const p = t.request('GET', '/slow', { signal: ctl.signal });
    setTimeout(() => ctl.abort(), 20);
    const r = await p;
    t.close();
    assert.ok(!r.ok && r.error.kind === 'aborted');
  });

  it('refuses bodies over the limit', async () => {
    handler = (_q, res) => res.end('x'.repeat(2000));
    const t = createTransport({ server: base, credentials: creds(), maxBodyBytes: 1000 });
    const r = await t.request('GET', '/big');
    t.close();
    assert.ok(!r.ok && r.error.kind === 'decode');
  });

  it('reports a refused connection as a network error', async () => {
    const t = createTransport({ server: 'http://127.0.0.1:1', credentials: creds() });
    const r = await t.request('GET', '/x');
    t.close();
    assert.ok(!r.ok && r.error.kind === 'network');
  });

  it('streams chunks and resolves when the server ends the stream', async () => {
    handler = (_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"a":1}\n{"b"');
      setTimeout(() => {
        res.write(':2}\n');
        res.end();
      }, 20);
    };
    const t = createTransport({ server: base, credentials: creds() });
    let text = '';
    const r = await t.stream('/watch', {
      idleTimeoutMs: 1000,
      onData: (c) => (text += new TextDecoder().decode(c)),
    });
    t.close();
    assert.ok(r.ok);
    assert.equal(text, '{"a":1}\n{"b":2}\n');
  });

  it('tears down a silent stream after the idle timeout', async () => {
    handler = (_q, res) => {
      res.writeHead(200);
      res.write('{"a":1}\n');
    };
    const t = createTransport({ server: base, credentials: creds() });
    const chunks: number[] = [];
    const started = Date.now();
    const r = await t.stream('/watch', { idleTimeoutMs: 150, onData: (c) => chunks.push(c.length) });
    t.close();
    assert.ok(!r.ok && r.error.kind === 'timeout' && r.error.idle);
    assert.equal(chunks.length, 1);
    assert.ok(Date.now() - started >= 140);
  });

  it('reports a connection cut mid-stream as a network error', async () => {
    handler = (req, res) => {
      res.writeHead(200);
      res.write('{"a":1}\n');
      setTimeout(() => req.socket.destroy(), 20);
    };
    const t = createTransport({ server: base, credentials: creds() });
    const r = await t.stream('/watch', { idleTimeoutMs: 5000, onData: () => {} });
    t.close();
    assert.ok(!r.ok && r.error.kind === 'network', JSON.stringify(r));
  });

  it('reads the Status of a non-2xx stream answer', async () => {
    handler = (_q, res) =>
      res
        .writeHead(410)
        .end(JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired', message: 'too old' }));
    const t = createTransport({ server: base, credentials: creds() });
    const r = await t.stream('/watch', {
      idleTimeoutMs: 1000,
      onData: () => assert.fail('no data expected'),
    });
    t.close();
    assert.ok(!r.ok && r.error.kind === 'api' && r.error.code === 410 && r.error.reason === 'Expired');
  });

  it('observes every request with verb and code', async () => {
    handler = (_q, res) => res.writeHead(404).end('{}');
    const samples: string[] = [];
    const t = createTransport({
      server: base,
      credentials: creds(),
      observe: (s) => samples.push(`${s.verb} ${s.code} ${s.stream}`),
    });
    await t.request('GET', '/x');
    t.close();
    assert.deepEqual(samples, ['GET 404 false']);
  });
});

describe('sameTls', () => {
  it('compares PEM strings and bytes by content', () => {
    assert.equal(sameTls({ ca: 'A', cert: 'B' }, { ca: 'A', cert: new TextEncoder().encode('B') }), true);
    assert.equal(sameTls({ ca: 'A' }, { ca: 'B' }), false);
    assert.equal(sameTls({ ca: 'A' }, { ca: 'A', rejectUnauthorized: false }), false);
    assert.equal(sameTls({}, {}), true);
  });
});
