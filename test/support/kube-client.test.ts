// KubeClient against a local HTTPS stand-in for the API server (loopback, mutual TLS off).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { apiPath, decodeWatchLine, type KubeClient, KubeError, type WatchEvent } from './kube-client.ts';
import { PodSchema } from './schemas.ts';
import { HAVE_OPENSSL, kubeClientOnTls } from './self-signed.ts';

describe('apiPath and decodeWatchLine', () => {
  it('builds core and group paths', () => {
    assert.equal(
      apiPath('v1', 'pods', { namespace: 'ns', name: 'p', subresource: 'log' }),
      '/api/v1/namespaces/ns/pods/p/log',
    );
    assert.equal(apiPath('batch/v1', 'jobs'), '/apis/batch/v1/jobs');
    assert.equal(apiPath('v1', 'nodes', { name: 'n' }), '/api/v1/nodes/n');
  });
  it('decodes objects and ERROR statuses, rejects garbage', () => {
    const added = decodeWatchLine(
      '{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"5"}}}',
    );
    assert.equal(added.type !== 'ERROR' && added.object.metadata.resourceVersion, '5');
    assert.equal(added.type, 'ADDED');
    const gone = decodeWatchLine('{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}');
    assert.equal(gone.type === 'ERROR' && gone.object.code, 410);
    assert.throws(() => decodeWatchLine('{"type":"WHAT","object":{}}'));
    assert.throws(() => decodeWatchLine('not json'));
  });
});

describe('KubeClient over HTTPS', { skip: HAVE_OPENSSL ? false : 'needs openssl' }, () => {
  let client: KubeClient;
  let close = (): void => undefined;
  const dir = mkdtempSync(join(tmpdir(), 'kube-client-'));
  const seen: {
    method: string;
    url: string;
    type: string | undefined;
    auth: string | undefined;
    body: string;
  }[] = [];

  before(async () => {
    ({ client, close } = await kubeClientOnTls(dir, (req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => {
        body += d.toString();
      });
      req.on('end', () => {
        seen.push({
          method: req.method ?? '',
          url: req.url ?? '',
          type: req.headers['content-type'],
          auth: req.headers.authorization,
          body,
        });
        const url = new URL(req.url ?? '/', 'https://x');
        if (url.pathname === '/api/v1/namespaces/ns/pods/missing') {
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end('{"kind":"Status","reason":"NotFound","code":404}');
        } else if (url.pathname === '/api/v1/namespaces/ns/pods' && url.searchParams.get('watch') === '1') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write(
            '{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"2"}}}\n{"type":"MOD',
          );
          setTimeout(() => {
            res.write('IFIED","object":{"metadata":{"name":"a","resourceVersion":"3"}}}\n');
            res.end('{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}\n');
          }, 20);
        } else if (
          url.pathname === '/api/v1/namespaces/ns/configmaps' &&
          url.searchParams.get('watch') === '1'
        ) {
          res.writeHead(410, { 'content-type': 'application/json' });
          res.end('{"kind":"Status","reason":"Expired","code":410}');
        } else if (
          url.pathname === '/api/v1/namespaces/ns/secrets' &&
          url.searchParams.get('watch') === '1'
        ) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write('{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}\n');
          // then silence: the idle timer must end the watch
        } else if (url.pathname === '/api/v1/namespaces/ns/pods') {
          const page = url.searchParams.get('continue') === 'tok' ? 2 : 1;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              metadata: page === 1 ? { resourceVersion: '7', continue: 'tok' } : { resourceVersion: '7' },
              items: [{ metadata: { name: `p${page}` }, status: { phase: 'Running' } }],
            }),
          );
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ metadata: { name: 'echo' }, status: { phase: 'Pending' } }));
        }
      });
    }));
  });
  after(() => {
    close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('get validates, tryGet maps 404 to undefined, errors carry the Status reason', async () => {
    const pod = await client.get('/api/v1/namespaces/ns/pods/echo', PodSchema);
    assert.equal(pod.status.phase, 'Pending');
    assert.equal(await client.tryGet('/api/v1/namespaces/ns/pods/missing'), undefined);
    await assert.rejects(
      client.get('/api/v1/namespaces/ns/pods/missing'),
      (e: unknown) => e instanceof KubeError && e.status === 404 && e.reason === 'NotFound',
    );
  });

  it('patch sends the right content type; delete sends DeleteOptions', async () => {
    await client.patch('/api/v1/namespaces/ns/pods/echo', { a: 1 }, 'strategic');
    const patch = seen.at(-1);
    assert.equal(patch?.type, 'application/strategic-merge-patch+json');
    assert.equal(patch?.body, '{"a":1}');
    assert.equal(
      await client.delete('/api/v1/namespaces/ns/pods/echo', {
        propagationPolicy: 'Background',
        gracePeriodSeconds: 0,
      }),
      true,
    );
    assert.deepEqual(JSON.parse(seen.at(-1)?.body ?? '{}'), {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      propagationPolicy: 'Background',
      gracePeriodSeconds: 0,
    });
    assert.equal(await client.delete('/api/v1/namespaces/ns/pods/missing'), false);
  });

  it('list follows continue tokens', async () => {
    const { items, resourceVersion } = await client.list(
      '/api/v1/namespaces/ns/pods',
      { labelSelector: 'a=b' },
      PodSchema,
    );
    assert.deepEqual(
      items.map((p) => p.metadata.name),
      ['p1', 'p2'],
    );
    assert.equal(resourceVersion, '7');
    assert.match(seen.at(-1)?.url ?? '', /continue=tok/);
    assert.match(seen.at(-1)?.url ?? '', /labelSelector=a%3Db/);
  });

  it('watch decodes events split across chunks, in-stream ERRORs, HTTP 410 and idle streams', async () => {
    const events: WatchEvent[] = [];
    const end = await client.watch('/api/v1/namespaces/ns/pods', { resourceVersion: '1' }, (e) => {
      events.push(e);
    });
    assert.deepEqual(end, { kind: 'closed' });
    assert.deepEqual(
      events.map((e) => e.type),
      ['ADDED', 'MODIFIED', 'ERROR'],
    );
    assert.match(seen.at(-1)?.url ?? '', /watch=1&resourceVersion=1/);
    const gone = await client.watch('/api/v1/namespaces/ns/configmaps', {}, () => undefined);
    assert.equal(gone.kind === 'http-error' && gone.status, 410);
    const idle: WatchEvent[] = [];
    const started = Date.now();
    const quiet = await client.watch('/api/v1/namespaces/ns/secrets', { idleTimeoutMs: 150 }, (e) => {
      idle.push(e);
    });
    assert.deepEqual(quiet, { kind: 'aborted' });
    assert.deepEqual(
      idle.map((e) => e.type),
      ['BOOKMARK'],
    );
    assert.ok(Date.now() - started < 5000);
  });

  it('sends the bearer token', async () => {
    await client.get('/api/v1/namespaces/ns/pods/echo');
    assert.equal(seen.at(-1)?.auth, 'Bearer t0k');
  });
});
