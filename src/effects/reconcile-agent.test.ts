import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, parseAgent } from '../api/index.ts';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import {
  type EventNote,
  type EventRecorder,
  type InvolvedObject,
  type KubeObject,
  objectKey,
} from '../kube/index.ts';
import { type ControllerMetrics, createControllerMetrics } from '../metrics/index.ts';
import { STALE_RUN_OBJECT_RETRY_MS } from '../reconcile/agent/found.ts';
import { MAX_MEMORY_WRITES } from '../reconcile/agent/memory.ts';
import {
  FAILURE_JOB_GONE,
  FAILURE_MISSING_REF,
  failureInput,
  failureNotOwned,
  failureOutputUnavailable,
  failureRejected,
  REASON,
  StationBook,
} from '../reconcile/index.ts';
import { Store, type WorkResult } from '../runtime/index.ts';
import { createLogger } from '../shared/log.ts';
import { MAX_ROUNDS, NOT_LEADING_RECHECK_MS, type ReconcileDeps, reconcileAgent } from './reconcile-agent.ts';

const NS = 'team';
const GROUP_PATH = `/apis/agents.re-cinq.com/v1alpha1/namespaces/${NS}`;
const STATION_PATH = `${GROUP_PATH}/stations/stn`;
const DEFINITION_PATH = `${GROUP_PATH}/agentdefinitions/def`;
const JOBS_PATH = `/apis/batch/v1/namespaces/${NS}/jobs`;
const JOB_PATH = `${JOBS_PATH}/agent-job-a1`;
const CONFIG_MAPS_PATH = `/api/v1/namespaces/${NS}/configmaps`;
const INPUT_PATH = `${CONFIG_MAPS_PATH}/agent-job-a1-input`;
const PODS_PATH = `/api/v1/namespaces/${NS}/pods`;
const POD_NAME = 'agent-job-a1-x7k2p';
const LOG_PATH = `${PODS_PATH}/${POD_NAME}/log`;
const agentPath = (name: string): string => `${GROUP_PATH}/agents/${name}`;
const STATUS_PATH = `${agentPath('a1')}/status`;

const NOW = new Date('2025-03-01T12:01:00.000Z');
const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: true, pollMs: 60000 },
  realtime: { enabled: true },
};

const status = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});
const notFound = (what: string): FakeReply => ({
  status: 404,
  body: status(404, 'NotFound', `${what} not found`),
});
const internal: FakeReply = { status: 500, body: status(500, 'InternalError', 'etcdserver: leader changed') };
const conflict: FakeReply = {
  status: 409,
  body: status(
    409,
    'Conflict',
    'the object has been modified; please apply your changes to the latest version',
  ),
};

const meta = (name: string, o: { rv?: string; uid?: string; created?: string } = {}) => ({
  name,
  namespace: NS,
  uid: o.uid ?? `uid-${name}`,
  resourceVersion: o.rv ?? '10',
  generation: 1,
  creationTimestamp: o.created ?? '2025-03-01T12:00:00Z',
  managedFields: [{ manager: 'kubectl', operation: 'Update' }],
});

// Raw objects as the API server returns them (and as the informers cache them).
function rawAgent(
  name: string,
  o: { status?: Record<string, unknown>; rv?: string; created?: string; deleting?: boolean } = {},
): KubeObject {
  return {
    apiVersion: 'agents.re-cinq.com/v1alpha1',
    kind: 'Agent',
    metadata: {
      ...meta(name, { rv: o.rv ?? `rv-${name}`, ...(o.created !== undefined ? { created: o.created } : {}) }),
      ...(o.deleting ? { deletionTimestamp: '2025-03-01T12:00:30Z', finalizers: ['keep'] } : {}),
    },
    spec: { stationRef: 'stn', parameters: { thing: 'stuff' } },
    ...(o.status !== undefined ? { status: o.status } : {}),
  };
}
const RUNNING_STATUS = {
  phase: 'Running',
  jobName: 'agent-job-a1',
  startedAt: '2025-03-01T12:00:01.000Z',
  observedGeneration: 1,
  conditions: [
    {
      type: 'Ready',
      status: 'False',
      reason: 'Running',
      message: 'Job agent-job-a1 is running',
      lastTransitionTime: '2025-03-01T12:00:01Z',
      observedGeneration: 1,
    },
  ],
};
const rawStation = (spec: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'agents.re-cinq.com/v1alpha1',
  kind: 'Station',
  metadata: meta('stn', { created: '2025-03-01T11:00:00Z' }),
  spec: {
    agentDefRef: 'def',
    template: { spec: { containers: [{ name: 'agent', image: 'busybox' }] } },
    ...spec,
  },
});
const rawDefinition = (spec: Record<string, unknown> = { prompt: 'Do {thing}' }): KubeObject => ({
  apiVersion: 'agents.re-cinq.com/v1alpha1',
  kind: 'AgentDefinition',
  metadata: meta('def', { created: '2025-03-01T11:00:00Z' }),
  spec,
});
function rawJob(
  o: { owner?: { name: string; uid: string } | null; status?: Record<string, unknown> } = {},
): KubeObject {
  const owner = o.owner === undefined ? { name: 'a1', uid: 'uid-a1' } : o.owner;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      ...meta('agent-job-a1', { rv: '70', uid: 'uid-job-a1', created: '2025-03-01T12:00:05Z' }),
      labels: { 'agents.re-cinq.com/component': 'job' },
      ...(owner === null
        ? {}
        : {
            ownerReferences: [
              {
                apiVersion: 'agents.re-cinq.com/v1alpha1',
                kind: 'Agent',
                name: owner.name,
                uid: owner.uid,
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          }),
    },
    spec: { backoffLimit: 0, activeDeadlineSeconds: 1800, template: { spec: { containers: [] } } },
    status: o.status ?? { active: 1, startTime: '2025-03-01T12:00:05Z' },
  };
}
const COMPLETE = {
  succeeded: 1,
  startTime: '2025-03-01T12:00:05Z',
  completionTime: '2025-03-01T12:00:50Z',
  conditions: [
    { type: 'SuccessCriteriaMet', status: 'True', reason: 'CompletionsReached' },
    { type: 'Complete', status: 'True', reason: 'CompletionsReached' },
  ],
};
const podList = (exitCode: number) => ({
  kind: 'PodList',
  apiVersion: 'v1',
  metadata: { resourceVersion: '1234' },
  items: [
    {
      metadata: {
        ...meta(POD_NAME, { rv: '90', created: '2025-03-01T12:00:06Z' }),
        labels: { 'job-name': 'agent-job-a1' },
      },
      spec: { containers: [{ name: 'agent', image: 'busybox' }] },
      status: {
        phase: exitCode === 0 ? 'Succeeded' : 'Failed',
        containerStatuses: [{ name: 'agent', state: { terminated: { exitCode, reason: 'Completed' } } }],
      },
    },
  ],
});

type Router = (req: FakeRequest) => FakeReply | undefined;

/** Answers writes as the API server would on success; everything else is left to the test's router. */
const writesSucceed: Router = (req) => {
  if (
    req.method === 'POST' &&
    (req.path.endsWith('/networkpolicies') || req.path.endsWith('/serviceaccounts'))
  ) {
    const body = req.body as { metadata: Record<string, unknown> };
    return {
      status: 201,
      body: { ...body, metadata: { ...body.metadata, uid: 'uid-np', resourceVersion: '70' } },
    };
  }
  if (req.method === 'POST' && req.path === CONFIG_MAPS_PATH) {
    const body = req.body as { metadata: Record<string, unknown> };
    return {
      status: 201,
      body: { ...body, metadata: { ...body.metadata, uid: 'uid-input', resourceVersion: '69' } },
    };
  }
  if (req.method === 'POST' && req.path === JOBS_PATH) {
    const body = req.body as { metadata: Record<string, unknown> };
    return {
      status: 201,
      body: {
        ...body,
        metadata: {
          ...body.metadata,
          uid: 'uid-new-job',
          resourceVersion: '71',
          creationTimestamp: NOW.toISOString(),
        },
      },
    };
  }
  if (req.method === 'PATCH' && req.path.endsWith('/status')) {
    return {
      status: 200,
      body: rawAgent('a1', {
        rv: 'rv-next',
        status: (req.body as { status: object }).status as Record<string, unknown>,
      }),
    };
  }
  if (req.method === 'DELETE') return { status: 200, body: status(200, '', '') };
  if (req.method === 'POST' && req.path.endsWith('/events')) return { status: 201, body: {} };
  return undefined;
};

interface Harness {
  readonly deps: ReconcileDeps;
  /** Every request but the run ServiceAccount and NetworkPolicy POSTs (which come with every Job; tested below). */
  readonly requests: FakeRequest[];
  /** Every request, in order. */
  readonly allRequests: FakeRequest[];
  readonly events: { obj: InvolvedObject; note: EventNote }[];
  readonly metrics: ControllerMetrics;
  run(key?: string): Promise<WorkResult>;
  /** Requests as `METHOD path`. */
  calls(): string[];
  /** The body of the one status patch sent. */
  patched(): Record<string, unknown>;
}

function harness(
  o: {
    agents?: KubeObject[];
    stations?: KubeObject[];
    definitions?: KubeObject[];
    jobs?: KubeObject[];
    router?: Router;
  } = {},
): Harness {
  const store = (items: KubeObject[] = []) => {
    const s = new Store<KubeObject>();
    s.replace(items);
    return s;
  };
  const router = o.router ?? (() => undefined);
  const transport = createFakeTransport({
    request: (req) => router(req) ?? writesSucceed(req) ?? notFound(`unscripted ${req.method} ${req.path}`),
  });
  const events: { obj: InvolvedObject; note: EventNote }[] = [];
  const recorder: EventRecorder = {
    record: async (obj, note) => {
      events.push({ obj, note });
    },
  };
  const metrics = createControllerMetrics(false);
  // The book as the controller feeds it: every parseable cached Agent, and the Jobs they own.
  const book = new StationBook<Agent>();
  for (const raw of o.agents ?? []) {
    const p = parseAgent(raw);
    if (p.ok) book.upsert(objectKey(raw), p.value);
  }
  for (const j of o.jobs ?? []) {
    const owner = (j.metadata.ownerReferences ?? []).find((r) => r.controller === true);
    if (owner !== undefined) book.jobSeen(objectKey(j), owner.uid);
  }
  const deps: ReconcileDeps = {
    transport,
    book,
    stations: store(o.stations),
    definitions: store(o.definitions),
    jobs: store(o.jobs),
    events: recorder,
    metrics,
    logger: createLogger('error', () => {}),
    options: OPTIONS,
    now: () => NOW,
    timeoutMs: 1000,
  };
  const isPolicyPost = (r: FakeRequest) =>
    r.method === 'POST' && (r.path.endsWith('/networkpolicies') || r.path.endsWith('/serviceaccounts'));
  const requests = new Proxy(transport.requests, {
    get(target, prop, receiver) {
      const view = target.filter((r) => !isPolicyPost(r));
      return Reflect.get(view, prop, receiver === target ? view : receiver);
    },
  });
  return {
    deps,
    requests,
    allRequests: transport.requests,
    events,
    metrics,
    run: (key = `${NS}/a1`) => reconcileAgent(key, deps),
    calls: () => transport.requests.filter((r) => !isPolicyPost(r)).map((r) => `${r.method} ${r.path}`),
    patched() {
      const patches = transport.requests.filter((r) => r.method === 'PATCH' && r.path === STATUS_PATH);
      assert.equal(patches.length, 1, 'exactly one status patch');
      return (patches[0]?.body ?? {}) as Record<string, unknown>;
    },
  };
}

const statusOf = (body: Record<string, unknown>) => body.status as Record<string, unknown>;

async function counter(metrics: ControllerMetrics, name: string, labels = ''): Promise<number | undefined> {
  const text = await metrics.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

const PENDING_WORLD = {
  stations: [rawStation()],
  definitions: [rawDefinition()],
};

describe('reconcileAgent', () => {
  it('an unknown key → done, no request, no event', async () => {
    const h = harness({ ...PENDING_WORLD, agents: [rawAgent('other')] });
    assert.deepEqual(await h.run(`${NS}/a1`), { kind: 'done' });
    assert.deepEqual(h.calls(), []);
    assert.deepEqual(h.events, []);
  });

  it('an Agent that does not parse (the informer skips it, so the book never has it) → done, no request', async () => {
    const broken = { ...rawAgent('a1'), spec: { stationRef: 7 } };
    const h = harness({ agents: [broken] });
    assert.deepEqual(await h.run(), { kind: 'done' });
    assert.deepEqual(h.calls(), []);
  });

  for (const phase of ['Succeeded', 'Failed']) {
    it(`a ${phase} Agent → done with no request at all (not even reference lookups)`, async () => {
      // Nothing is cached: any lookup would show up as a live GET.
      const h = harness({
        agents: [
          rawAgent('a1', {
            status: { phase, jobName: 'agent-job-a1', completedAt: '2025-03-01T12:00:40Z', exitCode: 0 },
          }),
        ],
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.calls(), []);
      assert.deepEqual(h.events, []);
    });
  }

  it('an Agent being deleted → no writes', async () => {
    const h = harness({ ...PENDING_WORLD, agents: [rawAgent('a1', { deleting: true })] });
    const result = await h.run();
    assert.notEqual(result.kind, 'retry');
    assert.deepEqual(
      h.requests.filter((r) => r.method !== 'GET'),
      [],
    );
    assert.deepEqual(h.events, []);
  });

  it('an Agent this replica deleted (its cache not caught up yet) → done, nothing created (found by the chaos run)', async () => {
    const h = harness({ ...PENDING_WORLD, agents: [rawAgent('a1')] });
    const tombstones = { add: () => {}, remove: () => {}, has: (uid: string) => uid === 'uid-a1' };
    const result = await reconcileAgent(`${NS}/a1`, { ...h.deps, tombstones });
    assert.deepEqual(result, { kind: 'done' });
    assert.deepEqual(h.calls(), []);
  });

  it('a successful status patch hands the Agent the API server returned to onAgentWritten (read your writes)', async () => {
    const h = harness({ ...PENDING_WORLD, agents: [rawAgent('a1')] });
    const written: unknown[] = [];
    await reconcileAgent(`${NS}/a1`, { ...h.deps, onAgentWritten: (a) => written.push(a) });
    assert.equal(written.length, 1);
    assert.equal((written[0] as { kind?: string; metadata?: { name?: string } }).metadata?.name, 'a1');
  });

  describe('Pending', () => {
    it('Station and AgentDefinition cached → POST Job, then PATCH status Running with jobName; requeueAfter', async () => {
      const h = harness({ ...PENDING_WORLD, agents: [rawAgent('a1')] });
      const result = await h.run();
      assert.deepEqual(result, { kind: 'requeueAfter', ms: OPTIONS.requeueMs });
      assert.deepEqual(h.calls(), [`POST ${CONFIG_MAPS_PATH}`, `POST ${JOBS_PATH}`, `PATCH ${STATUS_PATH}`]);
      const job = h.requests[1]?.body as { metadata: Record<string, unknown>; kind: string };
      assert.equal(job.kind, 'Job');
      assert.equal(job.metadata.name, 'agent-job-a1');
      assert.deepEqual(
        (job.metadata.ownerReferences as { uid: string; controller: boolean }[]).map((r) => [
          r.uid,
          r.controller,
        ]),
        [['uid-a1', true]],
      );
      const body = h.patched();
      assert.deepEqual(body.metadata, { resourceVersion: 'rv-a1' });
      const s = statusOf(body);
      assert.equal(s.phase, 'Running');
      assert.equal(s.jobName, 'agent-job-a1');
      assert.equal(s.startedAt, NOW.toISOString());
      assert.equal(h.requests[2]?.query.fieldManager, 'agent-controller');
      assert.deepEqual(
        h.events.map((e) => [e.note.type, e.note.reason, e.obj.metadata.name]),
        [['Normal', REASON.started, 'a1']],
      );
      assert.equal(await counter(h.metrics, 'controller_jobs_created_total'), 1);
      assert.equal(await counter(h.metrics, 'controller_status_patches_total'), 1);
      assert.equal(await counter(h.metrics, 'controller_run_queue_seconds_count'), 1);
    });

    it('the run ServiceAccount and NetworkPolicy are POSTed right before its Job, named like it', async () => {
      const h = harness({ ...PENDING_WORLD, agents: [rawAgent('a1')] });
      await h.run();
      const writes = h.allRequests.filter((r) => r.method === 'POST');
      assert.deepEqual(
        writes.map((r) => [r.path, (r.body as { metadata: { name: string } }).metadata.name]),
        [
          [`/api/v1/namespaces/${NS}/serviceaccounts`, 'agent-job-a1'],
          [`/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`, 'agent-job-a1'],
          [CONFIG_MAPS_PATH, 'agent-job-a1-input'],
          [JOBS_PATH, 'agent-job-a1'],
        ],
      );
      const job = writes[3]?.body as { spec: { template: { spec: Record<string, unknown> } } };
      assert.equal(
        job.spec.template.spec.serviceAccountName,
        'agent-job-a1',
        'the pod runs as the run’s own account',
      );
    });

    it('a refused ServiceAccount (403) fails the Agent with an actionable reason, and no Job is created', async () => {
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) =>
          req.method === 'POST' && req.path.endsWith('/serviceaccounts')
            ? { status: 403, body: status(403, 'Forbidden', 'serviceaccounts is forbidden') }
            : undefined,
      });
      await h.run();
      assert.ok(!h.allRequests.some((r) => r.method === 'POST' && r.path === JOBS_PATH), 'no Job');
      const st = statusOf(h.patched());
      assert.equal(st.phase, 'Failed');
      assert.match(
        String(st.failureReason),
        /^the run's ServiceAccount could not be created \(api 403 Forbidden: serviceaccounts is forbidden\); the controller needs serviceaccounts create/,
      );
    });

    it('the run input ConfigMap is POSTed right before its Job: <run>-input, owned, immutable, prompt and ids', async () => {
      const h = harness({ ...PENDING_WORLD, agents: [rawAgent('a1')] });
      await h.run();
      const post = h.requests.find((r) => r.method === 'POST' && r.path === CONFIG_MAPS_PATH);
      assert.ok(post);
      assert.equal(post.query.fieldManager, 'agent-controller');
      const cm = post.body as {
        apiVersion: string;
        kind: string;
        metadata: {
          name: string;
          namespace: string;
          ownerReferences: { uid: string; controller: boolean }[];
        };
        immutable: boolean;
        data: Record<string, string>;
      };
      assert.deepEqual(
        [cm.apiVersion, cm.kind, cm.metadata.name, cm.metadata.namespace, cm.immutable],
        ['v1', 'ConfigMap', 'agent-job-a1-input', NS, true],
      );
      assert.deepEqual(
        cm.metadata.ownerReferences.map((r) => [r.uid, r.controller]),
        [['uid-a1', true]],
      );
      assert.equal(cm.data.prompt, 'Do stuff');
      assert.deepEqual(JSON.parse(cm.data['run.json'] ?? ''), {
        namespace: NS,
        agent: 'a1',
        uid: 'uid-a1',
        station: 'stn',
        definition: 'def',
        job: 'agent-job-a1',
        model: 'claude-opus-5-5',
      });
      const job = h.requests.find((r) => r.method === 'POST' && r.path === JOBS_PATH)?.body as {
        spec: { template: { spec: { volumes: { name: string; configMap?: { name: string } }[] } } };
      };
      assert.equal(
        job.spec.template.spec.volumes.find((v) => v.name === 'run-input')?.configMap?.name,
        'agent-job-a1-input',
        'the Job mounts it',
      );
    });

    it('a refused input ConfigMap (403) fails the Agent with failureInput (BuildFailed), and no Job is created', async () => {
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) =>
          req.method === 'POST' && req.path === CONFIG_MAPS_PATH
            ? { status: 403, body: status(403, 'Forbidden', 'configmaps is forbidden') }
            : undefined,
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.calls(), [`POST ${CONFIG_MAPS_PATH}`, `PATCH ${STATUS_PATH}`]);
      const st = statusOf(h.patched());
      assert.equal(st.phase, 'Failed');
      assert.equal(
        st.failureReason,
        failureInput(`ConfigMap ${NS}/agent-job-a1-input: api 403 Forbidden: configmaps is forbidden`),
      );
      assert.equal(st.jobName, undefined);
      assert.deepEqual(
        (st.conditions as { type: string; reason: string }[]).find((c) => c.type === 'Failed')?.reason,
        REASON.buildFailed,
      );
      assert.deepEqual(
        h.events.map((e) => [e.note.type, e.note.reason]),
        [['Warning', REASON.buildFailed]],
      );
      assert.equal(await counter(h.metrics, 'controller_run_failures_total', '{kind="build_error"}'), 1);
      assert.equal(await counter(h.metrics, 'controller_jobs_created_total'), 0);
    });

    it('input ConfigMap POST 409, ours with the same data (a retried start) → the Job is still created', async () => {
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) => {
          if (req.method === 'POST' && req.path === CONFIG_MAPS_PATH) {
            return {
              status: 409,
              body: status(409, 'AlreadyExists', 'configmaps "agent-job-a1-input" exists'),
            };
          }
          if (req.method === 'GET' && req.path === INPUT_PATH) {
            const posted = h.requests.find((r) => r.method === 'POST' && r.path === CONFIG_MAPS_PATH)
              ?.body as { metadata: Record<string, unknown> };
            return {
              status: 200,
              body: { ...posted, metadata: { ...posted.metadata, uid: 'uid-input', resourceVersion: '5' } },
            };
          }
          return undefined;
        },
      });
      assert.deepEqual(await h.run(), { kind: 'requeueAfter', ms: OPTIONS.requeueMs });
      assert.deepEqual(h.calls(), [
        `POST ${CONFIG_MAPS_PATH}`,
        `GET ${INPUT_PATH}`,
        `POST ${JOBS_PATH}`,
        `PATCH ${STATUS_PATH}`,
      ]);
      assert.equal(statusOf(h.patched()).phase, 'Running');
    });

    it('input ConfigMap POST 409, left by an earlier Agent of the same name → reported, decide waits it out: no Job, no status', async () => {
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) => {
          if (req.method === 'POST' && req.path === CONFIG_MAPS_PATH) {
            return {
              status: 409,
              body: status(409, 'AlreadyExists', 'configmaps "agent-job-a1-input" exists'),
            };
          }
          if (req.method === 'GET' && req.path === INPUT_PATH) {
            const posted = h.requests.find((r) => r.method === 'POST' && r.path === CONFIG_MAPS_PATH)
              ?.body as { metadata: { ownerReferences: Record<string, unknown>[] } };
            return {
              status: 200,
              body: {
                ...posted,
                metadata: {
                  ...posted.metadata,
                  uid: 'uid-old-input',
                  ownerReferences: [{ ...posted.metadata.ownerReferences[0], uid: 'uid-previous' }],
                },
              },
            };
          }
          return undefined;
        },
      });
      assert.deepEqual(await h.run(), { kind: 'requeueAfter', ms: STALE_RUN_OBJECT_RETRY_MS });
      assert.deepEqual(h.calls(), [`POST ${CONFIG_MAPS_PATH}`, `GET ${INPUT_PATH}`]);
      assert.deepEqual(h.events, []);
    });

    it('input ConfigMap POST 409, this run’s with other data → decide deletes it (uid precondition), creates it again, then the Job', async () => {
      let posts = 0;
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) => {
          if (req.method === 'POST' && req.path === CONFIG_MAPS_PATH && posts++ === 0)
            return {
              status: 409,
              body: status(409, 'AlreadyExists', 'configmaps "agent-job-a1-input" exists'),
            };
          if (req.method === 'GET' && req.path === INPUT_PATH) {
            const posted = h.requests.find((r) => r.method === 'POST' && r.path === CONFIG_MAPS_PATH)
              ?.body as { metadata: Record<string, unknown> };
            return {
              status: 200,
              body: {
                ...posted,
                metadata: { ...posted.metadata, uid: 'uid-old-input' },
                data: { prompt: 'older' },
              },
            };
          }
          return undefined;
        },
      });
      assert.equal((await h.run()).kind, 'requeueAfter');
      assert.deepEqual(h.calls().slice(0, 5), [
        `POST ${CONFIG_MAPS_PATH}`,
        `GET ${INPUT_PATH}`,
        `DELETE ${INPUT_PATH}`,
        `POST ${CONFIG_MAPS_PATH}`,
        `POST ${JOBS_PATH}`,
      ]);
      const del = h.requests.find((r) => r.method === 'DELETE');
      assert.deepEqual((del?.body as { preconditions?: unknown } | undefined)?.preconditions, {
        uid: 'uid-old-input',
      });
    });

    it('Station and AgentDefinition not cached → confirmed by live GETs first', async () => {
      const h = harness({
        agents: [rawAgent('a1')],
        router: (req) => {
          if (req.method === 'GET' && req.path === STATION_PATH) return { status: 200, body: rawStation() };
          if (req.method === 'GET' && req.path === DEFINITION_PATH)
            return { status: 200, body: rawDefinition() };
          return undefined;
        },
      });
      assert.deepEqual(await h.run(), { kind: 'requeueAfter', ms: OPTIONS.requeueMs });
      assert.deepEqual(h.calls(), [
        `GET ${STATION_PATH}`,
        `GET ${DEFINITION_PATH}`,
        `POST ${CONFIG_MAPS_PATH}`,
        `POST ${JOBS_PATH}`,
        `PATCH ${STATUS_PATH}`,
      ]);
      assert.equal(statusOf(h.patched()).phase, 'Running');
    });

    const missing: { name: string; cached: object; router: Router; calls: string[] }[] = [
      {
        name: 'Station 404',
        cached: { definitions: [rawDefinition()] },
        router: (req) => (req.path === STATION_PATH ? notFound('station') : undefined),
        calls: [`GET ${STATION_PATH}`, `PATCH ${STATUS_PATH}`],
      },
      {
        name: 'AgentDefinition 404',
        cached: { stations: [rawStation()] },
        router: (req) => (req.path === DEFINITION_PATH ? notFound('agentdefinition') : undefined),
        calls: [`GET ${DEFINITION_PATH}`, `PATCH ${STATUS_PATH}`],
      },
    ];
    for (const m of missing) {
      it(`${m.name} → Failed "${FAILURE_MISSING_REF}", no Job POST, done`, async () => {
        const h = harness({ ...m.cached, agents: [rawAgent('a1')], router: m.router });
        assert.deepEqual(await h.run(), { kind: 'done' });
        assert.deepEqual(h.calls(), m.calls);
        const s = statusOf(h.patched());
        assert.equal(s.phase, 'Failed');
        assert.equal(s.failureReason, FAILURE_MISSING_REF);
        assert.equal(s.completedAt, NOW.toISOString());
        assert.equal(s.exitCode, undefined);
        assert.equal(s.jobName, undefined);
        assert.deepEqual(
          h.events.map((e) => [e.note.type, e.note.reason]),
          [['Warning', REASON.missingReference]],
        );
        assert.equal(await counter(h.metrics, 'controller_run_failures_total', '{kind="missing_ref"}'), 1);
        assert.equal(await counter(h.metrics, 'controller_jobs_created_total'), 0);
      });
    }

    const readErrors: { name: string; cached: object; router: Router; calls: string[] }[] = [
      {
        name: 'Station read 500',
        cached: { definitions: [rawDefinition()] },
        router: (req) => (req.path === STATION_PATH ? internal : undefined),
        calls: [`GET ${STATION_PATH}`],
      },
      {
        name: 'Station read network failure',
        cached: { definitions: [rawDefinition()] },
        router: (req) =>
          req.path === STATION_PATH ? { error: { kind: 'network', message: 'ECONNREFUSED' } } : undefined,
        calls: [`GET ${STATION_PATH}`],
      },
      {
        name: 'AgentDefinition read 500',
        cached: { stations: [rawStation()] },
        router: (req) => (req.path === DEFINITION_PATH ? internal : undefined),
        calls: [`GET ${DEFINITION_PATH}`],
      },
    ];
    for (const r of readErrors) {
      it(`${r.name} → retry, no writes, no events`, async () => {
        const h = harness({ ...r.cached, agents: [rawAgent('a1')], router: r.router });
        const result = await h.run();
        assert.equal(result.kind, 'retry');
        assert.deepEqual(h.calls(), r.calls);
        assert.deepEqual(h.events, []);
      });
    }

    it('an invalid Station → Failed with the parse message, no Job POST', async () => {
      const h = harness({
        stations: [rawStation({ deadlineMinutes: 'soon' })],
        definitions: [rawDefinition()],
        agents: [rawAgent('a1')],
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.calls(), [`PATCH ${STATUS_PATH}`]);
      const s = statusOf(h.patched());
      assert.equal(s.phase, 'Failed');
      assert.match(String(s.failureReason), /^Station stn is invalid: invalid Station: .*deadlineMinutes/);
    });

    it('Job POST 409 AlreadyExists, the Job is owned by this Agent → adopted (Running, startedAt = Job creation)', async () => {
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) => {
          if (req.method === 'POST' && req.path === JOBS_PATH) {
            return {
              status: 409,
              body: status(409, 'AlreadyExists', 'jobs.batch "agent-job-a1" already exists'),
            };
          }
          if (req.method === 'GET' && req.path === JOB_PATH) return { status: 200, body: rawJob() };
          return undefined;
        },
      });
      assert.deepEqual(await h.run(), { kind: 'requeueAfter', ms: OPTIONS.requeueMs });
      assert.deepEqual(h.calls(), [
        `POST ${CONFIG_MAPS_PATH}`,
        `POST ${JOBS_PATH}`,
        `GET ${JOB_PATH}`,
        `PATCH ${STATUS_PATH}`,
      ]);
      const s = statusOf(h.patched());
      assert.equal(s.phase, 'Running');
      assert.equal(s.jobName, 'agent-job-a1');
      assert.equal(s.startedAt, '2025-03-01T12:00:05.000Z');
      assert.deepEqual(
        h.events.map((e) => [e.note.reason, e.note.message]),
        [[REASON.started, 'Adopted existing Job agent-job-a1']],
      );
      assert.equal(await counter(h.metrics, 'controller_jobs_created_total'), 0);
    });

    const foreign: { name: string; owner: { name: string; uid: string } | null }[] = [
      { name: 'owned by another Agent', owner: { name: 'someone-else', uid: 'uid-someone-else' } },
      { name: 'without an owner', owner: null },
    ];
    for (const f of foreign) {
      it(`Job POST 409, the existing Job is ${f.name} → Failed (not owned), no retry`, async () => {
        const h = harness({
          ...PENDING_WORLD,
          agents: [rawAgent('a1')],
          router: (req) => {
            if (req.method === 'POST' && req.path === JOBS_PATH) {
              return { status: 409, body: status(409, 'AlreadyExists', 'already exists') };
            }
            if (req.method === 'GET' && req.path === JOB_PATH) {
              return { status: 200, body: rawJob({ owner: f.owner }) };
            }
            return undefined;
          },
        });
        assert.deepEqual(await h.run(), { kind: 'done' });
        assert.deepEqual(h.calls(), [
          `POST ${CONFIG_MAPS_PATH}`,
          `POST ${JOBS_PATH}`,
          `GET ${JOB_PATH}`,
          `PATCH ${STATUS_PATH}`,
        ]);
        const s = statusOf(h.patched());
        assert.equal(s.phase, 'Failed');
        assert.equal(s.failureReason, failureNotOwned('agent-job-a1'));
        assert.deepEqual(
          h.events.map((e) => [e.note.type, e.note.reason]),
          [['Warning', REASON.jobNotOwned]],
        );
      });
    }

    it('Job POST 409 but the Job is gone when read → bounded retries, then retry (no endless loop)', async () => {
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) => {
          if (req.method === 'POST' && req.path === JOBS_PATH) {
            return { status: 409, body: status(409, 'AlreadyExists', 'already exists') };
          }
          if (req.method === 'GET' && req.path === JOB_PATH) return notFound('job');
          return undefined;
        },
      });
      const result = await h.run();
      assert.equal(result.kind, 'retry');
      const posts = h.requests.filter((r) => r.method === 'POST' && r.path === JOBS_PATH).length;
      assert.ok(posts >= 2 && posts <= MAX_ROUNDS, `bounded POSTs, got ${posts}`);
      assert.equal(
        h.requests.filter((r) => r.method === 'POST' && r.path === CONFIG_MAPS_PATH).length,
        posts,
        'the input ConfigMap right before every Job POST',
      );
      assert.equal(h.requests.filter((r) => r.method === 'PATCH').length, 0);
    });

    it('Job POST 409, the Job vanished before it was read → created on the next round, Running', async () => {
      let posts = 0;
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) => {
          if (req.method === 'POST' && req.path === JOBS_PATH && posts++ === 0) {
            return { status: 409, body: status(409, 'AlreadyExists', 'already exists') };
          }
          if (req.method === 'GET' && req.path === JOB_PATH) return notFound('job');
          return undefined;
        },
      });
      assert.deepEqual(await h.run(), { kind: 'requeueAfter', ms: OPTIONS.requeueMs });
      assert.deepEqual(h.calls(), [
        `POST ${CONFIG_MAPS_PATH}`,
        `POST ${JOBS_PATH}`,
        `GET ${JOB_PATH}`,
        `POST ${CONFIG_MAPS_PATH}`,
        `POST ${JOBS_PATH}`,
        `PATCH ${STATUS_PATH}`,
      ]);
      assert.equal(statusOf(h.patched()).phase, 'Running');
      assert.equal(await counter(h.metrics, 'controller_jobs_created_total'), 1);
    });

    const rejected: { code: number; reason: string }[] = [
      { code: 422, reason: 'Invalid' },
      { code: 400, reason: 'BadRequest' },
    ];
    for (const r of rejected) {
      it(`Job POST ${r.code} → Failed with the API server's message`, async () => {
        const message = `Job.batch "agent-job-a1" is invalid: spec.template.spec.containers[0].image: Required value`;
        const h = harness({
          ...PENDING_WORLD,
          agents: [rawAgent('a1')],
          router: (req) =>
            req.method === 'POST' && req.path === JOBS_PATH
              ? { status: r.code, body: status(r.code, r.reason, message) }
              : undefined,
        });
        assert.deepEqual(await h.run(), { kind: 'done' });
        assert.deepEqual(h.calls(), [
          `POST ${CONFIG_MAPS_PATH}`,
          `POST ${JOBS_PATH}`,
          `PATCH ${STATUS_PATH}`,
        ]);
        const s = statusOf(h.patched());
        assert.equal(s.phase, 'Failed');
        assert.equal(s.failureReason, failureRejected(message));
        assert.equal(await counter(h.metrics, 'controller_run_failures_total', '{kind="build_error"}'), 1);
      });
    }

    it('Job POST 500 → retry, no status patch', async () => {
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) => (req.method === 'POST' && req.path === JOBS_PATH ? internal : undefined),
      });
      assert.equal((await h.run()).kind, 'retry');
      assert.deepEqual(h.calls(), [`POST ${CONFIG_MAPS_PATH}`, `POST ${JOBS_PATH}`]);
      assert.deepEqual(h.events, []);
    });

    it('status patch 409 after the Job was created → done (superseded, no retry), later actions dropped', async () => {
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) =>
          req.method === 'PATCH'
            ? { status: 409, body: status(409, 'Conflict', 'the object has been modified') }
            : undefined,
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.calls(), [`POST ${CONFIG_MAPS_PATH}`, `POST ${JOBS_PATH}`, `PATCH ${STATUS_PATH}`]);
      assert.deepEqual(h.events, []);
      assert.equal(await counter(h.metrics, 'controller_run_queue_seconds_count'), 0);
    });

    it('an admission holds the slot once its Job POST was sent, even when the POST failed (500)', async () => {
      const h = harness({
        ...PENDING_WORLD,
        agents: [rawAgent('a1')],
        router: (req) => (req.method === 'POST' && req.path === JOBS_PATH ? internal : undefined),
      });
      assert.equal((await h.run()).kind, 'retry');
      assert.equal(h.deps.book.placeOf(`${NS}/a1`), 'holding', 'the Job may exist: the slot stays taken');
    });

    it('after leadership ended no Job is created; the admission is given back', async () => {
      const h = harness({ ...PENDING_WORLD, agents: [rawAgent('a1')] });
      const result = await reconcileAgent(`${NS}/a1`, { ...h.deps, leading: () => false });
      // Looked at again shortly: should the Lease's renewal be confirmed after all, the run still starts.
      assert.deepEqual(result, { kind: 'requeueAfter', ms: NOT_LEADING_RECHECK_MS });
      // The fence is at the Job: the run's own objects before it (owned by the Agent, like its ServiceAccount and
      // NetworkPolicy) are still written, and a later leader finds them as this run's.
      assert.deepEqual(h.calls(), [`POST ${CONFIG_MAPS_PATH}`]);
      assert.equal(h.deps.book.placeOf(`${NS}/a1`), 'queued');
    });

    it('at the Station limit → Pending/Queued patch, no Job, no re-check timer (woken when a slot frees)', async () => {
      const h = harness({
        stations: [rawStation({ maxConcurrentRuns: 1 })],
        definitions: [rawDefinition()],
        agents: [
          rawAgent('a1', { created: '2025-03-01T12:00:10Z' }),
          rawAgent('busy', {
            created: '2025-03-01T11:59:00Z',
            status: { ...RUNNING_STATUS, jobName: 'agent-job-busy' },
          }),
        ],
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.calls(), [`PATCH ${STATUS_PATH}`]);
      const s = statusOf(h.patched());
      assert.equal(s.phase, 'Pending');
      assert.deepEqual(
        (s.conditions as { type: string; reason: string }[]).map((c) => [c.type, c.reason]),
        [['Ready', REASON.queued]],
      );
    });
  });

  describe('Running', () => {
    const runningAgent = () => rawAgent('a1', { status: RUNNING_STATUS });
    /** A Running Agent whose Job is Complete in the cache; its pod lists and its log reads `log`. */
    const finishedJobHarness = (log: string) =>
      harness({
        stations: [rawStation()],
        jobs: [rawJob({ status: COMPLETE })],
        agents: [runningAgent()],
        router: (req) => {
          if (req.method === 'GET' && req.path === PODS_PATH) return { status: 200, body: podList(0) };
          if (req.method === 'GET' && req.path === LOG_PATH) return { status: 200, body: log };
          return undefined;
        },
      });

    it('finished (Complete) Job in the cache → pod list + log read → Succeeded with the log as output', async () => {
      const h = finishedJobHarness('working…\nDONE: 42\n');
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.calls(), [`GET ${PODS_PATH}`, `GET ${LOG_PATH}`, `PATCH ${STATUS_PATH}`]);
      assert.equal(h.requests[0]?.query.labelSelector, 'job-name=agent-job-a1');
      assert.equal(h.requests[1]?.query.container, 'agent');
      assert.equal(h.requests[1]?.query.tailLines, '10000');
      const body = h.patched();
      assert.deepEqual(body.metadata, { resourceVersion: 'rv-a1' });
      const s = statusOf(body);
      assert.equal(s.phase, 'Succeeded');
      assert.equal(s.exitCode, 0);
      assert.equal(s.output, 'working…\nDONE: 42\n');
      assert.equal(s.completedAt, NOW.toISOString());
      assert.equal(s.failureReason, undefined);
      assert.deepEqual(
        h.events.map((e) => [e.note.type, e.note.reason]),
        [['Normal', REASON.succeeded]],
      );
      assert.equal(
        await counter(h.metrics, 'controller_runs_completed_total', '{phase="Succeeded",exit_code="0"}'),
        1,
      );
      assert.equal(
        await counter(h.metrics, 'controller_run_duration_seconds_count', '{phase="Succeeded"}'),
        1,
      );
    });

    it('a finished Job while this replica may not write (renewal unconfirmed) → nothing written, looked at again; then Succeeded', async () => {
      // Found by the chaos run: the Job finished while the API server restarted, the Lease's renew deadline passed,
      // the decision was dropped as "superseded" and the key forgotten; the renewal then succeeded, the replica led
      // on in the same term, and the run stayed Running (and its Station's slot held) for good.
      const h = finishedJobHarness('DONE: 42\n');
      let writable = false;
      const deps = { ...h.deps, mayWrite: () => writable };
      assert.deepEqual(await reconcileAgent(`${NS}/a1`, deps), {
        kind: 'requeueAfter',
        ms: NOT_LEADING_RECHECK_MS,
      });
      assert.deepEqual(h.calls(), [], 'nothing read or written while the Lease is in doubt');
      writable = true;
      assert.deepEqual(await reconcileAgent(`${NS}/a1`, deps), { kind: 'done' });
      assert.equal(statusOf(h.patched()).phase, 'Succeeded');
    });

    it('finished Job not cached → live GET of the Job first', async () => {
      const h = harness({
        stations: [rawStation()],
        agents: [runningAgent()],
        router: (req) => {
          if (req.method === 'GET' && req.path === JOB_PATH)
            return { status: 200, body: rawJob({ status: COMPLETE }) };
          if (req.method === 'GET' && req.path === PODS_PATH) return { status: 200, body: podList(0) };
          if (req.method === 'GET' && req.path === LOG_PATH) return { status: 200, body: 'ok' };
          return undefined;
        },
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.calls(), [
        `GET ${JOB_PATH}`,
        `GET ${PODS_PATH}`,
        `GET ${LOG_PATH}`,
        `PATCH ${STATUS_PATH}`,
      ]);
      assert.equal(statusOf(h.patched()).output, 'ok');
    });

    it('the terminal patch is followed by pruning the Station history (DELETE with precondition)', async () => {
      const h = harness({
        stations: [rawStation({ successfulRunsHistoryLimit: 1 })],
        jobs: [rawJob({ status: COMPLETE })],
        agents: [
          runningAgent(),
          rawAgent('old', {
            rv: 'rv-old',
            created: '2025-03-01T10:00:00Z',
            status: { phase: 'Succeeded', completedAt: '2025-03-01T10:30:00Z', exitCode: 0 },
          }),
        ],
        router: (req) => {
          if (req.path === PODS_PATH) return { status: 200, body: podList(0) };
          if (req.path === LOG_PATH) return { status: 200, body: 'ok' };
          return undefined;
        },
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.calls(), [
        `GET ${PODS_PATH}`,
        `GET ${LOG_PATH}`,
        `PATCH ${STATUS_PATH}`,
        `DELETE ${agentPath('old')}`,
      ]);
      const deletion = h.requests[3];
      assert.ok(deletion);
      assert.deepEqual((deletion.body as { preconditions: unknown }).preconditions, {
        resourceVersion: 'rv-old',
      });
    });

    it('failed Job with exit code 3 → Failed, exitCode 3, log kept as output', async () => {
      const h = harness({
        stations: [rawStation()],
        jobs: [
          rawJob({
            status: {
              failed: 1,
              conditions: [
                {
                  type: 'Failed',
                  status: 'True',
                  reason: 'BackoffLimitExceeded',
                  message: 'Job has reached the specified backoff limit',
                },
              ],
            },
          }),
        ],
        agents: [runningAgent()],
        router: (req) => {
          if (req.path === PODS_PATH) return { status: 200, body: podList(3) };
          if (req.path === LOG_PATH) return { status: 200, body: 'error: tests failed' };
          return undefined;
        },
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      const s = statusOf(h.patched());
      assert.equal(s.phase, 'Failed');
      assert.equal(s.exitCode, 3);
      assert.equal(s.output, 'error: tests failed');
      assert.equal(s.failureReason, 'BackoffLimitExceeded: Job has reached the specified backoff limit');
    });

    it('finished Job, pod list fails → still terminal, output unavailable with the reason', async () => {
      const h = harness({
        stations: [rawStation()],
        jobs: [rawJob({ status: COMPLETE })],
        agents: [runningAgent()],
        router: (req) => (req.path === PODS_PATH ? internal : undefined),
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.calls(), [`GET ${PODS_PATH}`, `PATCH ${STATUS_PATH}`]);
      const s = statusOf(h.patched());
      assert.equal(s.phase, 'Succeeded');
      assert.equal(s.output, '');
      assert.match(
        String(s.failureReason),
        /^run output unavailable: listing the run's pods failed: api 500/,
      );
      assert.equal(
        String(s.failureReason),
        failureOutputUnavailable(
          "listing the run's pods failed: api 500 InternalError: etcdserver: leader changed",
        ),
      );
    });

    it('Job GET 404 → Failed, exitCode 1, Job garbage-collected', async () => {
      const h = harness({
        stations: [rawStation()],
        agents: [runningAgent()],
        router: (req) => (req.method === 'GET' && req.path === JOB_PATH ? notFound('job') : undefined),
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.calls(), [`GET ${JOB_PATH}`, `PATCH ${STATUS_PATH}`]);
      const s = statusOf(h.patched());
      assert.equal(s.phase, 'Failed');
      assert.equal(s.exitCode, 1);
      assert.equal(s.failureReason, FAILURE_JOB_GONE);
      assert.deepEqual(
        h.events.map((e) => [e.note.type, e.note.reason]),
        [['Warning', REASON.jobGarbageCollected]],
      );
    });

    it('Job GET 500 → retry, no writes', async () => {
      const h = harness({
        stations: [rawStation()],
        agents: [runningAgent()],
        router: (req) => (req.path === JOB_PATH ? internal : undefined),
      });
      assert.equal((await h.run()).kind, 'retry');
      assert.deepEqual(h.calls(), [`GET ${JOB_PATH}`]);
    });

    it('Job still running → no writes, requeueAfter', async () => {
      const h = harness({ stations: [rawStation()], jobs: [rawJob()], agents: [runningAgent()] });
      assert.deepEqual(await h.run(), { kind: 'requeueAfter', ms: OPTIONS.requeueMs });
      assert.deepEqual(h.calls(), []);
    });

    it('Station gone (404) does not block the terminal transition of a Running Agent', async () => {
      const h = harness({
        jobs: [rawJob({ status: COMPLETE })],
        agents: [runningAgent()],
        router: (req) => {
          if (req.path === STATION_PATH) return notFound('station');
          if (req.path === PODS_PATH) return { status: 200, body: podList(0) };
          if (req.path === LOG_PATH) return { status: 200, body: 'ok' };
          return undefined;
        },
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.equal(statusOf(h.patched()).phase, 'Succeeded');
      assert.equal(h.calls()[0], `GET ${STATION_PATH}`);
      assert.equal(h.requests.filter((r) => r.path.startsWith(DEFINITION_PATH)).length, 0);
    });

    it('terminal status patch 409 → done (superseded, no retry); events and metrics not recorded', async () => {
      const h = harness({
        stations: [rawStation()],
        jobs: [rawJob({ status: COMPLETE })],
        agents: [runningAgent()],
        router: (req) => {
          if (req.path === PODS_PATH) return { status: 200, body: podList(0) };
          if (req.path === LOG_PATH) return { status: 200, body: 'ok' };
          if (req.method === 'PATCH') {
            return { status: 409, body: status(409, 'Conflict', 'the object has been modified') };
          }
          return undefined;
        },
      });
      assert.deepEqual(await h.run(), { kind: 'done' });
      assert.deepEqual(h.events, []);
      assert.equal(
        await counter(h.metrics, 'controller_runs_completed_total', '{phase="Succeeded",exit_code="0"}'),
        0,
      );
    });
  });
});

describe('reconcileAgent: agent memory (issue 10 §3)', () => {
  const CONFIG_MAP_PATH = `/api/v1/namespaces/${NS}/configmaps/notes`;
  const memoryDefinition = rawDefinition({
    prompt: 'Do {thing}',
    model: 'exec',
    tool_config: { command: ['sh', '-c', 'echo "$0"'] },
    memory: { configMap: 'notes' },
  });
  const configMap = (rv: string, memory: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { ...meta('notes', { rv }), labels: { 'agents.re-cinq.com/memory': 'true' } },
    data: { 'MEMORY.md': memory },
  });

  it('Pending: reads the memory ConfigMap, then creates the Job with it in the prompt', async () => {
    const h = harness({
      stations: [rawStation()],
      definitions: [memoryDefinition],
      agents: [rawAgent('a1')],
      router: (req) =>
        req.method === 'GET' && req.path === CONFIG_MAP_PATH
          ? { status: 200, body: configMap('33', 'remember me') }
          : undefined,
    });
    assert.deepEqual(await h.run(), { kind: 'requeueAfter', ms: OPTIONS.requeueMs });
    assert.deepEqual(h.calls(), [
      `GET ${CONFIG_MAP_PATH}`,
      // May the controller write the memory back? (A SelfSubjectAccessReview; this fake answers it with nothing.)
      'POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      `POST ${CONFIG_MAPS_PATH}`,
      `POST ${JOBS_PATH}`,
      `PATCH ${STATUS_PATH}`,
    ]);
    const input = h.requests[2]?.body as { metadata: { name: string }; data: Record<string, string> };
    assert.equal(input.metadata.name, 'agent-job-a1-input');
    assert.match(input.data.prompt ?? '', /^Do stuff\n\n<memory>\nremember me\n<\/memory>\n/);
    const job = h.requests[3]?.body as {
      metadata: { annotations: Record<string, string> };
      spec: { template: { spec: { containers: { name: string; command: string[] }[] } } };
    };
    assert.equal(job.metadata.annotations['agents.re-cinq.com/memory-version'], '33');
    const command = job.spec.template.spec.containers.find((c) => c.name === 'agent')?.command ?? [];
    assert.ok(!command.some((arg) => arg.includes('remember me')), 'the prompt is not in the argv');
  });

  it('Pending: 403 on the ConfigMap fails the run naming the grant; 500 is retried', async () => {
    const denied = harness({
      stations: [rawStation()],
      definitions: [memoryDefinition],
      agents: [rawAgent('a1')],
      router: (req) =>
        req.path === CONFIG_MAP_PATH
          ? { status: 403, body: status(403, 'Forbidden', 'configmaps "notes" is forbidden') }
          : undefined,
    });
    assert.deepEqual(await denied.run(), { kind: 'done' });
    assert.deepEqual(denied.calls(), [`GET ${CONFIG_MAP_PATH}`, `PATCH ${STATUS_PATH}`]);
    assert.match(String(statusOf(denied.patched()).failureReason), /deploy\/components\/memory/);
    const broken = harness({
      stations: [rawStation()],
      definitions: [memoryDefinition],
      agents: [rawAgent('a1')],
      router: (req) => (req.path === CONFIG_MAP_PATH ? internal : undefined),
    });
    assert.equal((await broken.run()).kind, 'retry');
    assert.deepEqual(broken.calls(), [`GET ${CONFIG_MAP_PATH}`]);
  });

  /** A finished run of Agent a1 that started with memory `notes` at resourceVersion 33; `cm` answers the ConfigMap. */
  const finishedWithMemory = (cm: (req: FakeRequest, n: number) => FakeReply | undefined) => {
    const job = rawJob({ status: COMPLETE });
    let n = 0;
    return harness({
      stations: [rawStation()],
      definitions: [memoryDefinition],
      jobs: [
        {
          ...job,
          metadata: {
            ...job.metadata,
            annotations: {
              'agents.re-cinq.com/memory-configmap': 'notes',
              'agents.re-cinq.com/memory-max-size-kb': '64',
              'agents.re-cinq.com/memory-version': '33',
            },
          },
        },
      ],
      agents: [rawAgent('a1', { status: RUNNING_STATUS })],
      router: (req) => {
        if (req.method === 'GET' && req.path === PODS_PATH) return { status: 200, body: podList(0) };
        if (req.method === 'GET' && req.path === LOG_PATH)
          return { status: 200, body: 'done\n<memory>\nnew notes\n</memory>\n' };
        if (req.path === CONFIG_MAP_PATH) return cm(req, n++);
        return undefined;
      },
    });
  };

  it('Succeeded: the ConfigMap is read, MEMORY.md replaced at that version, then the terminal patch', async () => {
    const h = finishedWithMemory((req) =>
      req.method === 'GET'
        ? { status: 200, body: configMap('33', 'remember me') }
        : { status: 200, body: configMap('34', 'new notes') },
    );
    assert.deepEqual(await h.run(), { kind: 'done' });
    assert.deepEqual(h.calls(), [
      `GET ${PODS_PATH}`,
      `GET ${LOG_PATH}`,
      `GET ${CONFIG_MAP_PATH}`,
      `PUT ${CONFIG_MAP_PATH}`,
      `PATCH ${STATUS_PATH}`,
    ]);
    const put = h.requests[3]?.body as
      | { data?: unknown; metadata?: { resourceVersion?: string } }
      | undefined;
    assert.deepEqual(put?.data, { 'MEMORY.md': 'new notes' });
    assert.equal(put?.metadata?.resourceVersion, '33');
    assert.equal(statusOf(h.patched()).phase, 'Succeeded');
    assert.deepEqual(
      h.events.map((e) => e.note.reason),
      [REASON.succeeded, REASON.memorySaved],
    );
  });

  it('Succeeded: a write that met a change is decided again on the ConfigMap read again (MemoryOverwritten)', async () => {
    const h = finishedWithMemory((req, n) => {
      if (req.method === 'GET')
        return { status: 200, body: configMap(n === 0 ? '33' : '35', n === 0 ? 'remember me' : 'theirs') };
      return n === 1 ? conflict : { status: 200, body: configMap('36', 'new notes') };
    });
    assert.deepEqual(await h.run(), { kind: 'done' });
    assert.deepEqual(h.calls().slice(2), [
      `GET ${CONFIG_MAP_PATH}`,
      `PUT ${CONFIG_MAP_PATH}`,
      `GET ${CONFIG_MAP_PATH}`,
      `PUT ${CONFIG_MAP_PATH}`,
      `PATCH ${STATUS_PATH}`,
    ]);
    assert.equal(
      (h.requests[5]?.body as { metadata?: { resourceVersion?: string } } | undefined)?.metadata
        ?.resourceVersion,
      '35',
    );
    assert.deepEqual(
      h.events.map((e) => e.note.reason),
      [REASON.succeeded, REASON.memorySaved, REASON.memoryOverwritten],
    );
  });

  it(`Succeeded: after ${MAX_MEMORY_WRITES} writes that each met a change, given up in the same reconcile (MemoryNotSaved)`, async () => {
    const h = finishedWithMemory((req, n) =>
      req.method === 'GET' ? { status: 200, body: configMap(String(40 + n), 'theirs') } : conflict,
    );
    assert.deepEqual(await h.run(), { kind: 'done' });
    const memoryCalls = h.calls().filter((c) => c.endsWith(CONFIG_MAP_PATH));
    assert.equal(memoryCalls.filter((c) => c.startsWith('PUT')).length, MAX_MEMORY_WRITES);
    assert.equal(memoryCalls.filter((c) => c.startsWith('GET')).length, MAX_MEMORY_WRITES + 1);
    assert.equal(h.calls().at(-1), `PATCH ${STATUS_PATH}`);
    assert.equal(statusOf(h.patched()).phase, 'Succeeded');
    assert.deepEqual(
      h.events.map((e) => e.note.reason),
      [REASON.succeeded, REASON.memoryNotSaved],
    );
    assert.match(h.events[1]?.note.message ?? '', /kept changing while being written \(5 attempts\)/);
  });

  it('Succeeded: a refused write is told (MemoryNotSaved naming the grant); the run is Succeeded all the same', async () => {
    const h = finishedWithMemory((req) =>
      req.method === 'GET'
        ? { status: 200, body: configMap('33', 'remember me') }
        : { status: 403, body: status(403, 'Forbidden', 'configmaps "notes" is forbidden') },
    );
    assert.deepEqual(await h.run(), { kind: 'done' });
    assert.equal(statusOf(h.patched()).phase, 'Succeeded');
    assert.deepEqual(
      h.events.map((e) => e.note.reason),
      [REASON.succeeded, REASON.memoryNotSaved],
    );
    assert.match(
      h.events[1]?.note.message ?? '',
      /forbidden; the controller needs configmaps get, create and update/,
    );
  });
});
