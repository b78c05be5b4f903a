import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EnvProblem } from './env.ts';
import { backoffAfter, DEFAULT_RETRY, parseRetryConfig } from './retry.ts';

describe('sink retry policy', () => {
  it('defaults to 3 attempts, 200 ms base, 5000 ms cap', () => {
    const problems: EnvProblem[] = [];
    assert.deepEqual(parseRetryConfig({}, problems), { attempts: 3, baseMs: 200, maxMs: 5000 });
    assert.deepEqual(problems, []);
  });

  it('reads the three variables; bad values fall back and are reported', () => {
    const problems: EnvProblem[] = [];
    const ok = parseRetryConfig(
      { AGENT_SINK_RETRY_ATTEMPTS: '5', AGENT_SINK_RETRY_BASE_MS: '10', AGENT_SINK_RETRY_MAX_MS: '15' },
      problems,
    );
    assert.deepEqual(ok, { attempts: 5, baseMs: 10, maxMs: 15 });
    const bad = parseRetryConfig(
      { AGENT_SINK_RETRY_ATTEMPTS: '0', AGENT_SINK_RETRY_BASE_MS: 'fast', AGENT_SINK_RETRY_MAX_MS: '-3' },
      problems,
    );
    assert.deepEqual(bad, { attempts: 3, baseMs: 200, maxMs: 0 });
    assert.deepEqual(
      problems.map((p) => p.name),
      ['AGENT_SINK_RETRY_ATTEMPTS', 'AGENT_SINK_RETRY_BASE_MS'],
    );
  });

  it('defaults give 200 ms then 400 ms and no pause after the last attempt', () => {
    assert.equal(backoffAfter(DEFAULT_RETRY, 1), 200);
    assert.equal(backoffAfter(DEFAULT_RETRY, 2), 400);
    assert.equal(backoffAfter(DEFAULT_RETRY, 3), undefined);
  });

  it('doubles up to the cap and never overflows', () => {
    const c = { attempts: 100, baseMs: 200, maxMs: 5000 };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6].map((n) => backoffAfter(c, n)),
      [200, 400, 800, 1600, 3200, 5000],
    );
    assert.equal(backoffAfter(c, 99), 5000);
    assert.equal(backoffAfter({ attempts: 3, baseMs: -5, maxMs: 100 }, 1), 0);
    assert.equal(backoffAfter({ attempts: 3, baseMs: 100, maxMs: -1 }, 1), 0);
    assert.equal(backoffAfter({ attempts: 1, baseMs: 100, maxMs: 100 }, 1), undefined);
  });
});
