// Two controller replicas share the Lease `agent-controller`: exactly one leads and only the leader reconciles;
// a leader killed with SIGKILL mid-run is replaced once its Lease expires (no duplicate Job, no lost result), and
// a leader stopped with SIGTERM releases the Lease so the standby takes over within one election tick
// (docs/design/reference-behaviour.md#d-g-lease-released). Times are measured and printed as diagnostics; the bounds
// are generous behaviour checks.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  apiPath,
  applyCrds,
  type ControllerProcess,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  LeaseObjectSchema,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/** Waits until exactly one of the replicas reports controller_is_leader 1; returns [leader, standby]. */
async function leaderOf(
  a: ControllerProcess,
  b: ControllerProcess,
): Promise<[ControllerProcess, ControllerProcess]> {
  return pollUntil(
    async (observe) => {
      const la = await a.metric('controller_is_leader');
      const lb = await b.metric('controller_is_leader');
      observe({ [a.identity]: la, [b.identity]: lb });
      if (la + lb !== 1) return undefined;
      return la === 1 ? [a, b] : [b, a];
    },
    { timeoutMs: 20_000, description: 'exactly one leader' },
  );
}

async function leaseHolder(s: Scenario): Promise<{ holder: string; transitions: number }> {
  const lease = await s.client.get(
    apiPath('coordination.k8s.io/v1', 'leases', { namespace: s.ns, name: 'agent-controller' }),
    LeaseObjectSchema,
  );
  return { holder: lease.spec.holderIdentity ?? '', transitions: lease.spec.leaseTransitions ?? 0 };
}

describe(`controller: leader election between replicas (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'the leader killed with SIGKILL mid-run: the standby takes over, no duplicate Job, the result is recorded',
    {
      timeout: 240_000,
    },
    (t) =>
      runScenario(cluster, 'ctl-failover', async (s) => {
        const a = await s.startReplica({ identity: 'replica-a' });
        const b = await s.startReplica({ identity: 'replica-b' });
        const [leader, standby] = await leaderOf(a, b);
        assert.equal((await leaseHolder(s)).holder, leader.identity, 'the Lease names the leader');

        await s.create(
          execDefinition('steady', ['sh', '-c', 'echo "begin $0"; sleep 5; echo "end $0"']),
          stationManifest('steady', 'steady'),
          agentManifest('survivor', 'steady'),
        );
        const running = await s.waitForAgent('survivor', (x) => x.status.phase === 'Running', 'Running');
        const job = await pollUntil(() => s.job('agent-job-survivor'), {
          timeoutMs: 10_000,
          description: 'the Job of the run',
        });
        assert.equal(await leader.metric('controller_jobs_created_total'), 1);
        assert.equal(
          await standby.metric('controller_jobs_created_total'),
          0,
          'a standby never creates Jobs',
        );
        assert.equal(standby.logged('Created Job').length, 0);

        const killedAt = Date.now();
        const exit = await leader.kill();
        assert.equal(exit.signal, 'SIGKILL');
        await standby.waitForMetric('controller_is_leader', {}, 1, 40_000);
        const takeoverMs = Date.now() - killedAt;
        t.diagnostic(`${runtime}: standby led ${takeoverMs} ms after the leader was killed`);
        assert.ok(
          takeoverMs <= 22_000,
          `took over within ~20 s (lease 15 s + one 5 s tick), took ${takeoverMs} ms`,
        );
        assert.equal(
          standby.logged('Taking over the lease', { why: 'expired' }).length,
          1,
          'took over an expired Lease',
        );

        const done = await s.waitTerminal('survivor');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.equal(done.status.exitCode, 0);
        assert.equal(done.status.startedAt, running.status.startedAt, 'the run was not restarted');
        assert.match(done.status.output ?? '', /^begin run survivor$/m);
        assert.match(done.status.output ?? '', /^end run survivor$/m);
        const jobs = (await s.jobs()).filter((j) =>
          j.metadata.ownerReferences?.some((o) => o.uid === done.metadata.uid),
        );
        assert.deepEqual(
          jobs.map((j) => j.metadata.uid),
          [job.metadata.uid],
          'exactly one Job for the Agent: the one the first leader created',
        );
        assert.equal(
          await standby.metric('controller_jobs_created_total'),
          0,
          'the new leader adopted the run',
        );
        const lease = await leaseHolder(s);
        assert.equal(lease.holder, standby.identity);
        assert.ok(lease.transitions >= 1, `leaseTransitions ${lease.transitions}`);
      }),
  );

  it(
    'the leader stopped with SIGTERM releases the Lease: the standby leads within seconds and reconciles',
    {
      timeout: 240_000,
    },
    (t) =>
      runScenario(cluster, 'ctl-handover', async (s) => {
        const a = await s.startReplica({ identity: 'replica-a' });
        await a.waitForMetric('controller_is_leader', {}, 1, 20_000);
        const b = await s.startReplica({ identity: 'replica-b' });
        const [leader, standby] = await leaderOf(a, b);
        assert.equal(leader, a, 'the first replica keeps the Lease');

        const stoppedAt = Date.now();
        const exit = await leader.stop();
        assert.equal(exit.code, 0, 'a SIGTERM ends the controller with status 0');
        assert.ok(leader.logged(/^Released the [Ll]ease$/).length >= 1, 'the leader logged the release');
        await standby.waitForMetric('controller_is_leader', {}, 1, 15_000);
        const handoverMs = Date.now() - stoppedAt;
        t.diagnostic(`${runtime}: standby led ${handoverMs} ms after SIGTERM to the leader`);
        // It took the Lease because it was released, not because it expired (which takes the lease duration).
        assert.equal(
          standby.logged('Taking over the lease', { why: 'released' }).length,
          1,
          'took a released Lease',
        );
        assert.equal(standby.logged('Taking over the lease', { why: 'expired' }).length, 0);
        assert.equal((await leaseHolder(s)).holder, standby.identity);

        await s.create(
          execDefinition('after', ['sh', '-c', 'echo "handled by the new leader: $0"']),
          stationManifest('after', 'after'),
          agentManifest('after-handover', 'after'),
        );
        const done = await s.waitTerminal('after-handover');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.match(done.status.output ?? '', /^handled by the new leader: run after-handover$/m);
        assert.equal(await standby.metric('controller_jobs_created_total'), 1);
      }),
  );
});
