// Server mode end to end on the control plane (issue 12), on the runtime named by AGENT_E2E_RUNTIME: an Agent whose
// definition says `execution: server` becomes a Deployment, a Service and an API-key Secret owned by it, goes
// Serving with Ready tracking the Deployment, and answers the plain OpenAI Chat Completions request shape (and its
// streaming form) at the Service's endpoint (a ready pod it selects: the test node serves pod IPs on loopback), with
// the generated key, which the pods read from the key Secret mounted as a file (no env var carries it). A deleted key
// Secret is made again with a new key that the running pods take up without a rollout (the test node re-syncs Secret
// volumes as the kubelet does), refusing the old one. A deleted Service is created again and an edited Deployment
// written back; an HTTPRoute appears
// once the Gateway API CRDs (from the sigs.k8s.io/gateway-api module) are installed and not before; suspend scales
// it to zero; deleting the Agent removes everything. The admission reasons: a controller without SERVER_ENABLED, a
// Station whose policy does not allow servers. The controller runs as the deploy/ ServiceAccount plus
// deploy/components/server.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import * as v from 'valibot';
import {
  agentCondition,
  agentManifest,
  applyCrds,
  applyRbacManifests,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  enforcePodSecurity,
  fakeClaudeImages,
  GROUP_VERSION,
  type Manifest,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import type { KubeClient } from '../support/kube-client.ts';
import { createPolicy, endpointOf, startServerReplica } from '../support/server.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const GATEWAY_CRDS = ['gatewayclasses', 'gateways', 'httproutes', 'referencegrants'].map(
  (r) => `${r}.gateway.networking.k8s.io`,
);

const NamedSchema = v.looseObject({ metadata: v.looseObject({ name: v.string(), uid: v.string() }) });
const SecretSchema = v.looseObject({ data: v.record(v.string(), v.string()) });
const VersionSchema = v.looseObject({ metadata: v.looseObject({ resourceVersion: v.string() }) });
const DeploymentSchema = v.looseObject({
  metadata: v.looseObject({ uid: v.string(), generation: v.number() }),
  spec: v.looseObject({ replicas: v.number() }),
});
const PodSchema = v.looseObject({
  metadata: v.looseObject({
    uid: v.string(),
    deletionTimestamp: v.optional(v.nullable(v.string())),
    ownerReferences: v.optional(v.array(v.looseObject({ kind: v.string(), name: v.string() }))),
  }),
  status: v.looseObject({
    podIP: v.optional(v.string()),
    conditions: v.optional(v.array(v.looseObject({ type: v.string(), status: v.string() }))),
  }),
});
const CompletionSchema = v.looseObject({
  object: v.literal('chat.completion'),
  model: v.string(),
  choices: v.array(
    v.looseObject({
      index: v.number(),
      message: v.looseObject({ role: v.literal('assistant'), content: v.string() }),
      finish_reason: v.string(),
    }),
  ),
});
const ChunkSchema = v.looseObject({
  object: v.literal('chat.completion.chunk'),
  choices: v.array(v.looseObject({ delta: v.looseObject({ content: v.optional(v.string()) }) })),
});

function serverDefinition(name: string): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: { model: 'claude-opus-5-5', prompt: 'unused by servers', execution: 'server' },
  };
}

/** A pod a Service selects that is ready and not terminating: its uid, its ReplicaSet and its IP. */
interface ReadyPod {
  readonly uid: string;
  readonly replicaSet: string | undefined;
  readonly ip: string;
}

/** The ready pods a Service selects now (as an EndpointSlice would hold them). */
async function readyPods(s: Scenario, service: string): Promise<ReadyPod[]> {
  const svc = await s.client.get(
    `/api/v1/namespaces/${s.ns}/services/${service}`,
    v.looseObject({ spec: v.looseObject({ selector: v.record(v.string(), v.string()) }) }),
  );
  const selector = Object.entries(svc.spec.selector)
    .map(([k, val]) => `${k}=${val}`)
    .join(',');
  const pods = await s.client.list(`/api/v1/namespaces/${s.ns}/pods`, { labelSelector: selector }, PodSchema);
  return pods.items.flatMap((p) =>
    (p.metadata.deletionTimestamp ?? undefined) === undefined &&
    p.status.podIP !== undefined &&
    (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
      ? [
          {
            uid: p.metadata.uid,
            replicaSet: p.metadata.ownerReferences?.find((o) => o.kind === 'ReplicaSet')?.name,
            ip: p.status.podIP,
          },
        ]
      : [],
  );
}

async function chat(
  endpoint: string,
  key: string | undefined,
  body: unknown,
): Promise<{ status: number; text: string; type: string }> {
  const res = await fetch(`http://${endpoint}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') ?? '' };
}

/** The Gateway API's standard CRDs, fetched from their Go module into the cache by the project's script. */
function gatewayCrdFiles(): string[] {
  const out = execFileSync(join(ROOT, 'scripts', 'fetch-gateway-api-crds'), { encoding: 'utf8' });
  const dir = out.trim().split('\n').at(-1) ?? '';
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(dir, f));
}

async function gatewayApiServed(client: KubeClient): Promise<boolean> {
  const res = await client.request('GET', '/apis/gateway.networking.k8s.io/v1');
  return res.status === 200 && /"httproutes"/.test(res.body);
}

/** Removes the Gateway API CRDs (an earlier tier may have left them) and waits until they are no longer served. */
async function removeGatewayApi(client: KubeClient): Promise<void> {
  for (const crd of GATEWAY_CRDS) await client.delete(`${CRDS}/${crd}`);
  await pollUntil(async () => ((await gatewayApiServed(client)) ? undefined : true), {
    timeoutMs: 60_000,
    intervalMs: 250,
    description: 'the Gateway API no longer served',
  });
}

async function installGatewayApi(client: KubeClient): Promise<void> {
  for (const file of gatewayCrdFiles()) {
    for (const doc of loadAll(readFileSync(file, 'utf8'))) {
      if (typeof doc !== 'object' || doc === null) continue;
      await client.create(CRDS, doc);
    }
  }
  await pollUntil(async () => ((await gatewayApiServed(client)) ? true : undefined), {
    timeoutMs: 60_000,
    intervalMs: 250,
    description: 'the Gateway API served',
  });
}

describe(`controller: servers (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'a server goes Serving and answers OpenAI chat completions (plain and streamed) with its key; drift is repaired; the route follows the Gateway API; deletion cleans up',
    { timeout: 300_000 },
    () =>
      runScenario(cluster, 'server', async (s) => {
        // Every pod the controller builds here is admitted under the restricted Pod Security level.
        await enforcePodSecurity(s, 'restricted');
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/server/server-rbac.yaml');
        await removeGatewayApi(s.client);
        s.defer(() => removeGatewayApi(s.client));
        const images = fakeClaudeImages(s, runtime, { MOCK_ECHO_PROMPT: '1' });
        let ctl = await startServerReplica(s, images.init);
        await ctl.waitForMetric('controller_is_leader', {}, 1, 30_000);
        const policy = await createPolicy(s, 'serve', ['job', 'server']);
        await s.create(
          serverDefinition('def'),
          stationManifest('st', 'def', {
            policyRef: policy,
            gateway: { name: 'public', hostname: 'bot.example.test' },
            template: {
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [{ name: 'agent', image: images.agent }],
              },
            },
          }),
          agentManifest('bot', 'st'),
        );

        const served = await s.waitForAgent(
          'bot',
          (a) => a.status.phase === 'Serving' && agentCondition(a, 'Ready')?.status === 'True',
          'Serving and Ready',
          120_000,
        );
        assert.equal(served.status.serviceName, 'bot-server');
        assert.equal(served.status.url, `http://bot-server.${s.ns}.svc:8080/v1`, 'no route: no Gateway API');
        assert.match(agentCondition(served, 'Ready')?.message ?? '', /1 of 1 replica available/);
        assert.match(agentCondition(served, 'Ready')?.message ?? '', /the Gateway API is not installed/);
        await s.waitForEvents('bot', served.metadata.uid, ['Normal/ServerCreated', 'Normal/Available']);
        const ns = `/api/v1/namespaces/${s.ns}`;
        const routePath = `/apis/gateway.networking.k8s.io/v1/namespaces/${s.ns}/httproutes/bot-server`;
        for (const path of [
          `${ns}/services/bot-server`,
          `/apis/apps/v1/namespaces/${s.ns}/deployments/bot-server`,
        ]) {
          const o = await s.client.get(
            path,
            v.looseObject({
              metadata: v.looseObject({ ownerReferences: v.array(v.looseObject({ uid: v.string() })) }),
            }),
          );
          assert.equal(o.metadata.ownerReferences[0]?.uid, served.metadata.uid, `${path} owned by the Agent`);
        }
        // The pods read the key from its Secret mounted as a file: no env var carries it, no key version rolls them.
        const template = (
          await s.client.get(
            `/apis/apps/v1/namespaces/${s.ns}/deployments/bot-server`,
            v.looseObject({
              spec: v.looseObject({
                template: v.looseObject({
                  metadata: v.looseObject({ annotations: v.optional(v.record(v.string(), v.string())) }),
                  spec: v.looseObject({
                    volumes: v.array(v.looseObject({ name: v.string(), secret: v.optional(v.unknown()) })),
                    containers: v.array(
                      v.looseObject({
                        name: v.string(),
                        env: v.optional(
                          v.array(v.looseObject({ name: v.string(), value: v.optional(v.string()) })),
                        ),
                        volumeMounts: v.optional(
                          v.array(v.looseObject({ name: v.string(), mountPath: v.string() })),
                        ),
                      }),
                    ),
                  }),
                }),
              }),
            }),
          )
        ).spec.template;
        assert.equal(template.metadata.annotations?.['agents.re-cinq.com/api-key-version'], undefined);
        assert.deepEqual(template.spec.volumes.find((x) => x.name === 'server-api-key')?.secret, {
          secretName: 'bot-server-api-key',
          defaultMode: 0o440,
          items: [{ key: 'api-key', path: 'api-key' }],
        });
        const agentContainer = template.spec.containers.find((c) => c.name === 'agent');
        const env = new Map((agentContainer?.env ?? []).map((e) => [e.name, e.value]));
        assert.equal(env.has('AGENT_SERVER_API_KEY'), false, 'no env var carries the key');
        assert.equal(env.get('AGENT_SERVER_API_KEY_FILE'), '/var/run/agent-server/api-key');
        assert.ok(
          (agentContainer?.volumeMounts ?? []).some(
            (m) => m.name === 'server-api-key' && m.mountPath === '/var/run/agent-server',
          ),
        );

        // The generated key, from its Secret; a client using the plain OpenAI request shape.
        const secret = await s.client.get(`${ns}/secrets/bot-server-api-key`, SecretSchema);
        const key = Buffer.from(secret.data['api-key'] ?? '', 'base64').toString('utf8');
        assert.match(key, /^sk-[0-9a-f]{48}$/);
        const endpoint = await endpointOf(s, 'bot-server');
        const answer = await pollUntil(
          async (observe) => {
            const r = await chat(endpoint, key, {
              model: 'claude-opus-5-5',
              messages: [{ role: 'user', content: 'what is one plus one' }],
            });
            observe(`${r.status} ${r.text.slice(0, 200)}`);
            return r.status === 200 ? r : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 500, description: 'an answer from the server' },
        );
        const completion = v.parse(CompletionSchema, JSON.parse(answer.text));
        assert.match(completion.choices[0]?.message.content ?? '', /echo: what is one plus one/);
        assert.equal(
          (await chat(endpoint, 'sk-wrong-key-000000000000', { messages: [{ role: 'user', content: 'x' }] }))
            .status,
          401,
        );
        assert.equal(
          (await chat(endpoint, undefined, { messages: [{ role: 'user', content: 'x' }] })).status,
          401,
        );

        const streamed = await chat(endpoint, key, {
          model: 'claude-opus-5-5',
          stream: true,
          messages: [{ role: 'user', content: 'stream this please' }],
        });
        assert.equal(streamed.status, 200, streamed.text);
        assert.match(streamed.type, /text\/event-stream/);
        const data = streamed.text
          .split('\n\n')
          .map((b) => b.trim())
          .filter((b) => b.startsWith('data: '))
          .map((b) => b.slice('data: '.length));
        assert.equal(data.at(-1), '[DONE]');
        const text = data
          .slice(0, -1)
          .map((d) => v.parse(ChunkSchema, JSON.parse(d)))
          .map((c) => c.choices[0]?.delta.content ?? '')
          .join('');
        assert.match(text, /echo: stream this please/);

        // Steady: once it serves, the controller's polls write nothing (the API server's dry run finds no edit).
        const deploymentPath = `/apis/apps/v1/namespaces/${s.ns}/deployments/bot-server`;
        const before = {
          deployment: (await s.client.get(deploymentPath, DeploymentSchema)).metadata.generation,
          service: (await s.client.get(`${ns}/services/bot-server`, VersionSchema)).metadata.resourceVersion,
        };
        const reconciles = await ctl.metric('controller_reconciles_total');
        await ctl.waitForMetric('controller_reconciles_total', {}, (n) => n >= reconciles + 4, 60_000);
        assert.deepEqual(
          {
            deployment: (await s.client.get(deploymentPath, DeploymentSchema)).metadata.generation,
            service: (await s.client.get(`${ns}/services/bot-server`, VersionSchema)).metadata
              .resourceVersion,
          },
          before,
          'four reconciles of a steady server wrote nothing',
        );

        // A new controller (a restart, a new leader) looks after the server too: a deleted Service comes back.
        await ctl.stop();
        ctl = await startServerReplica(s, images.init);
        await ctl.waitForMetric('controller_is_leader', {}, 1, 60_000);

        // Drift: a deleted Service is created again; an edited Deployment is written back.
        const service = await s.client.get(`${ns}/services/bot-server`, NamedSchema);
        await s.client.delete(`${ns}/services/bot-server`);
        const again = await pollUntil(
          async () => {
            const o = await s.client.tryGet(`${ns}/services/bot-server`, NamedSchema);
            return o !== undefined && o.metadata.uid !== service.metadata.uid ? o : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 250, description: 'the Service created again' },
        );
        assert.notEqual(again.metadata.uid, service.metadata.uid);
        await s.waitForEvents('bot', served.metadata.uid, ['Warning/ServerRepaired']);
        await s.client.patch(deploymentPath, { spec: { replicas: 3 } });
        await pollUntil(
          async (observe) => {
            const d = await s.client.get(deploymentPath, DeploymentSchema);
            observe(d.spec.replicas);
            return d.spec.replicas === 1 ? d : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 250, description: 'the Deployment written back to 1 replica' },
        );

        // The Gateway API installed: the route appears and the URL follows it.
        assert.equal(await s.client.tryGet(routePath), undefined, 'no HTTPRoute without the Gateway API');
        await installGatewayApi(s.client);
        const route = await pollUntil(
          async () =>
            s.client.tryGet(
              routePath,
              v.looseObject({ spec: v.looseObject({ hostnames: v.array(v.string()) }) }),
            ),
          { timeoutMs: 60_000, intervalMs: 250, description: 'the HTTPRoute' },
        );
        assert.deepEqual(route.spec.hostnames, ['bot.example.test']);
        await s.waitForAgent(
          'bot',
          (a) => a.status.url === 'https://bot.example.test/v1',
          'the routed URL',
          30_000,
        );

        // Suspended: scaled to zero, Ready says so; resumed: available again.
        await s.client.patch(`/apis/${GROUP_VERSION}/namespaces/${s.ns}/agents/bot`, {
          spec: { suspend: true },
        });
        await s.waitForAgent(
          'bot',
          (a) => agentCondition(a, 'Ready')?.reason === 'Suspended',
          'Suspended',
          30_000,
        );
        assert.equal((await s.client.get(deploymentPath, DeploymentSchema)).spec.replicas, 0);
        await s.client.patch(`/apis/${GROUP_VERSION}/namespaces/${s.ns}/agents/bot`, {
          spec: { suspend: false },
        });
        await s.waitForAgent(
          'bot',
          (a) => agentCondition(a, 'Ready')?.status === 'True',
          'Ready again',
          120_000,
        );

        // A new key: the generated Secret deleted, the controller makes another, and the running pods take it up
        // from their refreshed Secret volume without a rollout (the same pod, ReplicaSet and Deployment generation);
        // the old key is refused, the new one answers.
        const servingPods = await pollUntil(
          async (observe) => {
            const pods = await readyPods(s, 'bot-server');
            observe(pods);
            return pods.length === 1 ? pods : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 250, description: 'the one ready pod' },
        );
        const [pod] = servingPods;
        assert.ok(pod?.replicaSet, 'the pod belongs to a ReplicaSet');
        const generation = (await s.client.get(deploymentPath, DeploymentSchema)).metadata.generation;
        await s.client.delete(`${ns}/secrets/bot-server-api-key`);
        const rotated = await pollUntil(
          async () => {
            const sec = await s.client.tryGet(`${ns}/secrets/bot-server-api-key`, SecretSchema);
            const k =
              sec === undefined ? '' : Buffer.from(sec.data['api-key'] ?? '', 'base64').toString('utf8');
            return k !== '' && k !== key ? k : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 250, description: 'a new API key' },
        );
        assert.match(rotated, /^sk-[0-9a-f]{48}$/);
        await pollUntil(
          async (observe) => {
            const messages = (await s.agentEvents('bot', served.metadata.uid)).map((e) => e.message);
            observe(messages);
            return messages.some((m) =>
              /API-key Secret bot-server-api-key was missing: making a new key/.test(m ?? ''),
            )
              ? true
              : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 250, description: 'the Event of the new key' },
        );
        const at = `${pod.ip}:8080`;
        await pollUntil(
          async (observe) => {
            const r = await chat(at, rotated, { messages: [{ role: 'user', content: 'new key?' }] });
            observe(`${r.status} ${r.text.slice(0, 200)}`);
            return r.status === 200 ? r : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 250, description: 'the new key accepted by the same pod' },
        );
        assert.equal(
          (await chat(at, key, { messages: [{ role: 'user', content: 'x' }] })).status,
          401,
          'the old key is refused',
        );
        assert.deepEqual(await readyPods(s, 'bot-server'), servingPods, 'the same pod serves: no rollout');
        assert.equal(
          (await s.client.get(deploymentPath, DeploymentSchema)).metadata.generation,
          generation,
          'the Deployment was not changed for the new key',
        );
        await s.waitForAgent(
          'bot',
          (a) => agentCondition(a, 'Ready')?.status === 'True',
          'Ready with the new key',
          30_000,
        );

        // Deleted: garbage collection takes every object of the server.
        await s.client.delete(`/apis/${GROUP_VERSION}/namespaces/${s.ns}/agents/bot`);
        await pollUntil(
          async (observe) => {
            const left: string[] = [];
            for (const path of [
              deploymentPath,
              `${ns}/services/bot-server`,
              `${ns}/secrets/bot-server-api-key`,
              routePath,
            ])
              if ((await s.client.tryGet(path)) !== undefined) left.push(path);
            observe(left);
            return left.length === 0 ? true : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 500, description: "the server's objects gone" },
        );
      }),
  );

  it(
    'refuses a server on a controller without SERVER_ENABLED, and on a Station whose policy does not allow it',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'server-refused', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/server/server-rbac.yaml');
        const images = fakeClaudeImages(s, runtime);
        const jobsOnly = await createPolicy(s, 'jobs', ['job']);
        const serve = await createPolicy(s, 'serve', ['job', 'server']);
        const template = { spec: { containers: [{ name: 'agent', image: images.agent }] } };
        const off = await startServerReplica(s, images.init, false);
        await off.waitForMetric('controller_is_leader', {}, 1, 30_000);
        await s.create(
          serverDefinition('def'),
          stationManifest('allowed', 'def', { policyRef: serve, template }),
          stationManifest('no-servers', 'def', { policyRef: jobsOnly, template }),
          agentManifest('disabled', 'allowed'),
        );
        const disabled = await s.waitTerminal('disabled', 60_000);
        assert.equal(disabled.status.phase, 'Failed');
        assert.equal(disabled.status.failureReason, 'server execution is disabled on this controller');
        await off.stop();
        const on = await startServerReplica(s, images.init);
        await on.waitForMetric('controller_is_leader', {}, 1, 60_000);
        await s.create(agentManifest('not-allowed', 'no-servers'));
        const refused = await s.waitTerminal('not-allowed', 60_000);
        assert.equal(refused.status.phase, 'Failed');
        assert.match(refused.status.failureReason ?? '', /execution server is not allowed \(allowed: job\)/);
        await s.waitForEvents('not-allowed', refused.metadata.uid, ['Warning/PolicyViolation']);

        // A Secret of the generated name made by someone else beforehand (whose key they know) is never used: the
        // server waits with Ready False, and no Deployment is made until that Secret is gone.
        await s.create({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'squatted-server-api-key' },
          stringData: { 'api-key': 'sk-known-to-someone-else-0000' },
        });
        await s.create(agentManifest('squatted', 'allowed'));
        const waiting = await s.waitForAgent(
          'squatted',
          (a) =>
            (a.status.conditions ?? []).some((c) => c.type === 'Ready' && c.reason === 'ServerNameTaken'),
          'Ready False ServerNameTaken',
          60_000,
        );
        assert.equal(waiting.status.phase, 'Pending');
        assert.equal(waiting.status.apiKeySecretUID, undefined);
        assert.equal(
          await s.client.tryGet(`/apis/apps/v1/namespaces/${s.ns}/deployments/squatted-server`),
          undefined,
          'no Deployment mounts a key someone else knows',
        );
        await s.client.delete(`/api/v1/namespaces/${s.ns}/secrets/squatted-server-api-key`);
        const served = await s.waitForAgent(
          'squatted',
          (a) => a.status.phase === 'Serving',
          'Serving',
          90_000,
        );
        assert.ok(served.status.apiKeySecretUID, 'the key it made is recorded');
      }),
  );
});
