// Keyless runs (issue 28) beyond Claude Code's Job run (real-cli-gateway.test.ts): the real Codex, Gemini CLI and
// OpenCode each in a Job run, and the real Claude Code in server mode, with the controller on the model gateway
// (`AGENT_GATEWAY_URL`) and the gateway from the bundle in front of the loopback model-API fakes. For each: the run
// answers with the fake's answer after a shell tool call, no process of its pod holds the vendor key in its
// environment and no file of its volumes holds it (read while the tool call runs; the server's pod while it serves),
// the CLI's variables carry the run's credential and the gateway's URL, every call the fake answered carried the
// namespace's key (put on by the gateway), and the run's usage on status is what the gateway measured: what the fake
// sent, priced with the price table (source `gateway`); a server's grows with each request it serves. Node only: the
// gateway's own paths run on Deno in gateway.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { startGatewayProcess } from '../support/gateway.ts';
import {
  agentManifest,
  applyCrds,
  applyRbacManifests,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import { commandLineOf, envValues, keyInPod, type PodProcess, podProcesses } from '../support/keyless.ts';
import {
  type Conversation,
  type ModelApiFake,
  type ModelRequest,
  startVendorModel,
} from '../support/model-api/index.ts';
import { firstCompletion, servingClient, streamedCompletion } from '../support/real-cli-checks.ts';
import {
  agentSecrets,
  agentTemplate,
  cliDefinition,
  realCliImages,
  realCliSkipReason,
} from '../support/real-clis.ts';
import { createPolicy } from '../support/server.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

const UNREACHABLE = 'http://127.0.0.1:9';

type Vendor = 'anthropic' | 'openai' | 'gemini';
type TokenUsage = { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };

/** One CLI's keyless Job run: its recipe, its fake's script, and what the gateway must have measured. */
interface KeylessCase {
  readonly name: string;
  readonly vendor: Vendor;
  readonly model: string;
  readonly keyEnv: string;
  readonly baseUrlEnv: string;
  /** The path under the gateway's URL the controller sets `baseUrlEnv` to. */
  readonly baseUrlPath: string;
  readonly extra: Readonly<Record<string, unknown>>;
  readonly conversations: Conversation[];
  readonly answer: string;
  readonly tokenUsage: TokenUsage;
  /** The cost in millionths of a dollar, at the prices of PRICES below. */
  readonly microUsd: number;
  /** The fake's requests of the run's own conversation (side requests left out). */
  readonly turnsOf: (fake: ModelApiFake) => ModelRequest[];
}

/** The operator's price file of these runs (none of these models is in the shipped table). */
const PRICES = {
  'gpt-5.1-codex': { inputPerMTok: 2, outputPerMTok: 10, cacheReadPerMTok: 0.5 },
  'gemini-3.*': { inputPerMTok: 0.5, outputPerMTok: 3, cacheReadPerMTok: 0.05 },
  'claude-*-4-5*': { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 },
};

const modelCalls = (fake: ModelApiFake) => fake.requests.filter((r) => r.method === 'POST');
const TITLE = 'You are a title generator';

/**
 * The three runs. The tool call waits until the test has looked at the pod (it removes the wait file), then writes
 * the marker; its output goes back to the model. OpenAI and Gemini count cached tokens inside the prompt count, so
 * the recorded input is the uncached part; Anthropic states them apart.
 */
function cases(marker: string, waitFile: (name: string) => string): KeylessCase[] {
  const command = (name: string) =>
    `touch ${waitFile(name)}; while [ -e ${waitFile(name)} ]; do sleep 0.2; done; echo ${marker} > marker.txt && cat marker.txt`;
  const first = { input: 900, output: 20 };
  const last = { input: 2000, output: 60, cacheRead: 500 };
  const cachedInside = { input: 2400, output: 80, cacheRead: 500, cacheWrite: 0, total: 2980 };
  const all = (fake: ModelApiFake) => modelCalls(fake);
  return [
    {
      name: 'codex',
      vendor: 'openai',
      model: 'gpt-5.1-codex',
      keyEnv: 'OPENAI_API_KEY',
      baseUrlEnv: 'OPENAI_BASE_URL',
      baseUrlPath: '/openai/v1',
      extra: {},
      conversations: [
        {
          turns: [
            // exec_command hands back a command still running after its yield time: long enough for the scan.
            {
              toolCall: { name: 'exec_command', input: { cmd: command('codex'), yield_time_ms: 30000 } },
              usage: first,
            },
            { text: 'Codex left the marker.', usage: last },
          ],
        },
      ],
      answer: 'Codex left the marker.',
      tokenUsage: cachedInside,
      // 2400 × 2 + 80 × 10 + 500 × 0.5
      microUsd: 5850,
      turnsOf: all,
    },
    {
      name: 'gemini',
      vendor: 'gemini',
      model: 'gemini-3.5-flash',
      keyEnv: 'GEMINI_API_KEY',
      baseUrlEnv: 'GOOGLE_GEMINI_BASE_URL',
      baseUrlPath: '/gemini',
      // Gemini CLI offers its shell tool only in yolo mode (docs/reference/vendor-clis.md).
      extra: { permission_mode: 'bypass' },
      conversations: [
        {
          turns: [
            {
              toolCall: {
                name: 'run_shell_command',
                input: { command: command('gemini'), description: 'write a marker' },
              },
              usage: first,
            },
            { text: 'Gemini left the marker.', usage: last },
          ],
        },
      ],
      answer: 'Gemini left the marker.',
      tokenUsage: cachedInside,
      // 2400 × 0.5 + 80 × 3 + 500 × 0.05
      microUsd: 1465,
      turnsOf: all,
    },
    {
      name: 'opencode',
      vendor: 'anthropic',
      model: 'opencode/anthropic/claude-sonnet-4-5',
      keyEnv: 'ANTHROPIC_API_KEY',
      baseUrlEnv: 'ANTHROPIC_BASE_URL',
      baseUrlPath: '/anthropic',
      extra: {},
      conversations: [
        // OpenCode asks a small model (claude-haiku-4-5-…) for a session title beside the first turn, once.
        {
          bodyIncludes: TITLE,
          turns: [{ text: 'Marker', usage: { input: 10, output: 2 } }],
        },
        {
          turns: [
            {
              toolCall: {
                name: 'bash',
                input: { command: command('opencode'), description: 'write a marker' },
              },
              usage: { ...first, cacheWrite: 100 },
            },
            { text: 'OpenCode left the marker.', usage: last },
          ],
        },
      ],
      answer: 'OpenCode left the marker.',
      // The run's two turns and the title call: the gateway meters every call, the CLI's side calls too.
      tokenUsage: {
        input: 900 + 2000 + 10,
        output: 20 + 60 + 2,
        cacheRead: 500,
        cacheWrite: 100,
        total: 2910 + 82 + 500 + 100,
      },
      // 2910 × 3 + 82 × 15 + 500 × 0.3 + 100 × 3.75
      microUsd: 8730 + 1230 + 150 + 375,
      turnsOf: (fake) => modelCalls(fake).filter((r) => !JSON.stringify(r.body ?? '').includes(TITLE)),
    },
  ];
}

/** The run's tool call, found running; then what its pod shows: the key nowhere, the credential and URL in place. */
async function checkPodWhileToolRuns(
  s: Scenario,
  c: KeylessCase,
  waitFile: string,
  apiKey: string,
  gatewayUrl: string,
): Promise<void> {
  const agent = `${c.name}-run`;
  const { procs, tool } = await pollUntil(
    () => {
      const procs = podProcesses(s.ns, agent);
      const tool = procs.find((p) => commandLineOf(p.pid).includes(waitFile));
      return tool !== undefined ? { procs, tool } : undefined;
    },
    { timeoutMs: 180_000, description: `the tool call of ${agent} to run` },
  );
  try {
    assert.ok(procs.length >= 2, `${agent}: the CLI and its tool: ${procs.length} processes`);
    const scan = keyInPod(procs, tool.pid, apiKey);
    assert.deepEqual(scan.found, [], `${agent}: the vendor key in the pod`);
    assert.ok(
      scan.volumes.some((m) => m.endsWith('/workspace')),
      `${agent}: the workspace among the pod's volumes: ${scan.volumes.join(', ')}`,
    );
    // A positive control: the wait file the tool made is among the files read.
    assert.ok(
      scan.read.some((f) => f.endsWith(`/${waitFile}`)),
      `${agent}: the wait file among ${scan.read.length} files read`,
    );
    checkRunVariables(procs, c.keyEnv, c.baseUrlEnv, `${gatewayUrl}${c.baseUrlPath}`, agent);
  } finally {
    rmSync(`/proc/${tool.pid}/root${tool.cwd}/${waitFile}`, { force: true });
  }
}

/** The CLI's key variable holds the run's credential and its base-URL variable the gateway's URL, in every process. */
function checkRunVariables(
  procs: readonly PodProcess[],
  keyEnv: string,
  baseUrlEnv: string,
  baseUrl: string,
  agent: string,
): void {
  const keys = envValues(procs, keyEnv);
  assert.ok(keys.length > 0, `${agent}: the CLI still finds ${keyEnv}`);
  for (const k of keys) assert.match(k, /^acgw1\./, `${agent}: ${keyEnv} is the run's credential`);
  const urls = envValues(procs, baseUrlEnv);
  assert.ok(urls.length > 0, `${agent}: ${baseUrlEnv} is set`);
  for (const u of urls) assert.equal(u, baseUrl, `${agent}: ${baseUrlEnv}`);
}

/** Polls the Agent's status until its tokenUsage is `expected` (the gateway writes at most once a second). */
async function meteredStatus(
  s: Scenario,
  agent: string,
  expected: TokenUsage,
): Promise<Record<string, unknown>> {
  return pollUntil(
    async (observe) => {
      const a = (await s.agents()).find((x) => x.metadata.name === agent);
      const st = a?.status as Record<string, unknown> | undefined;
      observe({ tokenUsage: st?.tokenUsage, annotations: a?.metadata.annotations });
      return isDeepStrictEqual(st?.tokenUsage, expected) ? st : undefined;
    },
    { timeoutMs: 30_000, description: `${agent}'s tokenUsage to be ${JSON.stringify(expected)}` },
  );
}

describe(`keyless runs: the real Codex, Gemini CLI, OpenCode and server mode behind the model gateway (${runtime})`, {
  skip,
}, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('Codex, Gemini CLI and OpenCode: no key in the pod, a shell tool call, calls through the gateway, usage as measured', {
    timeout: 420_000,
  }, async () => {
    const keys = {
      openai: `sk-e2e-${randomBytes(16).toString('hex')}`,
      gemini: `AIza-e2e-${randomBytes(16).toString('hex')}`,
      anthropic: `sk-ant-e2e-${randomBytes(16).toString('hex')}`,
    };
    const marker = `marker-${randomBytes(6).toString('hex')}`;
    const waits = new Map<string, string>();
    const waitFile = (name: string) => {
      const f = waits.get(name) ?? `wait-${name}-${randomBytes(6).toString('hex')}`;
      waits.set(name, f);
      return f;
    };
    const runs = cases(marker, waitFile);
    const fakes = await Promise.all(
      runs.map((c) => startVendorModel(c.vendor, { apiKey: keys[c.vendor], conversations: c.conversations })),
    );
    const fakeOf = (vendor: Vendor) => fakes[runs.findIndex((c) => c.vendor === vendor)]?.baseUrl ?? '';
    try {
      await runScenario(cluster, 'real-gateway-clis', async (s) => {
        const images = realCliImages(s, runtime);
        const prices = join(s.tempDir(), 'prices.json');
        writeFileSync(prices, JSON.stringify(PRICES));
        const gw = await startGatewayProcess({
          kubeconfig: cluster.kubeconfig,
          namespace: s.ns,
          // The gateway adds the vendor's path (`/v1/responses`) to an origin.
          upstreams: {
            anthropic: fakeOf('anthropic'),
            openai: fakeOf('openai').replace(/\/v1$/, ''),
            gemini: fakeOf('gemini'),
          },
          waitReady: false,
          runtime: 'node',
        });
        s.replicas.push(gw.process);
        const template = agentTemplate(images.agent);
        await s.create(
          agentSecrets(keys),
          ...runs.flatMap((c) => [
            // The recipe's own base URL is replaced by the gateway's: a run cannot send its calls elsewhere.
            cliDefinition(
              c.name,
              c.model,
              { [c.baseUrlEnv]: UNREACHABLE },
              { name: c.keyEnv, ref: c.vendor },
              c.extra,
            ),
            stationManifest(c.name, c.name, { template }),
            agentManifest(`${c.name}-run`, c.name),
          ]),
        );
        await s.startReplica({
          env: { AGENT_IMAGE: images.init, AGENT_GATEWAY_URL: gw.url, PRICES_FILE: prices },
        });
        await gw.process.waitReady();

        await Promise.all(
          runs.map((c) => checkPodWhileToolRuns(s, c, waitFile(c.name), keys[c.vendor], gw.url)),
        );

        const failures: string[] = [];
        for (const [i, c] of runs.entries()) {
          const fake = fakes[i];
          if (fake === undefined) throw new Error(`no fake for ${c.name}`);
          const agent = `${c.name}-run`;
          const run = await s.waitTerminal(agent, 180_000);
          const status = run.status as Record<string, unknown>;
          const detail = JSON.stringify({ status, paths: fake.requests.map((r) => `${r.method} ${r.path}`) });
          assert.equal(run.status.phase, 'Succeeded', `${agent}: ${detail}`);
          assert.equal(status.result, c.answer, `${agent}: ${detail}`);
          // The shell tool call ran in the pod and its output went back to the model.
          const turns = c.turnsOf(fake);
          assert.equal(turns.length, 2, `${agent}: ${detail}`);
          const [result] = turns[1]?.toolResults ?? [];
          assert.ok(result?.content.includes(marker), `${agent}: tool result ${JSON.stringify(result)}`);
          // Every call the vendor answered carried the namespace's key, never the credential.
          const calls = modelCalls(fake);
          assert.ok(calls.length >= 2, `${agent}: ${calls.length} calls`);
          for (const r of calls) assert.equal(r.apiKey, keys[c.vendor], `${agent}: ${r.method} ${r.path}`);
          assert.deepEqual(status.gateway, { keys: { [c.vendor]: c.vendor } }, agent);
          try {
            const metered = await meteredStatus(s, agent, c.tokenUsage);
            assert.equal(metered.phase, 'Succeeded', `${agent}: still Succeeded`);
            const cost = metered.costEstimate as Record<string, unknown> | undefined;
            assert.equal(cost?.source, 'gateway', `${agent}: ${JSON.stringify(cost)}`);
            assert.equal(cost?.usd, String(c.microUsd / 1e6), `${agent}: ${JSON.stringify(cost)}`);
          } catch (e) {
            failures.push(`${agent}: ${(e as Error).message}`);
          }
        }
        assert.deepEqual(failures, []);
      });
    } finally {
      await Promise.all(fakes.map((f) => f.close()));
    }
  });

  it("OpenCode's OpenAI and Google providers: their calls through the gateway with the run's credential, usage as measured", {
    timeout: 300_000,
  }, async () => {
    const keys = {
      openai: `sk-e2e-${randomBytes(16).toString('hex')}`,
      gemini: `AIza-e2e-${randomBytes(16).toString('hex')}`,
    };
    // OpenCode's title request goes to a small model of the same provider (gpt-5.4-nano, gemini-3.8-flash).
    const script = (answer: string): Conversation[] => [
      { bodyIncludes: TITLE, turns: [{ text: 'Title', usage: { input: 10, output: 2 } }] },
      { turns: [{ text: answer, usage: { input: 300, output: 12 } }] },
    ];
    const providers = [
      {
        name: 'oc-openai',
        vendor: 'openai',
        model: 'opencode/openai/gpt-5',
        keyEnv: 'OPENAI_API_KEY',
        baseUrlEnv: 'OPENAI_BASE_URL',
        answer: 'OpenAI through the gateway.',
      },
      {
        name: 'oc-google',
        vendor: 'gemini',
        model: 'opencode/google/gemini-2.5-flash',
        keyEnv: 'GEMINI_API_KEY',
        baseUrlEnv: 'GOOGLE_GEMINI_BASE_URL',
        answer: 'Google through the gateway.',
      },
    ] as const;
    const fakes = await Promise.all(
      providers.map((p) =>
        startVendorModel(p.vendor, { apiKey: keys[p.vendor], conversations: script(p.answer) }),
      ),
    );
    const [openai, gemini] = fakes;
    try {
      await runScenario(cluster, 'real-gateway-oc', async (s) => {
        if (openai === undefined || gemini === undefined) throw new Error('no fakes');
        const images = realCliImages(s, runtime);
        const gw = await startGatewayProcess({
          kubeconfig: cluster.kubeconfig,
          namespace: s.ns,
          upstreams: {
            anthropic: UNREACHABLE,
            openai: openai.baseUrl.replace(/\/v1$/, ''),
            gemini: gemini.baseUrl,
          },
          waitReady: false,
          runtime: 'node',
        });
        s.replicas.push(gw.process);
        const template = agentTemplate(images.agent);
        await s.create(
          agentSecrets(keys),
          ...providers.flatMap((p) => [
            cliDefinition(
              p.name,
              p.model,
              { [p.baseUrlEnv]: UNREACHABLE },
              { name: p.keyEnv, ref: p.vendor },
            ),
            stationManifest(p.name, p.name, { template }),
            agentManifest(`${p.name}-run`, p.name),
          ]),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init, AGENT_GATEWAY_URL: gw.url } });
        await gw.process.waitReady();
        for (const [i, p] of providers.entries()) {
          const fake = fakes[i];
          if (fake === undefined) throw new Error(`no fake for ${p.name}`);
          const agent = `${p.name}-run`;
          const run = await s.waitTerminal(agent, 180_000);
          const status = run.status as Record<string, unknown>;
          const detail = JSON.stringify({ status, paths: fake.requests.map((r) => `${r.method} ${r.path}`) });
          assert.equal(run.status.phase, 'Succeeded', `${agent}: ${detail}`);
          assert.equal(status.result, p.answer, `${agent}: ${detail}`);
          const calls = modelCalls(fake);
          assert.equal(calls.length, 2, `${agent}: the title and the turn: ${detail}`);
          for (const r of calls) assert.equal(r.apiKey, keys[p.vendor], `${agent}: ${r.method} ${r.path}`);
          assert.deepEqual(status.gateway, { keys: { [p.vendor]: p.vendor } }, agent);
          await meteredStatus(s, agent, { input: 310, output: 14, cacheRead: 0, cacheWrite: 0, total: 324 });
        }
      });
    } finally {
      await Promise.all(fakes.map((f) => f.close()));
    }
  });

  it('server mode: each request served through the gateway with the run credential, usage grows as measured, no key in the pod', {
    timeout: 300_000,
  }, async () => {
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const answer = 'Served behind the gateway.';
    // Each request is a conversation of its own: the first step of the script answers both.
    const fake = await startVendorModel('anthropic', {
      apiKey,
      turns: [{ text: answer, usage: { input: 40, output: 8, cacheRead: 100, cacheWrite: 20 } }],
    });
    try {
      await runScenario(cluster, 'real-gateway-server', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/server/server-rbac.yaml');
        // The controller's part of the gateway component: the credential Secrets and the gateway key.
        await applyRbacManifests(s, 'deploy/components/gateway/gateway-rbac.yaml');
        const images = realCliImages(s, runtime);
        const gw = await startGatewayProcess({
          kubeconfig: cluster.kubeconfig,
          namespace: s.ns,
          upstreams: { anthropic: fake.baseUrl, openai: UNREACHABLE, gemini: UNREACHABLE },
          waitReady: false,
          runtime: 'node',
        });
        s.replicas.push(gw.process);
        await s.startReplica({
          kubeconfig: await s.kubeconfigAs('agent-controller'),
          env: {
            AGENT_IMAGE: images.init,
            AGENT_POLL_INTERVAL_MS: '1000',
            SERVER_ENABLED: 'true',
            AGENT_GATEWAY_URL: gw.url,
          },
        });
        const policy = await createPolicy(s, 'serve', ['job', 'server']);
        await s.create(
          agentSecrets({ anthropic: apiKey }),
          {
            apiVersion: GROUP_VERSION,
            kind: 'AgentDefinition',
            metadata: { name: 'bot' },
            spec: {
              // A model of the shipped price table (2 and 10 $/MTok).
              model: 'claude-sonnet-5-5',
              prompt: 'unused by servers',
              execution: 'server',
              resources: {
                env: [{ name: 'ANTHROPIC_BASE_URL', value: UNREACHABLE }],
                secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }],
              },
            },
          },
          stationManifest('bot', 'bot', {
            policyRef: policy,
            template: {
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [{ name: 'agent', image: images.agent }],
              },
            },
          }),
          agentManifest('bot', 'bot'),
        );
        await gw.process.waitReady();
        const client = await servingClient(s, 'bot');

        const plain = await firstCompletion(client, 'claude-sonnet-5-5', 'Who answers?');
        assert.equal(plain.choices[0]?.message.content, answer);
        // One request's usage, as the fake sent it; 40 × 2 + 8 × 10 + 100 × 0.2 + 20 × 2.5 = 230 µ$.
        const one = await meteredStatus(s, 'bot', {
          input: 40,
          output: 8,
          cacheRead: 100,
          cacheWrite: 20,
          total: 168,
        });
        assert.equal(one.phase, 'Serving');
        assert.deepEqual(one.costEstimate, { usd: '0.00023', source: 'gateway', model: 'claude-sonnet-5-5' });
        assert.deepEqual(one.gateway, { keys: { anthropic: 'anthropic' } });

        assert.equal(await streamedCompletion(client, 'claude-sonnet-5-5', 'Who answers, streamed?'), answer);
        const two = await meteredStatus(s, 'bot', {
          input: 80,
          output: 16,
          cacheRead: 200,
          cacheWrite: 40,
          total: 336,
        });
        assert.deepEqual(two.costEstimate, { usd: '0.00046', source: 'gateway', model: 'claude-sonnet-5-5' });

        // Both prompts reached the vendor through the gateway, with the namespace's key.
        const asked = fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages');
        assert.equal(asked.length, 2, JSON.stringify(fake.requests.map((r) => r.path)));
        for (const r of asked) assert.equal(r.apiKey, apiKey);

        // The server's pod: no process holds the key, no file of its volumes has it; its CLI gets the credential.
        const procs = podProcesses(s.ns, 'bot');
        assert.ok(procs.length >= 1, 'the server pod runs');
        const [server] = procs;
        if (server === undefined) throw new Error('no server process');
        const scan = keyInPod(procs, server.pid, apiKey);
        assert.deepEqual(scan.found, [], 'the vendor key in the server pod');
        assert.ok(
          scan.volumes.length > 0 && scan.read.length > 0,
          `volumes read: ${scan.volumes.join(', ')}`,
        );
        checkRunVariables(procs, 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', `${gw.url}/anthropic`, 'bot');
      });
    } finally {
      await fake.close();
    }
  });
});
