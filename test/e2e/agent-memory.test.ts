// Agent memory (issue 10 §3) on the local control plane, Node and Deno, with the controller running as its own
// ServiceAccount under deploy/rbac and deploy/components/memory:
// - a run reads MEMORY.md of its definition's ConfigMap (mounted at /agent/memory, and in its prompt, which the
//   exec vendor passes as the last argument) and the last memory block of its output replaces it: the first run
//   creates the ConfigMap (labelled, owned by nothing), the second sees that memory in the file and in its prompt;
// - a block over maxSizeKB is not saved (Warning MemoryTooLarge), the memory is unchanged;
// - two concurrent runs of one memory both write: the final content is one of the two, and the later writer's
//   Agent says that it overwrote a concurrent update (MemoryOverwritten), so nothing is lost silently;
// - without the component, a run with memory fails at Pending naming it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  agentManifest,
  applyCrds,
  applyRbacManifests,
  collectionPath,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  enforcePodSecurity,
  execDefinition,
  type Manifest,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/**
 * Prints the mounted memory and the prompt ($0), naps `NAP` seconds, then ends with a memory block naming the run
 * (the first line of the prompt is `run <agent name>`).
 */
const REMEMBER = [
  'echo "file: $(cat /agent/memory/MEMORY.md 2>/dev/null || echo none)"',
  'printf "prompt: %s\\n" "$0"',
  '[ -z "$NAP" ] || sleep "$NAP"',
  'first=$(printf "%s\\n" "$0" | head -n 1)',
  "echo '<memory>'",
  'echo "remembered by $first"',
  "echo '</memory>'",
].join('\n');

/** Ends with a memory block of 2000 bytes. */
const HOARD = `echo '<memory>'; head -c 2000 /dev/zero | tr '\\0' x; echo; echo '</memory>'`;

const withMemory = (
  name: string,
  script: string,
  memory: Readonly<Record<string, unknown>>,
  nap?: number,
): Manifest =>
  execDefinition(name, ['sh', '-c', script], {
    memory,
    ...(nap !== undefined ? { resources: { env: [{ name: 'NAP', value: String(nap) }] } } : {}),
  });

const ConfigMapSchema = v.looseObject({
  metadata: v.looseObject({
    labels: v.optional(v.record(v.string(), v.string())),
    ownerReferences: v.optional(v.array(v.unknown())),
  }),
  data: v.optional(v.record(v.string(), v.string())),
});

async function memoryOf(s: Scenario, configMap: string): Promise<string | undefined> {
  const cm = await s.client.tryGet(`${collectionPath('ConfigMap', s.ns)}/${configMap}`, ConfigMapSchema);
  return cm?.data?.['MEMORY.md'];
}

const JobAnnotationsSchema = v.looseObject({
  metadata: v.looseObject({ annotations: v.optional(v.record(v.string(), v.string())) }),
});

/** The memory version a run's Job recorded (`""`: the ConfigMap did not exist when the run read it). */
async function readVersionOf(s: Scenario, agent: string): Promise<string | undefined> {
  const job = await s.client.tryGet(
    `/apis/batch/v1/namespaces/${s.ns}/jobs/agent-job-${agent}`,
    JobAnnotationsSchema,
  );
  return job?.metadata.annotations?.['agents.re-cinq.com/memory-version'];
}

describe(`agent memory (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'a run writes its memory, the next one reads it (file and prompt); too large is refused; concurrent writes are told',
    { timeout: 300_000 },
    () =>
      runScenario(cluster, 'memory', async (s) => {
        // Every pod the controller builds here is admitted under the restricted Pod Security level.
        await enforcePodSecurity(s, 'restricted');
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/memory/memory-rbac.yaml');
        await s.create(
          withMemory('keeper', REMEMBER, { configMap: 'notes' }),
          withMemory('hoarder', HOARD, { configMap: 'notes', maxSizeKB: 1 }),
          withMemory('racer', REMEMBER, { configMap: 'race' }, 4),
          stationManifest('keeper', 'keeper'),
          stationManifest('hoarder', 'hoarder'),
          stationManifest('racer', 'racer'),
        );
        await s.startReplica({ kubeconfig: await s.kubeconfigAs('agent-controller') });

        // The first run finds no memory and writes one: the ConfigMap is created, labelled, owned by nothing.
        await s.create(agentManifest('first', 'keeper'));
        const first = await s.waitTerminal('first');
        assert.equal(first.status.phase, 'Succeeded', JSON.stringify(first.status));
        assert.match(first.status.output ?? '', /^file: none$/m);
        await s.waitForEvents('first', first.metadata.uid, ['Normal/MemorySaved']);
        const notes = await s.client.get(`${collectionPath('ConfigMap', s.ns)}/notes`, ConfigMapSchema);
        assert.equal(notes.data?.['MEMORY.md'], 'remembered by run first');
        assert.equal(notes.metadata.labels?.['agents.re-cinq.com/memory'], 'true');
        assert.deepEqual(notes.metadata.ownerReferences ?? [], [], 'the memory outlives the runs');
        assert.equal(await readVersionOf(s, 'first'), '', 'the ConfigMap did not exist when it read it');

        // The second run sees it in the mounted file and in its prompt (the exec vendor's last argument).
        await s.create(agentManifest('second', 'keeper'));
        const second = await s.waitTerminal('second');
        assert.equal(second.status.phase, 'Succeeded', JSON.stringify(second.status));
        const output = second.status.output ?? '';
        assert.match(output, /^file: remembered by run first$/m);
        // The prompt's blank line between the text and the block is not in the log (the supervisor skips blank lines).
        assert.match(output, /^prompt: run second\n+<memory>\nremembered by run first\n<\/memory>\n/m);
        assert.match(output, /To replace it for later runs, end your answer with/);
        await s.waitForEvents('second', second.metadata.uid, ['Normal/MemorySaved']);
        assert.equal(await memoryOf(s, 'notes'), 'remembered by run second');

        // A block over maxSizeKB: not saved, a Warning with the size and the cap.
        await s.create(agentManifest('greedy', 'hoarder'));
        const greedy = await s.waitTerminal('greedy');
        assert.equal(greedy.status.phase, 'Succeeded', JSON.stringify(greedy.status));
        const warned = await s.waitForEvents('greedy', greedy.metadata.uid, ['Warning/MemoryTooLarge']);
        assert.match(
          warned.find((e) => e.reason === 'MemoryTooLarge')?.message ?? '',
          /2000 bytes, over memory\.maxSizeKB 1 \(1024 bytes\)/,
        );
        assert.equal(await memoryOf(s, 'notes'), 'remembered by run second', 'unchanged');

        // A ConfigMap not marked as a memory (someone else's) is never read into a run nor written.
        await s.create(
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'team-settings' },
            data: { 'MEMORY.md': 'not for agents' },
          },
          withMemory('snoop', REMEMBER, { configMap: 'team-settings' }),
          stationManifest('snoop', 'snoop'),
          agentManifest('snooper', 'snoop'),
        );
        const snooper = await s.waitTerminal('snooper');
        assert.equal(snooper.status.phase, 'Failed');
        assert.match(snooper.status.failureReason ?? '', /^ConfigMap team-settings is not a memory: /);
        assert.equal(await memoryOf(s, 'team-settings'), 'not for agents', 'untouched');

        // Two runs of one memory at once: both read it empty, both write; the last writer wins and says so.
        await s.create(agentManifest('race-a', 'racer'), agentManifest('race-b', 'racer'));
        const a = await s.waitTerminal('race-a');
        const b = await s.waitTerminal('race-b');
        for (const run of [a, b]) assert.equal(run.status.phase, 'Succeeded', JSON.stringify(run.status));
        assert.equal(await readVersionOf(s, 'race-a'), '', 'race-a started before any write');
        assert.equal(await readVersionOf(s, 'race-b'), '', 'race-b started before any write');
        await s.waitForEvents('race-a', a.metadata.uid, ['Normal/MemorySaved']);
        await s.waitForEvents('race-b', b.metadata.uid, ['Normal/MemorySaved']);
        const final = await memoryOf(s, 'race');
        assert.ok(
          final === 'remembered by run race-a' || final === 'remembered by run race-b',
          `one of the two: ${final}`,
        );
        const winner = final === 'remembered by run race-a' ? a : b;
        const told = await s.waitForEvents(winner.metadata.name ?? '', winner.metadata.uid, [
          'Normal/MemoryOverwritten',
        ]);
        assert.match(
          told.find((e) => e.reason === 'MemoryOverwritten')?.message ?? '',
          /replaced a concurrent update of ConfigMap race/,
        );
      }),
  );

  it(
    'without deploy/components/memory a run with memory fails at Pending, naming the component',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'memory-nogrant', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
        await s.create(
          withMemory('keeper', REMEMBER, { configMap: 'notes' }),
          stationManifest('keeper', 'keeper'),
        );
        await s.startReplica({ kubeconfig: await s.kubeconfigAs('agent-controller') });
        await s.create(agentManifest('denied', 'keeper'));
        const denied = await s.waitTerminal('denied');
        assert.equal(denied.status.phase, 'Failed');
        assert.match(
          denied.status.failureReason ?? '',
          /^memory ConfigMap notes cannot be read \(.*forbidden/i,
        );
        assert.match(denied.status.failureReason ?? '', /\(deploy\/components\/memory\)$/);
        assert.equal(denied.status.jobName, undefined, 'no Job');
        await s.waitForEvents('denied', denied.metadata.uid, ['Warning/MemoryUnreadable']);
      }),
  );
});
