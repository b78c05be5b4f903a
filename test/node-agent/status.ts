// Pure pod status computation: phase, conditions and container statuses from what the node agent
// observed, shaped like the kubelet's status (pods/status subresource).
import type { PodSpec } from './pod-spec.ts';

/** A container's observed state. Times are epoch milliseconds. */
export type ContainerState =
  | { readonly kind: 'waiting'; readonly reason: string; readonly message?: string }
  | { readonly kind: 'running'; readonly startedAt: number }
  | Terminated;

export interface Terminated {
  readonly kind: 'terminated';
  readonly exitCode: number;
  readonly signal?: number;
  readonly reason: string;
  readonly message?: string;
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly containerID?: string;
}

/** What the node knows about one container. */
export interface ContainerRun {
  readonly name: string;
  readonly image: string;
  readonly state: ContainerState;
  readonly lastState?: Terminated;
  readonly restartCount: number;
  readonly containerID?: string;
  /** A sidecar: an init container with restartPolicy Always, kept running beside the app containers. */
  readonly sidecar?: boolean;
  /** While running: whether the startup probe has passed (absent: started as soon as it runs). */
  readonly started?: boolean;
  /** While running: whether it is ready (started, readiness probe passing; absent: ready as soon as it runs). */
  readonly ready?: boolean;
}

/** What the node knows about one pod. */
export interface PodRun {
  readonly restartPolicy: PodSpec['restartPolicy'];
  readonly hostIP: string;
  readonly podIP?: string;
  readonly startTime?: number;
  readonly sandboxReady: boolean;
  readonly init: readonly ContainerRun[];
  readonly containers: readonly ContainerRun[];
  /** No container will (re)start any more: the phase becomes Succeeded or Failed. */
  readonly finished: boolean;
  /** A pod-level failure (deadline, refusal): phase Failed with this reason and message. */
  readonly failure?: { readonly reason: string; readonly message: string };
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';

/** Kubernetes times are RFC 3339 with whole seconds. */
export function kubeTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function succeeded(c: ContainerRun): boolean {
  return c.state.kind === 'terminated' && c.state.exitCode === 0;
}

/** Whether a container runs and has started (its startup probe, if any, passed). */
export function isStarted(c: ContainerRun): boolean {
  return c.state.kind === 'running' && c.started !== false;
}

/** Whether a container runs and is ready (started, readiness probe, if any, passing). */
export function isReady(c: ContainerRun): boolean {
  return isStarted(c) && c.ready !== false;
}

/** Whether a regular (non-sidecar) container has run at all: the pod got past initialization once. */
function hasRun(c: ContainerRun): boolean {
  return c.state.kind !== 'waiting' || c.lastState !== undefined;
}

/**
 * The pod phase, following the kubelet (getPhase): regular init containers not all succeeded → Pending
 * (Failed if one failed and will not restart); a sidecar not started yet → Pending; a waiting app
 * container → Pending; a running container (sidecars included) → Running; all app containers stopped →
 * Succeeded when all exited 0, otherwise Failed unless a restart is still due. Terminated or
 * crash-looping sidecars do not count: a sidecar stopped at the end (exit 143/137) does not fail the pod.
 */
export function podPhase(run: PodRun): PodPhase {
  if (run.failure) return 'Failed';
  const regularInit = run.init.filter((c) => c.sidecar !== true);
  const initFailed = regularInit.some((c) => c.state.kind === 'terminated' && c.state.exitCode !== 0);
  if (!regularInit.every(succeeded)) {
    if (initFailed && (run.restartPolicy === 'Never' || run.finished)) return 'Failed';
    return 'Pending';
  }
  if (run.finished) return run.containers.every(succeeded) ? 'Succeeded' : 'Failed';
  let waiting = 0;
  let running = 0;
  let stopped = 0;
  let ok = 0;
  // A sidecar not started yet keeps the pod Pending during initialization (not once an app container ran:
  // a sidecar restarting later does not send the pod back to Pending).
  const initialized = run.containers.some(hasRun);
  for (const c of run.init) {
    if (c.sidecar !== true) continue;
    if (c.state.kind === 'running') running++;
    const pending = c.state.kind === 'running' ? !isStarted(c) : c.state.kind === 'waiting' && !c.lastState;
    if (pending && !initialized) return 'Pending';
  }
  for (const c of run.containers) {
    if (c.state.kind === 'running') running++;
    else if (c.state.kind === 'terminated') {
      stopped++;
      if (c.state.exitCode === 0) ok++;
    } else if (c.lastState) stopped++;
    else waiting++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (run.restartPolicy === 'Always') return 'Running';
    if (stopped === ok) return 'Succeeded';
    if (run.restartPolicy === 'OnFailure') return 'Running';
    return 'Failed';
  }
  return 'Pending';
}

function stateJson(state: ContainerState | undefined): Record<string, unknown> {
  if (!state) return {};
  switch (state.kind) {
    case 'waiting':
      return {
        waiting: { reason: state.reason, ...(state.message !== undefined ? { message: state.message } : {}) },
      };
    case 'running':
      return { running: { startedAt: kubeTime(state.startedAt) } };
    case 'terminated':
      return {
        terminated: {
          exitCode: state.exitCode,
          ...(state.signal !== undefined ? { signal: state.signal } : {}),
          reason: state.reason,
          ...(state.message !== undefined ? { message: state.message } : {}),
          startedAt: kubeTime(state.startedAt),
          finishedAt: kubeTime(state.finishedAt),
          ...(state.containerID !== undefined ? { containerID: state.containerID } : {}),
        },
      };
  }
}

function containerStatus(c: ContainerRun): Record<string, unknown> {
  return {
    name: c.name,
    image: c.image,
    imageID: `testbed://${c.image}`,
    ...(c.containerID !== undefined ? { containerID: c.containerID } : {}),
    ready: isReady(c),
    started: isStarted(c),
    restartCount: c.restartCount,
    state: stateJson(c.state),
    lastState: stateJson(c.lastState),
  };
}

/** A condition's status, reason and message; lastTransitionTime is kept by the caller. */
export interface ConditionValue {
  readonly type: string;
  readonly status: 'True' | 'False';
  readonly reason?: string;
  readonly message?: string;
}

/**
 * The kubelet-owned pod conditions for a run. Initialized: every regular init container succeeded and
 * every sidecar started (or an app container has run, so a restarting sidecar does not undo it).
 * Ready/ContainersReady: every sidecar and every app container is ready.
 */
export function podConditions(run: PodRun): ConditionValue[] {
  const phase = podPhase(run);
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const pendingInit = run.init
    .filter((c) => (c.sidecar === true ? !isStarted(c) : !succeeded(c)))
    .map((c) => c.name);
  const unready = [...run.init.filter((c) => c.sidecar === true), ...run.containers]
    .filter((c) => !isReady(c))
    .map((c) => c.name);
  const initialized: ConditionValue =
    pendingInit.length === 0 || phase === 'Succeeded' || run.containers.some(hasRun)
      ? { type: 'Initialized', status: 'True' }
      : {
          type: 'Initialized',
          status: 'False',
          reason: 'ContainersNotInitialized',
          message: `containers with incomplete status: [${pendingInit.join(' ')}]`,
        };
  const ready = (type: string): ConditionValue =>
    terminal
      ? { type, status: 'False', reason: 'PodCompleted' }
      : unready.length === 0
        ? { type, status: 'True' }
        : {
            type,
            status: 'False',
            reason: 'ContainersNotReady',
            message: `containers with unready status: [${unready.join(' ')}]`,
          };
  return [
    { type: 'PodReadyToStartContainers', status: run.sandboxReady && !terminal ? 'True' : 'False' },
    initialized,
    ready('Ready'),
    ready('ContainersReady'),
  ];
}

/** Remembered transition times per condition type: kept while the status stays the same. */
export type TransitionTimes = ReadonlyMap<string, { readonly status: string; readonly at: number }>;

/**
 * The `status` body for a strategic-merge patch of pods/status, and the updated transition times.
 * PodScheduled is left alone (the binding sets it).
 */
export function buildPodStatus(
  run: PodRun,
  previous: TransitionTimes,
  now: number,
): { status: Record<string, unknown>; times: Map<string, { status: string; at: number }> } {
  const times = new Map(previous);
  const conditions = podConditions(run).map((c) => {
    const prev = times.get(c.type);
    const at = prev && prev.status === c.status ? prev.at : now;
    times.set(c.type, { status: c.status, at });
    return { ...c, lastProbeTime: null, lastTransitionTime: kubeTime(at) };
  });
  const status: Record<string, unknown> = {
    phase: podPhase(run),
    conditions,
    hostIP: run.hostIP,
    hostIPs: [{ ip: run.hostIP }],
    initContainerStatuses: run.init.map(containerStatus),
    containerStatuses: run.containers.map(containerStatus),
  };
  if (run.podIP !== undefined) {
    status.podIP = run.podIP;
    status.podIPs = [{ ip: run.podIP }];
  }
  if (run.startTime !== undefined) status.startTime = kubeTime(run.startTime);
  if (run.failure) {
    status.reason = run.failure.reason;
    status.message = run.failure.message;
  }
  return { status, times };
}
