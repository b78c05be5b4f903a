// Batch runs end to end on the control plane, on the runtime named by AGENT_E2E_RUNTIME: the controller submits the
// prompt to each vendor's batch API (loopback fakes built from docs/reference/vendor-apis.md), records the result as
// the CLI's stream-JSON lines, tells the sinks exactly once, deletes the vendor batch and removes its finalizer; a
// disabled controller, an unrunnable recipe and a missing key fail with reasons; a vendor error fails the run; a run
// past batch.timeoutMinutes (its startedAt moved back through the status API) fails `batch timed out`, or falls back
// to a Job whose pod runs the real supervisor around a fake `claude` (a test image of the testbed's image folder);
// deleting an Agent mid-flight cancels and deletes its batch; a controller SIGKILLed after the vendor accepted a
// batch but before the batchId patch is replaced by one that finds and adopts that batch (no second submission);
// a cleanup that keeps failing gives up after 5 counted attempts; Replace preempts a batch run. The controller runs as the deploy/ ServiceAccount plus deploy/components/batch.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCustomId } from '../../src/vendors/batch/port.ts';
import { startFakeAnthropic } from '../support/fake-vendors/anthropic.ts';
import { startFakeGemini } from '../support/fake-vendors/gemini.ts';
import { startFakeOpenAI } from '../support/fake-vendors/openai.ts';
import type { FakeBatch, FakeOutcome, FakeVendorServer } from '../support/fake-vendors/types.ts';
import {
  agentCondition,
  agentManifest,
  applyCrds,
  applyRbacManifests,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  enforcePodSecurity,
  fakeClaudeImages,
  GROUP_VERSION,
  type HttpSink,
  type Manifest,
  pollUntil,
  runScenario,
  type Scenario,
  startHttpSink,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const FINALIZER = 'agents.re-cinq.com/batch-cleanup';

interface Fakes {
  readonly anthropic: FakeVendorServer;
  readonly openai: FakeVendorServer;
  readonly gemini: FakeVendorServer;
}

/** The vendor base URLs, BATCH_ENABLED and a 1 s poll period for a replica. */
function batchEnv(f: Fakes, enabled = true): Record<string, string> {
  return {
    ...(enabled ? { BATCH_ENABLED: 'true' } : {}),
    BATCH_POLL_SECONDS: '1',
    ANTHROPIC_BASE_URL: f.anthropic.baseUrl,
    OPENAI_BASE_URL: f.openai.baseUrl,
    GEMINI_BASE_URL: f.gemini.baseUrl,
  };
}

/** The Secret agent-secrets with each fake's key (OpenAI's under a mapped name, as resources.secrets allows). */
function secretsManifest(f: Fakes): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'agent-secrets' },
    stringData: {
      ANTHROPIC_API_KEY: f.anthropic.apiKey,
      'openai-key': f.openai.apiKey,
      GEMINI_API_KEY: f.gemini.apiKey,
    },
  };
}

/** A batch AgentDefinition for `model`; the OpenAI key is mapped from `openai-key`. */
function batchDefinition(
  name: string,
  model: string,
  spec: Readonly<Record<string, unknown>> = {},
): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: {
      model,
      prompt: 'summarise {topic}',
      execution: 'batch',
      resources: { secrets: [{ name: 'OPENAI_API_KEY', ref: 'openai-key' }] },
      ...spec,
    },
  };
}

/** A replica running as the agent-controller ServiceAccount with the batch component's grant. */
async function startBatchReplica(
  s: Scenario,
  f: Fakes,
  opts: { enabled?: boolean; identity?: string; env?: Record<string, string> } = {},
): Promise<ReturnType<Scenario['startReplica']>> {
  return s.startReplica({
    kubeconfig: await s.kubeconfigAs('agent-controller'),
    env: { ...batchEnv(f, opts.enabled ?? true), ...opts.env },
    ...(opts.identity !== undefined ? { identity: opts.identity } : {}),
  });
}

/** RBAC for the controller (deploy/rbac plus deploy/components/batch). */
async function applyControllerRbac(s: Scenario): Promise<void> {
  await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
  await applyRbacManifests(s, 'deploy/components/batch/batch-rbac.yaml');
}

/** Waits until the Agent no longer carries the batch finalizer. */
async function waitFinalizerGone(s: Scenario, name: string): Promise<void> {
  await pollUntil(
    async (observe) => {
      const a = await s.agent(name);
      observe(a?.metadata.finalizers);
      return a === undefined || !(a.metadata.finalizers ?? []).includes(FINALIZER) ? true : undefined;
    },
    { timeoutMs: 60_000, description: `the batch finalizer of ${name} to be removed` },
  );
}

/** The batches a fake holds for an Agent (by the run's request id). */
function batchesOf(f: FakeVendorServer, uid: string) {
  return f.batches().filter((b) => b.customId === runCustomId(uid));
}

/** A timed-out run's batch: the finalizer goes, and the batch was cancelled and then deleted at the vendor. */
async function expectCancelledAndDeleted(
  s: Scenario,
  fake: FakeVendorServer,
  name: string,
  done: { readonly metadata: { readonly uid?: string | undefined } },
  batchId: string | undefined,
): Promise<void> {
  await waitFinalizerGone(s, name);
  assert.ok(
    fake.requests.some((r) => r.method === 'POST' && r.path.endsWith(`/${batchId ?? '-'}/cancel`)),
    'the batch was cancelled at the vendor',
  );
  await pollUntil(async () => (batchesOf(fake, done.metadata.uid ?? '')[0]?.deleted ? true : undefined), {
    timeoutMs: 30_000,
    description: `the timed-out batch of ${name} to be deleted at the vendor`,
  });
}

/** The sink events of one Agent, in arrival order, as compact strings (`lifecycle:agent/started`, `line:<type>`). */
function sinkTrail(sink: HttpSink, agent: string): string[] {
  return sink
    .envelopes()
    .filter((e) => e.source.agent === agent)
    .map((e) => {
      const ev = e.event as Record<string, unknown>;
      if (ev.kind === 'lifecycle') return `lifecycle:${String(ev.phase)}/${String(ev.status)}`;
      return `line:${String(ev.type)}`;
    });
}

/** Moves the run's `startedAt` back by `hours` (as if it had been running that long), through the status API. */
async function backdateStart(s: Scenario, name: string, hours: number): Promise<void> {
  const a = await s.agent(name);
  const started = Date.parse(a?.status.startedAt ?? '');
  assert.ok(Number.isFinite(started), `${name} has a startedAt`);
  await s.client.patch(`/apis/${GROUP_VERSION}/namespaces/${s.ns}/agents/${name}/status`, {
    status: { startedAt: new Date(started - hours * 3_600_000).toISOString() },
  });
}

describe(`controller: batch runs (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  let fakes: Fakes;
  before(async () => {
    await applyCrds(cluster.client);
    // Prompts starting `hold` stay pending; `please fail` ends errored; anything else is echoed back.
    const auto = {
      autoFinishMs: 300,
      autoOutcome: (b: FakeBatch): FakeOutcome | 'hold' | undefined =>
        b.prompt.startsWith('hold')
          ? 'hold'
          : b.prompt.startsWith('please fail')
            ? { kind: 'errored', message: 'the prompt asked for it' }
            : undefined,
    };
    fakes = {
      anthropic: await startFakeAnthropic(auto),
      openai: await startFakeOpenAI(auto),
      gemini: await startFakeGemini(auto),
    };
  });
  after(async () => {
    await Promise.all([fakes.anthropic.close(), fakes.openai.close(), fakes.gemini.close()]);
    await cluster.client.close();
  });

  it(
    'each vendor: Succeeded with the CLI lines, sinks told once, vendor batch deleted, finalizer removed',
    { timeout: 180_000 },
    () =>
      runScenario(cluster, 'batch-ok', async (s) => {
        const sink = await startHttpSink();
        s.defer(() => sink.close());
        await applyControllerRbac(s);
        await startBatchReplica(s, fakes);
        const sinks = { output: { sinks: [{ type: 'http', url: sink.url('/events') }] } };
        const runs = [
          { agent: 'run-claude', model: 'claude-opus-5-5', fake: fakes.anthropic, last: 'line:result' },
          { agent: 'run-codex', model: 'gpt-6.1-sol', fake: fakes.openai, last: 'line:turn.completed' },
          { agent: 'run-gemini', model: 'gemini-3.8-flash', fake: fakes.gemini, last: 'line:result' },
        ];
        await s.create(secretsManifest(fakes));
        for (const r of runs) {
          await s.create(
            batchDefinition(`def-${r.agent}`, r.model, sinks),
            stationManifest(`st-${r.agent}`, `def-${r.agent}`),
            agentManifest(r.agent, `st-${r.agent}`, { parameters: { topic: `topic of ${r.agent}` } }),
          );
        }
        for (const r of runs) {
          const done = await s.waitTerminal(r.agent, 60_000);
          const st = done.status;
          assert.equal(st.phase, 'Succeeded', JSON.stringify(st));
          assert.equal(st.exitCode, 0);
          assert.equal(st.jobName, undefined, 'a batch run has no Job');
          assert.equal(typeof st.batchId, 'string');
          const lines = (st.output ?? '').split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
          assert.ok(lines.length >= 3, `CLI lines in the output: ${st.output}`);
          assert.match(st.output ?? '', new RegExp(`echo: summarise topic of ${r.agent}`));
          assert.equal(agentCondition(done, 'Complete')?.status, 'True');
          const batches = batchesOf(r.fake, done.metadata.uid ?? '');
          assert.equal(batches.length, 1, 'exactly one vendor batch for the run');
          assert.equal(batches[0]?.id, st.batchId);
          assert.equal(batches[0]?.prompt, `summarise topic of ${r.agent}`);
          await waitFinalizerGone(s, r.agent);
          await pollUntil(
            async () => (batchesOf(r.fake, done.metadata.uid ?? '')[0]?.deleted ? true : undefined),
            {
              timeoutMs: 30_000,
              description: `the ${r.fake.provider} batch of ${r.agent} to be deleted`,
            },
          );
          await s.waitForEvents(r.agent, done.metadata.uid, [
            'Normal/Started',
            'Normal/Succeeded',
            'Normal/BatchCleanedUp',
          ]);
          const trail = await pollUntil(
            async () => {
              const t = sinkTrail(sink, r.agent);
              return t.at(-1) === 'lifecycle:agent/succeeded' ? t : undefined;
            },
            { timeoutMs: 30_000, description: `the sink events of ${r.agent}` },
          );
          assert.equal(trail[0], 'lifecycle:agent/started');
          assert.equal(trail.at(-2), r.last);
          assert.equal(trail.filter((t) => t === 'lifecycle:agent/started').length, 1, trail.join(' '));
          assert.equal(trail.filter((t) => t === 'lifecycle:agent/succeeded').length, 1, trail.join(' '));
          assert.equal(trail.length, lines.length + 2, 'every CLI line once, plus started and succeeded');
        }
      }),
  );

  it(
    'fails with a reason: controller without BATCH_ENABLED, an unrunnable recipe, a missing key, a vendor error',
    { timeout: 180_000 },
    () =>
      runScenario(cluster, 'batch-fail', async (s) => {
        await applyControllerRbac(s);
        await s.create(
          batchDefinition('def-ok', 'claude-opus-5-5'),
          stationManifest('st-ok', 'def-ok'),
          agentManifest('disabled', 'st-ok', { parameters: { topic: 'x' } }),
        );
        const disabled = await startBatchReplica(s, fakes, { enabled: false, identity: 'ctl-disabled' });
        const d = await s.waitTerminal('disabled', 60_000);
        assert.equal(d.status.phase, 'Failed');
        assert.equal(d.status.failureReason, 'batch execution is disabled on this controller');
        await disabled.stop();

        await s.create(
          secretsManifest({ ...fakes, gemini: { ...fakes.gemini, apiKey: '' } as FakeVendorServer }),
        );
        await s.create(
          batchDefinition('def-repos', 'claude-opus-5-5', {
            resources: { repos: [{ name: 'r', url: 'https://example.invalid/r.git' }] },
          }),
          stationManifest('st-repos', 'def-repos'),
          agentManifest('with-repos', 'st-repos'),
          batchDefinition('def-opencode', 'opencode/some-model'),
          stationManifest('st-opencode', 'def-opencode'),
          agentManifest('no-batch-api', 'st-opencode'),
          batchDefinition('def-nokey', 'gemini-3.8-flash'),
          stationManifest('st-nokey', 'def-nokey'),
          agentManifest('no-key', 'st-nokey'),
          batchDefinition('def-err', 'claude-opus-5-5', { prompt: 'please fail {topic}' }),
          stationManifest('st-err', 'def-err'),
          agentManifest('vendor-error', 'st-err', { parameters: { topic: 'now' } }),
        );
        await startBatchReplica(s, fakes, { identity: 'ctl-enabled' });
        const repos = await s.waitTerminal('with-repos', 60_000);
        assert.equal(repos.status.failureReason, 'batch execution cannot use resources.repos');
        const noApi = await s.waitTerminal('no-batch-api', 60_000);
        assert.match(
          noApi.status.failureReason ?? '',
          /^batch execution cannot use model opencode\/some-model/,
        );
        const noKey = await s.waitTerminal('no-key', 60_000);
        assert.equal(
          noKey.status.failureReason,
          'batch credentials missing: Secret agent-secrets has no key GEMINI_API_KEY',
        );
        for (const a of [repos, noApi, noKey]) {
          assert.equal(a.status.phase, 'Failed');
          assert.ok(
            !(a.metadata.finalizers ?? []).includes(FINALIZER),
            'no finalizer on a run that never started',
          );
        }
        const err = await s.waitTerminal('vendor-error', 60_000);
        assert.equal(err.status.phase, 'Failed');
        assert.equal(err.status.exitCode, 1);
        assert.match(err.status.failureReason ?? '', /^batch request failed: /);
        await waitFinalizerGone(s, 'vendor-error');
      }),
  );

  it(
    'past batch.timeoutMinutes with onTimeout: fail: Failed `batch timed out`, the batch cancelled and deleted, sinks told',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'batch-timeout', async (s) => {
        const sink = await startHttpSink();
        s.defer(() => sink.close());
        await applyControllerRbac(s);
        const ctl = await startBatchReplica(s, fakes);
        await s.create(
          secretsManifest(fakes),
          batchDefinition('def', 'claude-opus-5-5', {
            prompt: 'hold {topic}',
            batch: { timeoutMinutes: 60, onTimeout: 'fail' },
            output: { sinks: [{ type: 'http', url: sink.url('/events') }] },
          }),
          stationManifest('st', 'def'),
          agentManifest('slow', 'st', { parameters: { topic: 'forever' } }),
        );
        const running = await s.waitForAgent(
          'slow',
          (a) => typeof a.status.batchId === 'string',
          'a batchId',
          60_000,
        );
        assert.equal(running.status.phase, 'Running');
        await backdateStart(s, 'slow', 2);
        const done = await s.waitTerminal('slow', 60_000);
        assert.equal(done.status.phase, 'Failed');
        assert.equal(done.status.failureReason, 'batch timed out');
        assert.equal(done.status.exitCode, 1);
        assert.equal(done.status.batchId, running.status.batchId);
        assert.equal(done.status.jobName, undefined, 'no Job for a failed timeout');
        await expectCancelledAndDeleted(s, fakes.anthropic, 'slow', done, running.status.batchId);
        const events = await s.waitForEvents('slow', done.metadata.uid, ['Warning/BatchTimedOut']);
        assert.match(
          events.find((e) => e.reason === 'BatchTimedOut')?.message ?? '',
          /did not finish within 60 minutes/,
        );
        assert.equal(await ctl.metric('controller_run_failures_total', { kind: 'batch_timeout' }), 1);
        const trail = await pollUntil(
          async () => {
            const t = sinkTrail(sink, 'slow');
            return t.includes('lifecycle:agent/failed') ? t : undefined;
          },
          { timeoutMs: 30_000, description: 'the sink events of the timed-out run' },
        );
        assert.deepEqual(trail, [
          'lifecycle:agent/started',
          'lifecycle:batch/failed',
          'lifecycle:agent/failed',
        ]);
      }),
  );

  it(
    'past batch.timeoutMinutes with onTimeout: fallback: the batch is cancelled and the recipe runs as a Job through the supervisor',
    { timeout: 180_000 },
    () =>
      runScenario(cluster, 'batch-fallback', async (s) => {
        // Every pod the controller builds here is admitted under the restricted Pod Security level.
        await enforcePodSecurity(s, 'restricted');
        const sink = await startHttpSink();
        s.defer(() => sink.close());
        await applyControllerRbac(s);
        const images = fakeClaudeImages(s, runtime, { MOCK_TEXT: 'answered by the fallback Job' });
        const ctl = await startBatchReplica(s, fakes, { env: { AGENT_IMAGE: images.init } });
        await s.create(
          secretsManifest(fakes),
          batchDefinition('def', 'claude-opus-5-5', {
            prompt: 'hold {topic}',
            batch: { timeoutMinutes: 30, onTimeout: 'fallback' },
            output: { sinks: [{ type: 'http', url: sink.url('/events') }] },
          }),
          stationManifest('st', 'def', {
            template: {
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [{ name: 'agent', image: images.agent }],
              },
            },
          }),
          agentManifest('patient', 'st', { parameters: { topic: 'forever' } }),
        );
        const running = await s.waitForAgent(
          'patient',
          (a) => typeof a.status.batchId === 'string',
          'a batchId',
          60_000,
        );
        await backdateStart(s, 'patient', 1);
        const fellBack = await s.waitForAgent(
          'patient',
          (a) => a.status.batchFallback === true && typeof a.status.jobName === 'string',
          'the fallback Job',
          60_000,
        );
        assert.equal(fellBack.status.jobName, 'agent-job-patient');
        const done = await s.waitTerminal('patient', 120_000);
        const st = done.status;
        assert.equal(st.phase, 'Succeeded', JSON.stringify(st));
        assert.equal(st.exitCode, 0);
        assert.equal(st.batchFallback, true);
        assert.equal(st.batchId, running.status.batchId, 'the batchId is kept');
        assert.match(st.output ?? '', /answered by the fallback Job/, 'the output comes from the Job run');
        await expectCancelledAndDeleted(s, fakes.anthropic, 'patient', done, running.status.batchId);
        await s.waitForEvents('patient', done.metadata.uid, ['Warning/BatchTimedOut', 'Normal/Succeeded']);
        assert.equal(await ctl.metric('controller_jobs_created_total'), 1);
        assert.equal(await ctl.metric('controller_run_failures_total', { kind: 'batch_timeout' }), 1);
        const trail = await pollUntil(
          async () => {
            const t = sinkTrail(sink, 'patient');
            return t.includes('lifecycle:agent/succeeded') ? t : undefined;
          },
          { timeoutMs: 30_000, description: 'the sink events of the fallback run' },
        );
        assert.equal(trail[0], 'lifecycle:agent/started', trail.join(' '));
        assert.equal(trail[1], 'lifecycle:batch/running', trail.join(' '));
        assert.equal(trail.filter((t) => t === 'lifecycle:batch/running').length, 1, trail.join(' '));
        assert.ok(trail.includes('line:result'), `the Job's CLI lines reach the sink: ${trail.join(' ')}`);
      }),
  );

  it(
    'deleting an Agent mid-flight cancels and deletes its batch, then the finalizer goes and the Agent with it',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'batch-delete', async (s) => {
        await applyControllerRbac(s);
        await startBatchReplica(s, fakes);
        await s.create(
          secretsManifest(fakes),
          batchDefinition('def', 'gemini-3.8-flash', { prompt: 'hold {topic}' }),
          stationManifest('st', 'def'),
          agentManifest('doomed', 'st', { parameters: { topic: 'forever' } }),
        );
        const running = await s.waitForAgent(
          'doomed',
          (a) => typeof a.status.batchId === 'string',
          'a batchId',
          60_000,
        );
        assert.ok((running.metadata.finalizers ?? []).includes(FINALIZER));
        await s.deleteAgent('doomed');
        await s.waitAgentGone('doomed', 60_000);
        const [batch] = batchesOf(fakes.gemini, running.metadata.uid ?? '');
        assert.ok(batch, 'the batch was submitted');
        assert.equal(batch.deleted, true, 'the batch was deleted at the vendor');
      }),
  );

  it(
    'a leader SIGKILLed after the vendor accepted the batch but before the batchId patch: the next one adopts it',
    { timeout: 180_000 },
    () =>
      runScenario(cluster, 'batch-crash', async (s) => {
        await applyControllerRbac(s);
        await s.create(
          secretsManifest(fakes),
          batchDefinition('def', 'gpt-6.1-sol'),
          stationManifest('st', 'def'),
        );
        // The vendor creates the batch but answers only after 20 s: the controller is killed meanwhile.
        fakes.openai.inject({
          method: 'POST',
          path: /\/v1\/batches$/,
          status: 200,
          delayMs: 20_000,
          afterEffect: true,
        });
        const first = await startBatchReplica(s, fakes, { identity: 'ctl-first' });
        await s.create(agentManifest('survivor', 'st', { parameters: { topic: 'crash' } }));
        const recorded = await s.waitForAgent(
          'survivor',
          (a) => a.status.phase === 'Running',
          'the submission record',
          60_000,
        );
        await pollUntil(
          async () => (batchesOf(fakes.openai, recorded.metadata.uid ?? '').length > 0 ? true : undefined),
          {
            timeoutMs: 30_000,
            description: 'the batch to exist at the vendor',
          },
        );
        await first.kill();
        const mid = await s.agent('survivor');
        assert.equal(mid?.status.batchId, undefined, 'killed before the batchId patch');
        await startBatchReplica(s, fakes, { identity: 'ctl-second' });
        const done = await s.waitTerminal('survivor', 90_000);
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        const batches = batchesOf(fakes.openai, done.metadata.uid ?? '');
        assert.equal(batches.length, 1, 'no second submission');
        assert.equal(batches[0]?.id, done.status.batchId);
        await s.waitForEvents('survivor', done.metadata.uid, ['Normal/Started', 'Normal/Succeeded']);
        const started = (await s.agentEvents('survivor', done.metadata.uid)).filter(
          (e) => e.reason === 'Started',
        );
        assert.match(started.map((e) => e.message ?? '').join('\n'), /adopted/);
      }),
  );

  it(
    'a cleanup that keeps failing is retried with backoff 5 times, counted, then the finalizer is removed anyway',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'batch-cleanup', async (s) => {
        await applyControllerRbac(s);
        const ctl = await startBatchReplica(s, fakes);
        await s.create(
          secretsManifest(fakes),
          batchDefinition('def', 'gemini-3.8-flash'),
          stationManifest('st', 'def'),
        );
        // Every DELETE of a batch fails from now on (until the faults are used up).
        fakes.gemini.inject({ method: 'DELETE', path: /\/v1beta\/batches\//, status: 500, times: 50 });
        s.defer(() => fakes.gemini.reset());
        await s.create(agentManifest('sticky', 'st', { parameters: { topic: 'cleanup' } }));
        const done = await s.waitTerminal('sticky', 60_000);
        assert.equal(done.status.phase, 'Succeeded');
        await waitFinalizerGone(s, 'sticky');
        const later = await s.agent('sticky');
        assert.equal(later?.status.batchCleanupAttempts, 5);
        assert.equal(await ctl.metric('controller_batch_cleanup_failures_total'), 5);
        assert.equal(await ctl.metric('controller_batch_orphans_total', { provider: 'gemini' }), 1);
        const events = await s.waitForEvents('sticky', done.metadata.uid, [
          'Warning/BatchCleanupFailed',
          'Warning/BatchOrphaned',
        ]);
        const orphaned = events.find((e) => e.reason === 'BatchOrphaned');
        assert.match(orphaned?.message ?? '', new RegExp(`gemini batch ${done.status.batchId ?? '-'}`));
        assert.equal(
          batchesOf(fakes.gemini, done.metadata.uid ?? '')[0]?.deleted,
          false,
          'left at the vendor',
        );
      }),
  );

  it(
    'Replace preempts a running batch run: it is cancelled and deleted at the vendor',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'batch-replace', async (s) => {
        await applyControllerRbac(s);
        await startBatchReplica(s, fakes);
        await s.create(
          secretsManifest(fakes),
          batchDefinition('def', 'gemini-3.8-flash', { prompt: 'hold {topic}' }),
          stationManifest('st', 'def', { maxConcurrentRuns: 1, concurrencyPolicy: 'Replace' }),
          agentManifest('old', 'st', { parameters: { topic: 'forever' } }),
        );
        const old = await s.waitForAgent(
          'old',
          (a) => typeof a.status.batchId === 'string',
          'a batchId',
          60_000,
        );
        await s.create(agentManifest('new', 'st', { parameters: { topic: 'forever' } }));
        await s.waitAgentGone('old', 60_000);
        const [batch] = batchesOf(fakes.gemini, old.metadata.uid ?? '');
        assert.equal(batch?.deleted, true, 'the preempted batch was deleted at the vendor');
        await s.waitForAgent(
          'new',
          (a) => typeof a.status.batchId === 'string',
          'the new run to start',
          60_000,
        );
      }),
  );
});
