// AgentPolicy checks (issue 9 §1): what the policy of a run's Station allows, checked at Pending, before the Job
// is built. Pure. Each violation is one line naming the policy, the offending value and what is allowed, so the
// Agent's failureReason says what to change. Running runs are never re-checked (a policy change cannot stop them);
// Pending runs are checked on every reconcile, so they see the current policy.
import {
  type Agent,
  type AgentDefinition,
  type AgentPolicy,
  resolveModel,
  type Station,
} from '../../api/index.ts';
import { AGENT_DEFAULT_RESOURCES, type RunLimits, SIDECAR_DEFAULT_RESOURCES } from '../../jobs/index.ts';
import { globMatch } from '../../shared/glob.ts';
import { parseQuantity } from '../../shared/quantity.ts';
import { type Vendor, vendorForModel } from '../../vendors/cli/index.ts';

/** Which policy applies to a Station, as the shell found it. */
export type PolicyObservation =
  /** No policyRef and no default policy: no extra limits. */
  | { readonly kind: 'none' }
  | { readonly kind: 'found'; readonly policy: AgentPolicy }
  /** The Station names a policy that does not exist (or cannot be parsed: `message`). */
  | { readonly kind: 'missing'; readonly name: string; readonly message?: string }
  /** No policyRef, and more than one policy is labelled default: which one applies is not clear, so none runs. */
  | { readonly kind: 'ambiguous'; readonly names: readonly string[] };

/** The failure reason when the policy that applies cannot be used (missing, unreadable, ambiguous default). */
export function policyUnusable(o: Exclude<PolicyObservation, { kind: 'none' | 'found' }>): string {
  return o.kind === 'missing'
    ? `AgentPolicy ${o.name} not found${o.message !== undefined ? `: ${o.message}` : ''}`
    : `more than one AgentPolicy is labelled agents.re-cinq.com/default-policy=true (${o.names.join(', ')}): keep one default, or name a policy with spec.policyRef`;
}

/** What a run would do, as far as a policy is concerned. */
export interface RunIntent {
  readonly station: Station;
  readonly definition: AgentDefinition;
  /** The model the run resolves to (Agent override, else the definition's). */
  readonly model: string;
  readonly vendor: Vendor;
  /** Containers of the run pod besides our init: name, image, effective resources. */
  readonly containers: readonly RunContainer[];
  /** `runtimeClassName` of the run pod, if any. */
  readonly runtimeClassName: string | undefined;
}

export interface RunContainer {
  readonly name: string;
  readonly image: string;
  readonly resources: {
    readonly requests?: Readonly<Record<string, unknown>>;
    readonly limits?: Readonly<Record<string, unknown>>;
  };
  /** Env names the user gave this container (not the controller's run env). */
  readonly env: readonly string[];
  /** The container takes env in bulk (`envFrom`). */
  readonly envFrom?: boolean;
  /** The seccomp profile a Station container sets itself (ours get the policy's). */
  readonly seccompProfile?: unknown;
}

/** What the policy imposes on the parts of the run pod the controller writes (handed to the Job builder). */
export function runLimits(policy: AgentPolicy | undefined): RunLimits | undefined {
  if (policy === undefined) return undefined;
  const seccompProfile = policy.spec.sandbox?.seccompProfile;
  const { maxCpu, maxMemory } = policy.spec.resources ?? {};
  if (seccompProfile === undefined && maxCpu === undefined && maxMemory === undefined) return undefined;
  return {
    ...(seccompProfile !== undefined ? { seccompProfile } : {}),
    ...(maxCpu !== undefined ? { maxCpu } : {}),
    ...(maxMemory !== undefined ? { maxMemory } : {}),
  };
}

const sameProfile = (a: unknown, b: { type: string; localhostProfile?: string | undefined }): boolean =>
  isObject(a) && a.type === b.type && (a.localhostProfile ?? undefined) === (b.localhostProfile ?? undefined);

/**
 * Vendors whose CLI takes an allow list / a deny list of tools (docs/reference/vendor-cli-events.md#tool-flags:
 * Claude both, Gemini allow only as a flag; Gemini CLI's deny list is its settings' `tools.exclude` and OpenCode's
 * its config's `permission`, both written by the supervisor: docs/reference/vendor-clis.md#tool-permissions-1,
 * docs/reference/vendor-clis.md#tool-permissions-2).
 */
const ENFORCES_ALLOW: ReadonlySet<Vendor> = new Set(['claude', 'gemini']);
const ENFORCES_DENY: ReadonlySet<Vendor> = new Set(['claude', 'gemini', 'opencode']);

export { globMatch };

const list = (xs: readonly string[]): string => (xs.length === 0 ? '(none)' : xs.join(', '));

/** The tool lists a run gets under the policy: its own allow list (or the policy's), its deny list plus the policy's. */
export function effectiveTools(
  definition: AgentDefinition,
  policy: AgentPolicy | undefined,
): { allowed: string[] | undefined; disallowed: string[] | undefined } {
  const own = definition.spec;
  const allow = policy?.spec.tools?.allow;
  const deny = policy?.spec.tools?.deny ?? [];
  // An empty allow list means "every tool" to the CLI: under a policy allow list it becomes the policy's.
  const ownAllowed =
    own.allowed_tools !== undefined && own.allowed_tools.length > 0 ? own.allowed_tools : undefined;
  const allowed = ownAllowed ?? (allow !== undefined ? [...allow] : own.allowed_tools);
  const disallowedAll = [
    ...(own.disallowed_tools ?? []),
    ...deny.filter((t) => !(own.disallowed_tools ?? []).includes(t)),
  ];
  return { allowed, disallowed: disallowedAll.length > 0 ? disallowedAll : own.disallowed_tools };
}

/** The definition with the policy's tool lists applied (what the Job is built from). */
export function withPolicyTools(
  definition: AgentDefinition,
  policy: AgentPolicy | undefined,
): AgentDefinition {
  if (policy?.spec.tools === undefined) return definition;
  const { allowed, disallowed } = effectiveTools(definition, policy);
  return {
    ...definition,
    spec: {
      ...definition.spec,
      ...(allowed !== undefined ? { allowed_tools: allowed } : {}),
      ...(disallowed !== undefined ? { disallowed_tools: disallowed } : {}),
    },
  };
}

/** The ClusterRoles a definition asks to have bound (deduplicated, in order), per scope. */
export function requestedRoles(definition: AgentDefinition): { roles: string[]; clusterRoles: string[] } {
  const rbac = definition.spec.rbac;
  return { roles: [...new Set(rbac?.roles ?? [])], clusterRoles: [...new Set(rbac?.clusterRoles ?? [])] };
}

/** True when runs of this definition get Kubernetes access (bindings, a projected token). */
export function requestsRbac(definition: AgentDefinition): boolean {
  const { roles, clusterRoles } = requestedRoles(definition);
  return roles.length > 0 || clusterRoles.length > 0;
}

/** Why a definition's RBAC request cannot be served whatever the policy, or undefined. */
function rbacShapeProblem(definition: AgentDefinition): string | undefined {
  if (!requestsRbac(definition)) return undefined;
  if (definition.spec.execution === 'batch') {
    return `AgentDefinition ${definition.metadata.name} requests spec.rbac, but a batch run has no pod to hold a token`;
  }
  const { roles, clusterRoles } = requestedRoles(definition);
  const bad = [...roles, ...clusterRoles].find((r) => !/^[^/%]+$/.test(r) || r === '.' || r === '..');
  if (bad !== undefined)
    return `AgentDefinition ${definition.metadata.name}: spec.rbac names "${bad}", not a ClusterRole name`;
  return undefined;
}

/**
 * Why the policy that applies refuses this run (a violation, or a policy that cannot be used); undefined: allowed.
 * A definition that asks for RBAC needs a policy that grants it: without one, it is refused.
 */
export function policyRefusal(
  observation: PolicyObservation,
  definition: AgentDefinition,
  run: () => RunIntent,
): string | undefined {
  const shape = rbacShapeProblem(definition);
  if (shape !== undefined) return shape;
  switch (observation.kind) {
    case 'none':
      return requestsRbac(definition)
        ? `AgentDefinition ${definition.metadata.name} requests Kubernetes access (spec.rbac), but no AgentPolicy applies to its Station: only a policy's spec.rbac can make a role grantable`
        : undefined;
    case 'found':
      return policyViolation(observation.policy, run());
    default:
      return policyUnusable(observation);
  }
}

/** True when the policy serves Stations of `namespace` (no `spec.namespaces`: every namespace). */
export function servesNamespace(policy: AgentPolicy, namespace: string): boolean {
  const namespaces = policy.spec.namespaces;
  return namespaces === undefined || namespaces.includes(namespace);
}

/** The first thing the policy forbids in this run, as `AgentPolicy <name>: <what>`; undefined when allowed. */
export function policyViolation(policy: AgentPolicy, run: RunIntent): string | undefined {
  const detail = firstViolation(policy, run);
  return detail === undefined ? undefined : `AgentPolicy ${policy.metadata.name}: ${detail}`;
}

function firstViolation(policy: AgentPolicy, run: RunIntent): string | undefined {
  const p = policy.spec;
  const { definition, station } = run;
  if (!servesNamespace(policy, station.metadata.namespace)) {
    return `it does not serve namespace ${station.metadata.namespace} (spec.namespaces: ${list(p.namespaces ?? [])})`;
  }
  const profile = p.sandbox?.seccompProfile;
  if (profile !== undefined) {
    // A malformed profile would make every run's pod invalid: say so on the run instead of a rejected Job.
    if (profile.type === 'Localhost' && (profile.localhostProfile ?? '') === '') {
      return 'sandbox.seccompProfile type Localhost needs a localhostProfile';
    }
    if (profile.type !== 'Localhost' && profile.localhostProfile !== undefined) {
      return `sandbox.seccompProfile type ${profile.type} takes no localhostProfile`;
    }
  }
  const execution = definition.spec.execution;
  const executions = p.executions?.allowed;
  if (executions !== undefined && !executions.includes(execution)) {
    return `execution ${execution} is not allowed (allowed: ${list(executions)})`;
  }
  const vendors = p.vendors?.allowed;
  if (vendors !== undefined && !vendors.includes(run.vendor)) {
    return `vendor ${run.vendor} is not allowed (allowed: ${list(vendors)})`;
  }
  const models = p.models?.allowed;
  if (models !== undefined && !models.some((g) => globMatch(g, run.model))) {
    return `model ${run.model} is not allowed (allowed: ${list(models)})`;
  }
  // A batch run has no tools (the batch API gets the prompt alone): nothing to hand to a CLI.
  const tools = execution === 'batch' ? undefined : p.tools;
  if (tools?.allow !== undefined) {
    if (!ENFORCES_ALLOW.has(run.vendor)) return `the ${run.vendor} CLI cannot enforce a tool allow list`;
    // Bypass mode hands the CLI no allow list at all (it skips permission prompts instead).
    if (definition.spec.permission_mode === 'bypass') {
      return 'permission_mode bypass is not allowed under a tool allow list';
    }
    const outside = (definition.spec.allowed_tools ?? []).find((t) => !tools.allow?.includes(t));
    if (outside !== undefined) return `tool ${outside} is not allowed (allowed: ${list(tools.allow)})`;
  }
  if (tools?.deny !== undefined && tools.deny.length > 0) {
    if (!ENFORCES_DENY.has(run.vendor)) return `the ${run.vendor} CLI cannot enforce a tool deny list`;
    const denied = (definition.spec.allowed_tools ?? []).find((t) => tools.deny?.includes(t));
    if (denied !== undefined) return `tool ${denied} is denied`;
  }
  const sidecars = run.containers.filter((c) => c.name !== 'agent');
  if (p.sidecars?.allowed === false && sidecars.length > 0) {
    return `sidecar containers are not allowed (container ${sidecars[0]?.name})`;
  }
  const prefixes = p.images?.allowedPrefixes;
  if (prefixes !== undefined) {
    const bad = run.containers.find((c) => !prefixes.some((prefix) => c.image.startsWith(prefix)));
    if (bad !== undefined) {
      return `image ${bad.image} of container ${bad.name} is not allowed (allowed prefixes: ${list(prefixes)})`;
    }
  }
  const maxDeadline = p.resources?.maxDeadlineMinutes;
  if (maxDeadline !== undefined && station.spec.deadlineMinutes > maxDeadline) {
    return `deadlineMinutes ${station.spec.deadlineMinutes} is over the maximum of ${maxDeadline}`;
  }
  for (const [resource, max] of [
    ['cpu', p.resources?.maxCpu],
    ['memory', p.resources?.maxMemory],
  ] as const) {
    if (max === undefined) continue;
    const cap = parseQuantity(max);
    if (cap === undefined)
      return `resources.max${resource === 'cpu' ? 'Cpu' : 'Memory'} ${max} is not a quantity`;
    for (const c of run.containers) {
      const limit = c.resources.limits?.[resource];
      if (limit === undefined || limit === null) {
        return `container ${c.name} has no ${resource} limit (the policy caps ${resource} at ${max})`;
      }
      for (const [kind, value] of [
        ['request', c.resources.requests?.[resource]],
        ['limit', limit],
      ] as const) {
        if (value === undefined || value === null) continue;
        const amount = parseQuantity(String(value));
        if (amount === undefined || amount > cap) {
          return `container ${c.name} ${resource} ${kind} ${String(value)} is over the cap of ${max}`;
        }
      }
    }
  }
  const classes = p.sandbox?.runtimeClassNames;
  if (run.runtimeClassName === undefined) {
    if (p.sandbox?.requireRuntimeClass === true) {
      return `a runtimeClassName is required (one of ${list(classes ?? [])})`;
    }
  } else if (classes !== undefined && !classes.includes(run.runtimeClassName)) {
    return `runtimeClassName ${run.runtimeClassName} is not allowed (allowed: ${list(classes)})`;
  }
  const { roles, clusterRoles } = requestedRoles(definition);
  const role = roles.find((r) => !(p.rbac?.roles ?? []).includes(r));
  if (role !== undefined) {
    return `role ${role} is not grantable (spec.rbac.roles: ${list(p.rbac?.roles ?? [])})`;
  }
  const clusterRole = clusterRoles.find((r) => !(p.rbac?.clusterRoles ?? []).includes(r));
  if (clusterRole !== undefined) {
    return `cluster role ${clusterRole} is not grantable cluster-wide (spec.rbac.clusterRoles: ${list(p.rbac?.clusterRoles ?? [])})`;
  }
  const seccomp = p.sandbox?.seccompProfile;
  if (seccomp !== undefined) {
    const other = run.containers.find(
      (c) => c.seccompProfile !== undefined && !sameProfile(c.seccompProfile, seccomp),
    );
    if (other !== undefined) {
      return `container ${other.name} sets another seccomp profile than the policy's ${seccomp.type}${seccomp.localhostProfile !== undefined ? ` (${seccomp.localhostProfile})` : ''}`;
    }
  }
  const deniedEnv = p.env?.deny;
  if (deniedEnv !== undefined) {
    const own = [
      ...definition.spec.resources.env.map((e) => ['the definition', e.name] as const),
      ...definition.spec.resources.secrets.map((e) => ['the definition', e.name] as const),
      ...run.containers.flatMap((c) => c.env.map((n) => [`container ${c.name}`, n] as const)),
    ];
    const hit = own.find(([, name]) => deniedEnv.includes(name));
    if (hit !== undefined) return `env ${hit[1]} (set by ${hit[0]}) is denied`;
    // envFrom would set names nobody can see here (from a ConfigMap or Secret).
    const bulk = run.containers.find((c) => c.envFrom);
    if (bulk !== undefined) return `envFrom (container ${bulk.name}) is not allowed under an env deny list`;
  }
  return undefined;
}

const isObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === 'object' && u !== null && !Array.isArray(u);

/**
 * What a run of this Agent would be, read from the Station template as the Job builder will wire it: every
 * container (the agent one with the default resources when it sets none, and none of the template's env, which the
 * run env replaces) and the definition's tool sidecars, the pod's runtimeClassName, the resolved model and vendor.
 */
export function runIntent(agent: Agent, station: Station, definition: AgentDefinition): RunIntent {
  const model = resolveModel(agent, definition);
  const spec = isObject(station.spec.template.spec) ? station.spec.template.spec : {};
  const raw = Array.isArray(spec.containers) ? spec.containers.filter(isObject) : [];
  const containers: RunContainer[] = raw.map((c) => {
    const name = String(c.name ?? '');
    const resources = isObject(c.resources)
      ? (c.resources as RunContainer['resources'])
      : name === 'agent'
        ? (AGENT_DEFAULT_RESOURCES as RunContainer['resources'])
        : {};
    const env =
      name === 'agent' || !Array.isArray(c.env)
        ? []
        : c.env.filter(isObject).map((e) => String(e.name ?? ''));
    const envFrom = Array.isArray(c.envFrom) && c.envFrom.length > 0;
    // The agent container's security context is ours (replaced); a Station sidecar keeps its own.
    const seccompProfile =
      name !== 'agent' && isObject(c.securityContext) ? c.securityContext.seccompProfile : undefined;
    return {
      name,
      image: String(c.image ?? ''),
      resources,
      env,
      ...(envFrom ? { envFrom } : {}),
      ...(seccompProfile !== undefined ? { seccompProfile } : {}),
    };
  });
  for (const sc of definition.spec.sidecars) {
    containers.push({
      name: sc.name,
      image: sc.image,
      resources: (sc.resources ?? SIDECAR_DEFAULT_RESOURCES) as RunContainer['resources'],
      env: [...sc.env.map((e) => e.name), ...sc.secrets.map((e) => e.name)],
    });
  }
  return {
    station,
    definition,
    model,
    vendor: vendorForModel(model),
    containers,
    runtimeClassName: typeof spec.runtimeClassName === 'string' ? spec.runtimeClassName : undefined,
  };
}
