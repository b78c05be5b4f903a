import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { annotationWith, mergeUsage, oneCall, UsageBook } from './accumulator.ts';

const run = { namespace: 'team-a', name: 'fix-1', uid: 'uid-1' };
const t = (input: number, output: number, cacheRead = 0, cacheWrite = 0) => ({
  input,
  output,
  cacheRead,
  cacheWrite,
});

describe('usage sums', () => {
  it('adds model by model', () => {
    const a = { models: { m1: { calls: 1, input: 10, output: 5, cacheRead: 1, cacheWrite: 2 } } };
    const b = {
      models: {
        m1: { calls: 2, input: 3, output: 4, cacheRead: 5, cacheWrite: 6 },
        m2: { calls: 1, input: 7, output: 0, cacheRead: 0, cacheWrite: 0 },
      },
    };
    assert.deepEqual(mergeUsage(a, b), {
      models: {
        m1: { calls: 3, input: 13, output: 9, cacheRead: 6, cacheWrite: 8 },
        m2: { calls: 1, input: 7, output: 0, cacheRead: 0, cacheWrite: 0 },
      },
    });
  });
  it('a call without usage is a call with no tokens', () => {
    assert.deepEqual(oneCall('m', undefined), {
      models: { m: { calls: 1, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } },
    });
    assert.deepEqual(oneCall('m', t(1, 2, 3, 4)), {
      models: { m: { calls: 1, input: 1, output: 2, cacheRead: 3, cacheWrite: 4 } },
    });
  });
});

describe('annotationWith', () => {
  const delta = oneCall('claude-sonnet-4-5', t(100, 20, 5, 1));
  it('starts an absent annotation with the delta', () => {
    assert.deepEqual(annotationWith(undefined, delta), {
      text: '{"models":{"claude-sonnet-4-5":{"calls":1,"input":100,"output":20,"cacheRead":5,"cacheWrite":1}}}',
      usage: {
        models: { 'claude-sonnet-4-5': { calls: 1, input: 100, output: 20, cacheRead: 5, cacheWrite: 1 } },
      },
      reset: false,
    });
  });
  it('adds to what the annotation holds (written by another replica)', () => {
    const current = JSON.stringify({
      models: {
        'claude-sonnet-4-5': { calls: 2, input: 1, output: 2, cacheRead: 3, cacheWrite: 4 },
        'claude-haiku-4-5': { calls: 1, input: 9, output: 9, cacheRead: 0, cacheWrite: 0 },
      },
    });
    assert.deepEqual(JSON.parse(annotationWith(current, delta).text), {
      models: {
        'claude-sonnet-4-5': { calls: 3, input: 101, output: 22, cacheRead: 8, cacheWrite: 5 },
        'claude-haiku-4-5': { calls: 1, input: 9, output: 9, cacheRead: 0, cacheWrite: 0 },
      },
    });
  });
  it('replaces a value that is not the schema’s JSON, and says so', () => {
    for (const bad of ['not json', '{"models":{"m":{"calls":-1}}}', '[]']) {
      const r = annotationWith(bad, delta);
      assert.equal(r.reset, true, bad);
      assert.deepEqual(JSON.parse(r.text), delta);
    }
  });
});

describe('UsageBook', () => {
  it('keeps a delta until its write succeeded; what comes meanwhile waits for the next write', () => {
    const book = new UsageBook();
    book.add(run, oneCall('m', t(10, 1)));
    book.add(run, oneCall('m', t(5, 2)));
    assert.deepEqual(book.waiting(), ['uid-1']);
    const taken = book.take('uid-1');
    assert.deepEqual(taken, {
      run,
      delta: { models: { m: { calls: 2, input: 15, output: 3, cacheRead: 0, cacheWrite: 0 } } },
    });
    assert.equal(book.take('uid-1'), undefined, 'one write at a time');
    book.add(run, oneCall('m', t(1, 1)));
    assert.deepEqual(book.waiting(), [], 'in flight: not waiting');
    book.settle('uid-1', 'written');
    assert.deepEqual(book.take('uid-1')?.delta, {
      models: { m: { calls: 1, input: 1, output: 1, cacheRead: 0, cacheWrite: 0 } },
    });
    book.settle('uid-1', 'written');
    assert.equal(book.size, 0);
  });

  it('puts a failed write’s delta back, added to what came meanwhile', () => {
    const book = new UsageBook();
    book.add(run, oneCall('m', t(10, 1)));
    book.take('uid-1');
    book.add(run, oneCall('n', t(2, 2)));
    book.settle('uid-1', 'kept');
    assert.deepEqual(book.take('uid-1')?.delta, {
      models: {
        m: { calls: 1, input: 10, output: 1, cacheRead: 0, cacheWrite: 0 },
        n: { calls: 1, input: 2, output: 2, cacheRead: 0, cacheWrite: 0 },
      },
    });
  });

  it('forgets a run whose Agent is gone', () => {
    const book = new UsageBook();
    book.add(run, oneCall('m', t(1, 1)));
    book.take('uid-1');
    book.add(run, oneCall('m', t(1, 1)));
    book.settle('uid-1', 'dropped');
    assert.equal(book.size, 0);
    assert.equal(book.take('uid-1'), undefined);
  });

  it('keeps runs apart', () => {
    const book = new UsageBook();
    book.add(run, oneCall('m', t(1, 0)));
    book.add({ ...run, name: 'fix-2', uid: 'uid-2' }, oneCall('m', t(2, 0)));
    assert.deepEqual(book.waiting().sort(), ['uid-1', 'uid-2']);
    assert.equal(book.take('uid-2')?.run.name, 'fix-2');
  });
});
