import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as v from 'valibot';
import {
  createFakeTransport,
  type FakeReply,
  type FakeRequest,
  type FakeStreamControl,
} from '../kube/fake-transport.ts';
import type { KubeObject } from '../kube/meta.ts';
import { CONFIG_MAPS } from '../kube/resources.ts';
import { DEFAULT_WATCH_IDLE_MS } from '../kube/watch.ts';
import { createLogger } from '../shared/log.ts';
import { flushMicrotasks, ManualClock } from './clock.ts';
import {
  applyWatchEvent,
  cachedIfUnchanged,
  createInformer,
  createInterrupter,
  type InformerOptions,
  longestWatchSeconds,
} from './informer.ts';
import { type Change, Store } from './store.ts';

const cm = (name: string, rv: string) => ({
  metadata: { name, namespace: 'n', resourceVersion: rv },
  data: { v: rv },
});
const line = (type: string, obj: object) => `${JSON.stringify({ type, object: obj })}\n`;

type StreamScript = (req: FakeRequest, ctl: FakeStreamControl) => Promise<FakeReply | 'end'>;

/** A scripted API server: LIST answers from `objects` in pages of 2; each WATCH runs the next script. */
function scriptedServer(initial: ReturnType<typeof cm>[], listRv: string) {
  const state = { objects: initial, listRv, down: false };
  const streams: StreamScript[] = [];
  const t = createFakeTransport({
    request: (req) => {
      if (state.down) return { error: { kind: 'network', message: 'connection refused' } };
      const start = req.query.continue === undefined ? 0 : Number(req.query.continue);
      const limit = Number(req.query.limit);
      const items = state.objects.slice(start, start + limit);
      const next = start + limit < state.objects.length ? String(start + limit) : undefined;
      return {
        status: 200,
        body: { metadata: { resourceVersion: state.listRv, ...(next ? { continue: next } : {}) }, items },
      };
    },
    stream: (req, ctl) => {
      const script = streams.shift();
      return script ? script(req, ctl) : ctl.aborted().then(() => 'end' as const);
    },
  });
  return { t, state, streams };
}

const watches = (t: { requests: FakeRequest[] }) => t.requests.filter((r) => r.query.watch === 1);
const lists = (t: { requests: FakeRequest[] }) => t.requests.filter((r) => r.query.watch === undefined);

async function until(cond: () => boolean, clock: ManualClock, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await flushMicrotasks();
  }
  assert.fail(`condition not reached: ${what} (clock at ${clock.now()})`);
}

describe('createInformer', () => {
  const logger = createLogger('error', () => {});

  /** Runs a ConfigMap informer on `srv` with a manual clock, counting reconnects and watch errors. */
  async function runCounting(
    srv: ReturnType<typeof scriptedServer>,
    extra: Partial<Pick<InformerOptions<KubeObject>, 'idleTimeoutMs' | 'watchTimeoutSeconds'>> & {
      random?: number;
      clock?: ManualClock;
    } = {},
  ) {
    const counters = { reconnects: 0, watchErrors: 0 };
    const { random = 0, clock = new ManualClock(), ...options } = extra;
    const inf = createInformer<KubeObject>({
      transport: srv.t,
      resource: CONFIG_MAPS,
      namespace: 'n',
      clock,
      random: () => random,
      logger,
      ...options,
      hooks: { onReconnect: () => counters.reconnects++, onWatchError: () => counters.watchErrors++ },
    });
    const ctl = new AbortController();
    const running = inf.run(ctl.signal);
    await inf.ready;
    const stop = async (): Promise<void> => {
      ctl.abort();
      await running;
    };
    return { clock, counters, stop };
  }

  it('lists (paginated), watches from the list rv, applies events, resumes after failures without re-listing, re-lists on 410', async () => {
    const srv = scriptedServer([cm('a', '1'), cm('b', '2'), cm('c', '3')], '10');
    const clock = new ManualClock();
    const changes: string[] = [];
    const counters = { lists: [] as string[], reconnects: 0, watchErrors: 0 };
    const inf = createInformer<KubeObject>({
      transport: srv.t,
      resource: CONFIG_MAPS,
      namespace: 'n',
      clock,
      random: () => 0,
      logger,
      pageSize: 2,
      onChange: (c: Change<KubeObject>) =>
        changes.push(
          `${c.type}:${c.object.metadata.name}@${c.object.metadata.resourceVersion}${c.type === 'modified' ? `<${c.old.metadata.resourceVersion}` : ''}`,
        ),
      hooks: {
        onList: (r) => counters.lists.push(r),
        onReconnect: () => counters.reconnects++,
        onWatchError: () => counters.watchErrors++,
      },
    });
    // watch 1: two events, a bookmark, then the connection drops
    srv.streams.push(async (_r, ctl) => {
      ctl.push(line('MODIFIED', cm('a', '11')));
      ctl.push(line('ADDED', cm('d', '12')));
      ctl.push(line('BOOKMARK', { kind: 'ConfigMap', metadata: { resourceVersion: '15' } }));
      return { error: { kind: 'network', message: 'ECONNRESET' } };
    });
    // watch 2: delete, then in-stream 410
    srv.streams.push(async (_r, ctl) => {
      ctl.push(line('DELETED', cm('b', '16')));
      srv.state.objects = [cm('a', '11'), cm('c', '17'), cm('e', '18')];
      srv.state.listRv = '20';
      ctl.push(
        line('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' }),
      );
      await ctl.aborted();
      return 'end';
    });
    const ctl = new AbortController();
    const running = inf.run(ctl.signal);
    await inf.ready;
    assert.deepEqual(inf.store.keys().sort(), ['n/a', 'n/b', 'n/c']);
    await until(() => watches(srv.t).length === 1 && changes.length >= 5, clock, 'first watch events');
    assert.equal(watches(srv.t)[0]?.query.resourceVersion, '10');
    assert.equal(watches(srv.t)[0]?.query.allowWatchBookmarks, true);
    assert.equal(inf.store.get('n/d')?.metadata.resourceVersion, '12');
    assert.equal(inf.resourceVersion(), '15');
    // backoff before re-watching: nothing happens until 800 ms passed
    await clock.advance(799);
    assert.equal(watches(srv.t).length, 1);
    await clock.advance(1);
    await until(() => watches(srv.t).length >= 2, clock, 'second watch');
    assert.equal(watches(srv.t)[1]?.query.resourceVersion, '15', 're-watch from the bookmark rv');
    await until(() => lists(srv.t).length === 4, clock, 'relist after 410 (two pages each)');
    await until(() => watches(srv.t).length === 3, clock, 'third watch');
    assert.equal(watches(srv.t)[2]?.query.resourceVersion, '20');
    assert.deepEqual(inf.store.keys().sort(), ['n/a', 'n/c', 'n/e']);
    assert.deepEqual(counters.lists, ['initial', 'gone']);
    assert.equal(
      counters.reconnects,
      1,
      'the watch after the dropped connection; the re-list after 410 is a list',
    );
    assert.equal(counters.watchErrors, 1);
    assert.deepEqual(changes, [
      'added:a@1',
      'added:b@2',
      'added:c@3',
      'modified:a@11<1',
      'added:d@12',
      'deleted:b@16',
      'modified:c@17<3',
      'added:e@18',
      'deleted:d@12',
    ]);
    ctl.abort();
    await running;
  });

  it('asks the server to end each watch below the idle limit, and opens a watch the server ended without counting a reconnect', async () => {
    const srv = scriptedServer([cm('a', '1')], '5');
    const clock = new ManualClock();
    // A quiet watch the server ends on its schedule, one with an event, then one that stays open.
    srv.streams.push(async () => {
      await clock.sleep(79_000);
      return 'end';
    });
    srv.streams.push(async (_r, ctl) => {
      ctl.push(line('ADDED', cm('b', '6')));
      return 'end';
    });
    const inf = await runCounting(srv, { random: 0.999, clock });
    await until(() => watches(srv.t).length >= 1, clock, 'the first watch');
    await clock.advance(79_000);
    await until(() => watches(srv.t).length >= 3, clock, 'three watches');
    const asked = watches(srv.t).map((w) => Number(w.query.timeoutSeconds));
    assert.ok(
      asked.every((t) => t >= 60 && t * 1000 < DEFAULT_WATCH_IDLE_MS),
      `timeoutSeconds ${asked} below the idle limit`,
    );
    assert.deepEqual(
      watches(srv.t).map((w) => w.query.resourceVersion),
      ['5', '5', '6'],
      'each re-watch resumes where the last one ended, without a LIST',
    );
    assert.equal(inf.counters.reconnects, 0);
    assert.equal(inf.counters.watchErrors, 0);
    await inf.stop();
  });

  it('counts a watch the server ended at once without an event as lost (a misbehaving server or proxy)', async () => {
    const srv = scriptedServer([cm('a', '1')], '5');
    srv.streams.push(async () => 'end');
    const inf = await runCounting(srv);
    await until(() => watches(srv.t).length >= 1, inf.clock, 'the first watch');
    await inf.clock.advance(5_000);
    await until(() => watches(srv.t).length >= 2, inf.clock, 'the watch after the backoff');
    assert.equal(inf.counters.reconnects, 1);
    await inf.stop();
  });

  it('keeps a custom lifetime at most 90% of a custom idle limit', async () => {
    const srv = scriptedServer([], '5');
    const inf = await runCounting(srv, { idleTimeoutMs: 20_000, watchTimeoutSeconds: () => 600 });
    await until(() => watches(srv.t).length >= 1, inf.clock, 'a watch');
    assert.equal(watches(srv.t)[0]?.query.timeoutSeconds, 18);
    await inf.stop();
  });

  it('resync stops the watch, re-lists, and resumes from the new rv (a planned restart, not a reconnect)', async () => {
    const srv = scriptedServer([cm('a', '1')], '5');
    const clock = new ManualClock();
    const counters = { lists: [] as string[], reconnects: 0 };
    const inf = createInformer<KubeObject>({
      transport: srv.t,
      resource: CONFIG_MAPS,
      namespace: 'n',
      clock,
      random: () => 0,
      logger,
      hooks: { onList: (r) => counters.lists.push(r), onReconnect: () => counters.reconnects++ },
    });
    const ctl = new AbortController();
    const running = inf.run(ctl.signal);
    await inf.ready;
    await until(() => watches(srv.t).length === 1, clock, 'watch');
    srv.state.objects = [cm('a', '6'), cm('b', '7')];
    srv.state.listRv = '8';
    const r = await inf.resync();
    assert.ok(r.ok);
    assert.deepEqual(r.value, { items: 2, resourceVersion: '8' });
    assert.equal(inf.store.get('n/a')?.metadata.resourceVersion, '6');
    await until(() => watches(srv.t).length === 2, clock, 'second watch');
    assert.equal(watches(srv.t)[1]?.query.resourceVersion, '8');
    assert.deepEqual(counters.lists, ['initial', 'resync']);
    assert.equal(counters.reconnects, 0);
    ctl.abort();
    await running;
    const after = await inf.resync();
    assert.ok(!after.ok && after.error.kind === 'aborted');
  });

  it('a resync that runs into an outage (its LIST fails) counts the watch after the next resync as a reconnect', async () => {
    const srv = scriptedServer([cm('a', '1')], '5');
    const clock = new ManualClock();
    const counters = { reconnects: 0 };
    const inf = createInformer<KubeObject>({
      transport: srv.t,
      resource: CONFIG_MAPS,
      namespace: 'n',
      clock,
      random: () => 0,
      logger,
      hooks: { onReconnect: () => counters.reconnects++ },
    });
    const ctl = new AbortController();
    const running = inf.run(ctl.signal);
    await inf.ready;
    await until(() => watches(srv.t).length === 1, clock, 'watch');
    // A poll's re-list runs into an API-server restart; the next poll's re-list finds it back.
    srv.state.down = true;
    assert.ok(!(await inf.resync()).ok);
    srv.state.down = false;
    assert.ok((await inf.resync()).ok);
    await until(() => watches(srv.t).length === 2, clock, 'the watch after the outage');
    assert.equal(counters.reconnects, 1);
    ctl.abort();
    await running;
  });

  it('retries a failed initial list with backoff and becomes ready once it succeeds', async () => {
    let fail = true;
    const clock = new ManualClock();
    const t = createFakeTransport({
      request: () =>
        fail
          ? { error: { kind: 'network', message: 'refused' } }
          : { status: 200, body: { metadata: { resourceVersion: '3' }, items: [cm('a', '1')] } },
      stream: (_r, c) => c.aborted().then(() => 'end' as const),
    });
    const inf = createInformer<KubeObject>({
      transport: t,
      resource: CONFIG_MAPS,
      clock,
      random: () => 0,
      logger,
    });
    const ctl = new AbortController();
    const running = inf.run(ctl.signal);
    await until(() => t.requests.length === 1, clock, 'first list');
    assert.equal(inf.store.hasSynced(), false);
    await clock.advance(800);
    await until(() => t.requests.length === 2, clock, 'second list');
    fail = false;
    await clock.advance(1600);
    await inf.ready;
    assert.equal(inf.store.size, 1);
    ctl.abort();
    await running;
  });

  it('skips objects that fail the schema and stops promptly while backing off', async () => {
    const srv = scriptedServer([cm('a', '1')], '5');
    srv.streams.push(async (_r, c) => {
      c.push(line('ADDED', { metadata: { name: 'bad', namespace: 'n', resourceVersion: 7 } }));
      return { error: { kind: 'network', message: 'x' } };
    });
    const clock = new ManualClock();
    const inf = createInformer<KubeObject>({
      transport: srv.t,
      resource: CONFIG_MAPS,
      clock,
      random: () => 0,
      logger,
    });
    const ctl = new AbortController();
    const running = inf.run(ctl.signal);
    await inf.ready;
    await until(() => clock.pending() > 0, clock, 'backoff sleep');
    assert.deepEqual(inf.store.keys(), ['n/a']);
    ctl.abort();
    await running;
  });
});

describe('stripManagedFields', () => {
  it('drops metadata.managedFields and keeps everything else; objects without them are returned as they are', async () => {
    const { stripManagedFields } = await import('./informer.ts');
    const obj = {
      kind: 'Agent',
      metadata: { name: 'a', resourceVersion: '3', managedFields: [{ manager: 'kubectl' }] },
      spec: { stationRef: 's' },
    };
    const out = stripManagedFields(obj);
    assert.deepEqual(out, {
      kind: 'Agent',
      metadata: { name: 'a', resourceVersion: '3' },
      spec: { stationRef: 's' },
    });
    assert.equal(obj.metadata.managedFields.length, 1, 'the input is not changed');
    const bare = { metadata: { name: 'b' } };
    assert.equal(stripManagedFields(bare), bare);
  });
});

describe('longestWatchSeconds', () => {
  it('90% of the idle limit in whole seconds, at least 1', () => {
    assert.deepEqual(
      [90_000, 10_000, 1_999, 1_000, 0].map((ms) => longestWatchSeconds(ms)),
      [81, 9, 1, 1, 1],
    );
  });
});

describe('createInterrupter', () => {
  it('interrupt aborts what runs now, and nothing between runs', async () => {
    const resyncs = createInterrupter();
    const outer = new AbortController();
    resyncs.interrupt(); // nothing runs: no effect on the next run
    const seen: AbortSignal[] = [];
    const first = resyncs.during(outer.signal, async (s) => {
      seen.push(s);
      assert.equal(s.aborted, false);
      resyncs.interrupt();
      return s.aborted;
    });
    assert.equal(await first, true);
    const second = await resyncs.during(outer.signal, async (s) => s.aborted);
    assert.equal(second, false);
    resyncs.interrupt(); // after the run: no effect on what it handed out
    assert.equal(outer.signal.aborted, false);
    assert.equal(seen.length, 1);
  });

  it('the outer signal aborts the run too, and an aborted one starts aborted', async () => {
    const resyncs = createInterrupter();
    const outer = new AbortController();
    assert.equal(
      await resyncs.during(outer.signal, async (s) => {
        outer.abort();
        return s.aborted;
      }),
      true,
    );
    assert.equal(await resyncs.during(outer.signal, async (s) => s.aborted), true);
  });
});

describe('cachedIfUnchanged', () => {
  const store = new Store<KubeObject>();
  store.replace([{ metadata: { name: 'a', namespace: 'n', resourceVersion: '5' } } as KubeObject]);
  const cached = store.get('n/a');

  it('reuses the cached object when the listed one has its resourceVersion', () => {
    assert.ok(cached);
    assert.equal(
      cachedIfUnchanged(store, { metadata: { name: 'a', namespace: 'n', resourceVersion: '5' } }),
      cached,
    );
  });

  it('not for another resourceVersion, another key, none, or no metadata', () => {
    for (const raw of [
      { metadata: { name: 'a', namespace: 'n', resourceVersion: '6' } },
      { metadata: { name: 'a', namespace: 'm', resourceVersion: '5' } },
      { metadata: { name: 'a', resourceVersion: '5' } },
      { metadata: { name: 'a', namespace: 'n' } },
      { metadata: { name: 'a', namespace: 'n', resourceVersion: 5 } },
      { metadata: null },
      {},
    ])
      assert.equal(cachedIfUnchanged(store, raw), undefined, JSON.stringify(raw));
  });
});

describe('applyWatchEvent', () => {
  const Schema = v.looseObject({
    metadata: v.looseObject({
      name: v.string(),
      namespace: v.optional(v.string()),
      resourceVersion: v.string(),
    }),
    data: v.optional(v.string()),
  });
  type Obj = v.InferOutput<typeof Schema>;
  const schema = Schema as unknown as v.GenericSchema<unknown, Obj & KubeObject>;
  const obj = (rv: string, extra: Record<string, unknown> = {}) => ({
    metadata: { name: 'a', namespace: 'n', resourceVersion: rv, ...extra },
  });
  const event = (type: 'ADDED' | 'MODIFIED' | 'DELETED', object: Record<string, unknown>) =>
    ({ kind: 'object', type, object, resourceVersion: undefined }) as const;

  it('stores an added object without its managedFields, then reports a modification with the old state', () => {
    const store = new Store<Obj & KubeObject>();
    assert.deepEqual(applyWatchEvent(store, schema, event('ADDED', obj('1', { managedFields: [{}] }))), {
      kind: 'change',
      change: { type: 'added', object: obj('1') },
    });
    assert.deepEqual(applyWatchEvent(store, schema, event('MODIFIED', obj('2'))), {
      kind: 'change',
      change: { type: 'modified', old: obj('1'), object: obj('2') },
    });
    assert.deepEqual(store.get('n/a'), obj('2'));
  });

  it('skips an object that fails the schema, naming it by its raw key, and keeps the cached one', () => {
    const store = new Store<Obj & KubeObject>();
    applyWatchEvent(store, schema, event('ADDED', obj('1')));
    const bad = { metadata: { name: 'a', namespace: 'n', resourceVersion: 7 } };
    assert.deepEqual(applyWatchEvent(store, schema, event('MODIFIED', bad)), {
      kind: 'invalid',
      name: 'n/a',
      error: 'Invalid type: Expected string but received 7',
    });
    assert.deepEqual(store.get('n/a'), obj('1'));
  });

  it('DELETED removes the object even when it fails the schema, reporting the last state known', () => {
    const store = new Store<Obj & KubeObject>();
    applyWatchEvent(store, schema, event('ADDED', obj('1')));
    const bad = { metadata: { name: 'a', namespace: 'n', resourceVersion: 7 } };
    assert.deepEqual(applyWatchEvent(store, schema, event('DELETED', bad)), {
      kind: 'change',
      change: { type: 'deleted', object: obj('1') },
    });
    assert.equal(store.size, 0);
    applyWatchEvent(store, schema, event('ADDED', obj('2')));
    assert.deepEqual(applyWatchEvent(store, schema, event('DELETED', obj('3'))), {
      kind: 'change',
      change: { type: 'deleted', object: obj('3') },
    });
  });

  it('DELETED of an object not cached, and a bookmark, change nothing', () => {
    const store = new Store<Obj & KubeObject>();
    assert.deepEqual(applyWatchEvent(store, schema, event('DELETED', obj('1'))), { kind: 'none' });
    assert.deepEqual(applyWatchEvent(store, schema, { kind: 'bookmark', resourceVersion: '9' }), {
      kind: 'none',
    });
    assert.equal(store.size, 0);
  });
});
