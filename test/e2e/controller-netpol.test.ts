// Per-run NetworkPolicies (docs/design/reference-behaviour.md#d-i-networkpolicy-per-run, issue 9 §3) on the control
// plane, on the runtime named by AGENT_E2E_RUNTIME:
// every run gets, with its Job, a NetworkPolicy of its own, selecting exactly that run's pods, owned by the Agent
// and garbage-collected with it: no ingress, egress to DNS, public 443 and exactly the endpoints its definition
// names (here http sinks, an MCP server, a repository and the conversation store). The controller runs as the
// ServiceAccount of deploy/rbac/controller-rbac.yaml, so the grant it ships with is the one exercised; without that
// grant a run still succeeds (no policy of its own) and the controller warns once.
//
// The testbed has no CNI, so traffic is not enforced: these tests check the objects. Every address the run pods
// reach is loopback (the only addresses tests may use): the sink named by an IP literal is a recording sink on
// 127.0.0.1, the one named by a hostname is `https://localhost/y` (nothing listens on 443, so it is unreachable
// and the run must succeed regardless).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import * as v from 'valibot';
import {
  agentManifest,
  apiPath,
  applyCrds,
  collectionPath,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  GROUP_VERSION,
  type HttpSink,
  KubeObjectSchema,
  type Manifest,
  nodePassOnlySkipReason,
  pollUntil,
  runScenario,
  type Scenario,
  startHttpSink,
  stationManifest,
} from '../support/index.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

const LABEL_COMPONENT = 'agents.re-cinq.com/component';
const LABEL_AGENT = 'agents.re-cinq.com/agent';
const LABEL_STATION = 'agents.re-cinq.com/station';
const HOSTNAME_SINK = 'https://localhost/y';
const WARNING = /^Run NetworkPolicies cannot be created \(403 Forbidden\)/;

/** A networking.k8s.io/v1 NetworkPolicy as the API server returns it (the fields these tests read). */
const NetworkPolicySchema = v.looseObject({
  ...KubeObjectSchema.entries,
  spec: v.looseObject({
    podSelector: v.looseObject({ matchLabels: v.optional(v.record(v.string(), v.string())) }),
    policyTypes: v.optional(v.array(v.string())),
    ingress: v.optional(v.nullable(v.array(v.unknown()))),
    egress: v.optional(
      v.array(
        v.looseObject({
          to: v.optional(
            v.array(
              v.looseObject({
                ipBlock: v.optional(
                  v.looseObject({ cidr: v.string(), except: v.optional(v.array(v.string())) }),
                ),
                namespaceSelector: v.optional(v.unknown()),
                podSelector: v.optional(v.unknown()),
              }),
            ),
          ),
          ports: v.optional(
            v.array(v.looseObject({ protocol: v.optional(v.string()), port: v.optional(v.unknown()) })),
          ),
        }),
      ),
    ),
  }),
});
type NetworkPolicy = v.InferOutput<typeof NetworkPolicySchema>;

const policiesPath = (s: Scenario): string =>
  apiPath('networking.k8s.io/v1', 'networkpolicies', { namespace: s.ns });

/** The NetworkPolicy by name, or undefined. */
function policy(s: Scenario, name: string): Promise<NetworkPolicy | undefined> {
  return s.client.tryGet(`${policiesPath(s)}/${name}`, NetworkPolicySchema);
}

/** Every NetworkPolicy of the scenario's namespace. */
async function policies(s: Scenario): Promise<NetworkPolicy[]> {
  return (await s.client.list(policiesPath(s), {}, NetworkPolicySchema)).items;
}

const RbacDocSchema = v.looseObject({
  apiVersion: v.string(),
  kind: v.picklist(['ServiceAccount', 'Role', 'RoleBinding']),
  metadata: v.looseObject({ name: v.string(), namespace: v.optional(v.string()) }),
  subjects: v.optional(
    v.array(v.looseObject({ kind: v.string(), name: v.string(), namespace: v.optional(v.string()) })),
  ),
  rules: v.optional(
    v.array(v.looseObject({ apiGroups: v.array(v.string()), resources: v.array(v.string()) })),
  ),
});

/**
 * Creates the objects of deploy/rbac/controller-rbac.yaml in the scenario's namespace (namespaces rewritten),
 * without the networkpolicies rule when `withNetworkPolicies` is false, and returns a kubeconfig that
 * authenticates as its ServiceAccount.
 */
async function controllerAccount(s: Scenario, withNetworkPolicies: boolean): Promise<string> {
  const file = join(ROOT, 'deploy', 'rbac', 'controller-rbac.yaml');
  let granted = false;
  for (const raw of loadAll(readFileSync(file, 'utf8'))) {
    if (raw === null || raw === undefined) continue;
    const doc = v.parse(RbacDocSchema, raw);
    const rules = doc.rules?.filter((r) => {
      const netpol = r.apiGroups.includes('networking.k8s.io') && r.resources.includes('networkpolicies');
      granted ||= netpol;
      return withNetworkPolicies || !netpol;
    });
    const manifest = {
      ...doc,
      metadata: { ...doc.metadata, namespace: s.ns },
      ...(doc.subjects ? { subjects: doc.subjects.map((x) => ({ ...x, namespace: s.ns })) } : {}),
      ...(rules ? { rules } : {}),
    } as Manifest;
    await s.client.create(collectionPath(doc.kind, s.ns), manifest);
  }
  assert.ok(granted, 'deploy/rbac/controller-rbac.yaml grants networkpolicies');
  return s.kubeconfigAs('agent-controller');
}

/** An exec recipe that prints one line, with these `output.sinks` (and more of its spec). */
function recipe(
  name: string,
  sinks: readonly Record<string, unknown>[],
  spec: Readonly<Record<string, unknown>> = {},
): Manifest {
  return execDefinition(name, ['sh', '-c', 'echo "hello from the mock agent: $0"'], {
    output: { sinks },
    ...spec,
  });
}

/** DNS and public 443, the two rules every run's policy starts with (as the API server returns them). */
const BASE_EGRESS = [
  {
    to: [
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
        podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
      },
    ],
    ports: [
      { protocol: 'UDP', port: 53 },
      { protocol: 'TCP', port: 53 },
    ],
  },
  {
    to: [
      {
        ipBlock: {
          cidr: '0.0.0.0/0',
          except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'],
        },
      },
    ],
    ports: [{ protocol: 'TCP', port: 443 }],
  },
];

/** Waits until the sink has received the run's terminal lifecycle event (`agent/succeeded`). */
function waitForAgentSucceeded(sink: HttpSink, path: string, agent: string): Promise<unknown> {
  return sink.waitFor(
    () =>
      sink
        .envelopes(path)
        .find(
          (e) =>
            e.source.agent === agent &&
            typeof e.event === 'object' &&
            e.event !== null &&
            (e.event as Record<string, unknown>).kind === 'lifecycle' &&
            (e.event as Record<string, unknown>).phase === 'agent' &&
            (e.event as Record<string, unknown>).status === 'succeeded',
        ),
    `agent/succeeded of ${agent} on ${path}`,
    30_000,
  );
}

describe(`controller: a NetworkPolicy per run, D-i and issue 9 (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'every run → a NetworkPolicy for exactly that run (DNS, public 443, its endpoints: IP /32 + port, hostname → any address), owned by the Agent and collected with it',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'ctl-netpol', async (s) => {
        const sink = await startHttpSink();
        s.defer(() => sink.close());
        const kubeconfig = await controllerAccount(s, true);
        await s.create(
          recipe(
            'notify',
            [{ type: 'stdout' }, { type: 'http', url: sink.url('/x') }, { type: 'http', url: HOSTNAME_SINK }],
            {
              resources: {
                mcp_servers: [{ name: 'tools', transport: 'http', url: 'http://127.0.0.1:9/mcp' }],
                conversation: { source: 'http://127.0.0.1:7/store' },
              },
            },
          ),
          recipe('quiet', [{ type: 'stdout' }, { type: 'file', path: '/tmp/ctl-netpol-events.jsonl' }]),
          stationManifest('notifier', 'notify'),
          stationManifest('silent', 'quiet'),
        );
        const ctl = await s.startReplica({ kubeconfig });
        await s.create(agentManifest('with-sinks', 'notifier'), agentManifest('no-sinks', 'silent'));

        const np = await pollUntil(() => policy(s, 'agent-job-with-sinks'), {
          timeoutMs: 30_000,
          description: 'the NetworkPolicy agent-job-with-sinks',
        });
        const agent = await s.agent('with-sinks');
        assert.ok(agent);
        assert.deepEqual(np.metadata.ownerReferences, [
          {
            apiVersion: GROUP_VERSION,
            kind: 'Agent',
            name: 'with-sinks',
            uid: agent.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ]);
        assert.deepEqual(np.metadata.labels, {
          [LABEL_COMPONENT]: 'job',
          [LABEL_AGENT]: 'with-sinks',
          [LABEL_STATION]: 'notifier',
        });
        assert.deepEqual(np.spec.podSelector.matchLabels, {
          [LABEL_COMPONENT]: 'job',
          [LABEL_AGENT]: 'with-sinks',
        });
        assert.deepEqual(np.spec.policyTypes, ['Ingress', 'Egress']);
        assert.equal(
          np.spec.ingress ?? undefined,
          undefined,
          'no way in (the API server drops an empty list)',
        );
        assert.deepEqual(np.spec.egress, [
          ...BASE_EGRESS,
          { to: [{ ipBlock: { cidr: '127.0.0.1/32' } }], ports: [{ protocol: 'TCP', port: sink.port }] },
          {
            to: [
              { ipBlock: { cidr: '0.0.0.0/0', except: ['169.254.0.0/16'] } },
              { ipBlock: { cidr: '::/0', except: ['fe80::/10', 'fd00:ec2::254/128'] } },
            ],
            ports: [{ protocol: 'TCP', port: 443 }],
          },
          { to: [{ ipBlock: { cidr: '127.0.0.1/32' } }], ports: [{ protocol: 'TCP', port: 9 }] },
          { to: [{ ipBlock: { cidr: '127.0.0.1/32' } }], ports: [{ protocol: 'TCP', port: 7 }] },
        ]);

        // The policy exists no later than the Job, and selects that run's pods and no other run's.
        const job = await pollUntil(() => s.job('agent-job-with-sinks'), {
          timeoutMs: 30_000,
          description: 'the Job agent-job-with-sinks',
        });
        assert.ok(
          Date.parse(np.metadata.creationTimestamp ?? '') <= Date.parse(job.metadata.creationTimestamp ?? ''),
          'the policy is created before the Job',
        );
        const selects = (labels: Readonly<Record<string, string>> | undefined): boolean =>
          Object.entries(np.spec.podSelector.matchLabels ?? {}).every(([k, val]) => labels?.[k] === val);
        const runPods = await pollUntil(
          async () => {
            const pods = await s.jobPods('agent-job-with-sinks');
            return pods.length > 0 ? pods : undefined;
          },
          { timeoutMs: 60_000, description: 'the pod of agent-job-with-sinks' },
        );
        for (const p of runPods) assert.ok(selects(p.metadata.labels), `selects ${p.metadata.name}`);

        // The unreachable sink changes nothing: the run succeeds, and the reachable sink got its events.
        const done = await s.waitTerminal('with-sinks');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.equal(done.status.exitCode, 0);
        assert.match(done.status.output ?? '', /^hello from the mock agent: run with-sinks$/m);
        await waitForAgentSucceeded(sink, '/x', 'with-sinks');

        const quiet = await s.waitTerminal('no-sinks');
        assert.equal(quiet.status.phase, 'Succeeded', JSON.stringify(quiet.status));
        const otherPods = await s.jobPods('agent-job-no-sinks');
        assert.ok(otherPods.length > 0, 'the run without sinks had a pod');
        for (const p of otherPods)
          assert.ok(!selects(p.metadata.labels), `does not select ${p.metadata.name}`);
        const other = await policy(s, 'agent-job-no-sinks');
        assert.ok(other, 'a run without endpoints has its own policy too');
        assert.deepEqual(other.spec.egress, BASE_EGRESS, 'DNS and public 443 only');
        assert.deepEqual(
          (await policies(s)).map((p) => p.metadata.name).sort(),
          ['agent-job-no-sinks', 'agent-job-with-sinks'],
          'one NetworkPolicy per run',
        );
        assert.deepEqual(ctl.logged(WARNING), [], 'no Forbidden warning with the deploy/ grant');
        assert.equal(ctl.logged('Created run NetworkPolicy').length, 2);

        assert.equal(await s.deleteAgent('with-sinks'), true);
        await pollUntil(
          async () => ((await policy(s, 'agent-job-with-sinks')) === undefined ? true : undefined),
          {
            timeoutMs: 60_000,
            description: 'the garbage collector to delete the NetworkPolicy of the deleted Agent',
          },
        );
      }),
  );

  it(
    'without the networkpolicies grant, runs with http sinks still succeed; the controller warns once',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'ctl-netpol-403', async (s) => {
        const sink = await startHttpSink();
        s.defer(() => sink.close());
        const kubeconfig = await controllerAccount(s, false);
        await s.create(
          recipe('notify', [{ type: 'http', url: sink.url('/x') }]),
          stationManifest('notifier', 'notify'),
        );
        const ctl = await s.startReplica({ kubeconfig });
        await s.create(agentManifest('first', 'notifier'), agentManifest('second', 'notifier'));
        for (const name of ['first', 'second']) {
          const done = await s.waitTerminal(name);
          assert.equal(done.status.phase, 'Succeeded', `${name}: ${JSON.stringify(done.status)}`);
          assert.equal(done.status.exitCode, 0);
          await waitForAgentSucceeded(sink, '/x', name);
        }
        assert.deepEqual(await policies(s), [], 'no NetworkPolicy was created');
        const warned = ctl.logged(WARNING);
        assert.equal(warned.length, 1, `one warning: ${JSON.stringify(warned)}`);
        assert.equal(warned[0]?.level, 'warn');
        assert.equal(await ctl.metric('controller_jobs_created_total'), 2);
      }),
  );
});
