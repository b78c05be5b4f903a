// Runs whose evidence disappears while no controller is watching: the pod garbage-collected after the Job finished
// (terminal anyway: the Job's verdict, `run output unavailable: pod garbage-collected` or the Job's own reason) and
// the Job garbage-collected while Running (docs/design/reference-behaviour.md#d-a-vanished-job-fails: Failed,
// exitCode 1, never 0). The controller is stopped after the Job was created and restarted once the evidence is gone.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  agentCondition,
  agentManifest,
  apiPath,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  type Job,
  nodePassOnlySkipReason,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

function finished(job: Job) {
  return job.status.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
}

/** Waits until the Agent is Running with a jobName and its Job exists. */
async function waitRunning(s: Scenario, name: string): Promise<void> {
  const a = await s.waitForAgent(
    name,
    (x) => x.status.phase === 'Running' && x.status.jobName !== undefined,
    'Running',
  );
  await pollUntil(() => s.job(a.status.jobName ?? ''), {
    timeoutMs: 10_000,
    description: `the Job of ${name}`,
  });
}

describe(`controller: evidence garbage-collected (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'a pod deleted after its Job finished: the run still ends, without output, keeping the Job verdict and reason',
    {
      timeout: 240_000,
    },
    () =>
      runScenario(cluster, 'ctl-podgc', async (s) => {
        const first = await s.startReplica();
        await s.create(
          execDefinition('slow', [
            'sh',
            '-c',
            'sleep 3; echo "finished $0"; case "$0" in *bad*) exit 3;; esac',
          ]),
          stationManifest('slow', 'slow'),
          agentManifest('good-run', 'slow'),
          agentManifest('bad-run', 'slow'),
        );
        await waitRunning(s, 'good-run');
        await waitRunning(s, 'bad-run');
        const exit = await first.stop();
        assert.equal(exit.code, 0, 'a SIGTERM stops the controller cleanly');

        const verdicts = new Map<string, NonNullable<ReturnType<typeof finished>>>();
        for (const name of ['good-run', 'bad-run']) {
          const jobName = `agent-job-${name}`;
          const job = await pollUntil(
            async (observe) => {
              const j = await s.job(jobName);
              observe(j?.status);
              return j && finished(j) ? j : undefined;
            },
            { timeoutMs: 120_000, description: `${jobName} to finish while no controller runs` },
          );
          const verdict = finished(job);
          assert.ok(verdict);
          verdicts.set(name, verdict);
          for (const pod of await s.jobPods(jobName)) {
            await s.client.delete(apiPath('v1', 'pods', { namespace: s.ns, name: pod.metadata.name ?? '' }), {
              gracePeriodSeconds: 0,
            });
          }
          await pollUntil(async () => ((await s.jobPods(jobName)).length === 0 ? true : undefined), {
            timeoutMs: 30_000,
            description: `the pods of ${jobName} to be gone`,
          });
        }
        assert.equal(verdicts.get('good-run')?.type, 'Complete');
        assert.equal(verdicts.get('bad-run')?.type, 'Failed');
        const agentsBefore = await s.agents();
        assert.deepEqual(
          agentsBefore.map((a) => a.status.phase),
          ['Running', 'Running'],
          'nobody observed the results yet',
        );

        const second = await s.startReplica();
        const good = await s.waitTerminal('good-run');
        assert.equal(good.status.phase, 'Succeeded', JSON.stringify(good.status));
        assert.equal(good.status.exitCode, 0);
        assert.equal(good.status.output, '');
        assert.equal(good.status.failureReason, 'run output unavailable: pod garbage-collected');
        assert.equal(agentCondition(good, 'Complete')?.status, 'True');
        await s.waitForEvents('good-run', good.metadata.uid, [
          'Normal/Started',
          'Normal/Succeeded',
          'Warning/OutputUnavailable',
        ]);

        const bad = await s.waitTerminal('bad-run');
        const jobVerdict = verdicts.get('bad-run');
        assert.equal(bad.status.phase, 'Failed', JSON.stringify(bad.status));
        assert.equal(bad.status.exitCode, 1, 'no pod, so no exit code to report: 1');
        assert.equal(bad.status.output, '');
        assert.equal(
          bad.status.failureReason,
          `${jobVerdict?.reason}: ${jobVerdict?.message}`,
          "the Job's own reason is kept",
        );
        assert.equal(agentCondition(bad, 'Failed')?.reason, 'JobFailed');
        await s.waitForEvents('bad-run', bad.metadata.uid, [
          'Warning/JobFailed',
          'Warning/OutputUnavailable',
        ]);

        await second.waitForMetric('controller_run_failures_total', { kind: 'output_unavailable' }, 2);
        await second.waitForMetric('controller_run_failures_total', { kind: 'job_failed' }, 1);
        assert.equal(await second.metric('controller_jobs_created_total'), 0, 'nothing was re-run');
      }),
  );

  it(
    'a Job deleted while the Agent is Running: Failed, exitCode 1, run record unavailable',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'ctl-jobgc', async (s) => {
        const first = await s.startReplica();
        await s.create(
          execDefinition('long', ['sh', '-c', 'echo "started $0"; sleep 60']),
          stationManifest('long', 'long'),
          agentManifest('long-run', 'long'),
        );
        await waitRunning(s, 'long-run');
        await first.stop();

        const jobPath = apiPath('batch/v1', 'jobs', { namespace: s.ns, name: 'agent-job-long-run' });
        assert.equal(await s.client.delete(jobPath, { propagationPolicy: 'Background' }), true);
        await pollUntil(async () => ((await s.job('agent-job-long-run')) === undefined ? true : undefined), {
          timeoutMs: 30_000,
          description: 'the Job to be gone',
        });
        assert.equal((await s.agent('long-run'))?.status.phase, 'Running');

        const second = await s.startReplica();
        const done = await s.waitTerminal('long-run');
        const st = done.status;
        assert.equal(st.phase, 'Failed', JSON.stringify(st));
        assert.equal(st.exitCode, 1, 'difference D-a: never 0');
        assert.equal(st.jobName, 'agent-job-long-run');
        assert.equal(st.output, '');
        assert.equal(
          st.failureReason,
          'run record unavailable: Job garbage-collected before its result was observed',
        );
        assert.deepEqual(
          [agentCondition(done, 'Failed')?.status, agentCondition(done, 'Failed')?.reason],
          ['True', 'JobGarbageCollected'],
        );
        await s.waitForEvents('long-run', done.metadata.uid, ['Warning/JobGarbageCollected']);
        await second.waitForMetric('controller_run_failures_total', { kind: 'output_unavailable' }, 1);
        await second.waitForMetric('controller_runs_completed_total', { phase: 'Failed', exit_code: '1' }, 1);
        assert.equal(await second.metric('controller_jobs_created_total'), 0, 'the run is not started again');
        assert.equal((await s.job('agent-job-long-run')) === undefined, true, 'no new Job');
      }),
  );
});
