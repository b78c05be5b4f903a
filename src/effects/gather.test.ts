import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type Agent,
  type Job,
  type Pod,
  parseAgent,
  parseJob,
  parsePod,
  parseStation,
} from '../api/index.ts';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import type { KubeObject } from '../kube/index.ts';
import { Store } from '../runtime/index.ts';
import { ok, type Result } from '../shared/result.ts';
import { FinishedRunIndex } from './finished-runs.ts';
import {
  type GatherDeps,
  gatherEvidence,
  LOG_TAIL_LINES,
  lookupDefinition,
  lookupPolicy,
  lookupStation,
  observeJob,
  runJobName,
} from './gather.ts';

const NS = 'team';
const GROUP_PATH = `/apis/agents.re-cinq.com/v1alpha1/namespaces/${NS}`;
const STATION_PATH = `${GROUP_PATH}/stations/stn`;
const DEFINITION_PATH = `${GROUP_PATH}/agentdefinitions/def`;
const jobPath = (name: string): string => `/apis/batch/v1/namespaces/${NS}/jobs/${name}`;
const PODS_PATH = `/api/v1/namespaces/${NS}/pods`;

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

const meta = (name: string, rv = '10', extra: Record<string, unknown> = {}) => ({
  name,
  namespace: NS,
  uid: `uid-${name}`,
  resourceVersion: rv,
  generation: 1,
  creationTimestamp: '2025-03-01T11:58:00Z',
  managedFields: [{ manager: 'kubectl', operation: 'Update' }],
  ...extra,
});

// Raw objects as the API server returns them (apiVersion/kind set, server-populated metadata, no parse defaults).
const rawStation = (spec: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'agents.re-cinq.com/v1alpha1',
  kind: 'Station',
  metadata: meta('stn'),
  spec: {
    agentDefRef: 'def',
    template: { spec: { containers: [{ name: 'agent', image: 'busybox' }] } },
    ...spec,
  },
});
const rawDefinition = (spec: Record<string, unknown> = { prompt: 'Do {thing}' }): KubeObject => ({
  apiVersion: 'agents.re-cinq.com/v1alpha1',
  kind: 'AgentDefinition',
  metadata: meta('def'),
  spec,
});
const rawJob = (name: string, status: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: {
    ...meta(name, '70'),
    labels: { 'agents.re-cinq.com/component': 'job', 'job-name': name },
    ownerReferences: [
      {
        apiVersion: 'agents.re-cinq.com/v1alpha1',
        kind: 'Agent',
        name: 'a1',
        uid: 'uid-a1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  },
  spec: { backoffLimit: 0, activeDeadlineSeconds: 1800, template: { spec: { containers: [] } } },
  status,
});
/** A pod item of a LIST response (the API server omits apiVersion/kind on list items). */
const podItem = (name: string, job: string, created: string, exitCode: number | undefined) => ({
  metadata: { ...meta(name, '90'), creationTimestamp: created, labels: { 'job-name': job } },
  spec: { containers: [{ name: 'agent', image: 'busybox' }], nodeName: 'node-1' },
  status: {
    phase: exitCode === undefined ? 'Running' : exitCode === 0 ? 'Succeeded' : 'Failed',
    containerStatuses: [
      {
        name: 'agent',
        ready: false,
        restartCount: 0,
        state: exitCode === undefined ? { running: {} } : { terminated: { exitCode, reason: 'Completed' } },
      },
    ],
  },
});
const podList = (items: unknown[]) => ({
  kind: 'PodList',
  apiVersion: 'v1',
  metadata: { resourceVersion: '1234' },
  items,
});

function unwrap<T>(r: Result<T, string>): T {
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

const agent = (status?: Record<string, unknown>, stationRef = 'stn'): Agent =>
  unwrap(
    parseAgent({
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'Agent',
      metadata: meta('a1', '20'),
      spec: { stationRef },
      ...(status !== undefined ? { status } : {}),
    }),
  );

const FINISHED = { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] };
const job = (name = 'agent-job-a1'): Job => unwrap(parseJob(rawJob(name, FINISHED)));

interface World {
  readonly deps: GatherDeps;
  readonly requests: FakeRequest[];
}

function world(
  reply: (req: FakeRequest) => FakeReply | undefined,
  cached: { stations?: KubeObject[]; definitions?: KubeObject[]; jobs?: KubeObject[] } = {},
): World {
  const stations = new Store<KubeObject>();
  const definitions = new Store<KubeObject>();
  const jobs = new Store<KubeObject>();
  stations.replace(cached.stations ?? []);
  definitions.replace(cached.definitions ?? []);
  jobs.replace(cached.jobs ?? []);
  const transport = createFakeTransport({
    request: (req) => reply(req) ?? notFound(`unexpected ${req.method} ${req.path}`),
  });
  return { deps: { transport, stations, definitions, jobs, timeoutMs: 500 }, requests: transport.requests };
}

const summary = (reqs: readonly FakeRequest[]): string[] => reqs.map((r) => `${r.method} ${r.path}`);

describe('lookupStation / lookupDefinition', () => {
  const parsedStation = (() => {
    const w = world(() => undefined, { stations: [rawStation()] });
    return lookupStation(w.deps, agent());
  })();

  const lookups = [
    {
      what: 'Station',
      path: STATION_PATH,
      raw: rawStation(),
      invalid: rawStation({ agentDefRef: 42 }),
      invalidMessage: /agentDefRef/,
      cache: (o: KubeObject) => ({ stations: [o] }),
      run: (deps: GatherDeps) => lookupStation(deps, agent()),
    },
    {
      what: 'AgentDefinition',
      path: DEFINITION_PATH,
      raw: rawDefinition(),
      invalid: rawDefinition({ description: 'no prompt' }),
      invalidMessage: /prompt/,
      cache: (o: KubeObject) => ({ definitions: [o] }),
      run: async (deps: GatherDeps) => {
        const s = await parsedStation;
        assert.ok(s.ok && s.value.kind === 'found');
        return lookupDefinition(deps, NS, s.value.value);
      },
    },
  ] as const;

  for (const l of lookups) {
    describe(l.what, () => {
      it('found in the cache → found, no request', async () => {
        const w = world(() => undefined, l.cache(l.raw));
        const r = await l.run(w.deps);
        assert.ok(r.ok);
        assert.equal(r.value.kind, 'found');
        assert.equal(r.value.kind === 'found' && r.value.value.metadata.name, l.raw.metadata.name);
        assert.deepEqual(w.requests, []);
      });

      it('cache miss → one live GET of the object; found', async () => {
        const w = world((req) => (req.path === l.path ? { status: 200, body: l.raw } : undefined));
        const r = await l.run(w.deps);
        assert.ok(r.ok);
        assert.equal(r.value.kind, 'found');
        assert.deepEqual(summary(w.requests), [`GET ${l.path}`]);
      });

      it('cache miss, GET 404 → absent', async () => {
        const w = world((req) => (req.path === l.path ? notFound(l.what) : undefined));
        const r = await l.run(w.deps);
        assert.deepEqual(r, ok({ kind: 'absent' }));
        assert.deepEqual(summary(w.requests), [`GET ${l.path}`]);
      });

      const failures: { name: string; reply: FakeReply; kind: string }[] = [
        { name: '500', reply: internal, kind: 'api' },
        {
          name: '403',
          reply: { status: 403, body: status(403, 'Forbidden', 'forbidden') },
          kind: 'api',
        },
        { name: 'network', reply: { error: { kind: 'network', message: 'ECONNRESET' } }, kind: 'network' },
        {
          name: 'timeout',
          reply: { error: { kind: 'timeout', message: 'no answer in 500 ms', idle: false } },
          kind: 'timeout',
        },
        { name: '200 with a non-object body', reply: { status: 200, body: 'not json' }, kind: 'decode' },
      ];
      for (const f of failures) {
        it(`cache miss, GET fails (${f.name}) → an error, never absent`, async () => {
          const w = world((req) => (req.path === l.path ? f.reply : undefined));
          const r = await l.run(w.deps);
          assert.equal(r.ok, false, `expected an error, got ${JSON.stringify(r)}`);
          assert.equal(!r.ok && r.error.kind, f.kind);
        });
      }

      it('an invalid object in the cache → invalid with the parse message, no request', async () => {
        const w = world(() => undefined, l.cache(l.invalid));
        const r = await l.run(w.deps);
        assert.ok(r.ok);
        assert.equal(r.value.kind, 'invalid');
        if (r.value.kind !== 'invalid') return;
        assert.match(r.value.message, l.invalidMessage);
        assert.match(r.value.message, new RegExp(`invalid ${l.what}`));
        assert.deepEqual(w.requests, []);
      });

      it('an invalid object from the live GET → invalid with the parse message', async () => {
        const w = world((req) => (req.path === l.path ? { status: 200, body: l.invalid } : undefined));
        const r = await l.run(w.deps);
        assert.ok(r.ok);
        assert.equal(r.value.kind, 'invalid');
        assert.match(r.value.kind === 'invalid' ? r.value.message : '', l.invalidMessage);
      });
    });
  }

  it('looks the Station up by the Agent namespace and spec.stationRef', async () => {
    const w = world(() => undefined);
    await lookupStation(w.deps, agent(undefined, 'other-station'));
    assert.deepEqual(summary(w.requests), [`GET ${GROUP_PATH}/stations/other-station`]);
  });

  it('a cached Station of another namespace does not count', async () => {
    const elsewhere = { ...rawStation(), metadata: { ...meta('stn'), namespace: 'elsewhere' } };
    const w = world(() => undefined, { stations: [elsewhere] });
    const r = await lookupStation(w.deps, agent());
    assert.deepEqual(r, ok({ kind: 'absent' }));
    assert.deepEqual(summary(w.requests), [`GET ${STATION_PATH}`]);
  });
});

describe('runJobName', () => {
  it('status.jobName wins; else agent-job-<name>', () => {
    assert.equal(runJobName(agent()), 'agent-job-a1');
    assert.equal(runJobName(agent({ phase: 'Running', jobName: 'custom-job' })), 'custom-job');
  });
});

describe('observeJob', () => {
  const running = agent({ phase: 'Running', jobName: 'agent-job-a1', startedAt: '2025-03-01T12:00:01Z' });

  it('from the Job cache → present, evidence notGathered, no request', async () => {
    const w = world(() => undefined, { jobs: [rawJob('agent-job-a1', FINISHED)] });
    const r = await observeJob(w.deps, running);
    assert.ok(r.ok);
    assert.equal(r.value.kind, 'present');
    if (r.value.kind !== 'present') return;
    assert.equal(r.value.job.metadata.name, 'agent-job-a1');
    assert.deepEqual(r.value.evidence, { kind: 'notGathered' });
    assert.deepEqual(w.requests, []);
  });

  it('cache miss → live GET of the Job named status.jobName', async () => {
    const a = agent({ phase: 'Running', jobName: 'renamed-job' });
    const w = world((req) =>
      req.path === jobPath('renamed-job') ? { status: 200, body: rawJob('renamed-job') } : undefined,
    );
    const r = await observeJob(w.deps, a);
    assert.ok(r.ok);
    assert.equal(r.value.kind === 'present' && r.value.job.metadata.name, 'renamed-job');
    assert.deepEqual(summary(w.requests), [`GET ${jobPath('renamed-job')}`]);
  });

  it('without status.jobName the Job name is derived from the Agent name', async () => {
    const w = world(() => undefined);
    await observeJob(w.deps, agent());
    assert.deepEqual(summary(w.requests), [`GET ${jobPath('agent-job-a1')}`]);
  });

  it('GET 404 → absent', async () => {
    const w = world((req) => (req.path === jobPath('agent-job-a1') ? notFound('job') : undefined));
    assert.deepEqual(await observeJob(w.deps, running), ok({ kind: 'absent' }));
  });

  it('GET 500 → an error (not absent)', async () => {
    const w = world(() => internal);
    const r = await observeJob(w.deps, running);
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.error.kind === 'api' && r.error.code, 500);
  });

  it('a Job that does not parse → a decode error naming it', async () => {
    const bad = { ...rawJob('agent-job-a1'), status: { succeeded: 'one' } };
    const w = world(() => undefined, { jobs: [bad] });
    const r = await observeJob(w.deps, running);
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.equal(r.error.kind, 'decode');
    assert.match(r.error.message, /agent-job-a1/);
  });
});

describe('gatherEvidence', () => {
  const j = job();
  const logPath = (pod: string): string => `${PODS_PATH}/${pod}/log`;

  describe('with finished pods cached (issue 15 §2)', () => {
    const finishedPod = (): Pod => {
      const raw = podItem('agent-job-a1-xyz12', 'agent-job-a1', '2025-03-01T12:00:02Z', 0);
      const labels = { ...raw.metadata.labels, 'controller-uid': j.metadata.uid };
      return unwrap(parsePod({ ...raw, metadata: { ...raw.metadata, labels } }));
    };
    const withCache = (w: World): { deps: GatherDeps; index: FinishedRunIndex; sources: string[] } => {
      const sources: string[] = [];
      const index = new FinishedRunIndex({
        maxLogBytes: 1 << 20,
        maxReads: 4,
        onEvidence: (s) => sources.push(s),
      });
      index.podChanged({ type: 'added', object: finishedPod() });
      return { deps: { ...w.deps, finishedRuns: index }, index, sources };
    };

    it('asks the API server nothing when the pod and its log were read ahead', async () => {
      const w = world(() => undefined);
      const { deps, index, sources } = withCache(w);
      index.readAhead(finishedPod(), async () => ({ kind: 'read', text: 'the answer\n' }));
      const evidence = await gatherEvidence(deps, j);
      assert.deepEqual(summary(w.requests), []);
      assert.deepEqual(sources, ['read_ahead']);
      assert.equal(evidence.kind, 'pod');
      if (evidence.kind !== 'pod') return;
      assert.equal(evidence.pod.metadata.name, 'agent-job-a1-xyz12');
      assert.deepEqual(evidence.log, { kind: 'read', text: 'the answer\n' });
    });

    it('reads only the log when none was read ahead, or the read ahead failed', async () => {
      for (const ahead of [
        undefined,
        { kind: 'unavailable', detail: 'HTTP 503', transient: true },
      ] as const) {
        const w = world((req) =>
          req.path === logPath('agent-job-a1-xyz12') ? { status: 200, body: 'live\n' } : undefined,
        );
        const { deps, index, sources } = withCache(w);
        if (ahead !== undefined) index.readAhead(finishedPod(), async () => ahead);
        const evidence = await gatherEvidence(deps, j);
        assert.deepEqual(sources, ['cached_pod']);
        assert.deepEqual(summary(w.requests), [`GET ${logPath('agent-job-a1-xyz12')}`]);
        assert.equal(w.requests[0]?.query.container, 'agent');
        assert.deepEqual(evidence.kind === 'pod' ? evidence.log : undefined, {
          kind: 'read',
          text: 'live\n',
        });
      }
    });

    it("lists live only this Job's pods: one left by an earlier Job of the same name is not the run's", async () => {
      const own = podItem('agent-job-a1-new', 'agent-job-a1', '2025-03-01T12:00:02Z', undefined);
      const earlier = podItem('agent-job-a1-old', 'agent-job-a1', '2025-03-01T11:00:00Z', 9);
      const w = world((req) => {
        if (req.path === PODS_PATH) {
          return {
            status: 200,
            body: podList([
              {
                ...own,
                metadata: {
                  ...own.metadata,
                  labels: { ...own.metadata.labels, 'controller-uid': j.metadata.uid },
                },
              },
              {
                ...earlier,
                metadata: {
                  ...earlier.metadata,
                  labels: { ...earlier.metadata.labels, 'controller-uid': 'uid-earlier' },
                },
              },
            ]),
          };
        }
        if (req.path === logPath('agent-job-a1-new')) return { status: 200, body: 'mine\n' };
        return undefined;
      });
      const evidence = await gatherEvidence(w.deps, j);
      assert.equal(evidence.kind === 'pod' ? evidence.pod.metadata.name : evidence.kind, 'agent-job-a1-new');
    });

    it('lists the pods live when the cache cannot vouch for the Job (more pods counted than cached)', async () => {
      const w = world((req) => {
        if (req.path === PODS_PATH) return { status: 200, body: podList([]) };
        return undefined;
      });
      const { deps, sources } = withCache(w);
      const twice = unwrap(parseJob(rawJob('agent-job-a1', { ...FINISHED, failed: 1 })));
      const evidence = await gatherEvidence(deps, twice);
      assert.deepEqual(summary(w.requests), [`GET ${PODS_PATH}`]);
      assert.equal(evidence.kind, 'podGone');
      assert.deepEqual(sources, ['live']);
    });
  });

  it('lists the pods by job-name, reads the agent container log tail of the run pod', async () => {
    const w = world((req) => {
      if (req.path === PODS_PATH) {
        return {
          status: 200,
          body: podList([podItem('agent-job-a1-xyz12', 'agent-job-a1', '2025-03-01T12:00:02Z', 0)]),
        };
      }
      if (req.path === logPath('agent-job-a1-xyz12')) return { status: 200, body: 'line 1\nthe answer\n' };
      return undefined;
    });
    const evidence = await gatherEvidence(w.deps, j);
    assert.deepEqual(summary(w.requests), [`GET ${PODS_PATH}`, `GET ${logPath('agent-job-a1-xyz12')}`]);
    const [list, log] = w.requests;
    assert.equal(list?.query.labelSelector, 'job-name=agent-job-a1');
    assert.equal(log?.query.container, 'agent');
    assert.equal(log?.query.tailLines, '10000');
    assert.equal(LOG_TAIL_LINES, 10000);
    assert.equal(evidence.kind, 'pod');
    if (evidence.kind !== 'pod') return;
    assert.equal(evidence.pod.metadata.name, 'agent-job-a1-xyz12');
    assert.deepEqual(evidence.log, { kind: 'read', text: 'line 1\nthe answer\n' });
  });

  it('reads the log of the pod whose agent container terminated, not of a newer running one', async () => {
    const w = world((req) => {
      if (req.path === PODS_PATH) {
        return {
          status: 200,
          body: podList([
            podItem('agent-job-a1-newer', 'agent-job-a1', '2025-03-01T12:05:00Z', undefined),
            podItem('agent-job-a1-done1', 'agent-job-a1', '2025-03-01T12:00:02Z', 3),
          ]),
        };
      }
      if (req.path === logPath('agent-job-a1-done1')) return { status: 200, body: 'boom' };
      return undefined;
    });
    const evidence = await gatherEvidence(w.deps, j);
    assert.equal(evidence.kind === 'pod' && evidence.pod.metadata.name, 'agent-job-a1-done1');
    assert.deepEqual(evidence.kind === 'pod' && evidence.log, { kind: 'read', text: 'boom' });
  });

  it('no pods → podGone, no log read', async () => {
    const w = world((req) => (req.path === PODS_PATH ? { status: 200, body: podList([]) } : undefined));
    assert.deepEqual(await gatherEvidence(w.deps, j), { kind: 'podGone' });
    assert.deepEqual(summary(w.requests), [`GET ${PODS_PATH}`]);
  });

  const listFailures: { name: string; reply: FakeReply; detail: RegExp }[] = [
    { name: '500', reply: internal, detail: /api 500 InternalError: etcdserver: leader changed/ },
    {
      name: '403',
      reply: { status: 403, body: status(403, 'Forbidden', 'pods is forbidden') },
      detail: /api 403 Forbidden: pods is forbidden/,
    },
    {
      name: 'network',
      reply: { error: { kind: 'network', message: 'socket hang up' } },
      detail: /network: socket hang up/,
    },
  ];
  for (const f of listFailures) {
    it(`pod list fails (${f.name}) → unavailable with the reason, no log read`, async () => {
      const w = world((req) => (req.path === PODS_PATH ? f.reply : undefined));
      const evidence = await gatherEvidence(w.deps, j);
      assert.equal(evidence.kind, 'unavailable');
      if (evidence.kind !== 'unavailable') return;
      assert.match(evidence.detail, /listing the run's pods failed/);
      assert.match(evidence.detail, f.detail);
      assert.equal(w.requests.length, 1);
    });
  }

  const logFailures: { name: string; reply: FakeReply; detail: RegExp }[] = [
    {
      name: '400 (container not found)',
      reply: {
        status: 400,
        body: status(400, 'BadRequest', 'container agent is not valid for pod agent-job-a1-xyz12'),
      },
      detail: /api 400 BadRequest: container agent is not valid/,
    },
    { name: '404 (pod deleted)', reply: notFound('pod'), detail: /api 404 NotFound/ },
    {
      name: 'timeout',
      reply: { error: { kind: 'timeout', message: 'no answer', idle: false } },
      detail: /timeout: no answer/,
    },
  ];
  for (const f of logFailures) {
    it(`log read fails (${f.name}) → pod with log unavailable`, async () => {
      const w = world((req) => {
        if (req.path === PODS_PATH) {
          return {
            status: 200,
            body: podList([podItem('agent-job-a1-xyz12', 'agent-job-a1', '2025-03-01T12:00:02Z', 1)]),
          };
        }
        return req.path === logPath('agent-job-a1-xyz12') ? f.reply : undefined;
      });
      const evidence = await gatherEvidence(w.deps, j);
      assert.equal(evidence.kind, 'pod');
      if (evidence.kind !== 'pod') return;
      assert.equal(evidence.pod.metadata.name, 'agent-job-a1-xyz12');
      assert.equal(evidence.log.kind, 'unavailable');
      assert.match(evidence.log.kind === 'unavailable' ? evidence.log.detail : '', f.detail);
    });
  }

  it('follows pagination of the pod list', async () => {
    const w = world((req) => {
      if (req.path === PODS_PATH && req.query.continue === undefined) {
        return {
          status: 200,
          body: { ...podList([]), metadata: { resourceVersion: '1234', continue: 'page2' } },
        };
      }
      if (req.path === PODS_PATH && req.query.continue === 'page2') {
        return {
          status: 200,
          body: podList([podItem('agent-job-a1-p2', 'agent-job-a1', '2025-03-01T12:00:02Z', 0)]),
        };
      }
      if (req.path === logPath('agent-job-a1-p2')) return { status: 200, body: 'paged' };
      return undefined;
    });
    const evidence = await gatherEvidence(w.deps, j);
    assert.equal(evidence.kind === 'pod' && evidence.pod.metadata.name, 'agent-job-a1-p2');
    for (const r of w.requests.slice(0, 2)) assert.equal(r.query.labelSelector, 'job-name=agent-job-a1');
  });
});

describe('lookupPolicy: which AgentPolicy applies to a Station', () => {
  const POLICIES = '/apis/agents.re-cinq.com/v1alpha1/agentpolicies';
  const rawPolicy = (name: string, labels: Record<string, string> = {}, spec: unknown = {}): KubeObject =>
    ({
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'AgentPolicy',
      metadata: {
        name,
        uid: `uid-${name}`,
        resourceVersion: '1',
        creationTimestamp: '2026-01-01T00:00:00Z',
        labels,
      },
      spec,
    }) as KubeObject;
  const stationWith = (policyRef?: string) => {
    const p = parseStation({
      ...rawStation(),
      spec: {
        ...(rawStation() as unknown as { spec: object }).spec,
        ...(policyRef !== undefined ? { policyRef } : {}),
      },
    });
    if (!p.ok) throw new Error(p.error);
    return p.value;
  };
  const withPolicies = (
    cached: KubeObject[],
    reply: (req: FakeRequest) => FakeReply | undefined = () => undefined,
  ) => {
    const w = world(reply);
    const store = new Store<KubeObject>();
    store.replace(cached);
    return { deps: { ...w.deps, policies: { store } }, requests: w.requests };
  };
  const DEFAULT = { 'agents.re-cinq.com/default-policy': 'true' };

  it('the named policy from the cache, with no request', async () => {
    const w = withPolicies([rawPolicy('named'), rawPolicy('other', DEFAULT)]);
    const r = await lookupPolicy(w.deps, stationWith('named'));
    assert.ok(r.ok && r.value.kind === 'found');
    assert.equal(r.value.policy.metadata.name, 'named');
    assert.deepEqual(w.requests, []);
  });

  it('a named policy missing from the cache is confirmed with a live GET; 404 → missing', async () => {
    const found = withPolicies([], (req) =>
      req.path === `${POLICIES}/fresh` ? { status: 200, body: rawPolicy('fresh') } : undefined,
    );
    const r = await lookupPolicy(found.deps, stationWith('fresh'));
    assert.ok(r.ok && r.value.kind === 'found');
    assert.deepEqual(summary(found.requests), [`GET ${POLICIES}/fresh`]);
    const gone = withPolicies([]);
    assert.deepEqual(await lookupPolicy(gone.deps, stationWith('gone')), {
      ok: true,
      value: { kind: 'missing', name: 'gone' },
    });
  });

  it('a named policy that does not parse is missing, with why', async () => {
    const w = withPolicies([rawPolicy('bad', {}, { images: { allowedPrefixes: 'ghcr.io/' } })]);
    const r = await lookupPolicy(w.deps, stationWith('bad'));
    assert.ok(r.ok && r.value.kind === 'missing');
    assert.match(r.value.message ?? '', /invalid AgentPolicy/);
  });

  it('no policyRef: the default-labelled policy; several are ambiguous (the run fails rather than guess); else none', async () => {
    const one = withPolicies([rawPolicy('alpha', DEFAULT), rawPolicy('plain')]);
    const r = await lookupPolicy(one.deps, stationWith());
    assert.ok(r.ok && r.value.kind === 'found');
    assert.equal(r.value.policy.metadata.name, 'alpha');
    const two = withPolicies([rawPolicy('zeta', DEFAULT), rawPolicy('alpha', DEFAULT), rawPolicy('plain')]);
    assert.deepEqual(await lookupPolicy(two.deps, stationWith()), {
      ok: true,
      value: { kind: 'ambiguous', names: ['alpha', 'zeta'] },
    });
    const none = withPolicies([
      rawPolicy('plain'),
      rawPolicy('off', { 'agents.re-cinq.com/default-policy': 'false' }),
    ]);
    assert.deepEqual(await lookupPolicy(none.deps, stationWith()), { ok: true, value: { kind: 'none' } });
  });

  it('a default policy serves only the namespaces it lists: per-namespace defaults do not collide', async () => {
    const ns = stationWith().metadata.namespace;
    const w = withPolicies([
      rawPolicy('here', DEFAULT, { namespaces: [ns] }),
      rawPolicy('elsewhere', DEFAULT, { namespaces: ['other'] }),
    ]);
    const r = await lookupPolicy(w.deps, stationWith());
    assert.ok(r.ok && r.value.kind === 'found');
    assert.equal(r.value.policy.metadata.name, 'here');
    const only = withPolicies([rawPolicy('elsewhere', DEFAULT, { namespaces: ['other'] })]);
    assert.deepEqual(await lookupPolicy(only.deps, stationWith()), { ok: true, value: { kind: 'none' } });
    const broken = withPolicies([
      rawPolicy('elsewhere', DEFAULT, { namespaces: ['other'] }),
      rawPolicy('broken', DEFAULT, { namespaces: 'not-a-list' }),
    ]);
    const b = await lookupPolicy(broken.deps, stationWith());
    assert.ok(b.ok && b.value.kind === 'missing', 'an unreadable default cannot be ruled out');
  });

  it('policies that cannot be read: a Station naming one is missing (never unchecked), one naming none runs', async () => {
    const w = world(() => undefined);
    const deps = { ...w.deps, policies: { unavailable: 'the AgentPolicy CRD is not installed' } };
    assert.deepEqual(await lookupPolicy(deps, stationWith('named')), {
      ok: true,
      value: { kind: 'missing', name: 'named', message: 'the AgentPolicy CRD is not installed' },
    });
    assert.deepEqual(await lookupPolicy(deps, stationWith()), { ok: true, value: { kind: 'none' } });
  });
});
