// The controller drives single runs end to end on the control plane, on the runtime named by AGENT_E2E_RUNTIME:
// the reference's scenario A (wiring: Succeeded, jobName, owner reference, exitCode, output, conditions, Events,
// printer columns, owner garbage collection) and B (a key of Secret agent-secrets reaches the agent's
// environment and nowhere else), a run that exits 7, missing references and Jobs that cannot be built.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  agentCondition,
  agentManifest,
  applyCrds,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  GROUP_VERSION,
  type Job,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/** The Job's condition of `type` with status True, if any. */
function jobCondition(job: Job, type: string) {
  return job.status.conditions?.find((c) => c.type === type && c.status === 'True');
}

interface ContainerEnv {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: { readonly secretKeyRef?: { readonly name?: string; readonly key?: string } };
}
interface ContainerView {
  readonly name: string;
  readonly env?: readonly ContainerEnv[];
}
/** The containers (init or main) of a Job's pod template; shape checked loosely for the fields we read. */
function containers(job: Job, which: 'containers' | 'initContainers'): ContainerView[] {
  const template = job.spec.template as { spec?: Record<string, unknown> } | undefined;
  const list = template?.spec?.[which];
  assert.ok(Array.isArray(list), `Job ${job.metadata.name} has ${which}`);
  return list as ContainerView[];
}

/** Waits until the controller has run `n` more poll sweeps (each increments controller_resyncs_total). */
async function waitForPolls(s: Scenario, n: number): Promise<void> {
  const replica = s.replicas.at(-1);
  assert.ok(replica);
  const start = await replica.metric('controller_resyncs_total');
  await pollUntil(
    async () => ((await replica.metric('controller_resyncs_total')) >= start + n ? true : undefined),
    { timeoutMs: 20_000, description: `${n} more poll sweeps` },
  );
}

describe(`controller: single runs (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'scenario A: Succeeded with jobName, owner reference, exit code, output, conditions, Events and printer columns; deleting the Agent deletes its Job',
    {
      timeout: 240_000,
    },
    () =>
      runScenario(cluster, 'ctl-wiring', async (s) => {
        const ctl = await s.startReplica({ installCrds: true });
        assert.equal(ctl.logged('Installed CRD').length, 4, 'the replica applied the four CRDs');
        await s.create(
          execDefinition('mock-writer', ['sh', '-c', 'echo "hello from the mock agent: $0"']),
          stationManifest('mock-station', 'mock-writer'),
          agentManifest('mock-run', 'mock-station'),
        );
        const done = await s.waitTerminal('mock-run');
        const st = done.status;
        assert.equal(st.phase, 'Succeeded', JSON.stringify(st));
        assert.equal(st.jobName, 'agent-job-mock-run');
        assert.equal(st.exitCode, 0);
        assert.match(st.output ?? '', /^hello from the mock agent: run mock-run$/m);
        assert.equal(st.failureReason, undefined);
        assert.ok(st.startedAt && st.completedAt, 'startedAt and completedAt are set');
        assert.ok(Date.parse(st.startedAt) <= Date.parse(st.completedAt), 'started before completed');
        assert.equal(st.observedGeneration, done.metadata.generation);
        assert.deepEqual(
          [agentCondition(done, 'Complete')?.status, agentCondition(done, 'Complete')?.reason],
          ['True', 'Succeeded'],
        );
        assert.equal(agentCondition(done, 'Ready')?.status, 'True');
        assert.equal(agentCondition(done, 'Failed'), undefined, 'no Failed condition on a success');

        // The run may end on the Job's early SuccessCriteriaMet; Complete follows once the pod is done.
        const job = await pollUntil(
          async (observe) => {
            const j = await s.job('agent-job-mock-run');
            observe(j?.status);
            return j && jobCondition(j, 'Complete') ? j : undefined;
          },
          { timeoutMs: 30_000, description: 'the Job to be Complete' },
        );
        assert.deepEqual(job.metadata.ownerReferences, [
          {
            apiVersion: GROUP_VERSION,
            kind: 'Agent',
            name: 'mock-run',
            uid: done.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ]);
        assert.equal(job.spec.backoffLimit, 0);
        assert.equal(job.spec.ttlSecondsAfterFinished, 3600);
        assert.equal(job.spec.activeDeadlineSeconds, 300);
        assert.equal(job.metadata.labels?.['agents.re-cinq.com/component'], 'job');

        const events = await s.waitForEvents('mock-run', done.metadata.uid, [
          'Normal/Started',
          'Normal/Succeeded',
        ]);
        const reasons = events.map((e) => `${e.type}/${e.reason}`);
        assert.ok(!events.some((e) => e.type === 'Warning'), `no Warning Events: ${reasons.join(',')}`);

        const row = await s.agentTable('mock-run');
        assert.equal(row.Phase, 'Succeeded');
        assert.equal(row.Station, 'mock-station');
        assert.equal(row.Job, 'agent-job-mock-run');

        await ctl.waitForMetric('controller_runs_completed_total', { phase: 'Succeeded', exit_code: '0' }, 1);
        await ctl.waitForMetric('controller_run_duration_seconds_count', { phase: 'Succeeded' }, 1);
        assert.equal(await ctl.metric('controller_jobs_created_total'), 1);
        assert.equal(await ctl.metric('controller_is_leader'), 1);
        assert.equal(await ctl.metric('controller_run_queue_seconds_count'), 1);
        // The finished run's pod and log were read (ahead of the Job's verdict or then, issue 15 §2).
        assert.ok(
          (await ctl.metric('controller_run_evidence_reads_total')) >= 1,
          'the run evidence was read',
        );
        // A log read ahead is held only until the verdict takes it.
        assert.equal(await ctl.metric('controller_read_ahead_logs'), 0, 'no log held after the verdict');
        assert.equal(await ctl.metric('controller_read_ahead_log_bytes'), 0);

        assert.equal(await s.deleteAgent('mock-run'), true);
        await pollUntil(async () => ((await s.job('agent-job-mock-run')) === undefined ? true : undefined), {
          timeoutMs: 30_000,
          description: 'the garbage collector to delete the Job of the deleted Agent',
        });
      }),
  );

  it(
    'scenario B: a key of Secret agent-secrets reaches the agent process, and its value appears nowhere else',
    {
      timeout: 240_000,
    },
    () =>
      runScenario(cluster, 'ctl-secret', async (s) => {
        const ctl = await s.startReplica();
        const secret = `sk-e2e-${randomBytes(16).toString('hex')}`;
        const digest = createHash('sha256').update(secret).digest('hex');
        await s.create({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'agent-secrets' },
          stringData: { token: secret },
        });
        await s.create(
          execDefinition(
            'secret-writer',
            [
              'sh',
              '-c',
              'echo "token-sha256=$(printf %s "$MY_TOKEN" | sha256sum | cut -d" " -f1)"; echo "token-length=$(printf %s "$MY_TOKEN" | wc -c | tr -d " ")"',
            ],
            { resources: { secrets: [{ name: 'MY_TOKEN', ref: 'token' }] } },
          ),
          stationManifest('secret-station', 'secret-writer'),
          agentManifest('secret-run', 'secret-station'),
        );
        const job = await pollUntil(() => s.job('agent-job-secret-run'), {
          timeoutMs: 30_000,
          description: 'the Job agent-job-secret-run',
        });
        for (const which of ['containers', 'initContainers'] as const) {
          const c = containers(job, which).find(
            (x) => x.name === (which === 'containers' ? 'agent' : 'init'),
          );
          assert.ok(c, `${which} has the run container`);
          const env = c.env?.find((e) => e.name === 'MY_TOKEN');
          assert.deepEqual(
            env?.valueFrom?.secretKeyRef && {
              name: env.valueFrom.secretKeyRef.name,
              key: env.valueFrom.secretKeyRef.key,
            },
            { name: 'agent-secrets', key: 'token' },
            `${which}: MY_TOKEN comes from secretKeyRef agent-secrets/token`,
          );
          assert.equal(env?.value, undefined, 'no literal value');
        }
        assert.ok(!JSON.stringify(job).includes(secret), 'the secret value is not in the Job');

        const done = await s.waitTerminal('secret-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.equal(done.status.exitCode, 0);
        const output = done.status.output ?? '';
        assert.match(output, new RegExp(`^token-sha256=${digest}$`, 'm'), output);
        assert.match(output, new RegExp(`^token-length=${secret.length}$`, 'm'), output);
        assert.ok(!output.includes(secret), 'the output holds only the derived values');
        assert.ok(!ctl.logText().includes(secret), 'the controller never logs the secret value');
        const jobs = await s.jobs();
        assert.ok(!JSON.stringify(jobs).includes(secret));
      }),
  );

  it(
    'a run that exits 7 ends Failed with exitCode 7, the Job condition as failureReason and the output',
    {
      timeout: 240_000,
    },
    () =>
      runScenario(cluster, 'ctl-exit7', async (s) => {
        const ctl = await s.startReplica();
        await s.create(
          execDefinition('fails', ['sh', '-c', 'echo "line before failing: $0"; exit 7']),
          stationManifest('fails', 'fails'),
          agentManifest('exits-7', 'fails'),
        );
        const done = await s.waitTerminal('exits-7');
        const st = done.status;
        assert.equal(st.phase, 'Failed', JSON.stringify(st));
        assert.equal(st.exitCode, 7);
        assert.equal(st.jobName, 'agent-job-exits-7');
        assert.match(st.output ?? '', /^line before failing: run exits-7$/m);
        // The run may end on the Job's early FailureTarget; the final Failed condition carries the same reason.
        const job = await pollUntil(
          async (observe) => {
            const j = await s.job('agent-job-exits-7');
            observe(j?.status);
            return j && jobCondition(j, 'Failed') ? j : undefined;
          },
          { timeoutMs: 30_000, description: 'the Job to be Failed' },
        );
        const failed = jobCondition(job, 'Failed');
        assert.ok(
          failed?.reason && failed.message,
          `the Job has a Failed condition: ${JSON.stringify(job.status)}`,
        );
        assert.equal(st.failureReason, `${failed.reason}: ${failed.message}`);
        assert.deepEqual(
          [agentCondition(done, 'Failed')?.status, agentCondition(done, 'Failed')?.reason],
          ['True', 'JobFailed'],
        );
        assert.equal(agentCondition(done, 'Ready')?.status, 'False');
        assert.equal(agentCondition(done, 'Complete'), undefined);
        await s.waitForEvents('exits-7', done.metadata.uid, ['Normal/Started', 'Warning/JobFailed']);
        await ctl.waitForMetric('controller_run_failures_total', { kind: 'job_failed' }, 1);
        await ctl.waitForMetric('controller_runs_completed_total', { phase: 'Failed', exit_code: '7' }, 1);
      }),
  );

  it(
    'a missing Station or AgentDefinition fails the Agent without a Job, and a later Station does not revive it',
    {
      timeout: 240_000,
    },
    () =>
      runScenario(cluster, 'ctl-missing', async (s) => {
        const ctl = await s.startReplica();
        await s.create(
          stationManifest('orphan', 'ghost-definition'),
          agentManifest('no-station', 'ghost-station'),
          agentManifest('no-definition', 'orphan'),
        );
        for (const name of ['no-station', 'no-definition']) {
          const done = await s.waitTerminal(name);
          const st = done.status;
          assert.equal(st.phase, 'Failed', `${name}: ${JSON.stringify(st)}`);
          assert.equal(st.failureReason, 'Station or AgentDefinition not found');
          assert.equal(st.jobName, undefined, 'no jobName');
          assert.equal(st.exitCode, undefined, 'no exitCode');
          assert.ok(st.completedAt, 'completedAt is set');
          assert.equal(st.startedAt, undefined, 'never started');
          assert.deepEqual(
            [agentCondition(done, 'Failed')?.status, agentCondition(done, 'Failed')?.reason],
            ['True', 'MissingReference'],
          );
          const events = await s.waitForEvents(name, done.metadata.uid, ['Warning/MissingReference']);
          assert.ok(!events.some((e) => e.reason === 'Started'), 'never started');
        }
        await ctl.waitForMetric('controller_run_failures_total', { kind: 'missing_ref' }, 2);

        // No retry: the references appearing later change nothing
        // (docs/design/reference-behaviour.md#decision-table).
        await s.create(
          execDefinition('ghost-definition', ['true']),
          stationManifest('ghost-station', 'ghost-definition'),
        );
        await waitForPolls(s, 2);
        for (const name of ['no-station', 'no-definition']) {
          const a = await s.agent(name);
          assert.equal(a?.status.phase, 'Failed', `${name} stays Failed`);
        }
        assert.deepEqual(await s.jobs(), [], 'no Job was ever created');
        assert.equal(await ctl.metric('controller_jobs_created_total'), 0);
      }),
  );

  it(
    'a Station template without an agent container, or with a hostPath volume, fails the Agent with the build error and no Job',
    {
      timeout: 240_000,
    },
    () =>
      runScenario(cluster, 'ctl-build', async (s) => {
        const ctl = await s.startReplica();
        const noAgent = stationManifest('no-agent', 'recipe', {
          template: { spec: { containers: [{ name: 'worker', image: 'debian:bookworm-slim' }] } },
        });
        const hostPath = stationManifest('host-path', 'recipe', {
          template: {
            spec: {
              volumes: [{ name: 'host', hostPath: { path: '/etc' } }],
              containers: [
                {
                  name: 'agent',
                  image: 'debian:bookworm-slim',
                  volumeMounts: [{ name: 'host', mountPath: '/host-etc' }],
                },
              ],
            },
          },
        });
        await s.create(
          execDefinition('recipe', ['true']),
          noAgent,
          hostPath,
          agentManifest('bad-template', 'no-agent'),
          agentManifest('host-escape', 'host-path'),
        );
        const expected: Record<string, string> = {
          'bad-template': "Job build failed: Station template has no container named 'agent'",
          'host-escape':
            'Job build failed: Station template must not mount a hostPath volume into an agent run pod',
        };
        for (const [name, reason] of Object.entries(expected)) {
          const done = await s.waitTerminal(name);
          assert.equal(done.status.phase, 'Failed', `${name}: ${JSON.stringify(done.status)}`);
          assert.equal(done.status.failureReason, reason);
          assert.equal(done.status.jobName, undefined);
          assert.ok(done.status.completedAt);
          assert.deepEqual(
            [agentCondition(done, 'Failed')?.status, agentCondition(done, 'Failed')?.reason],
            ['True', 'BuildFailed'],
          );
          await s.waitForEvents(name, done.metadata.uid, ['Warning/BuildFailed']);
        }
        await ctl.waitForMetric('controller_run_failures_total', { kind: 'build_error' }, 2);
        await waitForPolls(s, 1);
        assert.deepEqual(await s.jobs(), [], 'no Job was created');
        assert.equal(await ctl.metric('controller_jobs_created_total'), 0);
      }),
  );
});
