// The test node agent: registers a Node, keeps it Ready (Lease + status heartbeat), schedules pending
// pods onto itself, runs the pods bound to it, and serves their logs on the kubelet endpoint.
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import type { Server } from 'node:https';
import { arch, release } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import * as v from 'valibot';
import type { Logger } from '../../src/shared/log.ts';
import { apiPath, type KubeClient, KubeError } from '../support/kube-client.ts';
import { type ProcRecord, procAlive, procStart, writeProcRecords } from '../support/proc.ts';
import { KubeObjectSchema } from '../support/schemas.ts';
import { NODE_CAPACITY } from './env.ts';
import { type ImageTable, loadImageTables } from './images.ts';
import { IpPool } from './ip-pool.ts';
import { type PodLookup, startKubeletServer } from './kubelet-server.ts';
import { logFilesOnDisk } from './logs.ts';
import { selectorMatches, unschedulableCondition } from './plan.ts';
import { DataObjectSchema, type NodePod, NodePodSchema } from './pod-spec.ts';
import { PodWorker } from './pod-worker.ts';
import { findHostTools, type HostTools } from './process.ts';
import { kubeTime } from './status.ts';
import type { IssuedToken, TokenRequestSpec, VolumeSources } from './volumes.ts';

export interface NodeAgentOptions {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly nodeName: string;
  /** The node's address (InternalIP) and where the kubelet endpoint listens. */
  readonly hostIP: string;
  readonly port: number;
  readonly stateDir: string;
  readonly tlsCert: string;
  readonly tlsKey: string;
  readonly clientCa: string;
  /** Image table files, merged in order (later wins), re-read at each container start. */
  readonly imageFiles: readonly string[];
}

const LEASE_SECONDS = 40;
const LEASE_RENEW_MS = 10_000;
const STATUS_HEARTBEAT_MS = 20_000;
const RESYNC_MS = 2_000;

const LeaseSchema = v.looseObject({
  ...KubeObjectSchema.entries,
  spec: v.optional(v.looseObject({}), {}),
});

function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** The part of a TokenRequest answer the node uses. */
const TokenRequestSchema = v.looseObject({
  spec: v.looseObject({ expirationSeconds: v.number() }),
  status: v.looseObject({ token: v.string(), expirationTimestamp: v.string() }),
});

/** An API error as the kubelet reports it: the Status message (e.g. `serviceaccounts "x" not found`). */
function apiMessage(error: unknown): string {
  if (error instanceof KubeError) {
    try {
      const status = JSON.parse(error.body) as { message?: unknown };
      if (typeof status.message === 'string' && status.message !== '') return status.message;
    } catch {
      // not a Status
    }
  }
  return error instanceof Error ? error.message : String(error);
}

function decodeData(obj: v.InferOutput<typeof DataObjectSchema>, base64: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(obj.data ?? {}))
    out[k] = base64 ? Buffer.from(val, 'base64').toString('utf8') : val;
  if (!base64) {
    for (const [k, val] of Object.entries(obj.binaryData ?? {}))
      out[k] = Buffer.from(val, 'base64').toString('utf8');
  }
  return out;
}

/** The node agent process: `start()` registers and runs; `shutdown()` stops every pod and the server. */
export class NodeAgent {
  readonly #o: NodeAgentOptions;
  readonly #sources: VolumeSources;
  readonly #log: Logger;
  readonly #tools: HostTools;
  // A random starting point keeps two testbeds on one machine from handing out the same addresses first.
  readonly #ips = new IpPool(2, 254, 2 + Math.floor(Math.random() * 253));
  readonly #workers = new Map<string, PodWorker>();
  readonly #pods = new Map<string, NodePod>();
  readonly #busy = new Set<string>();
  readonly #deleting = new Set<string>();
  readonly #procs = new Map<number, ProcRecord>();
  readonly #stop = new AbortController();
  readonly #labels: Record<string, string>;
  #server: Server | undefined;
  #timers: NodeJS.Timeout[] = [];
  #firstHeartbeat = 0;

  constructor(opts: NodeAgentOptions) {
    this.#o = opts;
    this.#sources = apiSources(opts.client);
    this.#log = opts.log;
    this.#tools = findHostTools();
    this.#labels = {
      'kubernetes.io/hostname': opts.nodeName,
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': arch() === 'x64' ? 'amd64' : arch(),
      'agent-controller.test/node': 'true',
    };
  }

  get #podsDir(): string {
    return join(this.#o.stateDir, 'pods');
  }

  /** Registers the Node, starts heartbeats, the kubelet endpoint and the pod watch. */
  async start(): Promise<void> {
    // Like a kubelet keeping /var/log/pods: the logs of pods an earlier incarnation ran stay (served for
    // finished pods, removed with their pod); everything else of theirs (volumes, tokens) goes now.
    mkdirSync(this.#podsDir, { recursive: true });
    for (const entry of readdirSync(this.#podsDir, { withFileTypes: true })) {
      const podDir = join(this.#podsDir, entry.name);
      if (!entry.isDirectory()) {
        rmSync(podDir, { force: true });
        continue;
      }
      for (const inner of readdirSync(podDir)) {
        if (inner !== 'logs') rmSync(join(podDir, inner), { recursive: true, force: true });
      }
    }
    this.#server = await startKubeletServer({
      host: this.#o.hostIP,
      port: this.#o.port,
      certFile: this.#o.tlsCert,
      keyFile: this.#o.tlsKey,
      clientCaFile: this.#o.clientCa,
      log: this.#log,
      lookup: (ns, name) => this.#findWorker(ns, name),
    });
    await this.#retry('register the Node', () => this.#register());
    await this.#retry('post the Node status', () => this.#heartbeat());
    await this.#retry('renew the node Lease', () => this.#renewLease());
    this.#every(LEASE_RENEW_MS, () => this.#renewLease());
    this.#every(STATUS_HEARTBEAT_MS, () => this.#heartbeat());
    this.#every(RESYNC_MS, async () => {
      for (const pod of this.#pods.values()) this.#reconcile(pod);
    });
    void this.#watchLoop();
    this.#log.info('Node agent started', { node: this.#o.nodeName, port: this.#o.port });
  }

  /** Stops the watch and heartbeats, SIGTERMs every pod (SIGKILL after `graceMs`), closes the server. */
  async shutdown(graceMs = 5000): Promise<void> {
    this.#stop.abort();
    for (const t of this.#timers) clearInterval(t);
    const workers = [...this.#workers.values()];
    await Promise.race([
      Promise.all(workers.map((w) => w.terminate(graceMs / 1000).catch(() => undefined))),
      delay(graceMs + 2000),
    ]);
    for (const rec of this.#procs.values()) {
      if (procAlive(rec)) {
        try {
          process.kill(-rec.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    await new Promise((r) => this.#server?.close(r) ?? r(undefined));
    this.#o.client.close();
  }

  // -------------------------------------------------------------------------------------------

  #every(ms: number, fn: () => Promise<void>): void {
    let running = false;
    const t = setInterval(() => {
      if (running) return;
      running = true;
      fn()
        .catch((error: unknown) => this.#log.warn('Periodic task failed', { error }))
        .finally(() => {
          running = false;
        });
    }, ms);
    this.#timers.push(t);
  }

  async #retry(what: string, fn: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await fn();
        return;
      } catch (error) {
        if (attempt >= 30) throw error;
        this.#log.warn(`Could not ${what}; retrying`, { error, attempt });
        await delay(Math.min(2000, 100 * attempt));
      }
    }
  }

  #findWorker(ns: string, name: string): ReturnType<PodLookup> {
    let found: PodWorker | undefined;
    for (const w of this.#workers.values()) if (w.namespace === ns && w.name === name) found = w;
    return found ?? this.#earlierLogs(ns, name);
  }

  /** The logs of a pod of this node that an earlier incarnation of the agent ran (no worker now). */
  #earlierLogs(ns: string, name: string): ReturnType<PodLookup> {
    for (const pod of this.#pods.values()) {
      const { uid, namespace } = pod.metadata;
      if (namespace !== ns || pod.metadata.name !== name || pod.spec.nodeName !== this.#o.nodeName) continue;
      if (this.#workers.has(uid)) continue;
      const podDir = join(this.#podsDir, uid);
      if (!existsSync(join(podDir, 'logs'))) continue;
      const names = new Set([...pod.spec.initContainers, ...pod.spec.containers].map((c) => c.name));
      return {
        podIP: undefined,
        logInfo: (container) =>
          names.has(container)
            ? { files: logFilesOnDisk(podDir, container), running: false, waitingReason: undefined }
            : undefined,
      };
    }
    return undefined;
  }

  /** Removes the folders of pods that no longer exist and have no worker (logs of an earlier incarnation). */
  #removeStaleDirs(): void {
    let uids: string[];
    try {
      uids = readdirSync(this.#podsDir);
    } catch {
      return;
    }
    for (const uid of uids) {
      if (!this.#pods.has(uid) && !this.#workers.has(uid)) {
        rmSync(join(this.#podsDir, uid), { recursive: true, force: true });
      }
    }
  }

  async #register(): Promise<void> {
    const path = apiPath('v1', 'nodes');
    try {
      await this.#o.client.create(path, {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: this.#o.nodeName, labels: this.#labels },
        spec: {},
      });
      this.#log.info('Node registered', { node: this.#o.nodeName });
    } catch (error) {
      if (!(error instanceof KubeError && error.reason === 'AlreadyExists')) throw error;
      await this.#o.client.patch(apiPath('v1', 'nodes', { name: this.#o.nodeName }), {
        metadata: { labels: this.#labels },
      });
    }
  }

  async #heartbeat(): Promise<void> {
    const now = Date.now();
    if (this.#firstHeartbeat === 0) this.#firstHeartbeat = now;
    const cond = (type: string, status: string, reason: string, message: string) => ({
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: kubeTime(now),
      lastTransitionTime: kubeTime(this.#firstHeartbeat),
    });
    const capacity = { ...NODE_CAPACITY };
    await this.#o.client.patch(
      apiPath('v1', 'nodes', { name: this.#o.nodeName, subresource: 'status' }),
      {
        status: {
          capacity,
          allocatable: capacity,
          conditions: [
            cond(
              'MemoryPressure',
              'False',
              'KubeletHasSufficientMemory',
              'test node has sufficient memory available',
            ),
            cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'test node has no disk pressure'),
            cond('PIDPressure', 'False', 'KubeletHasSufficientPID', 'test node has sufficient PID available'),
            cond('Ready', 'True', 'KubeletReady', 'test node agent is posting ready status'),
          ],
          addresses: [
            { type: 'InternalIP', address: this.#o.hostIP },
            { type: 'Hostname', address: this.#o.nodeName },
          ],
          daemonEndpoints: { kubeletEndpoint: { Port: this.#o.port } },
          nodeInfo: {
            machineID: 'testbed',
            systemUUID: 'testbed',
            bootID: 'testbed',
            kernelVersion: release(),
            osImage: 'agent-controller test node',
            containerRuntimeVersion: 'testbed://1',
            kubeletVersion: 'v1.36.3',
            kubeProxyVersion: '',
            operatingSystem: 'linux',
            architecture: this.#labels['kubernetes.io/arch'] ?? 'amd64',
          },
        },
      },
      'strategic',
    );
  }

  async #renewLease(): Promise<void> {
    const path = apiPath('coordination.k8s.io/v1', 'leases', {
      namespace: 'kube-node-lease',
      name: this.#o.nodeName,
    });
    const spec = {
      holderIdentity: this.#o.nodeName,
      leaseDurationSeconds: LEASE_SECONDS,
      renewTime: microTime(Date.now()),
    };
    const current = await this.#o.client.tryGet(path, LeaseSchema);
    if (!current) {
      await this.#o.client.create(
        apiPath('coordination.k8s.io/v1', 'leases', { namespace: 'kube-node-lease' }),
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.#o.nodeName, namespace: 'kube-node-lease' },
          spec,
        },
      );
      return;
    }
    await this.#o.client.replace(path, { ...current, spec: { ...current.spec, ...spec } });
  }

  /** LIST then WATCH all pods, relisting on 410 Gone, re-watching after clean closes, backing off on errors. */
  async #watchLoop(): Promise<void> {
    let rv: string | undefined;
    let backoff = 250;
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      try {
        if (rv === undefined) {
          const listed = await this.#o.client.list(apiPath('v1', 'pods'));
          const seen = new Set<string>();
          for (const raw of listed.items) {
            const pod = this.#parsePod(raw);
            if (!pod) continue;
            seen.add(pod.metadata.uid);
            this.#pods.set(pod.metadata.uid, pod);
            this.#reconcile(pod);
          }
          for (const uid of [...this.#pods.keys()]) if (!seen.has(uid)) this.#onDeleted(uid);
          for (const uid of [...this.#workers.keys()]) if (!seen.has(uid)) this.#onDeleted(uid);
          this.#removeStaleDirs();
          rv = listed.resourceVersion;
        }
        let relist = false;
        const end = await this.#o.client.watch(
          apiPath('v1', 'pods'),
          {
            resourceVersion: rv,
            allowWatchBookmarks: true,
            timeoutSeconds: 300,
            idleTimeoutMs: 90_000,
            signal,
          },
          (event) => {
            if (event.type === 'ERROR') {
              if (event.object.code === 410) relist = true;
              else this.#log.warn('Pod watch error event', { status: event.object });
              return;
            }
            rv = event.object.metadata.resourceVersion ?? rv;
            if (event.type === 'BOOKMARK') return;
            const pod = this.#parsePod(event.object);
            if (!pod) return;
            if (event.type === 'DELETED') {
              this.#onDeleted(pod.metadata.uid);
              return;
            }
            this.#pods.set(pod.metadata.uid, pod);
            this.#reconcile(pod);
          },
        );
        if (end.kind === 'http-error') {
          if (end.status === 410) relist = true;
          else throw new Error(`pod watch: HTTP ${end.status}: ${end.body.slice(0, 200)}`);
        }
        if (relist) rv = undefined;
        backoff = 250;
      } catch (error) {
        if (signal.aborted) return;
        this.#log.warn('Pod watch failed; backing off', { error, backoffMs: backoff });
        await delay(backoff);
        backoff = Math.min(backoff * 2, 5000);
      }
    }
  }

  #parsePod(raw: unknown): NodePod | undefined {
    const parsed = v.safeParse(NodePodSchema, raw);
    if (parsed.success) return parsed.output;
    this.#log.warn('Ignoring a pod the node cannot read', {
      issue: v.summarize(parsed.issues).split('\n')[0],
    });
    return undefined;
  }

  /** Serialises work per pod: at most one reconcile in flight per uid (resync retries the rest). */
  #reconcile(pod: NodePod): void {
    const uid = pod.metadata.uid;
    if (this.#busy.has(uid)) return;
    this.#busy.add(uid);
    this.#reconcileOnce(pod)
      .catch((error: unknown) => this.#log.warn('Pod reconcile failed', { pod: pod.metadata.name, error }))
      .finally(() => this.#busy.delete(uid));
  }

  async #reconcileOnce(pod: NodePod): Promise<void> {
    const { uid, namespace, name } = pod.metadata;
    const phase = pod.status.phase;
    const terminal = phase === 'Succeeded' || phase === 'Failed';
    if (pod.spec.nodeName === '') {
      if (pod.metadata.deletionTimestamp || terminal) return;
      if (pod.spec.schedulerName !== 'default-scheduler') return;
      if (!selectorMatches(pod.spec.nodeSelector, this.#labels)) {
        await this.#markUnschedulable(pod);
        return;
      }
      try {
        await this.#o.client.create(apiPath('v1', 'pods', { namespace, name, subresource: 'binding' }), {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name, namespace, uid },
          target: { apiVersion: 'v1', kind: 'Node', name: this.#o.nodeName },
        });
        this.#log.info('Pod bound', { pod: `${namespace}/${name}` });
      } catch (error) {
        if (error instanceof KubeError && (error.status === 409 || error.status === 404)) return;
        throw error;
      }
      return;
    }
    if (pod.spec.nodeName !== this.#o.nodeName) return;
    const worker = this.#workers.get(uid);
    if (pod.metadata.deletionTimestamp) {
      if (this.#deleting.has(uid)) return;
      this.#deleting.add(uid);
      try {
        const grace = pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds;
        if (worker) await worker.terminate(grace);
        await this.#o.client.delete(apiPath('v1', 'pods', { namespace, name }), {
          gracePeriodSeconds: 0,
          preconditionUid: uid,
        });
      } catch (error) {
        this.#deleting.delete(uid);
        if (!(error instanceof KubeError && (error.status === 404 || error.status === 409))) throw error;
      }
      return;
    }
    if (worker || terminal || this.#stop.signal.aborted) return;
    if (pod.status.startTime !== undefined) {
      // Started by an earlier incarnation of this agent: its processes are gone.
      await this.#o.client.patch(
        apiPath('v1', 'pods', { namespace, name, subresource: 'status' }),
        {
          metadata: { uid },
          status: {
            phase: 'Failed',
            reason: 'NodeAgentRestarted',
            message: 'the test node agent restarted while this pod was running',
          },
        },
        'strategic',
      );
      return;
    }
    // A pod an earlier incarnation began but never reported started: its logs start afresh.
    rmSync(join(this.#podsDir, uid), { recursive: true, force: true });
    const created = new PodWorker(
      {
        client: this.#o.client,
        log: this.#log,
        nodeName: this.#o.nodeName,
        hostIP: this.#o.hostIP,
        podsDir: this.#podsDir,
        ips: this.#ips,
        images: () => this.#images(),
        tools: this.#tools,
        apiserver: { host: this.#o.client.server.hostname, port: this.#o.client.server.port || '443' },
        sources: this.#sources,
        trackProcess: (procName, pid, running) => this.#track(procName, pid, running),
        now: Date.now,
      },
      pod,
    );
    this.#workers.set(uid, created);
    created.start();
  }

  /**
   * Like kube-scheduler with a pod that fits no node (the test node being the only one): PodScheduled False,
   * reason Unschedulable, in the pod's status. Nothing is sent when the pod already says so.
   */
  async #markUnschedulable(pod: NodePod): Promise<void> {
    const { uid, namespace, name } = pod.metadata;
    const condition = unschedulableCondition(pod.status.conditions, 1, Date.now());
    if (!condition) return;
    try {
      await this.#o.client.patch(
        apiPath('v1', 'pods', { namespace, name, subresource: 'status' }),
        { metadata: { uid }, status: { conditions: [condition] } },
        'strategic',
      );
      this.#log.info('Pod unschedulable', { pod: `${namespace}/${name}`, message: condition.message });
    } catch (error) {
      // Gone, or replaced by a pod of the same name: nothing to report.
      if (error instanceof KubeError && (error.status === 404 || error.status === 409)) return;
      throw error;
    }
  }

  #onDeleted(uid: string): void {
    this.#pods.delete(uid);
    this.#deleting.delete(uid);
    const worker = this.#workers.get(uid);
    if (!worker) {
      rmSync(join(this.#podsDir, uid), { recursive: true, force: true });
      return;
    }
    this.#workers.delete(uid);
    void worker
      .kill()
      .catch(() => undefined)
      .then(() => worker.cleanup());
  }

  #images(): ImageTable {
    return loadImageTables(this.#o.imageFiles);
  }

  #track(name: string, pid: number, running: boolean): void {
    if (running) {
      const start = procStart(pid);
      if (start !== undefined) this.#procs.set(pid, { name, pid, start });
    } else {
      this.#procs.delete(pid);
    }
    try {
      writeProcRecords(join(this.#o.stateDir, 'processes.json'), [...this.#procs.values()]);
    } catch (error) {
      this.#log.warn('Could not record pod processes', { error });
    }
  }
}

/** Secrets, ConfigMaps and ServiceAccount tokens for pods' volumes and env, read through the API server. */
export function apiSources(client: KubeClient): VolumeSources {
  return {
    secret: async (ns, name) => {
      const obj = await client.tryGet(apiPath('v1', 'secrets', { namespace: ns, name }), DataObjectSchema);
      return obj ? decodeData(obj, true) : undefined;
    },
    configMap: async (ns, name) => {
      const obj = await client.tryGet(apiPath('v1', 'configmaps', { namespace: ns, name }), DataObjectSchema);
      return obj ? decodeData(obj, false) : undefined;
    },
    serviceAccountToken: async (ns: string, name: string, spec: TokenRequestSpec): Promise<IssuedToken> => {
      let answer: v.InferOutput<typeof TokenRequestSchema>;
      try {
        answer = await client.create(
          apiPath('v1', 'serviceaccounts', { namespace: ns, name, subresource: 'token' }),
          { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec },
          TokenRequestSchema,
        );
      } catch (error) {
        throw new Error(apiMessage(error));
      }
      return {
        token: answer.status.token,
        expiresAt: Date.parse(answer.status.expirationTimestamp),
        expirationSeconds: answer.spec.expirationSeconds,
      };
    },
  };
}
