// AgentPolicy (issue 9 §1) on the local control plane, Node and Deno: the controller fails a Pending run its
// Station's policy forbids (image, deadline, model, env, a policy that does not exist), each with its exact reason,
// a `policy` failure and a PolicyViolation Event; a policy change does not touch a Running run but applies to the
// next; and the ValidatingAdmissionPolicy of deploy/admission refuses, at the API server, the Stations a policy
// forbids, with the policy's message, while admitting the valid ones.
//
// AgentPolicies are cluster-scoped and the control plane is shared with other test files: every policy here is
// named after the scenario's namespace; the one labelled default limits only a deadline no other test comes near
// (so it cannot change another test's runs even if files ran side by side); the admission policy is bound to the
// scenario's namespace only.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import {
  AGENT_CONTAINER_IMAGE,
  agentManifest,
  applyCrds,
  createAgentPolicy,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  GROUP_VERSION,
  KubeError,
  type Manifest,
  nodePassOnlySkipReason,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const POLICIES = `/apis/${GROUP_VERSION}/agentpolicies`;

/** The HTTP status and message of a create the API server may refuse (201 when it is accepted). */
async function tryCreate(s: Scenario, m: Manifest): Promise<{ status: number; message: string }> {
  try {
    await s.create(m);
    return { status: 201, message: '' };
  } catch (error) {
    if (error instanceof KubeError) return { status: error.status, message: error.message };
    throw error;
  }
}

describe(`AgentPolicy (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'the controller fails what the Station policy forbids, with the reason; a policy change spares Running runs',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'policy-ctl', async (s) => {
        const tight = await createAgentPolicy(s, 'tight', {
          images: { allowedPrefixes: [AGENT_CONTAINER_IMAGE] },
          models: { allowed: ['exec'] },
          executions: { allowed: ['job'] },
          env: { deny: ['LD_PRELOAD'] },
          resources: { maxDeadlineMinutes: 10 },
        });
        const echo = ['sh', '-c', 'echo "ran $0"'];
        // A default policy: it applies to the Stations that name none (here st-default).
        const fallback = await createAgentPolicy(
          s,
          'default',
          { resources: { maxDeadlineMinutes: 9999 } },
          { 'agents.re-cinq.com/default-policy': 'true' },
        );
        const withPolicy = (name: string, def: string, spec: Record<string, unknown> = {}) =>
          stationManifest(name, def, { policyRef: tight, deadlineMinutes: 5, ...spec });
        await s.create(
          execDefinition('echo', echo),
          execDefinition('slow', ['sh', '-c', 'sleep 4; echo "slow done"']),
          execDefinition('preload', echo, { resources: { env: [{ name: 'LD_PRELOAD', value: '/x.so' }] } }),
          { ...execDefinition('claude', echo), spec: { prompt: 'hi', model: 'claude-opus-5-5' } },
          withPolicy('st-ok', 'echo'),
          withPolicy('st-slow', 'slow'),
          withPolicy('st-image', 'echo', {
            template: { spec: { containers: [{ name: 'agent', image: 'evil.example/agent:1' }] } },
          }),
          withPolicy('st-long', 'echo', { deadlineMinutes: 30 }),
          withPolicy('st-env', 'preload'),
          withPolicy('st-model', 'claude'),
          stationManifest('st-missing', 'echo', { policyRef: `${s.ns}-no-such-policy` }),
          stationManifest('st-default', 'echo', { deadlineMinutes: 10_000 }),
        );
        const ctl = await s.startReplica();
        await s.create(
          agentManifest('ok', 'st-ok'),
          agentManifest('slow', 'st-slow'),
          agentManifest('image', 'st-image'),
          agentManifest('long', 'st-long'),
          agentManifest('env', 'st-env'),
          agentManifest('model', 'st-model'),
          agentManifest('missing', 'st-missing'),
          agentManifest('by-default', 'st-default'),
        );
        const ok = await s.waitTerminal('ok');
        assert.equal(ok.status.phase, 'Succeeded', JSON.stringify(ok.status));
        const expected: Record<string, string> = {
          image: `AgentPolicy ${tight}: image evil.example/agent:1 of container agent is not allowed (allowed prefixes: ${AGENT_CONTAINER_IMAGE})`,
          long: `AgentPolicy ${tight}: deadlineMinutes 30 is over the maximum of 10`,
          env: `AgentPolicy ${tight}: env LD_PRELOAD (set by the definition) is denied`,
          model: `AgentPolicy ${tight}: model claude-opus-5-5 is not allowed (allowed: exec)`,
          missing: `AgentPolicy ${s.ns}-no-such-policy not found`,
          'by-default': `AgentPolicy ${fallback}: deadlineMinutes 10000 is over the maximum of 9999`,
        };
        for (const [name, reason] of Object.entries(expected)) {
          const a = await s.waitTerminal(name, 60_000);
          assert.equal(a.status.phase, 'Failed', name);
          assert.equal(a.status.failureReason, reason, name);
          assert.equal(a.status.jobName ?? '', '', `${name}: no Job`);
        }
        const image = await s.agent('image');
        await s.waitForEvents('image', image?.metadata.uid, ['Warning/PolicyViolation']);
        await ctl.waitForMetric('controller_run_failures_total', { kind: 'policy' }, (n) => n >= 6, 20_000);

        // Tighten the policy while `slow` runs: it finishes; the next run of the same Station is refused.
        await pollUntil(
          async () => ((await s.agent('slow'))?.status.phase === 'Running' ? true : undefined),
          { timeoutMs: 60_000, description: 'slow Running' },
        );
        await s.client.patch(`${POLICIES}/${tight}`, {
          spec: { images: { allowedPrefixes: ['nothing.example/'] } },
        });
        await s.create(agentManifest('after', 'st-slow'));
        const slow = await s.waitTerminal('slow');
        assert.equal(slow.status.phase, 'Succeeded', 'a Running run is never re-checked');
        assert.match(slow.status.output ?? '', /slow done/);
        const late = await s.waitTerminal('after', 60_000);
        assert.equal(late.status.phase, 'Failed');
        assert.match(
          late.status.failureReason ?? '',
          /is not allowed \(allowed prefixes: nothing\.example\/\)$/,
        );
      }),
  );

  it(
    'deploy/admission: the API server refuses Stations the policy forbids, with its message, and admits the rest',
    { timeout: 120_000 },
    async () =>
      runScenario(cluster, 'policy-vap', async (s) => {
        const policy = await createAgentPolicy(s, 'strict', {
          images: { allowedPrefixes: ['ghcr.io/acme/'] },
          resources: { maxDeadlineMinutes: 10 },
          sandbox: { runtimeClassNames: ['gvisor'], requireRuntimeClass: true },
          sidecars: { allowed: false },
          env: { deny: ['LD_PRELOAD'] },
        });
        // The shipped policy and binding, renamed for this scenario and bound to its namespace only.
        const docs = loadAll(
          readFileSync(join(ROOT, 'deploy', 'admission', 'agent-policy.yaml'), 'utf8'),
        ) as {
          kind: string;
          metadata: { name: string };
          spec: Record<string, unknown>;
        }[];
        const vapName = `agent-policy-stations-${s.ns}`;
        const base = '/apis/admissionregistration.k8s.io/v1';
        for (const doc of docs) {
          const binding = doc.kind === 'ValidatingAdmissionPolicyBinding';
          const path = `${base}/${binding ? 'validatingadmissionpolicybindings' : 'validatingadmissionpolicies'}`;
          const spec = binding
            ? {
                ...doc.spec,
                policyName: vapName,
                matchResources: {
                  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': s.ns } },
                },
              }
            : doc.spec;
          await s.client.create(path, { ...doc, metadata: { name: vapName }, spec });
          s.defer(async () => {
            await s.client.delete(`${path}/${vapName}`);
          });
        }
        const good = {
          spec: {
            runtimeClassName: 'gvisor',
            containers: [{ name: 'agent', image: 'ghcr.io/acme/agent:1' }],
          },
        };
        const station = (name: string, spec: Record<string, unknown>) =>
          stationManifest(name, 'any', { policyRef: policy, deadlineMinutes: 5, template: good, ...spec });
        // The admission policy is compiled and bound asynchronously: wait until it refuses.
        const refusedImage = await pollUntil(
          async (observe) => {
            const r = await tryCreate(
              s,
              station('bad-image', {
                template: { spec: { ...good.spec, containers: [{ name: 'agent', image: 'docker.io/x:1' }] } },
              }),
            );
            observe(r);
            if (r.status !== 201) return r;
            // Admitted before the policy was in force: remove it and try again.
            await s.client.delete(`/apis/${GROUP_VERSION}/namespaces/${s.ns}/stations/bad-image`);
            return undefined;
          },
          { timeoutMs: 60_000, intervalMs: 500, description: 'the admission policy in force' },
        );
        assert.equal(refusedImage.status, 403, refusedImage.message);
        assert.match(
          refusedImage.message,
          new RegExp(`AgentPolicy ${policy}: every container image must start with one of: ghcr\\.io/acme/`),
        );
        const refusals: [string, Record<string, unknown>, RegExp][] = [
          ['long', { deadlineMinutes: 30 }, /deadlineMinutes must be at most 10/],
          [
            'no-runtime',
            { template: { spec: { containers: good.spec.containers } } },
            /must set a runtimeClassName/,
          ],
          [
            'runc',
            { template: { spec: { ...good.spec, runtimeClassName: 'runc' } } },
            /runtimeClassName must be one of: gvisor/,
          ],
          [
            'sidecar',
            {
              template: {
                spec: {
                  ...good.spec,
                  containers: [...good.spec.containers, { name: 'proxy', image: 'ghcr.io/acme/p:1' }],
                },
              },
            },
            /sidecar containers are not allowed/,
          ],
        ];
        for (const [name, spec, message] of refusals) {
          const r = await tryCreate(s, station(name, spec));
          assert.equal(r.status, 403, `${name}: ${r.message}`);
          assert.match(r.message, message, name);
        }
        // A policy that serves other namespaces only cannot be named here; one that serves this one can.
        const elsewhere = await createAgentPolicy(s, 'elsewhere', { namespaces: ['somewhere-else'] });
        const served = await createAgentPolicy(s, 'served', { namespaces: [s.ns] });
        const named = await pollUntil(
          async () => {
            const r = await tryCreate(s, stationManifest('elsewhere', 'any', { policyRef: elsewhere }));
            if (r.status !== 201) return r;
            await s.client.delete(`/apis/${GROUP_VERSION}/namespaces/${s.ns}/stations/elsewhere`);
            return undefined;
          },
          { timeoutMs: 30_000, intervalMs: 500, description: 'the new policy as a parameter' },
        );
        assert.equal(named.status, 403, named.message);
        assert.match(
          named.message,
          new RegExp(
            `AgentPolicy ${elsewhere}: it does not serve namespace ${s.ns} \\(spec\\.namespaces: somewhere-else\\)`,
          ),
        );
        assert.equal(
          (await tryCreate(s, stationManifest('served', 'any', { policyRef: served }))).status,
          201,
        );
        // A Station that names no policy is checked against the default one.
        const fallback = await createAgentPolicy(
          s,
          'default',
          { resources: { maxDeadlineMinutes: 9999 } },
          { 'agents.re-cinq.com/default-policy': 'true' },
        );
        const overDefault = await pollUntil(
          async () => {
            const r = await tryCreate(s, stationManifest('over-default', 'any', { deadlineMinutes: 10_000 }));
            if (r.status !== 201) return r;
            await s.client.delete(`/apis/${GROUP_VERSION}/namespaces/${s.ns}/stations/over-default`);
            return undefined;
          },
          { timeoutMs: 30_000, intervalMs: 500, description: 'the default policy as a parameter' },
        );
        assert.equal(overDefault.status, 403, overDefault.message);
        assert.match(
          overDefault.message,
          new RegExp(`AgentPolicy ${fallback}: deadlineMinutes must be at most 9999`),
        );
        // Valid under the policy it names, and a Station that names none within the default: admitted.
        assert.equal((await tryCreate(s, station('good', {}))).status, 201);
        assert.equal(
          (
            await tryCreate(
              s,
              stationManifest('unbound', 'any', {
                template: { spec: { containers: [{ name: 'agent', image: 'docker.io/x:1' }] } },
              }),
            )
          ).status,
          201,
        );
      }),
  );
});
