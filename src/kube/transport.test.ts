import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { err, ok } from '../shared/result.ts';
import type { CredentialSource } from './transport.ts';
import {
  apiServerEndpoint,
  createTransport,
  encodeBody,
  requestHeaders,
  sampleCode,
  timeoutError,
} from './transport.ts';

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

  // What a restarting API server does to connections in flight: it ends them (FIN) without an answer, or in the
  // middle of one. Node reports the first as 'socket hang up' on the request (an unhandled error event there
  // ends the process), the second on the response; the transport answers both as a network error.
  it('reports a connection ended before the answer (socket hang up) as a network error, for a request and a stream', async () => {
    handler = (req) => req.socket.end();
    const t = createTransport({ server: base, credentials: creds() });
    const asked = await t.request('GET', '/x');
    const streamed = await t.stream('/watch', { idleTimeoutMs: 5000, onData: () => {} });
    t.close();
    assert.deepEqual(asked, err({ kind: 'network', message: 'socket hang up' }));
    assert.deepEqual(streamed, err({ kind: 'network', message: 'socket hang up' }));
  });

  it('reports a connection ended in the middle of an answer as a network error, for a request and a stream', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"a":');
      setTimeout(() => req.socket.end(), 20);
    };
    const t = createTransport({ server: base, credentials: creds() });
    const asked = await t.request('GET', '/x');
    let text = '';
    const streamed = await t.stream('/watch', {
      idleTimeoutMs: 5000,
      onData: (c) => (text += new TextDecoder().decode(c)),
    });
    t.close();
    assert.ok(!asked.ok && asked.error.kind === 'network', JSON.stringify(asked));
    assert.ok(!streamed.ok && streamed.error.kind === 'network', JSON.stringify(streamed));
    assert.equal(text, '{"a":');
  });

  it('a kept-alive connection the server ended while idle: the next request goes out on a new one', async () => {
    const sockets = new Set<import('node:net').Socket>();
    handler = (req, res) => {
      sockets.add(req.socket);
      res.end('{}');
    };
    const t = createTransport({ server: base, credentials: creds() });
    const first = await t.request('GET', '/x');
    // Closed on the server's side only once the client has read the FIN and ended its side too.
    await Promise.all(
      [...sockets].map((socket) => new Promise<void>((resolve) => socket.end().once('close', resolve))),
    );
    const second = await t.request('GET', '/x');
    t.close();
    assert.deepEqual([first.ok, second.ok], [true, true], JSON.stringify(second));
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

describe('apiServerEndpoint', () => {
  it('keeps the path prefix without trailing slashes and defaults the port by scheme', () => {
    assert.deepEqual(apiServerEndpoint('https://api.example:6443/prefix//'), {
      protocol: 'https:',
      secure: true,
      hostname: 'api.example',
      port: '6443',
      basePath: '/prefix',
    });
    assert.deepEqual(apiServerEndpoint('https://api.example'), {
      protocol: 'https:',
      secure: true,
      hostname: 'api.example',
      port: 443,
      basePath: '',
    });
    assert.deepEqual(apiServerEndpoint('http://127.0.0.1/'), {
      protocol: 'http:',
      secure: false,
      hostname: '127.0.0.1',
      port: 80,
      basePath: '',
    });
  });

  it('strips the brackets of an IPv6 literal', () => {
    assert.equal(apiServerEndpoint('https://[::1]:6443').hostname, '::1');
  });

  it('refuses a scheme other than http and https', () => {
    assert.throws(
      () => apiServerEndpoint('ftp://api.example'),
      /unsupported API server URL ftp:\/\/api.example/,
    );
  });
});

describe('encodeBody', () => {
  it('sends a string as is, anything else as JSON, and nothing for undefined', () => {
    assert.equal(encodeBody('a: b'), 'a: b');
    assert.equal(encodeBody({ k: [1, 'x'] }), '{"k":[1,"x"]}');
    assert.equal(encodeBody(null), 'null');
    assert.equal(encodeBody(undefined), undefined);
  });
});

describe('requestHeaders', () => {
  it('without a body: Accept, User-Agent and the credentials headers, which may override them', () => {
    assert.deepEqual(requestHeaders('ua/1', { Authorization: 'Bearer t' }, undefined, 'text/plain'), {
      Accept: 'application/json, */*',
      'User-Agent': 'ua/1',
      Authorization: 'Bearer t',
    });
    assert.deepEqual(requestHeaders('ua/1', { Accept: 'x/y' }, undefined, undefined), {
      Accept: 'x/y',
      'User-Agent': 'ua/1',
    });
  });

  it('with a body: its type (JSON by default) and its length in bytes, not characters', () => {
    assert.deepEqual(requestHeaders('ua/1', {}, '{"a":"é"}', undefined), {
      Accept: 'application/json, */*',
      'User-Agent': 'ua/1',
      'Content-Type': 'application/json',
      'Content-Length': '10',
    });
    assert.deepEqual(requestHeaders('ua/1', {}, '[]', 'application/merge-patch+json'), {
      Accept: 'application/json, */*',
      'User-Agent': 'ua/1',
      'Content-Type': 'application/merge-patch+json',
      'Content-Length': '2',
    });
  });
});

describe('timeoutError', () => {
  it('a request without an answer, a stream without data (idle)', () => {
    const ex = { method: 'GET', path: '/api/v1/pods', timeoutMs: 250 };
    assert.deepEqual(timeoutError(ex, false), {
      kind: 'timeout',
      idle: false,
      message: 'no answer within 250 ms for GET /api/v1/pods',
    });
    assert.deepEqual(timeoutError(ex, true), {
      kind: 'timeout',
      idle: true,
      message: 'no data for 250 ms on GET /api/v1/pods',
    });
  });
});

describe('sampleCode', () => {
  it('the HTTP status of an answer or an api error, else the kind of the error', () => {
    assert.equal(sampleCode(ok({ status: 201 })), '201');
    assert.equal(
      sampleCode(err({ kind: 'api', code: 409, reason: 'Conflict', message: '', status: undefined })),
      '409',
    );
    assert.equal(sampleCode(err({ kind: 'timeout', idle: true, message: '' })), 'timeout');
    assert.equal(sampleCode(err({ kind: 'network', message: 'reset' })), 'network');
  });
});
