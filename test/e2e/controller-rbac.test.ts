// The controller runs as the ServiceAccount of deploy/rbac/controller-rbac.yaml (a TokenRequest token in a
// kubeconfig, never admin) and drives scenario A to Succeeded without a single Forbidden; the Agent itself is
// created by the caller ServiceAccount of deploy/rbac/caller-rbac.yaml. Both tokens are held to least privilege:
// the controller cannot read Secrets or create Pods, the caller can only create and read Agents. With the server
// component the controller may create Secrets (API keys, and dry-run creates telling whether one exists) but still
// read none; with the batch component it may get agent-secrets, by name.
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import {
  agentManifest,
  apiPath,
  applyCrds,
  applyRbacManifests,
  collectionPath,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  GROUP_VERSION,
  KubeClient,
  KubeError,
  kubeconfigWithToken,
  pollUntil,
  runScenario,
  stationManifest,
} from '../support/index.ts';

const _ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/** A SubjectAccessReview's answer. */
const SarSchema = v.looseObject({ status: v.optional(v.looseObject({ allowed: v.optional(v.boolean()) })) });

/** Resolves to the HTTP status of a request that must fail (any status < 400 is returned as is). */
async function statusOf(attempt: Promise<unknown>): Promise<number> {
  try {
    await attempt;
    return 200;
  } catch (error) {
    if (error instanceof KubeError) return error.status;
    throw error;
  }
}

describe(`controller: ServiceAccount authentication with the deploy/ RBAC (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'scenario A as agent-controller (run) and agent-launcher (create): no Forbidden, least privilege holds',
    {
      timeout: 240_000,
    },
    () =>
      runScenario(cluster, 'ctl-rbac', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/crd-reader-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/caller-rbac.yaml');
        const dir = s.tempDir();
        const controllerConfig = kubeconfigWithToken(
          s.cluster.kubeconfig,
          await s.serviceAccountToken('agent-controller'),
          'agent-controller',
          dir,
        );
        const launcherConfig = kubeconfigWithToken(
          s.cluster.kubeconfig,
          await s.serviceAccountToken('agent-launcher'),
          'agent-launcher',
          dir,
        );
        const asController = KubeClient.fromKubeconfig(controllerConfig);
        const asLauncher = KubeClient.fromKubeconfig(launcherConfig);
        s.defer(() => {
          asController.close();
          asLauncher.close();
        });

        // The operator (admin) installs the recipe; the controller runs with its own token, no --install-crds.
        await s.create(
          execDefinition('mock-writer', ['sh', '-c', 'echo "hello from the mock agent: $0"']),
          stationManifest('mock-station', 'mock-writer'),
        );
        const ctl = await s.startReplica({ kubeconfig: controllerConfig });
        await ctl.waitForMetric('controller_is_leader', {}, 1, 20_000);

        const agents = collectionPath('Agent', s.ns);
        await asLauncher.create(agents, agentManifest('mock-run', 'mock-station'));
        const done = await s.waitTerminal('mock-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.equal(done.status.jobName, 'agent-job-mock-run');
        assert.equal(done.status.exitCode, 0);
        assert.match(done.status.output ?? '', /^hello from the mock agent: run mock-run$/m);
        const job = await s.job('agent-job-mock-run');
        assert.deepEqual(job?.metadata.ownerReferences, [
          {
            apiVersion: GROUP_VERSION,
            kind: 'Agent',
            name: 'mock-run',
            uid: done.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ]);
        await s.waitForEvents('mock-run', done.metadata.uid, ['Normal/Started', 'Normal/Succeeded']);
        // The launcher reads the result it launched.
        const seen = await asLauncher.get(`${agents}/mock-run`);
        assert.equal((seen as { status?: { phase?: string } }).status?.phase, 'Succeeded');

        // One poll sweep more (history sweep, Lease renewals, Events) and still nothing was refused.
        const polls = await ctl.metric('controller_resyncs_total');
        await ctl.waitForMetric('controller_resyncs_total', {}, (n) => n >= polls + 2, 20_000);
        const refused = ctl.rawLines.filter((l) => /forbidden|\b403\b/i.test(l));
        assert.deepEqual(refused, [], 'the controller was never refused by RBAC');

        // The controller's token: no Secrets, no Pods created, nothing outside its namespace, no Agents created.
        const secrets = apiPath('v1', 'secrets', { namespace: s.ns });
        const pods = apiPath('v1', 'pods', { namespace: s.ns });
        const pod = {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'not-allowed' },
          spec: { containers: [{ name: 'c', image: 'debian:bookworm-slim', command: ['true'] }] },
        };
        assert.equal(await statusOf(asController.list(secrets)), 403, 'controller: list Secrets');
        assert.equal(
          await statusOf(
            asController.get(apiPath('v1', 'secrets', { namespace: s.ns, name: 'agent-secrets' })),
          ),
          403,
          'controller: get a Secret',
        );
        assert.equal(await statusOf(asController.create(pods, pod)), 403, 'controller: create a Pod');
        assert.equal(
          await statusOf(asController.list(collectionPath('Agent', 'default'))),
          403,
          'controller: another namespace',
        );
        assert.equal(
          await statusOf(asController.create(agents, agentManifest('by-controller', 'mock-station'))),
          403,
          'controller: create an Agent',
        );
        assert.equal(
          await statusOf(asController.list('/apis/apiextensions.k8s.io/v1/customresourcedefinitions')),
          403,
          'controller: cluster-scoped CRDs',
        );
        assert.equal(await statusOf(asController.list(agents)), 200, 'controller: list its Agents');

        // The caller's token: create and read Agents, nothing else.
        assert.equal(await statusOf(asLauncher.list(agents)), 200, 'launcher: list Agents');
        assert.equal(
          await statusOf(asLauncher.patch(`${agents}/mock-run/status`, { status: { phase: 'Failed' } })),
          403,
          'launcher: write status',
        );
        assert.equal(
          await statusOf(asLauncher.delete(`${agents}/mock-run`)),
          403,
          'launcher: delete an Agent',
        );
        assert.equal(
          await statusOf(asLauncher.create(collectionPath('Station', s.ns), stationManifest('x', 'y'))),
          403,
          'launcher: create a Station',
        );
        assert.equal(
          await statusOf(asLauncher.list(apiPath('batch/v1', 'jobs', { namespace: s.ns }))),
          403,
          'launcher: Jobs',
        );
        assert.equal(await statusOf(asLauncher.list(secrets)), 403, 'launcher: Secrets');
      }),
  );
});

describe(`controller RBAC proven with SubjectAccessReviews against deploy/ (issue 13 §5) (${runtime})`, {
  skip,
}, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));

  it(
    'no Secrets read (but agent-secrets by name with the batch component; the server component only creates them), no pods, no escalation, no tokens',
    {
      timeout: 120_000,
    },
    () =>
      runScenario(cluster, 'ctl-sar', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        const user = `system:serviceaccount:${s.ns}:agent-controller`;
        const groups = ['system:serviceaccounts', `system:serviceaccounts:${s.ns}`, 'system:authenticated'];
        const can = async (
          verb: string,
          resource: string,
          o: { group?: string; name?: string; subresource?: string; namespace?: string | null } = {},
        ): Promise<boolean> => {
          const review = await s.client.json(
            'POST',
            '/apis/authorization.k8s.io/v1/subjectaccessreviews',
            SarSchema,
            {
              body: {
                apiVersion: 'authorization.k8s.io/v1',
                kind: 'SubjectAccessReview',
                spec: {
                  user,
                  groups,
                  resourceAttributes: {
                    verb,
                    resource,
                    group: o.group ?? '',
                    ...(o.namespace === null ? {} : { namespace: o.namespace ?? s.ns }),
                    ...(o.name !== undefined ? { name: o.name } : {}),
                    ...(o.subresource !== undefined ? { subresource: o.subresource } : {}),
                  },
                },
              },
            },
          );
          return review.status?.allowed === true;
        };
        // Positive controls: the reviews answer for this user (once the authorizer has seen the new binding).
        await pollUntil(async () => ((await can('create', 'jobs', { group: 'batch' })) ? true : undefined), {
          timeoutMs: 10_000,
          description: 'the controller Role to apply (it creates Jobs)',
        });
        assert.equal(
          await can('patch', 'agents', { group: 'agents.re-cinq.com', subresource: 'status' }),
          true,
        );
        const denied: [string, string, Parameters<typeof can>[2]][] = [
          ['get', 'secrets', { name: 'agent-secrets' }],
          ['list', 'secrets', {}],
          ['watch', 'secrets', {}],
          ['create', 'pods', {}],
          ['create', 'pods', { subresource: 'exec', name: 'x' }],
          ['create', 'serviceaccounts', { subresource: 'token', name: 'agent-controller' }],
          ['escalate', 'roles', { group: 'rbac.authorization.k8s.io' }],
          ['escalate', 'clusterroles', { group: 'rbac.authorization.k8s.io', namespace: null }],
          [
            'bind',
            'clusterroles',
            { group: 'rbac.authorization.k8s.io', name: 'cluster-admin', namespace: null },
          ],
          ['create', 'rolebindings', { group: 'rbac.authorization.k8s.io' }],
          ['impersonate', 'users', { namespace: null }],
          ['create', 'deployments', { group: 'apps' }],
          ['update', 'configmaps', { name: 'anything' }],
          ['list', 'configmaps', {}],
        ];
        for (const [verb, resource, o] of denied) {
          assert.equal(
            await can(verb, resource, o),
            false,
            `may not ${verb} ${resource} ${JSON.stringify(o)}`,
          );
        }
        // The server component: Secrets created (API keys; dry-run creates that tell whether one exists), never read.
        await applyRbacManifests(s, 'deploy/components/server/server-rbac.yaml');
        await pollUntil(async () => ((await can('create', 'secrets', {})) ? true : undefined), {
          timeoutMs: 10_000,
          description: 'the server grant to apply (it creates Secrets)',
        });
        const serverDenied: [string, string, Parameters<typeof can>[2]][] = [
          ['get', 'secrets', {}],
          ['get', 'secrets', { name: 'agent-secrets' }],
          ['get', 'secrets', { name: 'bot-server-api-key' }],
          ['list', 'secrets', {}],
          ['watch', 'secrets', {}],
          ['watch', 'secrets', { name: 'bot-server-api-key' }],
          ['update', 'secrets', { name: 'bot-server-api-key' }],
          ['patch', 'secrets', { name: 'bot-server-api-key' }],
          ['delete', 'secrets', { name: 'bot-server-api-key' }],
        ];
        for (const [verb, resource, o] of serverDenied) {
          assert.equal(
            await can(verb, resource, o),
            false,
            `with the server component, may not ${verb} ${resource} ${JSON.stringify(o)}`,
          );
        }
        assert.equal(await can('create', 'secrets', {}), true, 'with the server component: create Secrets');
        // The batch component: agent-secrets by name, get only.
        await applyRbacManifests(s, 'deploy/components/batch/batch-rbac.yaml');
        await pollUntil(
          async () => ((await can('get', 'secrets', { name: 'agent-secrets' })) ? true : undefined),
          {
            timeoutMs: 10_000,
            description: 'the batch grant to apply',
          },
        );
        assert.equal(await can('get', 'secrets', { name: 'other-secret' }), false);
        assert.equal(await can('list', 'secrets', {}), false);
        assert.equal(await can('update', 'secrets', { name: 'agent-secrets' }), false);
      }),
  );
});
