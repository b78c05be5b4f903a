// The API calls the CLI commands make, each read validated with the project's schemas at the boundary and each
// failure turned into a CliError (one line, the right exit code). Thin: no decisions here.
import * as v from 'valibot';
import {
  type Agent,
  type AgentDefinition,
  type Job,
  JobSchema,
  ObjectEventSchema,
  type Pod,
  PodSchema,
  parseAgent,
  parseAgentDefinition,
  parseStation,
  type Station,
} from '../api/index.ts';
import {
  createObject,
  deleteObject,
  EVENTS,
  getObject,
  isForbidden,
  isNotFound,
  JOBS,
  type KubeError,
  type KubeObject,
  listAll,
  mergePatch,
  PODS,
  type Transport,
} from '../kube/index.ts';
import type { Result } from '../shared/result.ts';
import { CliError, kubeFailure } from './exit.ts';
import { AGENTS_KIND, KINDS, type KindInfo, validatedSchema } from './kinds.ts';

/** A schema that reads with one of the project's `parseX` functions (lenient defaults, named field errors). */
export function parsedSchema<T>(
  parse: (u: unknown) => { ok: true; value: T } | { ok: false; error: string },
) {
  return v.pipe(
    v.unknown(),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const r = parse(dataset.value);
      if (r.ok) return r.value;
      addIssue({ message: r.error });
      return NEVER;
    }),
  ) as v.GenericSchema<unknown, T>;
}

export const AgentReadSchema = parsedSchema<Agent>(parseAgent);
export const StationReadSchema = parsedSchema<Station>(parseStation);
export const DefinitionReadSchema = parsedSchema<AgentDefinition>(parseAgentDefinition);
const kindOfName = (name: string): KindInfo => KINDS.find((k) => k.name === name)!;

/** `agent "x" in namespace "ns"`: how messages name an object. */
export const what = (kind: KindInfo, name: string, namespace: string | undefined): string =>
  `${kind.noun} "${name}"${namespace !== undefined ? ` in namespace "${namespace}"` : ''}`;

/** Unwraps a result, or throws the CliError of its API error about `subject`. */
export function must<T>(r: Result<T, KubeError>, subject: string): T {
  if (r.ok) return r.value;
  throw kubeFailure(r.error, subject);
}

/** The Agent `name`, parsed. */
export async function getAgent(t: Transport, namespace: string, name: string): Promise<Agent> {
  return must(
    await getObject(t, AGENTS_KIND.resource, { namespace, name }, AgentReadSchema),
    what(AGENTS_KIND, name, namespace),
  );
}

/** One object as the API server sent it (validated by its kind's parser), or the API error. */
export function getRaw(
  t: Transport,
  kind: KindInfo,
  namespace: string,
  name: string,
): Promise<Result<KubeObject, KubeError>> {
  return getObject(t, kind.resource, { namespace, name }, validatedSchema(kind));
}

/** What a LIST read: the valid objects, and one warning line per object its parser refused. */
export interface Listed {
  readonly items: readonly KubeObject[];
  readonly warnings: readonly string[];
}

/** Lists a kind (all namespaces when `namespace` is undefined). */
export async function listKind(
  t: Transport,
  kind: KindInfo,
  namespace: string | undefined,
  labelSelector?: string | undefined,
): Promise<Listed> {
  const r = must(
    await listAll(t, kind.resource, validatedSchema(kind), { namespace, labelSelector }),
    `${kind.name}${namespace !== undefined ? ` in namespace "${namespace}"` : ''}`,
  );
  return {
    items: r.items,
    warnings: r.invalid.map(
      (bad) =>
        `warning: skipped ${what(kind, bad.name, bad.namespace)}: it does not read as a valid ${kind.kind}: ${bad.message}`,
    ),
  };
}

/** Creates an Agent; a name already taken is one clear line. */
export async function createAgent(
  t: Transport,
  namespace: string,
  body: Readonly<Record<string, unknown>>,
  name: string | undefined,
): Promise<Agent> {
  const r = await createObject(t, AGENTS_KIND.resource, namespace, body, AgentReadSchema);
  if (!r.ok && r.error.kind === 'api' && r.error.reason === 'AlreadyExists' && name !== undefined)
    throw new CliError(`${what(AGENTS_KIND, name, namespace)} already exists`);
  return must(
    r,
    name !== undefined ? what(AGENTS_KIND, name, namespace) : `a new agent in namespace "${namespace}"`,
  );
}

/** Sets annotations of the Agent `name` (a merge patch with its uid: a new Agent of that name is not touched). */
export async function annotateAgent(
  t: Transport,
  namespace: string,
  agent: Agent,
  annotations: Readonly<Record<string, string>>,
): Promise<void> {
  const name = agent.metadata.name;
  must(
    await mergePatch(
      t,
      AGENTS_KIND.resource,
      { namespace, name },
      { metadata: { uid: agent.metadata.uid, annotations } },
      v.unknown(),
    ),
    what(AGENTS_KIND, name, namespace),
  );
}

/** Deletes one object (background propagation, as kubectl). */
export function deleteKind(
  t: Transport,
  kind: KindInfo,
  namespace: string,
  name: string,
): Promise<Result<void, KubeError>> {
  return deleteObject(t, kind.resource, { namespace, name }, { propagationPolicy: 'Background' });
}

/** A read that may be refused: the value, `forbidden`, `missing`, or the error for anything else. */
export type Optional<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'forbidden' | 'missing' }
  | { readonly kind: 'error'; readonly error: KubeError };

export function optional<T>(r: Result<T, KubeError>): Optional<T> {
  if (r.ok) return { kind: 'ok', value: r.value };
  if (isNotFound(r.error)) return { kind: 'missing' };
  if (isForbidden(r.error)) return { kind: 'forbidden' };
  return { kind: 'error', error: r.error };
}

/** The Station, when it can be read. */
export async function getStation(t: Transport, namespace: string, name: string): Promise<Optional<Station>> {
  return optional(
    await getObject(t, kindOfName('stations').resource, { namespace, name }, StationReadSchema),
  );
}

/** The AgentDefinition, when it can be read. */
export async function getDefinition(
  t: Transport,
  namespace: string,
  name: string,
): Promise<Optional<AgentDefinition>> {
  return optional(
    await getObject(t, kindOfName('definitions').resource, { namespace, name }, DefinitionReadSchema),
  );
}

/** The run's Job, when it can be read. */
export async function getJob(t: Transport, namespace: string, name: string): Promise<Optional<Job>> {
  return optional(await getObject(t, JOBS, { namespace, name }, JobSchema));
}

/** The pods of a Job (label `job-name`), newest first. */
export async function jobPods(t: Transport, namespace: string, jobName: string): Promise<Optional<Pod[]>> {
  const r = await listAll(t, PODS, PodSchema, { namespace, labelSelector: `job-name=${jobName}` });
  if (!r.ok) return optional(r);
  return { kind: 'ok', value: newestFirst(r.value.items) };
}

/** Pods newest first (creationTimestamp, then name). */
export function newestFirst(pods: readonly Pod[]): Pod[] {
  return [...pods].sort(
    (a, b) =>
      (Date.parse(b.metadata.creationTimestamp) || 0) - (Date.parse(a.metadata.creationTimestamp) || 0) ||
      b.metadata.name.localeCompare(a.metadata.name),
  );
}

export const EventReadSchema = v.object({
  ...ObjectEventSchema.entries,
  firstTimestamp: v.optional(v.nullable(v.string())),
  source: v.optional(v.nullable(v.object({ component: v.optional(v.nullable(v.string())) }))),
  reportingComponent: v.optional(v.nullable(v.string())),
});
export type EventRead = v.InferOutput<typeof EventReadSchema>;

/** The core/v1 Events about the object with `uid`. */
export async function objectEvents(
  t: Transport,
  namespace: string,
  uid: string,
): Promise<Optional<EventRead[]>> {
  const r = await listAll(t, EVENTS, EventReadSchema, {
    namespace,
    fieldSelector: `involvedObject.uid=${uid}`,
  });
  return r.ok ? { kind: 'ok', value: [...r.value.items] } : optional(r);
}
