import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildJob,
  buildRunInput,
  buildRunNetworkPolicy,
  type InputConfigMapManifest,
  type JobManifest,
  type NetworkPolicyManifest,
} from '../jobs/index.ts';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import {
  createEventRecorder,
  type EventNote,
  type EventRecorder,
  type InvolvedObject,
  MERGE_PATCH,
  NETWORK_POLICIES,
} from '../kube/index.ts';
import { type ControllerMetrics, createControllerMetrics } from '../metrics/index.ts';
import { batchRequestFor } from '../reconcile/batch/plan.ts';
import type { Action, AgentRef, MetricObservation } from '../reconcile/index.ts';
import { agent, at, definition, NS, station } from '../reconcile/test-fixtures.ts';
import { createLogger } from '../shared/log.ts';
import type { BatchVendor } from '../vendors/batch/port.ts';
import { createBatchRuntime } from './batch/runtime.ts';
import {
  createServerKeys,
  createTombstones,
  type ExecuteOutcome,
  executeActions,
  FIELD_MANAGER,
  observe,
  serverKeyOf,
} from './execute.ts';

const GROUP_PATH = '/apis/agents.re-cinq.com/v1alpha1';
const JOBS_PATH = `/apis/batch/v1/namespaces/${NS}/jobs`;
const POLICIES_PATH = `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`;
const CONFIG_MAPS_PATH = `/api/v1/namespaces/${NS}/configmaps`;
const agentPath = (name: string): string => `${GROUP_PATH}/namespaces/${NS}/agents/${name}`;

/** A Status body as the API server sends it with an error. */
const status = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});

const ref = (name: string): AgentRef => ({ namespace: NS, name, uid: `uid-${name}` });

function manifest(name = 'a1'): JobManifest {
  const built = buildJob({
    agent: agent(name),
    station: station(),
    definition: definition(),
    agentImage: 'agent-controller:e2e',
    now: at(5),
  });
  if (!built.ok) throw new Error(built.error);
  return built.value;
}

/** The NetworkPolicy of the run `name` whose definition names an IP and a hostname sink. */
function policyManifest(name = 'a1'): NetworkPolicyManifest {
  const built = buildRunNetworkPolicy({
    agent: agent(name),
    station: station(),
    definition: definition('def', {
      output: {
        sinks: [
          { type: 'http', url: 'http://10.1.2.3:8080/x' },
          { type: 'http', url: 'https://hooks.example.com/y' },
        ],
      },
    }),
  });
  return built;
}

/** The created Job as the API server echoes it (201). */
function createdJob(m: JobManifest): Record<string, unknown> {
  return {
    ...m,
    metadata: {
      ...m.metadata,
      uid: 'uid-job',
      resourceVersion: '100',
      creationTimestamp: '2025-03-01T12:00:05Z',
    },
    status: {},
  };
}

/** The patched Agent as the API server echoes it (200). */
function patchedAgent(name: string): Record<string, unknown> {
  return {
    apiVersion: 'agents.re-cinq.com/v1alpha1',
    kind: 'Agent',
    metadata: {
      name,
      namespace: NS,
      uid: `uid-${name}`,
      resourceVersion: '101',
      generation: 1,
      creationTimestamp: '2025-03-01T12:00:00Z',
    },
    spec: { stationRef: 'stn' },
    status: { phase: 'Running' },
  };
}

/** The input ConfigMap of the run `name` (issue 10 §1). */
function inputManifest(name = 'a1'): InputConfigMapManifest {
  return buildRunInput({
    agent: agent(name),
    station: station(),
    definition: definition(),
    agentImage: 'agent-controller:e2e',
    now: at(5),
  });
}

const createJob = (m: JobManifest = manifest()): Action => ({ kind: 'createJob', job: m });
const createInput = (c: InputConfigMapManifest = inputManifest()): Action => ({
  kind: 'createRunInput',
  configMap: c,
});
const createPolicy = (p: NetworkPolicyManifest = policyManifest()): Action => ({
  kind: 'createNetworkPolicy',
  policy: p,
});
const patch = (name = 'a1', rv = 'rv-a1'): Action => ({
  kind: 'patchStatus',
  ref: ref(name),
  resourceVersion: rv,
  status: { phase: 'Running', jobName: `agent-job-${name}`, observedGeneration: 1, conditions: [] },
});
const del = (name: string, purpose: 'prune' | 'preempt', rv = `rv-${name}`): Action => ({
  kind: 'deleteAgent',
  ref: ref(name),
  resourceVersion: rv,
  purpose,
  reason: `test ${purpose}`,
});
const ev = (name: string, reason: string): Action => ({
  kind: 'recordEvent',
  ref: ref(name),
  type: 'Normal',
  reason,
  message: `${reason} happened`,
});
const metric = (observation: MetricObservation): Action => ({ kind: 'observeMetric', observation });

interface Recorded {
  readonly obj: InvolvedObject;
  readonly note: EventNote;
}

/** An EventRecorder stub that records calls and appends to a shared timeline. */
function recordingEvents(
  timeline: string[],
  fail?: 'reject' | 'throw',
): EventRecorder & { calls: Recorded[] } {
  const calls: Recorded[] = [];
  return {
    calls,
    record(obj, note) {
      calls.push({ obj, note });
      timeline.push(`event ${note.reason}`);
      if (fail === 'throw') throw new Error('recorder exploded');
      if (fail === 'reject') return Promise.reject(new Error('recorder rejected'));
      return Promise.resolve();
    },
  };
}

/** A successful reply for each write the executor makes. */
function success(req: FakeRequest): FakeReply {
  if (req.method === 'POST' && req.path === JOBS_PATH) {
    return { status: 201, body: createdJob(req.body as JobManifest) };
  }
  if (req.method === 'POST' && req.path === POLICIES_PATH) {
    const p = req.body as NetworkPolicyManifest;
    return { status: 201, body: { ...p, metadata: { ...p.metadata, uid: 'uid-np', resourceVersion: '99' } } };
  }
  if (req.method === 'PATCH') return { status: 200, body: patchedAgent(req.path.split('/')[7] ?? '') };
  if (req.method === 'DELETE') return { status: 200, body: status(200, '', '') };
  return { status: 404, body: status(404, 'NotFound', 'unexpected request') };
}

interface Harness {
  readonly deps: Parameters<typeof executeActions>[1];
  readonly requests: FakeRequest[];
  readonly timeline: string[];
  readonly events: ReturnType<typeof recordingEvents>;
  readonly metrics: ControllerMetrics;
  readonly logs: Record<string, unknown>[];
}

function harness(
  reply: (req: FakeRequest) => FakeReply = success,
  o: { eventFailure?: 'reject' | 'throw'; events?: EventRecorder } = {},
): Harness {
  const timeline: string[] = [];
  const transport = createFakeTransport({
    request: (req) => {
      timeline.push(`${req.method} ${req.path}`);
      return reply(req);
    },
  });
  const events = recordingEvents(timeline, o.eventFailure);
  const metrics = createControllerMetrics(false);
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger('debug', (line) => void logs.push(JSON.parse(line) as Record<string, unknown>));
  return {
    deps: { transport, events: o.events ?? events, metrics, logger, timeoutMs: 1000 },
    requests: transport.requests,
    timeline,
    events,
    metrics,
    logs,
  };
}

/** Every sample of the registry keyed `name{k="v",…}` with labels sorted, so label order does not matter. */
async function samples(metrics: ControllerMetrics): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await metrics.registry.metrics()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `unparseable metrics line: ${line}`);
    const labels = (m[2] ?? '')
      .split(/,(?=[a-zA-Z_]+=")/)
      .filter((l) => l !== '')
      .sort();
    out.set(labels.length > 0 ? `${m[1]}{${labels.join(',')}}` : (m[1] ?? ''), Number(m[3]));
  }
  return out;
}

async function sample(metrics: ControllerMetrics, series: string): Promise<number | undefined> {
  return (await samples(metrics)).get(series);
}

describe('executeActions', () => {
  it('runs every action in array order and reports done', async () => {
    const h = harness();
    const m = manifest();
    const out = await executeActions(
      [
        createJob(m),
        patch(),
        ev('a1', 'Started'),
        metric({ metric: 'runQueue', seconds: 5 }),
        del('old', 'prune'),
        ev('a1', 'Pruned'),
      ],
      h.deps,
    );
    assert.deepEqual(out, { kind: 'done' });
    assert.deepEqual(h.timeline, [
      `POST ${JOBS_PATH}`,
      `PATCH ${agentPath('a1')}/status`,
      'event Started',
      `DELETE ${agentPath('old')}`,
      'event Pruned',
    ]);
    assert.equal(await sample(h.metrics, 'controller_run_queue_seconds_count'), 1);
  });

  it('tombstones deleted and already-gone Agents, gives refused claims back, and never prunes one twice', async () => {
    const tombstones = createTombstones(() => 0);
    const h = harness((req) =>
      req.path.endsWith('/gone')
        ? { status: 404, body: status(404, 'NotFound', 'not found') }
        : req.path.endsWith('/busy')
          ? { status: 409, body: status(409, 'Conflict', 'changed') }
          : success(req),
    );
    const out = await executeActions(
      [del('old', 'prune'), del('gone', 'prune'), del('busy', 'prune'), del('old', 'prune')],
      { ...h.deps, tombstones },
    );
    assert.deepEqual(out, { kind: 'done' });
    assert.deepEqual(
      ['uid-old', 'uid-gone', 'uid-busy'].map((u) => tombstones.has(u)),
      [true, true, false],
    );
    assert.equal(
      h.requests.filter((r) => r.method === 'DELETE').length,
      3,
      'the second prune of old is skipped',
    );
  });

  it('with backgroundEvents, a slow Event does not hold up the writes after it', async () => {
    const h = harness();
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const recorded: string[] = [];
    const out = await executeActions([ev('a1', 'Started'), patch()], {
      ...h.deps,
      backgroundEvents: true,
      events: {
        record: async (_obj, note) => {
          await gate;
          recorded.push(note.reason);
        },
      },
    });
    assert.deepEqual(out, { kind: 'done' });
    assert.equal(h.requests.length, 1, 'the status patch went out while the Event was still pending');
    assert.deepEqual(recorded, []);
    release();
    await gate;
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(recorded, ['Started']);
  });

  it('writes nothing once this replica may no longer write (a lost Lease): notLeading, metrics still observed', async () => {
    const h = harness();
    let allowed = 1;
    const out = await executeActions(
      [patch(), metric({ metric: 'runQueue', seconds: 5 }), createJob(), ev('a1', 'Started')],
      { ...h.deps, mayWrite: () => allowed-- > 0 },
    );
    assert.equal(out.kind, 'notLeading');
    assert.deepEqual(
      h.timeline,
      [`PATCH ${agentPath('a1')}/status`],
      'the patch only: then the Lease was gone',
    );
    assert.equal(await sample(h.metrics, 'controller_run_queue_seconds_count'), 1);
  });

  it('a status patch that landed is still reported once this replica may no longer write; other writes are not made', async () => {
    // The renew deadline passes while the terminal patch is in flight (an API-server restart): the patch landed
    // under its resourceVersion precondition, so its Event is this decision's to record (nobody else would); a
    // prune of another Agent is a decision of its own and waits for the next leader's sweep.
    const h = harness();
    let writable = true;
    const out = await executeActions(
      [patch(), ev('a1', 'Succeeded'), metric({ metric: 'runQueue', seconds: 5 }), del('old', 'prune')],
      {
        ...h.deps,
        mayWrite: () => writable,
        onAgentWritten: () => {
          writable = false;
        },
      },
    );
    assert.equal(out.kind, 'notLeading');
    assert.deepEqual(h.timeline, [`PATCH ${agentPath('a1')}/status`, 'event Succeeded']);
    assert.equal(await sample(h.metrics, 'controller_run_queue_seconds_count'), 1);
    // Without a landed patch, the same Event is fenced like any write.
    const before = harness();
    const fenced = await executeActions([ev('a1', 'Succeeded')], { ...before.deps, mayWrite: () => false });
    assert.equal(fenced.kind, 'notLeading');
    assert.deepEqual(before.timeline, []);
  });

  it('a batch submission is fenced again right before the create: leadership lost while the key was read → nothing sent', async () => {
    // Chaos seed 66: the leader passed the fence, was paused while reading the vendor key, and sent its create after
    // another leader had searched, found nothing and submitted: two vendor batches for one run.
    const h = harness();
    let leading = true;
    let pauseOnRead = true;
    const submitted: string[] = [];
    const vendor = {
      submit: (request: { customId: string }) => {
        submitted.push(request.customId);
        return Promise.resolve({ ok: true as const, value: { id: 'msgbatch_1' } });
      },
    } as unknown as BatchVendor;
    const batch = createBatchRuntime({
      baseUrls: {
        anthropic: 'http://127.0.0.1:9',
        gemini: 'http://127.0.0.1:9',
        openai: 'http://127.0.0.1:9',
      },
      secrets: {
        read: () => {
          // Paused here the first time; the Lease went to another replica meanwhile.
          if (pauseOnRead) leading = false;
          return Promise.resolve({ ok: true as const, value: new Map([['ANTHROPIC_API_KEY', 'sk-test']]) });
        },
        forget: () => {},
      },
      vendors: { anthropic: vendor, gemini: vendor, openai: vendor },
    });
    const a = agent('a1', { status: { phase: 'Running', batchProvider: 'anthropic' } });
    const submit: Action = {
      kind: 'submitBatch',
      ref: ref('a1'),
      provider: 'anthropic',
      secretKey: 'ANTHROPIC_API_KEY',
      request: batchRequestFor(a, definition(), 'claude-sonnet-5'),
    };
    const deps = { ...h.deps, batch, beforeCreateJob: () => leading };
    assert.equal((await executeActions([submit], deps)).kind, 'notLeading');
    assert.deepEqual(submitted, [], 'no create sent by a replica that stopped leading');
    leading = true;
    pauseOnRead = false;
    assert.deepEqual(await executeActions([submit], deps), { kind: 'batchSubmitted', id: 'msgbatch_1' });
    assert.equal(submitted.length, 1);
  });

  it('an empty decision makes no request', async () => {
    const h = harness();
    assert.deepEqual(await executeActions([], h.deps), { kind: 'done' });
    assert.equal(h.requests.length, 0);
    assert.equal(h.events.calls.length, 0);
  });

  describe('createJob', () => {
    it('201: POSTs the manifest with the field manager, counts the Job and continues', async () => {
      const h = harness();
      const m = manifest();
      const out = await executeActions([createJob(m), patch()], h.deps);
      assert.deepEqual(out, { kind: 'done' });
      const post = h.requests[0];
      assert.ok(post);
      assert.equal(post.method, 'POST');
      assert.equal(post.path, JOBS_PATH);
      assert.equal(post.query.fieldManager, FIELD_MANAGER);
      assert.equal(FIELD_MANAGER, 'agent-controller');
      assert.deepEqual(post.body, { ...m });
      const body = post.body as JobManifest;
      assert.equal(body.apiVersion, 'batch/v1');
      assert.equal(body.kind, 'Job');
      assert.equal(body.metadata.name, 'agent-job-a1');
      assert.equal(h.requests.length, 2, 'the status patch after the create ran');
      assert.equal(await sample(h.metrics, 'controller_jobs_created_total'), 1);
    });

    const failures: {
      name: string;
      reply: FakeReply;
      expect: (out: ExecuteOutcome) => void;
    }[] = [
      {
        name: '409 AlreadyExists → jobExists',
        reply: {
          status: 409,
          body: status(409, 'AlreadyExists', 'jobs.batch "agent-job-a1" already exists'),
        },
        expect: (out) => assert.deepEqual(out, { kind: 'jobExists' }),
      },
      {
        name: '422 Invalid → jobRejected with the Status message',
        reply: {
          status: 422,
          body: status(
            422,
            'Invalid',
            'Job.batch "agent-job-a1" is invalid: spec.template.spec.containers[0].image: Required value',
          ),
        },
        expect: (out) =>
          assert.deepEqual(out, {
            kind: 'jobRejected',
            message:
              'Job.batch "agent-job-a1" is invalid: spec.template.spec.containers[0].image: Required value',
          }),
      },
      {
        name: '400 BadRequest → jobRejected with the Status message',
        reply: {
          status: 400,
          body: status(400, 'BadRequest', 'Job in version "v1" cannot be handled as a Job: bad field'),
        },
        expect: (out) =>
          assert.deepEqual(out, {
            kind: 'jobRejected',
            message: 'Job in version "v1" cannot be handled as a Job: bad field',
          }),
      },
      {
        name: '500 → error',
        reply: { status: 500, body: status(500, 'InternalError', 'etcdserver: request timed out') },
        expect: (out) => {
          assert.equal(out.kind, 'error');
          if (out.kind !== 'error') return;
          assert.equal(out.action, 'createJob');
          assert.equal(out.error.kind, 'api');
          assert.equal(out.error.kind === 'api' && out.error.code, 500);
        },
      },
      {
        name: '403 Forbidden → error (not a rejection of the Job itself)',
        reply: { status: 403, body: status(403, 'Forbidden', 'jobs.batch is forbidden') },
        expect: (out) => {
          assert.equal(out.kind, 'error');
          assert.equal(out.kind === 'error' && out.action, 'createJob');
        },
      },
      {
        name: 'network failure → error',
        reply: { error: { kind: 'network', message: 'connect ECONNREFUSED' } },
        expect: (out) => {
          assert.equal(out.kind, 'error');
          assert.equal(out.kind === 'error' && out.error.kind, 'network');
        },
      },
    ];
    for (const f of failures) {
      it(`${f.name}; later actions are not run and no Job is counted`, async () => {
        const h = harness((req) => (req.method === 'POST' ? f.reply : success(req)));
        const out = await executeActions(
          [createJob(), patch(), ev('a1', 'Started'), metric({ metric: 'runQueue', seconds: 1 })],
          h.deps,
        );
        f.expect(out);
        assert.deepEqual(
          h.requests.map((r) => r.method),
          ['POST'],
        );
        assert.equal(h.events.calls.length, 0);
        assert.equal(await sample(h.metrics, 'controller_jobs_created_total'), 0);
        assert.equal(await sample(h.metrics, 'controller_run_queue_seconds_count'), 0);
      });
    }
  });

  describe('createRunInput', () => {
    const inputReply =
      (reply: FakeReply) =>
      (req: FakeRequest): FakeReply =>
        req.method === 'POST' && req.path === CONFIG_MAPS_PATH ? reply : success(req);
    const created = (req: FakeRequest): FakeReply => {
      const c = req.body as InputConfigMapManifest;
      return {
        status: 201,
        body: { ...c, metadata: { ...c.metadata, uid: 'uid-cm', resourceVersion: '98' } },
      };
    };
    const later = [createJob(), patch(), ev('a1', 'Started'), metric({ metric: 'runQueue', seconds: 1 })];

    it('201: POSTs the ConfigMap to configmaps with the field manager, then the Job and the rest run', async () => {
      const c = inputManifest();
      const ok = harness((req) =>
        req.method === 'POST' && req.path === CONFIG_MAPS_PATH ? created(req) : success(req),
      );
      const out = await executeActions([createInput(c), ...later], ok.deps);
      assert.deepEqual(out, { kind: 'done' });
      assert.deepEqual(ok.timeline, [
        `POST ${CONFIG_MAPS_PATH}`,
        `POST ${JOBS_PATH}`,
        `PATCH ${agentPath('a1')}/status`,
        'event Started',
      ]);
      const post = ok.requests[0];
      assert.ok(post);
      assert.equal(post.query.fieldManager, FIELD_MANAGER);
      assert.deepEqual(post.body, { ...c });
      assert.ok(ok.logs.some((l) => l.msg === 'Created run input' && l.configMap === 'agent-job-a1-input'));
      assert.equal(await sample(ok.metrics, 'controller_jobs_created_total'), 1, 'a ConfigMap is not a Job');
    });

    it('409 → the ConfigMap read back and reported (decide again with it found); the Job and the rest are not run', async () => {
      const c = inputManifest();
      const h = harness((req) => {
        if (req.method === 'POST') return { status: 409, body: status(409, 'AlreadyExists', 'exists') };
        const owner = { ...c.metadata.ownerReferences[0], uid: 'uid-previous' };
        return {
          status: 200,
          body: { ...c, metadata: { ...c.metadata, uid: 'uid-cm', ownerReferences: [owner] } },
        };
      });
      const out = await executeActions([createInput(c), ...later], h.deps);
      assert.equal(out.kind, 'found');
      assert.equal(out.kind === 'found' && out.found.controller?.uid, 'uid-previous');
      assert.equal(out.kind === 'found' && out.found.key, 'ConfigMap team/agent-job-a1-input');
      assert.deepEqual(
        h.requests.map((r) => `${r.method} ${r.path}`),
        [`POST ${CONFIG_MAPS_PATH}`, `GET ${CONFIG_MAPS_PATH}/agent-job-a1-input`],
      );
      assert.equal(h.events.calls.length, 0);
    });

    for (const [code, reason] of [
      [403, 'Forbidden'],
      [422, 'Invalid'],
      [400, 'BadRequest'],
    ] as const) {
      it(`${code} ${reason} → inputRefused with the answer; the Job and the rest are not run`, async () => {
        const h = harness(inputReply({ status: code, body: status(code, reason, 'configmaps is refused') }));
        const out = await executeActions([createInput(), ...later], h.deps);
        assert.deepEqual(out, {
          kind: 'inputRefused',
          message: `ConfigMap ${NS}/agent-job-a1-input: api ${code} ${reason}: configmaps is refused`,
        });
        assert.deepEqual(
          h.requests.map((r) => r.path),
          [CONFIG_MAPS_PATH],
        );
        assert.equal(h.events.calls.length, 0);
        assert.equal(await sample(h.metrics, 'controller_jobs_created_total'), 0);
      });
    }

    it('500 → error naming the action; the Job and the rest are not run', async () => {
      const h = harness(
        inputReply({ status: 500, body: status(500, 'InternalError', 'etcdserver: request timed out') }),
      );
      const out = await executeActions([createInput(), ...later], h.deps);
      assert.equal(out.kind, 'error');
      assert.equal(out.kind === 'error' && out.action, 'createRunInput');
      assert.deepEqual(
        h.requests.map((r) => r.path),
        [CONFIG_MAPS_PATH],
      );
      assert.equal(await sample(h.metrics, 'controller_jobs_created_total'), 0);
    });
  });

  describe('createNetworkPolicy', () => {
    const forbidden: FakeReply = {
      status: 403,
      body: status(
        403,
        'Forbidden',
        'networkpolicies.networking.k8s.io is forbidden: User "system:serviceaccount:team:agent-controller" cannot create resource "networkpolicies"',
      ),
    };
    const policyReply =
      (reply: FakeReply) =>
      (req: FakeRequest): FakeReply =>
        req.method === 'POST' && req.path === POLICIES_PATH ? reply : success(req);
    const warnings = (h: Harness) => h.logs.filter((l) => l.level === 'warn');

    it('201: POSTs the policy to networkpolicies with the field manager, then the Job and the rest run', async () => {
      const h = harness();
      const p = policyManifest();
      const out = await executeActions([createPolicy(p), createJob(), patch(), ev('a1', 'Started')], h.deps);
      assert.deepEqual(out, { kind: 'done' });
      assert.deepEqual(h.timeline, [
        `POST ${POLICIES_PATH}`,
        `POST ${JOBS_PATH}`,
        `PATCH ${agentPath('a1')}/status`,
        'event Started',
      ]);
      const post = h.requests[0];
      assert.ok(post);
      assert.equal(post.query.fieldManager, 'agent-controller');
      assert.deepEqual(post.body, { ...p });
      const body = post.body as NetworkPolicyManifest;
      assert.equal(body.apiVersion, 'networking.k8s.io/v1');
      assert.equal(body.kind, 'NetworkPolicy');
      assert.equal(body.metadata.name, 'agent-job-a1');
      assert.equal(NETWORK_POLICIES.plural, 'networkpolicies');
      assert.equal(await sample(h.metrics, 'controller_jobs_created_total'), 1, 'a policy is not a Job');
      assert.ok(
        h.logs.some((l) => l.msg === 'Created run NetworkPolicy' && l.networkPolicy === 'agent-job-a1'),
      );
      assert.deepEqual(warnings(h), []);
    });

    it('409 AlreadyExists → continue (idempotent): the Job is still created, nothing is logged as a problem', async () => {
      const h = harness(
        policyReply({
          status: 409,
          body: status(
            409,
            'AlreadyExists',
            'networkpolicies.networking.k8s.io "agent-job-a1" already exists',
          ),
        }),
      );
      const out = await executeActions([createPolicy(), createJob(), patch()], h.deps);
      assert.deepEqual(out, { kind: 'done' });
      assert.deepEqual(
        h.requests.map((r) => `${r.method} ${r.path}`),
        [`POST ${POLICIES_PATH}`, `POST ${JOBS_PATH}`, `PATCH ${agentPath('a1')}/status`],
      );
      assert.deepEqual(warnings(h), []);
    });

    it('403 Forbidden → continue; warned once per controller (transport), later refusals only at debug', async () => {
      const h = harness(policyReply(forbidden));
      for (let i = 0; i < 3; i++) {
        const out = await executeActions([createPolicy(), createJob(), patch()], h.deps);
        assert.deepEqual(out, { kind: 'done' }, `round ${i}`);
      }
      assert.equal(h.requests.filter((r) => r.path === JOBS_PATH).length, 3, 'every run got its Job');
      const warned = warnings(h);
      assert.equal(warned.length, 1, JSON.stringify(warned));
      assert.match(String(warned[0]?.msg), /403 Forbidden/);
      assert.match(String(warned[0]?.msg), /networkpolicies create/);
      assert.equal(warned[0]?.networkPolicy, 'agent-job-a1');
      assert.match(String(warned[0]?.error), /forbidden/);
      assert.equal(
        h.logs.filter((l) => l.level === 'debug' && l.msg === 'Run NetworkPolicy not created: forbidden')
          .length,
        2,
      );
      // Another controller (another transport) warns on its own.
      const other = harness(policyReply(forbidden));
      await executeActions([createPolicy()], other.deps);
      assert.equal(warnings(other).length, 1);
    });

    const stops: { name: string; reply: FakeReply; kind: string }[] = [
      {
        name: '500',
        reply: { status: 500, body: status(500, 'InternalError', 'etcdserver: request timed out') },
        kind: 'api',
      },
      {
        name: '422 Invalid',
        reply: { status: 422, body: status(422, 'Invalid', 'NetworkPolicy "agent-job-a1" is invalid') },
        kind: 'api',
      },
      { name: '401', reply: { status: 401, body: status(401, 'Unauthorized', 'Unauthorized') }, kind: 'api' },
      {
        name: 'a network failure',
        reply: { error: { kind: 'network', message: 'connect ECONNREFUSED' } },
        kind: 'network',
      },
    ];
    for (const c of stops) {
      it(`${c.name} → error naming the action; the Job and the rest are not run`, async () => {
        const h = harness(policyReply(c.reply));
        const out = await executeActions(
          [
            createPolicy(),
            createJob(),
            patch(),
            ev('a1', 'Started'),
            metric({ metric: 'runQueue', seconds: 1 }),
          ],
          h.deps,
        );
        assert.equal(out.kind, 'error');
        if (out.kind !== 'error') return;
        assert.equal(out.action, 'createNetworkPolicy');
        assert.equal(out.error.kind, c.kind);
        assert.deepEqual(
          h.requests.map((r) => r.path),
          [POLICIES_PATH],
        );
        assert.equal(h.events.calls.length, 0);
        assert.equal(await sample(h.metrics, 'controller_jobs_created_total'), 0);
        assert.equal(await sample(h.metrics, 'controller_run_queue_seconds_count'), 0);
      });
    }
  });

  describe('patchStatus', () => {
    it('sends a merge patch of /status with the resourceVersion precondition and the field manager', async () => {
      const h = harness();
      const action = patch('a1', '4711');
      const out = await executeActions([action], h.deps);
      assert.deepEqual(out, { kind: 'done' });
      assert.equal(h.requests.length, 1);
      const req = h.requests[0];
      assert.ok(req);
      assert.equal(req.method, 'PATCH');
      assert.equal(req.path, `${agentPath('a1')}/status`);
      assert.equal(req.contentType, MERGE_PATCH);
      assert.equal(req.contentType, 'application/merge-patch+json');
      assert.equal(req.query.fieldManager, 'agent-controller');
      assert.deepEqual(req.body, {
        metadata: { resourceVersion: '4711' },
        status: {
          phase: 'Running',
          jobName: 'agent-job-a1',
          observedGeneration: 1,
          conditions: [],
        },
      });
      assert.equal(await sample(h.metrics, 'controller_status_patches_total'), 1);
    });

    const superseding: { name: string; reply: FakeReply }[] = [
      {
        name: '409 Conflict',
        reply: {
          status: 409,
          body: status(
            409,
            'Conflict',
            'Operation cannot be fulfilled on agents.agents.re-cinq.com "a1": the object has been modified',
          ),
        },
      },
      {
        name: '404 NotFound (the Agent is gone)',
        reply: { status: 404, body: status(404, 'NotFound', 'agents.agents.re-cinq.com "a1" not found') },
      },
    ];
    for (const s of superseding) {
      it(`${s.name} → superseded; the events, metrics and deletes after it are dropped`, async () => {
        const h = harness((req) => (req.method === 'PATCH' ? s.reply : success(req)));
        const out = await executeActions(
          [
            patch(),
            ev('a1', 'Succeeded'),
            metric({ metric: 'runCompleted', phase: 'Succeeded', exitCode: 0 }),
            del('old', 'prune'),
          ],
          h.deps,
        );
        assert.equal(out.kind, 'superseded');
        assert.deepEqual(
          h.requests.map((r) => r.method),
          ['PATCH'],
        );
        assert.equal(h.events.calls.length, 0);
        assert.equal(
          await sample(h.metrics, 'controller_runs_completed_total{exit_code="0",phase="Succeeded"}'),
          0,
        );
        assert.equal(await sample(h.metrics, 'controller_status_patches_total'), 0);
      });
    }

    it('500 → error naming the action; later actions are not run', async () => {
      const h = harness((req) =>
        req.method === 'PATCH' ? { status: 500, body: status(500, 'InternalError', 'boom') } : success(req),
      );
      const out = await executeActions([patch(), ev('a1', 'Started')], h.deps);
      assert.equal(out.kind, 'error');
      assert.equal(out.kind === 'error' && out.action, 'patchStatus');
      assert.equal(h.events.calls.length, 0);
    });

    it('a status patch after a created Job still runs when the create succeeded', async () => {
      const h = harness();
      await executeActions([createJob(), patch('a1', 'rv-9')], h.deps);
      const req = h.requests[1];
      assert.ok(req);
      assert.deepEqual((req.body as { metadata: unknown }).metadata, { resourceVersion: 'rv-9' });
    });
  });

  describe('deleteAgent', () => {
    it('sends DELETE with preconditions.resourceVersion and Background propagation', async () => {
      const h = harness();
      const out = await executeActions([del('victim', 'preempt', '555')], h.deps);
      assert.deepEqual(out, { kind: 'done' });
      const req = h.requests[0];
      assert.ok(req);
      assert.equal(req.method, 'DELETE');
      assert.equal(req.path, agentPath('victim'));
      assert.deepEqual(req.body, {
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        propagationPolicy: 'Background',
        preconditions: { resourceVersion: '555' },
      });
    });

    const conflict: FakeReply = {
      status: 409,
      body: status(
        409,
        'Conflict',
        'Operation cannot be fulfilled on agents.agents.re-cinq.com "victim": Precondition failed',
      ),
    };
    const cases: {
      name: string;
      purpose: 'prune' | 'preempt';
      reply: FakeReply;
      outcome: ExecuteOutcome['kind'];
      continues: boolean;
    }[] = [
      { name: '200', purpose: 'prune', reply: { status: 200, body: {} }, outcome: 'done', continues: true },
      { name: '202', purpose: 'preempt', reply: { status: 202, body: {} }, outcome: 'done', continues: true },
      {
        name: '404 (already gone), prune',
        purpose: 'prune',
        reply: { status: 404, body: status(404, 'NotFound', 'not found') },
        outcome: 'done',
        continues: true,
      },
      {
        name: '404 (already gone), preempt',
        purpose: 'preempt',
        reply: { status: 404, body: status(404, 'NotFound', 'not found') },
        outcome: 'done',
        continues: true,
      },
      { name: '409, prune → skipped', purpose: 'prune', reply: conflict, outcome: 'done', continues: true },
      {
        name: '409, preempt → superseded',
        purpose: 'preempt',
        reply: conflict,
        outcome: 'superseded',
        continues: false,
      },
      {
        name: '500, prune → error',
        purpose: 'prune',
        reply: { status: 500, body: status(500, 'InternalError', 'boom') },
        outcome: 'error',
        continues: false,
      },
    ];
    for (const c of cases) {
      it(`${c.name}: outcome ${c.outcome}, later actions ${c.continues ? 'run' : 'dropped'}`, async () => {
        const h = harness((req) => (req.method === 'DELETE' ? c.reply : success(req)));
        const out = await executeActions(
          [
            del('victim', c.purpose),
            ev('victim', 'Preempted'),
            metric({ metric: 'runFailure', kind: 'preempted' }),
            createJob(),
          ],
          h.deps,
        );
        assert.equal(out.kind, c.outcome);
        if (out.kind === 'error') assert.equal(out.action, 'deleteAgent');
        assert.deepEqual(
          h.requests.map((r) => r.method),
          c.continues ? ['DELETE', 'POST'] : ['DELETE'],
        );
        assert.equal(h.events.calls.length, c.continues ? 1 : 0);
        assert.equal(
          await sample(h.metrics, 'controller_run_failures_total{kind="preempted"}'),
          c.continues ? 1 : 0,
        );
      });
    }

    it('a skipped prune does not hide a later prune', async () => {
      const h = harness((req) =>
        req.method === 'DELETE' && req.path.endsWith('/old1') ? conflict : success(req),
      );
      const out = await executeActions([del('old1', 'prune'), del('old2', 'prune')], h.deps);
      assert.deepEqual(out, { kind: 'done' });
      assert.deepEqual(
        h.requests.map((r) => r.path),
        [agentPath('old1'), agentPath('old2')],
      );
    });
  });

  describe('deleteAgent with backgroundPrunes', () => {
    it('a prune never holds up or fails the decision; a refused one gives its claim back and warns', async () => {
      const h = harness((req) =>
        req.method === 'DELETE' ? { status: 500, body: status(500, 'InternalError', 'boom') } : success(req),
      );
      const tombstones = createTombstones(() => 0);
      const out = await executeActions([del('old1', 'prune'), createJob()], {
        ...h.deps,
        tombstones,
        backgroundPrunes: true,
      });
      assert.deepEqual(out, { kind: 'done' });
      assert.deepEqual(
        h.requests.map((r) => r.method),
        ['DELETE', 'POST'],
      );
      await new Promise((r) => setImmediate(r));
      assert.equal(tombstones.has('uid-old1'), false, 'the refused claim was given back');
      assert.ok(h.logs.some((l) => l.msg === 'Pruning an Agent failed; the next sweep retries'));
    });

    it('a preemption still runs in line and stops the decision when refused', async () => {
      const h = harness((req) =>
        req.method === 'DELETE' ? { status: 500, body: status(500, 'InternalError', 'boom') } : success(req),
      );
      const out = await executeActions([del('victim', 'preempt'), createJob()], {
        ...h.deps,
        backgroundPrunes: true,
      });
      assert.equal(out.kind, 'error');
      assert.deepEqual(
        h.requests.map((r) => r.method),
        ['DELETE'],
      );
    });
  });

  describe('recordEvent', () => {
    it('records the Event on the Agent (apiVersion, kind, name, namespace, uid) with type, reason and message', async () => {
      const h = harness();
      await executeActions(
        [{ kind: 'recordEvent', ref: ref('a1'), type: 'Warning', reason: 'JobFailed', message: 'it broke' }],
        h.deps,
      );
      assert.deepEqual(h.events.calls, [
        {
          obj: {
            apiVersion: 'agents.re-cinq.com/v1alpha1',
            kind: 'Agent',
            metadata: { name: 'a1', namespace: NS, uid: 'uid-a1' },
          },
          note: { type: 'Warning', reason: 'JobFailed', message: 'it broke' },
        },
      ]);
      assert.equal(h.requests.length, 0, 'the stub recorder makes no request itself');
    });

    it('an Event the API server refuses (real recorder, POST 500) does not stop the decision', async () => {
      const timeline: string[] = [];
      const transport = createFakeTransport({
        request: (req) => {
          timeline.push(`${req.method} ${req.path}`);
          if (req.path.endsWith('/events')) return { status: 500, body: status(500, 'InternalError', 'no') };
          return success(req);
        },
      });
      const logs: string[] = [];
      const logger = createLogger('debug', (line) => void logs.push(line));
      const metrics = createControllerMetrics(false);
      const events = createEventRecorder({
        transport,
        component: 'agent-controller',
        instance: 'test',
        now: () => at(10).getTime(),
        random: () => 0.5,
        logger,
      });
      const out = await executeActions(
        [ev('a1', 'Started'), patch(), metric({ metric: 'runFailure', kind: 'job_failed' })],
        { transport, events, metrics, logger },
      );
      assert.deepEqual(out, { kind: 'done' });
      assert.deepEqual(timeline, [`POST /api/v1/namespaces/${NS}/events`, `PATCH ${agentPath('a1')}/status`]);
      assert.equal(await sample(metrics, 'controller_run_failures_total{kind="job_failed"}'), 1);
      assert.ok(logs.some((l) => l.includes('Event not recorded')));
    });

    for (const failure of ['reject', 'throw'] as const) {
      it(`a recorder that ${failure}s does not stop the decision (best effort, executor contract)`, async () => {
        const h = harness(success, { eventFailure: failure });
        let out: ExecuteOutcome | undefined;
        await assert.doesNotReject(async () => {
          out = await executeActions(
            [ev('a1', 'Started'), patch(), metric({ metric: 'runQueue', seconds: 2 })],
            h.deps,
          );
        });
        assert.deepEqual(out, { kind: 'done' });
        assert.deepEqual(h.timeline, ['event Started', `PATCH ${agentPath('a1')}/status`]);
        assert.equal(await sample(h.metrics, 'controller_run_queue_seconds_count'), 1);
      });
    }
  });

  describe('observeMetric', () => {
    const cases: {
      name: string;
      observation: MetricObservation;
      expect: Record<string, number>;
    }[] = [
      {
        name: 'runCompleted Succeeded, exit code 0',
        observation: { metric: 'runCompleted', phase: 'Succeeded', exitCode: 0 },
        expect: { 'controller_runs_completed_total{exit_code="0",phase="Succeeded"}': 1 },
      },
      {
        name: 'runCompleted Failed, exit code 137',
        observation: { metric: 'runCompleted', phase: 'Failed', exitCode: 137 },
        expect: { 'controller_runs_completed_total{exit_code="137",phase="Failed"}': 1 },
      },
      {
        name: 'runCompleted Failed without an exit code → exit_code=""',
        observation: { metric: 'runCompleted', phase: 'Failed' },
        expect: { 'controller_runs_completed_total{exit_code="",phase="Failed"}': 1 },
      },
      {
        name: 'runDuration Succeeded',
        observation: { metric: 'runDuration', phase: 'Succeeded', seconds: 42.5 },
        expect: {
          'controller_run_duration_seconds_count{phase="Succeeded"}': 1,
          'controller_run_duration_seconds_sum{phase="Succeeded"}': 42.5,
          'controller_run_duration_seconds_bucket{le="60",phase="Succeeded"}': 1,
          'controller_run_duration_seconds_bucket{le="15",phase="Succeeded"}': 0,
        },
      },
      {
        name: 'runDuration Failed, negative clamped to 0',
        observation: { metric: 'runDuration', phase: 'Failed', seconds: -3 },
        expect: {
          'controller_run_duration_seconds_count{phase="Failed"}': 1,
          'controller_run_duration_seconds_sum{phase="Failed"}': 0,
        },
      },
      {
        name: 'runQueue',
        observation: { metric: 'runQueue', seconds: 7 },
        expect: {
          controller_run_queue_seconds_count: 1,
          controller_run_queue_seconds_sum: 7,
          'controller_run_queue_seconds_bucket{le="5"}': 0,
          'controller_run_queue_seconds_bucket{le="15"}': 1,
        },
      },
      ...(['missing_ref', 'job_failed', 'output_unavailable', 'preempted', 'build_error'] as const).map(
        (kind) => ({
          name: `runFailure ${kind}`,
          observation: { metric: 'runFailure', kind } as MetricObservation,
          expect: { [`controller_run_failures_total{kind="${kind}"}`]: 1 },
        }),
      ),
    ];
    for (const c of cases) {
      it(`${c.name} lands in its series and nowhere else`, async () => {
        const h = harness();
        const before = await samples(h.metrics);
        const out = await executeActions([metric(c.observation)], h.deps);
        assert.deepEqual(out, { kind: 'done' });
        assert.equal(h.requests.length, 0);
        const after = await samples(h.metrics);
        for (const [series, value] of Object.entries(c.expect)) {
          assert.equal(after.get(series), value, series);
        }
        // Every other series that existed is unchanged, and new series belong to the expected metric only.
        const metricName = Object.keys(c.expect)[0]?.replace(/(_count|_sum|_bucket)?(\{.*)?$/, '') ?? '';
        for (const [series, value] of after) {
          if (c.expect[series] !== undefined) continue;
          if (before.has(series)) {
            if (series.startsWith(metricName)) continue;
            assert.equal(value, before.get(series), `${series} changed`);
          } else {
            assert.ok(series.startsWith(metricName), `unexpected new series ${series}`);
          }
        }
      });
    }

    it('observe() accumulates: two observations of one series count twice', async () => {
      const metrics = createControllerMetrics(false);
      observe(metrics, { metric: 'runCompleted', phase: 'Succeeded', exitCode: 0 });
      observe(metrics, { metric: 'runCompleted', phase: 'Succeeded', exitCode: 0 });
      observe(metrics, { metric: 'runFailure', kind: 'job_failed' });
      assert.equal(
        await sample(metrics, 'controller_runs_completed_total{exit_code="0",phase="Succeeded"}'),
        2,
      );
      assert.equal(await sample(metrics, 'controller_run_failures_total{kind="job_failed"}'), 1);
      assert.equal(await sample(metrics, 'controller_run_failures_total{kind="preempted"}'), 0);
    });
  });
});

describe('executeActions: what became of each action, for the run spans (issue 10 §5)', () => {
  const conflict = { status: 409, body: status(409, 'Conflict', 'the object has been modified') };
  const onActions = (
    reply: (req: FakeRequest) => FakeReply,
    deps: { beforeCreateJob?: () => boolean } = {},
  ) => {
    const h = harness(reply);
    const seen: [string, string][] = [];
    return {
      seen,
      run: (actions: readonly Action[]) =>
        executeActions(actions, {
          ...h.deps,
          ...deps,
          onAction: (action, startMs, endMs, result) => {
            assert.ok(endMs >= startMs);
            seen.push([action.kind, result.kind === 'failed' ? `failed: ${result.error}` : result.kind]);
          },
        }),
    };
  };

  it('applied, not applied (a 409 precondition, a Job that exists, no longer leading) or failed', async () => {
    const ok = onActions(success);
    await ok.run([createPolicy(), createJob(), patch()]);
    assert.deepEqual(ok.seen, [
      ['createNetworkPolicy', 'applied'],
      ['createJob', 'applied'],
      ['patchStatus', 'applied'],
    ]);
    const superseded = onActions((req) => (req.method === 'PATCH' ? conflict : success(req)));
    await superseded.run([patch(), ev('a1', 'After')]);
    assert.deepEqual(superseded.seen, [['patchStatus', 'notApplied']]);
    const exists = onActions(() => ({
      status: 409,
      body: status(409, 'AlreadyExists', 'jobs "x" already exists'),
    }));
    await exists.run([createJob()]);
    assert.deepEqual(exists.seen, [['createJob', 'notApplied']]);
    const fenced = onActions(success, { beforeCreateJob: () => false });
    await fenced.run([createJob()]);
    assert.deepEqual(fenced.seen, [['createJob', 'notApplied']]);
    const broken = onActions(() => ({ status: 500, body: status(500, 'InternalError', 'etcd is down') }));
    await broken.run([createJob()]);
    assert.equal(broken.seen.length, 1);
    assert.match(broken.seen[0]?.[1] ?? '', /^failed: .*etcd is down/);
  });

  it('a throwing span hook never stops the decision', async () => {
    const h = harness();
    const outcome = await executeActions([createJob(), patch()], {
      ...h.deps,
      onAction: () => {
        throw new Error('exporter bug');
      },
    });
    assert.deepEqual(outcome, { kind: 'done' });
    assert.deepEqual(
      h.timeline.filter((l) => !l.startsWith('event')),
      [`POST ${JOBS_PATH}`, `PATCH ${agentPath('a1')}/status`],
    );
  });
});

describe('executeActions: a server API key (issue 12)', () => {
  const SECRETS_PATH = `/api/v1/namespaces/${NS}/secrets`;
  const action: Action = {
    kind: 'createServerApiKey',
    ref: ref('srv'),
    secretName: 'srv-server-api-key',
    recorded: false,
  };

  it("reports the created Secret's uid to the snapshot, writes no status, and never logs the key", async () => {
    const serverKeys = createServerKeys();
    const h = harness((req) => {
      if (req.method === 'POST' && req.path === SECRETS_PATH) {
        const body = req.body as { metadata: Record<string, unknown> };
        return { status: 201, body: { ...body, metadata: { ...body.metadata, uid: 'uid-secret-1' } } };
      }
      return success(req);
    });
    assert.deepEqual(await executeActions([action], { ...h.deps, serverKeys }), { kind: 'done' });
    assert.deepEqual(h.timeline, [`POST ${SECRETS_PATH}`], "recording it is the next decision's");
    const posted = h.requests[0]?.body as { stringData: Record<string, string> };
    const key = posted.stringData['api-key'] ?? '';
    assert.match(key, /^sk-[0-9a-f]{48}$/);
    assert.deepEqual(serverKeys.get('uid-srv'), { kind: 'created', uid: 'uid-secret-1' });
    assert.ok(!JSON.stringify(h.logs).includes(key), 'the key is not logged');
  });

  it('reports a taken name only when a uid was recorded (a rotation someone raced); stops on another error', async () => {
    const taken = () =>
      harness((req) =>
        req.method === 'POST' && req.path === SECRETS_PATH
          ? { status: 409, body: status(409, 'AlreadyExists', 'secrets "srv-server-api-key" already exists') }
          : success(req),
      );
    const fresh = createServerKeys();
    const first = taken();
    assert.deepEqual(await executeActions([action], { ...first.deps, serverKeys: fresh }), { kind: 'done' });
    assert.deepEqual(first.timeline, [`POST ${SECRETS_PATH}`]);
    assert.equal(fresh.get('uid-srv'), undefined, 'nothing recorded: nothing to clear');
    const rotated = createServerKeys();
    const second = taken();
    const out = await executeActions([{ ...action, recorded: true }], {
      ...second.deps,
      serverKeys: rotated,
    });
    assert.deepEqual(out, { kind: 'done' });
    assert.deepEqual(second.timeline, [`POST ${SECRETS_PATH}`], 'no status write: clearing it is decided');
    assert.deepEqual(rotated.get('uid-srv'), { kind: 'taken' });
    const refused = harness((req) =>
      req.method === 'POST' && req.path === SECRETS_PATH
        ? { status: 403, body: status(403, 'Forbidden', 'no') }
        : success(req),
    );
    const keys = createServerKeys();
    const failed = await executeActions([action], { ...refused.deps, serverKeys: keys });
    assert.equal(failed.kind, 'error');
    assert.deepEqual(refused.timeline, [`POST ${SECRETS_PATH}`]);
    assert.equal(keys.get('uid-srv'), undefined);
  });

  it('the snapshot reads an observation until the status says it, then forgets it', () => {
    const keys = createServerKeys();
    keys.set('a', { kind: 'created', uid: 'uid-secret-1' });
    assert.deepEqual(serverKeyOf(keys, 'a', undefined), { kind: 'created', uid: 'uid-secret-1' });
    assert.deepEqual(serverKeyOf(keys, 'a', 'uid-old'), { kind: 'created', uid: 'uid-secret-1' });
    assert.equal(serverKeyOf(keys, 'a', 'uid-secret-1'), undefined);
    assert.equal(keys.get('a'), undefined, 'forgotten once recorded');
    keys.set('b', { kind: 'taken' });
    assert.deepEqual(serverKeyOf(keys, 'b', 'uid-old'), { kind: 'taken' });
    assert.equal(serverKeyOf(keys, 'b', undefined), undefined);
    assert.equal(keys.get('b'), undefined, 'forgotten once cleared');
  });
});
