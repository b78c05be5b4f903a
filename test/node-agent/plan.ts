// Pure decisions of the test node agent: which pods it refuses, what argv a container runs, as whom,
// with which mounts. No I/O: the file system is only consulted through injected functions.
import { posix } from 'node:path';
import { err, ok, type Result } from '../../src/shared/result.ts';
import type { ImageEntry } from './images.ts';
import type { Container, ContainerPort, PodSpec, Probe, Volume, VolumeMount } from './pod-spec.ts';
import { type ContainerRun, type ContainerState, kubeTime } from './status.ts';

/** Why the node will not run a pod (it ends Failed with this reason and message). */
export interface Refusal {
  readonly reason: string;
  readonly message: string;
}

/** Why a container cannot start yet: reported as `state.waiting` (the kubelet retries). */
export interface Waiting {
  readonly reason: string;
  readonly message: string;
}

/**
 * Admission: refuses pods that would escape to the host (hostPath volumes, privileged containers) and
 * pods using features the test node does not implement (per-container restart policies on app
 * containers, sidecar probes other than exec/tcpSocket/httpGet, volume types other than
 * emptyDir/secret/configMap/downwardAPI/projected, projections other than
 * serviceAccountToken/configMap/secret/downwardAPI). Undefined means the pod is admitted.
 */
export function admitPod(spec: PodSpec): Refusal | undefined {
  for (const vol of spec.volumes) {
    if (vol.hostPath !== undefined) {
      return {
        reason: 'HostPathVolumeRefused',
        message: `the test node refuses pods with hostPath volumes (volume "${vol.name}")`,
      };
    }
    const kind = VOLUME_KINDS.find((k) => vol[k] !== undefined);
    if (kind === undefined) {
      const other = Object.keys(vol).find((k) => k !== 'name') ?? 'unknown';
      return {
        reason: 'UnsupportedPodFeature',
        message: `the test node supports only emptyDir, secret, configMap, downwardAPI and projected volumes (volume "${vol.name}" is ${other})`,
      };
    }
    for (const [i, source] of (vol.projected?.sources ?? []).entries()) {
      if (PROJECTION_KINDS.some((k) => source[k] !== undefined)) continue;
      const other = Object.keys(source)[0] ?? 'empty';
      return {
        reason: 'UnsupportedPodFeature',
        message: `the test node projects only serviceAccountToken, configMap, secret and downwardAPI sources (source #${i} of volume "${vol.name}" is ${other})`,
      };
    }
  }
  for (const c of [...spec.initContainers, ...spec.containers]) {
    if (c.securityContext?.privileged === true) {
      return {
        reason: 'PrivilegedContainerRefused',
        message: `the test node refuses privileged containers (container "${c.name}")`,
      };
    }
  }
  for (const c of spec.initContainers) {
    if (c.restartPolicy !== undefined && c.restartPolicy !== 'Always') {
      return {
        reason: 'UnsupportedPodFeature',
        message: `an init container's restartPolicy can only be Always (container "${c.name}" has ${c.restartPolicy})`,
      };
    }
    if (!isSidecar(c)) continue;
    for (const [kind, probe] of [
      ['startupProbe', c.startupProbe],
      ['readinessProbe', c.readinessProbe],
    ] as const) {
      if (probe !== undefined && probeHandler(probe) === undefined) {
        return {
          reason: 'UnsupportedPodFeature',
          message: `the test node runs only exec, tcpSocket and httpGet probes (${kind} of container "${c.name}")`,
        };
      }
    }
  }
  for (const c of spec.containers) {
    if (c.restartPolicy !== undefined) {
      return {
        reason: 'UnsupportedPodFeature',
        message: `the test node does not implement per-container restart policies (container "${c.name}")`,
      };
    }
  }
  return undefined;
}

/** The volume types the test node implements. */
const VOLUME_KINDS = ['emptyDir', 'secret', 'configMap', 'downwardAPI', 'projected'] as const;
/** The projected volume sources the test node implements. */
const PROJECTION_KINDS = ['serviceAccountToken', 'configMap', 'secret', 'downwardAPI'] as const;

/**
 * Whether a volume holds API data (secret, configMap, downwardAPI, projected): the kubelet always mounts those
 * read-only, whatever the volumeMount says.
 */
export function isApiDataVolume(vol: Volume): boolean {
  return (
    vol.secret !== undefined ||
    vol.configMap !== undefined ||
    vol.downwardAPI !== undefined ||
    vol.projected !== undefined
  );
}

/** Whether the pod's nodeSelector matches the node's labels (the only scheduling rule the node checks). */
export function selectorMatches(
  selector: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>>,
) {
  return Object.entries(selector).every(([k, val]) => labels[k] === val);
}

/**
 * What kube-scheduler says of a pod no node can take because of its nodeSelector, `nodes` being the number of
 * nodes in the cluster (none matching, so preemption cannot help either).
 */
export function unschedulableMessage(nodes: number): string {
  return (
    `0/${nodes} nodes are available: ${nodes} node(s) didn't match Pod's node affinity/selector. ` +
    `preemption: 0/${nodes} nodes are available: ${nodes} Preemption is not helpful for scheduling.`
  );
}

/** A pod condition as read from the API (the fields the node compares). */
interface ObservedCondition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string | undefined;
  readonly message?: string | undefined;
  readonly lastTransitionTime?: string | null | undefined;
}

/**
 * The PodScheduled condition kube-scheduler patches into the status of a pod that fits no node (status False,
 * reason Unschedulable), or undefined when the pod already carries exactly that condition, so a resync sends no
 * patch. As the scheduler does (UpdatePodCondition), lastTransitionTime is kept when a PodScheduled condition with
 * the same status is there already (another reason or message), and is `now` otherwise.
 */
export function unschedulableCondition(
  conditions: readonly ObservedCondition[],
  nodes: number,
  now: number,
):
  | {
      type: 'PodScheduled';
      status: 'False';
      reason: 'Unschedulable';
      message: string;
      lastProbeTime: null;
      lastTransitionTime: string;
    }
  | undefined {
  const message = unschedulableMessage(nodes);
  const current = conditions.find((c) => c.type === 'PodScheduled');
  const sameStatus = current?.status === 'False';
  if (sameStatus && current?.reason === 'Unschedulable' && current.message === message) return undefined;
  const kept = sameStatus ? current?.lastTransitionTime : undefined;
  return {
    type: 'PodScheduled',
    status: 'False',
    reason: 'Unschedulable',
    message,
    lastProbeTime: null,
    lastTransitionTime: typeof kept === 'string' && kept !== '' ? kept : kubeTime(now),
  };
}

/**
 * Pulling a container's image: undefined when it can be "pulled" (every image but those with a `pullError` in the
 * image table), else the waiting state the kubelet reports. The first failed pull is ErrImagePull with the
 * runtime's message; while the kubelet backs off it reports ImagePullBackOff wrapping that message. The kubelet
 * pulls again when its back-off (10 s doubling to 5 min) expires, so real pods alternate between the two; the test
 * node retries every second and stays on ImagePullBackOff after the first failure (no status write per retry).
 * `previous` is the container's current state: a pull failure of the same image and error is a retry.
 */
export function imagePullFailure(
  image: string,
  entry: ImageEntry | undefined,
  previous: ContainerState,
): Waiting | undefined {
  if (entry?.pullError === undefined) return undefined;
  const pull = {
    reason: 'ErrImagePull',
    message: `failed to pull and unpack image "${image}": ${entry.pullError}`,
  };
  const backoff = {
    reason: 'ImagePullBackOff',
    message: `Back-off pulling image "${image}": ${pull.reason}: ${pull.message}`,
  };
  const retry =
    previous.kind === 'waiting' &&
    [pull, backoff].some((w) => w.reason === previous.reason && w.message === previous.message);
  return retry ? backoff : pull;
}

/**
 * Kubernetes `$(VAR)` expansion (as in command, args and env values): `$(NAME)` becomes the value when
 * NAME is defined, and stays literally otherwise; `$$` is an escaped `$`; any other `$` is kept.
 */
export function expandVars(text: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch !== '$' || i + 1 >= text.length) {
      out += ch;
      continue;
    }
    const next = text[i + 1];
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = text.indexOf(')', i + 2);
      if (close === -1) {
        out += text.slice(i);
        break;
      }
      const name = text.slice(i + 2, close);
      const value = name === '' ? undefined : lookup(name);
      out += value ?? `$(${name})`;
      i = close;
    } else {
      out += ch;
    }
  }
  return out;
}

/**
 * The argv a container runs, with Kubernetes semantics: `command` replaces the image entrypoint and
 * `args` its default arguments; both are `$(VAR)`-expanded. An image missing from the table can only
 * run with an explicit `command` (a host program).
 */
export function resolveArgv(
  container: Container,
  image: ImageEntry | undefined,
  env: ReadonlyMap<string, string>,
): Result<string[], Waiting> {
  const expand = (list: readonly string[]): string[] => list.map((s) => expandVars(s, (n) => env.get(n)));
  const args = expand(container.args);
  if (container.command.length > 0) return ok([...expand(container.command), ...args]);
  if (!image) {
    return err({
      reason: 'ErrImagePull',
      message: `image "${container.image}" is not in the test node's image table and the container has no command`,
    });
  }
  const argv = [...image.entrypoint, ...(container.args.length > 0 ? args : image.cmd)];
  if (argv.length === 0) {
    return err({ reason: 'CreateContainerError', message: 'no command specified' });
  }
  return ok(argv);
}

/** The Linux identity a container process runs with. */
export interface Identity {
  readonly uid: number;
  readonly gid: number;
  /** Supplementary groups (fsGroup and supplementalGroups). */
  readonly groups: readonly number[];
  readonly noNewPrivs: boolean;
  /** Capability bounding set, lowercase names without the cap_ prefix. */
  readonly capabilities: readonly string[];
}

/** The capabilities a container runtime grants by default (containerd/Docker default set). */
export const DEFAULT_CAPABILITIES = [
  'chown',
  'dac_override',
  'fowner',
  'fsetid',
  'kill',
  'setgid',
  'setuid',
  'setpcap',
  'net_bind_service',
  'net_raw',
  'sys_chroot',
  'mknod',
  'audit_write',
  'setfcap',
] as const;

function capName(name: string): string {
  return name.toLowerCase().replace(/^cap_/, '');
}

/**
 * Resolves who a container runs as: container securityContext over pod securityContext over the image's
 * user (default root); gid defaults to 0; fsGroup and supplementalGroups become supplementary groups.
 * `runAsNonRoot` with uid 0 is a CreateContainerConfigError, as in the kubelet.
 */
export function resolveIdentity(
  spec: PodSpec,
  container: Container,
  image: ImageEntry | undefined,
  podRef: string,
): Result<Identity, Waiting> {
  const cs = container.securityContext ?? {};
  const ps = spec.securityContext;
  const uid = cs.runAsUser ?? ps.runAsUser ?? image?.user ?? 0;
  const gid = cs.runAsGroup ?? ps.runAsGroup ?? 0;
  const nonRoot = cs.runAsNonRoot ?? ps.runAsNonRoot ?? false;
  if (nonRoot && uid === 0) {
    return err({
      reason: 'CreateContainerConfigError',
      message: `container has runAsNonRoot and image will run as root (pod: "${podRef}", container: ${container.name})`,
    });
  }
  const groups = [
    ...new Set([...(ps.fsGroup !== undefined ? [ps.fsGroup] : []), ...(ps.supplementalGroups ?? [])]),
  ];
  const drop = (cs.capabilities?.drop ?? []).map(capName);
  const add = (cs.capabilities?.add ?? []).map(capName);
  const base: string[] = drop.includes('all') ? [] : DEFAULT_CAPABILITIES.filter((c) => !drop.includes(c));
  const capabilities = [...new Set([...base, ...add.filter((c) => c !== 'all')])];
  return ok({ uid, gid, groups, noNewPrivs: cs.allowPrivilegeEscalation === false, capabilities });
}

/** One bind mount inside a container's private mount namespace. */
export interface MountPlan {
  readonly source: string;
  readonly target: string;
  readonly readOnly: boolean;
}

/**
 * Plans a container's bind mounts from its volumeMounts and the host folders backing the pod's volumes.
 * subPaths must stay inside their volume. Mounts of `readOnlyVolumes` (API data volumes) are read-only
 * whatever the volumeMount says, as the kubelet does. Sorted so parents are mounted before children.
 */
export function planMounts(
  mounts: readonly VolumeMount[],
  volumeDirs: ReadonlyMap<string, string>,
  readOnlyVolumes: ReadonlySet<string> = new Set(),
): Result<MountPlan[], Waiting> {
  const plan: MountPlan[] = [];
  for (const m of mounts) {
    const dir = volumeDirs.get(m.name);
    if (dir === undefined) {
      return err({
        reason: 'CreateContainerConfigError',
        message: `volume "${m.name}" not found in the pod`,
      });
    }
    if (!posix.isAbsolute(m.mountPath)) {
      return err({
        reason: 'CreateContainerConfigError',
        message: `mountPath "${m.mountPath}" is not absolute`,
      });
    }
    const sub = m.subPath ?? '';
    if (posix.isAbsolute(sub) || sub.split('/').includes('..')) {
      return err({
        reason: 'CreateContainerConfigError',
        message: `subPath "${sub}" must stay inside the volume`,
      });
    }
    plan.push({
      source: sub === '' ? dir : posix.join(dir, sub),
      target: posix.normalize(m.mountPath).replace(/(.)\/+$/, '$1'),
      readOnly: m.readOnly === true || readOnlyVolumes.has(m.name),
    });
  }
  return ok(plan.sort((a, b) => a.target.split('/').length - b.target.split('/').length));
}

/** Where a container path lives on the host, given its mounts (the innermost mount wins). */
export function hostPathFor(path: string, mounts: readonly MountPlan[]): string {
  const normal = posix.normalize(path);
  let best: MountPlan | undefined;
  for (const m of mounts) {
    const inside = normal === m.target || normal.startsWith(m.target === '/' ? '/' : `${m.target}/`);
    if (inside && (!best || m.target.length >= best.target.length)) best = m;
  }
  if (!best) return normal;
  return posix.join(best.source, posix.relative(best.target, normal));
}

/**
 * Finds the executable a container would run, looking through its mounts: a path with a slash is
 * taken as is (relative to the working dir), a bare name is searched in PATH. Returns undefined when
 * nothing executable is found (the runtime's StartError).
 */
export function findExecutable(
  argv0: string,
  path: string,
  workingDir: string,
  mounts: readonly MountPlan[],
  isExecutable: (hostPath: string) => boolean,
): string | undefined {
  if (argv0 === '') return undefined;
  const candidates = argv0.includes('/')
    ? [posix.resolve(workingDir, argv0)]
    : path
        .split(':')
        .filter((d) => d !== '')
        .map((d) => posix.join(posix.resolve(workingDir, d), argv0));
  return candidates.find((c) => isExecutable(hostPathFor(c, mounts)));
}

/** The PATH a container gets when neither its env nor its image sets one (the OCI default). */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Restart back-off after `restarts` restarts: 1 s doubling, capped at 10 s (the kubelet uses 10 s → 5 min). */
export function restartBackoffMs(restarts: number): number {
  return Math.min(10_000, 1000 * 2 ** Math.min(restarts, 10));
}

/** Whether a container that exited with `exitCode` is restarted under the pod's restartPolicy. */
export function shouldRestart(policy: PodSpec['restartPolicy'], exitCode: number): boolean {
  return policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
}

// ---------------------------------------------------------------------------------------------------
// Sidecars: init containers with restartPolicy Always (Kubernetes native sidecars).

/** Whether an init container is a sidecar (a restartable init container: restartPolicy Always). */
export function isSidecar(c: Container): boolean {
  return c.restartPolicy === 'Always';
}

/** The next step of initialization. */
export type InitStep =
  /** Run regular init container #index to completion (restarting it as the pod's restartPolicy says). */
  | { readonly kind: 'run'; readonly index: number }
  /** Launch sidecar #index (kept running from now on) and wait until it has started. */
  | { readonly kind: 'launch'; readonly index: number }
  /** Every regular init container succeeded and every sidecar started: the app containers start. */
  | { readonly kind: 'initialized' };

/**
 * Which init container comes next, in declaration order as the kubelet does: the first that has not done
 * its part yet, where `done[i]` says init container #i succeeded (regular) or started once (sidecar: its
 * startup probe passed, or it ran when it has none). A sidecar that later exits or restarts does not hold
 * back the init containers after it.
 */
export function nextInitStep(init: readonly Container[], done: readonly boolean[]): InitStep {
  const index = init.findIndex((_, i) => done[i] !== true);
  const c = init[index];
  if (c === undefined) return { kind: 'initialized' };
  return isSidecar(c) ? { kind: 'launch', index } : { kind: 'run', index };
}

/**
 * Whether the pod's app containers are done for good, so its sidecars are to be stopped: every app
 * container has terminated and none will restart under the pod's restartPolicy (Never, or OnFailure
 * after success). Never true under restartPolicy Always.
 */
export function appContainersDone(
  policy: PodSpec['restartPolicy'],
  containers: readonly Pick<ContainerRun, 'state'>[],
): boolean {
  return containers.every((c) => c.state.kind === 'terminated' && !shouldRestart(policy, c.state.exitCode));
}

/** The indices of the pod's sidecars in the order they are stopped: the reverse of their declaration. */
export function sidecarStopOrder(init: readonly Container[]): number[] {
  return init.flatMap((c, i) => (isSidecar(c) ? [i] : [])).reverse();
}

/** The handler a probe uses, or undefined when it has none the test node runs (e.g. grpc). */
export function probeHandler(probe: Probe): 'exec' | 'tcpSocket' | 'httpGet' | undefined {
  if (probe.exec !== undefined) return 'exec';
  if (probe.tcpSocket !== undefined) return 'tcpSocket';
  if (probe.httpGet !== undefined) return 'httpGet';
  return undefined;
}

/** A probe's port: a number as is, a name looked up in the container's ports. */
export function resolveProbePort(
  port: number | string,
  ports: readonly ContainerPort[],
): Result<number, string> {
  if (typeof port === 'number') return ok(port);
  const found = ports.find((p) => p.name === port);
  if (found === undefined) return err(`port "${port}" is not a named port of the container`);
  return ok(found.containerPort);
}

/** Consecutive probe results, as the kubelet's prober worker keeps them. */
export interface ProbeTally {
  /** The probe's current verdict: unknown until a threshold is reached once. */
  readonly result: 'unknown' | 'success' | 'failure';
  /** Length of the current run of equal results. */
  readonly run: number;
  readonly last: 'success' | 'failure' | undefined;
}

export const NEW_TALLY: ProbeTally = { result: 'unknown', run: 0, last: undefined };

/**
 * Records one probe result: the verdict changes once `successThreshold` consecutive successes or
 * `failureThreshold` consecutive failures are seen, and stays as it was below the threshold.
 */
export function tallyProbe(tally: ProbeTally, passed: boolean, probe: Probe): ProbeTally {
  const outcome = passed ? 'success' : 'failure';
  const run = tally.last === outcome ? tally.run + 1 : 1;
  const threshold = passed ? probe.successThreshold : probe.failureThreshold;
  return { result: run >= threshold ? outcome : tally.result, run, last: outcome };
}
