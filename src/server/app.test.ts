import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createControllerMetrics } from '../metrics/index.ts';
import { createApp } from './app.ts';
import { serveApp } from './serve.ts';

function appWith(ready: Record<string, boolean>) {
  const metrics = createControllerMetrics(false);
  return createApp({
    checks: Object.entries(ready).map(([name, value]) => ({ name, ready: () => value })),
    metrics: async () => ({
      body: await metrics.registry.metrics(),
      contentType: metrics.registry.contentType,
    }),
  });
}

describe('controller HTTP app', () => {
  it('answers /healthz with ok whatever the readiness', async () => {
    const res = await appWith({ api: false }).request('/healthz');
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok');
  });

  it('is ready only when every check passes, and names the failing ones', async () => {
    assert.equal((await appWith({ api: true, poll: true }).request('/readyz')).status, 200);
    const res = await appWith({ api: true, poll: false }).request('/readyz');
    assert.equal(res.status, 503);
    assert.match(await res.text(), /poll/);
    const one = await appWith({ api: true, poll: false }).request('/readyz/api');
    assert.equal(one.status, 200);
    const verbose = await appWith({ api: true, poll: false }).request('/readyz?verbose');
    assert.match(await verbose.text(), /\[-\]poll failed/);
  });

  it('serves Prometheus text with the controller metrics pre-initialised', async () => {
    const res = await appWith({}).request('/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const body = await res.text();
    assert.match(body, /controller_agents\{phase="Pending"\} 0/);
    assert.match(body, /controller_run_failures_total\{kind="build_error"\} 0/);
    assert.match(body, /controller_is_leader 0/);
  });

  it('answers unknown paths with 404', async () => {
    const res = await appWith({}).request('/nope');
    assert.equal(res.status, 404);
  });

  it('listens on a real port and closes', async () => {
    const server = await serveApp(appWith({}), 0, '127.0.0.1');
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/healthz`);
      assert.equal(await res.text(), 'ok');
    } finally {
      await server.close();
    }
  });

  it("shows a check's detail (a warning while ready) in ?verbose and on its own path", async () => {
    const app = createApp({
      checks: [{ name: 'crd-schema', ready: () => true, detail: () => 'installed CRDs lack fields' }],
      metrics: async () => ({ body: '', contentType: 'text/plain' }),
    });
    const verbose = await app.request('/readyz?verbose');
    assert.equal(verbose.status, 200);
    assert.match(await verbose.text(), /^\[\+\]crd-schema ok: installed CRDs lack fields$/m);
    const one = await app.request('/readyz/crd-schema');
    assert.equal(await one.text(), 'ok: installed CRDs lack fields');
    assert.equal(await (await app.request('/readyz')).text(), 'ok');
  });
});
