// Run pods under Pod Security admission, enforced by the real API server: in a namespace labelled
// `pod-security.kubernetes.io/enforce: restricted`, a Job run and a realtime run (the pods the controller builds)
// are admitted and run as uid 1000 with no capabilities, init included; a Station that opts into `baseline` keeps
// today's root init (admitted where baseline is enforced, its files given to the run user); an init failure reaches
// the Agent as the init's own one-line reason (its termination message).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  apiPath,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  enforcePodSecurity,
  execDefinition,
  fakeClaudeImages,
  GROUP_VERSION,
  nodePassOnlySkipReason,
  pollUntil,
  runScenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

type Json = Record<string, unknown>;
const sc = (c: Json | undefined) => (c?.securityContext ?? {}) as Json;

describe(`run pods under Pod Security admission (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'restricted (the default): a Job run and a realtime run are admitted where restricted is enforced, init and agent as uid 1000',
    { timeout: 180_000 },
    () =>
      runScenario(cluster, 'pss-restricted', async (s) => {
        await enforcePodSecurity(s, 'restricted');
        // A pod the restricted level refuses, to prove the namespace enforces it.
        await assert.rejects(
          s.client.create(apiPath('v1', 'pods', { namespace: s.ns }), {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'root-pod' },
            spec: { containers: [{ name: 'c', image: 'x', securityContext: { runAsUser: 0 } }] },
          }),
          /violates PodSecurity \\?"restricted/,
        );
        const images = fakeClaudeImages(s, runtime, { MOCK_ECHO_PROMPT: '1' });
        await s.create(
          execDefinition('whoami', [
            'sh',
            '-c',
            'echo "uid=$(id -u) gid=$(id -g) home=$(stat -c %u /agent/bin/node)"',
          ]),
          stationManifest('st', 'whoami'),
          {
            apiVersion: GROUP_VERSION,
            kind: 'AgentDefinition',
            metadata: { name: 'live' },
            spec: { model: 'claude-opus-5-5', prompt: 'hello', execution: 'realtime' },
          },
          stationManifest('st-live', 'live', {
            template: {
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [{ name: 'agent', image: images.agent }],
              },
            },
          }),
          agentManifest('job-run', 'st'),
          agentManifest('live-run', 'st-live'),
        );
        await s.startReplica({ env: { REALTIME_ENABLED: 'true', API_PORT: '0', AGENT_IMAGE: images.init } });

        const done = await s.waitTerminal('job-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.match(done.status.output ?? '', /^uid=1000 gid=1000 home=1000$/m);
        const [pod] = await s.jobPods('agent-job-job-run');
        const spec = (pod as unknown as { spec: Json }).spec;
        assert.deepEqual(spec.securityContext, {
          runAsNonRoot: true,
          runAsUser: 1000,
          runAsGroup: 1000,
          fsGroup: 1000,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        const [init] = spec.initContainers as Json[];
        assert.equal(sc(init).runAsUser, 1000);
        assert.deepEqual(sc(init).capabilities, { drop: ['ALL'] });
        // Its own ServiceAccount (issue 9 §2), owned by the Agent, and no token in the pod.
        assert.equal(spec.serviceAccountName, 'agent-job-job-run');
        assert.equal(spec.automountServiceAccountToken, false);
        assert.ok(
          !JSON.stringify(spec.volumes ?? []).includes('serviceAccountToken'),
          'no projected token without a grant',
        );
        const account = (await s.client.get(
          apiPath('v1', 'serviceaccounts', { namespace: s.ns, name: 'agent-job-job-run' }),
        )) as unknown as { automountServiceAccountToken?: boolean; metadata: { ownerReferences?: Json[] } };
        assert.equal(account.automountServiceAccountToken, false);
        assert.deepEqual(
          account.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid]),
          [['Agent', 'job-run', done.metadata.uid]],
        );

        // The realtime run's pod is admitted too and its session comes up (first turn answered).
        const live = await pollUntil(
          async (observe) => {
            const a = await s.agent('live-run');
            observe(a?.status);
            return a?.status.phase === 'Running' && (await s.jobPods('agent-job-live-run')).length > 0
              ? a
              : undefined;
          },
          { timeoutMs: 60_000, description: 'the realtime run Running with a pod' },
        );
        assert.equal(live.status.phase, 'Running');
        const [livePod] = await s.jobPods('agent-job-live-run');
        assert.equal(
          ((livePod as unknown as { spec: Json }).spec.securityContext as Json).runAsNonRoot,
          true,
        );
        await pollUntil(
          async () => {
            const [p] = await s.jobPods('agent-job-live-run');
            const statuses = (p?.status as { containerStatuses?: { name: string; state?: Json }[] })
              ?.containerStatuses;
            return statuses?.some((c) => c.name === 'agent' && c.state?.running !== undefined)
              ? true
              : undefined;
          },
          { timeoutMs: 60_000, description: 'the realtime agent container running' },
        );
        // Its own NetworkPolicy admits the controller's pods (of the controller's namespace) on the prompt port only.
        const np = (await s.client.get(
          apiPath('networking.k8s.io/v1', 'networkpolicies', { namespace: s.ns, name: 'agent-job-live-run' }),
        )) as unknown as { spec: Json };
        assert.deepEqual(np.spec.ingress, [
          {
            from: [
              {
                namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': s.ns } },
                podSelector: { matchLabels: { 'agents.re-cinq.com/component': 'controller' } },
              },
            ],
            ports: [{ protocol: 'TCP', port: 8090 }],
          },
        ]);
        await s.deleteAgent('live-run');
      }),
  );

  it(
    'baseline, when the Station opts in: the init runs as root with its five capabilities and gives HOME to uid 1000',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'pss-baseline', async (s) => {
        await enforcePodSecurity(s, 'baseline');
        await s.create(
          execDefinition('whoami', ['sh', '-c', 'echo "uid=$(id -u) home=$(stat -c %u /agent/bin/node)"']),
          stationManifest('st', 'whoami', { podSecurityProfile: 'baseline' }),
          agentManifest('base-run', 'st'),
        );
        await s.startReplica();
        const done = await s.waitTerminal('base-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.match(done.status.output ?? '', /^uid=1000 home=1000$/m, 'chowned by the root init');
        const [pod] = await s.jobPods('agent-job-base-run');
        const spec = (pod as unknown as { spec: Json }).spec;
        const [init] = spec.initContainers as Json[];
        assert.equal(sc(init).runAsUser, 0);
        assert.deepEqual(sc(init).capabilities, {
          drop: ['ALL'],
          add: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETUID', 'SETGID'],
        });
      }),
  );

  it(
    'a Station template the restricted profile forbids fails at Pending with the reason; an init failure gives its own',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'pss-reasons', async (s) => {
        await s.create(
          execDefinition('echo', ['sh', '-c', 'echo hi']),
          stationManifest('st-root-sidecar', 'echo', {
            template: {
              spec: {
                containers: [
                  { name: 'agent', image: 'x' },
                  { name: 'helper', image: 'y', securityContext: { runAsUser: 0 } },
                ],
              },
            },
          }),
          agentManifest('root-sidecar', 'st-root-sidecar'),
          execDefinition('bad-repo', ['sh', '-c', 'echo never'], {
            resources: { repos: [{ name: 'r', url: '--upload-pack=touch /tmp/pwned' }] },
          }),
          stationManifest('st-bad-repo', 'bad-repo'),
          agentManifest('refused-repo', 'st-bad-repo'),
        );
        await s.startReplica();
        const sidecar = await s.waitTerminal('root-sidecar', 60_000);
        assert.equal(sidecar.status.phase, 'Failed');
        assert.match(
          sidecar.status.failureReason ?? '',
          /Station template container helper runs as root \(runAsUser: 0\), which the restricted Pod Security profile forbids \(set spec\.podSecurityProfile: baseline to allow it\)/,
        );
        const repo = await s.waitTerminal('refused-repo', 90_000);
        assert.equal(repo.status.phase, 'Failed');
        assert.equal(
          repo.status.failureReason,
          'init container failed (exit code 2): init refused a repository (see the init log)',
        );
      }),
  );
});
