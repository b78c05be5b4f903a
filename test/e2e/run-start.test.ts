// Runs that cannot start (issue 13 §4), on the real control plane with the controller as its own ServiceAccount
// (deploy/rbac): a pod refused by Pod Security admission (the Job controller's FailedCreate), an image that cannot
// be pulled, a missing agent-secrets key (CreateContainerConfigError) and a pod no node can take (Unschedulable).
// Each shows on its Agent within seconds as Ready=False with the cause and one Warning Event; a permanent cause
// fails the run at once, a transient one after the Station's startTimeoutMinutes (the Job deleted with it), and a
// cause that goes away lets the run go on.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  type AgentObject,
  agentCondition,
  agentManifest,
  apiPath,
  applyCrds,
  applyRbacManifests,
  e2eCluster,
  e2eRuntime,
  enforcePodSecurity,
  execDefinition,
  nodePassOnlySkipReason,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import { addTestImages } from '../support/testbed.ts';

const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/** Waits until the Agent's Ready condition has `reason`, and returns the Agent. */
function waitForReady(s: Scenario, name: string, reason: string, timeoutMs = 45_000): Promise<AgentObject> {
  return pollUntil(
    async (observe) => {
      const a = await s.agent(name);
      observe(a?.status);
      return a !== undefined && agentCondition(a, 'Ready')?.reason === reason ? a : undefined;
    },
    { timeoutMs, description: `${name}: Ready reason ${reason}` },
  );
}

/**
 * How many times a Warning with `reason` was recorded on the Agent: the recorder folds repeats of one Event into
 * its `count`, so the Events are summed by their counts.
 */
async function warnings(s: Scenario, a: AgentObject, reason: string): Promise<number> {
  return (await s.agentEvents(a.metadata.name ?? '', a.metadata.uid))
    .filter((e) => e.type === 'Warning' && e.reason === reason)
    .reduce((sum, e) => sum + (e.count ?? 1), 0);
}

/**
 * Waits until `n` Warnings with `reason` were recorded on the Agent (Events are recorded in the background, after the
 * status write that the test saw), then checks that there are exactly `n`.
 */
async function expectWarnings(s: Scenario, a: AgentObject, reason: string, n: number): Promise<void> {
  const seen = await pollUntil(
    async (observe) => {
      const count = await warnings(s, a, reason);
      observe(count);
      return count >= n ? count : undefined;
    },
    { timeoutMs: 15_000, description: `${a.metadata.name}: ${n} ${reason} Warning(s)` },
  );
  assert.equal(seen, n, `${a.metadata.name}: ${reason} Warnings`);
}

async function jobGone(s: Scenario, jobName: string): Promise<void> {
  await pollUntil(
    async () => {
      const { items } = await s.client.list(apiPath('batch/v1', 'jobs', { namespace: s.ns }));
      return items.some((j) => j.metadata?.name === jobName) ? undefined : true;
    },
    { timeoutMs: 30_000, description: `Job ${jobName} deleted` },
  );
}

describe(`runs that cannot start (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'a refused pod fails at once; an unpullable image and an unschedulable pod fail after the start timeout; a missing key shows and clears',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'run-start', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await enforcePodSecurity(s, 'restricted');
        const unpullable = `registry.test/unpullable:${s.ns}`;
        s.defer(
          addTestImages(s.cluster, `${s.ns}-pull`, { [unpullable]: { pullError: 'manifest unknown' } }),
        );
        await s.client.create(apiPath('v1', 'secrets', { namespace: s.ns }), {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'agent-secrets' },
          stringData: { other: 'x' },
        });
        await s.create(
          execDefinition('echo', ['sh', '-c', 'echo started']),
          execDefinition('keyed', ['sh', '-c', 'test -n "$MY_TOKEN" && echo has-token'], {
            resources: { secrets: [{ name: 'MY_TOKEN', ref: 'token' }] },
          }),
          // Root init: refused where restricted is enforced (a permanent cause).
          stationManifest('baseline', 'echo', { podSecurityProfile: 'baseline' }),
          stationManifest('unpullable', 'echo', {
            startTimeoutMinutes: 1,
            template: { spec: { containers: [{ name: 'agent', image: unpullable }] } },
          }),
          stationManifest('nowhere', 'echo', {
            startTimeoutMinutes: 1,
            template: {
              spec: {
                nodeSelector: { 'agents.re-cinq.com/test': 'no-such-node' },
                containers: [{ name: 'agent', image: 'debian:bookworm-slim' }],
              },
            },
          }),
          stationManifest('keyed', 'keyed'),
        );
        await s.startReplica({ kubeconfig: await s.kubeconfigAs('agent-controller') });
        await s.create(
          agentManifest('refused', 'baseline'),
          agentManifest('pull', 'unpullable'),
          agentManifest('unplaced', 'nowhere'),
          agentManifest('keyless', 'keyed'),
        );

        // Refused by Pod Security admission: failed within seconds with the API server's reason, its Job deleted.
        const refused = await s.waitTerminal('refused', 60_000);
        assert.equal(refused.status.phase, 'Failed', JSON.stringify(refused.status));
        assert.match(
          refused.status.failureReason ?? '',
          /^PodRefused: Job agent-job-refused could not create its pod: .*violates PodSecurity "restricted:latest"/,
        );
        assert.doesNotMatch(refused.status.failureReason ?? '', /did not start within/);
        assert.equal(agentCondition(refused, 'Failed')?.reason, 'PodRefused');
        assert.equal(refused.status.exitCode, 1);
        await jobGone(s, 'agent-job-refused');
        await expectWarnings(s, refused, 'PodRefused', 1);

        // The other causes show as Ready=False while the run stays Running.
        const pulling = await waitForReady(s, 'pull', 'ImagePullFailed');
        assert.equal(pulling.status.phase, 'Running');
        assert.equal(agentCondition(pulling, 'StartBlocked')?.status, 'True');
        assert.match(
          agentCondition(pulling, 'Ready')?.message ?? '',
          /container agent: (ErrImagePull|ImagePullBackOff): .*manifest unknown/,
        );
        const unplaced = await waitForReady(s, 'unplaced', 'Unschedulable');
        assert.match(
          agentCondition(unplaced, 'Ready')?.message ?? '',
          /0\/1 nodes are available: 1 node\(s\) didn't match Pod's node affinity\/selector/,
        );
        const keyless = await waitForReady(s, 'keyless', 'ContainerConfigError');
        assert.match(agentCondition(keyless, 'Ready')?.message ?? '', /CreateContainerConfigError: .*token/);

        // The key arrives: the pod starts, Ready goes back to Running and the run succeeds.
        await s.client.patch(apiPath('v1', 'secrets', { namespace: s.ns, name: 'agent-secrets' }), {
          stringData: { token: 'now-here' },
        });
        const recovered = await s.waitTerminal('keyless', 90_000);
        assert.equal(recovered.status.phase, 'Succeeded', JSON.stringify(recovered.status));
        assert.match(recovered.status.output ?? '', /has-token/);
        await expectWarnings(s, recovered, 'ContainerConfigError', 1);
        assert.equal(agentCondition(recovered, 'StartBlocked'), undefined, 'StartBlocked removed');

        // One minute after their Jobs were created, the two that still cannot start fail with their causes.
        for (const [name, reason] of [
          ['pull', 'ImagePullFailed'],
          ['unplaced', 'Unschedulable'],
        ] as const) {
          const done = await s.waitTerminal(name, 120_000);
          assert.equal(done.status.phase, 'Failed', JSON.stringify(done.status));
          assert.match(
            done.status.failureReason ?? '',
            new RegExp(`^${reason}: .*\\(the pod did not start within 1m\\)$`),
          );
          assert.equal(agentCondition(done, 'Failed')?.reason, reason);
          // The timeout counts from the Job's creationTimestamp, which has whole seconds: up to a second before the
          // Agent's startedAt (the controller's clock, in milliseconds).
          const started = Date.parse(done.status.startedAt ?? '');
          const completed = Date.parse(done.status.completedAt ?? '');
          assert.ok(completed - started >= 59_000, `failed ${completed - started} ms after its start`);
          // Reported once while the kubelet and the scheduler kept retrying, and once more when the run failed.
          await expectWarnings(s, done, reason, 2);
          assert.equal(agentCondition(done, 'StartBlocked')?.reason, reason);
          await jobGone(s, `agent-job-${name}`);
        }
      }),
  );
});
