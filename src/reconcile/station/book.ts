import {
  type AgentRunView,
  awaitsFallbackSlot,
  isSameAgent,
  type RunPhase,
  runPhase,
  wakeRequest,
} from './runs.ts';

/**
 * The slot picture of one Station as seen by one candidate Agent: everything admission and history pruning read.
 * Built by `StationBook.view` in O(log n + holders + finished), never by scanning the namespace.
 */
export interface StationQueueView<A extends AgentRunView> {
  /**
   * Agents of the Station, other than the candidate, that hold a run slot: Running, or with a Job of theirs in the
   * cache, or admitted by this controller and not yet seen back from the watch.
   */
  readonly holders: readonly A[];
  /** The candidate itself already holds a slot: admitting it again starts no second run. */
  readonly holdsSlot: boolean;
  /** Queued Agents of the Station before the candidate in queue order. */
  readonly ahead: number;
  /** Finished (Succeeded or Failed) Agents of the Station other than the candidate, for history pruning. */
  readonly finished: readonly A[];
}

/** A view with nothing in it: a lone candidate at the head of an empty Station. */
export const EMPTY_QUEUE_VIEW: StationQueueView<never> = {
  holders: [],
  holdsSlot: false,
  ahead: 0,
  finished: [],
};

/** Where an Agent stands in its Station. `none`: being deleted, counted nowhere. */
export type Place = 'queued' | 'holding' | 'finished' | 'none';

interface Entry<A> {
  readonly key: string;
  readonly uid: string;
  readonly lane: string;
  agent: A;
  phase: RunPhase;
  /** Queue order, precomputed once per object version: creationTimestamp (ms; missing → last), name, uid. */
  readonly time: number;
  readonly name: string;
  place: Place;
}

interface Lane<A> {
  /** Queued Agents in queue order. */
  readonly queue: Entry<A>[];
  readonly holders: Map<string, Entry<A>>;
  readonly finished: Map<string, Entry<A>>;
}

/** `namespace/station`: the key of one Station's lane. */
export const laneKey = (namespace: string | undefined, station: string): string =>
  `${namespace ?? ''}/${station}`;

function parseTime(value: string | undefined): number {
  if (value === undefined || value === '') return Number.POSITIVE_INFINITY;
  const t = Date.parse(value);
  return Number.isNaN(t) ? Number.POSITIVE_INFINITY : t;
}

/**
 * Where an Agent queues: its creation; a Suspended session asked to wake queues by the time it was asked (issue 29),
 * behind the runs that waited before it.
 */
function queueTime(agent: AgentRunView): number {
  return wakeRequest(agent)?.at ?? parseTime(agent.metadata.creationTimestamp);
}

/**
 * Queue order (docs/design/reference-behaviour.md#d-d-first-come-first-served): creationTimestamp ascending, then
 * name, then uid. Total over distinct Agents.
 */
function compareEntries<A>(a: Entry<A>, b: Entry<A>): number {
  if (a.time !== b.time) return a.time < b.time ? -1 : 1;
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.uid === b.uid ? 0 : a.uid < b.uid ? -1 : 1;
}

/** Index of the first queue element not before `e` (binary search). */
function lowerBound<A>(queue: readonly Entry<A>[], e: Entry<A>): number {
  let lo = 0;
  let hi = queue.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const m = queue[mid];
    if (m !== undefined && compareEntries(m, e) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Every Agent the controller knows, indexed by Station: the queue (Pending Agents in first-come-first-served
 * order), the slot holders and the finished runs. Pure and synchronous: the shell feeds it every cache change
 * (Agents and the Jobs they own), every admission it decides and every delete it claims, in the same turn of the
 * event loop as the change, so a decision read from it always includes every earlier decision.
 *
 * The rule that makes admission correct by construction
 * (docs/design/reference-behaviour.md#d-l-admission-by-construction): an Agent holds a slot from the moment this
 * controller decides to start it until it is seen finished or gone. It holds it when any of these is true:
 * - the controller admitted it (`admitted`), even if neither its Job nor its Running status has come back yet;
 * - a Job it owns (by uid) is in the Job cache (a run started by an earlier leader or before a restart);
 * - its phase is Running (except a batch run that fell back to a Job and has none yet: it waits in the queue).
 * Deleting Agents (deletionTimestamp, or a delete this controller claimed) hold nothing and are not queued.
 */
export class StationBook<A extends AgentRunView> {
  readonly #agents = new Map<string, Entry<A>>();
  readonly #lanes = new Map<string, Lane<A>>();
  /** Job key → owner uid, and owner uid → number of its Jobs in the cache. */
  readonly #jobOwner = new Map<string, string>();
  readonly #jobsOf = new Map<string, number>();
  readonly #admitted = new Set<string>();
  readonly #deleting = new Set<string>();
  readonly #phases = new Map<RunPhase, number>();
  readonly #keyOfUid = new Map<string, string>();

  /** Records the current version of an Agent (added or modified). */
  upsert(key: string, agent: A): void {
    const old = this.#agents.get(key);
    const uid = agent.metadata.uid ?? key;
    // Suspended (issue 29): the admission that started its last pod is over; a wake is admitted afresh.
    if (runPhase(agent) === 'Suspended' && old?.uid === uid && old.phase !== 'Suspended')
      this.#admitted.delete(uid);
    const lane = laneKey(agent.metadata.namespace, agent.spec.stationRef);
    if (old !== undefined && old.uid === uid && old.lane === lane && old.time === queueTime(agent)) {
      // A new version of the same Agent in the same queue position (a status echo): update it in place, and move
      // it only if its place changes, so 10,000 echoes cost O(log n) each, not a queue splice each.
      this.#count(old.phase, -1);
      old.agent = agent;
      old.phase = runPhase(agent);
      this.#count(old.phase, 1);
      if (this.#placeFor(old) !== old.place) this.#reseat(old);
      return;
    }
    if (old !== undefined) {
      this.#detach(old);
      this.#count(old.phase, -1);
      // A new object under the same name (deleted and re-created): the old one's marks go with it.
      if (old.uid !== uid) {
        this.#forget(old.uid);
        this.#keyOfUid.delete(old.uid);
      }
    }
    const entry: Entry<A> = {
      key,
      uid,
      lane,
      agent,
      phase: runPhase(agent),
      time: queueTime(agent),
      name: agent.metadata.name ?? '',
      place: 'none',
    };
    this.#agents.set(key, entry);
    this.#keyOfUid.set(uid, key);
    this.#count(entry.phase, 1);
    this.#attach(entry);
  }

  /** Forgets an Agent (deleted, or no longer listed). */
  remove(key: string): void {
    const old = this.#agents.get(key);
    if (old === undefined) return;
    this.#detach(old);
    this.#count(old.phase, -1);
    this.#agents.delete(key);
    if (this.#keyOfUid.get(old.uid) === key) this.#keyOfUid.delete(old.uid);
    this.#forget(old.uid);
  }

  /** A Job owned (controller reference) by the Agent with uid `ownerUid` is in the cache. */
  jobSeen(jobKey: string, ownerUid: string): void {
    const prev = this.#jobOwner.get(jobKey);
    if (prev === ownerUid) return;
    if (prev !== undefined) this.jobGone(jobKey);
    this.#jobOwner.set(jobKey, ownerUid);
    this.#jobsOf.set(ownerUid, (this.#jobsOf.get(ownerUid) ?? 0) + 1);
    this.#reseatUid(ownerUid);
  }

  /** The Job left the cache. */
  jobGone(jobKey: string): void {
    const owner = this.#jobOwner.get(jobKey);
    if (owner === undefined) return;
    this.#jobOwner.delete(jobKey);
    const n = (this.#jobsOf.get(owner) ?? 1) - 1;
    if (n > 0) this.#jobsOf.set(owner, n);
    else this.#jobsOf.delete(owner);
    this.#reseatUid(owner);
  }

  /** This controller decided to start the Agent: it holds a slot until it is seen finished or gone. */
  admit(key: string): void {
    const e = this.#agents.get(key);
    if (e === undefined || this.#admitted.has(e.uid)) return;
    this.#admitted.add(e.uid);
    this.#reseat(e);
  }

  /**
   * Gives an admission back: the decision to start the Agent was dropped before its Job was asked for (a
   * precondition failed first, or this replica may not write: leadership ended or its renewal is in doubt). Never
   * call it once the Job create was sent.
   */
  release(key: string): void {
    const e = this.#agents.get(key);
    if (e === undefined || !this.#admitted.delete(e.uid)) return;
    this.#reseat(e);
  }

  /** This controller claimed the delete of the Agent `uid` (`false`: the claim was given back). */
  setDeleting(uid: string, deleting: boolean): void {
    if (deleting === this.#deleting.has(uid)) return;
    if (deleting && !this.#keyOfUid.has(uid)) return;
    if (deleting) this.#deleting.add(uid);
    else this.#deleting.delete(uid);
    this.#reseatUid(uid);
  }

  /** The Agent's current version, if known. */
  get(key: string): A | undefined {
    return this.#agents.get(key)?.agent;
  }

  /** Where the Agent stands; undefined when unknown. */
  placeOf(key: string): Place | undefined {
    return this.#agents.get(key)?.place;
  }

  /** The Station picture as the Agent `key` sees it; undefined when the Agent is unknown. */
  view(key: string): StationQueueView<A> | undefined {
    const e = this.#agents.get(key);
    if (e === undefined) return undefined;
    const lane = this.#lanes.get(e.lane);
    if (lane === undefined) return { holders: [], holdsSlot: e.place === 'holding', ahead: 0, finished: [] };
    const holders: A[] = [];
    for (const h of lane.holders.values()) if (h.key !== key) holders.push(h.agent);
    const finished: A[] = [];
    for (const f of lane.finished.values()) if (f.key !== key) finished.push(f.agent);
    return { holders, holdsSlot: e.place === 'holding', ahead: lowerBound(lane.queue, e), finished };
  }

  /** Keys of the first `n` queued Agents of a lane, in queue order. */
  heads(lane: string, n: number): string[] {
    const l = this.#lanes.get(lane);
    if (l === undefined || n <= 0) return [];
    return l.queue.slice(0, n).map((e) => e.key);
  }

  /** Numbers of queued, slot-holding and finished Agents in a lane. */
  counts(lane: string): { readonly queued: number; readonly holding: number; readonly finished: number } {
    const l = this.#lanes.get(lane);
    return {
      queued: l?.queue.length ?? 0,
      holding: l?.holders.size ?? 0,
      finished: l?.finished.size ?? 0,
    };
  }

  /** Lanes that have at least one Agent. */
  lanes(): string[] {
    return [...this.#lanes.keys()];
  }

  /** Finished Agents of a lane (history pruning). */
  finished(lane: string): A[] {
    return [...(this.#lanes.get(lane)?.finished.values() ?? [])].map((e) => e.agent);
  }

  /** Agents known per phase (deleting ones included). */
  phaseCount(phase: RunPhase): number {
    return this.#phases.get(phase) ?? 0;
  }

  /** Number of Agents known. */
  get size(): number {
    return this.#agents.size;
  }

  #count(phase: RunPhase, d: number): void {
    this.#phases.set(phase, (this.#phases.get(phase) ?? 0) + d);
  }

  #forget(uid: string): void {
    this.#admitted.delete(uid);
    this.#deleting.delete(uid);
  }

  #placeFor(e: Entry<A>): Place {
    if (e.agent.metadata.deletionTimestamp !== undefined || this.#deleting.has(e.uid)) return 'none';
    // A server takes no run slot and waits for none (issue 12).
    if (e.phase === 'Serving') return 'none';
    if (e.phase === 'Succeeded' || e.phase === 'Failed') return 'finished';
    // A Suspended session holds no slot (its Job may still be going); asked to wake it queues, until admitted.
    if (e.phase === 'Suspended') {
      if (this.#admitted.has(e.uid)) return 'holding';
      return wakeRequest(e.agent) !== undefined ? 'queued' : 'none';
    }
    if (this.#admitted.has(e.uid) || this.#jobsOf.has(e.uid)) return 'holding';
    if (e.phase === 'Running' && !awaitsFallbackSlot(e.agent)) return 'holding';
    return 'queued';
  }

  #attach(e: Entry<A>): void {
    const place = this.#placeFor(e);
    e.place = place;
    if (place === 'none') return;
    let lane = this.#lanes.get(e.lane);
    if (lane === undefined) {
      lane = { queue: [], holders: new Map(), finished: new Map() };
      this.#lanes.set(e.lane, lane);
    }
    if (place === 'queued') lane.queue.splice(lowerBound(lane.queue, e), 0, e);
    else if (place === 'holding') lane.holders.set(e.key, e);
    else lane.finished.set(e.key, e);
  }

  #detach(e: Entry<A>): void {
    const lane = this.#lanes.get(e.lane);
    if (lane !== undefined) {
      if (e.place === 'queued') {
        const i = lowerBound(lane.queue, e);
        if (lane.queue[i] === e) lane.queue.splice(i, 1);
      } else if (e.place === 'holding') lane.holders.delete(e.key);
      else if (e.place === 'finished') lane.finished.delete(e.key);
      if (lane.queue.length === 0 && lane.holders.size === 0 && lane.finished.size === 0)
        this.#lanes.delete(e.lane);
    }
    e.place = 'none';
  }

  /** Re-places an Agent after a change of its phase, Jobs, admission or deletion mark. */
  #reseat(e: Entry<A>): void {
    this.#detach(e);
    this.#attach(e);
  }

  #reseatUid(uid: string): void {
    const e = this.#byUid(uid);
    if (e !== undefined) this.#reseat(e);
  }

  #byUid(uid: string): Entry<A> | undefined {
    const key = this.#keyOfUid.get(uid);
    const e = key === undefined ? undefined : this.#agents.get(key);
    return e !== undefined && e.uid === uid ? e : undefined;
  }
}

/**
 * The Station picture `candidate` sees among a plain list of Agents (any list: other Stations and namespaces,
 * the candidate itself, finished and deleting ones are sorted out), as a book fed from a cache holding exactly
 * them builds it (no admissions in flight). For tests and one-off checks; the controller keeps one book.
 */
export function viewAmong<A extends AgentRunView>(candidate: A, agents: readonly A[]): StationQueueView<A> {
  const book = new StationBook<A>();
  const keyOf = (a: AgentRunView) => `${a.metadata.namespace ?? ''}/${a.metadata.name ?? ''}`;
  for (const a of agents) if (!isSameAgent(a, candidate)) book.upsert(keyOf(a), a);
  book.upsert(keyOf(candidate), candidate);
  return book.view(keyOf(candidate)) ?? EMPTY_QUEUE_VIEW;
}
