// e2e: alone — it restarts kube-apiserver (scripts/testbed restart), which every file beside it would see
// The controller recovers from API-server trouble, proven on the real control plane:
// (1) a real 410 Gone: the controller is cut off (at a TCP relay) while an Agent is created and etcd is compacted
//     past the resourceVersion its Agent watch resumes from. The testbed serves our custom resources without a watch
//     cache (`--watch-cache-sizes=agents.agents.re-cinq.com#0,...`), so the resumed watch really gets 410; the
//     controller logs `Watch expired, re-listing`, re-lists (controller_resyncs_total grows beyond the polls) and
//     runs the Agent; a later Agent still succeeds.
// (2) a real API-server restart (`scripts/testbed restart kube-apiserver`): every watch ends, the controller resumes
//     them from their resourceVersions, a run in flight across the restart and a new Agent both succeed.
// (3) a long network partition (every connection reset at the relay, new ones refused): readiness drops,
//     leadership is lost and regained, and a new Agent still succeeds.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import {
  type AgentObject,
  agentManifest,
  apiPath,
  applyCrds,
  BUNDLE_PATH,
  type ControllerProcess,
  collectionPath,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  KubeObjectSchema,
  kubeconfigWithServer,
  type LogLine,
  pollUntil,
  restartTestbedApiServer,
  runScenario,
  type Scenario,
  startApiRelay,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip =
  typeof cluster === 'string'
    ? cluster
    : !existsSync(BUNDLE_PATH)
      ? `${BUNDLE_PATH} is missing: run \`npm run build\``
      : cluster.testbed === undefined
        ? 'needs the local testbed (etcd URL in testbed.json)'
        : false;
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/** Compacts etcd (physically) at `revision`: every revision before it is gone. */
async function compactEtcd(etcdUrl: string, revision: string): Promise<void> {
  const compacted = await fetch(`${etcdUrl}/v3/kv/compaction`, {
    method: 'POST',
    body: JSON.stringify({ revision, physical: true }),
  });
  assert.equal(compacted.status, 200, `etcd compaction: ${await compacted.text()}`);
}

/** The status code a watch of the namespace's Agents from `resourceVersion` fails with (in-stream or HTTP); 0 if none. */
async function agentWatchFailure(s: Scenario, resourceVersion: string): Promise<number> {
  let code = 0;
  const end = await s.client.watch(
    collectionPath('Agent', s.ns),
    { resourceVersion, timeoutSeconds: 3 },
    (e) => {
      if (e.type === 'ERROR') code = e.object.code ?? -1;
    },
  );
  return end.kind === 'http-error' ? end.status : code;
}

/** The controller's log lines after the first `mark` ones. */
function linesSince(ctl: ControllerProcess, mark: number): LogLine[] {
  return ctl.lines.slice(mark);
}

/** A recipe and Station whose runs echo one line. */
async function createRecipe(s: Scenario): Promise<void> {
  await s.create(execDefinition('echo', ['sh', '-c', 'echo "ran $0"']), stationManifest('echo', 'echo'));
}

async function expectSuccess(s: Scenario, name: string, timeoutMs?: number): Promise<AgentObject> {
  const done = await s.waitTerminal(name, timeoutMs);
  assert.equal(done.status.phase, 'Succeeded', `${name}: ${JSON.stringify(done.status)}`);
  assert.match(done.status.output ?? '', new RegExp(`^ran run ${name}$`, 'm'));
  return done;
}

describe(`controller: recovery from API-server trouble (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string' || cluster.testbed === undefined) return;
  const testbed = cluster.testbed;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'a real 410: cut off while etcd is compacted past its resourceVersion, the Agent watch gets Gone, re-lists and runs the Agent',
    { timeout: 240_000 },
    (t) =>
      runScenario(cluster, 'ctl-gone', async (s) => {
        const relay = await startApiRelay(s.client.server);
        s.defer(() => relay.close());
        // No periodic poll during the test (the one at start aside): a poll during the cut-off fails, and the informer
        // then retries the LIST instead of resuming the watch, so the stale resourceVersion would never be presented.
        // Debug logging shows every LIST with its reason (`Listed`).
        const ctl = await s.startReplica({
          kubeconfig: kubeconfigWithServer(s.cluster.kubeconfig, relay.url, s.tempDir()),
          pollIntervalMs: 3_600_000,
          logLevel: 'debug',
        });
        await createRecipe(s);
        await s.create(agentManifest('before', 'echo'));
        await expectSuccess(s, 'before');
        const resyncs = await ctl.metric('controller_resyncs_total');
        const reconnects = await ctl.metric('controller_watch_reconnects_total', { resource: 'agents' });
        const mark = ctl.lines.length;
        const agentLines = (msg: string): LogLine[] =>
          linesSince(ctl, mark).filter((l) => l.msg === msg && l.resource === 'agents');
        const staleRv = (await s.client.list(collectionPath('Agent', s.ns), {})).resourceVersion;

        relay.block();
        await pollUntil(
          () =>
            agentLines('Watch failed, resuming from the last resourceVersion').length > 0 ? true : undefined,
          { timeoutMs: 20_000, description: "the controller's Agent watch to fail (cut off at the relay)" },
        );
        await s.create(agentManifest('during', 'echo'));
        // One more write after the Agent, then compact there: the controller's watch resumes at its resourceVersion + 1,
        // which is at most the Agent's revision and so strictly before the compaction revision.
        const marker = await s.client.create(
          apiPath('v1', 'configmaps', { namespace: s.ns }),
          { metadata: { name: 'compaction-marker' } },
          KubeObjectSchema,
        );
        const revision = marker.metadata.resourceVersion;
        assert.ok(revision, 'the ConfigMap has a resourceVersion');
        await compactEtcd(testbed.etcd, revision);
        assert.equal(
          await agentWatchFailure(s, staleRv),
          410,
          'a watch of Agents from before the compaction must get 410: if not, the API server serves Agent watches from ' +
            'its watch cache (a testbed started before --watch-cache-sizes listed our CRDs): scripts/testbed down && up',
        );
        t.diagnostic(
          `compacted etcd at revision ${revision} while the controller was cut off (it had seen ${staleRv})`,
        );
        relay.open();

        const gone = await pollUntil(() => agentLines('Watch expired, re-listing')[0], {
          timeoutMs: 60_000,
          description: 'the controller to log `Watch expired, re-listing` for Agents',
        });
        t.diagnostic(`${runtime}: the controller's Agent watch got: ${String(gone.message)}`);
        await expectSuccess(s, 'during');
        await s.create(agentManifest('after', 'echo'));
        await expectSuccess(s, 'after');

        const listed = (reason: string): number =>
          agentLines('Listed').filter((l) => l.reason === reason).length;
        assert.ok(listed('gone') >= 1, 'the controller re-listed Agents because of the 410');
        const polls = listed('resync') + linesSince(ctl, mark).filter((l) => l.msg === 'Poll failed').length;
        const grown = (await ctl.metric('controller_resyncs_total')) - resyncs;
        assert.ok(
          grown >= polls + 1,
          `controller_resyncs_total grew by ${grown}, more than the ${polls} poll(s) since the baseline`,
        );
        await ctl.waitForMetric(
          'controller_watch_reconnects_total',
          { resource: 'agents' },
          (n) => n > reconnects,
        );
        await ctl.waitReady(20_000);
      }),
  );

  it(
    'a real API-server restart: watches resume, a run in flight across it and a new Agent both succeed',
    { timeout: 300_000 },
    (t) =>
      runScenario(cluster, 'ctl-restart', async (s) => {
        const ctl = await s.startReplica();
        await createRecipe(s);
        await s.create(
          execDefinition('slow', ['sh', '-c', 'sleep 5; echo "ran $0"']),
          stationManifest('slow', 'slow'),
        );
        await s.create(agentManifest('before', 'echo'));
        await expectSuccess(s, 'before');
        await s.create(agentManifest('across', 'slow'));
        await s.waitForAgent('across', (a) => a.status.phase === 'Running', 'phase Running');
        const reconnects = {
          agents: await ctl.metric('controller_watch_reconnects_total', { resource: 'agents' }),
          jobs: await ctl.metric('controller_watch_reconnects_total', { resource: 'jobs' }),
        };

        const restart = await restartTestbedApiServer(s.cluster.kubeconfig);
        t.diagnostic(`${runtime}: ${restart.stderr.trim().split('\n').at(-1) ?? ''}`);
        const back = Date.now();

        // Generous: after the outage kube-controller-manager's Job controller has taken up to a minute to mark the Job
        // Complete (its own retry backoff, on either runtime), which is not ours to measure; what is ours is how soon
        // the controller sees the Job finish.
        const across = await expectSuccess(s, 'across', 180_000);
        // The Job's verdict: SuccessCriteriaMet (which the controller acts on) comes before Complete and its
        // completionTime, which kube-controller-manager may write a while later after the outage.
        const jobDone = await pollUntil(
          async (observe) => {
            const job = await s.job(across.status.jobName ?? '');
            observe(job?.status);
            const met = job?.status.conditions?.find(
              (c) => c.type === 'SuccessCriteriaMet' && c.status === 'True',
            );
            const times = [
              Date.parse(met?.lastTransitionTime ?? ''),
              Date.parse(job?.status.completionTime ?? ''),
            ];
            const known = times.filter((t) => Number.isFinite(t));
            return known.length > 0 ? Math.min(...known) : undefined;
          },
          {
            timeoutMs: 60_000,
            description: `Job ${across.status.jobName}: SuccessCriteriaMet or completionTime`,
          },
        );
        const agentDone = Date.parse(across.status.completedAt ?? '');
        assert.ok(Number.isFinite(agentDone), 'the Agent records completedAt');
        t.diagnostic(
          `${runtime}: the Job running across the restart completed ${jobDone - back} ms after it; ` +
            `the Agent was Succeeded ${agentDone - jobDone} ms after the Job's verdict (whole seconds)`,
        );
        assert.ok(
          agentDone - jobDone < 15_000,
          `the controller marks the Agent terminal soon after its Job completes (${agentDone - jobDone} ms)`,
        );
        await s.create(agentManifest('after', 'echo'));
        await expectSuccess(s, 'after');
        for (const resource of ['agents', 'jobs'] as const)
          await ctl.waitForMetric(
            'controller_watch_reconnects_total',
            { resource },
            (n) => n > reconnects[resource],
          );
        await ctl.waitForMetric('controller_is_leader', {}, 1, 30_000);
        await ctl.waitReady(30_000);
        assert.ok(ctl.running, 'the controller survived the restart');
        const jobs = (await s.jobs()).map((j) => j.metadata.name).sort();
        assert.equal(jobs.length, 3, `one Job per Agent, no duplicate: ${jobs.join(', ')}`);
      }),
  );

  it(
    'a long network partition (relay): readiness drops, leadership is lost and regained, and new Agents still run',
    {
      timeout: 240_000,
    },
    (t) =>
      runScenario(cluster, 'ctl-outage', async (s) => {
        const relay = await startApiRelay(s.client.server);
        s.defer(() => relay.close());
        const ctl = await s.startReplica({
          kubeconfig: kubeconfigWithServer(s.cluster.kubeconfig, relay.url, s.tempDir()),
        });
        await createRecipe(s);
        await s.create(agentManifest('before', 'echo'));
        await expectSuccess(s, 'before');
        const reconnects = await ctl.metric('controller_watch_reconnects_total');

        const downAt = Date.now();
        relay.block();
        await pollUntil(
          async (observe) => {
            const r = await ctl.http('/readyz');
            observe(r);
            return r.status === 503 ? true : undefined;
          },
          { timeoutMs: 20_000, description: '/readyz to report the API server unreachable' },
        );
        await ctl.waitForMetric('controller_is_leader', {}, 0, 30_000);
        t.diagnostic(`${runtime}: stepped down ${Date.now() - downAt} ms into the outage`);
        relay.open();

        const upAt = Date.now();
        await ctl.waitForMetric('controller_is_leader', {}, 1, 30_000);
        await ctl.waitReady(30_000);
        t.diagnostic(
          `${runtime}: leading and ready again ${Date.now() - upAt} ms after the API server came back`,
        );
        await s.create(agentManifest('after', 'echo'));
        await expectSuccess(s, 'after');
        await ctl.waitForMetric('controller_watch_reconnects_total', {}, (n) => n > reconnects);
        assert.ok(ctl.running, 'the controller survived the outage');
      }),
  );
});
