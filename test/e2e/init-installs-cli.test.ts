// An image without the vendor CLI (docs/reference/vendor-clis.md#installing-in-the-init): the run pod's image has
// node and npm (the test node's own) but no `claude`, so the init installs the real pinned Claude Code with npm
// from a local registry on a loopback port (test/support/npm-registry.ts, the npm registry's own tarballs) into
// $HOME/.local as the restricted profile's uid 1000; the agent container, whose image has no CLI either, then runs
// it against the loopback Anthropic fake and the run Succeeds with the model's answer.
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
  GROUP_VERSION,
  runScenario,
  stationManifest,
  testbedImage,
} from '../support/index.ts';
import { startAnthropicModel } from '../support/model-api/index.ts';
import { startNpmRegistry } from '../support/npm-registry.ts';
import { agentSecrets, agentTemplate } from '../support/real-clis.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = controllerSkipReason(cluster);

const PodSchema = v.looseObject({ metadata: v.looseObject({ name: v.string() }) });

describe(`the init installs the vendor CLI when the image lacks it (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('npm installs the pinned Claude Code from the registry, and the run uses it', {
    timeout: 600_000,
  }, async () => {
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const answer = `Installed and answering ${randomBytes(4).toString('hex')}.`;
    const fake = await startAnthropicModel({ apiKey, turns: [{ text: answer }] });
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
        await s.create(
          agentSecrets({ anthropic: apiKey }),
          {
            apiVersion: GROUP_VERSION,
            kind: 'AgentDefinition',
            metadata: { name: 'install' },
            spec: {
              model: 'claude-sonnet-4-5',
              prompt: 'Say something.',
              resources: {
                env: [
                  { name: 'ANTHROPIC_BASE_URL', value: fake.baseUrl },
                  { name: 'NPM_CONFIG_REGISTRY', value: registry.url },
                ],
                secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }],
              },
            },
          },
          stationManifest('install', 'install', { template: agentTemplate(names.agent) }),
          agentManifest('install-run', 'install'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: names.init } });

        const run = await s.waitTerminal('install-run', 420_000);
        assert.equal(run.status.phase, 'Succeeded', JSON.stringify(run.status));
        assert.equal((run.status as Record<string, unknown>).result, answer);
        assert.equal(fake.requests.filter((r) => r.path === '/v1/messages').length, 1);

        // The packages came from the loopback registry: the launcher's and the platform binary's tarballs.
        const tarballs = registry.requests.filter((r) => r.startsWith('GET /-/tarball/'));
        assert.equal(tarballs.length, 2, registry.requests.join('\n'));
        assert.ok(
          tarballs.every((r) => r.endsWith(' 200')),
          tarballs.join('\n'),
        );
        assert.ok(registry.requests.includes('GET /@anthropic-ai/claude-code 200'));

        // The init said what it installed, and the installed CLI's version.
        const pods = await s.client.list(apiPath('v1', 'pods', { namespace: s.ns }), {}, PodSchema);
        const pod = pods.items[0]?.metadata.name;
        assert.ok(pod !== undefined, 'the run pod is there');
        const initLog = await s.client.logs(s.ns, pod, { container: 'init' });
        assert.ok(
          initLog.includes('{"kind":"lifecycle","phase":"init","status":"running","tool":"claude"}'),
          initLog,
        );
        assert.ok(initLog.includes('npm install @anthropic-ai/claude-code@2.1.332'), initLog);
        assert.ok(initLog.includes('2.1.332 (Claude Code)'), initLog);
        assert.ok(initLog.includes('{"kind":"lifecycle","phase":"init","status":"succeeded"}'), initLog);
        assert.ok(!initLog.includes(apiKey), 'the key is not in the init log');
      });
    } finally {
      await Promise.all([fake.close(), registry.close()]);
    }
  });
});
