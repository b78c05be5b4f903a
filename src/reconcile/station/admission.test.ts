import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type Admission,
  admit,
  concurrencyOf,
  concurrencyPolicyOf,
  effectiveMaxRuns,
  wakeableCount,
} from './admission.ts';
import type { AgentRunView } from './runs.ts';

interface Opts {
  readonly station?: string;
  readonly phase?: string;
  readonly created?: number; // seconds after T0
  readonly started?: number;
  readonly rv?: string | null;
  readonly deleting?: boolean;
  readonly ns?: string;
}

const T0 = Date.parse('2025-01-01T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

function agent(name: string, o: Opts = {}): AgentRunView {
  return {
    metadata: {
      name,
      namespace: o.ns ?? 'ns',
      uid: `uid-${o.ns ?? 'ns'}-${name}`,
      ...(o.rv === null ? {} : { resourceVersion: o.rv ?? `rv-${name}` }),
      creationTimestamp: at(o.created ?? 0),
      ...(o.deleting ? { deletionTimestamp: at(999) } : {}),
    },
    spec: { stationRef: o.station ?? 's' },
    status: {
      ...(o.phase !== undefined ? { phase: o.phase } : {}),
      ...(o.started !== undefined ? { startedAt: at(o.started) } : {}),
    },
  };
}

const names = (a: Admission<AgentRunView>) =>
  a.kind === 'replace' ? a.victims.map((v) => v.metadata.name) : [];

describe('concurrencyPolicyOf and effectiveMaxRuns', () => {
  it('reads unknown policies as Allow', () => {
    assert.equal(concurrencyPolicyOf(undefined), 'Allow');
    assert.equal(concurrencyPolicyOf('forbid'), 'Allow');
    assert.equal(concurrencyPolicyOf('Forbid'), 'Forbid');
    assert.equal(concurrencyPolicyOf('Replace'), 'Replace');
  });
  it('caps Forbid and Replace at one, even with maxConcurrentRuns 0', () => {
    assert.equal(effectiveMaxRuns('Allow', undefined), 0);
    assert.equal(effectiveMaxRuns('Allow', 0), 0);
    assert.equal(effectiveMaxRuns('Allow', -3), 0);
    assert.equal(effectiveMaxRuns('Allow', 4), 4);
    assert.equal(effectiveMaxRuns('Forbid', 0), 1);
    assert.equal(effectiveMaxRuns('Forbid', 5), 1);
    assert.equal(effectiveMaxRuns('Replace', 0), 1);
    assert.equal(effectiveMaxRuns('Replace', 3), 1);
  });
  it('concurrencyOf reads a Station spec into its policy and limit', () => {
    assert.deepEqual(concurrencyOf({}), { policy: 'Allow', limit: 0 });
    assert.deepEqual(concurrencyOf({ concurrencyPolicy: 'Allow', maxConcurrentRuns: 3 }), {
      policy: 'Allow',
      limit: 3,
    });
    assert.deepEqual(concurrencyOf({ concurrencyPolicy: 'Forbid', maxConcurrentRuns: 3 }), {
      policy: 'Forbid',
      limit: 1,
    });
    assert.deepEqual(concurrencyOf({ concurrencyPolicy: 'replace' }), { policy: 'Allow', limit: 0 });
  });
  it('wakeableCount: the free slots, every queued Agent when unlimited, and the head under Replace', () => {
    assert.equal(wakeableCount(7, 5, { policy: 'Allow', limit: 0 }), 7);
    assert.equal(wakeableCount(7, 1, { policy: 'Allow', limit: 3 }), 2);
    assert.equal(wakeableCount(7, 4, { policy: 'Allow', limit: 3 }), 0);
    assert.equal(wakeableCount(7, 1, { policy: 'Forbid', limit: 1 }), 0);
    assert.equal(wakeableCount(7, 0, { policy: 'Forbid', limit: 1 }), 1);
    assert.equal(wakeableCount(7, 1, { policy: 'Replace', limit: 1 }), 1);
  });
});

/**
 * Simulates a burst the way reconciles see it: every Pending Agent is decided against the same unchanged list
 * (the worst case: no admission has reached the cache yet), in a given order.
 */
function admittedFrom(all: readonly AgentRunView[], station: Parameters<typeof admit>[2]): string[] {
  return all
    .filter((a) => (a.status?.phase ?? 'Pending') === 'Pending')
    .filter((a) => admit(a, all, station).kind !== 'wait')
    .map((a) => a.metadata.name ?? '')
    .sort();
}

describe('admit under Allow', () => {
  it('admits everything when unlimited', () => {
    const all = Array.from({ length: 20 }, (_, i) => agent(`a${i}`, { created: i }));
    assert.equal(admittedFrom(all, { name: 's' }).length, 20);
    assert.equal(admittedFrom(all, { name: 's', maxConcurrentRuns: 0 }).length, 20);
  });

  for (const [n, k] of [
    [1, 1],
    [5, 1],
    [5, 3],
    [10, 4],
    [3, 5],
    [50, 7],
  ] as const) {
    it(`a burst of ${n} Pending with limit ${k} admits exactly the ${Math.min(n, k)} oldest`, () => {
      // Shuffled creation order, so list order is not creation order.
      const all = Array.from({ length: n }, (_, i) =>
        agent(`a${String(i).padStart(2, '0')}`, { created: (i * 7) % n }),
      );
      const byAge = [...all]
        .sort(
          (a, b) =>
            Date.parse(a.metadata.creationTimestamp ?? '') - Date.parse(b.metadata.creationTimestamp ?? ''),
        )
        .map((a) => a.metadata.name ?? '');
      const want = byAge.slice(0, Math.min(n, k)).sort();
      assert.deepEqual(admittedFrom(all, { name: 's', maxConcurrentRuns: k }), want);
      // The verdict for each Agent does not depend on the order of the list.
      assert.deepEqual(admittedFrom([...all].reverse(), { name: 's', maxConcurrentRuns: k }), want);
    });
  }

  it('counts Running siblings and earlier Pending ones, FIFO by creationTimestamp', () => {
    const all = [
      agent('r1', { phase: 'Running', created: 0 }),
      agent('p-late', { created: 30 }),
      agent('p-early', { created: 10 }),
      agent('p-mid', { created: 20 }),
    ];
    const station = { name: 's', maxConcurrentRuns: 3 };
    assert.equal(admit(all[2]!, all, station).kind, 'admit');
    assert.equal(admit(all[3]!, all, station).kind, 'admit');
    const late = admit(all[1]!, all, station);
    assert.equal(late.kind, 'wait');
    assert.deepEqual(
      { running: late.running, ahead: late.ahead, limit: late.limit },
      { running: 1, ahead: 2, limit: 3 },
    );
  });

  it('breaks creationTimestamp ties by name', () => {
    const all = [agent('b', { created: 5 }), agent('a', { created: 5 }), agent('c', { created: 5 })];
    assert.deepEqual(admittedFrom(all, { name: 's', maxConcurrentRuns: 1 }), ['a']);
    assert.deepEqual(admittedFrom(all, { name: 's', maxConcurrentRuns: 2 }), ['a', 'b']);
  });

  it('ignores terminal siblings, other Stations, other namespaces and Agents being deleted', () => {
    const me = agent('me', { created: 100 });
    const all = [
      me,
      agent('done', { phase: 'Succeeded', created: 0 }),
      agent('failed', { phase: 'Failed', created: 1 }),
      agent('other-station', { phase: 'Running', station: 'x', created: 2 }),
      agent('other-station-pending', { station: 'x', created: 3 }),
      agent('other-ns', { phase: 'Running', ns: 'elsewhere', created: 4 }),
      agent('going', { phase: 'Running', deleting: true, created: 5 }),
      agent('going-pending', { deleting: true, created: 6 }),
    ];
    const got = admit(me, all, { name: 's', maxConcurrentRuns: 1 });
    assert.equal(got.kind, 'admit');
    assert.equal(got.running, 0);
    assert.equal(got.ahead, 0);
  });

  it('does not count the candidate itself, whether or not the list contains it', () => {
    const me = agent('me', { created: 0 });
    assert.equal(admit(me, [me], { name: 's', maxConcurrentRuns: 1 }).kind, 'admit');
    assert.equal(admit(me, [], { name: 's', maxConcurrentRuns: 1 }).kind, 'admit');
  });

  it('reads an unknown phase as Pending', () => {
    const all = [agent('odd', { phase: 'Weird', created: 0 }), agent('me', { created: 1 })];
    assert.equal(admit(all[1]!, all, { name: 's', maxConcurrentRuns: 1 }).kind, 'wait');
  });

  it('waits while the Station is full, admits once a run finishes', () => {
    const me = agent('me', { created: 10 });
    const full = [agent('r', { phase: 'Running' }), me];
    assert.equal(admit(me, full, { name: 's', maxConcurrentRuns: 1 }).kind, 'wait');
    const freed = [agent('r', { phase: 'Succeeded' }), me];
    assert.equal(admit(me, freed, { name: 's', maxConcurrentRuns: 1 }).kind, 'admit');
  });

  it('waits when more runs are Running than the limit (limit lowered)', () => {
    const me = agent('me', { created: 10 });
    const all = [agent('r1', { phase: 'Running' }), agent('r2', { phase: 'Running' }), me];
    assert.equal(admit(me, all, { name: 's', maxConcurrentRuns: 1 }).kind, 'wait');
  });
});

describe('admit under Forbid', () => {
  it('caps at one even when maxConcurrentRuns is 0 or larger', () => {
    const all = Array.from({ length: 4 }, (_, i) => agent(`a${i}`, { created: i }));
    assert.deepEqual(admittedFrom(all, { name: 's', concurrencyPolicy: 'Forbid' }), ['a0']);
    assert.deepEqual(admittedFrom(all, { name: 's', concurrencyPolicy: 'Forbid', maxConcurrentRuns: 3 }), [
      'a0',
    ]);
  });
  it('waits behind a Running run and never preempts', () => {
    const me = agent('me', { created: 10 });
    const got = admit(me, [agent('r', { phase: 'Running' }), me], { name: 's', concurrencyPolicy: 'Forbid' });
    assert.equal(got.kind, 'wait');
    assert.equal(got.policy, 'Forbid');
  });
});

describe('admit under Replace', () => {
  const station = { name: 's', concurrencyPolicy: 'Replace' };

  it('admits without preemption when the Station is idle', () => {
    const me = agent('me');
    assert.equal(admit(me, [me], station).kind, 'admit');
  });

  it('picks the oldest Running run by startedAt as the victim', () => {
    const me = agent('me', { created: 100 });
    const all = [
      agent('young', { phase: 'Running', created: 0, started: 50 }),
      agent('old', { phase: 'Running', created: 10, started: 20 }),
      me,
    ];
    // Two Running under a limit of one: both must go to make room, oldest first.
    assert.deepEqual(names(admit(me, all, station)), ['old', 'young']);
    const one = [agent('only', { phase: 'Running', started: 5 }), me];
    const got = admit(me, one, station);
    assert.equal(got.kind, 'replace');
    assert.deepEqual(names(got), ['only']);
    if (got.kind === 'replace') assert.equal(got.victims[0]?.metadata.resourceVersion, 'rv-only');
  });

  it('falls back to creationTimestamp when startedAt is missing', () => {
    const me = agent('me', { created: 100 });
    const all = [
      agent('b', { phase: 'Running', created: 30, started: 40 }),
      agent('a', { phase: 'Running', created: 35 }),
      me,
    ];
    assert.deepEqual(names(admit(me, all, { ...station, concurrencyPolicy: 'Replace' })), ['a', 'b']);
  });

  it('lets only the head of the queue preempt; later ones wait their turn', () => {
    const all = [
      agent('r', { phase: 'Running', started: 0 }),
      agent('p1', { created: 10 }),
      agent('p2', { created: 20 }),
    ];
    assert.deepEqual(names(admit(all[1]!, all, station)), ['r']);
    assert.equal(admit(all[2]!, all, station).kind, 'wait');
    // Once p1 runs, p2 heads the queue and preempts it.
    const next = [agent('p1', { phase: 'Running', created: 10, started: 11 }), all[2]!];
    assert.deepEqual(names(admit(all[2]!, next, station)), ['p1']);
  });

  it('never chooses a victim without a resourceVersion and waits if none is left', () => {
    const me = agent('me', { created: 100 });
    const all = [agent('nov', { phase: 'Running', started: 1, rv: null }), me];
    assert.equal(admit(me, all, station).kind, 'wait');
    const mixed = [
      agent('nov', { phase: 'Running', started: 1, rv: null }),
      agent('ok', { phase: 'Running', started: 2 }),
      me,
    ];
    // Two Running, limit 1: two victims needed, only one deletable.
    assert.equal(admit(me, mixed, station).kind, 'wait');
  });

  it('a burst of Pending in one pass starts one run and preempts once', () => {
    const all = [
      agent('r', { phase: 'Running', started: 0 }),
      ...Array.from({ length: 5 }, (_, i) => agent(`p${i}`, { created: 10 + i })),
    ];
    const verdicts = all.filter((a) => a.status?.phase === undefined).map((a) => admit(a, all, station));
    assert.equal(verdicts.filter((v) => v.kind === 'replace').length, 1);
    assert.equal(verdicts.filter((v) => v.kind === 'admit').length, 0);
    assert.equal(verdicts.filter((v) => v.kind === 'wait').length, 4);
  });
});

describe('admit in a simulated controller (consistent cache, random reconcile order, random completions)', () => {
  // Deterministic pseudo-random numbers (LCG), so a failure is reproducible.
  const rng = (seed: number) => () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };

  for (const [policy, max, seed] of [
    ['Allow', 3, 1],
    ['Allow', 1, 2],
    ['Allow', 5, 3],
    ['Forbid', 0, 4],
    ['Replace', 0, 5],
  ] as const) {
    it(`${policy} (maxConcurrentRuns ${max}): never over the limit, never overtakes an earlier Agent, all run`, () => {
      const random = rng(seed);
      const station = { name: 's', concurrencyPolicy: policy, maxConcurrentRuns: max };
      const limit = effectiveMaxRuns(concurrencyPolicyOf(policy), max);
      // 30 Agents with shuffled creation times; phases change as the simulated controller acts.
      const world = new Map<string, AgentRunView>();
      for (let i = 0; i < 30; i++) {
        const a = agent(`a${i}`, { created: Math.floor(random() * 1000) });
        world.set(a.metadata.name ?? '', a);
      }
      const setPhase = (a: AgentRunView, phase: string, step: number) =>
        world.set(a.metadata.name ?? '', {
          ...a,
          metadata: { ...a.metadata, resourceVersion: `rv-${step}` },
          status: { phase, startedAt: at(1000 + step) },
        });
      let everRan = 0;
      for (let step = 0; step < 5000; step++) {
        const all = [...world.values()];
        const pending = all.filter((a) => (a.status?.phase ?? 'Pending') === 'Pending');
        const runningNow = all.filter((a) => a.status?.phase === 'Running');
        if (pending.length === 0 && runningNow.length === 0) break;
        if (runningNow.length > 0 && random() < 0.3) {
          const done = runningNow[Math.floor(random() * runningNow.length)]!;
          setPhase(done, 'Succeeded', step);
          continue;
        }
        if (pending.length === 0) continue;
        const x = pending[Math.floor(random() * pending.length)]!;
        const verdict = admit(x, all, station);
        if (verdict.kind === 'wait') continue;
        // No overtaking: every earlier-created Pending Agent would be let in now as well.
        for (const p of pending) {
          if (
            p !== x &&
            Date.parse(p.metadata.creationTimestamp ?? '') < Date.parse(x.metadata.creationTimestamp ?? '')
          ) {
            assert.notEqual(
              admit(p, all, station).kind,
              'wait',
              `${x.metadata.name} overtook ${p.metadata.name}`,
            );
          }
        }
        if (verdict.kind === 'replace') for (const v of verdict.victims) world.delete(v.metadata.name ?? '');
        setPhase(x, 'Running', step);
        everRan++;
        const running = [...world.values()].filter((a) => a.status?.phase === 'Running').length;
        if (limit > 0) assert.ok(running <= limit, `${running} running over the limit ${limit}`);
      }
      assert.equal(everRan, 30, 'every Agent ran');
      assert.equal(
        [...world.values()].filter((a) => (a.status?.phase ?? 'Pending') !== 'Succeeded').length,
        0,
        'everything finished or was preempted',
      );
    });
  }
});
