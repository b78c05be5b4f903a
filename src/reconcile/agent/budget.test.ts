import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, ANNOTATION_GATEWAY_USAGE, parseAgentPolicy, type SpendLedger } from '../../api/index.ts';
import type { Action, Decision } from '../actions.ts';
import { EMPTY_LEDGER } from '../budget/ledger.ts';
import type { SpendItem } from '../budget/window.ts';
import { REASON } from '../reasons.ts';
import type { Snapshot } from '../snapshot.ts';
import {
  agent,
  at,
  complete,
  definition,
  finished,
  iso,
  job,
  pod,
  queueOf,
  recordingBuilder,
  running,
  station,
  T0,
} from '../test-fixtures.ts';
import { SPEND_FINALIZER } from './budget.ts';
import { decide } from './decide.ts';

const H = 1000; // a compressed budget hour: 1 s
const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: true, pollMs: 60000 },
  realtime: { enabled: true },
  controllerNamespace: 'agents',
  budgetHourMs: H,
};
const NOW = at(60);
const keyed = definition('def', {
  model: 'claude-opus-5-5',
  resources: { secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }] },
});
const dailyTen = station('stn', { budgets: { windows: [{ window: 'day', usd: '10' }] } });
const policyOf = (spec: Record<string, unknown>) => {
  const r = parseAgentPolicy({
    metadata: { name: 'p', uid: 'u', resourceVersion: '1', creationTimestamp: iso(0) },
    spec,
  });
  if (!r.ok) throw new Error(r.error);
  return { kind: 'found', policy: r.value } as const;
};
const withSpend = (a: Agent): Agent => ({
  ...a,
  metadata: { ...a.metadata, finalizers: [...a.metadata.finalizers, SPEND_FINALIZER] },
});
const spend = (runs: [string, SpendItem][], ledger: SpendLedger = EMPTY_LEDGER, live: string[] = []) => ({
  ledger,
  live: new Set([...runs.map(([u]) => u), ...live]),
  runs: new Map(runs),
});
const spent = (usd: number, atS: number, station = 'stn', tokens = 0): SpendItem => ({
  station,
  atMs: T0 + atS * 1000,
  usdMicros: usd * 1_000_000,
  tokens,
});
function snap(a: Agent, over: Partial<Snapshot> = {}): Snapshot {
  return {
    agent: a,
    station: dailyTen,
    definition: keyed,
    job: { kind: 'absent' },
    queue: queueOf(a, [a]),
    options: OPTIONS,
    ...over,
  };
}
const patches = (d: Decision) =>
  d.actions.filter((x): x is Extract<Action, { kind: 'patchStatus' }> => x.kind === 'patchStatus');
const events = (d: Decision) =>
  d.actions.filter((x): x is Extract<Action, { kind: 'recordEvent' }> => x.kind === 'recordEvent');
const kinds = (d: Decision) => d.actions.map((x) => x.kind);

describe('decide: windowed budgets at admission (issue 28 §4)', () => {
  it('a run under a windowed budget first holds the spend finalizer, then asks for the spend', () => {
    const a = agent('a', { created: 5 });
    const first = decide(snap(a), NOW, recordingBuilder());
    assert.deepEqual(first.actions, [
      {
        kind: 'addFinalizer',
        ref: { namespace: 'team', name: 'a', uid: 'uid-a' },
        resourceVersion: 'rv-a',
        finalizer: SPEND_FINALIZER,
        first: true,
      },
    ]);
    const second = decide(snap(withSpend(a)), NOW, recordingBuilder());
    assert.deepEqual(second, { actions: [], needs: 'spend' });
  });

  it('without windowed budgets: no finalizer, no spend read, it starts', () => {
    const d = decide(snap(agent('a'), { station: station() }), NOW, recordingBuilder());
    assert.ok(kinds(d).includes('createJob'), kinds(d).join(','));
    assert.ok(!kinds(d).includes('addFinalizer'));
  });

  it('under the limit: it starts', () => {
    const a = withSpend(agent('a', { created: 5 }));
    const d = decide(snap(a, { spend: spend([['uid-x', spent(9.99, 0)]]) }), NOW, recordingBuilder());
    assert.ok(kinds(d).includes('createJob'), kinds(d).join(','));
  });

  it('at the limit, Wait: Ready=False/BudgetExhausted naming the budget, one Event, re-checked when it frees', () => {
    const a = withSpend(agent('a', { created: 5 }));
    const s = snap(a, {
      spend: spend([
        ['uid-x', spent(4, 0)],
        ['uid-y', spent(6, 10)],
      ]),
    });
    const inside = new Date(T0 + 20_000);
    const d = decide(s, inside, recordingBuilder());
    assert.ok(!kinds(d).includes('createJob'));
    const p = patches(d);
    assert.equal(p.length, 1);
    assert.equal(p[0]?.status.phase, 'Pending');
    const ready = p[0]?.status.conditions.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, REASON.budgetExhausted);
    // 10 of 10 spent; the run at 0 s leaves the day (24 compressed hours: 24 s) at 24 s, leaving 6 < 10.
    const freeAt = new Date(T0 + 24_000).toISOString();
    assert.equal(
      ready?.message,
      `Budget exhausted: the day budget of Station stn (Station stn): $10.00 of $10.00 spent in the last day; frees at ${freeAt}`,
    );
    assert.deepEqual(
      events(d).map((e) => [e.type, e.reason]),
      [['Normal', 'BudgetExhausted']],
    );
    assert.equal(d.requeueAfterMs, 4_000 + 50, 'woken when the oldest spend leaves the window');
  });

  it('the same verdict again: no patch, no Event, still re-checked', () => {
    const a = withSpend(agent('a', { created: 5 }));
    const s = snap(a, { spend: spend([['uid-x', spent(10, 50)]]) });
    const d = decide(s, NOW, recordingBuilder());
    const patched = patches(d)[0];
    assert.ok(patched !== undefined);
    const waiting: Agent = {
      ...a,
      status: {
        ...a.status,
        conditions: patched.status.conditions.map((c) => ({
          ...c,
          lastTransitionTime: iso(60),
          observedGeneration: 1,
        })),
      },
    };
    const again = decide({ ...s, agent: waiting }, NOW, recordingBuilder());
    assert.deepEqual(
      again.actions.map((x) => x.kind),
      ['observeMetric'],
      'only the budget metrics',
    );
    assert.deepEqual(again.actions[0], {
      kind: 'observeMetric',
      observation: {
        metric: 'budget',
        namespace: 'team',
        station: 'stn',
        window: 'day',
        spentUsd: 10,
        limitUsd: 10,
      },
    });
    assert.equal(again.requeueAfterMs, 50_000 + 24_000 - 60_000 + 50);
  });

  it('when the window has rolled, the waiting run starts', () => {
    const a = withSpend(agent('a', { created: 5 }));
    const s = snap(a, { spend: spend([['uid-x', spent(10, 0)]]) });
    assert.ok(!kinds(decide(s, new Date(T0 + 23_999), recordingBuilder())).includes('createJob'));
    assert.ok(kinds(decide(s, new Date(T0 + 24_000), recordingBuilder())).includes('createJob'));
  });

  it('FIFO kept: every Pending run of the Station meets the same verdict, the later one waits too', () => {
    const early = withSpend(agent('early', { created: 1 }));
    const late = withSpend(agent('late', { created: 2 }));
    const sp = spend([['uid-x', spent(10, 50)]], EMPTY_LEDGER, ['uid-early', 'uid-late']);
    for (const a of [late, early]) {
      const d = decide(snap(a, { queue: queueOf(a, [early, late]), spend: sp }), NOW, recordingBuilder());
      assert.ok(!kinds(d).includes('createJob'), a.metadata.name);
      assert.equal(patches(d)[0]?.status.conditions[0]?.reason, REASON.budgetExhausted);
    }
  });

  it("a run's own spend (a run retried) is not counted against it; the ledger's gone runs are", () => {
    const a = withSpend(agent('a', { created: 5 }));
    const own = spend([['uid-a', spent(10, 50)]]);
    assert.ok(kinds(decide(snap(a, { spend: own }), NOW, recordingBuilder())).includes('createJob'));
    const ledger: SpendLedger = {
      runs: { gone: { station: 'stn', at: iso(50), usd: '10', tokens: 0 } },
      hours: {},
    };
    const d = decide(snap(a, { spend: spend([], ledger) }), NOW, recordingBuilder());
    assert.equal(patches(d)[0]?.status.conditions[0]?.reason, REASON.budgetExhausted);
  });

  it('Fail: the run fails with BudgetExhausted, failure kind budget', () => {
    const failing = station('stn', {
      budgets: { windows: [{ window: 'day', usd: '10' }], whenExhausted: 'Fail' },
    });
    const a = withSpend(agent('a', { created: 5 }));
    const d = decide(
      snap(a, { station: failing, spend: spend([['uid-x', spent(10, 50)]]) }),
      NOW,
      recordingBuilder(),
    );
    const p = patches(d)[0];
    assert.equal(p?.status.phase, 'Failed');
    assert.ok(p?.status.failureReason?.startsWith('Budget exhausted: the day budget of Station stn'));
    assert.equal(p?.status.conditions[0]?.reason, REASON.budgetExhausted);
    assert.ok(
      d.actions.some(
        (x) =>
          x.kind === 'observeMetric' &&
          x.observation.metric === 'runFailure' &&
          x.observation.kind === 'budget',
      ),
    );
    assert.ok(!kinds(d).includes('createJob'));
  });

  it("a policy's Namespace budget counts every Station of the namespace; the policy's Fail wins over Wait", () => {
    const policy = policyOf({
      budgets: { windows: [{ scope: 'Namespace', window: 'hour', tokens: 100 }], whenExhausted: 'Fail' },
    });
    const a = withSpend(agent('a', { created: 5 }));
    const other = spend([['uid-x', spent(0, 59.5, 'other', 100)]]);
    const d = decide(snap(a, { station: station(), policy, spend: other }), NOW, recordingBuilder());
    const p = patches(d)[0];
    assert.equal(p?.status.phase, 'Failed');
    assert.match(
      p?.status.failureReason ?? '',
      /the hour budget of namespace team \(AgentPolicy p\): 100 of 100 tokens/,
    );
  });

  it('a Pending run whose Job exists (its Running patch lost) is adopted, never held', () => {
    const a = withSpend(agent('a', { created: 5 }));
    const d = decide(
      snap(a, {
        job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } },
        spend: spend([['uid-x', spent(10, 50)]]),
      }),
      NOW,
      recordingBuilder(),
    );
    assert.equal(patches(d)[0]?.status.phase, 'Running');
  });

  it('a batch run is held before it is submitted', () => {
    const batchDef = definition('def', { execution: 'batch', model: 'claude-opus-5-5' });
    const a = withSpend(agent('a', { created: 5 }));
    const d = decide(
      snap(a, { definition: batchDef, spend: spend([['uid-x', spent(10, 50)]]) }),
      NOW,
      recordingBuilder(),
    );
    assert.equal(patches(d)[0]?.status.conditions[0]?.reason, REASON.budgetExhausted);
    assert.ok(!kinds(d).includes('addFinalizer'));
  });
});

describe('decide: the per-run cap (issue 28 §4)', () => {
  const GATEWAY = { url: 'http://agent-gateway.agents.svc:8080' };
  const capped = station('stn', { budgets: { perRun: { usd: '0.01', tokens: 100000 } } });
  const usage = (input: number, output: number) =>
    JSON.stringify({
      models: { 'claude-opus-5-5': { calls: 1, input, output, cacheRead: 0, cacheWrite: 0 } },
    });
  const gated = (name: string, budget: Record<string, unknown>, metered?: string): Agent => {
    const a = running(name, { status: { gateway: { keys: { anthropic: 'anthropic' }, budget } } });
    return metered === undefined
      ? a
      : { ...a, metadata: { ...a.metadata, annotations: { [ANNOTATION_GATEWAY_USAGE]: metered } } };
  };

  it('the grant carries the stricter per-run cap of the policy and the Station', () => {
    const policy = policyOf({ budgets: { perRun: { usd: '5', tokens: 500 } } });
    const d = decide(
      snap(agent('a', { created: 5 }), {
        station: capped,
        policy,
        options: { ...OPTIONS, gateway: GATEWAY },
      }),
      NOW,
      recordingBuilder(),
    );
    const started = patches(d).find((p) => p.status.phase === 'Running');
    assert.deepEqual(started?.status.gateway?.budget, { usd: '0.01', tokens: 500 });
  });

  it('a running run whose metered usage reached its cap: Failed, budget exceeded, its Job deleted after the patch', () => {
    // 1000 × 4 + 500 × 20 $/MTok = $0.014 ≥ $0.01
    const a = gated('a', { usd: '0.01' }, usage(1000, 500));
    const d = decide(
      snap(a, {
        options: { ...OPTIONS, gateway: GATEWAY },
        job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } },
      }),
      NOW,
      recordingBuilder(),
    );
    const p = patches(d)[0];
    assert.equal(p?.status.phase, 'Failed');
    assert.equal(p?.status.failureReason, 'budget exceeded: the run spent $0.014 of its $0.01 cap');
    assert.equal(p?.status.conditions[0]?.reason, REASON.budgetExceeded);
    const k = kinds(d);
    assert.ok(k.indexOf('deleteJob') > k.indexOf('patchStatus'), k.join(','));
    assert.ok(events(d).some((e) => e.type === 'Warning' && e.message.startsWith('budget exceeded')));
    assert.ok(
      d.actions.some(
        (x) =>
          x.kind === 'observeMetric' &&
          x.observation.metric === 'runFailure' &&
          x.observation.kind === 'budget',
      ),
    );
  });

  it('under its cap it goes on (its usage recorded)', () => {
    const a = gated('a', { usd: '0.02' }, usage(1000, 500));
    const d = decide(
      snap(a, {
        options: { ...OPTIONS, gateway: GATEWAY },
        job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } },
      }),
      NOW,
      recordingBuilder(),
    );
    assert.ok(!kinds(d).includes('deleteJob'));
    assert.notEqual(patches(d)[0]?.status.phase, 'Failed');
  });

  it('a Job that ended by itself (the gateway refused, the CLI stopped) over its cap: Failed budget exceeded', () => {
    const a = gated('a', { tokens: 1000 }, usage(1000, 500));
    const d = decide(
      snap(a, {
        options: { ...OPTIONS, gateway: GATEWAY },
        job: {
          kind: 'present',
          job: job('a', { conditions: complete }),
          evidence: { kind: 'pod', pod: pod('a', 0), log: { kind: 'read', text: 'done' } },
        },
      }),
      NOW,
      recordingBuilder(),
    );
    const p = patches(d).find((x) => x.status.phase !== undefined);
    assert.equal(p?.status.phase, 'Failed');
    assert.equal(p?.status.exitCode, 1);
    assert.equal(p?.status.failureReason, 'budget exceeded: the run used 1500 of its 1000 tokens');
  });
});

describe('decide: the spend finalizer on deletion (issue 28 §4)', () => {
  it("a deleted run's spend is SET in the ledger (the larger of status and the gateway's), then the finalizer goes", () => {
    const base = finished('a', 'Succeeded', 30, {
      deleting: true,
      status: {
        startedAt: iso(10),
        costEstimate: { usd: '0.5', source: 'cli' },
        tokenUsage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, total: 3 },
      },
    });
    const a = withSpend(base);
    assert.deepEqual(decide(snap(a), NOW, recordingBuilder()), { actions: [], needs: 'spend' });
    const ledger: SpendLedger = {
      runs: {
        'uid-gone': { station: 'stn', at: iso(1), usd: '1', tokens: 1 },
        'uid-live': { station: 'stn', at: iso(1), usd: '1', tokens: 1 },
      },
      hours: {},
    };
    const d = decide(snap(a, { spend: spend([], ledger, ['uid-a', 'uid-live']) }), NOW, recordingBuilder());
    assert.deepEqual(d.actions, [
      {
        kind: 'recordSpend',
        namespace: 'team',
        set: [{ uid: 'uid-a', entry: { station: 'stn', at: iso(10), usd: '0.5', tokens: 3 } }],
        gone: ['uid-gone'],
        hourMs: H,
        nowMs: NOW.getTime(),
      },
      {
        kind: 'removeFinalizer',
        ref: { namespace: 'team', name: 'a', uid: 'uid-a' },
        finalizer: SPEND_FINALIZER,
        index: 0,
      },
    ]);
  });

  it('a finished run not deleted keeps its finalizer (its status counts)', () => {
    const a = withSpend(finished('a', 'Succeeded', 30));
    assert.deepEqual(decide(snap(a), NOW, recordingBuilder()).actions, []);
  });

  it('a run that spent nothing leaves no entry, and still lets go', () => {
    const a = withSpend(agent('a', { deleting: true }));
    const d = decide(snap(a, { spend: spend([], EMPTY_LEDGER, ['uid-a']) }), NOW, recordingBuilder());
    assert.deepEqual(kinds(d), ['recordSpend', 'removeFinalizer']);
    const record = d.actions[0];
    assert.ok(record?.kind === 'recordSpend');
    assert.deepEqual(record.set, []);
  });
});
