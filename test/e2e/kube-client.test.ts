// e2e: alone — it compacts etcd, which ends every watch of the files beside it with 410 Gone
// The Kubernetes client shell against the real control plane: paginated LIST, WATCH, the informer's recovery
// paths (410 after an etcd compaction, a cut connection, a silent connection), optimistic concurrency, Events,
// client-certificate and TokenRequest authentication, and Lease election between two electors.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  CONFIG_MAPS,
  createEventRecorder,
  createObject,
  createTransport,
  deleteObject,
  getObject,
  isConflict,
  isForbidden,
  KubeObjectSchema,
  listAll,
  loadInClusterConfig,
  loadKubeconfig,
  mergePatch,
  NAMESPACES,
  type ResourceType,
  type Transport,
  watchOnce,
} from '../../src/kube/index.ts';
import {
  type Change,
  createInformer,
  createLeaderElector,
  type Informer,
  type InformerOptions,
  LeaseSchema,
  systemClock,
} from '../../src/runtime/index.ts';
import { createLogger } from '../../src/shared/log.ts';
import { e2eKubeconfigPath, pollUntil, readTestbedInfo } from '../support/index.ts';
import { startApiRelay } from '../support/relay.ts';

const kubeconfig = e2eKubeconfigPath();
const skip =
  kubeconfig === undefined
    ? 'KUBECONFIG is not set (run through `npm test -- e2e`)'
    : process.env.AGENT_E2E_RUNTIME === 'deno'
      ? 'the client is exercised on Deno by kube-bundle.test.ts; these run in the node pass only'
      : false;

const logger = createLogger(process.env.E2E_LOG_LEVEL === 'debug' ? 'debug' : 'error');
const PODTEMPLATES: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'podtemplates',
  kind: 'PodTemplate',
  namespaced: true,
};
const SA_RESOURCE: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'serviceaccounts',
  kind: 'ServiceAccount',
  namespaced: true,
};
const ROLES: ResourceType = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  plural: 'roles',
  kind: 'Role',
  namespaced: true,
};
const ROLE_BINDINGS: ResourceType = { ...ROLES, plural: 'rolebindings', kind: 'RoleBinding' };
const TokenRequestSchema = v.looseObject({ status: v.looseObject({ token: v.string() }) });

describe('kube client on the control plane', { skip }, () => {
  let direct: Transport;
  let server = '';
  let credentials: Parameters<typeof createTransport>[0]['credentials'];
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    const cfg = await loadKubeconfig({ path: kubeconfig ?? '' });
    assert.ok(cfg.ok, `kubeconfig loads: ${JSON.stringify(!cfg.ok && cfg.error)}`);
    server = cfg.value.server;
    credentials = cfg.value.credentials;
    direct = createTransport({ server, credentials });
  });
  after(async () => {
    for (const c of cleanups.reverse()) await c();
    direct?.close();
  });

  /** A fresh namespace, deleted after the file's tests. */
  async function namespace(prefix: string): Promise<string> {
    const name = `${prefix}-${randomBytes(3).toString('hex')}`;
    const r = await createObject(
      direct,
      NAMESPACES,
      undefined,
      { metadata: { name, labels: { 'agent-controller.test/e2e': 'true' } } },
      KubeObjectSchema,
    );
    assert.ok(r.ok, `namespace ${name} created`);
    cleanups.push(async () => void (await deleteObject(direct, NAMESPACES, { name })));
    return name;
  }

  async function createConfigMap(t: Transport, ns: string, name: string, data: Record<string, string> = {}) {
    const r = await createObject(t, CONFIG_MAPS, ns, { metadata: { name }, data }, KubeObjectSchema);
    assert.ok(r.ok, `configmap ${name} created: ${JSON.stringify(!r.ok && r.error)}`);
    return r.value;
  }

  /** Starts an informer; returns it with its recorded hooks and a stop function. */
  function startInformer<T extends v.InferOutput<typeof KubeObjectSchema>>(
    opts: Omit<InformerOptions<T>, 'clock' | 'random' | 'logger'>,
  ) {
    const seen = {
      lists: [] as string[],
      reconnects: 0,
      watchErrors: [] as string[],
      changes: [] as string[],
    };
    const inf: Informer<T> = createInformer<T>({
      clock: systemClock,
      random: Math.random,
      logger,
      ...opts,
      onChange: (c: Change<T>) => seen.changes.push(`${c.type}:${c.object.metadata.name}`),
      hooks: {
        onList: (r) => seen.lists.push(r),
        onReconnect: () => seen.reconnects++,
        onWatchError: (e) => seen.watchErrors.push(e.kind),
      },
    });
    const ctl = new AbortController();
    const done = inf.run(ctl.signal);
    const stop = async (): Promise<void> => {
      ctl.abort();
      await done;
    };
    cleanups.push(stop);
    return { inf, seen, stop };
  }

  it('lists more objects than the page size across pages', async () => {
    const ns = await namespace('kube-list');
    for (let i = 0; i < 7; i++) await createConfigMap(direct, ns, `cm-${i}`);
    const r = await listAll(direct, CONFIG_MAPS, KubeObjectSchema, { namespace: ns, limit: 3 });
    assert.ok(r.ok);
    const names = r.value.items.map((i) => i.metadata.name).filter((n) => n?.startsWith('cm-'));
    assert.deepEqual(names.sort(), ['cm-0', 'cm-1', 'cm-2', 'cm-3', 'cm-4', 'cm-5', 'cm-6']);
    assert.ok(r.value.pages >= 3, `pages: ${r.value.pages}`);
    assert.match(r.value.resourceVersion, /^\d+$/);
    assert.equal(r.value.items[0]?.kind, 'ConfigMap');
  });

  it('a watch sees an add, a modification and a delete', async () => {
    const ns = await namespace('kube-watch');
    const listed = await listAll(direct, CONFIG_MAPS, KubeObjectSchema, { namespace: ns });
    assert.ok(listed.ok);
    const events: string[] = [];
    const ctl = new AbortController();
    const watching = watchOnce(
      direct,
      CONFIG_MAPS,
      {
        namespace: ns,
        resourceVersion: listed.value.resourceVersion,
        timeoutSeconds: 30,
        signal: ctl.signal,
      },
      (e) => {
        if (
          e.kind === 'object' &&
          e.object.metadata &&
          (e.object.metadata as { name?: string }).name === 'w'
        ) {
          events.push(e.type);
        }
      },
    );
    const created = await createConfigMap(direct, ns, 'w', { a: '1' });
    const patched = await mergePatch(
      direct,
      CONFIG_MAPS,
      { namespace: ns, name: 'w' },
      { data: { a: '2' } },
      KubeObjectSchema,
      {
        resourceVersion: created.metadata.resourceVersion,
      },
    );
    assert.ok(patched.ok);
    assert.ok((await deleteObject(direct, CONFIG_MAPS, { namespace: ns, name: 'w' })).ok);
    await pollUntil(() => (events.length >= 3 ? true : undefined), {
      timeoutMs: 10_000,
      description: 'three watch events',
    });
    ctl.abort();
    const end = await watching;
    assert.equal(end.kind, 'aborted');
    assert.ok(end.events >= 3, `events counted: ${end.events}`);
    assert.deepEqual(events, ['ADDED', 'MODIFIED', 'DELETED']);
  });

  it('the informer mirrors add, modify and delete into its store', async () => {
    const ns = await namespace('kube-informer');
    await createConfigMap(direct, ns, 'before');
    const { inf, seen, stop } = startInformer({ transport: direct, resource: CONFIG_MAPS, namespace: ns });
    await inf.ready;
    assert.ok(inf.store.get(`${ns}/before`));
    await createConfigMap(direct, ns, 'after');
    await mergePatch(
      direct,
      CONFIG_MAPS,
      { namespace: ns, name: 'before' },
      { data: { x: 'y' } },
      KubeObjectSchema,
    );
    assert.ok((await deleteObject(direct, CONFIG_MAPS, { namespace: ns, name: 'after' })).ok);
    await pollUntil(() => (seen.changes.includes('deleted:after') ? true : undefined), {
      timeoutMs: 10_000,
      description: 'the informer to see the delete',
    });
    const before = inf.store.get(`${ns}/before`) as { data?: Record<string, string> } | undefined;
    assert.deepEqual(before?.data, { x: 'y' });
    assert.equal(inf.store.get(`${ns}/after`), undefined);
    assert.deepEqual(seen.lists, ['initial']);
    await stop();
  });

  it('a patch with a stale resourceVersion is reported as a conflict', async () => {
    const ns = await namespace('kube-conflict');
    const cm = await createConfigMap(direct, ns, 'c', { v: '0' });
    const ref = { namespace: ns, name: 'c' };
    const first = await mergePatch(direct, CONFIG_MAPS, ref, { data: { v: '1' } }, KubeObjectSchema, {
      resourceVersion: cm.metadata.resourceVersion,
    });
    assert.ok(first.ok);
    const stale = await mergePatch(direct, CONFIG_MAPS, ref, { data: { v: '2' } }, KubeObjectSchema, {
      resourceVersion: cm.metadata.resourceVersion,
    });
    assert.ok(!stale.ok && isConflict(stale.error), JSON.stringify(stale));
    const del = await deleteObject(direct, CONFIG_MAPS, ref, {
      resourceVersion: cm.metadata.resourceVersion,
    });
    assert.ok(!del.ok && isConflict(del.error), 'a delete with a stale precondition conflicts too');
    const now = await getObject(
      direct,
      CONFIG_MAPS,
      ref,
      v.looseObject({ data: v.record(v.string(), v.string()) }),
    );
    assert.ok(now.ok);
    assert.deepEqual(now.value.data, { v: '1' });
  });

  it('a stale resourceVersion after an etcd compaction yields gone, and the informer re-lists and converges', async (t) => {
    const testbed = readTestbedInfo(kubeconfig ?? '');
    if (!testbed) {
      t.skip('needs the local testbed (etcd URL in testbed.json)');
      return;
    }
    assert.equal(testbed.uncachedResource, PODTEMPLATES.plural);
    const ns = await namespace('kube-gone');
    const template = (name: string, label: string) => ({
      metadata: { name, labels: { l: label } },
      template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    });
    const create = async (name: string) => {
      const r = await createObject(direct, PODTEMPLATES, ns, template(name, '0'), KubeObjectSchema);
      assert.ok(r.ok);
      return r.value;
    };
    for (const n of ['pt-1', 'pt-2', 'pt-3']) await create(n);
    const relay = await startApiRelay(new URL(server));
    cleanups.push(() => relay.close());
    const viaRelay = createTransport({ server: relay.url, credentials });
    cleanups.push(async () => viaRelay.close());
    const { inf, seen, stop } = startInformer({
      transport: viaRelay,
      resource: PODTEMPLATES,
      namespace: ns,
      idleTimeoutMs: 10_000,
    });
    await inf.ready;
    await create('probe');
    await pollUntil(() => (inf.store.get(`${ns}/probe`) ? true : undefined), {
      timeoutMs: 10_000,
      description: 'the informer watch to be established',
    });
    const staleRv = inf.resourceVersion();
    assert.ok(staleRv);

    relay.block();
    await mergePatch(
      direct,
      PODTEMPLATES,
      { namespace: ns, name: 'pt-1' },
      { metadata: { labels: { l: '1' } } },
      KubeObjectSchema,
    );
    assert.ok((await deleteObject(direct, PODTEMPLATES, { namespace: ns, name: 'pt-2' })).ok);
    await create('pt-4');
    const etcd = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
      const res = await fetch(`${testbed.etcd}${path}`, { method: 'POST', body: JSON.stringify(body) });
      assert.equal(res.status, 200, `etcd ${path}`);
      return (await res.json()) as Record<string, unknown>;
    };
    const revision = ((await etcd('/v3/maintenance/status', {})).header as { revision?: string }).revision;
    assert.ok(revision && Number(revision) > Number(staleRv));
    await etcd('/v3/kv/compaction', { revision, physical: true });

    // The plain watch client reports the compacted version as gone.
    const end = await watchOnce(
      direct,
      PODTEMPLATES,
      { namespace: ns, resourceVersion: staleRv, timeoutSeconds: 10 },
      () => {},
    );
    assert.equal(end.kind, 'gone', JSON.stringify(end));

    relay.open();
    const truth = async () => {
      const r = await listAll(direct, PODTEMPLATES, KubeObjectSchema, { namespace: ns });
      assert.ok(r.ok);
      return r.value.items.map((i) => `${i.metadata.name}@${i.metadata.resourceVersion}`).sort();
    };
    const mirror = () =>
      inf.store
        .list()
        .map((i) => `${i.metadata.name}@${i.metadata.resourceVersion}`)
        .sort();
    const expected = await truth();
    await pollUntil(
      (observe) => {
        observe({ mirror: mirror(), expected, lists: seen.lists });
        return JSON.stringify(mirror()) === JSON.stringify(expected) ? true : undefined;
      },
      { timeoutMs: 20_000, description: 'the informer to converge after the 410' },
    );
    assert.deepEqual(seen.lists, ['initial', 'gone']);
    assert.ok(
      seen.changes.includes('deleted:pt-2') && seen.changes.includes('added:pt-4'),
      seen.changes.join(','),
    );
    await stop();
  });

  it('the informer resumes after its connection is cut, without re-listing', async () => {
    const ns = await namespace('kube-cut');
    await createConfigMap(direct, ns, 'first');
    const relay = await startApiRelay(new URL(server));
    cleanups.push(() => relay.close());
    const viaRelay = createTransport({ server: relay.url, credentials });
    cleanups.push(async () => viaRelay.close());
    const { inf, seen, stop } = startInformer({ transport: viaRelay, resource: CONFIG_MAPS, namespace: ns });
    await inf.ready;
    await createConfigMap(direct, ns, 'probe');
    await pollUntil(() => (inf.store.get(`${ns}/probe`) ? true : undefined), {
      timeoutMs: 10_000,
      description: 'watch up',
    });
    const acceptedBefore = relay.accepted();

    relay.cut();
    await createConfigMap(direct, ns, 'while-cut');
    await pollUntil(() => (inf.store.get(`${ns}/while-cut`) ? true : undefined), {
      timeoutMs: 15_000,
      description: 'the informer to resume and see the object created while cut',
    });
    assert.ok(relay.accepted() > acceptedBefore, 'a new connection was opened');
    assert.deepEqual(seen.lists, ['initial'], 'no re-list');
    assert.ok(seen.reconnects >= 1);
    assert.ok(seen.watchErrors.includes('network'), seen.watchErrors.join(','));
    await stop();
  });

  it('the idle timer tears down a silent connection and the informer resumes without re-listing', async () => {
    const ns = await namespace('kube-idle');
    const relay = await startApiRelay(new URL(server));
    cleanups.push(() => relay.close());
    const viaRelay = createTransport({ server: relay.url, credentials });
    cleanups.push(async () => viaRelay.close());
    const { inf, seen, stop } = startInformer({
      transport: viaRelay,
      resource: CONFIG_MAPS,
      namespace: ns,
      idleTimeoutMs: 1_500,
    });
    await inf.ready;
    await createConfigMap(direct, ns, 'probe');
    await pollUntil(() => (inf.store.get(`${ns}/probe`) ? true : undefined), {
      timeoutMs: 10_000,
      description: 'watch up',
    });

    relay.stall();
    await createConfigMap(direct, ns, 'during-stall');
    await pollUntil(() => (inf.store.get(`${ns}/during-stall`) ? true : undefined), {
      timeoutMs: 15_000,
      description: 'the informer to notice the silent connection and resume',
    });
    assert.ok(seen.watchErrors.includes('timeout'), seen.watchErrors.join(','));
    assert.deepEqual(seen.lists, ['initial']);
    await stop();
  });

  it('a quiet watch is ended by the API server before the idle limit and opened again: no error, reconnect or LIST', async () => {
    const ns = await namespace('kube-quiet');
    // Counts the watch requests; the API server ends each after timeoutSeconds (3 s: 90% of the 4 s idle limit).
    const ended: string[] = [];
    const counting: Transport = {
      ...direct,
      stream: async (path, opts) => {
        const r = await direct.stream(path, opts);
        ended.push(r.ok ? 'ended by the server' : r.error.kind);
        return r;
      },
    };
    const { inf, seen, stop } = startInformer({
      transport: counting,
      resource: CONFIG_MAPS,
      namespace: ns,
      idleTimeoutMs: 4_000,
    });
    await inf.ready;
    await pollUntil(() => (ended.length >= 3 ? true : undefined), {
      timeoutMs: 30_000,
      description: 'three quiet watches ended',
    });
    await createConfigMap(direct, ns, 'after-quiet');
    await pollUntil(() => (inf.store.get(`${ns}/after-quiet`) ? true : undefined), {
      timeoutMs: 10_000,
      description: 'the reopened watch to deliver a change',
    });
    assert.deepEqual(ended.slice(0, 3), [
      'ended by the server',
      'ended by the server',
      'ended by the server',
    ]);
    assert.deepEqual(seen.watchErrors, []);
    assert.equal(seen.reconnects, 0);
    assert.deepEqual(seen.lists, ['initial']);
    await stop();
  });

  it('records an Event on an object and aggregates a repeat into count 2', async () => {
    const ns = await namespace('kube-events');
    const cm = await createConfigMap(direct, ns, 'target');
    let now = Date.now();
    const recorder = createEventRecorder({
      transport: direct,
      component: 'agent-controller',
      instance: 'e2e',
      now: () => now,
      random: Math.random,
      logger,
    });
    const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: cm.metadata };
    await recorder.record(obj, { type: 'Warning', reason: 'Tested', message: 'an e2e event é' });
    now += 2_000;
    await recorder.record(obj, { type: 'Warning', reason: 'Tested', message: 'an e2e event é' });
    const EventSchema = v.looseObject({
      ...KubeObjectSchema.entries,
      count: v.number(),
      reason: v.string(),
      message: v.string(),
      type: v.string(),
      involvedObject: v.looseObject({ name: v.string(), uid: v.string() }),
    });
    const r = await listAll(
      direct,
      { group: '', version: 'v1', plural: 'events', kind: 'Event', namespaced: true },
      EventSchema,
      {
        namespace: ns,
      },
    );
    assert.ok(r.ok);
    const mine = r.value.items.filter((e) => e.involvedObject.name === 'target');
    assert.equal(mine.length, 1);
    assert.equal(mine[0]?.count, 2);
    assert.equal(mine[0]?.involvedObject.uid, cm.metadata.uid);
    assert.equal(mine[0]?.message, 'an e2e event é');
    assert.equal(mine[0]?.type, 'Warning');
  });

  it('authenticates with the kubeconfig client certificate', async () => {
    const cfg = await loadKubeconfig({ path: kubeconfig ?? '' });
    assert.ok(cfg.ok);
    const c = await cfg.value.credentials({ refresh: false });
    assert.ok(
      c.ok && c.value.tls.cert !== undefined && c.value.tls.key !== undefined,
      'the admin kubeconfig uses a client cert',
    );
    const t = createTransport({ server: cfg.value.server, credentials: cfg.value.credentials });
    const review = await t.request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    t.close();
    assert.ok(review.ok, JSON.stringify(review));
    const who = JSON.parse(review.value.text) as { status: { userInfo: { groups?: string[] } } };
    assert.ok(who.status.userInfo.groups?.includes('system:masters'), JSON.stringify(who));
  });

  it('authenticates in-cluster style with a TokenRequest token, within its RBAC', async () => {
    const ns = await namespace('kube-token');
    assert.ok(
      (await createObject(direct, SA_RESOURCE, ns, { metadata: { name: 'reader' } }, KubeObjectSchema)).ok,
    );
    assert.ok(
      (
        await createObject(
          direct,
          ROLES,
          ns,
          {
            metadata: { name: 'cm-reader' },
            rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
          },
          KubeObjectSchema,
        )
      ).ok,
    );
    assert.ok(
      (
        await createObject(
          direct,
          ROLE_BINDINGS,
          ns,
          {
            metadata: { name: 'cm-reader' },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-reader' },
            subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
          },
          KubeObjectSchema,
        )
      ).ok,
    );
    await createConfigMap(direct, ns, 'visible');
    const tr = await direct.request('POST', `/api/v1/namespaces/${ns}/serviceaccounts/reader/token`, {
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 600 },
      },
    });
    assert.ok(tr.ok, JSON.stringify(tr));
    const token = v.parse(TokenRequestSchema, JSON.parse(tr.value.text)).status.token;

    const cfg = await loadKubeconfig({ path: kubeconfig ?? '' });
    assert.ok(cfg.ok);
    const admin = await cfg.value.credentials({ refresh: false });
    assert.ok(admin.ok && admin.value.tls.ca !== undefined);
    const saDir = mkdtempSync(join(tmpdir(), 'kube-e2e-sa-'));
    cleanups.push(async () => rmSync(saDir, { recursive: true, force: true }));
    writeFileSync(join(saDir, 'token'), token);
    writeFileSync(join(saDir, 'ca.crt'), Buffer.from(admin.value.tls.ca ?? ''));
    writeFileSync(join(saDir, 'namespace'), ns);
    const url = new URL(server);
    const inCluster = await loadInClusterConfig({
      env: { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port },
      serviceAccountDir: saDir,
    });
    assert.ok(inCluster.ok, JSON.stringify(inCluster));
    assert.equal(inCluster.value.namespace, ns);
    const t = createTransport({ server: inCluster.value.server, credentials: inCluster.value.credentials });
    cleanups.push(async () => t.close());
    const mine = await listAll(t, CONFIG_MAPS, KubeObjectSchema, { namespace: ns });
    assert.ok(mine.ok, JSON.stringify(mine));
    assert.ok(mine.value.items.some((i) => i.metadata.name === 'visible'));
    const elsewhere = await listAll(t, CONFIG_MAPS, KubeObjectSchema, { namespace: 'default' });
    assert.ok(!elsewhere.ok && isForbidden(elsewhere.error), 'RBAC still applies');
    const write = await createObject(t, CONFIG_MAPS, ns, { metadata: { name: 'nope' } }, KubeObjectSchema);
    assert.ok(!write.ok && isForbidden(write.error));
  });

  it('leader election: one of two electors leads; after release the other takes over at once', async () => {
    const ns = await namespace('kube-leader');
    const events: string[] = [];
    /** Each elector's "Taking over the lease" log lines: why it took the Lease (released or expired). */
    const takeovers = new Map<string, unknown[]>();
    const make = (identity: string) =>
      createLeaderElector({
        transport: direct,
        namespace: ns,
        name: 'agent-controller',
        identity,
        clock: systemClock,
        logger: createLogger('info', (line) => {
          const record = JSON.parse(line) as { msg?: string; why?: unknown };
          if (record.msg === 'Taking over the lease')
            takeovers.set(identity, [...(takeovers.get(identity) ?? []), record.why]);
          logger.debug(record.msg ?? '', { identity, why: record.why });
        }),
        retryPeriodMs: 300,
        onStartedLeading: () => events.push(`${identity}:start`),
        onStoppedLeading: () => events.push(`${identity}:stop`),
      });
    const a = make('replica-a');
    const b = make('replica-b');
    const ctlA = new AbortController();
    const ctlB = new AbortController();
    const runA = a.run(ctlA.signal);
    const runB = b.run(ctlB.signal);
    cleanups.push(async () => {
      ctlA.abort();
      ctlB.abort();
      await Promise.all([runA, runB]);
    });
    const leader = await pollUntil(() => (a.isLeader() ? a : b.isLeader() ? b : undefined), {
      timeoutMs: 10_000,
      description: 'one elector to lead',
    });
    const [first, second, firstCtl, firstRun, secondName] =
      leader === a ? ([a, b, ctlA, runA, 'replica-b'] as const) : ([b, a, ctlB, runB, 'replica-a'] as const);
    // Both keep ticking for a while: exactly one leads the whole time.
    const deadline = Date.now() + 1_500;
    while (Date.now() < deadline) {
      assert.equal(Number(a.isLeader()) + Number(b.isLeader()), 1);
      await new Promise((r) => setTimeout(r, 100));
    }
    const held = await getObject(
      direct,
      { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true },
      { namespace: ns, name: 'agent-controller' },
      LeaseSchema,
    );
    assert.ok(held.ok);
    assert.match(held.value.spec.renewTime ?? '', /\.\d{6}Z$/);
    assert.equal(held.value.spec.leaseDurationSeconds, 15);

    firstCtl.abort();
    await firstRun;
    assert.deepEqual(takeovers.get(secondName) ?? [], [], 'the standby has not taken the Lease yet');
    assert.ok((await first.release()).ok);
    assert.equal(first.isLeader(), false);
    await pollUntil(() => (second.isLeader() ? true : undefined), {
      timeoutMs: 5_000,
      description: 'the standby to take over',
    });
    // At once: because the Lease was released, not because it expired (the lease duration is 15 s).
    assert.deepEqual(takeovers.get(secondName), ['released']);
    const after = await getObject(
      direct,
      { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true },
      { namespace: ns, name: 'agent-controller' },
      LeaseSchema,
    );
    assert.ok(after.ok);
    assert.equal(after.value.spec.holderIdentity, secondName);
    assert.equal(after.value.spec.leaseTransitions, 1);
    assert.equal(events.filter((e) => e.endsWith(':start')).length, 2);
  });
});
