import {
  type Agent,
  type AgentDefinition,
  type Job,
  LABEL_DEFAULT_POLICY,
  type Pod,
  parseAgentDefinition,
  parseAgentPolicy,
  parseJob,
  parsePod,
  parseStation,
  type Station,
} from '../api/index.ts';
import { jobNameFor } from '../jobs/index.ts';
import {
  describeKubeError,
  getObject,
  isNotFound,
  isTransient,
  JOBS,
  type KubeError,
  type KubeObject,
  KubeObjectSchema,
  listAll,
  PODS,
  resourcePath,
  type Transport,
} from '../kube/index.ts';
import {
  AGENT_CONTAINER,
  type JobObservation,
  type LogRead,
  type PolicyObservation,
  pickRunPod,
  type RunEvidence,
  servesNamespace,
} from '../reconcile/index.ts';
import type { StoreReader } from '../runtime/index.ts';
import { oncePerObject } from '../shared/once-per-object.ts';
import { err, ok, type Result } from '../shared/result.ts';
import type { FinishedRunIndex } from './finished-runs.ts';
import { AGENT_DEFINITIONS, AGENT_POLICIES, STATIONS } from './resources.ts';
import { podJobUid } from './run-starts.ts';

/** Lines of the agent container log read for `status.output` (docs/design/reference-behaviour.md#output-capping). */
export const LOG_TAIL_LINES = 10000;

/** The caches and the client the read half of a reconcile uses. */
export interface GatherDeps {
  readonly transport: Transport;
  readonly stations: StoreReader<KubeObject>;
  readonly definitions: StoreReader<KubeObject>;
  readonly jobs: StoreReader<KubeObject>;
  /**
   * The AgentPolicies cache (cluster-scoped), or why there is none: the CRD is not installed, or the controller may
   * not read policies. Undefined: policies are not enforced (tests that do not care).
   */
  readonly policies?:
    | { readonly store: StoreReader<KubeObject> }
    | { readonly unavailable: string }
    | undefined;
  readonly timeoutMs?: number;
  /** Finished run pods and logs read ahead of the Job's verdict; without it the evidence is always read live. */
  readonly finishedRuns?: FinishedRunIndex;
}

/** A referenced object: found and valid, confirmed absent (404), or present but invalid (message says why). */
export type RefLookup<T> =
  | { readonly kind: 'found'; readonly value: T }
  | { readonly kind: 'absent' }
  | { readonly kind: 'invalid'; readonly message: string };

const key = (namespace: string, name: string): string => `${namespace}/${name}`;

/**
 * Parsers of cached objects, memoised per object: the cache replaces an object on every change, so each version is
 * validated once however many reconciles (and queue wake-ups) read it.
 */
export const parseCachedStation = oncePerObject(parseStation);
export const parseCachedDefinition = oncePerObject(parseAgentDefinition);
export const parseCachedJob = oncePerObject(parseJob);

/**
 * Looks an object up in its cache, and on a miss confirms with a live GET, so an object created a moment before the
 * Agent is never mistaken for a missing one (a missing reference fails the Agent for good). Errors other than 404
 * are returned: the reconcile then fails and is retried.
 */
async function lookup<T>(
  deps: GatherDeps,
  cache: StoreReader<KubeObject>,
  rt: typeof STATIONS,
  namespace: string,
  name: string,
  parse: (u: unknown) => Result<T, string>,
): Promise<Result<RefLookup<T>, KubeError>> {
  let raw: unknown = cache.get(key(namespace, name));
  if (raw === undefined) {
    const got = await getObject(deps.transport, rt, { namespace, name }, KubeObjectSchema, {
      timeoutMs: deps.timeoutMs,
    });
    if (!got.ok) return isNotFound(got.error) ? ok({ kind: 'absent' }) : got;
    raw = got.value;
  }
  const parsed = parse(raw);
  return ok(parsed.ok ? { kind: 'found', value: parsed.value } : { kind: 'invalid', message: parsed.error });
}

export function lookupStation(
  deps: GatherDeps,
  agent: Agent,
): Promise<Result<RefLookup<Station>, KubeError>> {
  return lookup(
    deps,
    deps.stations,
    STATIONS,
    agent.metadata.namespace ?? '',
    agent.spec.stationRef,
    parseCachedStation,
  );
}

export function lookupDefinition(
  deps: GatherDeps,
  namespace: string,
  station: Station,
): Promise<Result<RefLookup<AgentDefinition>, KubeError>> {
  return lookup(
    deps,
    deps.definitions,
    AGENT_DEFINITIONS,
    namespace,
    station.spec.agentDefRef,
    parseCachedDefinition,
  );
}

/**
 * The Station's AgentDefinition from the cache only (undefined when it is not there or does not parse): what a
 * Running run reads to tell what its output means (format and schema, the model it is priced by) without an API
 * call on every re-check.
 */
export function cachedDefinition(
  deps: GatherDeps,
  namespace: string,
  station: Station,
): AgentDefinition | undefined {
  const raw = deps.definitions.get(key(namespace, station.spec.agentDefRef));
  if (raw === undefined) return undefined;
  const parsed = parseCachedDefinition(raw);
  return parsed.ok ? parsed.value : undefined;
}

export const parseCachedPolicy = oncePerObject(parseAgentPolicy);

/**
 * The AgentPolicy that applies to a Station: the one it names (cache, else a live GET; absent or unparsable →
 * `missing`, which fails the run), else the one labelled `agents.re-cinq.com/default-policy=true` (several:
 * `ambiguous`, which fails the run rather than guess), else none. When policies cannot be read, a Station that names one fails (never run
 * unchecked); a Station that names none runs as if there were no default.
 */
export async function lookupPolicy(
  deps: GatherDeps,
  station: Station,
): Promise<Result<PolicyObservation, KubeError>> {
  const name = station.spec.policyRef;
  const source = deps.policies;
  if (source === undefined) return ok({ kind: 'none' });
  if ('unavailable' in source) {
    return ok(name === undefined ? { kind: 'none' } : { kind: 'missing', name, message: source.unavailable });
  }
  if (name !== undefined) {
    let raw: unknown = source.store.get(name);
    if (raw === undefined) {
      const got = await getObject(deps.transport, AGENT_POLICIES, { name }, KubeObjectSchema, {
        timeoutMs: deps.timeoutMs,
      });
      if (!got.ok) return isNotFound(got.error) ? ok({ kind: 'missing', name }) : got;
      raw = got.value;
    }
    const parsed = parseCachedPolicy(raw);
    return ok(
      parsed.ok ? { kind: 'found', policy: parsed.value } : { kind: 'missing', name, message: parsed.error },
    );
  }
  // The default policies serving this namespace (one that cannot be parsed counts: it cannot be ruled out).
  const namespace = station.metadata.namespace;
  const defaults = source.store
    .list()
    .filter((o) => o.metadata.labels?.[LABEL_DEFAULT_POLICY] === 'true')
    .map((o) => ({ raw: o, parsed: parseCachedPolicy(o) }))
    .filter((d) => !d.parsed.ok || servesNamespace(d.parsed.value, namespace))
    .sort((a, b) => (a.raw.metadata.name ?? '').localeCompare(b.raw.metadata.name ?? ''));
  const first = defaults[0];
  if (first === undefined) return ok({ kind: 'none' });
  if (defaults.length > 1)
    return ok({ kind: 'ambiguous', names: defaults.map((d) => d.raw.metadata.name ?? '') });
  return ok(
    first.parsed.ok
      ? { kind: 'found', policy: first.parsed.value }
      : { kind: 'missing', name: first.raw.metadata.name ?? '', message: first.parsed.error },
  );
}

/** The run's Job name: `status.jobName`, else derived from the Agent name. */
export function runJobName(agent: Agent): string {
  return agent.status?.jobName || jobNameFor(agent.metadata.name ?? '');
}

/**
 * Reads the run's Job: from the Job cache, else a live GET (the cache may lag a Job created a moment ago).
 * 404 → `absent`. The evidence is not gathered here (see {@link gatherEvidence}).
 */
export async function observeJob(deps: GatherDeps, agent: Agent): Promise<Result<JobObservation, KubeError>> {
  const namespace = agent.metadata.namespace ?? '';
  const name = runJobName(agent);
  let raw: unknown = deps.jobs.get(key(namespace, name));
  if (raw === undefined) {
    const got = await getObject(deps.transport, JOBS, { namespace, name }, KubeObjectSchema, {
      timeoutMs: deps.timeoutMs,
    });
    if (!got.ok) return isNotFound(got.error) ? ok({ kind: 'absent' }) : got;
    raw = got.value;
  }
  const job = parseCachedJob(raw);
  if (!job.ok) return err({ kind: 'decode', message: `Job ${namespace}/${name}: ${job.error}` });
  return ok({ kind: 'present', job: job.value, evidence: { kind: 'notGathered' } });
}

/**
 * What a finished run left behind: its pods (`job-name=<job>`), the one that speaks for the run, and the agent
 * container's log tail. Any failure after the pod list becomes `unavailable`/log `unavailable` so a run never stays
 * Running because its evidence cannot be read (docs/design/reference-behaviour.md#reading-the-finished-pod).
 */
export async function gatherEvidence(deps: GatherDeps, job: Job): Promise<RunEvidence> {
  const namespace = job.metadata.namespace ?? '';
  const cached = deps.finishedRuns?.take(job);
  if (cached !== undefined) {
    const ahead = await cached.log;
    deps.finishedRuns?.evidenceRead(ahead?.kind === 'read' ? 'read_ahead' : 'cached_pod');
    const log =
      ahead?.kind === 'read' ? ahead : await readAgentLog(deps, namespace, cached.pod.metadata.name ?? '');
    return { kind: 'pod', pod: cached.pod, log };
  }
  deps.finishedRuns?.evidenceRead('live');
  const listed = await listJobPods(deps, job);
  if (!listed.ok)
    return {
      kind: 'unavailable',
      detail: `listing the run's pods failed: ${describeKubeError(listed.error)}`,
      transient: isTransient(listed.error),
    };
  const pod = pickRunPod(listed.value);
  if (!pod) return { kind: 'podGone' };
  return { kind: 'pod', pod, log: await readAgentLog(deps, namespace, pod.metadata.name ?? '') };
}

/**
 * The Job's pods (`job-name=<job>`, and the Job's uid when they carry it) as the API server has them now; pods that do
 * not parse are left out.
 */
export async function listJobPods(deps: GatherDeps, job: Job): Promise<Result<Pod[], KubeError>> {
  const listed = await listAll(deps.transport, PODS, KubeObjectSchema, {
    namespace: job.metadata.namespace ?? '',
    labelSelector: `job-name=${job.metadata.name ?? ''}`,
    signal: undefined,
  });
  if (!listed.ok) return listed;
  const pods: Pod[] = [];
  for (const item of listed.value.items) {
    const pod = parsePod(item);
    // Only this Job's pods: one left by an earlier Job of the same name (an Agent deleted and created again, its
    // pod not yet collected) carries that Job's uid.
    const jobUid = pod.ok ? podJobUid(pod.value) : undefined;
    if (pod.ok && (jobUid === undefined || jobUid === job.metadata.uid)) pods.push(pod.value);
  }
  return ok(pods);
}

/**
 * Reads the agent container's log tail (the last LOG_TAIL_LINES lines; the core caps it to MAX_OUTPUT_BYTES). The
 * container is named explicitly: a pod with sidecars answers 400 otherwise.
 */
export async function readAgentLog(
  deps: Pick<GatherDeps, 'transport' | 'timeoutMs'>,
  namespace: string,
  pod: string,
): Promise<LogRead> {
  const path = resourcePath(PODS, { namespace, name: pod, subresource: 'log' });
  const r = await deps.transport.request('GET', path, {
    query: { container: AGENT_CONTAINER, tailLines: String(LOG_TAIL_LINES) },
    timeoutMs: deps.timeoutMs,
  });
  if (!r.ok)
    return { kind: 'unavailable', detail: describeKubeError(r.error), transient: isTransient(r.error) };
  return { kind: 'read', text: r.value.text };
}
