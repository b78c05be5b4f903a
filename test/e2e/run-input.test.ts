// The run's input (issue 10 §1), on the local control plane, Node and Deno: the prompt travels in an owned, immutable
// ConfigMap `<run>-input` mounted into the agent container, never in the Job. The fake Claude and Codex CLIs print
// the size, SHA-256 and channel of the prompt they received: a short one arrives as the last argument, a 500 KiB one
// on stdin, byte for byte; the definition's system prompt reaches Claude as --append-system-prompt and Codex before
// the prompt. A prompt over 900 KiB fails the Agent with its size, and no Job or ConfigMap is made.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  agentManifest,
  applyCrds,
  collectionPath,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  fakeClaudeImages,
  GROUP_VERSION,
  type Manifest,
  pollUntil,
  runScenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/** The system prompt of each definition: Claude gets it as an option, Codex before the prompt. */
const SYSTEM: Readonly<Record<string, string>> = {
  claude: 'You review carefully.',
  codex: 'Codex house rules.',
};

const definition = (name: string, model: string): Manifest => ({
  apiVersion: GROUP_VERSION,
  kind: 'AgentDefinition',
  metadata: { name },
  spec: {
    model,
    prompt: '{text}',
    systemPrompt: SYSTEM[name],
    resources: {
      env: [
        { name: 'MOCK_PROMPT_DIGEST', value: '1' },
        { name: 'MOCK_ECHO_ARGV', value: '1' },
      ],
    },
  },
});

const InputSchema = v.looseObject({
  metadata: v.looseObject({
    ownerReferences: v.array(v.looseObject({ kind: v.string(), name: v.string(), uid: v.string() })),
  }),
  immutable: v.optional(v.boolean()),
  data: v.record(v.string(), v.string()),
});

const sha256 = (t: string) => createHash('sha256').update(t, 'utf8').digest('hex');

/** Text of `bytes` UTF-8 bytes mixing 1-, 2-, 3- and 4-byte characters and newlines. */
function mixedText(bytes: number, seed: string): string {
  const unit = `${seed} añ€😀\n`;
  const whole = unit.repeat(Math.ceil(bytes / Buffer.byteLength(unit)) + 1);
  let out = whole;
  while (Buffer.byteLength(out) > bytes) out = out.slice(0, out.length - 1);
  return out.padEnd(out.length + (bytes - Buffer.byteLength(out)), '.');
}

describe(`run input: the prompt in an input ConfigMap (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'a short prompt as the last argument, 500 KiB on stdin (Claude, Codex), over 900 KiB fails with its size',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'input', async (s) => {
        const images = fakeClaudeImages(s, runtime);
        const template = {
          spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'agent', image: images.agent }] },
        };
        await s.create(
          definition('claude', 'claude-opus-5-5'),
          definition('codex', 'gpt-6-astra'),
          stationManifest('claude', 'claude', { template }),
          stationManifest('codex', 'codex', { template }),
        );
        const short = 'fix the -flaky test; ✓ done';
        const big = mixedText(500 * 1024, 'big');
        const huge = 'h'.repeat(900 * 1024 + 1);
        const runs: ReadonlyArray<readonly [string, string, string, 'argv' | 'stdin']> = [
          ['claude-short', 'claude', short, 'argv'],
          ['claude-big', 'claude', big, 'stdin'],
          ['codex-big', 'codex', big, 'stdin'],
        ];
        for (const [name, station, text] of runs) {
          await s.create(agentManifest(name, station, { parameters: { text } }));
        }
        await s.create(agentManifest('too-big', 'claude', { parameters: { text: huge } }));
        await s.startReplica({ env: { AGENT_IMAGE: images.init } });

        for (const [name, station, text, via] of runs) {
          const agent = await s.waitTerminal(name);
          assert.equal(agent.status.phase, 'Succeeded', `${name}: ${JSON.stringify(agent.status)}`);
          const output = (agent.status.output ?? '').split('\n');
          const line = output.find((l) => l.startsWith('{"prompt"'));
          // Claude gets the system prompt as --append-system-prompt; Codex reads it before the prompt.
          const seen = station === 'codex' ? `${SYSTEM.codex}\n\n${text}` : text;
          assert.deepEqual(
            JSON.parse(line ?? 'null'),
            { prompt: { bytes: Buffer.byteLength(seen), sha256: sha256(seen), via } },
            `${name}: the CLI got the prompt intact`,
          );
          const argv = (
            JSON.parse(output.find((l) => l.startsWith('{"argv"')) ?? '{"argv":[]}') as { argv: string[] }
          ).argv;
          const at = argv.indexOf('--append-system-prompt');
          if (station === 'claude')
            assert.equal(argv[at + 1], SYSTEM.claude, `${name}: ${JSON.stringify(argv)}`);
          else assert.equal(at, -1);
          const input = await s.client.get(
            `${collectionPath('ConfigMap', s.ns)}/agent-job-${name}-input`,
            InputSchema,
          );
          assert.equal(input.immutable, true);
          assert.equal(input.data.prompt, text);
          assert.equal(input.data['system-prompt'], SYSTEM[station]);
          assert.deepEqual(
            input.metadata.ownerReferences.map((o) => [o.kind, o.name, o.uid]),
            [['Agent', name, agent.metadata.uid]],
          );
          const run = JSON.parse(input.data['run.json'] ?? '{}') as Record<string, unknown>;
          assert.deepEqual(
            [run.namespace, run.agent, run.uid, run.station, run.job],
            [s.ns, name, agent.metadata.uid, name.split('-')[0], `agent-job-${name}`],
          );
          const job = await s.job(`agent-job-${name}`);
          assert.ok(job, `${name}: its Job`);
          const jobText = JSON.stringify(job);
          const pod = job.spec.template as { spec: { containers: { name: string; command?: string[] }[] } };
          const command = JSON.stringify(pod.spec.containers.find((c) => c.name === 'agent')?.command);
          assert.ok(
            command.includes('supervisor') && !command.includes(text),
            `${name}: no prompt in the argv`,
          );
          // Short parameters stay in AGENT_PARAMETERS (as in the reference); large ones are read from the ConfigMap.
          if (via === 'stdin')
            assert.ok(!jobText.includes(text.slice(0, 64)), `${name}: nothing of it in the Job`);
        }

        const tooBig = await s.waitTerminal('too-big');
        assert.equal(tooBig.status.phase, 'Failed');
        assert.equal(
          tooBig.status.failureReason,
          `Job build failed: the prompt is ${900 * 1024 + 1} bytes: a run's prompt holds at most ${900 * 1024} bytes (900 KiB)`,
        );
        assert.equal(await s.job('agent-job-too-big'), undefined, 'no Job');
        assert.equal(
          await s.client.tryGet(`${collectionPath('ConfigMap', s.ns)}/agent-job-too-big-input`, InputSchema),
          undefined,
          'no input ConfigMap',
        );

        // Owned by the Agent: collected with it.
        await s.deleteAgent('claude-short');
        await s.waitAgentGone('claude-short');
        await pollUntil(
          async (observe) => {
            const left = await s.client.tryGet(
              `${collectionPath('ConfigMap', s.ns)}/agent-job-claude-short-input`,
              InputSchema,
            );
            observe(left?.metadata);
            return left === undefined ? true : undefined;
          },
          { timeoutMs: 60_000, description: 'the input ConfigMap to be garbage-collected with its Agent' },
        );
      }),
  );
});
