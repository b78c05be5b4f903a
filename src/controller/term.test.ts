import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeError } from '../kube/index.ts';
import { flushMicrotasks, ManualClock } from '../runtime/clock.ts';
import type { WorkResult } from '../runtime/index.ts';
import { createLogger } from '../shared/log.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { createTerms, TERM_RELIST_RETRY_MS, type TermDeps } from './term.ts';

const POLL_MS = 15_000;
const unavailable: KubeError = { kind: 'network', message: 'connection refused' };

/** A term's collaborators, recording what happens in order. */
function collaborators(relists: Result<unknown, KubeError>[][]) {
  const clock = new ManualClock(0);
  const events: string[] = [];
  const handlers = new Map<string, () => void>();
  const deps: TermDeps = {
    clock,
    logger: createLogger('error', () => undefined),
    workers: 2,
    pollIntervalMs: POLL_MS,
    handle: (key, reason) => {
      events.push(`handle ${key} ${reason}`);
      return new Promise<WorkResult>((resolve) => handlers.set(key, () => resolve({ kind: 'done' })));
    },
    ready: async () => void events.push('ready'),
    relist: async () => {
      events.push(`relist@${clock.now()}`);
      return relists.shift() ?? [ok(undefined), ok(undefined)];
    },
    wakeFirst: () => events.push('wakeFirst'),
    poll: async () => void events.push(`poll@${clock.now()}`),
    onTerm: (m) => events.push(m),
  };
  return { clock, events, deps, handlers };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await flushMicrotasks();
}

describe('createTerms', () => {
  it('re-lists until both LISTs succeed, then wakes first, starts, and polls every interval', async () => {
    const c = collaborators([[ok(undefined), err(unavailable)]]);
    const terms = createTerms(c.deps);
    const starting = terms.start();
    await settle();
    // The first re-list failed: nothing is woken before the retry, one second later.
    assert.deepEqual(c.events, ['begun', 'ready', 'relist@0']);
    await c.clock.advance(TERM_RELIST_RETRY_MS);
    await starting;
    assert.deepEqual(c.events, ['begun', 'ready', 'relist@0', 'relist@1000', 'wakeFirst', 'started']);
    c.events.length = 0;
    await c.clock.advance(POLL_MS);
    await c.clock.advance(POLL_MS);
    assert.deepEqual(c.events, ['poll@16000', 'poll@31000']);
    await terms.stop();
    assert.equal(terms.queue(), undefined);
    await c.clock.advance(POLL_MS * 3);
    assert.deepEqual(c.events, ['poll@16000', 'poll@31000', 'ended']);
  });

  it('a new term waits until the previous term’s handlers have finished', async () => {
    const c = collaborators([]);
    const terms = createTerms(c.deps);
    await terms.start();
    terms.queue()?.add('team/a', false, 'agent-changed');
    await settle();
    assert.deepEqual(c.events.slice(-1), ['handle team/a agent-changed']);
    const stopped = terms.stop();
    c.events.length = 0;
    const next = terms.start();
    await settle();
    // Begun (the Lease is held), but it reads nothing while the old term's handler runs.
    assert.deepEqual(c.events, ['begun']);
    c.handlers.get('team/a')?.();
    await stopped;
    await next;
    assert.deepEqual(c.events, ['begun', 'ready', 'relist@0', 'wakeFirst', 'started']);
    await terms.stop();
  });

  it('a term that ends while it re-lists wakes nothing and never starts', async () => {
    const c = collaborators([[err(unavailable), ok(undefined)]]);
    const terms = createTerms(c.deps);
    const starting = terms.start();
    await settle();
    await terms.stop();
    await c.clock.advance(TERM_RELIST_RETRY_MS * 5);
    await starting;
    assert.deepEqual(c.events, ['begun', 'ready', 'relist@0', 'ended']);
  });
});
