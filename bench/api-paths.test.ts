import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ApiClient, listAll, streamingList } from './api-paths.ts';

/** A client over canned answers: pages by `continue` token, and a watch stream of lines. */
function fakeClient(
  pages: Record<string, { items: number; next?: string }>,
  lines: string[],
): ApiClient & {
  paths: string[];
  cancelledAfter: number | undefined;
} {
  const paths: string[] = [];
  const c = {
    name: 'fake',
    paths,
    cancelledAfter: undefined as number | undefined,
    request: async (_method: string, path: string) => {
      paths.push(path);
      const token = new URL(path, 'https://x').searchParams.get('continue') ?? '';
      const page = pages[token];
      if (page === undefined) return { status: 410, body: '{}' };
      return {
        status: 200,
        body: JSON.stringify({
          items: Array.from({ length: page.items }, () => ({})),
          metadata: { continue: page.next ?? '' },
        }),
      };
    },
    stream: async (path: string, onLine: (line: string) => boolean) => {
      paths.push(path);
      for (const [i, line] of lines.entries()) {
        if (onLine(line)) {
          c.cancelledAfter = i + 1;
          return;
        }
      }
    },
    close: () => undefined,
  };
  return c;
}

const added = JSON.stringify({ type: 'ADDED', object: { kind: 'Agent', metadata: {} } });
const endBookmark = JSON.stringify({
  type: 'BOOKMARK',
  object: { kind: 'Agent', metadata: { annotations: { 'k8s.io/initial-events-end': 'true' } } },
});

describe('api paths', () => {
  it('listAll follows continue tokens and counts the items of every page; limit 0 asks for one answer', async () => {
    const c = fakeClient(
      { '': { items: 2, next: 't1' }, t1: { items: 2, next: 't2' }, t2: { items: 1 } },
      [],
    );
    assert.equal(await listAll(c, '/apis/x/agents', 2), 5);
    assert.deepEqual(c.paths, [
      '/apis/x/agents?limit=2',
      '/apis/x/agents?limit=2&continue=t1',
      '/apis/x/agents?limit=2&continue=t2',
    ]);
    const one = fakeClient({ '': { items: 7 } }, []);
    assert.equal(await listAll(one, '/apis/x/agents', 0), 7);
    assert.deepEqual(one.paths, ['/apis/x/agents']);
  });

  it('listAll fails on an answer other than 200', async () => {
    const c = fakeClient({ '': { items: 1, next: 'gone' } }, []);
    await assert.rejects(listAll(c, '/apis/x/agents', 1), /HTTP 410/);
  });

  it('streamingList counts ADDED events up to the initial-events-end bookmark and stops there', async () => {
    const plainBookmark = JSON.stringify({ type: 'BOOKMARK', object: { metadata: {} } });
    const c = fakeClient({}, [added, added, plainBookmark, added, endBookmark, added]);
    assert.equal(await streamingList(c, '/apis/x/agents'), 3);
    assert.equal(c.cancelledAfter, 5, 'cancelled at the bookmark, not read to the end');
    assert.match(c.paths[0] ?? '', /watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan/);
  });

  it('streamingList fails when the API server refuses it or the stream ends early', async () => {
    const refused = JSON.stringify({
      type: 'ERROR',
      object: { kind: 'Status', message: 'sendInitialEvents is forbidden' },
    });
    await assert.rejects(
      streamingList(fakeClient({}, [refused]), '/a'),
      /refused: sendInitialEvents is forbidden/,
    );
    await assert.rejects(
      streamingList(fakeClient({}, [added]), '/a'),
      /ended before the initial-events-end bookmark/,
    );
  });
});
