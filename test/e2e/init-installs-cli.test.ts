// An image without the vendor CLI (docs/reference/vendor-clis.md#installing-in-the-init): the run pod's image has
// node and npm (the test node's own) but no vendor CLI, so the init installs the real pinned CLI (Claude Code,
// Gemini CLI, Codex, OpenCode) with npm from a local registry on a loopback port (test/support/npm-registry.ts, the
// npm registry's own tarballs) into $HOME/.local as the restricted profile's uid 1000; the agent container, whose
// image has no CLI either, then runs it against the loopback fake of its model API and the run Succeeds with the
// model's answer. Claude Code's and OpenCode's npm `bin` is a stub until their postinstall runs: their runs set npm's
// `strict-allow-scripts` (unreviewed install scripts fail the install), so they pass only because the init allows
// that one package's script. Both passes: the init that runs npm is the bundle on Node or on Deno.
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
  type Manifest,
  runScenario,
  stationManifest,
  testbedImage,
} from '../support/index.ts';
import {
  type ModelApiFake,
  startAnthropicModel,
  startGeminiModel,
  startOpenAIModel,
} from '../support/model-api/index.ts';
import { type NpmRegistry, startNpmRegistry } from '../support/npm-registry.ts';
import { agentSecrets, agentTemplate, cliDefinition } from '../support/real-clis.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = controllerSkipReason(cluster);

const PodSchema = v.looseObject({ metadata: v.looseObject({ name: v.string() }) });

type Cli = 'claude' | 'gemini' | 'codex' | 'opencode';

/** What one CLI's run needs and what its init log must show. */
interface Case {
  readonly cli: Cli;
  readonly model: string;
  /** The fake's base URL variable and the key's variable. */
  readonly baseUrlEnv: string;
  readonly keyEnv: string;
  /** `<package>@<version>` as the init logs it. */
  readonly spec: string;
  /** What `<cli> --version` prints. */
  readonly versionLine: string;
  /** Packuments the registry must have served. */
  readonly packuments: readonly string[];
  /** The model requests of the run's own conversation in the fake's record. */
  readonly turns: (fake: ModelApiFake) => readonly unknown[];
  /** npm's `strict-allow-scripts` for the run: on for packages that have no unreviewed script but their own. */
  readonly strict: boolean;
}

const CASES: Readonly<Record<Cli, Case>> = {
  claude: {
    cli: 'claude',
    model: 'claude-sonnet-4-5',
    baseUrlEnv: 'ANTHROPIC_BASE_URL',
    keyEnv: 'ANTHROPIC_API_KEY',
    spec: '@anthropic-ai/claude-code@2.1.332',
    versionLine: '2.1.332 (Claude Code)',
    packuments: ['/@anthropic-ai/claude-code', '/@anthropic-ai/claude-code-linux-x64'],
    turns: (f) => f.requests.filter((r) => r.path === '/v1/messages'),
    strict: true,
  },
  gemini: {
    cli: 'gemini',
    model: 'gemini-3.5-flash',
    baseUrlEnv: 'GOOGLE_GEMINI_BASE_URL',
    keyEnv: 'GEMINI_API_KEY',
    spec: '@google/gemini-cli@0.61.0',
    versionLine: '0.61.0',
    packuments: ['/@google/gemini-cli'],
    turns: (f) => f.requests.filter((r) => r.method === 'POST'),
    // Its optional native add-ons (keytar, node-pty) have install scripts of their own, which a strict policy refuses.
    strict: false,
  },
  codex: {
    cli: 'codex',
    model: 'gpt-5.1-codex',
    baseUrlEnv: 'OPENAI_BASE_URL',
    keyEnv: 'OPENAI_API_KEY',
    spec: '@openai/codex@0.171.0',
    versionLine: 'codex-cli 0.171.0',
    // The platform binary is a version of the same package (`npm:@openai/codex@0.171.0-linux-x64`).
    packuments: ['/@openai/codex'],
    turns: (f) => f.requests.filter((r) => r.method === 'POST' && r.path === '/v1/responses'),
    strict: true,
  },
  opencode: {
    cli: 'opencode',
    model: 'opencode/anthropic/claude-sonnet-4-5',
    baseUrlEnv: 'ANTHROPIC_BASE_URL',
    keyEnv: 'ANTHROPIC_API_KEY',
    spec: 'opencode-ai@1.18.33',
    versionLine: '1.18.33',
    packuments: ['/opencode-ai', '/opencode-linux-x64'],
    turns: (f) =>
      f.requests.filter(
        (r) =>
          r.path === '/v1/messages' && !JSON.stringify(r.body ?? '').includes('You are a title generator'),
      ),
    strict: true,
  },
};

/** The loopback fake of `cli`'s model API, answering `answer` (OpenCode's title request too). */
function startFake(cli: Cli, apiKey: string, answer: string): Promise<ModelApiFake> {
  switch (cli) {
    case 'claude':
      return startAnthropicModel({ apiKey, turns: [{ text: answer }] });
    case 'gemini':
      return startGeminiModel({ apiKey, turns: [{ text: answer }] });
    case 'codex':
      return startOpenAIModel({ apiKey, turns: [{ text: answer }] });
    case 'opencode':
      return startAnthropicModel({
        apiKey,
        conversations: [
          {
            match: (body) => JSON.stringify((body as { system?: unknown }).system ?? '').includes('title'),
            turns: [{ text: 'Installed' }],
          },
          { turns: [{ text: answer }] },
        ],
      });
  }
}

/**
 * Runs one Agent per CLI of `clis` on images without any CLI, the init installing each from `registry`; checks each
 * run's answer, what its init logged, and that every package came from the registry.
 */
async function installAndRun(clis: readonly Cli[], registry: NpmRegistry, scenario: string): Promise<void> {
  if (typeof cluster === 'string') return;
  const keys = Object.fromEntries(clis.map((c) => [c, `key-e2e-${c}-${randomBytes(16).toString('hex')}`]));
  const answers = Object.fromEntries(
    clis.map((c) => [c, `${c} installed and answering ${randomBytes(4).toString('hex')}.`]),
  );
  const fakes = new Map<Cli, ModelApiFake>();
  try {
    for (const c of clis) fakes.set(c, await startFake(c, keys[c] ?? '', answers[c] ?? ''));
    await runScenario(cluster, scenario, async (s) => {
      // The run-pod image as the test bed has it (node and npm, no vendor CLI), and a bare agent image.
      const names = { init: `agent-controller-bare:${s.ns}`, agent: `bare:${s.ns}` };
      s.defer(
        addTestImages(s.cluster, `bare-${s.ns}`, {
          [names.init]: testbedImage(s.cluster, runPodImage(runtime)),
          [names.agent]: { entrypoint: [], files: {} },
        }),
      );
      const template = agentTemplate(names.agent);
      const objects: Manifest[] = [agentSecrets(keys)];
      for (const c of clis) {
        const k = CASES[c];
        const env = {
          [k.baseUrlEnv]: fakes.get(c)?.baseUrl ?? '',
          NPM_CONFIG_REGISTRY: registry.url,
          ...(k.strict ? { NPM_CONFIG_STRICT_ALLOW_SCRIPTS: 'true' } : {}),
        };
        objects.push(
          cliDefinition(c, k.model, env, { name: k.keyEnv, ref: c }),
          stationManifest(c, c, { template }),
          agentManifest(`${c}-run`, c),
        );
      }
      await s.create(...objects);
      await s.startReplica({ env: { AGENT_IMAGE: names.init } });

      const pods = async (): Promise<string[]> =>
        (await s.client.list(apiPath('v1', 'pods', { namespace: s.ns }), {}, PodSchema)).items.map(
          (p) => p.metadata.name,
        );
      for (const c of clis) {
        const k = CASES[c];
        const run = await s.waitTerminal(`${c}-run`, 420_000);
        assert.equal(run.status.phase, 'Succeeded', `${c}: ${JSON.stringify(run.status)}`);
        assert.equal((run.status as Record<string, unknown>).result, answers[c]);

        // The init said what it installed, and the installed CLI's version.
        const jobName = run.status.jobName;
        const pod = (await pods()).find((p) => jobName !== undefined && p.startsWith(`${jobName}-`));
        assert.ok(pod !== undefined, `the pod of ${c}-run`);
        const initLog = await s.client.logs(s.ns, pod, { container: 'init' });
        const lines = initLog.split('\n');
        assert.ok(
          lines.includes(`{"kind":"lifecycle","phase":"init","status":"running","tool":"${c}"}`),
          initLog,
        );
        assert.ok(initLog.includes(`npm install ${k.spec}`), initLog);
        assert.ok(lines.includes(k.versionLine), initLog);
        assert.ok(lines.includes('{"kind":"lifecycle","phase":"init","status":"succeeded"}'), initLog);
        assert.ok(!Object.values(keys).some((key) => initLog.includes(key)), 'no key in the log');
        const fake = fakes.get(c);
        assert.ok(fake !== undefined && k.turns(fake).length === 1, `${c} asked its fake once`);
        for (const p of k.packuments)
          assert.ok(registry.requests.includes(`GET ${p} 200`), registry.requests.join('\n'));
      }
      // Everything came from the loopback registry: every tarball npm fetched.
      const tarballs = registry.requests.filter((r) => r.startsWith('GET /-/tarball/'));
      assert.ok(tarballs.length >= clis.length, registry.requests.join('\n'));
      assert.ok(
        tarballs.every((r) => r.endsWith(' 200')),
        tarballs.join('\n'),
      );
    });
  } finally {
    await Promise.all([...fakes.values()].map((f) => f.close()));
  }
}

describe(`the init installs the vendor CLI when the image lacks it (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  let registry: NpmRegistry | undefined;
  before(async () => {
    await applyCrds(cluster.client);
    registry = await startNpmRegistry();
  });
  after(async () => {
    await registry?.close();
    cluster.client.close();
  });

  it('npm installs the pinned Claude Code and Gemini CLI from the registry, and the runs use them', {
    timeout: 600_000,
  }, async () => {
    assert.ok(registry !== undefined);
    await installAndRun(['claude', 'gemini'], registry, 'init-npm');
  });

  it('npm installs the pinned Codex and OpenCode from the registry, and the runs use them', {
    timeout: 600_000,
  }, async () => {
    assert.ok(registry !== undefined);
    await installAndRun(['codex', 'opencode'], registry, 'init-npm-2');
  });
});
