// Validation and rewrite of a Station's pod template (docs/design/reference-behaviour.md#pod-template-rewrite,
// docs/design/reference-behaviour.md#pod-layout).

import type { PodSecurityProfile } from '../api/index.ts';
import type { JsonObject } from '../shared/json-object.ts';
import { err, ok, type Result } from '../shared/result.ts';
import {
  AGENT_CONTAINER_NAME,
  AGENT_VOLUME_NAME,
  BUNDLE_ROOT,
  DEFAULT_WORKSPACE,
  INIT_ARGS,
  INIT_CONTAINER_NAME,
  TERMINATION_MESSAGE_PATH,
  WORKSPACE_VOLUME_NAME,
} from './bundle.ts';
import type { EnvVar } from './env.ts';
import { MEMORY_DIR, MEMORY_KEY, MEMORY_VOLUME_NAME } from './memory.ts';
import { ANNOTATION_SAFE_TO_EVICT } from './names.ts';
import { INPUT_DIR, INPUT_VOLUME_NAME, type InputKeys, inputVolume } from './run-input.ts';

/** Validation errors of a Station template, exactly as `status.failureReason` shows them (after its prefix). */
/** A `projected` volume with a `serviceAccountToken` source would put an API token in the run pod. */
function projectsServiceAccountToken(volume: Record<string, unknown>): boolean {
  const projected = volume.projected;
  if (!isObject(projected) || !Array.isArray(projected.sources)) return false;
  return projected.sources.some((source: unknown) => isObject(source) && 'serviceAccountToken' in source);
}

export const TEMPLATE_ERRORS = {
  notObject: 'Station template must be an object',
  noSpec: 'Station template needs a spec',
  noContainers: 'Station template.spec.containers is required',
  hostNamespace: (field: 'hostNetwork' | 'hostPID' | 'hostIPC') =>
    `Station template must not enable ${field} on an agent run pod`,
  hostPath: 'Station template must not mount a hostPath volume into an agent run pod',
  privileged: 'Station template container must not be privileged',
  noAgent: "Station template has no container named 'agent'",
  // Our additions: further host escapes, and shapes the rewrite cannot work with.
  hostPort: 'Station template container must not use a hostPort on an agent run pod',
  capability: (cap: string) =>
    `Station template container must not add capability ${cap} on an agent run pod`,
  hostProcess: 'Station template container must not run as a Windows host process on an agent run pod',
  procMount: 'Station template container must not unmask /proc on an agent run pod',
  unconfined: (what: 'seccomp' | 'AppArmor') =>
    `Station template container must not run with an Unconfined ${what} profile on an agent run pod`,
  seLinux: 'Station template container must not set a custom SELinux user, role or type on an agent run pod',
  serviceAccountToken: 'Station template must not mount a service-account token into an agent run pod',
  tokenMount: (container: string) =>
    `Station template container ${container} must not mount the volume run-token: a run's token is for its agent container only`,
  memoryMount: (container: string) =>
    `Station template container ${container} must not mount the volume agent-memory: a run's memory is for its agent container only`,
  sharedProcessesWithToken:
    "Station template must not set shareProcessNamespace in a run that holds a token: other containers could read the agent's",
  agentArgs:
    "Station template container 'agent' must not set args: the run command is built from the recipe and args would follow the prompt",
  containersNotList: 'Station template.spec.containers must be a list of containers',
  containerNotObject: 'Station template.spec.containers entries must be objects',
  volumesNotList: 'Station template.spec.volumes must be a list of volumes',
  volumeNotObject: 'Station template.spec.volumes entries must be objects',
  mountsNotList: "Station template container 'agent' volumeMounts must be a list of objects",
  // Under the restricted Pod Security profile (the default), for every container besides 'agent' (whose security
  // context is ours) and every volume.
  restricted: (what: string) =>
    `Station template ${what}, which the restricted Pod Security profile forbids (set spec.podSecurityProfile: baseline to allow it)`,
} as const;

/** Volume types the restricted Pod Security profile admits. */
export const RESTRICTED_VOLUME_TYPES: ReadonlySet<string> = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);

/**
 * Capabilities Pod Security "baseline" lets a container add; adding anything else (SYS_ADMIN, NET_ADMIN,
 * SYS_PTRACE, …) is refused as a host escape.
 */
export const BASELINE_CAPABILITIES: ReadonlySet<string> = new Set([
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]);

/** Security context of the agent container (replaces the Station's). */
export const AGENT_SECURITY_CONTEXT: JsonObject = {
  runAsNonRoot: true,
  runAsUser: 1000,
  runAsGroup: 1000,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};
/** Security context of the pod under the baseline profile (replaces the Station's). */
export const POD_SECURITY_CONTEXT: JsonObject = { fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } };
/** Security context of the pod under the restricted profile: every container non-root (uid 1000) unless it says. */
export const POD_SECURITY_CONTEXT_RESTRICTED: JsonObject = {
  runAsNonRoot: true,
  runAsUser: 1000,
  runAsGroup: 1000,
  fsGroup: 1000,
  seccompProfile: { type: 'RuntimeDefault' },
};
/**
 * Security context of the init container under the restricted profile: the agent container's (the run user, no
 * capabilities). It writes only to the two emptyDirs (group fsGroup), installs vendor CLIs under HOME, and chowns
 * nothing (it owns what it writes); a missing prerequisite it cannot install fails the run naming the tool.
 */
export const INIT_SECURITY_CONTEXT_RESTRICTED: JsonObject = AGENT_SECURITY_CONTEXT;
/** Security context of the init container under the baseline profile: root with the five capabilities provisioning and chown need. */
export const INIT_SECURITY_CONTEXT: JsonObject = {
  runAsUser: 0,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'], add: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETUID', 'SETGID'] },
  seccompProfile: { type: 'RuntimeDefault' },
};
/** Agent container resources, applied only when the Station sets none (no CPU limit). */
export const AGENT_DEFAULT_RESOURCES: JsonObject = {
  requests: { cpu: '100m', memory: '256Mi' },
  limits: { memory: '2Gi' },
};
/** Init container resources (2Gi: vendor installers peak above 512Mi). */
export const INIT_RESOURCES: JsonObject = {
  requests: { cpu: '50m', memory: '128Mi' },
  limits: { memory: '2Gi' },
};

const isObject = (u: unknown): u is JsonObject => typeof u === 'object' && u !== null && !Array.isArray(u);
const clone = <T>(u: T): T => structuredClone(u);

/** The two volume mounts both run containers get. */
export function runVolumeMounts(): JsonObject[] {
  return [
    { name: AGENT_VOLUME_NAME, mountPath: BUNDLE_ROOT },
    { name: WORKSPACE_VOLUME_NAME, mountPath: DEFAULT_WORKSPACE },
  ];
}

/** What the rewrite puts into the pod besides the Station's template. */
export interface PodWiring {
  /** Full command of the agent container. */
  readonly command: readonly string[];
  /** Run env, shared by the init and agent containers. */
  readonly env: readonly EnvVar[];
  /** Image of the init container (controller `AGENT_IMAGE`). */
  readonly initImage: string;
  /** Labels forced onto the pod template (ours win). */
  readonly labels: Readonly<Record<string, string>>;
  /** Env of the agent container only, after the run env (a realtime run's prompt token and recipe). */
  readonly agentEnv?: readonly EnvVar[];
  /** Ports of the agent container, added to the template's (a realtime run's prompt server). */
  readonly agentPorts?: readonly { readonly name: string; readonly containerPort: number }[];
  /** The Station's Pod Security profile (default restricted). */
  readonly profile?: PodSecurityProfile;
  /** Native sidecar containers (tool sidecars), started after the injecting init container. */
  readonly sidecars?: readonly JsonObject[];
  /** The run's own ServiceAccount (replaces the Station's `serviceAccountName`). */
  readonly serviceAccountName?: string;
  /**
   * A projected, short-lived token of the run's ServiceAccount for the agent container only (the definition asks
   * for RBAC, issue 9 §2), mounted where in-cluster clients look for it. Absent: no token at all.
   */
  readonly agentToken?: { readonly expirationSeconds: number };
  /** The init container's resources (default {@link INIT_RESOURCES}; a policy's caps lower them). */
  readonly initResources?: JsonObject;
  /**
   * A policy's seccomp profile: the pod, the agent, the init and the tool sidecars get it (default RuntimeDefault);
   * Station containers that set none inherit it from the pod.
   */
  readonly seccompProfile?: JsonObject;
  /**
   * The definition's memory (issue 10 §3): the ConfigMap whose `MEMORY.md` the agent container (only it) reads at
   * `/agent/memory/MEMORY.md`, read-only; optional, so a missing ConfigMap is an empty memory.
   */
  readonly memory?: { readonly configMap: string };
  /**
   * The run's input ConfigMap (issue 10 §1): mounted read-only at `/agent/input` into the agent container only,
   * required (the pod waits for it).
   */
  readonly input?: { readonly configMap: string; readonly keys: InputKeys };
}

/** Name of the run pod's projected token volume (agent container only). */
export const TOKEN_VOLUME_NAME = 'run-token';
/** Where in-cluster clients (kubectl, client libraries) read the token, ca.crt and namespace. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The shortest token lifetime the API server issues (TokenRequest refuses less than 10 minutes). */
export const MIN_TOKEN_SECONDS = 600;

/** The projected volume a token-holding run pod gets: token, the cluster CA, the namespace (as kubelet's own). */
export function tokenVolume(expirationSeconds: number): JsonObject {
  return {
    name: TOKEN_VOLUME_NAME,
    projected: {
      defaultMode: 0o444,
      sources: [
        { serviceAccountToken: { path: 'token', expirationSeconds } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          downwardAPI: {
            items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
          },
        },
      ],
    },
  };
}

/** The run pod volume of the memory ConfigMap: its `MEMORY.md` only, optional. */
export function memoryVolume(configMap: string): JsonObject {
  return {
    name: MEMORY_VOLUME_NAME,
    configMap: { name: configMap, optional: true, items: [{ key: MEMORY_KEY, path: MEMORY_KEY }] },
  };
}

/** What the restricted profile forbids in a container we do not own (a Station sidecar), or undefined. */
function restrictedContainerProblem(container: JsonObject): string | undefined {
  const name = String(container.name ?? '');
  const sc = container.securityContext;
  if (!isObject(sc)) return undefined;
  const what = (detail: string) => TEMPLATE_ERRORS.restricted(`container ${name} ${detail}`);
  if (sc.runAsUser === 0) return what('runs as root (runAsUser: 0)');
  if (sc.runAsNonRoot === false) return what('sets runAsNonRoot: false');
  if (sc.allowPrivilegeEscalation === true) return what('allows privilege escalation');
  const add = isObject(sc.capabilities) && Array.isArray(sc.capabilities.add) ? sc.capabilities.add : [];
  for (const cap of add) {
    const capName = String(cap).toUpperCase().replace(/^CAP_/, '');
    if (capName !== 'NET_BIND_SERVICE') return what(`adds capability ${String(cap)}`);
  }
  return undefined;
}

/** What the restricted profile forbids in the template beyond the baseline checks, or undefined. */
function restrictedProblem(spec: JsonObject): string | undefined {
  for (const volume of Array.isArray(spec.volumes) ? (spec.volumes as JsonObject[]) : []) {
    const type = Object.keys(volume).find((k) => k !== 'name');
    if (type !== undefined && !RESTRICTED_VOLUME_TYPES.has(type)) {
      return TEMPLATE_ERRORS.restricted(`volume ${String(volume.name ?? '')} is of type ${type}`);
    }
  }
  for (const container of spec.containers as JsonObject[]) {
    if (container.name === AGENT_CONTAINER_NAME) continue;
    const problem = restrictedContainerProblem(container);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * Hardens a container we do not own for the restricted profile where it leaves a field unset: no privilege
 * escalation, every capability dropped (NET_BIND_SERVICE may stay added); non-root and seccomp come from the pod.
 */
function hardenRestricted(container: JsonObject): void {
  const sc = isObject(container.securityContext) ? container.securityContext : {};
  if (sc.allowPrivilegeEscalation === undefined) sc.allowPrivilegeEscalation = false;
  const caps = isObject(sc.capabilities) ? sc.capabilities : {};
  const drop = Array.isArray(caps.drop) ? caps.drop.map(String) : [];
  if (!drop.some((d) => d.toUpperCase() === 'ALL')) caps.drop = [...drop, 'ALL'];
  sc.capabilities = caps;
  container.securityContext = sc;
}

/** Our host-escape refusals beyond the reference's, for every container of the template (sidecars included). */
function containerEscape(container: JsonObject): string | undefined {
  for (const port of Array.isArray(container.ports) ? container.ports : []) {
    if (isObject(port) && port.hostPort !== undefined && port.hostPort !== null && port.hostPort !== 0) {
      return TEMPLATE_ERRORS.hostPort;
    }
  }
  const sc = container.securityContext;
  if (!isObject(sc)) return undefined;
  const add = isObject(sc.capabilities) && Array.isArray(sc.capabilities.add) ? sc.capabilities.add : [];
  for (const cap of add) {
    const name = String(cap).toUpperCase().replace(/^CAP_/, '');
    if (!BASELINE_CAPABILITIES.has(name)) return TEMPLATE_ERRORS.capability(String(cap));
  }
  if (isObject(sc.windowsOptions) && sc.windowsOptions.hostProcess === true)
    return TEMPLATE_ERRORS.hostProcess;
  if (sc.procMount !== undefined && sc.procMount !== null && sc.procMount !== 'Default') {
    return TEMPLATE_ERRORS.procMount;
  }
  // What Pod Security baseline forbids as well: an unconfined seccomp or AppArmor profile, a custom SELinux type.
  if (isObject(sc.seccompProfile) && sc.seccompProfile.type === 'Unconfined')
    return TEMPLATE_ERRORS.unconfined('seccomp');
  if (isObject(sc.appArmorProfile) && sc.appArmorProfile.type === 'Unconfined') {
    return TEMPLATE_ERRORS.unconfined('AppArmor');
  }
  if (isObject(sc.seLinuxOptions)) {
    const o = sc.seLinuxOptions;
    const type = o.type;
    if ((o.user !== undefined && o.user !== '') || (o.role !== undefined && o.role !== '')) {
      return TEMPLATE_ERRORS.seLinux;
    }
    if (type !== undefined && type !== '' && !SELINUX_TYPES.has(String(type))) return TEMPLATE_ERRORS.seLinux;
  }
  return undefined;
}

/** SELinux types Pod Security baseline allows. */
const SELINUX_TYPES: ReadonlySet<string> = new Set([
  'container_t',
  'container_init_t',
  'container_kvm_t',
  'container_engine_t',
]);

const isPrivileged = (container: JsonObject): boolean =>
  isObject(container.securityContext) && container.securityContext.privileged === true;

/**
 * Checks a Station template in the reference's order (object, spec, containers, host namespaces, hostPath volumes,
 * privileged containers, the `agent` container), plus our refusals (hostPort, capabilities beyond Pod Security
 * baseline, Windows host process, unmasked /proc, `args` on the agent container) and shape checks, then, under
 * the restricted profile, what it forbids (volume types; root, privilege escalation, capabilities but
 * NET_BIND_SERVICE, Unconfined seccomp in containers besides `agent`). Returns the first problem as a one-line
 * message, or undefined when the template can be wired.
 */
export function templateProblem(
  template: unknown,
  profile: PodSecurityProfile = 'restricted',
): string | undefined {
  if (!isObject(template)) return TEMPLATE_ERRORS.notObject;
  const spec = template.spec;
  if (!isObject(spec)) return TEMPLATE_ERRORS.noSpec;
  if (spec.containers === undefined || spec.containers === null) return TEMPLATE_ERRORS.noContainers;
  if (!Array.isArray(spec.containers)) return TEMPLATE_ERRORS.containersNotList;
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
    if (spec[field] === true) return TEMPLATE_ERRORS.hostNamespace(field);
  }
  if (spec.volumes !== undefined && spec.volumes !== null) {
    if (!Array.isArray(spec.volumes)) return TEMPLATE_ERRORS.volumesNotList;
    for (const volume of spec.volumes) {
      if (!isObject(volume)) return TEMPLATE_ERRORS.volumeNotObject;
      if ('hostPath' in volume) return TEMPLATE_ERRORS.hostPath;
      if (projectsServiceAccountToken(volume)) return TEMPLATE_ERRORS.serviceAccountToken;
    }
  }
  const annotations =
    isObject(template.metadata) && isObject(template.metadata.annotations)
      ? template.metadata.annotations
      : {};
  for (const [key, value] of Object.entries(annotations)) {
    if (key.startsWith('container.apparmor.security.beta.kubernetes.io/') && value === 'unconfined') {
      return TEMPLATE_ERRORS.unconfined('AppArmor');
    }
  }
  const containers: unknown[] = spec.containers;
  if (!containers.every(isObject)) return TEMPLATE_ERRORS.containerNotObject;
  if (containers.some(isPrivileged)) return TEMPLATE_ERRORS.privileged;
  const agent = containers.find((c) => c.name === AGENT_CONTAINER_NAME);
  if (agent === undefined) return TEMPLATE_ERRORS.noAgent;
  for (const container of containers) {
    const refusal = containerEscape(container);
    if (refusal !== undefined) return refusal;
    if (container.name !== AGENT_CONTAINER_NAME && Array.isArray(container.volumeMounts)) {
      const mounts: unknown[] = container.volumeMounts;
      const mounted = (volume: string) => mounts.some((m) => isObject(m) && m.name === volume);
      if (mounted(TOKEN_VOLUME_NAME)) return TEMPLATE_ERRORS.tokenMount(String(container.name ?? ''));
      if (mounted(MEMORY_VOLUME_NAME)) return TEMPLATE_ERRORS.memoryMount(String(container.name ?? ''));
    }
  }
  if (
    agent.args !== undefined &&
    agent.args !== null &&
    !(Array.isArray(agent.args) && agent.args.length === 0)
  ) {
    return TEMPLATE_ERRORS.agentArgs;
  }
  const mounts = agent.volumeMounts;
  if (mounts !== undefined && mounts !== null && (!Array.isArray(mounts) || !mounts.every(isObject))) {
    return TEMPLATE_ERRORS.mountsNotList;
  }
  return profile === 'restricted' ? restrictedProblem(spec) : undefined;
}

const notRunVolume = (entry: JsonObject): boolean =>
  entry.name !== AGENT_VOLUME_NAME &&
  entry.name !== WORKSPACE_VOLUME_NAME &&
  entry.name !== TOKEN_VOLUME_NAME &&
  entry.name !== MEMORY_VOLUME_NAME &&
  entry.name !== INPUT_VOLUME_NAME;

const stringMap = (u: unknown): Record<string, unknown> => (isObject(u) ? u : {});

/**
 * Validates (see {@link templateProblem}) and rewrites a deep copy of a Station template into the run pod
 * template; the input is never modified. The `agent` container gets the supervisor command, the run env, the
 * `agent`/`workspace` mounts (replacing Station mounts of those names), the memory mount of a definition with
 * memory (`agent-memory` at `/agent/memory`, read-only, agent only), the run's input (`run-input` at `/agent/input`,
 * read-only, agent only), the workspace as its working directory when the Station sets none, the hardened security
 * context, the termination message file of the run report (`File` policy) and default resources when it has no `resources`;
 * init containers are replaced by the injecting `init` container; the `agent`/`workspace` emptyDirs replace Station
 * volumes of those names; restartPolicy Never, the pod security context, no service-account token, merged labels
 * (ours win) and `safe-to-evict: "false"` are forced. Sidecars, nodeSelector, tolerations, affinity and other fields
 * are preserved.
 */
export function wirePodTemplate(template: unknown, wiring: PodWiring): Result<JsonObject, string> {
  const profile = wiring.profile ?? 'restricted';
  const problem = templateProblem(template, profile);
  if (problem !== undefined) return err(problem);
  if (
    wiring.agentToken !== undefined &&
    (template as { spec: JsonObject }).spec.shareProcessNamespace === true
  ) {
    return err(TEMPLATE_ERRORS.sharedProcessesWithToken);
  }
  const restricted = profile === 'restricted';
  const pod = clone(template as JsonObject);
  const spec = pod.spec as JsonObject;
  const containers = spec.containers as JsonObject[];

  const metadata = stringMap(pod.metadata);
  metadata.labels = { ...stringMap(metadata.labels), ...wiring.labels };
  metadata.annotations = { ...stringMap(metadata.annotations), [ANNOTATION_SAFE_TO_EVICT]: 'false' };
  pod.metadata = metadata;

  const index = containers.findIndex((c) => c.name === AGENT_CONTAINER_NAME);
  const agent = containers[index] as JsonObject;
  agent.command = [...wiring.command];
  delete agent.args;
  // The CLI works on the repositories cloned into the workspace: it starts there unless the Station chose another
  // directory (a restricted run's uid cannot write `/`, the container runtime's default working directory).
  if (typeof agent.workingDir !== 'string' || agent.workingDir === '') agent.workingDir = DEFAULT_WORKSPACE;
  agent.env = clone([...wiring.env, ...(wiring.agentEnv ?? [])]) as unknown[];
  if (wiring.agentPorts !== undefined && wiring.agentPorts.length > 0) {
    const ports = Array.isArray(agent.ports) ? (agent.ports as JsonObject[]) : [];
    const ours = new Set(wiring.agentPorts.map((p) => p.name));
    agent.ports = [...ports.filter((p) => !ours.has(String(p.name))), ...clone(wiring.agentPorts)];
  }
  const stationMounts = Array.isArray(agent.volumeMounts) ? (agent.volumeMounts as JsonObject[]) : [];
  const tokenMount = { name: TOKEN_VOLUME_NAME, mountPath: SERVICE_ACCOUNT_DIR, readOnly: true };
  const memoryMount = { name: MEMORY_VOLUME_NAME, mountPath: MEMORY_DIR, readOnly: true };
  agent.volumeMounts = [
    ...stationMounts.filter(
      (m) =>
        notRunVolume(m) &&
        (wiring.agentToken === undefined || m.mountPath !== SERVICE_ACCOUNT_DIR) &&
        (wiring.memory === undefined || m.mountPath !== MEMORY_DIR) &&
        (wiring.input === undefined || m.mountPath !== INPUT_DIR),
    ),
    ...runVolumeMounts(),
    ...(wiring.agentToken !== undefined ? [tokenMount] : []),
    ...(wiring.memory !== undefined ? [memoryMount] : []),
    ...(wiring.input !== undefined
      ? [{ name: INPUT_VOLUME_NAME, mountPath: INPUT_DIR, readOnly: true }]
      : []),
  ];
  agent.securityContext = clone(AGENT_SECURITY_CONTEXT);
  // The supervisor writes the run report there (issue 10 §2); the Station's values are replaced.
  agent.terminationMessagePath = TERMINATION_MESSAGE_PATH;
  agent.terminationMessagePolicy = 'File';
  if (agent.resources === undefined || agent.resources === null)
    agent.resources = clone(AGENT_DEFAULT_RESOURCES);

  spec.initContainers = [
    {
      name: INIT_CONTAINER_NAME,
      image: wiring.initImage,
      args: [...INIT_ARGS],
      env: clone(wiring.env) as unknown[],
      volumeMounts: runVolumeMounts(),
      securityContext: clone(restricted ? INIT_SECURITY_CONTEXT_RESTRICTED : INIT_SECURITY_CONTEXT),
      resources: clone(wiring.initResources ?? INIT_RESOURCES),
    },
    ...clone(wiring.sidecars ?? []),
  ];
  const stationVolumes = Array.isArray(spec.volumes) ? (spec.volumes as JsonObject[]) : [];
  spec.volumes = [
    ...stationVolumes.filter(notRunVolume),
    { name: AGENT_VOLUME_NAME, emptyDir: {} },
    { name: WORKSPACE_VOLUME_NAME, emptyDir: {} },
    ...(wiring.agentToken !== undefined ? [tokenVolume(wiring.agentToken.expirationSeconds)] : []),
    ...(wiring.memory !== undefined ? [memoryVolume(wiring.memory.configMap)] : []),
    ...(wiring.input !== undefined ? [inputVolume(wiring.input.configMap, wiring.input.keys)] : []),
  ];
  spec.restartPolicy = 'Never';
  spec.securityContext = clone(restricted ? POD_SECURITY_CONTEXT_RESTRICTED : POD_SECURITY_CONTEXT);
  if (restricted) for (const c of containers) if (c.name !== AGENT_CONTAINER_NAME) hardenRestricted(c);
  spec.automountServiceAccountToken = false;
  if (wiring.seccompProfile !== undefined) {
    const profile = wiring.seccompProfile;
    (spec.securityContext as JsonObject).seccompProfile = clone(profile);
    for (const c of [agent, ...(spec.initContainers as JsonObject[])]) {
      (c.securityContext as JsonObject).seccompProfile = clone(profile);
    }
  }
  if (wiring.serviceAccountName !== undefined) {
    spec.serviceAccountName = wiring.serviceAccountName;
    delete spec.serviceAccount;
  }
  return ok(pod);
}
