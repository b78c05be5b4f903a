// Test support (imported only by tests): a pure simulator of what executing one `Decision` does to the world one Agent
// is decided in — the API server's answers to every write when each one succeeds, the vendor's answers, and the
// shell's caches and per-reconcile bookkeeping (src/effects/execute.ts and src/effects/reconcile-agent.ts) — so that a
// property can decide again on the state a decision produced. What each simulated answer means for the decision is
// read from the executor contract (src/reconcile/executor-contract.ts), as the executor's handlers read it. Every
// action kind is handled explicitly: the switch in `applyAction` ends in an exhaustiveness check, so a new kind does
// not compile until it is simulated here.

import { type Agent, parseAgent, parseJob } from '../../api/index.ts';
import { jobNameFor } from '../../jobs/index.ts';
import type { Action, Decision } from '../actions.ts';
import { type Answer, outcomeOf } from '../executor-contract.ts';
import type {
  ApiKeyObservation,
  FoundObject,
  ServerChildObservation,
  ServerObservation,
  Snapshot,
} from '../snapshot.ts';
import { StationBook, type StationQueueView } from '../station/book.ts';
import { cleanupBackoffMs } from './batch.ts';
import { foundKey } from './found.ts';

/** Another Agent of the namespace as the shell's StationBook knows it. */
export interface SiblingState {
  readonly agent: Agent;
  /** This controller admitted it (it holds a slot until seen finished or gone). */
  readonly admitted: boolean;
  /** A Job it owns is in the Job cache. */
  readonly hasJob: boolean;
}

/** The candidate's own marks in the book. */
export interface SelfState {
  readonly admitted: boolean;
  readonly hasJob: boolean;
}

/**
 * The world one Agent is decided in: the snapshot its next `decide` sees (its `queue` always derived from the book
 * state below), what the book knows, and the objects the snapshot does not show (the run's ServiceAccount, bindings,
 * NetworkPolicy, input ConfigMap, Secrets), so that writing one of them again shows as a change of nothing.
 */
export interface SimWorld {
  readonly snapshot: Snapshot;
  /** The candidate was deleted for good (its last finalizer removed while it was being deleted). */
  readonly gone: boolean;
  readonly siblings: readonly SiblingState[];
  readonly self: SelfState;
  /** Keys (`Kind/namespace/name`) of the objects created for the run that no observation of the snapshot shows. */
  readonly objects: readonly string[];
  /** Serial number of the last object version the simulated API server made (resourceVersions, uids, ids). */
  readonly serial: number;
}

/** How executing one decision ended (the subset of `ExecuteOutcome` that succeeding calls can produce). */
export type SimOutcome =
  /** Every action ran: the reconcile ends; the next one starts from a fresh snapshot. */
  | { readonly kind: 'done' }
  /** A precondition failed (resourceVersion, uid, finalizer entry): the rest of the decision was dropped. */
  | { readonly kind: 'superseded'; readonly what: string }
  /** The Job already existed: the shell reads it and decides again in the same reconcile. */
  | { readonly kind: 'jobExists' }
  /** The vendor accepted the batch: the shell decides again in the same reconcile with `submission: submitted`. */
  | { readonly kind: 'batchSubmitted'; readonly id: string }
  /** A run object's name was taken (by this run's): the shell decides again with the object found. */
  | { readonly kind: 'found' };

export interface Applied {
  readonly world: SimWorld;
  readonly outcome: SimOutcome;
}

/** Book key of an Agent (`namespace/name`), as the shell keys it. */
const keyOf = (a: Agent): string => `${a.metadata.namespace}/${a.metadata.name}`;

/** The key of an Agent's Job in the book's Job index (`namespace/name`). */
const jobKeyOf = (a: Agent): string => `${a.metadata.namespace}/${jobNameFor(a.metadata.name)}`;

/**
 * The Station picture `candidate` sees, from a `StationBook` fed the way the shell feeds it: every Agent of the cache,
 * the Jobs seen in the Job cache, and the admissions this controller decided.
 */
export function queueView(
  candidate: Agent,
  siblings: readonly SiblingState[],
  self: SelfState,
): StationQueueView<Agent> {
  const book = new StationBook<Agent>();
  for (const s of siblings) {
    book.upsert(keyOf(s.agent), s.agent);
    if (s.hasJob) book.jobSeen(jobKeyOf(s.agent), s.agent.metadata.uid);
    if (s.admitted) book.admit(keyOf(s.agent));
  }
  book.upsert(keyOf(candidate), candidate);
  if (self.hasJob) book.jobSeen(jobKeyOf(candidate), candidate.metadata.uid);
  if (self.admitted) book.admit(keyOf(candidate));
  return book.view(keyOf(candidate)) ?? { holders: [], holdsSlot: false, ahead: 0, finished: [] };
}

// ------------------------------------------------------------------------------------------------ JSON helpers

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const isObject = (v: unknown): v is Record<string, Json> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The wire form of a value (what JSON on the API server holds: no undefined, Dates as strings). */
export function wire<T>(value: T): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}

/** RFC 7386 JSON merge patch: objects merge key by key, `null` deletes, anything else (arrays too) replaces. */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** JSON text with object keys sorted: equal for equal JSON values whatever their key order. */
export function canonical(value: unknown): string {
  const sort = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(sort);
    if (isObject(v))
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sort(v[k] as Json)]),
      );
    return v;
  };
  return JSON.stringify(sort(wire(value === undefined ? null : value)));
}

function unwrap<T>(r: { ok: true; value: T } | { ok: false; error: string }, what: string): T {
  if (!r.ok) throw new Error(`simulated API server: ${what}: ${r.error}`);
  return r.value;
}

/**
 * Whether two worlds are the same state for the next decision: the same snapshot (observations, the Agent with its
 * resourceVersion, the queue), the same book and the same objects. The serial counter is bookkeeping, not state.
 */
export function sameState(a: SimWorld, b: SimWorld): boolean {
  return canonical({ ...a, serial: 0 }) === canonical({ ...b, serial: 0 });
}

// ------------------------------------------------------------------------------------------------ the simulator

interface Draft {
  agent: Agent;
  gone: boolean;
  snapshot: Snapshot;
  siblings: SiblingState[];
  self: SelfState;
  objects: Set<string>;
  serial: number;
  createSent: boolean;
}

const next = (d: Draft): number => {
  d.serial += 1;
  return d.serial;
};

/** The Agent as the API server holds it after a write of its wire form `body` (resourceVersion bumped). */
function rewrite(d: Draft, body: Json): void {
  const parsed = unwrap(parseAgent(body), 'Agent');
  d.agent = {
    ...parsed,
    metadata: { ...parsed.metadata, resourceVersion: `${d.agent.metadata.resourceVersion}.${next(d)}` },
  };
}

/** The Agent's wire form. The parsed form is a faithful stand-in for the stored one: parsing it again is a no-op. */
const agentWire = (agent: Agent): Record<string, Json> => wire(agent) as Record<string, Json>;

/**
 * What the executor contract (src/reconcile/executor-contract.ts) says `answer` means for `action`, as the outcome
 * of the simulated execution (undefined: go on with the next action). `what` names a superseded write, `id` a
 * submitted batch. The answers simulated are those of calls that succeed or lose a race (404, 409, a failed test).
 */
function answered(action: Action, answer: Answer, what?: string, id?: string): SimOutcome | undefined {
  const variant =
    action.kind === 'deleteAgent'
      ? action.purpose
      : action.kind === 'saveMemory' && action.replace !== undefined
        ? 'replace'
        : undefined;
  const outcome = outcomeOf(action.kind, answer, variant);
  switch (outcome) {
    case 'continue':
      return undefined;
    case 'superseded':
      return { kind: 'superseded', what: what ?? action.kind };
    case 'decideAgain:job':
      return { kind: 'jobExists' };
    case 'decideAgain:submission:submitted':
      return { kind: 'batchSubmitted', id: id ?? '' };
    case 'decideAgain:found':
      return { kind: 'found' };
    default:
      throw new Error(`simulator: ${action.kind} answered ${answer} (${outcome}) is not simulated`);
  }
}

/**
 * A run object created under `key`: `ok`, or `found` (the contract's answer to its name being taken by this run's)
 * when it exists already.
 */
function created(d: Draft, action: Action, found: Answer, key: string): SimOutcome | undefined {
  const answer: Answer = d.objects.has(key) ? found : 'ok';
  d.objects.add(key);
  return answered(action, answer);
}

/**
 * A run binding or input created; one that exists already (this run's: only the run's own objects are simulated) is
 * read back and reported, as the shell does after a 409 (`existsFound`), for decide to judge.
 */
function createdOrFound(
  d: Draft,
  action: Extract<Action, { kind: 'createRunBinding' | 'createRunInput' }>,
  key: string,
): SimOutcome | undefined {
  if (!d.objects.has(key)) return created(d, action, 'ok', key);
  const agent = d.agent.metadata;
  const found: FoundObject =
    action.kind === 'createRunBinding'
      ? {
          key: foundKey(action),
          uid: `uid-${key}`,
          deleting: false,
          labels: action.binding.metadata.labels,
          annotations: {},
        }
      : {
          key: foundKey(action),
          uid: `uid-${key}`,
          deleting: false,
          controller: {
            uid: agent.uid,
            kind: 'Agent',
            apiVersion: 'agents.re-cinq.com/v1alpha1',
            name: agent.name,
          },
          labels: action.configMap.metadata.labels,
          annotations: action.configMap.metadata.annotations,
          // Nothing else moves in the simulated world: a retried start builds the same input.
          data: action.configMap.data,
        };
  d.snapshot = { ...d.snapshot, found: [...(d.snapshot.found ?? []), found] };
  return answered(action, 'existsFound');
}

/** Objects the snapshot does not observe, by `Kind/namespace/name`. */
const objectKey = (kind: string, namespace: string | undefined, name: string): string =>
  `${kind}/${namespace ?? ''}/${name}`;

/** The server observation with one child replaced (for server objects written or deleted). */
function withServerChild(
  server: ServerObservation,
  resource: 'deployments' | 'services' | 'httproutes',
  child: ServerChildObservation,
): ServerObservation {
  switch (resource) {
    case 'deployments':
      return { ...server, deployment: child };
    case 'services':
      return { ...server, service: child };
    case 'httproutes':
      return { ...server, route: child };
  }
}

function serverChild(server: ServerObservation, resource: 'deployments' | 'services' | 'httproutes') {
  return resource === 'deployments'
    ? server.deployment
    : resource === 'services'
      ? server.service
      : server.route;
}

/**
 * Runs one action against the simulated API server, vendor and caches; undefined to go on with the next action, an
 * outcome to stop the decision there (as `executeAction` does).
 */
function applyAction(d: Draft, action: Action, now: Date): SimOutcome | undefined {
  const s = d.snapshot;
  switch (action.kind) {
    // The run's own objects, which no observation of the snapshot shows: created, or found (409 AlreadyExists, this
    // run's), which the contract counts as done, so creating one again changes nothing.
    case 'createServiceAccount': {
      const m = action.serviceAccount.metadata;
      return created(d, action, 'alreadyExists', objectKey('ServiceAccount', m.namespace, m.name));
    }
    case 'createRunBinding': {
      const b = action.binding;
      const namespace = b.kind === 'RoleBinding' ? b.metadata.namespace : undefined;
      return createdOrFound(d, action, objectKey(b.kind, namespace, b.metadata.name));
    }
    case 'createNetworkPolicy': {
      const m = action.policy.metadata;
      return created(d, action, 'alreadyExists', objectKey('NetworkPolicy', m.namespace, m.name));
    }
    case 'createPromptToken':
    case 'createGatewayCredential':
      return created(
        d,
        action,
        'alreadyExists',
        objectKey('Secret', action.ref.namespace, action.secretName),
      );
    case 'createRunInput': {
      const m = action.configMap.metadata;
      const found = createdOrFound(d, action, objectKey('ConfigMap', m.namespace, m.name));
      // A server reads its input back (on `needs: 'server'`): it now holds this data.
      if (s.server !== undefined)
        d.snapshot = {
          ...s,
          server: { ...s.server, input: { kind: 'present', data: action.configMap.data } },
        };
      return found;
    }
    case 'deleteRunInput': {
      // uid precondition (only the run's own input is simulated): gone, to be created again.
      d.objects.delete(objectKey('ConfigMap', action.namespace, action.name));
      return answered(action, 'ok');
    }
    case 'deleteRunBindings': {
      // Every RoleBinding and ClusterRoleBinding labelled with the Agent's uid (only this run's are simulated).
      for (const k of [...d.objects])
        if (k.startsWith('RoleBinding/') || k.startsWith('ClusterRoleBinding/')) d.objects.delete(k);
      return answered(action, 'ok');
    }
    case 'createJob': {
      // 409 AlreadyExists: the shell reads the Job and decides again (its observation is already `present`).
      if (s.job.kind === 'present' && s.job.job.metadata.name === action.job.metadata.name)
        return answered(action, 'alreadyExists');
      d.createSent = true;
      const n = next(d);
      const job = unwrap(
        parseJob({
          ...(wire(action.job) as Record<string, Json>),
          metadata: {
            ...(wire(action.job.metadata) as Record<string, Json>),
            uid: `uid-job-sim-${n}`,
            resourceVersion: `job-rv-${n}`,
            creationTimestamp: now.toISOString(),
          },
          status: {},
        }),
        'Job',
      );
      // The Job cache shows it (the book counts it as the owner's slot); it has no pods yet.
      d.snapshot = {
        ...s,
        job: { kind: 'present', job, evidence: { kind: 'notGathered' } },
        ...(s.start !== undefined ? { start: { pods: [], createFailures: [] } } : {}),
      };
      d.self = { ...d.self, hasJob: true };
      return answered(action, 'ok');
    }
    case 'deleteJob': {
      // uid precondition; 404 and 409 count as done. Foreground propagation ends with the Job gone.
      if (s.job.kind !== 'present') return answered(action, 'notFound');
      if (s.job.job.metadata.uid !== action.uid) return answered(action, 'conflict');
      d.snapshot = { ...s, job: { kind: 'absent' } };
      d.self = { ...d.self, hasJob: false };
      return answered(action, 'ok');
    }
    case 'patchStatus': {
      if (d.gone || action.ref.uid !== d.agent.metadata.uid)
        return answered(action, 'notFound', 'status (404)');
      if (action.resourceVersion !== d.agent.metadata.resourceVersion)
        return answered(action, 'conflict', 'status (409)');
      const before = agentWire(d.agent);
      const status = mergePatch(before.status, wire(action.status));
      // An update that changes nothing is not written: the resourceVersion stays (as the API server does).
      if (canonical(status) !== canonical(before.status ?? null)) rewrite(d, { ...before, status });
      return answered(action, 'ok');
    }
    case 'deleteAgent': {
      // resourceVersion precondition; 404 counts as done; 409 stops a preemption and skips a prune.
      const i = d.siblings.findIndex((x) => x.agent.metadata.uid === action.ref.uid);
      const victim = d.siblings[i];
      if (victim === undefined) {
        if (action.ref.uid === d.agent.metadata.uid) throw new Error('simulator: an Agent deleted itself');
        return answered(action, 'notFound');
      }
      if (victim.agent.metadata.resourceVersion !== action.resourceVersion)
        return answered(action, 'conflict', `preemption of ${action.ref.name}`);
      // Siblings hold no finalizers: the delete removes them (and the book forgets them).
      if (victim.agent.metadata.finalizers.length > 0)
        throw new Error('simulator: siblings with finalizers are not simulated');
      d.siblings.splice(i, 1);
      return answered(action, 'ok');
    }
    case 'addFinalizer': {
      // JSON patch testing the resourceVersion; no finalizer can be added to an Agent being deleted (422).
      if (d.gone || action.ref.uid !== d.agent.metadata.uid)
        return answered(action, 'notFound', 'finalizer (404)');
      if (action.resourceVersion !== d.agent.metadata.resourceVersion)
        return answered(action, 'conflict', 'finalizer (409)');
      if (d.agent.metadata.deletionTimestamp !== undefined)
        return answered(action, 'invalid', 'finalizer (422, deleting)');
      const before = agentWire(d.agent);
      const finalizers = [...d.agent.metadata.finalizers, action.finalizer];
      rewrite(d, { ...before, metadata: { ...(before.metadata as Record<string, Json>), finalizers } });
      return answered(action, 'ok');
    }
    case 'removeFinalizer': {
      // JSON patch testing the entry at `index`; the last finalizer of an Agent being deleted lets it go.
      if (d.gone || action.ref.uid !== d.agent.metadata.uid)
        return answered(action, 'notFound', 'finalizer (404)');
      if (d.agent.metadata.finalizers[action.index] !== action.finalizer)
        return answered(action, 'invalid', 'finalizer (422)');
      const finalizers = d.agent.metadata.finalizers.filter((_, i) => i !== action.index);
      if (finalizers.length === 0 && d.agent.metadata.deletionTimestamp !== undefined) d.gone = true;
      else {
        const before = agentWire(d.agent);
        rewrite(d, { ...before, metadata: { ...(before.metadata as Record<string, Json>), finalizers } });
      }
      return answered(action, 'ok');
    }
    case 'submitBatch': {
      // The vendor accepts: the shell decides again at once with the id (same reconcile).
      const id = `batch-sim-${next(d)}`;
      d.snapshot = { ...s, submission: { kind: 'submitted', id } };
      return answered(action, 'ok', undefined, id);
    }
    case 'cleanupBatch':
      // Cancelled and deleted at the vendor: the poller has nothing more to say about it.
      if (s.batchState?.id === action.batchId) d.snapshot = { ...s, batchState: undefined };
      return answered(action, 'ok');
    case 'saveMemory': {
      // Right before the terminal patch of a Succeeded run, against the ConfigMap the snapshot observed (the world:
      // nothing else writes it here): a create of an absent one, or a replace at the version read. The ConfigMap
      // written is what the next decisions observe.
      if (d.agent.status.phase !== 'Running')
        throw new Error(`simulator: saveMemory on a ${d.agent.status.phase} Agent`);
      const observed = s.memorySave?.configMap;
      const consistent =
        action.replace === undefined
          ? observed?.kind === 'absent'
          : observed?.kind === 'present' &&
            observed.configMap.metadata.resourceVersion === action.replace.resourceVersion;
      if (!consistent) throw new Error('simulator: saveMemory not against the ConfigMap observed');
      const written = {
        ...action.configMap,
        metadata: { ...action.configMap.metadata, resourceVersion: `cm-${next(d)}` },
      };
      d.snapshot = {
        ...s,
        memorySave: {
          configMap: { kind: 'present', configMap: written },
          changed: s.memorySave?.changed ?? 0,
        },
      };
      d.objects.add(objectKey('ConfigMap', action.namespace, action.configMap.metadata.name));
      return answered(action, 'ok');
    }
    case 'createServerApiKey': {
      // An existing Secret is kept (409: someone else's; reported as taken when a uid was recorded); a created one's
      // uid is reported to the shell's observation store, which the next snapshots read until the status says it.
      const taken = s.server === undefined || s.server.apiKey.kind !== 'absent';
      if (s.server !== undefined && !taken) {
        const apiKey: ApiKeyObservation = { kind: 'present' };
        d.snapshot = {
          ...s,
          server: { ...s.server, apiKey },
          serverKey: { kind: 'created', uid: `uid-secret-${next(d)}` },
        };
      } else if (action.recorded) d.snapshot = { ...s, serverKey: { kind: 'taken' } };
      d.objects.add(objectKey('Secret', action.ref.namespace, action.secretName));
      return answered(action, taken ? 'alreadyExists' : 'ok');
    }
    case 'applyServerObject': {
      const server = s.server;
      if (server === undefined) throw new Error('simulator: a server object written without its observation');
      const observed = serverChild(server, action.object.resource);
      const what = `${action.object.manifest.kind} (409)`;
      if (action.replace !== undefined) {
        if (observed?.kind !== 'present') return answered(action, 'notFound', what);
        if (observed.resourceVersion !== action.replace.resourceVersion)
          return answered(action, 'conflict', what);
      } else if (observed?.kind === 'present') return answered(action, 'alreadyExists', what);
      const n = next(d);
      const m = action.object.manifest.metadata;
      const child: ServerChildObservation = {
        kind: 'present',
        uid: observed?.kind === 'present' ? observed.uid : `uid-${action.object.resource}-sim-${n}`,
        resourceVersion: `obj-rv-${n}`,
        generation: (observed?.kind === 'present' ? (observed.generation ?? 0) : 0) + 1,
        annotations: m.annotations,
        controllerUid: d.agent.metadata.uid,
        controllerName: d.agent.metadata.name,
        deleting: false,
        matches: true,
        ...(observed?.kind === 'present' && observed.progress !== undefined
          ? { progress: observed.progress }
          : {}),
      };
      d.snapshot = { ...s, server: withServerChild(server, action.object.resource, child) };
      return answered(action, 'ok');
    }
    case 'deleteServerObject': {
      const route = s.server?.route;
      if (s.server === undefined || route?.kind !== 'present') return answered(action, 'notFound');
      if (route.uid !== action.uid) return answered(action, 'conflict');
      d.snapshot = { ...s, server: { ...s.server, route: { kind: 'absent' } } };
      return answered(action, 'ok');
    }
    // The session store is not read by decide: its finalizer goes next (issue 29).
    case 'deleteSession':
    // The ledger is not read back by the decision of the Agent that wrote it (its finalizer goes next).
    case 'recordSpend':
    // Events, metrics and sink notifications change nothing the next decision reads.
    case 'recordEvent':
    case 'observeMetric':
    case 'notifySinks':
      return answered(action, 'ok');
    default: {
      const unknown: never = action;
      throw new Error(`simulator: unknown action ${JSON.stringify(unknown)}`);
    }
  }
}

/** The common part: the executor's refusals and the objects found are answers to this reconcile's writes only. */
function commonCarried(s: Snapshot, ended: boolean): Snapshot {
  if (!ended) return s;
  const {
    jobRejected: _j,
    serviceAccountRefused: _sa,
    inputRefused: _i,
    bindingRefused: _b,
    found: _f,
    ...rest
  } = s;
  return rest;
}

/** The job mode's: a live pod listing is made for one decision only; the next reconcile reads the watch cache again. */
function jobCarried(s: Snapshot, ended: boolean): Snapshot {
  if (!ended || s.start?.live !== true) return s;
  const { live: _l, ...start } = s.start;
  return { ...s, start };
}

/**
 * The batch mode's: a cleanup attempt's outcome is this reconcile's; after a failed one the shell set the backoff,
 * right before the decision that counted it.
 */
function batchCarried(s: Snapshot, ended: boolean, before: Agent, now: Date): Snapshot {
  if (!ended) return s;
  const { cleanup, ...rest } = s;
  if (cleanup?.kind !== 'failed') return rest;
  const attempt = (before.status.batchCleanupAttempts ?? 0) + 1;
  return { ...rest, cleanupNotBefore: new Date(now.getTime() + cleanupBackoffMs(attempt)) };
}

/**
 * The server mode's: a refused server object is this reconcile's answer; the shell forgets a key observation once
 * the Agent's status says it (serverKeyOf), whether or not the reconcile ended.
 */
function serverCarried(s: Snapshot, ended: boolean): Snapshot {
  let out = s;
  if (ended) {
    const { serverRejected: _sr, ...rest } = out;
    out = rest;
  }
  const key = out.serverKey;
  const recorded = out.agent.status.apiKeySecretUID;
  if (key !== undefined && (key.kind === 'created' ? recorded === key.uid : recorded === undefined)) {
    const { serverKey: _k, ...rest } = out;
    out = rest;
  }
  return out;
}

/**
 * The world after the shell executed `decision` (every call succeeding), and how it ended. Mirrors
 * `reconcileOnce`: a decision that starts a run admits the Agent in the book first (given back when its Job was
 * never asked for, or a batch admission's write was refused); a submission record tells the shell nothing is
 * outstanding at the vendor. When the decision ran to its end (or was superseded), the reconcile is over: the next
 * one starts without the executor's feedback of this one (refusals, the cleanup outcome), with the cleanup backoff
 * the shell set after a failed cleanup. Within one reconcile (a Job that already existed, a batch just submitted)
 * the snapshot is kept and decided again.
 *
 * What the next reconcile reads again (the Job and its pod evidence, credentials, the memory, EndpointSlices, the
 * vendor search and the poller's observation, a server's objects) is kept as observed, changed only by the actions
 * that change it: nothing else moves in the world meanwhile. An observation the snapshot lacks stays lacking (decide
 * then asks for it again with `needs`, which writes nothing). A Job deleted with Foreground propagation is taken to
 * be gone (its pods first: the moment it is still listed with a deletionTimestamp is not simulated).
 */
export function applyDecision(world: SimWorld, decision: Decision, now: Date): Applied {
  if (world.gone) throw new Error('simulator: deciding about an Agent that is gone');
  const d: Draft = {
    agent: world.snapshot.agent,
    gone: false,
    snapshot: world.snapshot,
    siblings: [...world.siblings],
    self: world.self,
    objects: new Set(world.objects),
    serial: world.serial,
    createSent: false,
  };
  const starts = decision.admits === true || decision.actions.some((a) => a.kind === 'createJob');
  if (starts) d.self = { ...d.self, admitted: true };
  let outcome: SimOutcome = { kind: 'done' };
  for (const action of decision.actions) {
    // Each action sees the Agent as the previous ones left it.
    d.snapshot = { ...d.snapshot, agent: d.agent };
    const stop = applyAction(d, action, now);
    if (stop !== undefined) {
      outcome = stop;
      break;
    }
  }
  const createsJob = decision.actions.some((a) => a.kind === 'createJob');
  if (starts && (createsJob ? !d.createSent : outcome.kind === 'superseded'))
    d.self = { ...d.self, admitted: false };
  let snapshot: Snapshot = { ...d.snapshot, agent: d.agent };
  if (decision.submissionRecord === true && outcome.kind === 'done')
    snapshot = { ...snapshot, submission: { kind: 'none' } };
  // What the next reconcile starts from, part by part, as the shell builds each part again
  // (src/effects/reconcile-agent.ts): this reconcile's own answers are forgotten when it ended.
  const ended = outcome.kind === 'done' || outcome.kind === 'superseded';
  const before = world.snapshot.agent;
  snapshot = commonCarried(snapshot, ended);
  snapshot = jobCarried(snapshot, ended);
  snapshot = batchCarried(snapshot, ended, before, now);
  snapshot = serverCarried(snapshot, ended);
  // The book saw every change in the same turn: the Station picture of the next decision.
  if (!d.gone) snapshot = { ...snapshot, queue: queueView(snapshot.agent, d.siblings, d.self) };
  return {
    world: {
      snapshot,
      gone: d.gone,
      siblings: d.siblings,
      self: d.self,
      objects: [...d.objects].sort(),
      serial: d.serial,
    },
    outcome,
  };
}
