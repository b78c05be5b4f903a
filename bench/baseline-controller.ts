// The benchmark's baseline (issue 15 §1): the controller a TypeScript user would write with
// `@kubernetes/client-node` 1.4 informers, doing the same minimal lifecycle as ours: a Pending Agent gets its Job
// (built by the same builder, so the pods are identical) and is marked Running; when the Job finishes the Agent gets
// Succeeded or Failed with the agent container's exit code and log tail. No work queue, no admission, no retries:
// each informer event is handled as it arrives, with the library's generated API clients. It serves
// prom-client's default process metrics on /metrics so the benchmark samples it like ours.
//
//   KUBECONFIG=… node --import tsx bench/baseline-controller.ts --namespace NS --port 0 --agent-image IMAGE
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { parseAgent, parseAgentDefinition, parseStation } from '../src/api/index.ts';
import { buildJob, buildRunInput, capOutput } from '../src/jobs/index.ts';

const { values } = parseArgs({
  options: {
    namespace: { type: 'string' },
    port: { type: 'string', default: '0' },
    'agent-image': { type: 'string', default: 'agent-controller:e2e' },
  },
});
const namespace = values.namespace ?? 'default';
const agentImage = values['agent-image'] ?? 'agent-controller:e2e';
const GROUP = 'agents.re-cinq.com';
const VERSION = 'v1alpha1';

const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const custom = kc.makeApiClient(k8s.CustomObjectsApi);
const batch = kc.makeApiClient(k8s.BatchV1Api);
const core = kc.makeApiClient(k8s.CoreV1Api);
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

const registry = new Registry();
collectDefaultMetrics({ register: registry });
const jobsCreated = new Counter({
  name: 'controller_jobs_created_total',
  help: 'Jobs created',
  registers: [registry],
});
const statusPatches = new Counter({
  name: 'controller_status_patches_total',
  help: 'Agent status patches accepted',
  registers: [registry],
});
const isLeader = new Gauge({ name: 'controller_is_leader', help: 'always 1', registers: [registry] });

type Obj = k8s.KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
const started = new Set<string>();
const finished = new Set<string>();

const log = (msg: string, extra: Record<string, unknown> = {}): void =>
  void process.stderr.write(
    `${JSON.stringify({ ts: new Date().toISOString(), level: 'info', msg, ...extra })}\n`,
  );

async function patchStatus(name: string, status: Record<string, unknown>): Promise<void> {
  await custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: VERSION, namespace, plural: 'agents', name, body: { status } },
    mergePatch,
  );
  statusPatches.inc();
}

async function startRun(raw: Obj): Promise<void> {
  const agent = parseAgent(raw);
  if (!agent.ok || agent.value.status.phase !== 'Pending') return;
  const name = agent.value.metadata.name;
  if (started.has(name)) return;
  started.add(name);
  const stationRaw = await custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: 'stations',
    name: agent.value.spec.stationRef,
  });
  const station = parseStation(stationRaw);
  if (!station.ok) return;
  const definition = parseAgentDefinition(
    await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: 'agentdefinitions',
      name: station.value.spec.agentDefRef,
    }),
  );
  if (!definition.ok) return;
  const now = new Date();
  const runInput = {
    agent: agent.value,
    station: station.value,
    definition: definition.value,
    agentImage,
    now,
  };
  const job = buildJob(runInput);
  if (!job.ok) return;
  try {
    // The run's input ConfigMap (the prompt), which the Job's pod mounts.
    await core.createNamespacedConfigMap({
      namespace,
      body: buildRunInput(runInput) as unknown as k8s.V1ConfigMap,
    });
  } catch (error) {
    if ((error as { code?: number }).code !== 409) throw error;
  }
  try {
    await batch.createNamespacedJob({ namespace, body: job.value as unknown as k8s.V1Job });
    jobsCreated.inc();
  } catch (error) {
    if ((error as { code?: number }).code !== 409) throw error;
  }
  await patchStatus(name, {
    phase: 'Running',
    jobName: job.value.metadata.name,
    startedAt: now.toISOString(),
  });
}

async function finishRun(job: k8s.V1Job): Promise<void> {
  const owner = job.metadata?.ownerReferences?.find((o) => o.controller === true && o.kind === 'Agent');
  const verdict = job.status?.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
  if (owner === undefined || verdict === undefined || finished.has(owner.name)) return;
  finished.add(owner.name);
  const pods = await core.listNamespacedPod({ namespace, labelSelector: `job-name=${job.metadata?.name}` });
  const pod = pods.items[0];
  const agentStatus = pod?.status?.containerStatuses?.find((c) => c.name === 'agent');
  const exitCode = agentStatus?.state?.terminated?.exitCode ?? (verdict.type === 'Complete' ? 0 : 1);
  let output = '';
  if (pod?.metadata?.name !== undefined) {
    output = await core
      .readNamespacedPodLog({ namespace, name: pod.metadata.name, container: 'agent', tailLines: 10000 })
      .catch(() => '');
  }
  await patchStatus(owner.name, {
    phase: verdict.type === 'Complete' ? 'Succeeded' : 'Failed',
    exitCode,
    output: capOutput(output, 262144),
    completedAt: new Date().toISOString(),
  });
}

const agents = k8s.makeInformer<Obj>(kc, `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/agents`, () =>
  custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'agents' }),
);
const jobs = k8s.makeInformer<k8s.V1Job>(
  kc,
  `/apis/batch/v1/namespaces/${namespace}/jobs`,
  () => batch.listNamespacedJob({ namespace, labelSelector: 'agents.re-cinq.com/component=job' }),
  'agents.re-cinq.com/component=job',
);
const onError = (what: string) => (error: unknown) => {
  log(`${what} failed`, { error: String(error) });
};
agents.on('add', (a) => void startRun(a).catch(onError('start')));
agents.on('update', (a) => void startRun(a).catch(onError('start')));
jobs.on('add', (j) => void finishRun(j).catch(onError('finish')));
jobs.on('update', (j) => void finishRun(j).catch(onError('finish')));
for (const inf of [agents, jobs]) {
  inf.on('error', (error: unknown) => {
    log('informer error, restarting in 1 s', { error: String(error) });
    setTimeout(() => void inf.start(), 1000);
  });
}

await Promise.all([agents.start(), jobs.start()]);
isLeader.set(1);
const server = createServer((req, res) => {
  if (req.url === '/metrics') {
    void registry.metrics().then((body) => {
      res.writeHead(200, { 'content-type': registry.contentType });
      res.end(body);
    });
    return;
  }
  res.writeHead(req.url === '/healthz' || req.url === '/readyz' ? 200 : 404);
  res.end('ok');
});
server.listen(Number(values.port), '127.0.0.1', () => {
  const address = server.address();
  log('Serving health and metrics', { port: typeof address === 'object' && address ? address.port : 0 });
});
const stop = (): void => {
  agents.stop();
  jobs.stop();
  server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
