// `agent-controller rerun` (issue 29 §4) end to end on the local control plane, on the runtime named by
// AGENT_E2E_RUNTIME: a finished job run and a running one are run again as new Agents (same Station, parameters,
// model; user labels kept, the project's own dropped; annotated rerun-of and rerun-of-uid) that run to Succeeded
// with their own Job, while the sources are left as they were; `describe` names the source; a batch run (the loopback
// Anthropic fake, as test/e2e/controller-batch.test.ts sets it up) is run again as a second vendor batch of its own;
// a missing Agent is exit 4 with one clear line and nothing created.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCustomId } from '../../src/vendors/batch/port.ts';
import { startFakeAnthropic } from '../support/fake-vendors/anthropic.ts';
import type { FakeVendorServer } from '../support/fake-vendors/types.ts';
import {
  type AgentObject,
  agentManifest,
  applyCrds,
  applyRbacManifests,
  bundleArgv,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  GROUP_VERSION,
  type Manifest,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const RERUN_OF = 'agents.re-cinq.com/rerun-of';
const RERUN_OF_UID = 'agents.re-cinq.com/rerun-of-uid';

interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `agent-controller ARGS…` on the bundle, on the runtime under test; never rejects for an exit code. */
function cli(args: readonly string[], timeoutMs = 120_000): Promise<CliRun> {
  const [cmd, ...pre] = bundleArgv(runtime);
  const child = spawn(cmd ?? process.execPath, [...pre, ...args], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      DENO_NO_UPDATE_CHECK: '1',
      DENO_NO_PROMPT: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve, reject) => {
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const at = (s: Scenario): string[] => ['--kubeconfig', s.cluster.kubeconfig, '-n', s.ns];
const show = (r: CliRun): string => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

/** Runs `rerun` and returns the new Agent's name from its one line. */
async function rerun(s: Scenario, source: string, extra: readonly string[] = []): Promise<string> {
  const r = await cli(['rerun', source, ...extra, ...at(s)]);
  assert.equal(r.code, 0, show(r));
  const name = new RegExp(`^agent/(\\S+) created \\(rerun of ${source}\\)\n$`).exec(r.stdout)?.[1];
  assert.ok(name !== undefined, show(r));
  assert.equal(r.stderr, '', show(r));
  return name;
}

const annotations = (a: AgentObject | undefined): Record<string, string> =>
  (a?.metadata.annotations ?? {}) as Record<string, string>;

/** The rerun carries the source's spec and user labels, and names the source by name and uid. */
function assertRerunOf(copy: AgentObject | undefined, source: AgentObject | undefined): void {
  assert.ok(copy !== undefined && source !== undefined);
  assert.deepEqual(copy.spec, source.spec, 'the same spec');
  assert.equal(annotations(copy)[RERUN_OF], source.metadata.name);
  assert.equal(annotations(copy)[RERUN_OF_UID], source.metadata.uid);
  assert.notEqual(copy.metadata.uid, source.metadata.uid);
}

describe(`rerun (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  let anthropic: FakeVendorServer;
  before(async () => {
    await applyCrds(cluster.client);
    anthropic = await startFakeAnthropic({ autoFinishMs: 300 });
  });
  after(async () => {
    await anthropic.close();
    await cluster.client.close();
  });

  it(
    'a finished and a running job run, run again: new Agents that succeed, annotated; describe names the source; a missing Agent is exit 4',
    { timeout: 300_000 },
    () =>
      runScenario(cluster, 'rerun-job', async (s) => {
        await s.startReplica();
        await s.create(
          execDefinition('hello', ['sh', '-c', 'echo "hello $0"']),
          stationManifest('hello', 'hello'),
          execDefinition('slowish', ['sh', '-c', 'sleep 4; echo "slowish $0"']),
          stationManifest('slowish', 'slowish'),
        );
        // User labels and annotations, and one label under the project's own prefix (never copied).
        const metadata = {
          name: 'first',
          labels: { team: 'infra', 'agents.re-cinq.com/station': 'hello' },
          annotations: { 'example.com/ticket': 'OPS-1' },
        };
        const source: Manifest = {
          ...agentManifest('first', 'hello', { parameters: { name: 'world' }, taskId: 'T-1' }),
          metadata,
        };
        await s.create(source);
        const done = await s.waitTerminal('first', 90_000);
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));

        // A finished run: a new Agent named first-rerun-xxxxx, run to Succeeded with its own Job.
        const again = await rerun(s, 'first');
        assert.match(again, /^first-rerun-[a-z0-9]{5}$/);
        const copy = await s.waitTerminal(again, 90_000);
        assert.equal(copy.status.phase, 'Succeeded', JSON.stringify(copy.status));
        assert.equal(copy.status.exitCode, 0);
        assert.equal(copy.status.jobName, `agent-job-${again}`);
        assertRerunOf(copy, done);
        assert.deepEqual(copy.metadata.labels, { team: 'infra' }, "the project's own labels are dropped");
        assert.equal(annotations(copy)['example.com/ticket'], 'OPS-1');
        assert.equal(copy.metadata.ownerReferences, undefined);
        const logs = await cli(['logs', again, ...at(s)]);
        assert.match(logs.stdout, /^hello run world$/m, show(logs));
        const source2 = await s.agent('first');
        assert.equal(
          source2?.metadata.resourceVersion,
          done.metadata.resourceVersion,
          'the source is untouched',
        );

        // describe names the source.
        const described = await cli(['describe', 'agent', again, ...at(s)]);
        assert.equal(described.code, 0, show(described));
        assert.match(described.stdout, /^Rerun Of: +first$/m, show(described));

        // A rerun of the rerun is named from the original and names the rerun it repeats.
        const third = await rerun(s, again);
        assert.match(third, /^first-rerun-[a-z0-9]{5}$/);
        assert.equal(annotations(await s.agent(third))[RERUN_OF], again);
        assert.equal((await s.waitTerminal(third, 90_000)).status.phase, 'Succeeded');

        // A running source, with --name: both runs end Succeeded.
        await s.create(agentManifest('busy', 'slowish', { parameters: { name: 'busy' } }));
        await s.waitForAgent('busy', (a) => a.status.phase === 'Running', 'Running', 60_000);
        const named = await cli(['rerun', 'agent/busy', '--name', 'busy-again', '-o', 'name', ...at(s)]);
        assert.equal(named.code, 0, show(named));
        assert.equal(named.stdout, 'agent.agents.re-cinq.com/busy-again\n');
        const [busy, busyAgain] = await Promise.all([
          s.waitTerminal('busy', 90_000),
          s.waitTerminal('busy-again', 90_000),
        ]);
        assert.equal(busy.status.phase, 'Succeeded', JSON.stringify(busy.status));
        assert.equal(busyAgain.status.phase, 'Succeeded', JSON.stringify(busyAgain.status));
        assertRerunOf(busyAgain, busy);

        // No such Agent: exit 4, one line, nothing created.
        const before = (await s.agents()).length;
        const missing = await cli(['rerun', 'nope', ...at(s)]);
        assert.equal(missing.code, 4, show(missing));
        assert.equal(missing.stderr, `error: agent "nope" in namespace "${s.ns}" not found\n`);
        assert.equal(missing.stdout, '');
        assert.equal((await s.agents()).length, before, 'nothing created');
        // A name already taken: exit 1, one line.
        const taken = await cli(['rerun', 'first', '--name', 'busy-again', ...at(s)]);
        assert.equal(taken.code, 1, show(taken));
        assert.equal(taken.stderr, `error: agent "busy-again" in namespace "${s.ns}" already exists\n`);
      }),
  );

  it(
    'a finished batch run, run again: a second vendor batch of its own, Succeeded, annotated',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'rerun-batch', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/batch/batch-rbac.yaml');
        await s.startReplica({
          kubeconfig: await s.kubeconfigAs('agent-controller'),
          env: { BATCH_ENABLED: 'true', BATCH_POLL_SECONDS: '1', ANTHROPIC_BASE_URL: anthropic.baseUrl },
        });
        await s.create(
          {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: 'agent-secrets' },
            stringData: { ANTHROPIC_API_KEY: anthropic.apiKey },
          },
          {
            apiVersion: GROUP_VERSION,
            kind: 'AgentDefinition',
            metadata: { name: 'summary' },
            spec: { model: 'claude-opus-5-5', prompt: 'summarise {topic}', execution: 'batch' },
          },
          stationManifest('summary', 'summary'),
          agentManifest('nightly', 'summary', {
            parameters: { topic: 'the rerun' },
            model: 'claude-sonnet-5-5',
          }),
        );
        const done = await s.waitTerminal('nightly', 90_000);
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));

        const again = await rerun(s, 'nightly');
        const copy = await s.waitTerminal(again, 90_000);
        assert.equal(copy.status.phase, 'Succeeded', JSON.stringify(copy.status));
        assertRerunOf(copy, done);
        assert.equal(copy.status.jobName, undefined, 'a batch run has no Job');
        assert.equal(typeof copy.status.batchId, 'string');
        assert.notEqual(copy.status.batchId, done.status.batchId, 'a batch of its own');
        assert.match(copy.status.output ?? '', /echo: summarise the rerun/);
        const batches = await pollUntil(
          async () => {
            const mine = anthropic
              .batches()
              .filter((b) => b.customId === runCustomId(copy.metadata.uid ?? ''));
            return mine.length > 0 ? mine : undefined;
          },
          { timeoutMs: 10_000, description: 'the vendor batch of the rerun' },
        );
        assert.equal(batches.length, 1, 'exactly one vendor batch for the rerun');
        assert.equal(batches[0]?.prompt, 'summarise the rerun');
        assert.equal(batches[0]?.model, 'claude-sonnet-5-5', 'the model of the source');
      }),
  );
});
