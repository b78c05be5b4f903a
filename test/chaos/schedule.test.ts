import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { between, FAULT_DURATION_MS, FAULT_KINDS, planFaults, seededRandom } from './schedule.ts';

describe('seededRandom', () => {
  it('is reproducible per seed, differs between seeds, and stays in [0, 1)', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const c = seededRandom(43);
    const xs = Array.from({ length: 1000 }, () => a());
    assert.deepEqual(
      xs,
      Array.from({ length: 1000 }, () => b()),
    );
    assert.notDeepEqual(
      xs.slice(0, 10),
      Array.from({ length: 10 }, () => c()),
    );
    assert.ok(xs.every((x) => x >= 0 && x < 1));
    const r = seededRandom(1);
    const ints = Array.from({ length: 2000 }, () => between(r, 3, 5));
    assert.deepEqual([...new Set(ints)].sort(), [3, 4, 5]);
  });
});

describe('planFaults', () => {
  const opts = { startMs: 10_000, endMs: 30 * 60_000, gapMs: [15_000, 30_000] as const };

  it('is deterministic for a seed', () => {
    assert.deepEqual(planFaults(7, opts), planFaults(7, opts));
    assert.notDeepEqual(planFaults(7, opts), planFaults(8, opts));
  });

  it('never overlaps faults, keeps the gaps, stays in the window and gives each kind its duration range', () => {
    const plan = planFaults(3, opts);
    let free = opts.startMs;
    for (const f of plan) {
      assert.ok(f.at - free >= opts.gapMs[0] && f.at - free <= opts.gapMs[1], JSON.stringify(f));
      const [min, max] = FAULT_DURATION_MS[f.kind];
      assert.ok(f.durationMs >= min && f.durationMs <= max);
      assert.ok(f.at + f.durationMs < opts.endMs);
      free = f.at + f.durationMs;
    }
  });

  it('injects every kind once before repeating any', () => {
    const plan = planFaults(11, opts);
    assert.ok(plan.length > FAULT_KINDS.length);
    assert.deepEqual(
      plan
        .slice(0, FAULT_KINDS.length)
        .map((f) => f.kind)
        .sort(),
      [...FAULT_KINDS].sort(),
    );
  });

  it('a short window holds what fits; a restricted kind list is honoured', () => {
    const short = planFaults(5, {
      startMs: 0,
      endMs: 60_000,
      gapMs: [5_000, 5_000],
      kinds: ['cut', 'kill-leader'],
    });
    assert.ok(short.length >= 2);
    assert.ok(short.every((f) => f.kind === 'cut' || f.kind === 'kill-leader'));
    assert.deepEqual(planFaults(5, { ...opts, kinds: [] }), []);
  });
});
