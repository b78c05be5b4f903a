// The shell of servers (execution: server, issue 12): reading a server's objects for the core (live GETs, validated
// here, each of its own objects compared with the desired one by a server-side dry run), and the writes the core asks
// for: the API-key Secret (a random key, made here), a server object (created or replaced), a route deleted.
//
// Secrets are never read: the controller's grant on them is `create` only. Whether the API-key Secret exists is asked
// with a dry-run create of a Secret of its name that carries no data (`dryRun=All`: authorised, admitted and checked
// for a name collision like a real create, never stored): AlreadyExists says it exists, a success that it does not.

import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { type Agent, type AgentDefinition, API_VERSION, KIND_AGENT } from '../api/index.ts';
import {
  HTTPROUTE_API_VERSION,
  inputConfigMapName,
  SERVER_API_KEY_KEY,
  type ServerObject,
  type ServerObjects,
  serverApiKeySecretName,
  serverName,
} from '../jobs/index.ts';
import {
  CONFIG_MAPS,
  createObject,
  decodeJson,
  deleteObject,
  describeKubeError,
  getObject,
  isAlreadyExists,
  isConflict,
  isInvalid,
  isNotFound,
  type KubeError,
  KubeObjectSchema,
  ObjectMetaSchema,
  replaceObject,
  SECRETS,
  type Transport,
} from '../kube/index.ts';
import { type ResourceType, resourcePath } from '../kube/paths.ts';
import type { AgentRef } from '../reconcile/actions.ts';
import type { ApiKeyObservation, ServerChildObservation, ServerObservation } from '../reconcile/snapshot.ts';
import { err, ok, type Result } from '../shared/result.ts';

export const DEPLOYMENTS: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'deployments',
  kind: 'Deployment',
  namespaced: true,
};
export const SERVICES: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'services',
  kind: 'Service',
  namespaced: true,
};
export const HTTPROUTES: ResourceType = {
  group: 'gateway.networking.k8s.io',
  version: 'v1',
  plural: 'httproutes',
  kind: 'HTTPRoute',
  namespaced: true,
};

const RESOURCES: Readonly<Record<ServerObject['resource'], ResourceType>> = {
  deployments: DEPLOYMENTS,
  services: SERVICES,
  httproutes: HTTPROUTES,
};

const count = v.optional(v.pipe(v.number(), v.integer()), 0);

/** The fields of a server object the core compares (anything else is ignored). */
const ChildSchema = v.looseObject({
  metadata: ObjectMetaSchema,
  spec: v.optional(v.unknown()),
  status: v.optional(
    v.nullable(
      v.looseObject({
        observedGeneration: v.optional(v.number()),
        replicas: count,
        updatedReplicas: count,
        availableReplicas: count,
      }),
    ),
  ),
});
type Child = v.InferOutput<typeof ChildSchema>;

const InputSchema = v.looseObject({
  metadata: ObjectMetaSchema,
  data: v.optional(v.nullable(v.record(v.string(), v.string())), {}),
});

/** The Gateway API's group version as discovery lists it (404 when its CRDs are not installed). */
const GatewayApiSchema = v.looseObject({
  resources: v.optional(v.array(v.looseObject({ name: v.string() })), []),
});

function childOf(o: Child, withProgress: boolean): ServerChildObservation {
  const owner = (o.metadata.ownerReferences ?? []).find((r) => r.controller === true);
  const isAgent = owner !== undefined && owner.kind === KIND_AGENT && owner.apiVersion === API_VERSION;
  const status = o.status ?? undefined;
  return {
    kind: 'present',
    uid: o.metadata.uid ?? '',
    resourceVersion: o.metadata.resourceVersion ?? '',
    generation: o.metadata.generation,
    annotations: o.metadata.annotations ?? {},
    controllerUid: isAgent ? owner.uid : undefined,
    controllerName: isAgent ? owner.name : undefined,
    deleting: o.metadata.deletionTimestamp !== undefined && o.metadata.deletionTimestamp !== null,
    ...(withProgress
      ? {
          progress: {
            observedGeneration: status?.observedGeneration,
            replicas: status?.replicas ?? 0,
            updatedReplicas: status?.updatedReplicas ?? 0,
            availableReplicas: status?.availableReplicas ?? 0,
          },
        }
      : {}),
  };
}

interface ReadDeps {
  readonly transport: Transport;
  readonly timeoutMs: number;
}

/** JSON with object keys sorted, so two specs compare by content. */
function canonical(x: unknown): string {
  return JSON.stringify(x, (_k, value: unknown) =>
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? Object.fromEntries(
          Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : value,
  );
}

/**
 * Reads one server object; when it is this Agent's and `desired` is given, asks the API server whether replacing it
 * with `desired` would change its spec (a dry-run PUT: the server applies its defaults and canonical forms, so only
 * a real difference counts). A refused dry run leaves `matches` unknown (the write itself then says why).
 */
async function readChild(
  deps: ReadDeps,
  rt: ResourceType,
  namespace: string,
  name: string,
  agentUid: string,
  desired: ServerObject | undefined,
): Promise<Result<ServerChildObservation, KubeError>> {
  const r = await getObject(deps.transport, rt, { namespace, name }, ChildSchema, {
    timeoutMs: deps.timeoutMs,
  });
  if (!r.ok) return isNotFound(r.error) ? ok({ kind: 'absent' }) : r;
  const child = childOf(r.value, rt === DEPLOYMENTS);
  if (desired === undefined || child.kind !== 'present' || child.controllerUid !== agentUid || child.deleting)
    return ok(child);
  const dry = await deps.transport.request('PUT', resourcePath(rt, { namespace, name }), {
    body: {
      ...desired.manifest,
      metadata: { ...desired.manifest.metadata, resourceVersion: child.resourceVersion },
    },
    query: { dryRun: 'All' },
    timeoutMs: deps.timeoutMs,
  });
  if (!dry.ok) return ok(child);
  const would = decodeJson(dry.value.text, ChildSchema, `dry-run ${rt.kind} ${name}`);
  if (!would.ok) return ok(child);
  return ok({ ...child, matches: canonical(would.value.spec) === canonical(r.value.spec) });
}

/** Whether the API server serves HTTPRoutes (gateway.networking.k8s.io/v1). */
async function gatewayApiServed(deps: ReadDeps): Promise<Result<boolean, KubeError>> {
  const r = await deps.transport.request('GET', `/apis/${HTTPROUTE_API_VERSION}`, {
    timeoutMs: deps.timeoutMs,
  });
  if (!r.ok) return isNotFound(r.error) ? ok(false) : r;
  let body: unknown;
  try {
    body = JSON.parse(r.value.text);
  } catch {
    return ok(false);
  }
  const parsed = v.safeParse(GatewayApiSchema, body);
  return ok(parsed.success && parsed.output.resources.some((x) => x.name === 'httproutes'));
}

/** Label value of `agents.re-cinq.com/component` on a server's generated API-key Secret. */
const COMPONENT_API_KEY = 'server-api-key';

/**
 * The Secret a dry-run create of the API-key Secret sends: its name and labels, no data (nothing is stored; were
 * it stored by mistake, it would hold no key).
 */
export function apiKeyProbe(namespace: string, secretName: string): Record<string, unknown> {
  return {
    metadata: {
      name: secretName,
      namespace,
      labels: { 'agents.re-cinq.com/component': COMPONENT_API_KEY },
    },
    type: 'Opaque',
  };
}

/**
 * Whether the Secret `secretName` exists, without reading it: a dry-run create (`dryRun=All`) of a Secret of that
 * name with no data. 409 AlreadyExists: present; a success: absent; any other answer is the error.
 */
export async function probeApiKeySecret(
  deps: ReadDeps,
  namespace: string,
  secretName: string,
): Promise<Result<ApiKeyObservation, KubeError>> {
  const r = await createObject(
    deps.transport,
    SECRETS,
    namespace,
    apiKeyProbe(namespace, secretName),
    KubeObjectSchema,
    { timeoutMs: deps.timeoutMs, dryRun: true },
  );
  if (r.ok) return ok({ kind: 'absent' });
  return isAlreadyExists(r.error) ? ok({ kind: 'present' }) : r;
}

/**
 * Reads a server's objects: whether its API-key Secret exists (a dry-run create, see probeApiKeySecret: the
 * Secret itself is never read), its input ConfigMap, and, each dry-run against the object the controller would
 * write (`desired`), its Deployment, Service and, where the Gateway API is served, its HTTPRoute (read also when
 * the Station names no Gateway: a route left from before is deleted).
 */
export async function observeServer(
  deps: ReadDeps,
  agent: Agent,
  definition: AgentDefinition,
  desired: ServerObjects | undefined,
): Promise<Result<ServerObservation, string>> {
  const namespace = agent.metadata.namespace;
  const name = serverName(agent.metadata.name);
  const uid = agent.metadata.uid;
  const secretName = serverApiKeySecretName(agent, definition);
  const [apiKey, input, deployment, service, served] = await Promise.all([
    probeApiKeySecret(deps, namespace, secretName),
    getObject(
      deps.transport,
      CONFIG_MAPS,
      { namespace, name: inputConfigMapName(agent.metadata.name) },
      InputSchema,
      {
        timeoutMs: deps.timeoutMs,
      },
    ),
    readChild(deps, DEPLOYMENTS, namespace, name, uid, desired?.deployment),
    readChild(deps, SERVICES, namespace, name, uid, desired?.service),
    gatewayApiServed(deps),
  ]);
  if (!apiKey.ok)
    return err(
      `checking whether the API-key Secret ${secretName} exists (a dry-run create): ${describeKubeError(apiKey.error)}`,
    );
  if (!input.ok && !isNotFound(input.error))
    return err(`reading the input ConfigMap: ${describeKubeError(input.error)}`);
  // Another Agent's input (an earlier one of the same name) reads as absent: its create then waits it out.
  const inputOwner = input.ok
    ? (input.value.metadata.ownerReferences ?? []).find((r) => r.controller === true)
    : undefined;
  const observedInput: ServerObservation['input'] =
    input.ok && inputOwner?.uid === uid
      ? { kind: 'present', data: input.value.data ?? {} }
      : { kind: 'absent' };
  if (!deployment.ok) return err(`reading Deployment ${name}: ${describeKubeError(deployment.error)}`);
  if (!service.ok) return err(`reading Service ${name}: ${describeKubeError(service.error)}`);
  if (!served.ok) return err(`reading the Gateway API's discovery: ${describeKubeError(served.error)}`);
  let route: ServerObservation['route'] = { kind: 'unsupported' };
  if (served.value) {
    const read = await readChild(deps, HTTPROUTES, namespace, name, uid, desired?.route);
    if (!read.ok) return err(`reading HTTPRoute ${name}: ${describeKubeError(read.error)}`);
    route = read.value;
  }
  return ok({
    deployment: deployment.value,
    service: service.value,
    route,
    apiKey: apiKey.value,
    input: observedInput,
  });
}

/** Deletes a server object no longer wanted, only the one with `uid`; gone already or replaced counts as done. */
export async function deleteServerObject(
  deps: ReadDeps,
  resource: 'httproutes',
  namespace: string,
  name: string,
  uid: string,
): Promise<Result<void, KubeError>> {
  const r = await deleteObject(
    deps.transport,
    RESOURCES[resource],
    { namespace, name },
    { uid, timeoutMs: deps.timeoutMs },
  );
  if (r.ok || isNotFound(r.error) || isConflict(r.error)) return ok(undefined);
  return r;
}

/** A new API key: `sk-` and 48 hex digits (24 random bytes). */
export function newApiKey(): string {
  return `sk-${randomBytes(24).toString('hex')}`;
}

/** The API-key Secret of a server, owned by its Agent (garbage-collected with it). */
export function apiKeySecret(ref: AgentRef, secretName: string, key: string): Record<string, unknown> {
  return {
    metadata: {
      name: secretName,
      namespace: ref.namespace,
      labels: { 'agents.re-cinq.com/component': COMPONENT_API_KEY },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: KIND_AGENT,
          name: ref.name,
          uid: ref.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    type: 'Opaque',
    stringData: { [SERVER_API_KEY_KEY]: key },
  };
}

/** How writing a server object went. */
export type ServerWrite =
  | { readonly kind: 'written' }
  /** A precondition failed or the object appeared/vanished meanwhile: the next reconcile reads afresh. */
  | { readonly kind: 'superseded'; readonly what: string }
  | { readonly kind: 'rejected'; readonly message: string }
  | { readonly kind: 'error'; readonly error: KubeError };

/** Creates (or, with `replaceVersion`, replaces) a server object. */
export async function writeServerObject(
  deps: ReadDeps & { readonly fieldManager: string },
  object: ServerObject,
  replaceVersion: string | undefined,
): Promise<ServerWrite> {
  const rt = RESOURCES[object.resource];
  const { metadata } = object.manifest;
  const opts = { timeoutMs: deps.timeoutMs, fieldManager: deps.fieldManager };
  const body = {
    ...object.manifest,
    metadata: { ...metadata, ...(replaceVersion !== undefined ? { resourceVersion: replaceVersion } : {}) },
  };
  const r =
    replaceVersion === undefined
      ? await createObject(deps.transport, rt, metadata.namespace, body, ChildSchema, opts)
      : await replaceObject(
          deps.transport,
          rt,
          { namespace: metadata.namespace, name: metadata.name },
          body,
          ChildSchema,
          opts,
        );
  const what = `${object.manifest.kind} ${metadata.name}`;
  if (!r.ok) {
    if (isAlreadyExists(r.error) || isConflict(r.error) || isNotFound(r.error))
      return { kind: 'superseded', what: `${what} (${describeKubeError(r.error)})` };
    if (isInvalid(r.error) || (r.error.kind === 'api' && r.error.code === 400))
      return {
        kind: 'rejected',
        message: `${what} rejected by the API server: ${r.error.kind === 'api' ? r.error.message : describeKubeError(r.error)}`,
      };
    return { kind: 'error', error: r.error };
  }
  return { kind: 'written' };
}
