// The trigger table: which watch event or timer wakes which Agent keys, and why (docs/design/wiring.md). The table
// is data; `createTriggers` interprets it. Each key is queued with the trigger's reason, which the reconcile's debug
// line shows. What a watch event does to the caches (the book, the start index, the batch poller) happens before
// its triggers fire, in the wiring (run-controller.ts).

import { type Agent, SESSION_STATE_FINALIZER } from '../api/index.ts';
import { parseCachedJob } from '../effects/gather.ts';
import type { KubeObject } from '../kube/index.ts';
import { showsStartProblem } from '../reconcile/agent/starting.ts';
import {
  isJobFinished,
  isTerminal,
  type LaneStation,
  laneKey,
  type StationBook,
  wakeableHeads,
} from '../reconcile/index.ts';
import { termStartKeys } from '../reconcile/station/wake.ts';
import type { Change } from '../runtime/index.ts';

/** Why a key was queued (carried on the queue entry; the work queue adds `retry` and `requeue` itself). */
export type ReconcileReason =
  | 'agent-changed'
  | 'slot-may-have-freed'
  | 'station-changed'
  | 'definition-changed'
  | 'policy-changed'
  | 'endpoints-changed'
  | 'job-changed'
  | 'start-problem'
  | 'batch-ended'
  | 'poll'
  | 'server-recheck'
  | 'term-start'
  | 'session-history';

/** What each source hands its triggers. */
export interface SourceEvents {
  /** The Agent watch (after the book recorded the change). */
  readonly agent: Change<Agent>;
  /** The Job watch, of Jobs the controller owns (after the book recorded it). */
  readonly job: Change<KubeObject>;
  readonly station: Change<KubeObject>;
  readonly definition: Change<KubeObject>;
  /** AgentPolicies are cluster-scoped: a change concerns every Station. */
  readonly policy: Change<KubeObject>;
  /** EndpointSlices of Services (the dependencies gate). */
  readonly endpointSlice: Change<KubeObject>;
  /**
   * What keeps a run's pod from starting changed (a Pending pod or a FailedCreate Event of Job `job`, from the start
   * index): `blocked` when it is kept from starting now.
   */
  readonly startProblem: { readonly job: string; readonly blocked: boolean };
  /** The batch poller saw the vendor batch of Agent `key` end. */
  readonly batchEnded: { readonly key: string };
  /** The periodic poll of a term (after its LIST and sweeps). */
  readonly poll: undefined;
  /** A new leadership term, its caches re-listed. */
  readonly termStart: undefined;
}
export type Source = keyof SourceEvents;

/** One key to wake; `urgent` keys are taken before every ordinary one (a result ahead of a burst of new Agents). */
export interface Wake {
  readonly key: string;
  readonly urgent?: boolean;
}

/** What the triggers read: the caches, never the API server. */
export interface TriggerContext {
  readonly book: StationBook<Agent>;
  /** A lane's Station as admission reads it (undefined when missing or invalid). */
  stationOf(lane: string): LaneStation;
  /** Every cached Agent. */
  agents(): Iterable<Agent>;
  /** The key of the Agent that controls the cached Job `namespace/name`, if any. */
  ownerOfJob(jobKey: string): string | undefined;
}

/** One row of the table: a source, how one of its events maps to keys, and the reason they are queued for. */
export interface Trigger<S extends Source = Source> {
  readonly source: S;
  readonly reason: ReconcileReason;
  readonly wakes: (event: SourceEvents[S], ctx: TriggerContext) => Iterable<Wake>;
}

const keysOf = (keys: Iterable<string>): Wake[] => Array.from(keys, (key) => ({ key }));
const headsOf = (ctx: TriggerContext, lane: string): Wake[] =>
  keysOf(wakeableHeads(ctx.book, lane, ctx.stationOf(lane)));
/** The heads of every lane of namespace `ns` (every lane when undefined is not meant: `ns` undefined = ''). */
const headsOfNamespace = (ctx: TriggerContext, ns: string | undefined): Wake[] =>
  ctx.book.lanes().flatMap((lane) => (lane.startsWith(`${ns ?? ''}/`) ? headsOf(ctx, lane) : []));
const headsEverywhere = (ctx: TriggerContext): Wake[] =>
  ctx.book.lanes().flatMap((lane) => headsOf(ctx, lane));

/** An Agent key from the namespace of a Job and its owner's name. */
const agentKeyOf = (c: Change<KubeObject>): string | undefined => {
  const owner = agentOwnerOf(c.object);
  return owner === undefined ? undefined : `${c.object.metadata.namespace}/${owner.name}`;
};

/** The Agent that controls a Job (its controller ownerReference of kind Agent), if any. */
export function agentOwnerOf(job: KubeObject | undefined) {
  return (job?.metadata.ownerReferences ?? []).find((o) => o.controller === true && o.kind === 'Agent');
}

/** A finished Job's conditions as one comparable string (type=status, in order); undefined while it runs. */
export function verdictOf(raw: KubeObject): string | undefined {
  const job = parseCachedJob(raw);
  if (!job.ok || !isJobFinished(job.value)) return undefined;
  return (job.value.status?.conditions ?? []).map((x) => `${x.type}=${x.status}`).join(',');
}

/** The Station lanes an Agent change touches: its own, and the one it left when its stationRef changed. */
function lanesOf(c: Change<Agent>): Set<string> {
  const lanes = new Set<string>([laneKey(c.object.metadata.namespace, c.object.spec.stationRef)]);
  if (c.type === 'modified') lanes.add(laneKey(c.old.metadata.namespace, c.old.spec.stationRef));
  return lanes;
}

/**
 * Every trigger, in the order they fire for one event. Keys, never objects: the reconcile reads the cache again
 * (level-triggered), so a trigger only says who should look.
 */
export const TRIGGERS: readonly Trigger[] = [
  // An Agent changed: reconcile it (a deleted one has nothing left to do).
  row('agent', 'agent-changed', (c) =>
    c.type === 'deleted' ? [] : [{ key: `${c.object.metadata.namespace}/${c.object.metadata.name}` }],
  ),
  // ... and a slot may have freed in its Station (or the one it left): wake the heads of the queue.
  row('agent', 'slot-may-have-freed', (c, ctx) => [...lanesOf(c)].flatMap((lane) => headsOf(ctx, lane))),
  // A run finished: the finished runs of its Station that still hold a stored session may now be beyond its
  // sessionHistoryLimit (issue 29 §5); decide says which.
  row('agent', 'session-history', (c, ctx) => {
    if (c.type !== 'modified' || !isTerminal(c.object) || isTerminal(c.old)) return [];
    const lane = laneKey(c.object.metadata.namespace, c.object.spec.stationRef);
    return ctx.book
      .finished(lane)
      .filter((a) => a.metadata.finalizers.includes(SESSION_STATE_FINALIZER))
      .map((a) => ({ key: `${a.metadata.namespace}/${a.metadata.name}` }));
  }),
  // A Job the controller owns: only changes the Agent's reconcile acts on wake it: appearing (adoption), finishing
  // (the result: urgent, ahead of new Agents waiting for admission), vanishing, and a finished Job's later verdict.
  // Progress updates of a running Job (active, ready, pod counts) would each cost a reconcile that does nothing.
  row('job', 'job-changed', (c) => {
    const key = agentKeyOf(c);
    if (key === undefined) return [];
    const verdict = c.type === 'deleted' ? undefined : verdictOf(c.object);
    const changed = c.type !== 'modified' || (verdict !== undefined && verdict !== verdictOf(c.old));
    return changed ? [{ key, urgent: verdict !== undefined }] : [];
  }),
  // A Job gone frees its Agent's slot.
  row('job', 'slot-may-have-freed', (c, ctx) => {
    const key = c.type === 'deleted' ? agentKeyOf(c) : undefined;
    const a = key === undefined ? undefined : ctx.book.get(key);
    return a === undefined ? [] : headsOf(ctx, laneKey(a.metadata.namespace, a.spec.stationRef));
  }),
  row('station', 'station-changed', (c, ctx) => {
    const name = c.object.metadata.name;
    return name === undefined
      ? headsOfNamespace(ctx, c.object.metadata.namespace)
      : headsOf(ctx, laneKey(c.object.metadata.namespace, name));
  }),
  row('definition', 'definition-changed', (c, ctx) => headsOfNamespace(ctx, c.object.metadata.namespace)),
  // Running runs are never re-checked against policies: only the waiting ones.
  row('policy', 'policy-changed', (_c, ctx) => headsEverywhere(ctx)),
  row('endpointSlice', 'endpoints-changed', (c, ctx) => headsOfNamespace(ctx, c.object.metadata.namespace)),
  // The Job's Agent, when its pod is kept from starting or shows such a cause that may have gone. A pod created or
  // started normally costs no reconcile.
  row('startProblem', 'start-problem', (e, ctx) => {
    const key = ctx.ownerOfJob(e.job);
    if (key === undefined) return [];
    const agent = ctx.book.get(key);
    return e.blocked || (agent !== undefined && showsStartProblem(agent)) ? [{ key }] : [];
  }),
  row('batchEnded', 'batch-ended', (e) => [{ key: e.key, urgent: true }]),
  // The poll's backstop: the heads of each queue (changed Agents were re-queued by the re-list itself; Running ones
  // re-check on their own timer; the rest of a queue would only be told to wait again).
  row('poll', 'poll', (_e, ctx) => headsEverywhere(ctx)),
  // Servers, too: their objects are not watched, and drift is repaired within a poll whatever happened before.
  row('poll', 'server-recheck', (_e, ctx) => {
    if (ctx.book.phaseCount('Serving') === 0) return [];
    return keysOf(
      Array.from(ctx.agents())
        .filter((a) => a.status.phase === 'Serving')
        .map((a) => `${a.metadata.namespace}/${a.metadata.name}`),
    );
  }),
  row('termStart', 'term-start', (_e, ctx) => keysOf(termStartKeys(ctx.agents(), ctx.book, ctx.stationOf))),
];

/** A table row, typed by its source. */
function row<S extends Source>(
  source: S,
  reason: ReconcileReason,
  wakes: (event: SourceEvents[S], ctx: TriggerContext) => Iterable<Wake>,
): Trigger {
  return { source, reason, wakes } as unknown as Trigger;
}

/** Queues a key for a reason. */
export type Enqueue = (key: string, urgent: boolean, reason: ReconcileReason) => void;

/**
 * Interprets a trigger table: `fire` maps one event of a source through that source's rows, in table order, and
 * queues what they wake. Outside a leadership term (`active` false) nothing is queued, so nothing is computed.
 */
export function createTriggers(
  table: readonly Trigger[],
  ctx: TriggerContext,
  enqueue: Enqueue,
  active: () => boolean,
): { fire<S extends Source>(source: S, event: SourceEvents[S]): void } {
  const bySource = new Map<Source, Trigger[]>();
  for (const t of table) bySource.set(t.source, [...(bySource.get(t.source) ?? []), t]);
  return {
    fire(source, event) {
      if (!active()) return;
      for (const t of bySource.get(source) ?? [])
        for (const w of t.wakes(event as never, ctx)) enqueue(w.key, w.urgent === true, t.reason);
    },
  };
}
