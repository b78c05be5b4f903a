// Station concurrency and history on the control plane: maxConcurrentRuns with Allow (never over the limit, all
// run, first come first served by creationTimestamp), Forbid (one at a time even without maxConcurrentRuns),
// Replace (the newcomer deletes the running Agent and runs), and history pruning to the Station's limits.
// A watch on the Agents records every phase change, so "never more than N Running" is observed, not sampled.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  nodePassOnlySkipReason,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/**
 * Creates the Agent and waits until the wall clock is in the second after its creationTimestamp (which has
 * one-second resolution), so the next Agent created is strictly later in the Station's queue order.
 */
async function createInItsOwnSecond(s: Scenario, name: string, station: string): Promise<void> {
  await s.create(agentManifest(name, station));
  const created = (await s.agent(name))?.metadata.creationTimestamp;
  assert.ok(created, `${name} has a creationTimestamp`);
  const next = Date.parse(created) + 1000;
  await pollUntil(() => (Date.now() >= next ? true : undefined), {
    timeoutMs: 5000,
    intervalMs: 20,
    description: `the second after ${created}`,
  });
}

describe(`controller: concurrency and history (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'Allow with maxConcurrentRuns 1: one run at a time, all three succeed, in creation order',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'ctl-allow', async (s) => {
        await s.startReplica();
        await s.create(
          execDefinition('nap', ['sh', '-c', 'sleep 2; echo "done $0"']),
          stationManifest('one-lane', 'nap', { maxConcurrentRuns: 1, concurrencyPolicy: 'Allow' }),
        );
        const rec = await s.recordAgents();
        // Names sort opposite to creation order, so a queue ordered by name would fail this test.
        const order = ['q-c', 'q-b', 'q-a'];
        for (const name of order) await createInItsOwnSecond(s, name, 'one-lane');
        for (const name of order) {
          const done = await s.waitTerminal(name);
          assert.equal(done.status.phase, 'Succeeded', `${name}: ${JSON.stringify(done.status)}`);
          assert.match(done.status.output ?? '', new RegExp(`^done run ${name}$`, 'm'));
        }
        assert.deepEqual(rec.errors, []);
        assert.equal(rec.maxRunning, 1, 'never more than one Running Agent');
        assert.deepEqual(rec.started, order, 'first come, first served');
        const startedAt = order.map((n) => Date.parse(rec.last.get(n)?.status.startedAt ?? ''));
        assert.ok(
          startedAt.every((t, i) => i === 0 || t > (startedAt[i - 1] ?? Number.POSITIVE_INFINITY)),
          `startedAt increases: ${JSON.stringify(startedAt)}`,
        );
        for (const [i, name] of order.entries()) {
          if (i === 0) continue;
          const prev = rec.last.get(order[i - 1] ?? '');
          assert.ok(
            Date.parse(prev?.status.completedAt ?? '') <= (startedAt[i] ?? 0),
            `${name} started after ${order[i - 1]} completed`,
          );
        }
        // The later two waited visibly: Ready=False/Queued and a Queued Event.
        for (const name of ['q-b', 'q-a']) {
          await s.waitForEvents(name, rec.last.get(name)?.metadata.uid, ['Normal/Queued', 'Normal/Started']);
        }
      }),
  );

  it('Forbid caps a Station at one run even without maxConcurrentRuns', { timeout: 240_000 }, () =>
    runScenario(cluster, 'ctl-forbid', async (s) => {
      await s.startReplica();
      await s.create(
        execDefinition('nap', ['sh', '-c', 'sleep 2; echo "done $0"']),
        stationManifest('solo', 'nap', { concurrencyPolicy: 'Forbid' }),
      );
      const rec = await s.recordAgents();
      await s.create(agentManifest('f-1', 'solo'), agentManifest('f-2', 'solo'));
      for (const name of ['f-1', 'f-2']) {
        const done = await s.waitTerminal(name);
        assert.equal(done.status.phase, 'Succeeded', `${name}: ${JSON.stringify(done.status)}`);
      }
      assert.deepEqual(rec.errors, []);
      assert.equal(rec.maxRunning, 1, 'never more than one Running Agent');
      assert.equal(rec.started.length, 2);
    }),
  );

  it('Replace: a newcomer deletes the running Agent (and so its Job) and runs', { timeout: 240_000 }, () =>
    runScenario(cluster, 'ctl-replace', async (s) => {
      const ctl = await s.startReplica();
      await s.create(
        execDefinition('maybe-long', ['sh', '-c', 'case "$0" in *victim*) sleep 60;; esac; echo "done $0"']),
        stationManifest('latest-wins', 'maybe-long', { concurrencyPolicy: 'Replace' }),
      );
      const rec = await s.recordAgents();
      await s.create(agentManifest('victim', 'latest-wins'));
      const victim = await s.waitForAgent('victim', (a) => a.status.phase === 'Running', 'Running');
      await pollUntil(() => s.job('agent-job-victim'), { timeoutMs: 10_000, description: 'the victim Job' });

      await s.create(agentManifest('newcomer', 'latest-wins'));
      await s.waitAgentGone('victim');
      const done = await s.waitTerminal('newcomer');
      assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
      assert.match(done.status.output ?? '', /^done run newcomer$/m);
      await pollUntil(async () => ((await s.job('agent-job-victim')) === undefined ? true : undefined), {
        timeoutMs: 30_000,
        description: "the victim's Job to be garbage-collected",
      });
      assert.deepEqual(rec.errors, []);
      assert.equal(rec.maxRunning, 1, 'the victim was gone before the newcomer ran');
      assert.deepEqual(rec.deleted, ['victim']);
      assert.equal(rec.last.get('victim')?.status.phase, 'Running', 'the victim gets no terminal status');
      await s.waitForEvents('victim', victim.metadata.uid, ['Warning/Preempted']);
      await s.waitForEvents('newcomer', done.metadata.uid, ['Normal/Preempting', 'Normal/Started']);
      await ctl.waitForMetric('controller_run_failures_total', { kind: 'preempted' }, 1);
    }),
  );

  it(
    'history limits 1 + 1: after three successes and two failures only the newest of each remain',
    {
      timeout: 240_000,
    },
    () =>
      runScenario(cluster, 'ctl-prune', async (s) => {
        await s.startReplica();
        await s.create(
          execDefinition('mixed', ['sh', '-c', 'echo "run $0"; case "$0" in *fail*) exit 1;; esac']),
          stationManifest('short-memory', 'mixed', {
            successfulRunsHistoryLimit: 1,
            failedRunsHistoryLimit: 1,
          }),
        );
        const rec = await s.recordAgents();
        const names = ['ok-1', 'ok-2', 'ok-3', 'fail-1', 'fail-2'];
        await s.create(...names.map((n) => agentManifest(n, 'short-memory')));
        // Every run reaches a terminal phase (seen by the watch even if pruned right after).
        await pollUntil(
          (observe) => {
            const phases = names.map((n) => rec.last.get(n)?.status.phase);
            observe(phases);
            return phases.every((p) => p === 'Succeeded' || p === 'Failed') ? true : undefined;
          },
          { timeoutMs: 120_000, description: 'all five runs to finish' },
        );
        const newest = (phase: string): string[] => {
          const done = names
            .map((n) => rec.last.get(n))
            .filter((a) => a?.status.phase === phase)
            .map((a) => ({ name: a?.metadata.name ?? '', at: a?.status.completedAt ?? '' }));
          const max =
            done
              .map((d) => d.at)
              .sort()
              .at(-1) ?? '';
          return done.filter((d) => d.at === max).map((d) => d.name);
        };
        assert.deepEqual(
          names.map((n) => rec.last.get(n)?.status.phase),
          ['Succeeded', 'Succeeded', 'Succeeded', 'Failed', 'Failed'],
        );
        // Control for the concurrency tests above: on an unlimited Station the same watch does see parallel runs.
        assert.ok(rec.maxRunning >= 2, `an unlimited Station ran Agents in parallel (max ${rec.maxRunning})`);
        const keepSucceeded = newest('Succeeded');
        const keepFailed = newest('Failed');
        const remaining = await pollUntil(
          async (observe) => {
            const left = (await s.agents()).map((a) => a.metadata.name ?? '').sort();
            observe({ left, deletedSeenByWatch: rec.deleted });
            // The list can be ahead of the watch: wait for the recorder to see the deletions too.
            return left.length === 2 && rec.deleted.length >= 3 ? left : undefined;
          },
          { timeoutMs: 30_000, description: 'the history to be pruned to 1 + 1 (and the watch to see it)' },
        );
        const [a, b] = remaining
          .filter((n) => n.startsWith('ok-'))
          .concat(remaining.filter((n) => n.startsWith('fail-')));
        assert.ok(a && keepSucceeded.includes(a), `kept ${a}, the newest success is ${keepSucceeded}`);
        assert.ok(b && keepFailed.includes(b), `kept ${b}, the newest failure is ${keepFailed}`);
        assert.equal(rec.deleted.length, 3, `pruned exactly three: ${rec.deleted}`);
        await pollUntil(
          async (observe) => {
            const jobs = (await s.jobs()).map((j) => j.metadata.name ?? '').sort();
            observe(jobs);
            return JSON.stringify(jobs) === JSON.stringify(remaining.map((n) => `agent-job-${n}`).sort())
              ? true
              : undefined;
          },
          { timeoutMs: 30_000, description: 'the Jobs of pruned Agents to be garbage-collected' },
        );
        assert.deepEqual(rec.errors, []);
      }),
  );
});
