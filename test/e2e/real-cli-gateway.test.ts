// Keyless runs (issue 28): the real Claude Code in a Job run whose controller runs with the model gateway
// (`AGENT_GATEWAY_URL`), the gateway from the bundle in front of the loopback Anthropic Messages fake. What a platform
// team is promised: no process of the run pod holds the vendor key in its environment and no file of the pod has it
// (read while the run's tool call is running: `/proc/<pid>/environ` of every process of the pod, and every file under
// the pod's folder on the test node), the CLI's calls reach the vendor through the gateway with the key the run never
// saw, the run's usage on status is what the gateway measured (equal to what the fake sent), and the run's credential
// is refused once the run has ended and for another run. A run over its cap (status.gateway.budget): the gateway
// refuses its next call (402 billing_error) before the controller has seen the usage, Claude Code stops on it
// without a retry (the vendor answered two calls, the gateway refused one), and the controller ends the run Failed
// with `budget exceeded`. Node only: the gateway's own paths run on Deno in
// gateway.test.ts and gateway-budget.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, connect, createServer as createNetServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import * as v from 'valibot';
import { startGatewayProcess, startHoldingRelay } from '../support/gateway.ts';
import {
  agentManifest,
  applyCrds,
  collectionPath,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  type Manifest,
  pollUntil,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import { filesHolding, podProcesses, podVolumes } from '../support/keyless.ts';
import { startAnthropicModel } from '../support/model-api/index.ts';
import { agentSecrets, agentTemplate, realCliImages, realCliSkipReason } from '../support/real-clis.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

const SecretSchema = v.looseObject({ data: v.record(v.string(), v.string()) });
const UNREACHABLE = 'http://127.0.0.1:9';

function definition(name: string): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: {
      // A model of the shipped price table (2 and 10 $/MTok), so the gateway's tokens are priced.
      model: 'claude-sonnet-5-5',
      prompt: 'Leave a marker in the workspace, then say what you did.',
      allowed_tools: ['Bash'],
      // The recipe's own base URL is replaced by the gateway's: a run cannot send its calls elsewhere.
      resources: {
        env: [{ name: 'ANTHROPIC_BASE_URL', value: UNREACHABLE }],
        secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }],
      },
    },
  };
}

describe(`keyless runs: the real Claude Code behind the model gateway (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('no key in the pod; calls reach the vendor through the gateway; usage as measured; the credential dies with the run', {
    timeout: 300_000,
  }, async () => {
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const marker = `marker-${randomBytes(6).toString('hex')}`;
    const waitFile = `wait-${randomBytes(6).toString('hex')}`;
    const answer = 'The marker is in marker.txt.';
    // The tool call waits until the test has looked at the pod (it removes the wait file), then writes the marker.
    const fake = await startAnthropicModel({
      apiKey,
      turns: [
        {
          text: 'Writing the marker.',
          toolCall: {
            name: 'Bash',
            input: {
              command: `touch ${waitFile}; while [ -e ${waitFile} ]; do sleep 0.2; done; echo ${marker} > marker.txt && cat marker.txt`,
              description: 'write a marker',
              timeout: 120000,
            },
          },
          usage: { input: 1500, output: 40, cacheRead: 300, cacheWrite: 200 },
        },
        { text: answer, usage: { input: 1700, output: 25, cacheRead: 900, cacheWrite: 0 } },
      ],
    });
    try {
      await runScenario(cluster, 'real-gateway', async (s) => {
        const images = realCliImages(s, runtime);
        const gw = await startGatewayProcess({
          kubeconfig: cluster.kubeconfig,
          namespace: s.ns,
          upstreams: { anthropic: fake.baseUrl, openai: UNREACHABLE, gemini: UNREACHABLE },
          waitReady: false,
          runtime: 'node',
        });
        s.replicas.push(gw.process);
        await s.create(
          agentSecrets({ anthropic: apiKey }),
          definition('work'),
          stationManifest('work', 'work', { template: agentTemplate(images.agent) }),
          agentManifest('work-run', 'work'),
        );
        const ctl = await s.startReplica({ env: { AGENT_IMAGE: images.init, AGENT_GATEWAY_URL: gw.url } });
        await gw.process.waitReady();

        // While the tool call runs: the pod's processes and files.
        const { procs: running, tool } = await pollUntil(
          () => {
            const procs = podProcesses(s.ns, 'work-run');
            const found = procs.find((p) =>
              readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').includes(waitFile),
            );
            return found !== undefined ? { procs, tool: found } : undefined;
          },
          { timeoutMs: 180_000, description: 'the tool call of work-run to run' },
        );
        assert.ok(running.length >= 2, `the CLI and its tool: ${running.length} processes`);
        for (const p of running) {
          assert.ok(!p.environ.includes(apiKey), `process ${p.pid} of the pod holds the vendor key`);
        }
        const vars = (name: string) =>
          running.flatMap((p) => p.environ.split('\0').filter((e) => e.startsWith(`${name}=`)));
        assert.ok(vars('ANTHROPIC_API_KEY').length > 0, 'the CLI still finds a key variable');
        for (const kv of vars('ANTHROPIC_API_KEY'))
          assert.match(kv, /^ANTHROPIC_API_KEY=acgw1\./, 'the credential');
        assert.ok(vars('ANTHROPIC_BASE_URL').length > 0);
        for (const b of vars('ANTHROPIC_BASE_URL')) assert.equal(b, `ANTHROPIC_BASE_URL=${gw.url}/anthropic`);
        const volumes = podVolumes(tool.pid);
        assert.ok(
          volumes.some((m) => m.endsWith('/workspace')),
          `the workspace among the pod's volumes: ${volumes.join(', ')}`,
        );
        const read: string[] = [];
        for (const volume of volumes) {
          const scan = filesHolding(volume, apiKey);
          assert.deepEqual(scan.found, [], `no file of the pod's volume ${volume} holds the vendor key`);
          read.push(...scan.read);
        }
        // A positive control: the wait file the tool made is among the files read.
        assert.ok(
          read.some((f) => f.endsWith(`/${waitFile}`)),
          `the wait file among ${read.length} files read`,
        );
        rmSync(`/proc/${tool.pid}/root${tool.cwd}/${waitFile}`);

        const run = await s.waitTerminal('work-run', 180_000);
        const status = run.status as Record<string, unknown>;
        assert.equal(run.status.phase, 'Succeeded', JSON.stringify(run.status));
        assert.equal(status.result, answer);
        // The vendor saw the namespace's key on every call, never the credential.
        const calls = fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages');
        assert.ok(calls.length >= 2, `${calls.length} calls`);
        for (const c of calls) assert.equal(c.apiKey, apiKey);
        // The usage is the gateway's measure: what the fake sent, summed (written out from the turns). The gateway
        // writes at most once a second, so the last call's part may land after the result: wait for it.
        const expected = {
          input: 1500 + 1700,
          output: 40 + 25,
          cacheRead: 300 + 900,
          cacheWrite: 200,
          total: 3200 + 65 + 1200 + 200,
        };
        const metered = await pollUntil(
          async () => {
            const a = (await s.agents()).find((x) => x.metadata.name === 'work-run');
            const st = a?.status as Record<string, unknown> | undefined;
            return isDeepStrictEqual(st?.tokenUsage, expected) ? st : undefined;
          },
          { timeoutMs: 20_000, description: `work-run's tokenUsage to be ${JSON.stringify(expected)}` },
        );
        assert.equal(metered.phase, 'Succeeded', 'still Succeeded');
        // 3200 × 2 + 65 × 10 + 1200 × 0.2 + 200 × 2.5 = 7,790 µ$
        assert.deepEqual(metered.costEstimate, {
          usd: '0.00779',
          source: 'gateway',
          model: 'claude-sonnet-5-5',
        });
        assert.deepEqual(status.gateway, { keys: { anthropic: 'anthropic' } });

        // The run's credential, from its Secret: refused now that the run has ended, in Anthropic's shape.
        const secret = await s.client.get(
          `${collectionPath('Secret', s.ns)}/agent-gateway-work-run`,
          SecretSchema,
        );
        const credential = Buffer.from(secret.data.credential ?? '', 'base64').toString('utf8');
        assert.match(credential, /^acgw1\./);
        const callWith = (key: string) =>
          fetch(`${gw.url}/anthropic/v1/messages`, {
            method: 'POST',
            headers: {
              'x-api-key': key,
              'content-type': 'application/json',
              'anthropic-version': '2023-06-01',
            },
            body: JSON.stringify({
              model: 'claude-sonnet-4-5',
              max_tokens: 8,
              messages: [{ role: 'user', content: 'hi' }],
            }),
          });
        const before = fake.requests.length;
        const ended = await callWith(credential);
        assert.equal(ended.status, 401);
        const body = (await ended.json()) as { type: string; error: { type: string; message: string } };
        assert.equal(body.type, 'error');
        assert.equal(body.error.type, 'authentication_error');
        // Another run's name with this run's MAC (a credential the run could forge from its own): refused too.
        const [prefix, payload, mac] = credential.split('.');
        const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8')) as Record<
          string,
          string
        >;
        const forged = Buffer.from(JSON.stringify({ ...claims, name: 'other-run' })).toString('base64url');
        assert.equal((await callWith(`${prefix}.${forged}.${mac}`)).status, 401);
        assert.equal(fake.requests.length, before, 'no refused call reached the vendor');
        await ctl.stop();
      });
    } finally {
      await fake.close();
    }
  });

  it('a gateway replica killed mid-stream: the CLI retries through the other, and the call is counted once', {
    timeout: 300_000,
  }, async () => {
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const fake = await startAnthropicModel({
      apiKey,
      turns: [{ text: 'recovered', usage: { input: 120, output: 9, cacheRead: 0, cacheWrite: 0 } }],
    });
    // Between the gateways and the vendor: the first call is answered with the first event of a stream and held
    // open (the vendor never sees it); the rest pass on to the fake.
    const relay = await startHoldingRelay(fake.baseUrl, HELD_FIRST_EVENT, (_req, n) => n === 1);
    const lb = await startPreferringProxy();
    try {
      await runScenario(cluster, 'real-gateway-kill', async (s) => {
        const images = realCliImages(s, runtime);
        const start = (identity: string) =>
          startGatewayProcess({
            kubeconfig: cluster.kubeconfig,
            namespace: s.ns,
            upstreams: { anthropic: relay.url, openai: UNREACHABLE, gemini: UNREACHABLE },
            waitReady: false,
            runtime: 'node',
            identity,
          });
        const first = await start('gateway-1');
        const second = await start('gateway-2');
        s.replicas.push(first.process, second.process);
        lb.targets.push(first.url, second.url);
        await s.create(
          agentSecrets({ anthropic: apiKey }),
          definition('work'),
          stationManifest('work', 'work', { template: agentTemplate(images.agent) }),
          agentManifest('work-run', 'work'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init, AGENT_GATEWAY_URL: lb.url } });
        await Promise.all([first.process.waitReady(), second.process.waitReady()]);

        const held = await relay.waitHeld(1);
        assert.equal(lb.served[0], first.url, 'the first call went through the first replica');
        await first.process.kill();

        const run = await s.waitTerminal('work-run', 180_000);
        assert.equal(run.status.phase, 'Succeeded', JSON.stringify(run.status));
        assert.equal((run.status as Record<string, unknown>).result, 'recovered');
        assert.ok(held.closedAt !== undefined, 'the held call was cut when its replica died');
        assert.ok(
          lb.served.slice(1).includes(second.url),
          `the retry went through the second: ${lb.served.join(', ')}`,
        );
        const answered = fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages');
        assert.equal(answered.length, 1, 'the vendor answered one call');
        // Counted once: the answered call, as the fake sent it; the cut one was never finished, so not counted.
        const expected = { input: 120, output: 9, cacheRead: 0, cacheWrite: 0, total: 129 };
        await pollUntil(
          async () => {
            const a = (await s.agents()).find((x) => x.metadata.name === 'work-run');
            return isDeepStrictEqual((a?.status as Record<string, unknown> | undefined)?.tokenUsage, expected)
              ? a
              : undefined;
          },
          { timeoutMs: 20_000, description: `work-run's tokenUsage to be ${JSON.stringify(expected)}` },
        );
        const a = (await s.agents()).find((x) => x.metadata.name === 'work-run');
        const annotation = JSON.parse(a?.metadata.annotations?.['agents.re-cinq.com/gateway-usage'] ?? '{}');
        assert.deepEqual(annotation, {
          models: { 'claude-sonnet-5-5': { calls: 1, input: 120, output: 9, cacheRead: 0, cacheWrite: 0 } },
        });
      });
    } finally {
      await Promise.all([fake.close(), relay.close(), lb.close()]);
    }
  });

  it('a run over its cap: the gateway refuses its next call, the CLI stops at once, the refusal on the run', {
    timeout: 300_000,
  }, async () => {
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    // Two tool calls: the first uses 100 tokens (written to the Agent at once), the second 1,940 (written a second
    // later: the gateway writes a run's usage at most once a second). The cap is 1,000: the third call comes while
    // only the gateway knows the run is over it, so the gateway refuses it before the controller ends the run.
    const fake = await startAnthropicModel({
      apiKey,
      turns: [
        {
          text: 'Running a command.',
          toolCall: { name: 'Bash', input: { command: 'echo one', description: 'one' } },
          usage: { input: 60, output: 40, cacheRead: 0, cacheWrite: 0 },
        },
        {
          text: 'Running another.',
          toolCall: { name: 'Bash', input: { command: 'echo two', description: 'two' } },
          usage: { input: 1400, output: 40, cacheRead: 300, cacheWrite: 200 },
        },
        { text: 'never sent', usage: { input: 10, output: 1, cacheRead: 0, cacheWrite: 0 } },
      ],
    });
    try {
      await runScenario(cluster, 'real-gateway-cap', async (s) => {
        const images = realCliImages(s, runtime);
        const gw = await startGatewayProcess({
          kubeconfig: cluster.kubeconfig,
          namespace: s.ns,
          upstreams: { anthropic: fake.baseUrl, openai: UNREACHABLE, gemini: UNREACHABLE },
          waitReady: false,
          runtime: 'node',
        });
        s.replicas.push(gw.process);
        await s.create(
          agentSecrets({ anthropic: apiKey }),
          definition('work'),
          stationManifest('work', 'work', { template: agentTemplate(images.agent) }),
          agentManifest('work-run', 'work'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init, AGENT_GATEWAY_URL: gw.url } });
        // The run's cap, on its grant as the controller records it (the controller's side fills it from the
        // AgentPolicy and the Station): set as soon as the run has its grant, before its pod calls a model.
        const granted = await pollUntil(
          async () => {
            const a = (await s.agents()).find((x) => x.metadata.name === 'work-run');
            const st = a?.status as Record<string, unknown> | undefined;
            return st?.gateway !== undefined ? st : undefined;
          },
          { timeoutMs: 60_000, description: 'work-run to have its grant' },
        );
        assert.equal(fake.requests.filter((r) => r.path === '/v1/messages').length, 0, 'no model call yet');
        await s.client.patch(`${collectionPath('Agent', s.ns)}/work-run/status`, {
          status: { gateway: { ...(granted.gateway as object), budget: { tokens: 1000 } } },
        });
        await gw.process.waitReady();

        const run = await s.waitTerminal('work-run', 180_000);
        const status = run.status as Record<string, unknown>;
        assert.equal(run.status.phase, 'Failed', JSON.stringify(run.status));
        // The controller ends the run over its cap (reason BudgetExceeded, failure kind budget), from the usage the
        // gateway measured; the CLI's second call, if it made it before its pod was stopped, was refused by the
        // gateway (402 billing_error, docs/reference/vendor-clis.md#over-the-runs-cap) and never reached the vendor.
        assert.equal(status.failureReason, 'budget exceeded: the run used 2040 of its 1000 tokens');
        // No retry storm: the vendor answered the two calls only, and the gateway refused at most one call, once
        // (none when the controller stopped the pod before the CLI's third call: the two race by design).
        const calls = fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages');
        assert.equal(calls.length, 2, `${calls.length} calls reached the vendor`);
        const refused = await gw.process.metric('gateway_refusals_total', {
          vendor: 'anthropic',
          reason: 'budget',
        });
        assert.ok(refused <= 1, `${refused} refused calls: the CLI did not retry the refusal`);
        // The usage is the two calls', as the fake sent them.
        await pollUntil(
          async () => {
            const a = (await s.agents()).find((x) => x.metadata.name === 'work-run');
            const usage = (a?.status as Record<string, unknown> | undefined)?.tokenUsage;
            return isDeepStrictEqual(usage, {
              input: 1460,
              output: 80,
              cacheRead: 300,
              cacheWrite: 200,
              total: 2040,
            })
              ? true
              : undefined;
          },
          { timeoutMs: 20_000, description: "work-run's tokenUsage to be the two calls'" },
        );
      });
    } finally {
      await fake.close();
    }
  });
});

/** The first event of an Anthropic stream (message_start with its usage), as the relay sends a held call. */
const HELD_FIRST_EVENT = `event: message_start\ndata: ${JSON.stringify({
  type: 'message_start',
  message: {
    id: 'msg_held',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-5-5',
    content: [],
    stop_reason: null,
    usage: {
      input_tokens: 120,
      output_tokens: 1,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    },
  },
})}\n\n`;

/**
 * A loopback TCP proxy standing in for the gateway's Service: each connection goes to the first target that accepts
 * it (a replica that died refuses, so its clients' new connections go to the next). `served` lists the target of
 * each connection.
 */
async function startPreferringProxy(): Promise<{
  url: string;
  targets: string[];
  served: string[];
  close(): Promise<void>;
}> {
  const targets: string[] = [];
  const served: string[] = [];
  const sockets = new Set<Socket>();
  const server = createNetServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    const attempt = (i: number) => {
      const target = targets[i];
      if (target === undefined) {
        client.destroy();
        return;
      }
      const u = new URL(target);
      const upstream = connect(Number(u.port), u.hostname);
      let connected = false;
      sockets.add(upstream);
      upstream.once('connect', () => {
        connected = true;
        served.push(target);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      upstream.on('error', () => {
        // Refused: the next target. Broken after connecting: the client's connection goes with it.
        if (!connected) attempt(i + 1);
      });
      upstream.on('close', () => {
        sockets.delete(upstream);
        if (connected) client.destroy();
      });
    };
    attempt(0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    targets,
    served,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
