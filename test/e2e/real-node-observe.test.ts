// What a user sees of runs on the real node (issue 26; docs/design/real-node.md), beside real-node-runs.test.ts and
// with the same skip rule: a native tool sidecar serving MCP, as the kubelet runs it (started before the agent
// container, reached by it on localhost, stopped after it: read from the kubelet's container statuses and the
// containers' own timestamped logs); a run's output live from a real container (`kubectl logs`,
// `agent-controller logs -f` and the console's output stream, each showing a line while the run is still Running,
// and ending with the run); and the real Claude Code in an image, talking to a scripted Anthropic model started in
// the node's network namespace (pods cannot reach the host's loopback), running a Bash tool call in the pod.
// Needs `scripts/testbed up --real-node`, the built bundle and (for the last) `scripts/install-clis`.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { assertSidecarAroundAgent, lineOf } from '../support/container-order.ts';
import {
  agentManifest,
  applyCrds,
  applyRbacManifests,
  BUNDLE_PATH,
  bundleArgv,
  e2eCluster,
  execDefinition,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import { claudeMarkerScript } from '../support/real-cli-checks.ts';
import { agentSecrets, cliDefinition, installRealClis } from '../support/real-clis.ts';
import { importCliImages } from '../support/real-node/cli-images.ts';
import { MCP_TOOL_IMAGE, mcpToolImageSpec, writeImages } from '../support/real-node/extra-images.ts';
import { startNodeModel } from '../support/real-node/model-fake.ts';
import {
  buildProductImages,
  hostNodeBinary,
  importImages,
  MOCK_CLI_IMAGE,
  PRODUCT_IMAGE,
} from '../support/real-node/product-image.ts';
import { realNodeRuns, realNodeTemplate, runPod } from '../support/real-node/runs.ts';

const cluster = e2eCluster();
const { realNode, skip } = realNodeRuns(cluster);

/** kubectl of the control plane's release (the test bed runs its binaries, so it is built). */
function kubectlBinary(): string {
  const bin = spawnSync('bash', [join(import.meta.dirname, '..', '..', 'scripts', 'build-kube-binaries')], {
    encoding: 'utf8',
  });
  assert.equal(bin.status, 0, bin.stderr);
  return join(bin.stdout.trim().split('\n').at(-1) ?? '', 'kubectl');
}

function kubectl(kubeconfig: string, ...args: string[]): string {
  const r = spawnSync(kubectlBinary(), ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** The agent's MCP call (JSON-RPC over Streamable HTTP, as an MCP client sends it): initialize, then tools/call. */
const MCP_CALL = (port: number) => `const url = 'http://127.0.0.1:${port}/mcp';
const rpc = (id, method, params) => fetch(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
}).then((r) => r.json());
(async () => {
  console.log('agent calling the tool');
  await rpc(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'run', version: '1' } });
  const r = await rpc(2, 'tools/call', { name: 'lookup', arguments: { q: 'the keys' } });
  console.log('tool said: ' + r.result.content[0].text);
})();`;

/** A run that prints a line, then its last line once the file /workspace/release exists (the test makes it). */
const PACED = `const fs = require('node:fs');
console.log('first line of the paced run');
const t = setInterval(() => {
  if (!fs.existsSync('/workspace/release')) return;
  clearInterval(t);
  console.log('last line of the paced run');
}, 100);`;

describe('real node: what a user sees of runs on a real kubelet', { skip }, () => {
  if (typeof cluster === 'string' || realNode === undefined) return;
  before(async () => {
    await applyCrds(cluster.client);
    const dir = join(dirname(cluster.kubeconfig), 'real-node', 'product-images');
    importImages(realNode.containerdSocket, [
      ...buildProductImages(dir, BUNDLE_PATH),
      ...writeImages(dir, [mcpToolImageSpec(hostNodeBinary())]),
    ]);
  });
  after(() => cluster.client.close());

  it(
    'a native MCP tool sidecar starts before the agent container, answers its call, and stops after it',
    {
      timeout: 180_000,
    },
    () =>
      runScenario(cluster, 'rn-sidecar', async (s) => {
        const port = 7801;
        const answer = `shelf-${randomBytes(4).toString('hex')}`;
        await s.create(
          execDefinition('with-tool', ['/nodejs/bin/node', '-e', MCP_CALL(port)], {
            sidecars: [
              {
                name: 'lookup',
                image: MCP_TOOL_IMAGE,
                mcp: { port },
                env: [
                  { name: 'MCP_PORT', value: String(port) },
                  { name: 'MCP_ANSWER', value: answer },
                ],
              },
            ],
          }),
          stationManifest('with-tool', 'with-tool', { template: realNodeTemplate(realNode, MOCK_CLI_IMAGE) }),
          agentManifest('uses-tool', 'with-tool'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: PRODUCT_IMAGE } });
        const done = await s.waitTerminal('uses-tool');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.match(done.status.output ?? '', new RegExp(`^tool said: found the keys at ${answer}$`, 'm'));

        // Started before the agent container and stopped after it, as the kubelet reports it (statuses, and the
        // containers' logs with containerd's nanosecond timestamps): the agent container's start waited for the
        // tool's startup probe, and the tool got SIGTERM after the agent container's last line.
        const { pod, sidecarLog, agentLog } = await assertSidecarAroundAgent(
          s,
          'agent-job-uses-tool',
          'lookup',
          {
            listening: new RegExp(`^mcp listening on ${port}$`),
            stopping: /^mcp stopping$/,
          },
        );
        assert.equal(pod.spec.nodeName, realNode.nodeName);
        const spec = pod.spec as { initContainers?: { name: string; restartPolicy?: string }[] };
        assert.deepEqual(
          spec.initContainers?.map((c) => [c.name, c.restartPolicy ?? null]),
          [
            ['init', null],
            ['lookup', 'Always'],
          ],
        );
        const toolStatus = pod.status.initContainerStatuses.find((c) => c.name === 'lookup');
        assert.equal(toolStatus?.restartCount, 0, 'the tool ran once');
        assert.match(toolStatus?.containerID ?? '', /^containerd:\/\//);
        // The agent's call reached the tool after the agent made it.
        lineOf(sidecarLog, /^mcp initialize$/);
        const call = lineOf(
          sidecarLog,
          /^mcp tools\/call \{"name":"lookup","arguments":\{"q":"the keys"\}\}$/,
        );
        assert.ok(lineOf(agentLog, /^agent calling the tool$/).ns < call.ns, 'the call came from the agent');
      }),
  );

  it(
    'live output of a real container: kubectl logs, agent-controller logs -f and the console stream',
    {
      timeout: 180_000,
    },
    () =>
      runScenario(cluster, 'rn-live', async (s) => {
        await applyRbacManifests(s, 'deploy/components/console/console-user-rbac.yaml');
        const ctl = await s.startReplica({
          env: { AGENT_IMAGE: PRODUCT_IMAGE, CONSOLE_ENABLED: 'true', CONSOLE_PORT: '0' },
        });
        const consoleBase = `http://127.0.0.1:${String((await ctl.waitForLog('Serving the web console')).port)}`;
        await s.create(
          execDefinition('paced', ['/nodejs/bin/node', '-e', PACED]),
          stationManifest('paced', 'paced', { template: realNodeTemplate(realNode, MOCK_CLI_IMAGE) }),
          agentManifest('paced-run', 'paced'),
        );
        const running = await s.waitForAgent(
          'paced-run',
          (a) => a.status.phase === 'Running' && a.status.jobName !== undefined,
          'Running with its Job',
          90_000,
        );
        assert.equal(running.status.phase, 'Running');

        // agent-controller logs -f, from now until it exits by itself.
        const [cmd, ...pre] = bundleArgv('node');
        const follow = spawn(
          cmd ?? process.execPath,
          [...pre, 'logs', 'paced-run', '-f', '--kubeconfig', s.cluster.kubeconfig, '-n', s.ns],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let followOut = '';
        let followErr = '';
        follow.stdout.setEncoding('utf8').on('data', (c: string) => {
          followOut += c;
        });
        follow.stderr.setEncoding('utf8').on('data', (c: string) => {
          followErr += c;
        });
        const followExit = new Promise<number | null>((resolve) => follow.once('close', resolve));
        s.defer(() => void follow.kill('SIGKILL'));

        // The console's output stream, as a person with the console user's Role signed in.
        const stream = await consoleStream(s, consoleBase, 'paced-run');
        s.defer(() => stream.close());

        // The first line reaches all three while the run waits for its release (it cannot end before it).
        const pod = await runPod(s, 'paced-run');
        assert.equal(pod.spec.nodeName, realNode.nodeName);
        const podName = pod.metadata.name ?? '';
        const first = /^first line of the paced run$/m;
        await pollUntil(
          (observe) => {
            const seen = {
              kubectl: kubectl(s.cluster.kubeconfig, 'logs', '-n', s.ns, podName, '-c', 'agent'),
              follow: followOut,
              console: stream.text(),
            };
            observe(seen);
            return Object.values(seen).every((t) => first.test(t)) ? true : undefined;
          },
          {
            timeoutMs: 60_000,
            intervalMs: 500,
            description: 'the first line in kubectl logs, logs -f and the console',
          },
        );
        assert.equal(
          (await s.agent('paced-run'))?.status.phase,
          'Running',
          'still running when the line was read',
        );
        assert.doesNotMatch(followOut, /last line/);
        assert.doesNotMatch(stream.text(), /last line/);

        // Released through the kubelet (kubectl exec into the agent container), the run prints its last line and ends.
        kubectl(
          s.cluster.kubeconfig,
          'exec',
          '-n',
          s.ns,
          podName,
          '-c',
          'agent',
          '--',
          '/nodejs/bin/node',
          '-e',
          "require('node:fs').writeFileSync('/workspace/release', '')",
        );
        const code = await followExit;
        assert.equal(code, 0, `logs -f exited 0:\n${followOut}\n${followErr}`);
        const firstAt = followOut.indexOf('first line of the paced run\n');
        const lastAt = followOut.indexOf('last line of the paced run\n');
        assert.ok(firstAt >= 0 && lastAt > firstAt, `both lines in order:\n${followOut}`);
        assert.equal(
          followOut.match(/first line of the paced run/g)?.length,
          1,
          `no line twice:\n${followOut}`,
        );
        const done = await s.waitTerminal('paced-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        await stream.ended();
        assert.match(stream.text(), /first line of the paced run\n(.|\n)*last line of the paced run/);
        assert.match(
          kubectl(s.cluster.kubeconfig, 'logs', '-n', s.ns, podName, '-c', 'agent'),
          /^first line of the paced run$(.|\n)*^last line of the paced run$/m,
        );
      }),
  );
  it('the real Claude Code in an image: a Bash tool call runs in the pod; answer and tokens as the model sent them', {
    timeout: 300_000,
  }, async () => {
    // The CLI as scripts/install-clis installed it, in an image of its own (imported once per test bed).
    const dir = join(dirname(cluster.kubeconfig), 'real-node', 'cli-images');
    const [image = ''] = importCliImages(
      realNode.containerdSocket,
      dir,
      installRealClis(),
      hostNodeBinary(),
      ['claude'],
    );
    const marker = `marker-${randomBytes(6).toString('hex')}`;
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const script = claudeMarkerScript(marker);
    const fake = await startNodeModel(realNode, { vendor: 'anthropic', apiKey, turns: script.turns });
    try {
      await runScenario(cluster, 'rn-claude-code', async (s) => {
        // The run's own NetworkPolicy admits public addresses on 443, not a model gateway on a private address;
        // as a user with such a gateway would, the namespace adds a policy for run pods to reach the fake (policies
        // add up). Without NetworkPolicy enforcement on the node it changes nothing.
        const gateway = new URL(fake.baseUrl);
        await s.create(
          {
            apiVersion: 'networking.k8s.io/v1',
            kind: 'NetworkPolicy',
            metadata: { name: 'model-gateway' },
            spec: {
              podSelector: { matchLabels: { 'agents.re-cinq.com/component': 'job' } },
              policyTypes: ['Egress'],
              egress: [
                {
                  to: [{ ipBlock: { cidr: `${gateway.hostname}/32` } }],
                  ports: [{ protocol: 'TCP', port: Number(gateway.port) }],
                },
              ],
            },
          },
          agentSecrets({ anthropic: apiKey }),
          cliDefinition(
            'work',
            'claude-sonnet-4-5',
            { ANTHROPIC_BASE_URL: fake.baseUrl },
            { name: 'ANTHROPIC_API_KEY', ref: 'anthropic' },
            { allowed_tools: ['Bash'] },
          ),
          stationManifest('work', 'work', { template: realNodeTemplate(realNode, image) }),
          agentManifest('work-run', 'work'),
        );
        // The init image has a `claude` on PATH (the mock CLI's image), so the init installs nothing (nothing can
        // be downloaded); the agent container runs the real one of its own image.
        await s.startReplica({ env: { AGENT_IMAGE: MOCK_CLI_IMAGE } });
        const run = await s.waitTerminal('work-run', 180_000);
        const status = run.status as Record<string, unknown>;
        assert.equal(run.status.phase, 'Succeeded', JSON.stringify(run.status));
        assert.equal(status.result, script.answer);
        assert.deepEqual(status.tokenUsage, script.tokenUsage, 'the usage the model sent, added up');
        const pod = await runPod(s, 'work-run');
        assert.equal(pod.spec.nodeName, realNode.nodeName);
        const agent = pod.status.containerStatuses.find((c) => c.name === 'agent');
        assert.equal(agent?.state.terminated?.exitCode, 0);
        assert.match(agent?.containerID ?? '', /^containerd:\/\//);

        // The model got the Bash call's output from the pod's workspace, with the key, and nothing else was asked.
        const requests = await fake.finish();
        assert.deepEqual(
          requests.map((r) => `${r.method} ${r.path} ${r.status}`),
          ['POST /v1/messages 200', 'POST /v1/messages 200'],
        );
        for (const r of requests) {
          assert.equal(r.apiKey, apiKey, 'the key reached the model API');
          assert.ok(r.tools.includes('Bash'), `Bash offered: ${r.tools.join(',')}`);
        }
        const [result] = requests[1]?.toolResults ?? [];
        assert.ok(result?.content.includes(`/workspace\n${marker}`), `tool result: ${result?.content}`);
      });
    } finally {
      await fake.finish().catch(() => []);
    }
  });
});

/** A console session's output stream of an Agent: its text so far, and when it ends (the `end` event). */
async function consoleStream(
  s: Scenario,
  base: string,
  agent: string,
): Promise<{ text(): string; ended(): Promise<void>; close(): void }> {
  await s.create(
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'watcher' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'watcher' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'agent-console-user' },
      subjects: [{ kind: 'ServiceAccount', name: 'watcher', namespace: s.ns }],
    },
  );
  const token = await s.serviceAccountToken('watcher');
  const cookie = (r: Response, name: string) =>
    r.headers
      .getSetCookie()
      .map((c) => c.split(';')[0] ?? '')
      .find((c) => c.startsWith(`${name}=`));
  const form = await fetch(`${base}/login`);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  const login = cookie(form, 'agent_console_login');
  assert.ok(csrf && login, 'the sign-in form and its cookie');
  const signedIn = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: login, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, _csrf: csrf }).toString(),
  });
  const session = cookie(signedIn, 'agent_console_session');
  assert.equal(signedIn.status, 303, await signedIn.text());
  assert.ok(session, 'a session cookie');
  const abort = new AbortController();
  const res = await fetch(`${base}/agents/${s.ns}/${agent}/stream`, {
    headers: { cookie: session, accept: 'text/event-stream' },
    signal: abort.signal,
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  let text = '';
  let raw = '';
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of res.body ?? []) {
      raw += decoder.decode(chunk as Uint8Array, { stream: true });
      let at = raw.indexOf('\n\n');
      while (at >= 0) {
        const event = raw.slice(0, at);
        raw = raw.slice(at + 2);
        at = raw.indexOf('\n\n');
        if (/^event: end$/m.test(event)) return;
        const data = /^data: (.*)$/m.exec(event)?.[1];
        if (data !== undefined) text += JSON.parse(data) as string;
      }
    }
    throw new Error(`the console stream closed without its end event: ${text}`);
  })();
  reading.catch(() => {});
  return {
    text: () => text,
    ended: () =>
      Promise.race([
        reading,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`no end event in 30 s: ${text}`)), 30_000).unref(),
        ),
      ]),
    close: () => abort.abort(),
  };
}
