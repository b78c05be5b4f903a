import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { err, ok, type Result } from '../../shared/result.ts';
import type { BatchError, BatchListPage } from '../../vendors/batch/port.ts';
import { afterSweep, censusOfGroups, groupKey, listWanted, sweepPageLimit } from './sweep.ts';

const batch = (id: string, provider: 'anthropic' | 'openai', namespace = 'ns', secretKey = 'KEY') => ({
  id,
  provider,
  namespace,
  secretKey,
});

describe('groupKey', () => {
  it('tells groups apart by provider, namespace and key, and nothing else', () => {
    const a = batch('a', 'anthropic');
    assert.equal(groupKey(a), groupKey(batch('b', 'anthropic')));
    assert.notEqual(groupKey(a), groupKey(batch('a', 'openai')));
    assert.notEqual(groupKey(a), groupKey(batch('a', 'anthropic', 'other')));
    assert.notEqual(groupKey(a), groupKey(batch('a', 'anthropic', 'ns', 'OTHER')));
  });
});

describe('censusOfGroups', () => {
  it('counts the batches of each group and keeps the first of each, in the order given', () => {
    const b1 = batch('1', 'anthropic');
    const b2 = batch('2', 'openai');
    const b3 = batch('3', 'anthropic');
    const b4 = batch('4', 'anthropic', 'team');
    const { sizes, first } = censusOfGroups([b1, b2, b3, b4]);
    assert.deepEqual(
      [...sizes],
      [
        [groupKey(b1), 2],
        [groupKey(b2), 1],
        [groupKey(b4), 1],
      ],
    );
    assert.deepEqual(
      [...first].map(([key, b]) => [key, b.id]),
      [
        [groupKey(b1), '1'],
        [groupKey(b2), '2'],
        [groupKey(b4), '4'],
      ],
    );
  });

  it('is empty for no batches', () => {
    const { sizes, first } = censusOfGroups([]);
    assert.equal(sizes.size, 0);
    assert.equal(first.size, 0);
  });
});

describe('sweepPageLimit', () => {
  it('one page per 100 batches, rounded up, and one more', () => {
    assert.deepEqual(
      [0, 1, 100, 101, 250].map((n) => sweepPageLimit(n)),
      [1, 2, 2, 3, 4],
    );
  });
});

describe('afterSweep', () => {
  const now = 50_000;
  const period = 10_000;
  it('not seen: polled on its own when it was due anyway', () => {
    assert.deepEqual(afterSweep(undefined, 42_000, now, period), { mode: 'direct', dueAt: 42_000 });
  });
  it('seen ended: polled on its own now, to read its result', () => {
    assert.deepEqual(afterSweep(true, 70_000, now, period), { mode: 'direct', dueAt: 50_000 });
  });
  it('seen pending: left to the sweeps, and not due on its own for a period (or later, if it was)', () => {
    assert.deepEqual(afterSweep(false, 42_000, now, period), { mode: 'listed', dueAt: 60_000 });
    assert.deepEqual(afterSweep(false, 65_000, now, period), { mode: 'listed', dueAt: 65_000 });
  });
});

describe('listWanted', () => {
  /** A list of `ids` (ended when in `ended`), 100 to a page, whose page `failAt` (if any) fails with a 503. */
  function account(ids: string[], ended: Set<string> = new Set(), failAt?: number) {
    const cursors: (string | undefined)[] = [];
    const listPage = async (cursor: string | undefined): Promise<Result<BatchListPage, BatchError>> => {
      cursors.push(cursor);
      const start = cursor === undefined ? 0 : Number(cursor);
      if (failAt !== undefined && start / 100 === failAt)
        return err({ kind: 'unavailable', status: 503, message: 'HTTP 503 overloaded' });
      const next = start + 100 < ids.length ? String(start + 100) : undefined;
      return ok({ batches: ids.slice(start, start + 100).map((id) => ({ id, ended: ended.has(id) })), next });
    };
    return { listPage, cursors };
  }
  const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

  it('stops at the page where the last wanted batch was seen, and says which ended', async () => {
    const a = account([...ids('other', 150), 'w1', 'w2', ...ids('old', 300)], new Set(['w2', 'other0']));
    const pages: string[] = [];
    const r = await listWanted(a.listPage, new Set(['w1', 'w2']), (p) => pages.push(p));
    assert.deepEqual(
      r,
      ok(
        new Map([
          ['w1', false],
          ['w2', true],
        ]),
      ),
    );
    assert.deepEqual(a.cursors, [undefined, '100']);
    assert.deepEqual(pages, ['ok', 'ok']);
  });

  it('stops when the list ends, with what it saw', async () => {
    const a = account(['w1', 'x']);
    const r = await listWanted(a.listPage, new Set(['w1', 'w9']), () => {});
    assert.deepEqual(r, ok(new Map([['w1', false]])));
    assert.deepEqual(a.cursors, [undefined]);
  });

  it('reads at most sweepPageLimit pages however many other batches come first', async () => {
    const a = account([...ids('other', 1000), 'w1']);
    const r = await listWanted(a.listPage, new Set(['w1']), () => {});
    assert.deepEqual(r, ok(new Map()));
    assert.deepEqual(a.cursors, [undefined, '100']);
  });

  it('a failed page fails the sweep with its error, and is reported', async () => {
    const a = account([...ids('other', 150), 'w1'], new Set(), 1);
    const pages: string[] = [];
    const r = await listWanted(a.listPage, new Set(['w1']), (p) => pages.push(p));
    assert.deepEqual(r, err({ kind: 'unavailable', status: 503, message: 'HTTP 503 overloaded' }));
    assert.deepEqual(pages, ['ok', 'error']);
  });
});
