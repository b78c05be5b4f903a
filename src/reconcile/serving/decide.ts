// The decision rows of a server (execution: server, issue 12): an Agent whose recipe is served behind a URL instead
// of run once. Pending → its objects (the run's ServiceAccount, bindings and NetworkPolicy; the API-key Secret; the
// input ConfigMap; the Deployment, Service and, when the Station names a Gateway and the Gateway API is installed,
// the HTTPRoute) and phase Serving. Serving → every poll, each object is compared with what it should be: a missing
// one is created again, an edited one (the API server's dry run of the desired object differs from it) or an
// outdated one (its spec hash is not the recipe's) is written back; Ready follows the Deployment's availability. It has no
// deadline: it ends when its Agent is deleted (garbage collection removes the objects; the cleanup finalizer, if it
// holds one, its cluster-scoped bindings).

import type { Agent, AgentDefinition, Station } from '../../api/index.ts';
import {
  ANNOTATION_SPEC_HASH,
  type BuildJobInput,
  buildJob,
  buildRunInput,
  buildServerObjects,
  generatesApiKey,
  type JobManifest,
  runHoldsToken,
  type ServerObject,
  type ServerObjects,
  serverApiKeySecretName,
  serverReplicas,
  serverUrl,
} from '../../jobs/index.ts';
import type { Action, Decision } from '../actions.ts';
import { addCleanupFinalizer, holdsCleanupFinalizer } from '../agent/cleanup.ts';
import { runObjectActions } from '../agent/run-objects.ts';
import { gatewayCredentialAction, runGrant } from '../agent/start.ts';
import {
  agentRef,
  clip,
  event,
  formatStatusTime,
  MAX_CONDITION_MESSAGE,
  statusPatch,
} from '../agent/status.ts';
import { type ConditionUpdate, conditionsSatisfied } from '../conditions.ts';
import { runLimits, withPolicyTools } from '../policy/check.ts';
import { CONDITION_READY, failureInput, REASON } from '../reasons.ts';
import type {
  ApiKeyObservation,
  ServerChildObservation,
  ServerObservation,
  ServerSnapshot,
} from '../snapshot/server.ts';
import { isServer, serverBuildTime } from './plan.ts';

/** What to do about one server object. */
type ChildPlan =
  | { readonly kind: 'ok' }
  | { readonly kind: 'create' }
  | { readonly kind: 'replace'; readonly resourceVersion: string; readonly why: 'edited' | 'outdated' }
  /** Left by an earlier Agent of the same name, or being deleted: garbage collection removes it first. */
  | { readonly kind: 'wait' }
  | { readonly kind: 'foreign' };

/** Compares an object as read with the one the controller would write. */
export function planChild(agent: Agent, observed: ServerChildObservation, desired: ServerObject): ChildPlan {
  if (observed.kind === 'absent') return { kind: 'create' };
  if (observed.controllerUid !== agent.metadata.uid) {
    if (observed.deleting) return { kind: 'wait' };
    return observed.controllerName === agent.metadata.name ? { kind: 'wait' } : { kind: 'foreign' };
  }
  if (observed.deleting) return { kind: 'wait' };
  const replace = (why: 'edited' | 'outdated'): ChildPlan => ({
    kind: 'replace',
    resourceVersion: observed.resourceVersion,
    why,
  });
  if (
    observed.annotations[ANNOTATION_SPEC_HASH] !== desired.manifest.metadata.annotations[ANNOTATION_SPEC_HASH]
  )
    return replace('outdated');
  // The API server's own verdict (a dry-run replace): defaults and canonical forms cannot look like an edit.
  return observed.matches === false ? replace('edited') : { kind: 'ok' };
}

/** The objects to compare, with what was read of each (the route only when it should exist and can). */
function children(
  objects: ServerObjects,
  observed: ServerObservation,
): { readonly object: ServerObject; readonly observed: ServerChildObservation }[] {
  const list = [
    { object: objects.service, observed: observed.service },
    { object: objects.deployment, observed: observed.deployment },
  ];
  const route = observed.route;
  if (objects.route !== undefined && route !== undefined && route.kind !== 'unsupported')
    list.push({ object: objects.route, observed: route });
  return list;
}

/**
 * Why the API key cannot be used, or undefined when it can: only a named Secret that does not exist (a generated key
 * about to be made counts as usable). What an existing Secret holds is not known here (the controller never reads
 * Secrets): a named Secret without the key `api-key` keeps the pods from starting (the kubelet says why).
 */
function apiKeyProblem(
  agent: Agent,
  definition: AgentDefinition,
  key: ApiKeyObservation,
): string | undefined {
  if (key.kind === 'present' || generatesApiKey(definition)) return undefined;
  return `Secret ${serverApiKeySecretName(agent, definition)} not found`;
}

/** Ready of a server: the API key, then the Deployment's rollout and availability (only a Deployment of its own). */
export function serverReadiness(
  agent: Agent,
  station: Station,
  definition: AgentDefinition,
  observed: ServerObservation,
  notes: readonly string[],
): ConditionUpdate {
  const ready = (status: 'True' | 'False', reason: string, message: string): ConditionUpdate => ({
    type: CONDITION_READY,
    status,
    reason,
    message: clip([message, ...notes].join('; '), MAX_CONDITION_MESSAGE),
  });
  const keyProblem = apiKeyProblem(agent, definition, observed.apiKey);
  if (keyProblem !== undefined) return ready('False', REASON.serverApiKeyMissing, keyProblem);
  const desired = serverReplicas(agent, station);
  if (desired === 0)
    return ready(
      'False',
      REASON.suspended,
      agent.spec.suspend === true
        ? 'Scaled to zero: spec.suspend is true'
        : `Scaled to zero: Station ${station.metadata.name} asks for 0 replicas`,
    );
  const d = observed.deployment;
  const progress = d.kind === 'present' && d.controllerUid === agent.metadata.uid ? d.progress : undefined;
  if (d.kind === 'absent' || progress === undefined)
    return ready('False', REASON.serverProgressing, 'Waiting for the Deployment');
  const rolledOut =
    (progress.observedGeneration ?? 0) >= (d.generation ?? 0) && progress.updatedReplicas >= desired;
  const text = `${progress.availableReplicas} of ${desired} replica${desired === 1 ? '' : 's'} available`;
  if (rolledOut && progress.availableReplicas >= desired) return ready('True', REASON.serverAvailable, text);
  return ready('False', REASON.serverProgressing, rolledOut ? text : `${text}, rolling out`);
}

/**
 * What a server of this snapshot is built from: the Job builder's input as of the Agent's creation, with the policy's
 * tool gating and limits. Undefined without a Station and a definition.
 */
export function serverRequest(s: ServerSnapshot): BuildJobInput | undefined {
  const { agent, station, definition } = s;
  if (station === null || definition === null) return undefined;
  const policy = s.policy?.kind === 'found' ? s.policy.policy : undefined;
  return {
    agent,
    station,
    definition: withPolicyTools(definition, policy),
    agentImage: s.options.agentImage,
    now: serverBuildTime(agent),
    limits: runLimits(policy),
    ...(s.options.tracing !== undefined ? { tracing: { tracesUrl: s.options.tracing.runTracesUrl } } : {}),
    // The same run env as at its start: behind the model gateway, the credential and the gateway's URLs (issue 28).
    ...(s.options.gateway !== undefined ? { gateway: s.options.gateway } : {}),
  };
}

/**
 * The server objects of a build, with the input the pods read at start (its hash rolls them). The API key is not
 * part of them: the pods read it from their mounted Secret, live.
 */
function objectsOf(s: ServerSnapshot, build: ServerBuild): ServerObjects {
  return buildServerObjects({
    agent: s.agent,
    station: build.request.station,
    job: build.job,
    apiKeySecret: serverApiKeySecretName(s.agent, build.request.definition),
    inputData: buildRunInput(build.request).data,
  });
}

/**
 * The objects the controller would write for this server now (the shell dry-runs them to learn whether what exists
 * still matches); undefined when they cannot be built.
 */
export function desiredServerObjects(
  s: ServerSnapshot,
  build: (request: BuildJobInput) => ReturnType<typeof buildJob> = buildJob,
): ServerObjects | undefined {
  const request = serverRequest(s);
  if (request === undefined || !isServer(s.definition)) return undefined;
  const built = build(request);
  return built.ok ? objectsOf(s, { request, job: built.value }) : undefined;
}

/** What a server's build needs besides the Job builder's input. */
export interface ServerBuild {
  readonly request: BuildJobInput;
  readonly job: JobManifest;
}

interface PlannedObjects {
  readonly actions: Action[];
  readonly notes: string[];
  readonly foreign: string | undefined;
  /** Some object of an earlier Agent of the same name is still there. */
  readonly waiting: boolean;
  readonly routed: boolean;
}

/** The writes that bring a server's objects to what they should be, with their Events, and the notes for Ready. */
function reconcileObjects(
  s: ServerSnapshot,
  build: ServerBuild,
  objects: ServerObjects,
  observed: ServerObservation,
  starting: boolean,
): PlannedObjects {
  const { agent } = s;
  const ref = agentRef(agent);
  const actions: Action[] = [];
  const notes: string[] = [];
  let foreign: string | undefined;
  let waiting = false;
  // The input (the system prompt): made again when deleted, replaced when the recipe changed it, before the
  // Deployment that mounts it rolls.
  const input = buildRunInput(build.request);
  if (observed.input !== undefined) {
    const current = observed.input.kind === 'present' && sameData(observed.input.data, input.data);
    if (!current) {
      actions.push({ kind: 'createRunInput', configMap: input });
      if (!starting && observed.input.kind === 'absent')
        actions.push(
          event(
            ref,
            'Warning',
            REASON.serverRepaired,
            `ConfigMap ${input.metadata.name} was missing: created again`,
          ),
        );
    }
  }
  for (const child of children(objects, observed)) {
    const plan = planChild(agent, child.observed, child.object);
    const what = `${child.object.manifest.kind} ${child.object.manifest.metadata.name}`;
    switch (plan.kind) {
      case 'ok':
        break;
      case 'create':
        actions.push({ kind: 'applyServerObject', ref, object: child.object });
        if (!starting && child.object.resource !== 'httproutes')
          actions.push(event(ref, 'Warning', REASON.serverRepaired, `${what} was missing: created again`));
        else if (!starting) actions.push(event(ref, 'Normal', REASON.serverUpdated, `${what} created`));
        break;
      case 'replace':
        actions.push({
          kind: 'applyServerObject',
          ref,
          object: child.object,
          replace: { resourceVersion: plan.resourceVersion },
        });
        actions.push(
          plan.why === 'edited'
            ? event(ref, 'Warning', REASON.serverRepaired, `${what} was changed: written back`)
            : event(ref, 'Normal', REASON.serverUpdated, `${what} updated to the current recipe and Station`),
        );
        break;
      case 'wait':
        waiting = true;
        notes.push(`${what} of an earlier Agent is being removed`);
        break;
      case 'foreign':
        foreign = `${what} already exists and is not owned by this Agent`;
        break;
    }
  }
  // A route no longer wanted (the Station names no Gateway now) goes: it would keep routing traffic here.
  const route = observed.route;
  if (
    objects.route === undefined &&
    route?.kind === 'present' &&
    route.controllerUid === agent.metadata.uid &&
    !route.deleting
  ) {
    const name = objects.service.manifest.metadata.name;
    actions.push(
      { kind: 'deleteServerObject', ref, resource: 'httproutes', name, uid: route.uid },
      event(ref, 'Normal', REASON.serverUpdated, `HTTPRoute ${name} deleted: the Station names no Gateway`),
    );
  }
  if (objects.route !== undefined && route?.kind === 'unsupported')
    notes.push('no HTTPRoute: the Gateway API is not installed');
  const routed = objects.route !== undefined && route !== undefined && route.kind !== 'unsupported';
  return { actions, notes, foreign, waiting, routed };
}

function sameData(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}

/**
 * Pending → Serving: the server's objects and the status. A generated API key is made first (the pods mount its
 * Secret: made before them, they start at once); objects an earlier Agent of the same name left are waited out;
 * someone else's fail the Agent.
 */
export function decideServerStart(
  s: ServerSnapshot,
  now: Date,
  station: Station,
  definition: AgentDefinition,
  build: ServerBuild,
  fail: (reason: string, failureReason: string) => Decision,
): Decision {
  const { agent } = s;
  if (s.serverRejected !== undefined) return fail(REASON.serverRejected, s.serverRejected.message);
  if (runHoldsToken(definition) && !holdsCleanupFinalizer(agent))
    return { actions: [addCleanupFinalizer(agent)] };
  const record = recordServerKey(s, now);
  if (record !== undefined) return record;
  const observed = s.server;
  if (observed === undefined) return { actions: [], needs: 'server' };
  if (generatesApiKey(definition) && observed.apiKey.kind === 'absent') {
    // The key first: the pods mount its Secret, and wait for it while it is missing.
    return {
      actions: [
        {
          kind: 'createServerApiKey',
          ref: agentRef(agent),
          secretName: serverApiKeySecretName(agent, definition),
          recorded: agent.status.apiKeySecretUID !== undefined,
        },
      ],
      requeueAfterMs: 1,
    };
  }
  if (
    generatesApiKey(definition) &&
    observed.apiKey.kind === 'present' &&
    agent.status.apiKeySecretUID === undefined
  ) {
    // A Secret of the generated name that this controller did not create for this Agent (it records the uid of the
    // one it creates): never used, since whoever made it knows its key. An earlier Agent's goes with that Agent (the
    // garbage collector), then the key is made; any other stays until someone deletes it. Looked at every poll.
    const name = serverApiKeySecretName(agent, definition);
    const taken: ConditionUpdate = {
      type: CONDITION_READY,
      status: 'False',
      reason: REASON.serverNameTaken,
      message: apiKeyTakenMessage(name, 'not started until it is gone'),
    };
    const requeueAfterMs = s.options.requeueMs;
    const stamped = { ...taken, observedGeneration: agent.metadata.generation };
    if (agent.status.phase === 'Pending' && conditionsSatisfied(agent.status.conditions, [stamped]))
      return { actions: [], requeueAfterMs };
    return {
      actions: [
        statusPatch(agent, { phase: 'Pending' }, [taken], now),
        event(agentRef(agent), 'Warning', taken.reason, taken.message),
      ],
      requeueAfterMs,
    };
  }
  const objects = objectsOf(s, build);
  const planned = reconcileObjects(s, build, objects, observed, true);
  if (planned.foreign !== undefined) return fail(REASON.serverNameTaken, planned.foreign);
  if (planned.waiting) return { actions: [], requeueAfterMs: STALE_OBJECT_RETRY_MS };
  const url = serverUrl(agent, station, planned.routed);
  const serviceName = objects.service.manifest.metadata.name;
  const ready = serverReadiness(agent, station, definition, observed, planned.notes);
  const created = [
    objects.deployment,
    objects.service,
    ...(planned.routed && objects.route ? [objects.route] : []),
  ]
    .map((o) => `${o.manifest.kind} ${o.manifest.metadata.name}`)
    .join(', ');
  const input = buildRunInput(build.request);
  // Behind the model gateway (issue 28) the server's pods hold its credential, not the keys; its grant on status.
  const grant = runGrant(s, { definition, station });
  return {
    actions: [
      ...runObjectActions(s, station, definition),
      ...(grant !== undefined ? [gatewayCredentialAction(s)] : []),
      // Made here unless the shell read it already (then planned.actions has it when it must change).
      ...(observed.input === undefined ? [{ kind: 'createRunInput' as const, configMap: input }] : []),
      ...planned.actions,
      statusPatch(
        agent,
        {
          phase: 'Serving',
          startedAt: formatStatusTime(now),
          serviceName,
          url,
          ...(grant !== undefined ? { gateway: grant } : {}),
        },
        [ready],
        now,
      ),
      event(agentRef(agent), 'Normal', REASON.serverCreated, `Serving at ${url} (${created})`),
    ],
    requeueAfterMs: s.options.requeueMs,
  };
}

/**
 * What the executor's last key create met, recorded on the status (issue 27 §2): a created Secret's uid goes to
 * `status.apiKeySecretUID` (only a Secret this controller created is ever used); after a create that met a Secret it
 * did not make, a uid recorded before (a rotation) is cleared, so the next decision sees the name taken. One merge
 * patch with the resourceVersion precondition, then the server is looked at again; a patch that fails is decided
 * again on the next reconcile (the shell keeps the observation until the status says it).
 */
export function recordServerKey(s: ServerSnapshot, now: Date): Decision | undefined {
  const key = s.serverKey;
  const recorded = s.agent.status.apiKeySecretUID;
  if (key?.kind === 'created' && recorded !== key.uid)
    return { actions: [statusPatch(s.agent, { apiKeySecretUID: key.uid }, [], now)], requeueAfterMs: 1 };
  if (key?.kind === 'taken' && recorded !== undefined)
    return { actions: [statusPatch(s.agent, { apiKeySecretUID: null }, [], now)], requeueAfterMs: 1 };
  return undefined;
}

/** Re-check period while objects of an earlier Agent of the same name wait for garbage collection. */
export const STALE_OBJECT_RETRY_MS = 2000;

/**
 * Serving: drift repair and Ready. `build` is undefined when the current recipe or Station cannot be built (then the
 * running objects are kept and Ready says why: `buildProblem`).
 */
export function decideServing(
  s: ServerSnapshot,
  now: Date,
  build: ServerBuild | undefined,
  buildProblem: string | undefined,
): Decision {
  const { agent, station, definition } = s;
  const record = recordServerKey(s, now);
  if (record !== undefined) return record;
  const requeue = { requeueAfterMs: s.options.requeueMs };
  const keep = (reason: string, message: string): Decision =>
    readyOnly(
      s,
      now,
      { type: CONDITION_READY, status: 'False', reason, message: clip(message, MAX_CONDITION_MESSAGE) },
      requeue,
    );
  if (station === null || definition === null || build === undefined) {
    // The recipe, the Station or their build is gone: the server keeps running as it is, and Ready says so.
    const message =
      buildProblem ??
      (s.invalidReference !== undefined
        ? `${s.invalidReference.kind} ${s.invalidReference.name} is invalid: ${s.invalidReference.message}`
        : 'the Station or the AgentDefinition was deleted');
    return keep(REASON.serverBuildFailed, `${message}; the server keeps its current objects`);
  }
  if (!isServer(definition))
    return keep(
      REASON.serverBuildFailed,
      `AgentDefinition ${definition.metadata.name} is no longer execution: server; the server keeps its current objects (delete the Agent to stop it)`,
    );
  if (s.serverRejected !== undefined) return keep(REASON.serverRejected, s.serverRejected.message);
  if (s.inputRefused !== undefined) return keep(REASON.serverRejected, failureInput(s.inputRefused.message));
  const observed = s.server;
  if (observed === undefined) return { actions: [], needs: 'server' };
  if (generatesApiKey(definition) && observed.apiKey.kind === 'absent') {
    // A new key first (the pods read it from their mounted Secret once their kubelet refreshes it: no rollout);
    // the other objects are looked at right after.
    const ref = agentRef(agent);
    const name = serverApiKeySecretName(agent, definition);
    return {
      actions: [
        {
          kind: 'createServerApiKey',
          ref,
          secretName: name,
          recorded: agent.status.apiKeySecretUID !== undefined,
        },
        event(ref, 'Warning', REASON.serverRepaired, `API-key Secret ${name} was missing: making a new key`),
      ],
      requeueAfterMs: 1,
    };
  }
  // A key Secret of the generated name that is not the one this controller made (its record was cleared when its
  // create of a new key met someone else's Secret, or was never made): the pods must not serve with a key someone
  // else knows, so the server is scaled to zero until that Secret is gone.
  const keyTaken =
    generatesApiKey(definition) &&
    observed.apiKey.kind === 'present' &&
    agent.status.apiKeySecretUID === undefined;
  const view = keyTaken ? { ...s, agent: { ...agent, spec: { ...agent.spec, suspend: true } } } : s;
  const objects = objectsOf(view, build);
  const planned = reconcileObjects(view, build, objects, observed, false);
  // Someone else's object of its name is left alone, and said so; its own objects are still looked after.
  const ready: ConditionUpdate =
    planned.foreign !== undefined
      ? {
          type: CONDITION_READY,
          status: 'False',
          reason: REASON.serverNameTaken,
          message: clip(planned.foreign, MAX_CONDITION_MESSAGE),
        }
      : keyTaken
        ? {
            type: CONDITION_READY,
            status: 'False',
            reason: REASON.serverNameTaken,
            message: apiKeyTakenMessage(
              serverApiKeySecretName(agent, definition),
              'scaled to zero until it is gone',
            ),
          }
        : serverReadiness(agent, station, definition, observed, planned.notes);
  const url = serverUrl(agent, station, planned.routed);
  const serviceName = objects.service.manifest.metadata.name;
  const stamped = { ...ready, observedGeneration: agent.metadata.generation };
  const statusCurrent =
    conditionsSatisfied(agent.status.conditions, [stamped]) &&
    agent.status.url === url &&
    agent.status.serviceName === serviceName;
  const actions: Action[] = [...planned.actions];
  if (!statusCurrent) {
    actions.push(statusPatch(agent, { url, serviceName }, [ready], now));
    const was = agent.status.conditions?.find((c) => c.type === CONDITION_READY);
    if (was?.status !== ready.status || was?.reason !== ready.reason)
      actions.push(
        event(agentRef(agent), ready.status === 'True' ? 'Normal' : 'Warning', ready.reason, ready.message),
      );
  }
  return { actions, ...requeue };
}

/** Why a Secret of the generated key's name is not used, and what to do. */
function apiKeyTakenMessage(name: string, consequence: string): string {
  return `Secret ${name} is not the key Secret this controller made for this Agent (status.apiKeySecretUID does not record it: someone else's, an earlier Agent's, or a create whose record failed): its key is not used, the server is ${consequence}; delete it and a new key is made`;
}

/** Only Ready changes (patched and announced once), the objects are left as they are. */
function readyOnly(
  s: ServerSnapshot,
  now: Date,
  ready: ConditionUpdate,
  requeue: { requeueAfterMs: number },
): Decision {
  const { agent } = s;
  const stamped = { ...ready, observedGeneration: agent.metadata.generation };
  if (conditionsSatisfied(agent.status.conditions, [stamped])) return { actions: [], ...requeue };
  return {
    actions: [
      statusPatch(agent, {}, [ready], now),
      event(agentRef(agent), 'Warning', ready.reason, ready.message),
    ],
    ...requeue,
  };
}
