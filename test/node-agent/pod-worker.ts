// Runs one pod on the test node: volumes (projected tokens refreshed while it runs, secret and configMap contents
// re-synced every VOLUME_SYNC_MS as the kubelet does, about every minute), init containers in
// order (sidecars — init containers with restartPolicy Always — are started, probed and kept running beside
// the app containers), then the containers, restarts by restartPolicy, activeDeadlineSeconds, graceful
// termination (app containers first, then the sidecars in reverse order); keeps logs; reports status as it goes.
import type { ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../../src/shared/log.ts';
import { err, ok, type Result } from '../../src/shared/result.ts';
import { apiPath, type KubeClient, KubeError } from '../support/kube-client.ts';
import { containerEnvironment, kubernetesServiceEnv, type PodFacts, resolveEnv } from './env.ts';
import type { ImageTable } from './images.ts';
import { type InstantRun, instantRun } from './instant.ts';
import type { IpPool } from './ip-pool.ts';
import { ContainerLogWriter, parseCriLog, terminationMessageFromLog } from './logs.ts';
import {
  admitPod,
  appContainersDone,
  DEFAULT_PATH,
  findExecutable,
  imagePullFailure,
  isApiDataVolume,
  isSidecar,
  nextInitStep,
  planMounts,
  resolveArgv,
  resolveIdentity,
  restartBackoffMs,
  shouldRestart,
  sidecarStopOrder,
  type Waiting,
} from './plan.ts';
import type { Container, NodePod, Volume } from './pod-spec.ts';
import { checkProbe, type ProbeCheck, Prober, type ProbeTarget } from './probe.ts';
import { type HostTools, isExecutableFile, type ProcessSpec, spawnContainer } from './process.ts';
import {
  buildPodStatus,
  type ContainerRun,
  type ContainerState,
  isStarted,
  type PodRun,
  type Terminated,
  type TransitionTimes,
} from './status.ts';
import {
  fsUserOf,
  type IssuedToken,
  type Payload,
  samePayload,
  syncsWithObjects,
  type TokenRequestSpec,
  tokenRefreshAt,
  type VolumeContext,
  type VolumeSources,
  volumeContent,
  writeVolume,
} from './volumes.ts';

/** What a pod worker needs from the node. */
export interface WorkerDeps {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly nodeName: string;
  readonly hostIP: string;
  /** Folder under which each pod gets `<uid>/` (volumes, logs). */
  readonly podsDir: string;
  readonly ips: IpPool;
  /** The image table, read at each container start. */
  readonly images: () => ImageTable;
  readonly tools: HostTools;
  /**
   * Where containers reach the API server: the `kubernetes` Service variables (KUBERNETES_SERVICE_HOST, …) point
   * here, the API server the node agent itself uses (the test node has no ClusterIPs).
   */
  readonly apiserver: { readonly host: string; readonly port: string };
  /** Secrets, ConfigMaps and ServiceAccount tokens (TokenRequest) for env and volumes. */
  readonly sources: VolumeSources;
  /** Called with each container process started / finished, for crash-safe cleanup by `testbed down`. */
  readonly trackProcess: (name: string, pid: number, running: boolean) => void;
  readonly now: () => number;
  /** How often secret and configMap volumes are re-synced with their objects (default VOLUME_SYNC_MS). */
  readonly volumeSyncMs?: number | undefined;
}

/**
 * How often the test node re-syncs the secret and configMap volumes (and projected secret/configMap sources) of a
 * running pod with their objects. The kubelet does it on its pod sync (every minute, `syncFrequency`) through its
 * object cache, so a changed Secret reaches running pods within about a minute or two; the test node polls every
 * 2 s, so tests of a rotated Secret need not wait that long. Changed files are swapped in atomically (the `..data`
 * layout); unchanged ones are not rewritten; a Secret or ConfigMap that is gone (or a key that is) leaves the files
 * as they were, as the kubelet's failed volume setup does (an optional one that is gone: its files are removed).
 */
export const VOLUME_SYNC_MS = 2000;

type Kind = 'init' | 'app';

/** The current incarnation of a container that can be signalled: a process group, or an instant sidecar. */
interface RunningContainer {
  readonly sidecar: boolean;
  /** Signals it (a no-op once it has ended). */
  readonly signal: (signal: NodeJS.Signals) => void;
  /** Settles once it has ended and its terminated state is recorded. */
  readonly ended: Promise<void>;
}

/** Log files and current state of a container, for the kubelet log endpoint. */
export interface ContainerLogInfo {
  readonly files: readonly string[];
  readonly running: boolean;
  readonly waitingReason: string | undefined;
}

/** How soon a failed token refresh is tried again (the files keep the previous token meanwhile). */
const TOKEN_RETRY_MS = 10_000;

/** A volume's files as last built, whether that build wrote them, and when its tokens are due (undefined: none). */
interface Written {
  readonly payload: Payload;
  readonly refreshAt: number | undefined;
  readonly written: boolean;
}

const DEADLINE = {
  reason: 'DeadlineExceeded',
  message: 'Pod was active on the node longer than the specified deadline',
};

/**
 * One pod's life on the node. `start()` begins running it; `terminate()` stops it gracefully
 * (SIGTERM, grace period, SIGKILL) and resolves once the final status is written; `kill()` stops it at once.
 */
export class PodWorker {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly #deps: WorkerDeps;
  readonly #pod: NodePod;
  readonly #dir: string;
  readonly #log: Logger;
  #init: ContainerRun[];
  #containers: ContainerRun[];
  #podIP: string | undefined;
  #startTime: number | undefined;
  #sandboxReady = false;
  #finished = false;
  #failure: { reason: string; message: string } | undefined;
  #times: TransitionTimes = new Map();
  readonly #running = new Map<string, RunningContainer>();
  readonly #logFiles = new Map<string, string[]>();
  readonly #stop = new AbortController();
  /** Aborted when the sidecars are to stop: no (re)start of a sidecar after that. */
  readonly #sidecarStop = new AbortController();
  readonly #sidecarLoops: Promise<void>[] = [];
  /** Aborted when the pod has ended: its volumes are no longer refreshed. */
  readonly #volumesStop = new AbortController();
  /** The loops refreshing volumes (tokens due, objects changed). */
  readonly #volumeLoops: Promise<void>[] = [];
  /** Tokens issued for the pod, by request: reused until due for a refresh (the kubelet's token manager). */
  readonly #tokens = new Map<string, IssuedToken>();
  /** Condition checks of `#until`, run at each state change. */
  readonly #waiters = new Set<() => void>();
  #killTimer: NodeJS.Timeout | undefined;
  #killAt = Number.POSITIVE_INFINITY;
  #deadlineTimer: NodeJS.Timeout | undefined;
  #syncing: Promise<void> | undefined;
  #dirty = false;
  #gone = false;
  #done: Promise<void> = Promise.resolve();

  constructor(deps: WorkerDeps, pod: NodePod) {
    this.#deps = deps;
    this.#pod = pod;
    this.uid = pod.metadata.uid;
    this.namespace = pod.metadata.namespace;
    this.name = pod.metadata.name;
    this.#dir = join(deps.podsDir, this.uid);
    this.#log = deps.log.with({ pod: `${this.namespace}/${this.name}`, uid: this.uid });
    const spec = pod.spec;
    const initial = spec.initContainers.length > 0 ? 'PodInitializing' : 'ContainerCreating';
    const fresh = (c: Container, reason: string): ContainerRun => ({
      name: c.name,
      image: c.image,
      state: { kind: 'waiting', reason },
      restartCount: 0,
    });
    this.#init = spec.initContainers.map((c) => ({
      ...fresh(c, 'PodInitializing'),
      ...(isSidecar(c) ? { sidecar: true } : {}),
    }));
    this.#containers = spec.containers.map((c) => fresh(c, initial));
  }

  /** Resolves when the pod will not run anything any more and its final status has been written. */
  get done(): Promise<void> {
    return this.#done;
  }

  /** Whether the pod reached its end (Succeeded/Failed). */
  get finished(): boolean {
    return this.#finished;
  }

  /** Starts running the pod in the background. */
  start(): void {
    this.#done = this.#run().catch((error: unknown) => {
      this.#log.error('Pod worker crashed', { error });
      this.#failure ??= {
        reason: 'NodeAgentError',
        message: error instanceof Error ? error.message : String(error),
      };
      this.#finished = true;
      this.#stop.abort();
      this.#sidecarStop.abort();
      this.#volumesStop.abort();
      this.#killAll('SIGKILL', true);
      return this.#flush();
    });
  }

  /** The pod's IP once it started (its containers' processes bind there). */
  get podIP(): string | undefined {
    return this.#podIP;
  }

  /**
   * Log files and state of a container (init containers, sidecars included, or app), or undefined when
   * the pod has no such container.
   */
  logInfo(container: string): ContainerLogInfo | undefined {
    const run = [...this.#init, ...this.#containers].find((c) => c.name === container);
    if (!run) return undefined;
    return {
      files: this.#logFiles.get(container) ?? [],
      running: this.#running.has(container),
      waitingReason: run.state.kind === 'waiting' ? run.state.reason : undefined,
    };
  }

  /**
   * Stops the pod: no further (re)starts, SIGTERM to the process group of every container but the
   * sidecars now, to the sidecars once those have exited (in reverse order), SIGKILL to all after
   * `graceSeconds` (an earlier deadline is kept). Resolves when the final status is written.
   */
  async terminate(graceSeconds: number, failure?: { reason: string; message: string }): Promise<void> {
    if (failure && !this.#finished) this.#failure ??= failure;
    this.#stop.abort();
    this.#notify();
    this.#killAll('SIGTERM', false);
    this.#armKill(this.#deps.now() + Math.max(0, graceSeconds) * 1000);
    await this.#done;
  }

  /** Stops the pod at once (SIGKILL) and waits for its run to end. Used when the pod object is gone. */
  async kill(): Promise<void> {
    this.#gone = true;
    await this.terminate(0);
  }

  /** Removes the pod's folder (volumes and logs) and releases its IP. Call after `done`. */
  cleanup(): void {
    this.#deps.ips.release(this.uid);
    rmSync(this.#dir, { recursive: true, force: true });
  }

  // -------------------------------------------------------------------------------------------

  get #stopping(): boolean {
    return this.#stop.signal.aborted;
  }

  /** Whether a container may no longer (re)start: the pod is stopping, or (sidecars) the sidecars are. */
  #halted(sidecar: boolean): boolean {
    return this.#stopping || (sidecar && this.#sidecarStop.signal.aborted);
  }

  /** Signals every running container, or every one but the sidecars. */
  #killAll(signal: NodeJS.Signals, sidecars: boolean): void {
    for (const running of this.#running.values()) if (sidecars || !running.sidecar) running.signal(signal);
  }

  /** SIGKILLs every container at `at` (epoch ms) unless an earlier deadline is already set. */
  #armKill(at: number): void {
    if (at >= this.#killAt) return;
    this.#killAt = at;
    clearTimeout(this.#killTimer);
    this.#killTimer = setTimeout(() => this.#killAll('SIGKILL', true), Math.max(0, at - this.#deps.now()));
    this.#killTimer.unref();
  }

  /** Stops one container as the kubelet does: SIGTERM, then SIGKILL after `graceSeconds` unless it ended. */
  #stopContainer(running: RunningContainer, graceSeconds: number): void {
    running.signal('SIGTERM');
    const timer = setTimeout(() => running.signal('SIGKILL'), graceSeconds * 1000);
    timer.unref();
    void running.ended.then(() => clearTimeout(timer));
  }

  /** Sleeps `ms`, cut short when the pod stops (and, for a sidecar, when the sidecars stop). */
  #sleep(ms: number, sidecar = false): Promise<void> {
    return sleep(ms, sidecar ? [this.#stop.signal, this.#sidecarStop.signal] : [this.#stop.signal]);
  }

  /**
   * A container loop that runs beside #run (an app container, a sidecar), awaited only later: an error in it
   * stops the pod with NodeAgentError, as an error in #run does. Left rejected, it would be an unhandled
   * rejection while #run waits for something else, and that ends the whole node agent.
   */
  #beside(loop: Promise<void>): Promise<void> {
    return loop.catch((error: unknown) => {
      this.#log.error('Pod worker crashed', { error });
      this.#failure ??= {
        reason: 'NodeAgentError',
        message: error instanceof Error ? error.message : String(error),
      };
      this.#stop.abort();
      this.#sidecarStop.abort();
      this.#killAll('SIGKILL', true);
      this.#notify();
    });
  }

  /** Resolves once `condition` holds; it is checked now and at every state change (no polling). */
  #until(condition: () => boolean): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolvePromise) => {
      const check = (): void => {
        if (!condition()) return;
        this.#waiters.delete(check);
        resolvePromise();
      };
      this.#waiters.add(check);
    });
  }

  #notify(): void {
    for (const check of [...this.#waiters]) check();
  }

  #runState(): PodRun {
    return {
      restartPolicy: this.#pod.spec.restartPolicy,
      hostIP: this.#deps.hostIP,
      ...(this.#podIP !== undefined ? { podIP: this.#podIP } : {}),
      ...(this.#startTime !== undefined ? { startTime: this.#startTime } : {}),
      sandboxReady: this.#sandboxReady,
      init: this.#init,
      containers: this.#containers,
      finished: this.#finished,
      ...(this.#failure ? { failure: this.#failure } : {}),
    };
  }

  /** Schedules a status write; writes coalesce, so only the latest state is sent. */
  #sync(): void {
    if (this.#gone) return;
    if (this.#syncing) {
      this.#dirty = true;
      return;
    }
    this.#syncing = this.#syncLoop().finally(() => {
      this.#syncing = undefined;
      // A change between the loop's last write and this callback only set #dirty: send it now.
      if (this.#dirty && !this.#gone) this.#sync();
    });
  }

  async #syncLoop(): Promise<void> {
    let attempts = 0;
    do {
      this.#dirty = false;
      const { status, times } = buildPodStatus(this.#runState(), this.#times, this.#deps.now());
      const path = apiPath('v1', 'pods', {
        namespace: this.namespace,
        name: this.name,
        subresource: 'status',
      });
      try {
        await this.#deps.client.patch(path, { metadata: { uid: this.uid }, status }, 'strategic');
        this.#times = times;
        attempts = 0;
      } catch (error) {
        if (error instanceof KubeError && error.status === 404) {
          this.#gone = true;
          return;
        }
        const permanent =
          error instanceof KubeError && error.status >= 400 && error.status < 500 && error.status !== 429;
        this.#log.warn('Pod status update failed', { error, permanent });
        if (permanent || ++attempts > 20) return;
        this.#dirty = true;
        await new Promise((r) => setTimeout(r, Math.min(5000, 200 * 2 ** attempts)));
      }
    } while (this.#dirty && !this.#gone);
  }

  /** Waits until every requested status write has been sent. */
  async #flush(): Promise<void> {
    this.#sync();
    while (this.#syncing) await this.#syncing;
  }

  #setRun(kind: Kind, index: number, run: ContainerRun): void {
    if (kind === 'init') this.#init[index] = run;
    else this.#containers[index] = run;
    this.#sync();
    this.#notify();
  }

  #getRun(kind: Kind, index: number): ContainerRun {
    const run = kind === 'init' ? this.#init[index] : this.#containers[index];
    if (!run) throw new Error(`no ${kind} container #${index}`);
    return run;
  }

  async #run(): Promise<void> {
    const spec = this.#pod.spec;
    const refusal = admitPod(spec);
    if (refusal) {
      this.#log.warn('Pod refused', { ...refusal });
      this.#failure = refusal;
      this.#finished = true;
      await this.#flush();
      return;
    }
    const ip = spec.hostNetwork ? this.#deps.hostIP : this.#deps.ips.allocate(this.uid);
    if (ip === undefined) {
      this.#failure = { reason: 'OutOfPodIPs', message: 'the test node has no free 127.0.0.N address' };
      this.#finished = true;
      await this.#flush();
      return;
    }
    this.#podIP = ip;
    this.#startTime = this.#deps.now();
    mkdirSync(join(this.#dir, 'logs'), { recursive: true });
    this.#log.info('Pod starting', { podIP: ip });
    this.#sync();
    if (spec.activeDeadlineSeconds !== undefined) {
      this.#deadlineTimer = setTimeout(() => {
        this.#log.info('Pod deadline exceeded', { activeDeadlineSeconds: spec.activeDeadlineSeconds });
        void this.terminate(spec.terminationGracePeriodSeconds, DEADLINE);
      }, spec.activeDeadlineSeconds * 1000);
      this.#deadlineTimer.unref();
    }
    try {
      const volumes = await this.#setupVolumes();
      if (volumes) {
        this.#sandboxReady = true;
        this.#sync();
        if (await this.#runInit(volumes)) {
          const apps = spec.containers.map((c, i) => this.#beside(this.#runApp(i, c, volumes)));
          // The sidecars run until the app containers are done for good, or the pod is stopped.
          await this.#until(() => this.#stopping || appContainersDone(spec.restartPolicy, this.#containers));
          await Promise.all(apps);
        }
        await this.#stopSidecars();
      }
    } finally {
      clearTimeout(this.#deadlineTimer);
      clearTimeout(this.#killTimer);
      // Like the kubelet tearing down the volumes of a pod that has ended: no more token refreshes.
      this.#volumesStop.abort();
      await Promise.all(this.#volumeLoops);
      this.#finished = true;
      this.#deps.ips.release(this.uid);
      this.#log.info('Pod finished', {
        phase: buildPodStatus(this.#runState(), this.#times, 0).status.phase,
      });
      await this.#flush();
    }
  }

  /**
   * Runs the init containers in order: each regular one to completion, each sidecar until it has started
   * (it then keeps running, see #runSidecar). True when the pod is initialized.
   */
  async #runInit(volumes: ReadonlyMap<string, string>): Promise<boolean> {
    const spec = this.#pod.spec;
    const done = spec.initContainers.map(() => false);
    for (;;) {
      if (this.#stopping) return false;
      const step = nextInitStep(spec.initContainers, done);
      if (step.kind === 'initialized') break;
      const { index } = step;
      const c = spec.initContainers[index];
      if (!c) throw new Error(`no init container #${index}`);
      if (step.kind === 'launch') {
        this.#sidecarLoops.push(this.#beside(this.#runSidecar(index, c, volumes)));
        await this.#until(() => this.#stopping || isStarted(this.#getRun('init', index)));
        if (this.#stopping) return false;
      } else if (!(await this.#runToCompletion(index, c, volumes))) {
        return false;
      }
      done[index] = true;
    }
    // App containers leave PodInitializing for ContainerCreating once init is done.
    for (const [i, run] of this.#containers.entries()) {
      if (run.state.kind === 'waiting')
        this.#setRun('app', i, { ...run, state: { kind: 'waiting', reason: 'ContainerCreating' } });
    }
    return !this.#stopping;
  }

  /** Runs a regular init container until it succeeds; false when it failed for good or the pod stopped. */
  async #runToCompletion(
    index: number,
    c: Container,
    volumes: ReadonlyMap<string, string>,
  ): Promise<boolean> {
    for (;;) {
      const exit = await this.#runOnce('init', index, c, volumes);
      if (exit === undefined || this.#stopping) return false;
      if (exit === 0) return true;
      if (this.#pod.spec.restartPolicy === 'Never') return false;
      await this.#backoff('init', index);
    }
  }

  /**
   * Keeps a sidecar running: whenever it exits (or its startup probe made the node kill it) it is
   * restarted after the back-off, whatever the pod's restartPolicy, until the sidecars are stopped.
   */
  async #runSidecar(index: number, c: Container, volumes: ReadonlyMap<string, string>): Promise<void> {
    for (;;) {
      const exit = await this.#runOnce('init', index, c, volumes);
      if (exit === undefined || this.#halted(true)) return;
      await this.#backoff('init', index);
      if (this.#halted(true)) return;
    }
  }

  /**
   * Stops the sidecars once the app containers are done (or the pod is stopping): no more restarts,
   * then SIGTERM to each in reverse declaration order, the next once the previous one has exited;
   * SIGKILL to all once the pod's grace period from now (or an earlier termination deadline) is over.
   */
  async #stopSidecars(): Promise<void> {
    const spec = this.#pod.spec;
    this.#sidecarStop.abort();
    this.#notify();
    if (this.#sidecarLoops.length === 0) return;
    this.#armKill(this.#deps.now() + spec.terminationGracePeriodSeconds * 1000);
    for (const index of sidecarStopOrder(spec.initContainers)) {
      const name = spec.initContainers[index]?.name ?? '';
      const running = this.#running.get(name);
      if (!running) continue;
      this.#log.info('Stopping sidecar', { container: name });
      running.signal('SIGTERM');
      await running.ended;
    }
    await Promise.all(this.#sidecarLoops);
  }

  async #runApp(index: number, c: Container, volumes: ReadonlyMap<string, string>): Promise<void> {
    for (;;) {
      const exit = await this.#runOnce('app', index, c, volumes);
      if (exit === undefined || this.#stopping) return;
      if (!shouldRestart(this.#pod.spec.restartPolicy, exit)) return;
      await this.#backoff('app', index);
      if (this.#stopping) return;
    }
  }

  async #backoff(kind: Kind, index: number): Promise<void> {
    const run = this.#getRun(kind, index);
    const sidecar = run.sidecar === true;
    const ms = restartBackoffMs(run.restartCount);
    const last = run.state.kind === 'terminated' ? run.state : run.lastState;
    this.#setRun(kind, index, {
      ...run,
      state: {
        kind: 'waiting',
        reason: 'CrashLoopBackOff',
        message: `back-off ${Math.round(ms / 1000)}s restarting failed container=${run.name} pod=${this.name}_${this.namespace}(${this.uid})`,
      },
      ...(last ? { lastState: last } : {}),
      restartCount: run.restartCount + 1,
    });
    await this.#sleep(ms, sidecar);
  }

  #facts(): PodFacts {
    const meta = this.#pod.metadata;
    return {
      name: this.name,
      namespace: this.namespace,
      uid: this.uid,
      nodeName: this.#deps.nodeName,
      serviceAccountName: this.#pod.spec.serviceAccountName ?? 'default',
      hostIP: this.#deps.hostIP,
      podIP: this.#podIP ?? '',
      labels: meta.labels ?? {},
      annotations: meta.annotations ?? {},
    };
  }

  /** The image table, or the ErrImagePull the container waits with while it cannot be read. */
  #imageTable(): Result<ImageTable, Waiting> {
    try {
      return ok(this.#deps.images());
    } catch (error) {
      return err({ reason: 'ErrImagePull', message: error instanceof Error ? error.message : String(error) });
    }
  }

  /**
   * An instant container's image pull: only an image the table says cannot be pulled holds it back (instant pods
   * need no image entry, so an unreadable table does not either).
   */
  #pullInstant(c: Container, previous: ContainerState): Result<true, Waiting> {
    const images = this.#imageTable();
    const failure = images.ok ? imagePullFailure(c.image, images.value[c.image], previous) : undefined;
    return failure ? err(failure) : ok(true);
  }

  /**
   * Everything to start a container, or why it cannot start yet. Like the kubelet, the image is pulled first
   * (`previous`, the container's current state, tells a first pull failure from a retry), then the container's
   * config (identity, env, argv, mounts) is made.
   */
  async #prepare(
    c: Container,
    volumes: ReadonlyMap<string, string>,
    previous: ContainerState,
  ): Promise<Result<ProcessSpec, Waiting>> {
    const images = this.#imageTable();
    if (!images.ok) return images;
    const image = images.value[c.image];
    const pullFailure = imagePullFailure(c.image, image, previous);
    if (pullFailure) return err(pullFailure);
    const identity = resolveIdentity(this.#pod.spec, c, image, `${this.name}_${this.namespace}(${this.uid})`);
    if (!identity.ok) return identity;
    const serviceEnv = kubernetesServiceEnv(this.#deps.apiserver.host, this.#deps.apiserver.port);
    const all = [...this.#pod.spec.initContainers, ...this.#pod.spec.containers];
    const resolved = await resolveEnv(c, all, this.#facts(), this.#deps.sources, serviceEnv);
    if (!resolved.ok) return resolved;
    const env = containerEnvironment(
      image?.env ?? {},
      new Map([['HOSTNAME', this.name], ...serviceEnv]),
      resolved.value,
    );
    if (!env.has('HOME')) env.set('HOME', identity.value.uid === 0 ? '/root' : '/');
    const argv = resolveArgv(c, image, env);
    if (!argv.ok) return argv;
    const readOnly = new Set(this.#pod.spec.volumes.filter(isApiDataVolume).map((vol) => vol.name));
    const mounts = planMounts(c.volumeMounts, volumes, readOnly);
    if (!mounts.ok) return mounts;
    const imageFiles = Object.entries(image?.files ?? {}).map(([target, source]) => ({
      source,
      target,
      readOnly: true,
    }));
    return ok({
      argv: argv.value,
      env: Object.fromEntries(env),
      workingDir: c.workingDir || image?.workingDir || '/',
      mounts: [...imageFiles, ...mounts.value],
      identity: identity.value,
    });
  }

  /**
   * Runs a container once. Waits (reporting `waiting`) while its image cannot be pulled (instant containers
   * included) or it cannot be prepared; resolves with the exit code, or undefined when the pod was stopped
   * before the container started.
   */
  async #runOnce(
    kind: Kind,
    index: number,
    c: Container,
    volumes: ReadonlyMap<string, string>,
  ): Promise<number | undefined> {
    const sidecar = kind === 'init' && isSidecar(c);
    if (this.#halted(sidecar)) return undefined;
    const instant = instantRun(this.#pod.metadata.annotations, sidecar ? 'sidecar' : kind, c.name);
    if (instant !== undefined) {
      const pulled = await this.#whenReady(kind, index, c, sidecar, async (previous) =>
        this.#pullInstant(c, previous),
      );
      if (pulled === undefined || this.#halted(sidecar)) return undefined;
      return this.#runInstant(kind, index, c, instant);
    }
    const spec = await this.#whenReady(kind, index, c, sidecar, (previous) =>
      this.#prepare(c, volumes, previous),
    );
    if (spec === undefined || this.#halted(sidecar)) return undefined;
    const run = this.#getRun(kind, index);
    const containerID = `testbed://${this.uid}/${c.name}/${run.restartCount}`;
    const startedAt = this.#deps.now();
    const argv0 = spec.argv[0] ?? '';
    const exe = findExecutable(
      argv0,
      spec.env.PATH ?? DEFAULT_PATH,
      spec.workingDir,
      spec.mounts,
      isExecutableFile,
    );
    if (exe === undefined) {
      const message = argv0.includes('/')
        ? `exec: "${argv0}": stat ${argv0}: no such file or directory`
        : `exec: "${argv0}": executable file not found in $PATH`;
      return this.#terminated(kind, index, {
        kind: 'terminated',
        exitCode: 128,
        reason: 'StartError',
        message: `failed to create containerd task: failed to start container: ${message}`,
        startedAt,
        finishedAt: startedAt,
        containerID,
      });
    }
    const logDir = join(this.#dir, 'logs', c.name);
    mkdirSync(logDir, { recursive: true });
    const logFile = join(logDir, `${run.restartCount}.log`);
    const writer = new ContainerLogWriter(logFile, this.#deps.now);
    this.#logFiles.set(c.name, [...(this.#logFiles.get(c.name) ?? []), logFile]);
    // The termination message file, bind-mounted at terminationMessagePath as the kubelet does (writable by the
    // container's user; the mount point is created when missing, e.g. /dev/termination-log on the host's /dev).
    const terminationFile = join(logDir, `${run.restartCount}.termination-log`);
    writeFileSync(terminationFile, '');
    chmodSync(terminationFile, 0o666);
    const withTermination: ProcessSpec = {
      ...spec,
      mounts: [
        ...spec.mounts,
        {
          source: terminationFile,
          target: c.terminationMessagePath || TERMINATION_MESSAGE_PATH,
          readOnly: false,
        },
      ],
    };
    const child = spawnContainer(withTermination, this.#deps.tools);
    const procName = `${this.namespace}/${this.name}/${c.name}`;
    let ended = false;
    let markEnded = (): void => undefined;
    const handle: RunningContainer = {
      sidecar,
      signal: (signal) => {
        if (!ended) killGroup(child, signal);
      },
      ended: new Promise<void>((resolveEnded) => {
        markEnded = () => {
          ended = true;
          resolveEnded();
        };
      }),
    };
    this.#running.set(c.name, handle);
    if (child.pid !== undefined) this.#deps.trackProcess(procName, child.pid, true);
    if (child.stdout) writer.attach(child.stdout, 'stdout');
    if (child.stderr) writer.attach(child.stderr, 'stderr');
    let report = '';
    let started = false;
    let runningSince = startedAt;
    let stopProbes = (): void => undefined;
    child.stdio[3]?.on('data', (chunk: Buffer) => {
      report += chunk.toString('utf8');
      if (!started && /(^|\n)started\n/.test(report)) {
        started = true;
        runningSince = this.#deps.now();
        this.#setRun(kind, index, {
          ...this.#getRun(kind, index),
          state: { kind: 'running', startedAt: runningSince },
          containerID,
          // A container with probes (a sidecar, or an app container such as a server's) has started once its
          // startup probe passes, and is ready once its readiness probe does.
          ...(sidecar || c.startupProbe !== undefined || c.readinessProbe !== undefined
            ? {
                started: c.startupProbe === undefined,
                ready: c.startupProbe === undefined && c.readinessProbe === undefined,
              }
            : {}),
        });
        if (sidecar || c.startupProbe !== undefined || c.readinessProbe !== undefined)
          stopProbes = this.#probeContainer(kind, index, c, withTermination, containerID, handle);
      }
    });
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
      (resolveExit) => {
        child.once('error', (error) => resolveExit({ code: null, signal: null, error }));
        child.once('exit', (code, signal) => {
          // The container's main process is gone: like a PID namespace teardown, kill what it left behind.
          killGroup(child, 'SIGKILL');
          child.once('close', () => resolveExit({ code, signal }));
        });
      },
    );
    stopProbes();
    writer.close();
    if (child.pid !== undefined) this.#deps.trackProcess(procName, child.pid, false);
    try {
      return this.#exited(kind, index, c, {
        exit,
        started,
        report,
        runningSince,
        containerID,
        logFile,
        terminationFile,
      });
    } finally {
      if (this.#running.get(c.name) === handle) this.#running.delete(c.name);
      markEnded();
    }
  }

  /**
   * Tries `attempt` every second until it succeeds, reporting why the container cannot start yet as its `waiting`
   * state (written only when it changes). `attempt` gets the container's current state. Undefined when the pod
   * (or, for a sidecar, the sidecars) stopped meanwhile.
   */
  async #whenReady<T>(
    kind: Kind,
    index: number,
    c: Container,
    sidecar: boolean,
    attempt: (previous: ContainerState) => Promise<Result<T, Waiting>>,
  ): Promise<T | undefined> {
    for (;;) {
      if (this.#halted(sidecar)) return undefined;
      const result = await attempt(this.#getRun(kind, index).state);
      if (result.ok) return result.value;
      const run = this.#getRun(kind, index);
      const w = result.error;
      if (run.state.kind !== 'waiting' || run.state.reason !== w.reason || run.state.message !== w.message) {
        this.#log.info('Container cannot start yet', { container: c.name, ...w });
        this.#setRun(kind, index, {
          ...run,
          state: { kind: 'waiting', reason: w.reason, message: w.message },
        });
      }
      await this.#sleep(1000, sidecar);
    }
  }

  /** Records how a started container process ended; returns its exit code. */
  #exited(
    kind: Kind,
    index: number,
    c: Container,
    r: {
      readonly exit: { code: number | null; signal: NodeJS.Signals | null; error?: Error };
      readonly started: boolean;
      readonly report: string;
      readonly runningSince: number;
      readonly containerID: string;
      readonly logFile: string;
      readonly terminationFile: string;
    },
  ): number {
    const { exit, started, report, runningSince, containerID, logFile, terminationFile } = r;
    const finishedAt = this.#deps.now();
    if (!started) {
      const detail = exit.error?.message ?? report.replace(/(^|\n)started\n/, '').trim();
      return this.#terminated(kind, index, {
        kind: 'terminated',
        exitCode: 128,
        reason: 'StartError',
        message: `failed to start container: ${detail || `exit code ${exit.code ?? exit.signal}`}`,
        startedAt: finishedAt,
        finishedAt,
        containerID,
      });
    }
    const signalNumber = exit.signal ? constants.signals[exit.signal] : undefined;
    const exitCode = exit.code ?? 128 + (signalNumber ?? 9);
    let message: string | undefined = readTerminationMessage(terminationFile);
    if (message === undefined && exitCode !== 0 && c.terminationMessagePolicy === 'FallbackToLogsOnError') {
      message = terminationMessageFromLog(parseCriLog(readFileSync(logFile, 'utf8')));
    }
    this.#log.info('Container exited', {
      container: c.name,
      exitCode,
      ...(exit.signal ? { signal: exit.signal } : {}),
    });
    return this.#terminated(kind, index, {
      kind: 'terminated',
      exitCode,
      ...(signalNumber !== undefined ? { signal: signalNumber } : {}),
      reason: exitCode === 0 ? 'Completed' : 'Error',
      ...(message ? { message } : {}),
      startedAt: runningSince,
      finishedAt,
      containerID,
    });
  }

  /**
   * An instant container (see ./instant.ts): running at once, its log written, terminated after the delay;
   * an instant sidecar runs (started and ready) until the pod stops it.
   */
  async #runInstant(kind: Kind, index: number, c: Container, plan: InstantRun): Promise<number | undefined> {
    const run = this.#getRun(kind, index);
    const containerID = `testbed://${this.uid}/${c.name}/${run.restartCount}`;
    const startedAt = this.#deps.now();
    const logDir = join(this.#dir, 'logs', c.name);
    mkdirSync(logDir, { recursive: true });
    const logFile = join(logDir, `${run.restartCount}.log`);
    const writer = new ContainerLogWriter(logFile, this.#deps.now);
    this.#logFiles.set(c.name, [...(this.#logFiles.get(c.name) ?? []), logFile]);
    const sidecar = plan.untilStopped === true;
    this.#setRun(kind, index, {
      ...run,
      state: { kind: 'running', startedAt },
      containerID,
      ...(sidecar ? { started: true, ready: true } : {}),
    });
    if (plan.log !== '') writer.write('stdout', plan.log);
    if (sidecar) {
      let markEnded = (): void => undefined;
      const ended = new Promise<void>((resolveEnded) => {
        markEnded = resolveEnded;
      });
      const signal = await new Promise<NodeJS.Signals>((resolveSignal) => {
        this.#running.set(c.name, { sidecar: true, signal: resolveSignal, ended });
      });
      writer.close();
      this.#running.delete(c.name);
      // A well-behaved sidecar exits 0 on SIGTERM; SIGKILL (the grace period ran out) is exit 137.
      const killed = signal === 'SIGKILL';
      const code = this.#terminated(kind, index, {
        kind: 'terminated',
        exitCode: killed ? 137 : 0,
        ...(killed ? { signal: 9 } : {}),
        reason: killed ? 'Error' : 'Completed',
        startedAt,
        finishedAt: this.#deps.now(),
        containerID,
      });
      markEnded();
      return code;
    }
    if (plan.delayMs > 0) await this.#sleep(plan.delayMs);
    writer.close();
    if (this.#stopping) {
      // Stopped before its time was up: like a container killed by the grace-period SIGKILL.
      this.#terminated(kind, index, {
        kind: 'terminated',
        exitCode: 137,
        signal: 9,
        reason: 'Error',
        startedAt,
        finishedAt: this.#deps.now(),
        containerID,
      });
      return undefined;
    }
    return this.#terminated(kind, index, {
      kind: 'terminated',
      exitCode: plan.exitCode,
      reason: plan.exitCode === 0 ? 'Completed' : 'Error',
      startedAt,
      finishedAt: this.#deps.now(),
      containerID,
    });
  }

  /**
   * Starts the probes of a container's incarnation that has just started running (a sidecar, or an app container
   * with probes): the startup probe (its success marks the container started, its failure kills it, and its restart
   * policy decides what follows), then the readiness probe (ready follows it). Liveness probes are not run by the
   * test node. Returns a function stopping them.
   */
  #probeContainer(
    kind: Kind,
    index: number,
    c: Container,
    spec: ProcessSpec,
    containerID: string,
    running: RunningContainer,
  ): () => void {
    const probers: Prober[] = [];
    let stopped = false;
    const target: ProbeTarget = {
      podIP: this.#podIP ?? this.#deps.hostIP,
      ports: c.ports,
      exec: (command, timeoutMs, signal) => this.#execProbe(spec, c.name, command, timeoutMs, signal),
    };
    // Only this incarnation's status is updated (a restart has probes of its own).
    const update = (patch: { started?: boolean; ready?: boolean }): void => {
      const run = this.#getRun(kind, index);
      if (stopped || run.state.kind !== 'running' || run.containerID !== containerID) return;
      this.#setRun(kind, index, { ...run, ...patch });
    };
    const readiness = (): void => {
      const probe = c.readinessProbe;
      if (!probe || stopped) return;
      probers.push(
        new Prober(probe, (signal) => checkProbe(probe, target, signal), {
          untilDecided: false,
          onVerdict: (verdict, last) => {
            if (verdict === 'failure')
              this.#log.info('Readiness probe failed', { container: c.name, detail: last.detail });
            update({ ready: verdict === 'success' });
          },
        }),
      );
    };
    const startup = c.startupProbe;
    if (startup) {
      probers.push(
        new Prober(startup, (signal) => checkProbe(startup, target, signal), {
          untilDecided: true,
          onVerdict: (verdict, last) => {
            if (verdict === 'success') {
              update({ started: true, ready: c.readinessProbe === undefined });
              readiness();
              return;
            }
            this.#log.info('Startup probe failed; the container will be restarted', {
              container: c.name,
              detail: last.detail,
            });
            this.#stopContainer(
              running,
              startup.terminationGracePeriodSeconds ?? this.#pod.spec.terminationGracePeriodSeconds,
            );
          },
        }),
      );
    } else {
      readiness();
    }
    return () => {
      stopped = true;
      for (const p of probers) p.stop();
    };
  }

  /**
   * Runs an exec probe's command "in" the container: a process with the container's mounts, identity,
   * environment and working directory. Passes when it exits 0 within the timeout.
   */
  #execProbe(
    spec: ProcessSpec,
    container: string,
    command: readonly string[],
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ProbeCheck> {
    if (command.length === 0)
      return Promise.resolve({ passed: false, detail: 'exec probe without a command' });
    const child = spawnContainer({ ...spec, argv: command }, this.#deps.tools);
    const procName = `${this.namespace}/${this.name}/${container}/probe`;
    if (child.pid !== undefined) this.#deps.trackProcess(procName, child.pid, true);
    let output = '';
    const keep = (chunk: Buffer): void => {
      if (output.length < 1024) output += chunk.toString('utf8');
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.stdio[3]?.on('data', keep);
    return new Promise((resolveCheck) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(child, 'SIGKILL');
      }, timeoutMs);
      const onAbort = (): void => killGroup(child, 'SIGKILL');
      signal.addEventListener('abort', onAbort, { once: true });
      const finish = (check: ProbeCheck): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (child.pid !== undefined) this.#deps.trackProcess(procName, child.pid, false);
        resolveCheck(check);
      };
      child.once('error', (error) => finish({ passed: false, detail: error.message }));
      child.once('exit', (code, sig) => {
        killGroup(child, 'SIGKILL');
        child.once('close', () => {
          const said = output.replace(/(^|\n)started\n/, '').trim();
          if (timedOut) finish({ passed: false, detail: `command timed out after ${timeoutMs / 1000}s` });
          else if (code === 0) finish({ passed: true });
          else finish({ passed: false, detail: `exit code ${code ?? sig}${said ? `: ${said}` : ''}` });
        });
      });
    });
  }

  #terminated(kind: Kind, index: number, state: Terminated): number {
    const run = this.#getRun(kind, index);
    this.#setRun(kind, index, {
      ...run,
      state,
      ...(state.containerID ? { containerID: state.containerID } : {}),
    });
    return state.exitCode;
  }

  /**
   * Creates the pod's volumes under its folder: emptyDirs world-writable (setgid + group fsGroup when
   * set), API data volumes (secret, configMap, downwardAPI, projected) as files written like the kubelet's
   * (see ./volumes.ts). Waits (ContainerCreating, with the kubelet's MountVolume.SetUp message) while a
   * referenced object is missing or a token is refused; undefined when the pod was stopped meanwhile. Until the pod
   * ends, volumes holding tokens are then rebuilt whenever a token is due for a refresh, and those of Secrets and
   * ConfigMaps every VOLUME_SYNC_MS (see #refreshVolume).
   */
  async #setupVolumes(): Promise<Map<string, string> | undefined> {
    const spec = this.#pod.spec;
    const fsGroup = spec.securityContext.fsGroup;
    for (;;) {
      if (this.#stopping) return undefined;
      const dirs = new Map<string, string>();
      const refreshes: { vol: Volume; dir: string; written: Written }[] = [];
      let problem: string | undefined;
      for (const vol of spec.volumes) {
        const dir = join(this.#dir, 'volumes', vol.name);
        dirs.set(vol.name, dir);
        if (vol.emptyDir !== undefined) {
          mkdirSync(dir, { recursive: true });
          if (fsGroup !== undefined) chownSync(dir, 0, fsGroup);
          chmodSync(dir, fsGroup !== undefined ? 0o2777 : 0o777);
          continue;
        }
        const written = await this.#writeVolume(vol, dir, undefined);
        if (!written.ok) {
          problem = `MountVolume.SetUp failed for volume "${vol.name}" : ${written.error}`;
          break;
        }
        if (written.value.refreshAt !== undefined || syncsWithObjects(vol))
          refreshes.push({ vol, dir, written: written.value });
      }
      if (!problem) {
        for (const r of refreshes) this.#volumeLoops.push(this.#refreshVolume(r.vol, r.dir, r.written));
        return dirs;
      }
      this.#log.info('Volume not ready', { problem });
      for (const [i, run] of this.#containers.entries()) {
        this.#containers[i] = {
          ...run,
          state: { kind: 'waiting', reason: 'ContainerCreating', message: problem },
        };
      }
      this.#sync();
      await this.#sleep(1000);
    }
  }

  #volumeContext(): VolumeContext {
    const sources = this.#deps.sources;
    return {
      pod: this.#pod,
      facts: this.#facts(),
      sources: {
        secret: (ns, name) => sources.secret(ns, name),
        configMap: (ns, name) => sources.configMap(ns, name),
        serviceAccountToken: (ns, account, spec) => this.#token(ns, account, spec),
      },
      fsUser: fsUserOf(this.#pod),
      fsGroup: this.#pod.spec.securityContext.fsGroup,
    };
  }

  /**
   * A token for the pod: the one issued earlier for the same request while it is not due for a refresh (so a
   * pod waiting for another volume does not ask for a token every second), else a new one.
   */
  async #token(ns: string, account: string, spec: TokenRequestSpec): Promise<IssuedToken> {
    const key = JSON.stringify([ns, account, spec]);
    const cached = this.#tokens.get(key);
    if (cached && this.#deps.now() < tokenRefreshAt(cached)) return cached;
    const issued = await this.#deps.sources.serviceAccountToken(ns, account, spec);
    this.#tokens.set(key, issued);
    return issued;
  }

  /**
   * Builds an API data volume's files and writes them into `dir` (a plain folder for other kinds), unless they are
   * the files `previous` already wrote there. Returns the files, whether they were written, and when a token in them
   * is due for a refresh (undefined: never); or the MountVolume.SetUp error (nothing written).
   */
  async #writeVolume(
    vol: Volume,
    dir: string,
    previous: Payload | undefined,
  ): Promise<Result<Written, string>> {
    const content = await volumeContent(vol, this.#volumeContext());
    if (content === undefined) {
      mkdirSync(dir, { recursive: true });
      return ok({ payload: new Map(), refreshAt: undefined, written: false });
    }
    if (!content.ok) return content;
    const { payload, refreshAt } = content.value;
    if (previous !== undefined && samePayload(previous, payload))
      return ok({ payload, refreshAt, written: false });
    try {
      writeVolume(dir, payload, this.#pod.spec.securityContext.fsGroup, this.#deps.now());
    } catch (error) {
      return err(error instanceof Error ? error.message : String(error));
    }
    return ok({ payload, refreshAt, written: true });
  }

  /**
   * Keeps a volume in step until the pod ends, as the kubelet does: its tokens, as the kubelet's token manager, at
   * their refresh time (80% of the lifetime, at most 24 h; a failed refresh keeps the files and is retried shortly);
   * its Secrets and ConfigMaps every VOLUME_SYNC_MS (changed files swapped in atomically, unchanged ones left alone;
   * an object that is gone or unreadable leaves the files as they are, retried at the next sync).
   */
  async #refreshVolume(vol: Volume, dir: string, first: Written): Promise<void> {
    const signal = this.#volumesStop.signal;
    const syncMs = syncsWithObjects(vol) ? (this.#deps.volumeSyncMs ?? VOLUME_SYNC_MS) : undefined;
    let payload = first.payload;
    let tokenAt = first.refreshAt;
    let failing: string | undefined;
    for (;;) {
      const now = this.#deps.now();
      const never = Number.POSITIVE_INFINITY;
      const next = Math.min(tokenAt ?? never, syncMs === undefined ? never : now + syncMs);
      if (next === never) return;
      await sleep(next - now, [signal]);
      if (signal.aborted) return;
      const tokensDue = tokenAt !== undefined && this.#deps.now() >= tokenAt;
      let written: Result<Written, string>;
      try {
        written = await this.#writeVolume(vol, dir, payload);
      } catch (error) {
        written = err(error instanceof Error ? error.message : String(error));
      }
      if (signal.aborted) return;
      if (written.ok) {
        if (written.value.written)
          this.#log.info(tokensDue ? 'Volume tokens refreshed' : 'Volume updated: its objects changed', {
            volume: vol.name,
          });
        if (failing !== undefined) this.#log.info('Volume in step again', { volume: vol.name });
        failing = undefined;
        payload = written.value.payload;
        // At most one token refresh a second, whatever lifetime the tokens claim.
        tokenAt =
          written.value.refreshAt === undefined
            ? undefined
            : Math.max(written.value.refreshAt, this.#deps.now() + 1000);
      } else {
        // Logged once per problem: a deleted Secret fails every sync until it is back.
        if (failing !== written.error)
          this.#log.warn('Volume refresh failed; the previous files stay', {
            volume: vol.name,
            problem: written.error,
          });
        failing = written.error;
        if (tokensDue) tokenAt = this.#deps.now() + TOKEN_RETRY_MS;
      }
    }
  }
}

/** Sleeps `ms` (at most about 24 days), cut short when any of `signals` aborts. */
function sleep(ms: number, signals: readonly AbortSignal[]): Promise<void> {
  return new Promise((resolvePromise) => {
    if (signals.some((s) => s.aborted)) return resolvePromise();
    const finish = (): void => {
      clearTimeout(timer);
      for (const s of signals) s.removeEventListener('abort', finish);
      resolvePromise();
    };
    const timer = setTimeout(finish, Math.min(Math.max(0, ms), 2 ** 31 - 1));
    for (const s of signals) s.addEventListener('abort', finish, { once: true });
  });
}

/** Signals a container's process group (a no-op once it is gone). */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
}

/** The default `terminationMessagePath` of a container. */
const TERMINATION_MESSAGE_PATH = '/dev/termination-log';
/** The kubelet keeps at most this much of a termination message. */
const TERMINATION_MESSAGE_MAX_BYTES = 4096;

/** What a container wrote to its termination message file (at most 4 KiB), or undefined when nothing. */
function readTerminationMessage(file: string): string | undefined {
  try {
    const bytes = readFileSync(file);
    if (bytes.length === 0) return undefined;
    return bytes.subarray(0, TERMINATION_MESSAGE_MAX_BYTES).toString('utf8');
  } catch {
    return undefined;
  }
}
