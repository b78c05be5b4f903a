import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../shared/log.ts';
import { createEventSink, type EventSinkOptions } from './event-sink.ts';
import { postWithRetry } from './http.ts';
import { agentFinished, agentStarted } from './lifecycle.ts';

interface Recorded {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A loopback HTTP server that records requests; `reply` decides each status (and may stall). */
async function recordingServer(reply: (n: number) => number | 'hang' = () => 200) {
  const requests: Recorded[] = [];
  let n = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const status = reply(n++);
      if (status === 'hang') return;
      res.writeHead(status, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    requests,
    url: `http://127.0.0.1:${port}/notify`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function captureLog() {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger('debug', (line) => void lines.push(JSON.parse(line) as Record<string, unknown>));
  return { log, lines, text: () => lines.map((l) => JSON.stringify(l)).join('\n') };
}

const fastRetry = { attempts: 3, baseMs: 1, maxMs: 2 };
const source = { agent: 'test-agent', pod: 'test-pod' };

function options(
  over: Partial<EventSinkOptions> & Pick<EventSinkOptions, 'sinks' | 'log'>,
): EventSinkOptions {
  return { source, env: {}, retry: fastRetry, tag: '[supervisor]', ...over };
}

describe('postWithRetry', () => {
  it('retries non-2xx up to the attempt limit and reports the last status', async () => {
    const srv = await recordingServer(() => 503);
    try {
      const r = await postWithRetry(
        { url: srv.url, body: '{}', contentType: 'application/json', headers: [] },
        fastRetry,
      );
      assert.equal(r.ok, false);
      assert.equal(r.attempts, 3);
      assert.equal(!r.ok && r.status, 503);
      assert.equal(srv.requests.length, 3);
    } finally {
      await srv.close();
    }
  });

  it('stops after the first success', async () => {
    const srv = await recordingServer((n) => (n === 0 ? 500 : 204));
    try {
      const r = await postWithRetry(
        { url: srv.url, body: 'x', contentType: 'text/plain', headers: [['X-A', '1']] },
        fastRetry,
      );
      assert.deepEqual(r, { ok: true, status: 204, attempts: 2 });
      assert.equal(srv.requests[1]?.headers['x-a'], '1');
      assert.equal(srv.requests[1]?.headers['content-type'], 'text/plain');
    } finally {
      await srv.close();
    }
  });

  it('times out a hanging sink within the per-attempt bound', async () => {
    const srv = await recordingServer(() => 'hang');
    try {
      const started = Date.now();
      const r = await postWithRetry(
        { url: srv.url, body: '{}', contentType: 'application/json', headers: [] },
        { attempts: 2, baseMs: 0, maxMs: 0 },
        { timeoutMs: 150 },
      );
      const took = Date.now() - started;
      assert.equal(r.ok, false);
      assert.match((!r.ok && r.error) || '', /timed out after 150 ms/);
      assert.ok(took >= 290 && took < 2000, `took ${took} ms`);
    } finally {
      await srv.close();
    }
  });

  it('uses the injected pause schedule: base·2^(n−1) capped, none after the last attempt', async () => {
    const pauses: number[] = [];
    const fail = async () => new Response('', { status: 500 });
    await postWithRetry(
      { url: 'http://127.0.0.1:9/x', body: '', contentType: 'application/json', headers: [] },
      { attempts: 5, baseMs: 200, maxMs: 500 },
      { fetch: fail, sleep: async (ms) => void pauses.push(ms) },
    );
    assert.deepEqual(pauses, [200, 400, 500, 500]);
  });
});

describe('event sink delivery', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'event-sink-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('POSTs one envelope per event, in order, with the secret header lines', async () => {
    const srv = await recordingServer();
    const { log } = captureLog();
    try {
      const sink = createEventSink(
        options({
          sinks: [{ type: 'stdout' }, { type: 'http', url: srv.url, headersSecret: 'SINK_AUTH' }],
          env: { SINK_AUTH: 'Authorization: Bearer t0ken\nX-Team: core' },
          log,
        }),
      );
      assert.equal(sink.count, 1);
      sink.deliverEvent(agentStarted());
      sink.deliver('{"i":1}');
      sink.deliver('not json');
      sink.deliverEvent(agentFinished(0));
      const stats = await sink.close(5000);
      assert.deepEqual(stats, [{ sink: srv.url, delivered: 4, failed: 0, dropped: 0 }]);
      const bodies = srv.requests.map((r) => JSON.parse(r.body) as { source: unknown; event: unknown });
      assert.deepEqual(
        bodies.map((b) => b.event),
        [agentStarted(), { i: 1 }, 'not json', agentFinished(0)],
      );
      for (const b of bodies) assert.deepEqual(b.source, source);
      for (const r of srv.requests) {
        assert.equal(r.headers.authorization, 'Bearer t0ken');
        assert.equal(r.headers['x-team'], 'core');
        assert.equal(r.headers['content-type'], 'application/json');
        assert.equal(r.url, '/notify');
      }
    } finally {
      await srv.close();
    }
  });

  it('appends envelopes to a file sink, one per line', async () => {
    const path = join(dir, 'events.jsonl');
    const { log } = captureLog();
    const sink = createEventSink(options({ sinks: [{ type: 'file', path }], log }));
    sink.deliverEvent(agentStarted());
    sink.deliver('{"i":1}');
    await sink.close(2000);
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n');
    assert.equal(lines.length, 2);
    assert.deepEqual(JSON.parse(lines[1] ?? ''), { source, event: { i: 1 } });
  });

  it('logs a failing file sink once and keeps going', async () => {
    const { log, lines } = captureLog();
    const sink = createEventSink(
      options({ sinks: [{ type: 'file', path: join(dir, 'no', 'such', 'f') }], log }),
    );
    sink.deliver('{"i":1}');
    sink.deliver('{"i":2}');
    const [stats] = await sink.close(2000);
    assert.equal(stats?.failed, 2);
    assert.equal(lines.filter((l) => String(l.msg).startsWith('[supervisor] file sink failed:')).length, 1);
  });

  it('refuses a double-wrapped payload with the BUG line and sends nothing', async () => {
    const srv = await recordingServer();
    const { log, text } = captureLog();
    try {
      const sink = createEventSink(options({ sinks: [{ type: 'http', url: srv.url }], log }));
      assert.equal(sink.deliver('{"source":{"agent":"x"},"event":{"i":1}}'), false);
      await sink.close(1000);
      assert.equal(srv.requests.length, 0);
      assert.match(text(), /\[supervisor\] BUG: refusing to wrap an already-wrapped agent output line/);
    } finally {
      await srv.close();
    }
  });

  it('a dead sink: logs "http sink failed after retries" once, drops ordinary events while cooling down', async () => {
    const { log, lines } = captureLog();
    const sink = createEventSink(
      options({
        sinks: [{ type: 'http', url: 'http://user:pw@127.0.0.1:9/dead?k=secret' }],
        log,
        cooldownMs: 60_000,
      }),
    );
    sink.deliverEvent(agentStarted());
    for (let i = 0; i < 5; i++) sink.deliver(`{"i":${i}}`);
    sink.deliverEvent(agentFinished(0));
    const started = Date.now();
    const [stats] = await sink.close(10_000);
    assert.ok(Date.now() - started < 5000, 'a dead sink drains quickly');
    assert.deepEqual(stats, { sink: 'http://127.0.0.1:9/dead?…', delivered: 0, failed: 2, dropped: 5 });
    const failures = lines.filter((l) => String(l.msg).includes('http sink failed after retries'));
    assert.equal(failures.length, 1);
    const all = JSON.stringify(lines);
    assert.ok(!all.includes('secret') && !all.includes('pw@'), 'no credentials in logs');
  });

  it('close() bounds a hanging sink by its budget and counts what was lost', async () => {
    const srv = await recordingServer(() => 'hang');
    const { log } = captureLog();
    try {
      const sink = createEventSink(
        options({ sinks: [{ type: 'http', url: srv.url }], log, requestTimeoutMs: 60_000 }),
      );
      sink.deliver('{"i":1}');
      sink.deliver('{"i":2}');
      const started = Date.now();
      const [stats] = await sink.close(300);
      const took = Date.now() - started;
      assert.ok(took >= 280 && took < 1500, `took ${took} ms`);
      assert.equal((stats?.dropped ?? 0) + (stats?.failed ?? 0), 2);
      sink.deliver('{"i":3}');
    } finally {
      await srv.close();
    }
  });

  it('bounds the queue for ordinary events but never for essential ones', async () => {
    const srv = await recordingServer();
    const { log } = captureLog();
    try {
      const sink = createEventSink(options({ sinks: [{ type: 'http', url: srv.url }], log, maxQueued: 2 }));
      for (let i = 0; i < 10; i++) sink.deliver(`{"i":${i}}`);
      sink.deliverEvent(agentFinished(0));
      const [stats] = await sink.close(5000);
      // The first event is taken off the queue at once, two more fit, the rest are dropped; the essential one is kept.
      assert.equal(stats?.delivered, 4);
      assert.equal(stats?.dropped, 7);
      assert.deepEqual(JSON.parse(srv.requests.at(-1)?.body ?? '').event, agentFinished(0));
    } finally {
      await srv.close();
    }
  });
});
