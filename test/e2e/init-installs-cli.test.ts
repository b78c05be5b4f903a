// An image without the vendor CLI (docs/reference/vendor-clis.md#installing-in-the-init): the run pod's image has
// node and npm (the test node's own) but no vendor CLI, so the init installs the real pinned Claude Code and Gemini
// CLI with npm from a local registry on a loopback port (test/support/npm-registry.ts, the npm registry's own
// tarballs) into $HOME/.local as the restricted profile's uid 1000; the agent container, whose image has no CLI
// either, then runs it against the loopback fake of its model API and the run Succeeds with the model's answer.
// Both passes: the init that runs npm is the bundle on Node or on Deno.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import { controllerSkipReason, runPodImage } from '../support/controller.ts';
import {
  addTestImages,
  agentManifest,
  apiPath,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  runScenario,
  stationManifest,
  testbedImage,
} from '../support/index.ts';
import { startAnthropicModel, startGeminiModel } from '../support/model-api/index.ts';
import { startNpmRegistry } from '../support/npm-registry.ts';
import { agentSecrets, agentTemplate, cliDefinition } from '../support/real-clis.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = controllerSkipReason(cluster);

const PodSchema = v.looseObject({ metadata: v.looseObject({ name: v.string() }) });

describe(`the init installs the vendor CLI when the image lacks it (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('npm installs the pinned Claude Code and Gemini CLI from the registry, and the runs use them', {
    timeout: 600_000,
  }, async () => {
    const keys = {
      anthropic: `sk-ant-e2e-${randomBytes(16).toString('hex')}`,
      gemini: `AIza-e2e-${randomBytes(16).toString('hex')}`,
    };
    const answers = {
      claude: `Claude installed and answering ${randomBytes(4).toString('hex')}.`,
      gemini: `Gemini installed and answering ${randomBytes(4).toString('hex')}.`,
    };
    const claude = await startAnthropicModel({ apiKey: keys.anthropic, turns: [{ text: answers.claude }] });
    const gemini = await startGeminiModel({ apiKey: keys.gemini, turns: [{ text: answers.gemini }] });
    const registry = await startNpmRegistry();
    try {
      await runScenario(cluster, 'init-npm', async (s) => {
        // The run-pod image as the test bed has it (node and npm, no vendor CLI), and a bare agent image.
        const names = { init: `agent-controller-bare:${s.ns}`, agent: `bare:${s.ns}` };
        s.defer(
          addTestImages(s.cluster, `bare-${s.ns}`, {
            [names.init]: testbedImage(s.cluster, runPodImage(runtime)),
            [names.agent]: { entrypoint: [], files: {} },
          }),
        );
        const template = agentTemplate(names.agent);
        const npm = { NPM_CONFIG_REGISTRY: registry.url };
        await s.create(
          agentSecrets(keys),
          cliDefinition(
            'claude',
            'claude-sonnet-4-5',
            { ANTHROPIC_BASE_URL: claude.baseUrl, ...npm },
            { name: 'ANTHROPIC_API_KEY', ref: 'anthropic' },
          ),
          stationManifest('claude', 'claude', { template }),
          cliDefinition(
            'gemini',
            'gemini-3.5-flash',
            { GOOGLE_GEMINI_BASE_URL: gemini.baseUrl, ...npm },
            { name: 'GEMINI_API_KEY', ref: 'gemini' },
          ),
          stationManifest('gemini', 'gemini', { template }),
          agentManifest('claude-run', 'claude'),
          agentManifest('gemini-run', 'gemini'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: names.init } });

        const pods = async (): Promise<string[]> =>
          (await s.client.list(apiPath('v1', 'pods', { namespace: s.ns }), {}, PodSchema)).items.map(
            (p) => p.metadata.name,
          );
        for (const [agent, cli, spec, versionLine] of [
          ['claude-run', 'claude', '@anthropic-ai/claude-code@2.1.332', '2.1.332 (Claude Code)'],
          ['gemini-run', 'gemini', '@google/gemini-cli@0.61.0', '0.61.0'],
        ] as const) {
          const run = await s.waitTerminal(agent, 420_000);
          assert.equal(run.status.phase, 'Succeeded', `${agent}: ${JSON.stringify(run.status)}`);
          assert.equal((run.status as Record<string, unknown>).result, answers[cli]);

          // The init said what it installed, and the installed CLI's version.
          const jobName = run.status.jobName;
          const pod = (await pods()).find((p) => jobName !== undefined && p.startsWith(`${jobName}-`));
          assert.ok(pod !== undefined, `the pod of ${agent}`);
          const initLog = await s.client.logs(s.ns, pod, { container: 'init' });
          const lines = initLog.split('\n');
          assert.ok(
            lines.includes(`{"kind":"lifecycle","phase":"init","status":"running","tool":"${cli}"}`),
            initLog,
          );
          assert.ok(initLog.includes(`npm install ${spec}`), initLog);
          assert.ok(lines.includes(versionLine), initLog);
          assert.ok(lines.includes('{"kind":"lifecycle","phase":"init","status":"succeeded"}'), initLog);
          assert.ok(!initLog.includes(keys.anthropic) && !initLog.includes(keys.gemini), 'no key in the log');
        }
        assert.equal(claude.requests.filter((r) => r.path === '/v1/messages').length, 1);
        assert.ok(gemini.requests.length >= 1, 'Gemini CLI asked its fake');

        // Everything came from the loopback registry: the launchers' packuments and every tarball npm fetched.
        for (const p of [
          '/@anthropic-ai/claude-code',
          '/@anthropic-ai/claude-code-linux-x64',
          '/@google/gemini-cli',
        ])
          assert.ok(registry.requests.includes(`GET ${p} 200`), registry.requests.join('\n'));
        const tarballs = registry.requests.filter((r) => r.startsWith('GET /-/tarball/'));
        assert.ok(tarballs.length >= 3, registry.requests.join('\n'));
        assert.ok(
          tarballs.every((r) => r.endsWith(' 200')),
          tarballs.join('\n'),
        );
      });
    } finally {
      await Promise.all([claude.close(), gemini.close(), registry.close()]);
    }
  });
});
