// Per-run Kubernetes access (issue 9 §2, §6) on the local control plane, Node and Deno, with the controller running
// as its own ServiceAccount under deploy/rbac and deploy/components/run-rbac (so `bind` is limited by name):
// - a run whose AgentPolicy grants a role gets it bound to its own ServiceAccount, in its namespace (RoleBinding) and
//   cluster-wide (ClusterRoleBinding), and a projected token in its agent container; the mock agent asks the API
//   server with that token (SelfSubjectAccessReviews) and is allowed exactly what the role gives; a run without
//   spec.rbac has no token at all; every binding is gone once the run ends, and so is the cleanup finalizer;
// - a role the policy lists but the controller may not bind (cluster-admin) fails the run with the API server's
//   refusal, a role the policy does not list fails it at Pending;
// - deleting a Running Agent stops its Job and removes its bindings; a controller SIGKILLed right after creating a
//   ClusterRoleBinding leaves nothing behind once a replica is back (the finalizer, then the sweep for a binding
//   whose Agent is gone).
// The namespace enforces Pod Security `restricted`: the token volume is admitted there.
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import {
  agentManifest,
  apiPath,
  applyCrds,
  applyRbacManifests,
  controllerSkipReason,
  createAgentPolicy,
  e2eCluster,
  e2eRuntime,
  enforcePodSecurity,
  execDefinition,
  GROUP_VERSION,
  KubeError,
  type Manifest,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const REPO_MOCK = join(dirname(fileURLToPath(import.meta.url)), '..', 'mock-agent', 'mock-agent.mjs');
const CLUSTER_BINDINGS = '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings';
const RUN_UID = 'agents.re-cinq.com/run-uid';
const FINALIZER = 'agents.re-cinq.com/cleanup';

/** The mock agent where the run user (uid 1000) can read it: a world-readable copy of the scenario. */
function mockPath(s: Scenario): string {
  const dir = s.tempDir();
  chmodSync(dir, 0o755);
  const copy = join(dir, 'mock-agent.mjs');
  copyFileSync(REPO_MOCK, copy);
  chmodSync(copy, 0o755);
  return copy;
}

/** An exec definition running the mock agent with these knobs and this RBAC request. */
function mockDefinition(
  name: string,
  mock: string,
  env: Readonly<Record<string, string>>,
  rbac?: Readonly<Record<string, readonly string[]>>,
): Manifest {
  return execDefinition(name, ['node', mock], {
    resources: { env: Object.entries(env).map(([k, value]) => ({ name: k, value })) },
    ...(rbac !== undefined ? { rbac } : {}),
  });
}

const CanISchema = v.object({
  canI: v.string(),
  namespace: v.optional(v.string()),
  allowed: v.optional(v.boolean()),
  error: v.optional(v.string()),
});

/** The mock agent's SelfSubjectAccessReview answers in a run's output, by `<verb> <resource> in <namespace>`. */
function answers(output: string): Map<string, v.InferOutput<typeof CanISchema>> {
  const found = new Map<string, v.InferOutput<typeof CanISchema>>();
  for (const line of output.split('\n')) {
    if (!line.startsWith('{"canI"')) continue;
    const parsed = v.parse(CanISchema, JSON.parse(line));
    found.set(parsed.namespace === undefined ? parsed.canI : `${parsed.canI} in ${parsed.namespace}`, parsed);
  }
  return found;
}

/** A documentation address standing for the API server's endpoint where nothing writes a real one. */
const API_ENDPOINT = '192.0.2.10';

const SliceSchema = v.looseObject({
  endpoints: v.array(v.looseObject({ addresses: v.array(v.string()) })),
  ports: v.array(v.looseObject({ port: v.number() })),
});

/**
 * The EndpointSlice a cluster's API server keeps for Service default/kubernetes, and the address and port it names.
 * The testbed's API server listens on loopback, which EndpointSlices refuse, so it keeps none: with the real node up
 * the test bed writes one (the forwarder the node's pods reach the API server through); without it the test provides
 * one with a documentation address (left in place, as in any cluster).
 */
async function ensureApiEndpoints(s: Scenario): Promise<{ address: string; port: number }> {
  const path = apiPath('discovery.k8s.io/v1', 'endpointslices', { namespace: 'default' });
  try {
    await s.client.create(path, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'kubernetes', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [API_ENDPOINT], conditions: { ready: true } }],
      ports: [{ name: 'https', port: 6443, protocol: 'TCP' }],
    });
  } catch (error) {
    if (!(error instanceof KubeError && error.status === 409)) throw error;
  }
  const slice = await s.client.get(`${path}/kubernetes`, SliceSchema);
  const address = slice.endpoints[0]?.addresses[0];
  const port = slice.ports[0]?.port;
  assert.ok(
    address !== undefined && port !== undefined,
    `default/kubernetes names an endpoint: ${JSON.stringify(slice)}`,
  );
  return { address, port };
}

/** An Agent's uid (always set on an object read from the API server). */
function uidOf(a: { readonly metadata: { readonly uid?: string | undefined } }): string {
  assert.ok(a.metadata.uid, 'the Agent has a uid');
  return a.metadata.uid;
}

/** The names of the RoleBindings (this namespace) and ClusterRoleBindings that carry this run uid. */
async function bindingsOf(s: Scenario, uid: string): Promise<string[]> {
  const selector = { labelSelector: `${RUN_UID}=${uid}` };
  const local = await s.client.list(
    apiPath('rbac.authorization.k8s.io/v1', 'rolebindings', { namespace: s.ns }),
    selector,
  );
  const cluster = await s.client.list(CLUSTER_BINDINGS, selector);
  return [...local.items, ...cluster.items].map((b) => `${b.kind ?? 'binding'}/${b.metadata.name ?? ''}`);
}

async function waitNoBindings(s: Scenario, uid: string, what: string): Promise<void> {
  await pollUntil(
    async (observe) => {
      const left = await bindingsOf(s, uid);
      observe(left);
      return left.length === 0 ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 200, description: `${what}: no binding left` },
  );
}

/** Installs the controller's RBAC (with run-rbac) and returns the name of the grantable pod reader role. */
async function installRbac(s: Scenario): Promise<string> {
  await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
  await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
  const renamed = await applyRbacManifests(s, 'deploy/components/run-rbac/run-rbac.yaml');
  const reader = renamed.get('agent-run-pod-reader');
  assert.ok(reader !== undefined, 'the component ships agent-run-pod-reader');
  return reader;
}

describe(`per-run Kubernetes access (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'a run gets exactly what its policy grants, with a token in its agent only; its bindings go when it ends',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'run-rbac', async (s) => {
        await enforcePodSecurity(s, 'restricted');
        const api = await ensureApiEndpoints(s);
        const reader = await installRbac(s);
        const mock = mockPath(s);
        const policy = await createAgentPolicy(s, 'grants', {
          rbac: { roles: [reader, 'cluster-admin'], clusterRoles: [reader] },
        });
        const checks = 'get pods;list pods -n default;create pods;list secrets';
        await s.create(
          mockDefinition('reader', mock, { MOCK_CAN_I: checks }, { roles: [reader], clusterRoles: [reader] }),
          mockDefinition('plain', mock, { MOCK_CAN_I: 'get pods' }),
          mockDefinition('admin', mock, {}, { roles: ['cluster-admin'] }),
          mockDefinition('ungranted', mock, {}, { roles: ['view'] }),
          ...['reader', 'plain', 'admin', 'ungranted'].map((d) =>
            stationManifest(d, d, { policyRef: policy }),
          ),
        );
        await s.startReplica({ kubeconfig: await s.kubeconfigAs('agent-controller') });
        await s.create(
          agentManifest('reader-run', 'reader'),
          agentManifest('plain-run', 'plain'),
          agentManifest('admin-run', 'admin'),
          agentManifest('ungranted-run', 'ungranted'),
        );

        const done = await s.waitTerminal('reader-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        const got = answers(done.status.output ?? '');
        assert.equal(got.get(`get pods in ${s.ns}`)?.allowed, true, 'the role, in its namespace');
        assert.equal(got.get('list pods in default')?.allowed, true, 'the role, cluster-wide');
        assert.equal(got.get(`create pods in ${s.ns}`)?.allowed, false, 'nothing the role does not give');
        assert.equal(got.get(`list secrets in ${s.ns}`)?.allowed, false, 'nothing the role does not give');
        // The run's egress admits the API server's endpoint, each address alone.
        const netpol = await s.client.get(
          apiPath('networking.k8s.io/v1', 'networkpolicies', {
            namespace: s.ns,
            name: 'agent-job-reader-run',
          }),
        );
        assert.deepEqual((netpol as unknown as { spec: { egress: unknown[] } }).spec.egress.at(-1), {
          to: [{ ipBlock: { cidr: `${api.address}/32` } }],
          ports: [{ protocol: 'TCP', port: api.port }],
        });
        await waitNoBindings(s, uidOf(done), 'reader-run');
        const settled = await s.waitForAgent(
          'reader-run',
          (a) => !(a.metadata.finalizers ?? []).includes(FINALIZER),
          'the cleanup finalizer removed',
        );
        assert.deepEqual(settled.metadata.finalizers ?? [], []);
        const [pod] = await s.jobPods('agent-job-reader-run');
        const spec = (pod as unknown as { spec: Record<string, unknown> } | undefined)?.spec;
        assert.equal(spec?.automountServiceAccountToken, false);
        assert.equal(spec?.serviceAccountName, 'agent-job-reader-run');

        const plain = await s.waitTerminal('plain-run');
        assert.equal(plain.status.phase, 'Succeeded', JSON.stringify(plain.status));
        assert.equal(answers(plain.status.output ?? '').get('get pods')?.error, 'no token');
        assert.deepEqual(plain.metadata.finalizers ?? [], [], 'no finalizer without spec.rbac');

        const admin = await s.waitTerminal('admin-run');
        assert.equal(admin.status.phase, 'Failed');
        assert.match(
          admin.status.failureReason ?? '',
          /^the run's Kubernetes access could not be granted: RoleBinding/,
        );
        assert.match(admin.status.failureReason ?? '', /cluster-admin/);
        assert.match(admin.status.failureReason ?? '', /forbidden/i);
        await waitNoBindings(s, uidOf(admin), 'admin-run');
        await s.waitForEvents('admin-run', admin.metadata.uid, ['Warning/RBACRefused']);

        const ungranted = await s.waitTerminal('ungranted-run');
        assert.equal(ungranted.status.phase, 'Failed');
        assert.equal(
          ungranted.status.failureReason,
          `AgentPolicy ${policy}: role view is not grantable (spec.rbac.roles: ${reader}, cluster-admin)`,
        );
        assert.equal(await s.job('agent-job-ungranted-run'), undefined, 'refused before any object');
      }),
  );

  it(
    'deleting a Running run stops it and removes its bindings; a SIGKILL right after a create leaves nothing',
    { timeout: 300_000 },
    () =>
      runScenario(cluster, 'run-rbac-gc', async (s) => {
        const reader = await installRbac(s);
        const mock = mockPath(s);
        const policy = await createAgentPolicy(s, 'grants', { rbac: { clusterRoles: [reader] } });
        await s.create(
          mockDefinition('waiter', mock, { MOCK_MODE: 'signal' }, { clusterRoles: [reader] }),
          stationManifest('waiter', 'waiter', { policyRef: policy }),
        );
        const kubeconfig = await s.kubeconfigAs('agent-controller');
        const first = await s.startReplica({ kubeconfig, pollIntervalMs: 2000 });

        // Deleting a Running Agent.
        await s.create(agentManifest('long-run', 'waiter'));
        const started = await s.waitForAgent('long-run', (a) => a.status.phase === 'Running', 'Running');
        assert.equal((await bindingsOf(s, uidOf(started))).length, 1, 'its ClusterRoleBinding');
        await s.client.delete(`${apiPath(GROUP_VERSION, 'agents', { namespace: s.ns })}/long-run`);
        await pollUntil(async () => ((await s.agent('long-run')) === undefined ? true : undefined), {
          timeoutMs: 60_000,
          description: 'long-run deleted (finalizer removed)',
        });
        assert.deepEqual(await bindingsOf(s, uidOf(started)), []);
        await pollUntil(async () => ((await s.job('agent-job-long-run')) === undefined ? true : undefined), {
          timeoutMs: 60_000,
          description: 'the Job of long-run gone',
        });

        // A SIGKILL right after the ClusterRoleBinding was created, then the Agent deleted while no controller runs,
        // and a binding whose Agent vanished before its create was recorded anywhere.
        await s.create(agentManifest('killed-run', 'waiter'));
        const holding = await s.waitForAgent(
          'killed-run',
          (a) => (a.metadata.finalizers ?? []).includes(FINALIZER),
          'holds the cleanup finalizer',
        );
        const uid = uidOf(holding);
        await pollUntil(async () => ((await bindingsOf(s, uid)).length > 0 ? true : undefined), {
          timeoutMs: 60_000,
          intervalMs: 10,
          description: 'killed-run has its ClusterRoleBinding',
        });
        await first.kill();
        await s.client.delete(`${apiPath(GROUP_VERSION, 'agents', { namespace: s.ns })}/killed-run`);
        const waiting = await s.agent('killed-run');
        assert.ok(waiting?.metadata.deletionTimestamp, 'the finalizer holds the Agent until its cleanup');
        const strayName = `stray-${s.ns}`;
        await s.client.create(CLUSTER_BINDINGS, {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: {
            name: strayName,
            labels: { [RUN_UID]: `gone-${s.ns}`, 'agents.re-cinq.com/run-namespace': s.ns },
          },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: reader },
          subjects: [{ kind: 'ServiceAccount', name: 'agent-job-gone', namespace: s.ns }],
        });
        s.defer(async () => {
          await s.client.delete(`${CLUSTER_BINDINGS}/${strayName}`);
        });

        await s.startReplica({ kubeconfig, pollIntervalMs: 2000 });
        await pollUntil(async () => ((await s.agent('killed-run')) === undefined ? true : undefined), {
          timeoutMs: 90_000,
          description: 'killed-run cleaned up by the next replica',
        });
        assert.deepEqual(await bindingsOf(s, uid), []);
        await waitNoBindings(s, `gone-${s.ns}`, 'the stray binding swept');
      }),
  );
});
