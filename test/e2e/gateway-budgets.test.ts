// Spend budgets (issue 28 §4; docs/design/gateway.md "Budgets") on the control plane, with the mock Claude CLI
// reporting each run's cost (the CLI's own figure: the path of runs not behind the gateway; a gateway run's usage is
// the same number on status, recorded from the gateway's annotation). The budget "hour" is compressed to one second
// (AGENT_BUDGET_HOUR_SECONDS=1: a day is 24 s). A Station over its daily budget queues a new run with
// BudgetExhausted and starts it when the window rolls; a Station whose budget says Fail fails the new run; a run
// over its per-run cap ends Failed with `budget exceeded`; a deleted run's spend is in the ledger ConfigMap
// agent-spend, and survives the Agent's deletion while the controller is down and the controller's restart: the
// next run is held by it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  agentManifest,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  fakeClaudeImages,
  GROUP_VERSION,
  nodePassOnlySkipReason,
  pollUntil,
  runScenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

const SPEND_FINALIZER = 'agents.re-cinq.com/spend';
const LedgerSchema = v.object({
  data: v.object({ 'spend.json': v.string() }),
});
const EntrySchema = v.object({ station: v.string(), at: v.string(), usd: v.string(), tokens: v.number() });
const SpendSchema = v.object({
  runs: v.record(v.string(), EntrySchema),
  hours: v.record(v.string(), v.record(v.string(), v.object({ usd: v.string(), tokens: v.number() }))),
});

describe(`spend budgets (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'a daily budget queues and then starts runs, Fail fails them, a per-run cap ends a run, the ledger keeps spend',
    { timeout: 180_000 },
    () =>
      runScenario(cluster, 'budgets', async (s) => {
        const images = fakeClaudeImages(s, runtime);
        const template = {
          spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'agent', image: images.agent }] },
        };
        // Every run costs $1 (the CLI's own figure).
        const recipe = {
          apiVersion: GROUP_VERSION,
          kind: 'AgentDefinition',
          metadata: { name: 'dollar' },
          spec: {
            model: 'claude-opus-5-5',
            prompt: 'do it',
            resources: {
              env: [
                { name: 'MOCK_TEXT', value: 'done' },
                {
                  name: 'MOCK_USAGE',
                  value: JSON.stringify({ input: 100, output: 10, cacheRead: 0, cacheWrite: 0 }),
                },
                { name: 'MOCK_COST', value: '1' },
              ],
            },
          },
        };
        const day = (extra: Record<string, unknown> = {}) => ({
          budgets: { windows: [{ window: 'day', usd: '1' }], ...extra },
        });
        await s.create(
          recipe,
          stationManifest('daily', 'dollar', { template, ...day() }),
          stationManifest('strict', 'dollar', { template, ...day({ whenExhausted: 'Fail' }) }),
          stationManifest('capped', 'dollar', { template, budgets: { perRun: { usd: '0.5' } } }),
        );
        const env = { AGENT_IMAGE: images.init, AGENT_BUDGET_HOUR_SECONDS: '1' };
        const ctl = await s.startReplica({ env });
        await s.create(
          agentManifest('b-1', 'daily'),
          agentManifest('f-1', 'strict'),
          agentManifest('c-1', 'capped'),
        );

        // A run over its per-run cap ends Failed, `budget exceeded`, with a Warning Event.
        const capped = await s.waitTerminal('c-1');
        assert.equal(capped.status.phase, 'Failed', JSON.stringify(capped.status));
        assert.equal(capped.status.failureReason, 'budget exceeded: the run spent $1.00 of its $0.50 cap');
        await s.waitForEvents('c-1', capped.metadata.uid, ['Warning/BudgetExceeded']);

        const first = await s.waitTerminal('b-1');
        assert.equal(first.status.phase, 'Succeeded', JSON.stringify(first.status));
        assert.ok(
          first.metadata.finalizers?.includes(SPEND_FINALIZER),
          'a run under a windowed budget holds it',
        );
        const strictFirst = await s.waitTerminal('f-1');
        assert.equal(strictFirst.status.phase, 'Succeeded', JSON.stringify(strictFirst.status));

        // The day's dollar is spent: Wait queues the next run, Fail fails it.
        await s.create(agentManifest('b-2', 'daily'), agentManifest('f-2', 'strict'));
        const held = await s.waitForAgent(
          'b-2',
          (a) =>
            a.status.conditions?.some((c) => c.type === 'Ready' && c.reason === 'BudgetExhausted') === true,
          'Ready=False/BudgetExhausted',
        );
        assert.equal(held.status.phase, 'Pending');
        const ready = held.status.conditions?.find((c) => c.type === 'Ready');
        const freesAt = new Date(Date.parse(first.status.startedAt ?? '') + 24_000).toISOString();
        assert.equal(
          ready?.message,
          `Budget exhausted: the day budget of Station daily (Station daily): $1.00 of $1.00 spent in the last day; frees at ${freesAt}`,
        );
        const failed = await s.waitTerminal('f-2');
        assert.equal(failed.status.phase, 'Failed');
        assert.match(
          failed.status.failureReason ?? '',
          /^Budget exhausted: the day budget of Station strict/,
        );
        assert.equal(failed.status.startedAt, undefined, 'never started');

        // The window rolls 24 s after the first run started: the queued run starts then, not before.
        const second = await s.waitTerminal('b-2', 90_000);
        assert.equal(second.status.phase, 'Succeeded', JSON.stringify(second.status));
        assert.ok(
          Date.parse(second.status.startedAt ?? '') >= Date.parse(freesAt) - 1000,
          `started ${second.status.startedAt}, frees ${freesAt}`,
        );

        // b-1 deleted with the controller up: its spend is SET in the ledger before it goes.
        await s.deleteAgent('b-1');
        await s.waitAgentGone('b-1');
        const path = `/api/v1/namespaces/${s.ns}/configmaps/agent-spend`;
        const ledger = async () => {
          const cm = await s.client.tryGet(path, LedgerSchema);
          return cm === undefined ? undefined : v.parse(SpendSchema, JSON.parse(cm.data['spend.json']));
        };
        const afterFirst = await ledger();
        assert.deepEqual(afterFirst?.runs[first.metadata.uid ?? ''], {
          station: 'daily',
          at: first.status.startedAt,
          usd: '1',
          tokens: 110,
        });

        // b-2 deleted while the controller is down: its finalizer keeps it until the next controller records it.
        await ctl.stop();
        await s.deleteAgent('b-2');
        const kept = await s.agent('b-2');
        assert.ok(
          kept?.metadata.deletionTimestamp !== undefined,
          'held by its finalizer while no controller runs',
        );
        await s.startReplica({ env });
        await s.waitAgentGone('b-2');
        const afterRestart = await ledger();
        assert.equal(afterRestart?.runs[second.metadata.uid ?? '']?.usd, '1', JSON.stringify(afterRestart));
        // b-1's entry was folded into its hour's bucket (its Agent is gone), never lost, never counted twice.
        const buckets = Object.values(afterRestart?.hours.daily ?? {});
        const inBucket = afterRestart?.runs[first.metadata.uid ?? ''] === undefined;
        assert.equal(
          inBucket
            ? buckets.reduce((n, b) => n + Number(b.usd), 0)
            : Number(afterRestart?.runs[first.metadata.uid ?? '']?.usd),
          1,
          JSON.stringify(afterRestart),
        );

        // The next run is held by the spend only the ledger now holds (b-2 is gone), after the restart.
        const started = Date.parse(second.status.startedAt ?? '');
        if (Date.now() < started + 20_000) {
          await s.create(agentManifest('b-3', 'daily'));
          const third = await s.waitForAgent(
            'b-3',
            (a) => a.status.conditions?.some((c) => c.reason === 'BudgetExhausted') === true,
            'Ready=False/BudgetExhausted from the ledger',
          );
          assert.equal(third.status.phase, 'Pending');
        } else {
          assert.fail('the restart took longer than the window: the ledger hold could not be observed');
        }
        await pollUntil(
          async () => ((await s.agent('b-3'))?.status.phase === 'Succeeded' ? true : undefined),
          {
            timeoutMs: 60_000,
            description: 'b-3 starts once the window rolls',
          },
        );
      }),
  );
});
