// A scripted API server for the CLI command tests, on the project's fake transport: objects by path, LIST (with
// label and field selectors on the few fields the CLI uses), GET, POST (generateName), DELETE, WATCH streams that
// receive every later change, pod log streams, and per-request overrides (403, 404, 500…). Not a test file itself.

import {
  createFakeTransport,
  type FakeReply,
  type FakeRequest,
  type FakeStreamControl,
  type FakeTransport,
} from '../kube/fake-transport.ts';
import { flushMicrotasks, ManualClock } from '../runtime/clock.ts';
import type { CommandIo } from './command.ts';
import type { CliDeps, Connection } from './context.ts';
import type { ConnectionFlags } from './flags.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

interface Watcher {
  readonly collection: string;
  readonly query: FakeRequest['query'];
  readonly ctl: FakeStreamControl;
}

const meta = (o: Obj) =>
  o.metadata as { name: string; namespace?: string; labels?: Record<string, string>; uid?: string };

/** Does `obj` match the LIST/WATCH query's selectors (equality selectors only)? */
function matches(obj: Obj, query: FakeRequest['query']): boolean {
  const label = typeof query.labelSelector === 'string' ? query.labelSelector : '';
  for (const term of label.split(',').filter((t) => t !== '')) {
    const [k, val] = term.split('=');
    if (meta(obj).labels?.[k ?? ''] !== val) return false;
  }
  const field = typeof query.fieldSelector === 'string' ? query.fieldSelector : '';
  for (const term of field.split(',').filter((t) => t !== '')) {
    const [k, val] = term.split('=');
    const actual =
      k === 'metadata.name'
        ? meta(obj).name
        : k === 'involvedObject.uid'
          ? ((obj.involvedObject as { uid?: string } | undefined)?.uid ?? '')
          : undefined;
    if (actual !== val) return false;
  }
  return true;
}

export class FakeCluster {
  readonly objects = new Map<string, Obj>();
  readonly watchers: Watcher[] = [];
  /** Log chunks per pod name; `end` says how the stream ends after them (default: cleanly). */
  readonly logs = new Map<string, { chunks: string[]; end?: FakeReply | 'end' | 'hang' }>();
  /** Answers that win over the objects: return a reply to override a request. */
  override: (req: FakeRequest) => FakeReply | undefined = () => undefined;
  /** Called after an Agent is created (e.g. to script what the controller does next). */
  onCreate: (obj: Obj) => void = () => {};
  readonly transport: FakeTransport;
  #rv = 100;
  #generated = 0;

  constructor() {
    this.transport = createFakeTransport({
      request: (req) => this.#request(req),
      stream: (req, ctl) => this.#stream(req, ctl),
    });
  }

  /** Puts an object at `collection/name` and tells the watchers (ADDED or MODIFIED). */
  put(collection: string, obj: Obj): Obj {
    const key = `${collection}/${meta(obj).name}`;
    const type = this.objects.has(key) ? 'MODIFIED' : 'ADDED';
    const stored = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.#rv) } };
    this.objects.set(key, stored);
    this.#tell(collection, type, stored);
    return stored;
  }

  /** Removes an object and tells the watchers (DELETED). */
  remove(collection: string, name: string): void {
    const key = `${collection}/${name}`;
    const obj = this.objects.get(key);
    if (obj === undefined) return;
    this.objects.delete(key);
    this.#tell(collection, 'DELETED', {
      ...obj,
      metadata: { ...obj.metadata, resourceVersion: String(++this.#rv) },
    });
  }

  get(collection: string, name: string): Obj | undefined {
    return this.objects.get(`${collection}/${name}`);
  }

  /** The requests made so far with this method whose path starts with `prefix`. */
  calls(method: string, prefix: string): FakeRequest[] {
    return this.transport.requests.filter((r) => r.method === method && r.path.startsWith(prefix));
  }

  /** Open watches of a collection. */
  watching(collection: string): number {
    return this.watchers.filter((w) => w.collection === collection && !w.ctl.signal.aborted).length;
  }

  #tell(collection: string, type: string, obj: Obj): void {
    const everywhere = collection.replace(/\/namespaces\/[^/]+\//, '/');
    for (const w of this.watchers)
      if (
        (w.collection === collection || w.collection === everywhere) &&
        !w.ctl.signal.aborted &&
        matches(obj, w.query)
      )
        w.ctl.push(`${JSON.stringify({ type, object: obj })}\n`);
  }

  #items(collection: string, query: FakeRequest['query']): Obj[] {
    const items: Obj[] = [];
    for (const [key, obj] of this.objects) {
      const slash = key.lastIndexOf('/');
      if (key.slice(0, slash) === collection && matches(obj, query)) items.push(obj);
    }
    // An all-namespaces list: every namespace's collection of that resource.
    if (!collection.includes('/namespaces/'))
      for (const [key, obj] of this.objects) {
        const m = /^(.*)\/namespaces\/[^/]+\/([^/]+)\/[^/]+$/.exec(key);
        if (m && `${m[1]}/${m[2]}` === collection && matches(obj, query)) items.push(obj);
      }
    return items;
  }

  #request(req: FakeRequest): FakeReply {
    const o = this.override(req);
    if (o !== undefined) return o;
    const notFound = (name: string) => ({
      status: 404,
      body: { kind: 'Status', code: 404, reason: 'NotFound', message: `"${name}" not found` },
    });
    if (req.method === 'GET') {
      const obj = this.objects.get(req.path);
      if (obj !== undefined) return { status: 200, body: obj };
      if (/\/(agents|stations|agentdefinitions|pods|jobs|events)$/.test(req.path))
        return {
          status: 200,
          body: { metadata: { resourceVersion: String(this.#rv) }, items: this.#items(req.path, req.query) },
        };
      return notFound(req.path.split('/').pop() ?? '');
    }
    if (req.method === 'POST') {
      const body = req.body as Obj;
      const m = meta(body) as { name?: string; generateName?: string };
      const name = m.name ?? `${m.generateName ?? ''}${(++this.#generated).toString(36).padStart(5, 'x')}`;
      if (this.objects.has(`${req.path}/${name}`))
        return {
          status: 409,
          body: { kind: 'Status', code: 409, reason: 'AlreadyExists', message: `"${name}" already exists` },
        };
      const namespace = /\/namespaces\/([^/]+)\//.exec(req.path)?.[1] ?? '';
      const created = this.put(req.path, {
        ...body,
        metadata: {
          ...body.metadata,
          name,
          namespace,
          uid: `uid-${name}`,
          creationTimestamp: '2026-12-01T12:00:00Z',
          generation: 1,
        },
      });
      this.onCreate(created);
      return { status: 201, body: created };
    }
    if (req.method === 'DELETE') {
      if (!this.objects.has(req.path)) return notFound(req.path.split('/').pop() ?? '');
      const slash = req.path.lastIndexOf('/');
      this.remove(req.path.slice(0, slash), req.path.slice(slash + 1));
      return { status: 200, body: { kind: 'Status', status: 'Success' } };
    }
    return { status: 405, body: {} };
  }

  async #stream(req: FakeRequest, ctl: FakeStreamControl): Promise<FakeReply | 'end'> {
    const o = this.override(req);
    if (o !== undefined) return o;
    const log = /\/pods\/([^/]+)\/log$/.exec(req.path);
    if (log) {
      const script = this.logs.get(log[1] ?? '');
      if (script === undefined)
        return { status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound' } };
      for (const c of script.chunks) ctl.push(c);
      if (script.end === 'hang') {
        await ctl.aborted();
        return 'end';
      }
      return script.end ?? 'end';
    }
    this.watchers.push({ collection: req.path, query: req.query, ctl });
    await ctl.aborted();
    return 'end';
  }
}

/** Captured output of a command. */
export interface Captured extends CommandIo {
  readonly out: string[];
  readonly err: string[];
  stdoutText(): string;
  stderrText(): string;
}

export function captureIo(argv: readonly string[], env: Record<string, string | undefined> = {}): Captured {
  const out: string[] = [];
  const err: string[] = [];
  return {
    argv,
    env,
    out,
    err,
    stdout: (t) => void out.push(t),
    stderr: (t) => void err.push(t),
    stdoutText: () => out.join(''),
    stderrText: () => err.join(''),
  };
}

export interface FakeDepsOptions {
  readonly namespace?: string;
  readonly stdoutTty?: boolean;
  readonly stderrTty?: boolean;
  readonly stdin?: string;
  readonly files?: Record<string, string>;
  readonly program?: string;
}

/** Deps on the fake cluster and a manual clock; `interrupt()` can be fired from the test with `deps.fireInterrupt()`. */
export function fakeDeps(
  cluster: FakeCluster,
  o: FakeDepsOptions = {},
): CliDeps & {
  readonly clock: ManualClock;
  readonly connected: ConnectionFlags[];
  fireInterrupt(): void;
  closed: number;
} {
  const clock = new ManualClock(Date.parse('2026-12-01T12:00:00Z'));
  const connected: ConnectionFlags[] = [];
  const interrupts: AbortController[] = [];
  const deps = {
    program: o.program ?? 'agent-controller',
    clock,
    random: () => 0,
    stdoutTty: o.stdoutTty ?? false,
    stderrTty: o.stderrTty ?? false,
    columns: () => (o.stderrTty === true ? 200 : undefined),
    connected,
    closed: 0,
    async connect(flags: ConnectionFlags): Promise<Connection> {
      connected.push(flags);
      return {
        transport: cluster.transport,
        namespace: flags.namespace ?? o.namespace ?? 'team',
        close: () => {
          deps.closed++;
        },
      };
    },
    readFile: async (path: string) => {
      const f = o.files?.[path];
      if (f === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
      return f;
    },
    readStdin: async () => o.stdin ?? '',
    interrupt: () => {
      const ctl = new AbortController();
      interrupts.push(ctl);
      return { signal: ctl.signal, dispose: () => {} };
    },
    fireInterrupt: () => {
      for (const c of interrupts) c.abort();
    },
  };
  return deps;
}

/** Lets pending promise callbacks and stream pushes run until `cond` holds (no clock moves, no sleeps). */
export async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    await flushMicrotasks();
  }
  throw new Error(`condition not reached: ${what}`);
}

export const AGENTS_PATH = '/apis/agents.re-cinq.com/v1alpha1/namespaces/team/agents';
export const STATIONS_PATH = '/apis/agents.re-cinq.com/v1alpha1/namespaces/team/stations';
export const DEFINITIONS_PATH = '/apis/agents.re-cinq.com/v1alpha1/namespaces/team/agentdefinitions';
export const PODS_PATH = '/api/v1/namespaces/team/pods';
export const JOBS_PATH = '/apis/batch/v1/namespaces/team/jobs';
export const EVENTS_PATH = '/api/v1/namespaces/team/events';
