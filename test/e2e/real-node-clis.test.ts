// The real Codex, Gemini CLI and OpenCode on the real node (issue 26; docs/design/real-node.md#the-real-vendor-clis),
// as real-node-observe.test.ts runs the real Claude Code: each CLI in an image of its own
// (test/support/real-node/cli-images.ts, imported once per test bed), Job runs all at once, each talking to the fake
// of the model API it speaks (OpenAI Responses for Codex, Gemini for Gemini CLI, Anthropic for OpenCode), started
// in the node's network namespace (pods cannot reach the host's loopback). The model asks for one shell command that
// writes the workspace; the CLI runs it in its container and sends the output back, then answers. The scripts and
// what each run must show are shared with the process node's real-cli-others.test.ts
// (test/support/real-cli-checks.ts). Codex runs with the product's default (`permission_mode` auto), which gives it
// no sandbox of its own: its bubblewrap cannot make a user namespace under the RuntimeDefault seccomp profile every
// run pod has (docs/design/real-node.md#where-the-real-node-and-the-process-node-disagree-codexs-sandbox), so its
// command must run in the pod's own user namespace and write the marker. Needs `scripts/testbed up --real-node`, the
// built bundle and `scripts/install-clis`.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  BUNDLE_PATH,
  e2eCluster,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import { markerRunFailure, otherCliMarkerRuns, vendorKeys } from '../support/real-cli-checks.ts';
import { agentSecrets, cliDefinition, installRealClis } from '../support/real-clis.ts';
import { importCliImages } from '../support/real-node/cli-images.ts';
import { bridgeAddress, startNodeModel } from '../support/real-node/model-fake.ts';
import {
  buildProductImages,
  hostNodeBinary,
  importImages,
  MOCK_CLI_IMAGE,
} from '../support/real-node/product-image.ts';
import { realNodeRuns, realNodeTemplate, runPod } from '../support/real-node/runs.ts';

const cluster = e2eCluster();
const { realNode, skip } = realNodeRuns(cluster);

describe('real node: the real Codex, Gemini CLI and OpenCode in images of their own', { skip }, () => {
  if (typeof cluster === 'string' || realNode === undefined) return;
  let images: string[] = [];
  let importMs = 0;
  before(async () => {
    await applyCrds(cluster.client);
    const started = Date.now();
    const dir = join(dirname(cluster.kubeconfig), 'real-node', 'product-images');
    importImages(realNode.containerdSocket, buildProductImages(dir, BUNDLE_PATH));
    const cliDir = join(dirname(cluster.kubeconfig), 'real-node', 'cli-images');
    images = importCliImages(realNode.containerdSocket, cliDir, installRealClis(), hostNodeBinary(), [
      'codex',
      'gemini',
      'opencode',
    ]);
    importMs = Date.now() - started;
  });
  after(() => cluster.client.close());

  it('each runs its shell tool in its container against its model API; answer, tokens and key as the model saw them', {
    timeout: 400_000,
  }, async (t) => {
    t.diagnostic(`images assembled and imported in ${importMs} ms (those already there are not)`);
    const marker = `marker-${randomBytes(6).toString('hex')}`;
    const keys = vendorKeys();
    const runs = otherCliMarkerRuns(marker);
    const fakes = await Promise.all(
      runs.map((run) =>
        startNodeModel(realNode, {
          vendor: run.vendor,
          apiKey: keys[run.secret.ref],
          conversations: run.conversations,
        }),
      ),
    );
    try {
      await runScenario(cluster, 'rn-clis', async (s) => {
        // As for Claude Code (real-node-observe.test.ts): the run's own NetworkPolicy admits public addresses on
        // 443, so the namespace adds one for run pods to reach the fakes on the bridge (policies add up).
        await s.create({
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'model-gateways' },
          spec: {
            podSelector: { matchLabels: { 'agents.re-cinq.com/component': 'job' } },
            policyTypes: ['Egress'],
            egress: [
              {
                to: [{ ipBlock: { cidr: `${bridgeAddress(realNode.podCIDR)}/32` } }],
                ports: fakes.map((f) => ({ protocol: 'TCP', port: Number(new URL(f.baseUrl).port) })),
              },
            ],
          },
        });
        const imageOf = (cli: string) => images[['codex', 'gemini', 'opencode'].indexOf(cli)] ?? '';
        await s.create(
          agentSecrets(keys),
          ...runs.flatMap((r, i) => [
            cliDefinition(r.name, r.model, { [r.baseUrlEnv]: fakes[i]?.baseUrl ?? '' }, r.secret, r.extra),
            stationManifest(r.name, r.name, { template: realNodeTemplate(realNode, imageOf(r.cli)) }),
            agentManifest(`${r.name}-run`, r.name),
          ]),
        );
        // The init image has each CLI's name on PATH (the mock CLI's image), so the init installs nothing (nothing
        // can be downloaded); the agent container runs the real one of its own image.
        await s.startReplica({ env: { AGENT_IMAGE: MOCK_CLI_IMAGE } });

        const failures: string[] = [];
        for (const [i, r] of runs.entries()) {
          const run = await s.waitTerminal(`${r.name}-run`, 240_000);
          // For docs/design/real-node.md's figures: Job created to terminal phase.
          const { startedAt, completedAt } = run.status as { startedAt?: string; completedAt?: string };
          t.diagnostic(
            `${r.name}: ${(Date.parse(completedAt ?? '') - Date.parse(startedAt ?? '')) / 1000} s`,
          );
          const requests = (await fakes[i]?.finish()) ?? [];
          const pod = await runPod(s, `${r.name}-run`);
          const agent = pod.status.containerStatuses.find((c) => c.name === 'agent');
          const more: string[] = [];
          if (pod.spec.nodeName !== realNode.nodeName) more.push(`on node ${pod.spec.nodeName}`);
          if (!/^containerd:\/\//.test(agent?.containerID ?? ''))
            more.push(`container ${agent?.containerID}`);
          if (agent?.state.terminated?.exitCode !== 0)
            more.push(`agent container ${JSON.stringify(agent?.state)}`);
          const key = keys[r.secret.ref];
          const failure = markerRunFailure(r, run, requests, { marker, key, more });
          if (failure !== undefined) failures.push(failure);
        }
        assert.deepEqual(failures, []);
      });
    } finally {
      await Promise.all(fakes.map((f) => f.finish().catch(() => [])));
    }
  });
});
