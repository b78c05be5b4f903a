import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAgentPool } from './agent-pool.ts';
import type { TlsMaterial } from './tls.ts';

/** A pool over fake agents that remember their TLS material and whether they were destroyed. */
function fakePool() {
  const made: { tls: TlsMaterial; destroyed: number }[] = [];
  const pool = createAgentPool((tls) => {
    const agent = {
      tls,
      destroyed: 0,
      destroy() {
        agent.destroyed++;
      },
    };
    made.push(agent);
    return agent;
  });
  return { pool, made };
}

describe('createAgentPool', () => {
  it('shares one agent between requests with the same TLS material (compared by content)', () => {
    const { pool, made } = fakePool();
    const a = pool.acquire({ ca: 'CA' });
    const b = pool.acquire({ ca: new TextEncoder().encode('CA') });
    assert.equal(a, b);
    assert.equal(made.length, 1);
    assert.equal(a.inflight, 2);
    pool.release(a);
    pool.release(b);
    assert.equal(a.inflight, 0);
    assert.equal(made[0]?.destroyed, 0, 'the current agent stays for keep-alive');
  });

  it('replaces the agent when the TLS material changes; an idle one is destroyed at once', () => {
    const { pool, made } = fakePool();
    const old = pool.acquire({ cert: 'C1' });
    pool.release(old);
    const next = pool.acquire({ cert: 'C2' });
    assert.notEqual(next, old);
    assert.equal(old.retired, true);
    assert.deepEqual(
      made.map((m) => [m.tls.cert, m.destroyed]),
      [
        ['C1', 1],
        ['C2', 0],
      ],
    );
    assert.equal(next.retired, false);
  });

  it('a replaced agent still in use is destroyed with its last request, once', () => {
    const { pool, made } = fakePool();
    const old = pool.acquire({ cert: 'C1' });
    pool.acquire({ cert: 'C1' });
    pool.acquire({ cert: 'C2' });
    assert.equal(made[0]?.destroyed, 0);
    pool.release(old);
    assert.equal(made[0]?.destroyed, 0);
    pool.release(old);
    assert.equal(made[0]?.destroyed, 1);
  });

  it('close destroys every agent, in use or retired, and says so', () => {
    const { pool, made } = fakePool();
    pool.acquire({ cert: 'C1' });
    pool.acquire({ cert: 'C2' });
    assert.equal(pool.isClosed(), false);
    pool.close();
    assert.equal(pool.isClosed(), true);
    assert.deepEqual(
      made.map((m) => m.destroyed),
      [1, 1],
    );
  });
});
