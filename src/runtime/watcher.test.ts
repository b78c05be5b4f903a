import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_BACKOFF } from './backoff.ts';
import { INITIAL_WATCHER_STATE, nextWatcherStep, type WatcherState } from './watcher.ts';

const step = (state: WatcherState, outcome: Parameters<typeof nextWatcherStep>[1], now = 0, random = 0) =>
  nextWatcherStep(state, outcome, now, random, DEFAULT_BACKOFF);
const watching = (rv: string): WatcherState => ({ ...INITIAL_WATCHER_STATE, resourceVersion: rv });

describe('nextWatcherStep', () => {
  it('lists first', () => {
    assert.deepEqual(step(INITIAL_WATCHER_STATE, { kind: 'start' }).step, {
      kind: 'list',
      reason: 'initial',
    });
  });

  it('watches from the list resourceVersion', () => {
    const r = step(INITIAL_WATCHER_STATE, { kind: 'listed', resourceVersion: '10' });
    assert.deepEqual(r.step, { kind: 'watch', resourceVersion: '10' });
    assert.equal(r.state.resourceVersion, '10');
  });

  it('backs off and lists again after a failed list', () => {
    const r = step(INITIAL_WATCHER_STATE, { kind: 'listFailed', error: { kind: 'network', message: 'x' } });
    assert.deepEqual(r.step, { kind: 'sleep', ms: 800, next: { kind: 'list', reason: 'retry' } });
    const r2 = step(r.state, { kind: 'listFailed', error: { kind: 'network', message: 'x' } }, 10);
    assert.deepEqual(r2.step, { kind: 'sleep', ms: 1600, next: { kind: 'list', reason: 'retry' } });
  });

  it('re-lists at once on a 410 and forgets the resourceVersion', () => {
    const r = step(watching('10'), {
      kind: 'watchEnded',
      end: { kind: 'gone', message: 'too old', events: 3 },
      resourceVersion: '12',
      durationMs: 5000,
    });
    assert.deepEqual(r.step, { kind: 'list', reason: 'gone' });
    assert.equal(r.state.resourceVersion, undefined);
  });

  it('re-watches at once from the last resourceVersion after a clean close', () => {
    const r = step(watching('10'), {
      kind: 'watchEnded',
      end: { kind: 'closed', events: 2 },
      resourceVersion: '15',
      durationMs: 300_000,
    });
    assert.deepEqual(r.step, { kind: 'watch', resourceVersion: '15' });
    assert.equal(r.state.backoff.failures, 0);
  });

  it('backs off when a stream closes immediately without events', () => {
    const r = step(watching('10'), {
      kind: 'watchEnded',
      end: { kind: 'closed', events: 0 },
      resourceVersion: '10',
      durationMs: 20,
    });
    assert.deepEqual(r.step, { kind: 'sleep', ms: 800, next: { kind: 'watch', resourceVersion: '10' } });
  });

  it('backs off and re-watches from the last resourceVersion after any other failure, never re-listing', () => {
    let state = watching('10');
    const delays: number[] = [];
    for (let i = 0; i < 8; i++) {
      const r = step(
        state,
        {
          kind: 'watchEnded',
          end: { kind: 'failed', error: { kind: 'network', message: 'reset' }, events: 0 },
          resourceVersion: '11',
          durationMs: 10,
        },
        i * 100,
      );
      assert.equal(r.step.kind, 'sleep');
      if (r.step.kind !== 'sleep') return;
      assert.deepEqual(r.step.next, { kind: 'watch', resourceVersion: '11' });
      delays.push(r.step.ms);
      state = r.state;
    }
    assert.deepEqual(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
  });

  it('applies jitter from the random input', () => {
    const r = step(
      watching('1'),
      {
        kind: 'watchEnded',
        end: { kind: 'failed', error: { kind: 'timeout', idle: true, message: '' }, events: 0 },
        resourceVersion: '1',
        durationMs: 90_000,
      },
      0,
      1,
    );
    assert.ok(r.step.kind === 'sleep' && r.step.ms === 400);
  });

  it('lists on a requested resync', () => {
    assert.deepEqual(step(watching('5'), { kind: 'resyncRequested' }).step, {
      kind: 'list',
      reason: 'resync',
    });
  });
});
