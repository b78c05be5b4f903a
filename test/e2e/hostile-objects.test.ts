// Hostile objects through the real API server (issue 13 §3): schema-valid objects at the edges — names of 253
// characters, Unicode and control characters in every free-form string, a prompt near the object size limit,
// thousands of parameters, a deeply nested free-form field, a Station template using most of what a pod spec allows,
// Agents edited while they are reconciled and deleted mid-transition — each get a clear status (or a clear refusal
// from the CRD schema or the API server), while a normal run alongside completes on time and the controller neither
// exits nor logs an unhandled error.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  apiPath,
  applyCrds,
  collectionPath,
  e2eCluster,
  e2eRuntime,
  fakeClaudeImages,
  GROUP_VERSION,
  KubeError,
  type Manifest,
  nodePassOnlySkipReason,
  pollUntil,
  runScenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

const sha256 = (t: string) => createHash('sha256').update(t, 'utf8').digest('hex');

/** A definition whose (fake Claude) CLI prints the size and digest of the prompt it received. */
const digestDefinition = (name: string, extra: Readonly<Record<string, unknown>> = {}): Manifest => ({
  apiVersion: GROUP_VERSION,
  kind: 'AgentDefinition',
  metadata: { name },
  spec: {
    model: 'claude-opus-5-5',
    prompt: '{text}',
    resources: { env: [{ name: 'MOCK_PROMPT_DIGEST', value: '1' }] },
    ...extra,
  },
});

/** The `{"prompt": …}` line the fake CLI printed. */
function promptSeen(output: string | undefined): { bytes: number; sha256: string } | undefined {
  const line = (output ?? '').split('\n').find((l) => l.startsWith('{"prompt"'));
  return line === undefined
    ? undefined
    : (JSON.parse(line) as { prompt: { bytes: number; sha256: string } }).prompt;
}

/** Every control character but NUL, and text in several scripts, directions and planes. */
const CONTROL =
  Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join('') + '\u007f\u0085\u2028\u2029';
const UNICODE = `Grüße ✓ 日本語 עברית \u202eevil\u202c 😀🏳️‍🌈 \ufeff zero\u200bwidth ${CONTROL}`;

/** The API server's refusal of `request`: its HTTP status and the Status message (the whole of it). */
async function refusal(request: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await request;
  } catch (error) {
    if (!(error instanceof KubeError)) throw error;
    let message = error.body;
    try {
      message = (JSON.parse(error.body) as { message?: string }).message ?? error.body;
    } catch {}
    return { status: error.status, message };
  }
  return assert.fail('the API server accepted it');
}

/** A schema nested `depth` levels deep (objects in objects). */
function nestedSchema(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < depth; i++) schema = { type: 'object', properties: { n: schema } };
  return schema;
}

describe(`hostile objects (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'refusals are clear, edge objects get a clear status, and a normal run alongside completes',
    { timeout: 300_000 },
    () =>
      runScenario(cluster, 'hostile', async (s) => {
        const images = fakeClaudeImages(s, runtime);
        const agents = collectionPath('Agent', s.ns);
        const template = {
          spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'agent', image: images.agent }] },
        };
        const long = (prefix: string) => `${prefix}-${'x'.repeat(253 - prefix.length - 1)}`;
        const longStation = long('station');
        const longDefinition = long('definition');
        const longAgent = long('agent');

        // The CRD schemas and the API server refuse what they must, each with a message naming the field.
        const refusals: ReadonlyArray<readonly [string, Manifest, RegExp]> = [
          [
            'a 254-character name',
            agentManifest(`a${'b'.repeat(253)}`, 'st'),
            /metadata\.name.*must be no more than 253/,
          ],
          [
            'a non-string parameter',
            agentManifest('bad-param', 'st', { parameters: { n: 7 } }),
            /spec\.parameters\.n.*must be of type string/,
          ],
          ['no stationRef', { ...agentManifest('no-ref', 'st'), spec: {} }, /spec\.stationRef.*Required/],
          [
            'a label value with a control character',
            {
              ...agentManifest('bad-label', 'st'),
              metadata: { name: 'bad-label', labels: { k: 'a\u0001b' } },
            },
            /metadata\.labels.*Invalid value/,
          ],
          [
            'startTimeoutMinutes 0',
            stationManifest('bad-station', 'def', { startTimeoutMinutes: 0 }),
            /spec\.startTimeoutMinutes.*should be greater than or equal to 1/,
          ],
        ];
        for (const [what, manifest, message] of refusals) {
          const refused = await refusal(s.create(manifest));
          assert.equal(refused.status, 422, `${what}: ${refused.message}`);
          assert.match(refused.message, message, what);
        }
        // An object over etcd's request limit (1.5 MiB) is refused by the API server, and nothing is left behind.
        const tooLarge = await refusal(
          s.create(agentManifest('too-large', 'st', { parameters: { text: 'z'.repeat(1600 * 1024) } })),
        );
        assert.match(tooLarge.message, /too large/i, `${tooLarge.status}`);
        assert.equal(await s.agent('too-large'), undefined);

        // A PriorityClass of the scenario's own for the full template (cluster-scoped: deleted at the end).
        const priorityClass = `hostile-${s.ns}`;
        const priorityClasses = '/apis/scheduling.k8s.io/v1/priorityclasses';
        await s.client.create(priorityClasses, {
          apiVersion: 'scheduling.k8s.io/v1',
          kind: 'PriorityClass',
          metadata: { name: priorityClass },
          value: 1000,
          preemptionPolicy: 'Never',
        });
        s.defer(async () => void (await s.client.delete(`${priorityClasses}/${priorityClass}`)));
        await s.create(
          digestDefinition('def'),
          digestDefinition(longDefinition),
          digestDefinition('deep', { output: { format: 'json', schema: nestedSchema(300) } }),
          // Keeps every run it makes (the default history of 3 would prune the Agents this test reads).
          stationManifest('st', 'def', {
            template,
            successfulRunsHistoryLimit: 50,
            failedRunsHistoryLimit: 50,
          }),
          stationManifest(longStation, longDefinition, { template }),
          stationManifest('deep', 'deep', { template }),
          stationManifest('full', 'def', {
            template: {
              metadata: {
                labels: { team: 'hostile', 'app.kubernetes.io/name': 'x' },
                annotations: { note: UNICODE },
              },
              spec: {
                terminationGracePeriodSeconds: 2,
                activeDeadlineSeconds: 3600,
                enableServiceLinks: false,
                dnsPolicy: 'ClusterFirst',
                dnsConfig: { options: [{ name: 'ndots', value: '2' }], searches: ['example.internal'] },
                hostAliases: [{ ip: '127.0.0.2', hostnames: ['alias.internal'] }],
                os: { name: 'linux' },
                preemptionPolicy: 'Never',
                schedulerName: 'default-scheduler',
                setHostnameAsFQDN: false,
                subdomain: 'runs',
                tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }],
                affinity: {
                  nodeAffinity: {
                    preferredDuringSchedulingIgnoredDuringExecution: [
                      {
                        weight: 1,
                        preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
                      },
                    ],
                  },
                },
                topologySpreadConstraints: [
                  {
                    maxSkew: 1,
                    topologyKey: 'kubernetes.io/hostname',
                    whenUnsatisfiable: 'ScheduleAnyway',
                    labelSelector: { matchLabels: { team: 'hostile' } },
                  },
                ],
                imagePullSecrets: [{ name: 'registry-creds' }],
                readinessGates: [],
                nodeSelector: { 'kubernetes.io/os': 'linux' },
                priorityClassName: priorityClass,
                securityContext: {
                  runAsNonRoot: true,
                  runAsUser: 1000,
                  runAsGroup: 1000,
                  fsGroup: 1000,
                  supplementalGroups: [1000],
                  seccompProfile: { type: 'RuntimeDefault' },
                },
                volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '64Mi' } }],
                initContainers: [
                  {
                    name: 'prepare',
                    image: 'docker.io/library/busybox:1.37',
                    command: ['sh', '-c', 'echo prepared > /scratch/prepared'],
                    volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
                    securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
                  },
                ],
                containers: [
                  {
                    name: 'agent',
                    image: images.agent,
                    imagePullPolicy: 'IfNotPresent',
                    workingDir: '/tmp',
                    env: [{ name: 'HOSTILE', value: UNICODE }],
                    resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '512Mi' } },
                    volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
                    terminationMessagePolicy: 'FallbackToLogsOnError',
                    lifecycle: { preStop: { exec: { command: ['true'] } } },
                    readinessProbe: { exec: { command: ['true'] }, periodSeconds: 5 },
                    livenessProbe: { exec: { command: ['true'] }, periodSeconds: 30, failureThreshold: 10 },
                    securityContext: {
                      allowPrivilegeEscalation: false,
                      capabilities: { drop: ['ALL'] },
                      runAsNonRoot: true,
                    },
                    stdin: false,
                    tty: false,
                  },
                ],
              },
            },
          }),
        );
        const ctl = await s.startReplica({ env: { AGENT_IMAGE: images.init } });
        const normalCreated = Date.now();
        await s.create(agentManifest('normal', 'st', { parameters: { text: 'a normal run' } }));

        const params: Record<string, string> = { text: 'five thousand parameters' };
        for (let i = 0; i < 5000; i++) params[`p${i}`] = `value ${i} ${UNICODE.slice(0, 8)}`;
        const nearLimit = 'n'.repeat(1400 * 1024);
        await s.create(
          agentManifest(longAgent, longStation, { parameters: { text: 'long names' } }),
          agentManifest('unicode', 'st', {
            parameters: { text: UNICODE, [`ключ-${'k'.repeat(10)}`]: UNICODE },
            taskId: UNICODE,
            targetRepo: UNICODE,
            branch: UNICODE,
          }),
          agentManifest('nul', 'st', { parameters: { text: 'before\u0000after' }, taskId: 'task\u0000id' }),
          agentManifest('many', 'st', { parameters: params }),
          agentManifest('near-limit', 'st', { parameters: { text: nearLimit } }),
          agentManifest('deep', 'deep', { parameters: { text: 'deep schema' } }),
          agentManifest('full', 'full', { parameters: { text: 'a full template' } }),
        );

        // Edited while reconciled: every Agent still runs once and ends Succeeded.
        const edited = Array.from({ length: 8 }, (_, i) => `edited-${i}`);
        await s.create(...edited.map((n) => agentManifest(n, 'st', { parameters: { text: n } })));
        for (let round = 0; round < 4; round++) {
          await Promise.all(
            edited.map((n) =>
              s.client.patch(`${agents}/${n}`, {
                metadata: { labels: { round: String(round) }, annotations: { note: `${UNICODE} ${round}` } },
              }),
            ),
          );
        }
        // Deleted mid-transition: at once (Pending or being admitted), and once Running.
        const doomed = Array.from({ length: 6 }, (_, i) => `doomed-${i}`);
        await s.create(...doomed.map((n) => agentManifest(n, 'st', { parameters: { text: n } })));
        await Promise.all(doomed.slice(0, 3).map((n) => s.client.delete(`${agents}/${n}`)));
        await pollUntil(
          async () => {
            const phases = await Promise.all(
              doomed.slice(3).map(async (n) => (await s.agent(n))?.status.phase),
            );
            return phases.some((p) => p === 'Running' || p === 'Succeeded') ? true : undefined;
          },
          { timeoutMs: 60_000, description: 'a doomed Agent Running' },
        );
        await Promise.all(doomed.slice(3).map((n) => s.client.delete(`${agents}/${n}`)));

        // The normal run completes on time.
        const normal = await s.waitTerminal('normal', 90_000);
        assert.equal(normal.status.phase, 'Succeeded', JSON.stringify(normal.status));
        process.stdout.write(`# normal run: ${Date.now() - normalCreated} ms from create to Succeeded\n`);

        const longRun = await s.waitTerminal(longAgent);
        assert.equal(longRun.status.phase, 'Succeeded', JSON.stringify(longRun.status));
        assert.ok((longRun.status.jobName ?? '').length <= 63, longRun.status.jobName);

        const unicode = await s.waitTerminal('unicode');
        assert.equal(unicode.status.phase, 'Succeeded', JSON.stringify(unicode.status));
        assert.deepEqual(promptSeen(unicode.status.output), {
          bytes: Buffer.byteLength(UNICODE),
          sha256: sha256(UNICODE),
          via: 'argv',
        });
        // A NUL character: the API server keeps it, but no argument or environment variable can carry one.
        const nul = await s.waitTerminal('nul');
        assert.equal(nul.status.phase, 'Failed');
        assert.match(nul.status.failureReason ?? '', /NUL character \(U\+0000\)/);
        assert.equal(nul.status.jobName, undefined, 'no Job');

        const many = await s.waitTerminal('many');
        assert.equal(many.status.phase, 'Succeeded', JSON.stringify(many.status));

        // 1.4 MiB of prompt: over what a run takes (900 KiB), refused at Pending with its size.
        const near = await s.waitTerminal('near-limit');
        assert.equal(near.status.phase, 'Failed');
        assert.match(near.status.failureReason ?? '', /prompt .*(KiB|bytes).*900/i);
        assert.equal(near.status.jobName, undefined, 'no Job');

        const deep = await s.waitTerminal('deep');
        assert.ok(
          deep.status.phase === 'Succeeded' || /schema/.test(deep.status.failureReason ?? ''),
          JSON.stringify(deep.status),
        );

        const full = await s.waitTerminal('full');
        assert.equal(full.status.phase, 'Succeeded', JSON.stringify(full.status));

        for (const n of edited) {
          const a = await s.waitTerminal(n);
          assert.equal(a.status.phase, 'Succeeded', `${n}: ${JSON.stringify(a.status)}`);
        }
        // Every run made exactly one Job, and the deleted Agents' Jobs went with them.
        await pollUntil(
          async (observe) => {
            const { items } = await s.client.list(apiPath('batch/v1', 'jobs', { namespace: s.ns }));
            const names = items.map((j) => j.metadata?.name ?? '');
            observe(names);
            return names.some((n) => n.startsWith('agent-job-doomed')) ? undefined : names;
          },
          { timeoutMs: 60_000, description: "the deleted Agents' Jobs gone" },
        );
        for (const n of doomed) assert.equal(await s.agent(n), undefined, `${n} deleted`);

        assert.equal(ctl.running, true, 'the controller is still running');
        const bad = ctl.lines.filter((l) => l.level === 'error' || /unhandled|crash/i.test(l.msg));
        assert.deepEqual(bad, [], 'no error logged');
      }),
  );
});
