// The chaos suite's invariants, judged from the kube-apiserver audit log alone (test/chaos/audit.ts): pure functions
// of the records, so a run's verdict can be recomputed from a saved log.
import * as v from 'valibot';
import type { AuditRecord } from './audit.ts';

export interface InvariantInput {
  /** Any order; sorted here. */
  readonly records: readonly AuditRecord[];
  /** The chaos namespace (Agents, Jobs live here). */
  readonly namespace: string;
  /** Station name -> maxConcurrentRuns (0 = unlimited). */
  readonly stations: ReadonlyMap<string, number>;
  readonly lease: { readonly namespace: string; readonly name: string };
  /** Username of the controller replicas, e.g. system:serviceaccount:ns:agent-controller. */
  readonly controllerUser: string;
  /** The text a successful run's status.output must contain. */
  readonly markerOf: (agentName: string) => string;
  /**
   * Agents whose pod or Job was deleted by hand: one that finished just as its pod went has no log left to read, so its
   * Succeeded status may lack its marker, provided it says why (status.failureReason). A crossed marker still counts.
   */
  readonly podDeletedByHand?: ReadonlySet<string>;
}

export interface InvariantResult {
  readonly id: number;
  readonly name: string;
  readonly checked: number;
  readonly violations: readonly string[];
}

const AGENTS_GROUP = 'agents.re-cinq.com';

/** The replica identity in a User-Agent `agent-controller/<version> (<identity>)`, else undefined. */
export function identityOf(userAgent: string): string | undefined {
  const m = /^agent-controller\/[^\s()]+ \(([^()]*)\)$/.exec(userAgent.trim());
  const identity = m?.[1]?.trim();
  return identity === undefined || identity === '' ? undefined : identity;
}

// ---------------------------------------------------------------------------------------------
// The parts of request/response bodies the invariants read (anything else, e.g. a Status, reads as absent).

const OwnerSchema = v.looseObject({
  kind: v.optional(v.unknown()),
  name: v.optional(v.unknown()),
  uid: v.optional(v.unknown()),
  controller: v.optional(v.unknown()),
});
const BodySchema = v.looseObject({
  kind: v.optional(v.unknown()),
  metadata: v.optional(
    v.looseObject({
      name: v.optional(v.unknown()),
      uid: v.optional(v.unknown()),
      resourceVersion: v.optional(v.unknown()),
      ownerReferences: v.optional(v.unknown()),
    }),
  ),
  spec: v.optional(v.unknown()),
  status: v.optional(v.unknown()),
  /** A Status (e.g. the answer to a delete) names the deleted object here. */
  details: v.optional(v.looseObject({ uid: v.optional(v.unknown()) })),
});
const AgentSpecSchema = v.looseObject({ stationRef: v.optional(v.unknown()) });
const AgentStatusSchema = v.looseObject({
  phase: v.optional(v.unknown()),
  output: v.optional(v.unknown()),
  failureReason: v.optional(v.unknown()),
});
const LeaseSpecSchema = v.looseObject({
  holderIdentity: v.optional(v.unknown()),
  leaseDurationSeconds: v.optional(v.unknown()),
});
/** A Lease without leaseDurationSeconds lasts this long (the controller's default). */
const DEFAULT_LEASE_SECONDS = 15;

interface Body {
  readonly kind: string | undefined;
  readonly name: string | undefined;
  readonly uid: string | undefined;
  readonly resourceVersion: bigint | undefined;
  /** The controller ownerReference of kind Agent. */
  readonly agentOwner: { readonly name: string | undefined; readonly uid: string } | undefined;
  readonly spec: unknown;
  readonly hasStatus: boolean;
  readonly status: unknown;
  readonly detailsUid: string | undefined;
}

const str = (x: unknown): string | undefined => (typeof x === 'string' && x !== '' ? x : undefined);

function bodyOf(object: unknown): Body | undefined {
  const parsed = v.safeParse(BodySchema, object);
  if (!parsed.success) return undefined;
  const o = parsed.output;
  const rv = str(o.metadata?.resourceVersion);
  const owners = Array.isArray(o.metadata?.ownerReferences) ? o.metadata.ownerReferences : [];
  let agentOwner: Body['agentOwner'];
  for (const raw of owners) {
    const owner = v.safeParse(OwnerSchema, raw);
    if (!owner.success) continue;
    const uid = str(owner.output.uid);
    if (owner.output.kind === 'Agent' && owner.output.controller === true && uid !== undefined)
      agentOwner = { name: str(owner.output.name), uid };
  }
  return {
    kind: str(o.kind),
    name: str(o.metadata?.name),
    uid: str(o.metadata?.uid),
    resourceVersion: rv !== undefined && /^\d+$/.test(rv) ? BigInt(rv) : undefined,
    agentOwner,
    spec: o.spec,
    hasStatus: o.status !== undefined && o.status !== null,
    status: o.status,
    detailsUid: str(o.details?.uid),
  };
}

const bodies = new WeakMap<AuditRecord, Body | null>();
/** The parsed responseObject of `r` (memoised per record). */
function response(r: AuditRecord): Body | undefined {
  let b = bodies.get(r);
  if (b === undefined) {
    b = bodyOf(r.responseObject) ?? null;
    bodies.set(r, b);
  }
  return b ?? undefined;
}

// ---------------------------------------------------------------------------------------------
// Formatting.

/** Epoch ms as an RFC 3339 UTC time with microseconds, as in the audit log. */
function at(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  let whole = Math.floor(ms);
  let micros = Math.round((ms - whole) * 1000);
  if (micros === 1000) {
    whole += 1;
    micros = 0;
  }
  return `${new Date(whole).toISOString().slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}

function who(r: AuditRecord): string {
  return identityOf(r.userAgent) ?? r.user;
}

/** `patch agents/status a-1 by replica-a (200, received … completed …)` */
function describe(r: AuditRecord): string {
  const what = `${r.resource}${r.subresource === undefined ? '' : `/${r.subresource}`}`;
  return `${r.verb} ${what} ${r.name ?? '(no name)'} by ${who(r)} (code ${r.code}, received ${at(r.received)}, completed ${at(r.completed)})`;
}

const success = (r: AuditRecord): boolean => r.code >= 200 && r.code < 300;
const byCompleted = (a: AuditRecord, b: AuditRecord): number =>
  a.completed - b.completed || a.received - b.received;

// ---------------------------------------------------------------------------------------------
// Agents: uid <-> name, Station; a write's Agent.

interface AgentInfo {
  readonly uid: string;
  name: string | undefined;
  station: string | undefined;
}

class Agents {
  readonly byUid = new Map<string, AgentInfo>();
  /** name -> uids in the order they first appeared (an Agent deleted and created again gets a new uid). */
  private readonly byName = new Map<string, { uid: string; first: number }[]>();

  note(uid: string, name: string | undefined, station: string | undefined, time: number): void {
    let info = this.byUid.get(uid);
    if (!info) {
      info = { uid, name, station };
      this.byUid.set(uid, info);
    }
    info.name ??= name;
    info.station ??= station;
    if (name === undefined) return;
    const list = this.byName.get(name) ?? [];
    if (!list.some((e) => e.uid === uid)) list.push({ uid, first: time });
    this.byName.set(name, list);
  }

  /** The uid an Agent called `name` had at `time`: the latest to appear by then, else the first. */
  uidOf(name: string, time: number): string | undefined {
    const list = this.byName.get(name);
    if (!list || list.length === 0) return undefined;
    let found = list[0]?.uid;
    for (const e of list) if (e.first <= time) found = e.uid;
    return found;
  }

  names(): Set<string> {
    return new Set(this.byName.keys());
  }

  label(uid: string): string {
    const name = this.byUid.get(uid)?.name;
    if (uid.startsWith('name:')) return `Agent ${uid.slice(5)}`;
    return `Agent ${name ?? '(unnamed)'} (uid ${uid})`;
  }
}

/** One successful write whose response shows an Agent's status. */
interface PhaseWrite {
  readonly r: AuditRecord;
  readonly uid: string;
  readonly name: string | undefined;
  /** status.phase; 'Pending' when the status or its phase is absent (as the controller reads it). */
  readonly phase: string;
  readonly resourceVersion: bigint | undefined;
  readonly output: unknown;
  readonly failureReason: unknown;
}

const RANK: Readonly<Record<string, number>> = { Pending: 0, Running: 1, Succeeded: 2, Failed: 2 };
const isTerminal = (phase: string): boolean => phase === 'Succeeded' || phase === 'Failed';

interface Model {
  readonly input: InvariantInput;
  readonly agents: Agents;
  /** Successful Job creates in the namespace, with the uid of the Agent owning them (undefined: no Agent owner). */
  readonly jobCreates: readonly { readonly r: AuditRecord; readonly owner: string | undefined }[];
  /** Every successful status-bearing Agent write (status subresource, or the Agent itself), by completion. */
  readonly phaseWrites: readonly PhaseWrite[];
  /** Successful Agent deletes with the deleted Agent's uid, by completion. */
  readonly deletes: readonly { readonly r: AuditRecord; readonly uid: string }[];
  readonly end: number;
}

function buildModel(input: InvariantInput): Model {
  const records = [...input.records].sort(byCompleted);
  const ns = input.namespace;
  const isAgent = (r: AuditRecord): boolean =>
    r.apiGroup === AGENTS_GROUP && r.resource === 'agents' && r.namespace === ns;
  const isJob = (r: AuditRecord): boolean =>
    r.apiGroup === 'batch' && r.resource === 'jobs' && r.subresource === undefined && r.namespace === ns;
  const agents = new Agents();
  // Pass 1: every Agent uid and name (and Station) the log shows.
  for (const r of records) {
    const b = response(r);
    if (!b) continue;
    if (isAgent(r) && b.uid !== undefined && (b.kind === undefined || b.kind === 'Agent')) {
      const spec = v.safeParse(AgentSpecSchema, b.spec);
      agents.note(
        b.uid,
        b.name ?? r.name,
        spec.success ? str(spec.output.stationRef) : undefined,
        r.completed,
      );
    } else if (isAgent(r) && r.verb === 'delete' && b.detailsUid !== undefined) {
      agents.note(b.detailsUid, r.name, undefined, r.completed);
    } else if (isJob(r) && b.agentOwner) {
      agents.note(b.agentOwner.uid, b.agentOwner.name, undefined, r.completed);
    }
  }
  /** The uid of the Agent a write was about (`name:<name>` when the log never shows its uid). */
  const agentUid = (r: AuditRecord): string | undefined => {
    const b = response(r);
    const own = b && (b.kind === undefined || b.kind === 'Agent') ? b.uid : undefined;
    const uid =
      own ?? b?.detailsUid ?? (r.name === undefined ? undefined : agents.uidOf(r.name, r.completed));
    return uid ?? (r.name === undefined ? undefined : `name:${r.name}`);
  };
  const jobCreates: Model['jobCreates'][number][] = [];
  const phaseWrites: PhaseWrite[] = [];
  const deletes: Model['deletes'][number][] = [];
  for (const r of records) {
    if (!success(r)) continue;
    if (isJob(r) && r.verb === 'create') jobCreates.push({ r, owner: response(r)?.agentOwner?.uid });
    if (!isAgent(r)) continue;
    if (r.verb === 'delete' && r.subresource === undefined) {
      const uid = agentUid(r);
      if (uid !== undefined) deletes.push({ r, uid });
      continue;
    }
    if (r.verb !== 'update' && r.verb !== 'patch') continue;
    const isStatus = r.subresource === 'status';
    if (!isStatus && r.subresource !== undefined) continue;
    const b = response(r);
    if (!b || b.uid === undefined || (b.kind !== undefined && b.kind !== 'Agent')) continue;
    if (!isStatus && !b.hasStatus) continue;
    const status = v.safeParse(AgentStatusSchema, b.status);
    const phase = status.success ? status.output.phase : undefined;
    phaseWrites.push({
      r,
      uid: b.uid,
      name: b.name ?? r.name,
      phase: phase === undefined || phase === null || phase === '' ? 'Pending' : String(phase),
      resourceVersion: b.resourceVersion,
      output: status.success ? status.output.output : undefined,
      failureReason: status.success ? status.output.failureReason : undefined,
    });
  }
  const end = records.reduce((m, r) => Math.max(m, r.completed), Number.NEGATIVE_INFINITY);
  return { input, agents, jobCreates, phaseWrites, deletes, end };
}

// ---------------------------------------------------------------------------------------------
// The invariants.

function oneJobPerAgent(m: Model): InvariantResult {
  const byAgent = new Map<string, AuditRecord[]>();
  for (const { r, owner } of m.jobCreates) {
    if (owner === undefined) continue;
    byAgent.set(owner, [...(byAgent.get(owner) ?? []), r]);
  }
  const violations: string[] = [];
  for (const [uid, creates] of byAgent) {
    if (creates.length <= 1) continue;
    violations.push(
      `${m.agents.label(uid)}: ${creates.length} Jobs created: ${creates.map((r) => describe(r)).join('; ')}`,
    );
  }
  const seen = new Set([...m.agents.byUid.keys(), ...byAgent.keys()]);
  return { id: 1, name: 'one Job per Agent', checked: seen.size, violations };
}

/**
 * An Agent's status writes in the order they took effect: by resourceVersion (etcd's commit order) when every one
 * has a numeric one, else by completion.
 */
function inCommitOrder(writes: readonly PhaseWrite[]): PhaseWrite[] {
  const all = writes.every((w) => w.resourceVersion !== undefined);
  return [...writes].sort((a, b) => {
    if (all && a.resourceVersion !== b.resourceVersion)
      return (a.resourceVersion ?? 0n) < (b.resourceVersion ?? 0n) ? -1 : 1;
    return byCompleted(a.r, b.r);
  });
}

function phasesForward(m: Model): InvariantResult {
  const byAgent = new Map<string, PhaseWrite[]>();
  for (const w of m.phaseWrites) byAgent.set(w.uid, [...(byAgent.get(w.uid) ?? []), w]);
  const violations: string[] = [];
  for (const [uid, writes] of byAgent) {
    let highest: PhaseWrite | undefined;
    let terminal: PhaseWrite | undefined;
    for (const w of inCommitOrder(writes)) {
      const rank = RANK[w.phase];
      const agent = m.agents.label(uid);
      if (rank === undefined) {
        violations.push(`${agent}: unknown phase ${JSON.stringify(w.phase)} written by ${describe(w.r)}`);
        continue;
      }
      if (terminal && w.phase !== terminal.phase) {
        violations.push(
          `${agent}: ${w.phase} after terminal ${terminal.phase}: ${describe(w.r)}; ${terminal.phase} was ${describe(terminal.r)}`,
        );
      } else if (highest && rank < (RANK[highest.phase] ?? 0)) {
        violations.push(
          `${agent}: ${w.phase} after ${highest.phase}: ${describe(w.r)}; ${highest.phase} was ${describe(highest.r)}`,
        );
      }
      if (!highest || rank > (RANK[highest.phase] ?? 0)) highest = w;
      if (!terminal && isTerminal(w.phase)) terminal = w;
    }
  }
  return {
    id: 2,
    name: 'phases never go backwards, one terminal phase',
    checked: m.phaseWrites.length,
    violations,
  };
}

interface Run {
  readonly agent: string;
  /** What started it: its Job's create, or its first Running write (a run marked Running without a Job). */
  readonly startWhy: string;
  readonly start: number;
  readonly end: number;
  readonly endWhy: string;
}

function concurrencyLimit(m: Model): InvariantResult {
  // A run holds a slot from the earlier of its Job's create and its first Running write.
  const starts = new Map<string, { time: number; why: string }>();
  const startAt = (uid: string, time: number, why: string): void => {
    const known = starts.get(uid);
    if (known === undefined || time < known.time) starts.set(uid, { time, why });
  };
  for (const { r, owner } of m.jobCreates)
    if (owner !== undefined) startAt(owner, r.received, `Job ${r.name ?? '?'} created`);
  for (const w of m.phaseWrites) if (w.phase === 'Running') startAt(w.uid, w.r.received, 'Running written');
  const runs = new Map<string, Run[]>();
  let checked = 0;
  for (const [owner, first] of starts) {
    const station = m.agents.byUid.get(owner)?.station;
    const limit = station === undefined ? undefined : m.input.stations.get(station);
    if (station === undefined || limit === undefined || limit <= 0) continue;
    checked++;
    const start = first.time;
    const terminal = m.phaseWrites.find(
      (w) => w.uid === owner && isTerminal(w.phase) && w.r.completed >= start,
    );
    const deleted = m.deletes.find((d) => d.uid === owner && d.r.completed >= start);
    let end = m.end;
    let endWhy = 'end of the log';
    if (terminal && terminal.r.completed <= end) {
      end = terminal.r.completed;
      endWhy = `${terminal.phase}`;
    }
    if (deleted && deleted.r.completed < end) {
      end = deleted.r.completed;
      endWhy = 'deleted';
    }
    if (end <= start) continue; // holds no slot
    runs.set(station, [
      ...(runs.get(station) ?? []),
      { agent: m.agents.label(owner), startWhy: first.why, start, end, endWhy },
    ]);
  }
  const violations: string[] = [];
  for (const [station, list] of runs) {
    const limit = m.input.stations.get(station) ?? 0;
    // At equal times an end comes before a start: a slot freed and taken in the same instant is no overlap.
    const events = list
      .flatMap((run) => [
        { time: run.start, start: true, run },
        { time: run.end, start: false, run },
      ])
      .sort((a, b) => a.time - b.time || Number(a.start) - Number(b.start));
    const holders = new Set<Run>();
    for (const e of events) {
      if (!e.start) {
        holders.delete(e.run);
        continue;
      }
      holders.add(e.run);
      if (holders.size > limit) {
        const names = [...holders]
          .sort((a, b) => a.start - b.start)
          .map((h) => `${h.agent} (${h.startWhy} ${at(h.start)}, until ${at(h.end)}: ${h.endWhy})`);
        violations.push(
          `Station ${station} (maxConcurrentRuns ${limit}): ${holders.size} runs at ${at(e.time)}: ${names.join(', ')}`,
        );
      }
    }
  }
  return { id: 3, name: 'concurrency limit', checked, violations };
}

function resultsNotCrossed(m: Model): InvariantResult {
  const names = m.agents.names();
  const violations: string[] = [];
  let checked = 0;
  for (const w of m.phaseWrites) {
    if (w.phase !== 'Succeeded') continue;
    checked++;
    const name = w.name ?? m.agents.byUid.get(w.uid)?.name;
    const agent = m.agents.label(w.uid);
    const output = typeof w.output === 'string' ? w.output : '';
    if (name === undefined) {
      violations.push(`${agent}: Succeeded with no Agent name to check the output against: ${describe(w.r)}`);
      continue;
    }
    const own = m.input.markerOf(name);
    const excused =
      m.input.podDeletedByHand?.has(name) === true &&
      typeof w.failureReason === 'string' &&
      w.failureReason !== '';
    if (!output.includes(own) && !excused)
      violations.push(
        `${agent}: Succeeded without its marker ${JSON.stringify(own)} in status.output (${output.length} chars${
          typeof w.output === 'string' ? '' : ', no output'
        }): ${describe(w.r)}`,
      );
    for (const other of names) {
      if (other === name) continue;
      const marker = m.input.markerOf(other);
      // A marker contained in the Agent's own marker (a-1 in a-10) cannot tell the two apart.
      if (marker === '' || own.includes(marker)) continue;
      if (output.includes(marker))
        violations.push(
          `${agent}: Succeeded with the marker of Agent ${other} (${JSON.stringify(marker)}) in status.output: ${describe(w.r)}`,
        );
    }
  }
  return { id: 4, name: 'results not lost or crossed', checked, violations };
}

function onlyLeaseHolderWrites(m: Model): InvariantResult {
  const { lease, namespace, controllerUser } = m.input;
  const timeline = m.input.records
    .filter(
      (r) =>
        success(r) &&
        r.apiGroup === 'coordination.k8s.io' &&
        r.resource === 'leases' &&
        r.subresource === undefined &&
        r.namespace === lease.namespace &&
        r.name === lease.name &&
        ['create', 'update', 'patch', 'delete'].includes(r.verb),
    )
    .map((r) => {
      const spec = v.safeParse(LeaseSpecSchema, response(r)?.spec);
      const holder = r.verb === 'delete' || !spec.success ? undefined : str(spec.output.holderIdentity);
      const seconds = spec.success ? spec.output.leaseDurationSeconds : undefined;
      // Held until its duration after the write reached the API server (the holder itself stops earlier: its
      // renew deadline counts from when it sent the write).
      const expires =
        r.received + (typeof seconds === 'number' && seconds > 0 ? seconds : DEFAULT_LEASE_SECONDS) * 1000;
      return { r, holder, expires, resourceVersion: response(r)?.resourceVersion };
    })
    .sort(
      (a, b) =>
        a.r.completed - b.r.completed ||
        (a.resourceVersion !== undefined && b.resourceVersion !== undefined
          ? Number(a.resourceVersion - b.resourceVersion)
          : 0),
    );
  /** The last Lease write completed at or before `time`. */
  const holderAt = (time: number): (typeof timeline)[number] | undefined => {
    let found: (typeof timeline)[number] | undefined;
    for (const e of timeline) {
      if (e.r.completed > time) break;
      found = e;
    }
    return found;
  };
  const checkedWrite = (r: AuditRecord): boolean => {
    if (!success(r) || r.user !== controllerUser || r.namespace !== namespace) return false;
    if (r.apiGroup === AGENTS_GROUP && r.resource === 'agents')
      return (
        (r.subresource === undefined || r.subresource === 'status') &&
        ['create', 'update', 'patch', 'delete'].includes(r.verb)
      );
    if (r.apiGroup === 'batch' && r.resource === 'jobs')
      return r.subresource === undefined && (r.verb === 'create' || r.verb === 'delete');
    if (r.apiGroup === 'networking.k8s.io' && r.resource === 'networkpolicies')
      return r.subresource === undefined && r.verb === 'create';
    return false;
  };
  const leaseName = `${lease.namespace}/${lease.name}`;
  const violations: string[] = [];
  let checked = 0;
  for (const r of [...m.input.records].sort((a, b) => a.received - b.received || a.completed - b.completed)) {
    if (!checkedWrite(r)) continue;
    checked++;
    const identity = identityOf(r.userAgent);
    if (identity === undefined) {
      violations.push(`${describe(r)}: no replica identity in User-Agent ${JSON.stringify(r.userAgent)}`);
      continue;
    }
    const entry = holderAt(r.received);
    if (entry?.holder === identity && r.received <= entry.expires) continue;
    // Every replica serves the realtime prompt API, and the one that relayed a session's first answer reports its
    // session id: a patch of that one annotation, fenced by the Agent's uid, an observation that the leader's
    // decide() turns into status.sessionId (docs/design/one-writer.md), not a decision of its own.
    if (isSessionIdPatch(r)) continue;
    if (entry?.holder === identity) {
      violations.push(
        `${describe(r)}: replica ${identity}'s Lease ${leaseName} had expired at ${at(entry.expires)} (last written ${at(entry.r.received)})`,
      );
      continue;
    }
    const held =
      entry === undefined
        ? `no write of Lease ${leaseName} seen before`
        : entry.holder === undefined
          ? `Lease ${leaseName} held by nobody since ${at(entry.r.completed)}`
          : `Lease ${leaseName} held by ${entry.holder} since ${at(entry.r.completed)}`;
    violations.push(`${describe(r)}: replica ${identity} is not the leader at ${at(r.received)} (${held})`);
  }
  return { id: 5, name: 'only the Lease holder writes', checked, violations };
}

/**
 * A patch of the Agent that sets the annotation `agents.re-cinq.com/session-id` and nothing else, with the Agent's
 * uid as its precondition: the prompt API's report of a realtime session, which any replica may write (see
 * invariant 5).
 */
export function isSessionIdPatch(r: AuditRecord): boolean {
  if (r.verb !== 'patch' || r.subresource !== undefined || r.resource !== 'agents') return false;
  const body = r.requestObject;
  if (typeof body !== 'object' || body === null) return false;
  const { metadata, ...rest } = body as Record<string, unknown>;
  if (Object.keys(rest).length > 0) return false;
  if (typeof metadata !== 'object' || metadata === null) return false;
  const { uid, annotations, ...otherMeta } = metadata as Record<string, unknown>;
  // Fenced: only with the Agent's uid (and nothing else in metadata).
  if (Object.keys(otherMeta).length > 0 || typeof uid !== 'string') return false;
  if (typeof annotations !== 'object' || annotations === null) return false;
  const entries = Object.entries(annotations);
  return (
    entries.length === 1 &&
    entries[0]?.[0] === 'agents.re-cinq.com/session-id' &&
    typeof entries[0]?.[1] === 'string'
  );
}

/** Checks the five invariants (ids 1-5) on an audit log. */
export function checkInvariants(input: InvariantInput): InvariantResult[] {
  const m = buildModel(input);
  return [
    oneJobPerAgent(m),
    phasesForward(m),
    concurrencyLimit(m),
    resultsNotCrossed(m),
    onlyLeaseHolderWrites(m),
  ];
}

/**
 * Invariant 8, from the fake vendor's own record: no run submitted its prompt twice (one batch per request id
 * `run-<Agent uid>` ever created, whatever leader kills, pauses and API-server faults happened meanwhile; the
 * vendor's own answers are not faulted here: the batch e2e tests lose them on purpose).
 */
export function oneBatchPerRun(
  batches: readonly { readonly id: string; readonly customId: string }[],
): InvariantResult {
  const byRun = new Map<string, string[]>();
  for (const b of batches) byRun.set(b.customId, [...(byRun.get(b.customId) ?? []), b.id]);
  return {
    id: 8,
    name: 'one vendor batch per batch run (from the vendor fake)',
    checked: byRun.size,
    violations: [...byRun]
      .filter(([, ids]) => ids.length > 1)
      .map(([run, ids]) => `${run}: ${ids.length} batches (${ids.join(', ')})`),
  };
}
