import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeTransport } from './fake-transport.ts';
import { CONFIG_MAPS } from './resources.ts';
import {
  createLineDecoder,
  DEFAULT_WATCH_IDLE_MS,
  parseWatchLine,
  type WatchEvent,
  watchOnce,
  watchTimeoutSeconds,
} from './watch.ts';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const ev = (type: string, name: string, rv: string): string =>
  JSON.stringify({
    type,
    object: { kind: 'ConfigMap', metadata: { name, namespace: 'n', resourceVersion: rv } },
  });

describe('createLineDecoder', () => {
  it('yields complete lines and keeps the tail', () => {
    const d = createLineDecoder();
    assert.deepEqual(d.push(enc('a\nb\nc')).lines, ['a', 'b']);
    assert.deepEqual(d.push(enc('d\n')).lines, ['cd']);
    assert.equal(d.flush(), undefined);
  });
  it('handles a stream split at every byte, including inside multi-byte characters', () => {
    const text = `${ev('ADDED', 'ä€😀', '1')}\n${ev('MODIFIED', 'x', '2')}\r\n`;
    const bytes = enc(text);
    const d = createLineDecoder();
    const lines: string[] = [];
    for (let i = 0; i < bytes.length; i++) lines.push(...d.push(bytes.subarray(i, i + 1)).lines);
    assert.deepEqual(lines, [ev('ADDED', 'ä€😀', '1'), ev('MODIFIED', 'x', '2')]);
  });
  it('handles many lines in one chunk and skips blank lines', () => {
    const d = createLineDecoder();
    assert.deepEqual(d.push(enc('\n\none\n  \ntwo\nthree\n')).lines, ['one', 'two', 'three']);
  });
  it('returns an unterminated last line on flush', () => {
    const d = createLineDecoder();
    d.push(enc('x\ntail'));
    assert.equal(d.flush(), 'tail');
    assert.equal(d.flush(), undefined);
  });
  it('drops an over-long line, reports overflow, and recovers at the next newline', () => {
    const d = createLineDecoder(8);
    const first = d.push(enc('ok\n0123456789'));
    assert.deepEqual(first.lines, ['ok']);
    assert.equal(first.overflow, true);
    const second = d.push(enc('abcdef\nnext\n'));
    assert.deepEqual(second.lines, ['next']);
    assert.equal(second.overflow, false);
  });
  it('drops an over-long line that ends in the same chunk', () => {
    const d = createLineDecoder(4);
    const r = d.push(enc('toolong\nfine\n'));
    assert.deepEqual(r.lines, ['fine']);
    assert.equal(r.overflow, true);
  });
});

describe('parseWatchLine', () => {
  it('parses object events with their resourceVersion', () => {
    const w = parseWatchLine(ev('MODIFIED', 'a', '17'));
    assert.equal(w.kind, 'object');
    if (w.kind !== 'object') return;
    assert.equal(w.type, 'MODIFIED');
    assert.equal(w.resourceVersion, '17');
    assert.deepEqual(w.object.metadata, { name: 'a', namespace: 'n', resourceVersion: '17' });
  });
  it('parses bookmarks', () => {
    const line = JSON.stringify({
      type: 'BOOKMARK',
      object: {
        kind: 'ConfigMap',
        metadata: { resourceVersion: '99', annotations: { 'k8s.io/initial-events-end': 'true' } },
      },
    });
    assert.deepEqual(parseWatchLine(line), { kind: 'bookmark', resourceVersion: '99' });
  });
  it('recognises an in-stream 410 as gone', () => {
    const line = JSON.stringify({
      type: 'ERROR',
      object: {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message: 'too old resource version: 123 (456)',
        reason: 'Expired',
        code: 410,
      },
    });
    const w = parseWatchLine(line);
    assert.ok(w.kind === 'error' && w.gone && w.status.message === 'too old resource version: 123 (456)');
    const old = parseWatchLine(
      JSON.stringify({ type: 'ERROR', object: { kind: 'Status', reason: 'Gone', code: 410 } }),
    );
    assert.ok(old.kind === 'error' && old.gone);
  });
  it('keeps other in-stream errors as errors that are not gone', () => {
    const w = parseWatchLine(
      JSON.stringify({ type: 'ERROR', object: { kind: 'Status', reason: 'InternalError', code: 500 } }),
    );
    assert.ok(w.kind === 'error' && !w.gone && w.status.code === 500);
  });
  it('classifies garbage', () => {
    for (const line of [
      'not json',
      '42',
      '{"type":"ADDED"}',
      '{"type":"WHAT","object":{"metadata":{}}}',
      '{"type":"ADDED","object":{}}',
      '{"type":"BOOKMARK","object":{"metadata":{}}}',
    ]) {
      assert.equal(parseWatchLine(line).kind, 'garbage', line);
    }
  });
});

describe('watchTimeoutSeconds', () => {
  it('stays within 60..79 s, below the idle limit, so the server ends a quiet watch before it counts as dead', () => {
    assert.equal(watchTimeoutSeconds(0), 60);
    assert.equal(watchTimeoutSeconds(0.5), 70);
    assert.equal(watchTimeoutSeconds(0.9999999), 79);
    assert.equal(watchTimeoutSeconds(1), 79);
    assert.equal(watchTimeoutSeconds(-1), 60);
    assert.ok(watchTimeoutSeconds(1) * 1000 < DEFAULT_WATCH_IDLE_MS - 10_000);
  });
});

describe('watchOnce', () => {
  const opts = { namespace: 'n', resourceVersion: '5', timeoutSeconds: 300 };

  it('sends rv, bookmarks and timeout, delivers events in order and reports a clean close', async () => {
    const t = createFakeTransport({
      stream: async (_req, ctl) => {
        const body = `${ev('ADDED', 'a', '6')}\n${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } })}\n${ev('DELETED', 'a', '8')}\n`;
        ctl.push(body.slice(0, 10));
        ctl.push(body.slice(10, 100));
        ctl.push(body.slice(100));
        return 'end';
      },
    });
    const seen: WatchEvent[] = [];
    const end = await watchOnce(t, CONFIG_MAPS, opts, (e) => seen.push(e));
    assert.deepEqual(end, { kind: 'closed', events: 3 });
    assert.deepEqual(
      seen.map((e) =>
        e.kind === 'object' ? `${e.type}:${e.resourceVersion}` : `BOOKMARK:${e.resourceVersion}`,
      ),
      ['ADDED:6', 'BOOKMARK:7', 'DELETED:8'],
    );
    assert.equal(t.requests[0]?.path, '/api/v1/namespaces/n/configmaps');
    assert.deepEqual(t.requests[0]?.query, {
      watch: 1,
      labelSelector: undefined,
      fieldSelector: undefined,
      resourceVersion: '5',
      allowWatchBookmarks: true,
      timeoutSeconds: 300,
    });
    const first = seen[0];
    assert.ok(first?.kind === 'object' && first.object.apiVersion === 'v1');
  });

  it('reports an in-stream ERROR 410 as gone and stops reading', async () => {
    const t = createFakeTransport({
      stream: async (_req, ctl) => {
        ctl.push(`${ev('ADDED', 'a', '6')}\n`);
        ctl.push(
          `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } })}\n`,
        );
        ctl.push(`${ev('ADDED', 'b', '9')}\n`);
        await ctl.aborted();
        return 'end';
      },
    });
    const seen: WatchEvent[] = [];
    const end = await watchOnce(t, CONFIG_MAPS, opts, (e) => seen.push(e));
    assert.deepEqual(end, { kind: 'gone', message: 'too old', events: 1 });
    assert.equal(seen.length, 1);
  });

  it('reports HTTP 410 as gone', async () => {
    const t = createFakeTransport({
      stream: async () => ({
        status: 410,
        body: { kind: 'Status', code: 410, reason: 'Expired', message: 'gone!' },
      }),
    });
    assert.deepEqual(await watchOnce(t, CONFIG_MAPS, opts, () => {}), {
      kind: 'gone',
      message: 'gone!',
      events: 0,
    });
  });

  it('reports other in-stream errors and transport failures as failed', async () => {
    const t = createFakeTransport({
      stream: async (_req, ctl) => {
        ctl.push(
          `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 500, reason: 'InternalError', message: 'boom' } })}\n`,
        );
        await ctl.aborted();
        return 'end';
      },
    });
    const end = await watchOnce(t, CONFIG_MAPS, opts, () => {});
    assert.ok(end.kind === 'failed' && end.error.kind === 'api' && end.error.code === 500);
    const idle = createFakeTransport({
      stream: async () => ({ error: { kind: 'timeout', idle: true, message: 'silent' } }),
    });
    const e2 = await watchOnce(idle, CONFIG_MAPS, opts, () => {});
    assert.ok(e2.kind === 'failed' && e2.error.kind === 'timeout');
  });

  it('passes garbage lines to onGarbage and keeps going', async () => {
    const t = createFakeTransport({
      stream: async (_req, ctl) => {
        ctl.push(`garbage\n${ev('ADDED', 'a', '6')}\n`);
        return 'end';
      },
    });
    const garbage: string[] = [];
    const seen: WatchEvent[] = [];
    const end = await watchOnce(
      t,
      CONFIG_MAPS,
      opts,
      (e) => seen.push(e),
      (m) => garbage.push(m),
    );
    assert.equal(end.kind, 'closed');
    assert.equal(garbage.length, 1);
    assert.equal(seen.length, 1);
  });

  it('reports aborted when the caller aborts', async () => {
    const ctl = new AbortController();
    const t = createFakeTransport({
      stream: async (_req, c) => {
        ctl.abort();
        await c.aborted();
        return 'end';
      },
    });
    assert.deepEqual(await watchOnce(t, CONFIG_MAPS, { ...opts, signal: ctl.signal }, () => {}), {
      kind: 'aborted',
      events: 0,
    });
  });
});
