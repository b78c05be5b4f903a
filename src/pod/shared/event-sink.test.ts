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
  let waiters: Array<() => void> = [];
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
      const woken = waiters;
      waiters = [];
      for (const w of woken) w();
      const status = reply(n++);
      if (status === 'hang') return;
      res.writeHead(status, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  /** Resolves once `count` requests have arrived. */
  const received = async (count: number): Promise<void> => {
    while (requests.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  return {
    requests,
    received,
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

/**
 * Turns a test that waits forever into a failure (a wait whose event never comes under a manual clock). Nothing is
 * asserted about how long anything takes: the manual clock decides when timers fire.
 */
const HANG = 20_000;

/** Lets pending I/O callbacks and promise reactions run (a few turns of the event loop; no timer). */
async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
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

  it('times out a hanging sink within the per-attempt bound', { timeout: HANG }, async (t) => {
    const srv = await recordingServer(() => 'hang');
    // A manual clock: only the test's ticks fire timers.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    try {
      let settled = false;
      const pending = postWithRetry(
        { url: srv.url, body: '{}', contentType: 'application/json', headers: [] },
        { attempts: 2, baseMs: 0, maxMs: 0 },
        { timeoutMs: 150 },
      ).finally(() => {
        settled = true;
      });
      for (const attempt of [1, 2]) {
        await srv.received(attempt);
        t.mock.timers.tick(149);
        await turns();
        assert.equal(srv.requests.length, attempt, `attempt ${attempt} still waits at 149 ms`);
        assert.equal(settled, false);
        t.mock.timers.tick(1);
      }
      const r = await pending;
      assert.equal(r.ok, false);
      assert.equal(r.attempts, 2);
      assert.match((!r.ok && r.error) || '', /timed out after 150 ms/);
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

  it('close() bounds a hanging sink by its budget and counts what was lost', { timeout: HANG }, async (t) => {
    const srv = await recordingServer(() => 'hang');
    const { log } = captureLog();
    // A manual clock: timers fire on the test's ticks only, and `now` reads the same clock.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let clock = 0;
    const tick = (ms: number): void => {
      clock += ms;
      t.mock.timers.tick(ms);
    };
    try {
      const sink = createEventSink(
        options({ sinks: [{ type: 'http', url: srv.url }], log, requestTimeoutMs: 60_000, now: () => clock }),
      );
      sink.deliver('{"i":1}');
      sink.deliver('{"i":2}');
      await srv.received(1);
      let settled = false;
      const closing = sink.close(300).finally(() => {
        settled = true;
      });
      tick(299);
      await turns();
      assert.equal(settled, false, 'close() waits out its budget');
      tick(1);
      // No more time passes: close() ends at its budget, with nothing left in flight.
      const [stats] = await closing;
      assert.equal((stats?.dropped ?? 0) + (stats?.failed ?? 0), 2);
      assert.equal(srv.requests.length, 1, 'the second event was never sent');
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
