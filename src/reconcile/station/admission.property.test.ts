// Property test of docs/design/reference-behaviour.md#d-l-admission-by-construction: whatever order creates,
// reconciles, API writes, watch echoes (Agents and Jobs,
// each stream in order but late by any amount relative to the other and to the writes), run completions, user
// deletes and leadership changes happen in, no more runs than the Station allows are ever in flight at the API
// server, and every Agent eventually runs. The controller side is the real core: `decide` on a snapshot whose
// Station picture comes from a `StationBook` fed the way the shell feeds it (src/controller/run-controller.ts),
// with the shell's rules for admissions (recorded before the Job is asked for, given back only if it never was).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Agent } from '../../api/index.ts';
import { jobNameFor } from '../../jobs/index.ts';
import type { Action } from '../actions.ts';
import { decide } from '../agent/decide.ts';
import type { JobObservation, Snapshot } from '../snapshot.ts';
import {
  agent as agentFixture,
  definition,
  job as jobFixture,
  NS,
  station as stationFixture,
} from '../test-fixtures.ts';
import { StationBook } from './book.ts';

const OPTIONS = {
  agentImage: 'agent-controller:test',
  maxOutputBytes: 4096,
  requeueMs: 15000,
  batch: { enabled: true, pollMs: 60000 },
  realtime: { enabled: true },
};

/** An Agent as the API server holds it. */
interface ApiAgent {
  readonly name: string;
  readonly uid: string;
  readonly created: number;
  rv: number;
  status: Record<string, unknown>;
}
interface ApiJob {
  readonly ownerUid: string;
  readonly owner: string;
  finished: boolean;
}
type AgentEvent =
  | { readonly type: 'upsert'; readonly agent: Agent }
  | { readonly type: 'delete'; readonly name: string };
type JobEvent = { readonly type: 'upsert' | 'delete'; readonly name: string; readonly ownerUid: string };

/** One reconcile's writes, executed one request at a time against the API server. */
interface Chain {
  readonly agent: string;
  readonly ops: Action[];
  /** The controller admission this chain carries (released if its Job create is never sent). */
  readonly admits: boolean;
  createSent: boolean;
}

type Command =
  | { readonly kind: 'create'; readonly i: number; readonly second: number }
  | { readonly kind: 'deliverAgent' }
  | { readonly kind: 'deliverJob' }
  | { readonly kind: 'reconcile'; readonly i: number }
  | { readonly kind: 'step'; readonly c: number }
  | { readonly kind: 'finish'; readonly i: number }
  | { readonly kind: 'userDelete'; readonly i: number }
  | { readonly kind: 'leaderChange'; readonly land: number };

class World {
  readonly agents = new Map<string, ApiAgent>();
  readonly jobs = new Map<string, ApiJob>();
  readonly agentLog: AgentEvent[] = [];
  readonly jobLog: JobEvent[] = [];
  rv = 1;
  uids = 0;
  // The controller.
  book = new StationBook<Agent>();
  agentCursor = 0;
  jobCursor = 0;
  chains: Chain[] = [];
  readonly cache = new Map<string, Agent>();
  readonly station;
  /** Runs the Station allows at once, as the test reads its spec (Infinity: unlimited). */
  readonly limit: number;
  maxInFlight = 0;

  constructor(readonly spec: StationCase) {
    this.station = stationFixture('stn', {
      concurrencyPolicy: spec.concurrencyPolicy,
      maxConcurrentRuns: spec.maxConcurrentRuns,
    });
    this.limit = spec.limit;
  }

  toAgent(a: ApiAgent): Agent {
    return agentFixture(a.name, { created: a.created, uid: a.uid, rv: String(a.rv), status: a.status });
  }

  publishAgent(a: ApiAgent): void {
    a.rv = ++this.rv;
    this.agentLog.push({ type: 'upsert', agent: this.toAgent(a) });
  }

  /** Deletes an Agent; the garbage collector removes its Job at once (the model's simplification). */
  deleteAgent(name: string): void {
    if (!this.agents.delete(name)) return;
    this.agentLog.push({ type: 'delete', name });
    const jobName = jobNameFor(name);
    const j = this.jobs.get(jobName);
    if (j === undefined) return;
    this.jobs.delete(jobName);
    this.jobLog.push({ type: 'delete', name: jobName, ownerUid: j.ownerUid });
  }

  /** POST of the run's Job: 409 when it exists (the shell then adopts it), 404-like when the Agent is gone. */
  createJob(agentName: string, jobName: string): void {
    const owner = this.agents.get(agentName);
    if (this.jobs.has(jobName) || owner === undefined) return;
    this.jobs.set(jobName, { ownerUid: owner.uid, owner: owner.name, finished: false });
    this.jobLog.push({ type: 'upsert', name: jobName, ownerUid: owner.uid });
  }

  /** Runs in flight at the API server: Agents that exist, are not finished, and own an unfinished Job. */
  inFlight(): number {
    let n = 0;
    for (const a of this.agents.values()) {
      const phase = a.status.phase;
      if (phase === 'Succeeded' || phase === 'Failed') continue;
      const j = this.jobs.get(jobNameFor(a.name));
      if (j !== undefined && j.ownerUid === a.uid && !j.finished) n++;
    }
    return n;
  }

  run(cmd: Command): void {
    switch (cmd.kind) {
      case 'create': {
        const name = `a${cmd.i}`;
        if (this.agents.has(name)) return;
        const a: ApiAgent = { name, uid: `u${++this.uids}`, created: cmd.second, rv: 0, status: {} };
        this.agents.set(name, a);
        this.publishAgent(a);
        return;
      }
      case 'deliverAgent': {
        const e = this.agentLog[this.agentCursor];
        if (e === undefined) return;
        this.agentCursor++;
        if (e.type === 'upsert') {
          this.cache.set(e.agent.metadata.name, e.agent);
          this.book.upsert(`${NS}/${e.agent.metadata.name}`, e.agent);
        } else {
          this.cache.delete(e.name);
          this.book.remove(`${NS}/${e.name}`);
        }
        return;
      }
      case 'deliverJob': {
        const e = this.jobLog[this.jobCursor];
        if (e === undefined) return;
        this.jobCursor++;
        if (e.type === 'upsert') this.book.jobSeen(`${NS}/${e.name}`, e.ownerUid);
        else this.book.jobGone(`${NS}/${e.name}`);
        return;
      }
      case 'reconcile':
        this.reconcile(`a${cmd.i}`);
        return;
      case 'step':
        this.step(cmd.c);
        return;
      case 'finish': {
        const j = this.jobs.get(jobNameFor(`a${cmd.i}`));
        if (j === undefined || j.finished) return;
        j.finished = true;
        this.jobLog.push({ type: 'upsert', name: jobNameFor(`a${cmd.i}`), ownerUid: j.ownerUid });
        return;
      }
      case 'userDelete':
        this.deleteAgent(`a${cmd.i}`);
        return;
      case 'leaderChange': {
        // The old leader's handlers end: a write already sent lands (we run each chain's next op if it is the
        // Job create, to model a create whose answer was lost); nothing else is sent (the fence). The new
        // leader starts from quorum LISTs of Agents and Jobs.
        const old = this.chains;
        this.chains = [];
        for (const [k, c] of old.entries()) {
          const op = c.ops[0];
          if (op?.kind === 'createJob' && ((cmd.land >> k) & 1) === 1)
            this.createJob(c.agent, op.job.metadata.name);
        }
        this.book = new StationBook<Agent>();
        this.cache.clear();
        for (const a of this.agents.values()) {
          const parsed = this.toAgent(a);
          this.cache.set(a.name, parsed);
          this.book.upsert(`${NS}/${a.name}`, parsed);
        }
        for (const [name, j] of this.jobs) this.book.jobSeen(`${NS}/${name}`, j.ownerUid);
        this.agentCursor = this.agentLog.length;
        this.jobCursor = this.jobLog.length;
        return;
      }
    }
  }

  /** The shell's reconcile, synchronously up to its writes: snapshot from the cache and book, decide, record. */
  reconcile(name: string): void {
    const cached = this.cache.get(name);
    if (cached === undefined || this.chains.some((c) => c.agent === name)) return;
    const key = `${NS}/${name}`;
    const queue = this.book.view(key);
    if (queue === undefined) return;
    // A live read of the Job (the shell reads it from the Job cache or the API server when it needs it).
    const apiJob = this.jobs.get(jobNameFor(name));
    const job: JobObservation =
      apiJob === undefined
        ? { kind: 'absent' }
        : {
            kind: 'present',
            job: jobFixture(name, {
              owner: { name: apiJob.owner, uid: apiJob.ownerUid },
              ...(apiJob.finished ? { conditions: [{ type: 'Complete', status: 'True' }] } : {}),
            }),
            evidence: { kind: 'podGone' },
          };
    const snapshot: Snapshot = {
      agent: cached,
      station: this.station,
      definition: definition(),
      job: cached.status.phase === 'Pending' ? { kind: 'unknown' } : job,
      queue,
      options: OPTIONS,
    };
    const decision = decide(snapshot, new Date(Date.parse('2025-03-01T12:10:00Z')));
    if (decision.needs !== undefined) throw new Error(`unexpected needs ${decision.needs}`);
    const ops = decision.actions.filter(
      (a) => a.kind === 'createJob' || a.kind === 'patchStatus' || a.kind === 'deleteAgent',
    );
    const admits = ops.some((a) => a.kind === 'createJob');
    if (admits) this.book.admit(key);
    if (ops.length > 0) this.chains.push({ agent: name, ops, admits, createSent: false });
  }

  /** Sends the next request of chain `c` and applies it at the API server. */
  step(c: number): void {
    const chain = this.chains[c];
    if (chain === undefined) return;
    const op = chain.ops.shift();
    const end = (): void => {
      this.chains.splice(this.chains.indexOf(chain), 1);
      if (chain.admits && !chain.createSent) this.book.release(`${NS}/${chain.agent}`);
    };
    if (op === undefined) {
      end();
      return;
    }
    switch (op.kind) {
      case 'createJob': {
        chain.createSent = true;
        this.createJob(chain.agent, op.job.metadata.name);
        break;
      }
      case 'patchStatus': {
        const a = this.agents.get(chain.agent);
        if (a === undefined || String(a.rv) !== op.resourceVersion) {
          end(); // 404 / 409: superseded
          return;
        }
        a.status = { ...a.status, ...JSON.parse(JSON.stringify(op.status)) };
        this.publishAgent(a);
        break;
      }
      case 'deleteAgent': {
        const victim = this.agents.get(op.ref.name);
        this.book.setDeleting(op.ref.uid, true);
        if (victim === undefined || String(victim.rv) !== op.resourceVersion) {
          this.book.setDeleting(op.ref.uid, false);
          if (op.purpose === 'preempt') {
            end();
            return;
          }
          break;
        }
        this.deleteAgent(op.ref.name);
        break;
      }
      default:
        break;
    }
    if (chain.ops.length === 0) end();
  }

  /** Delivers the creation of Agent `i` (the i-th event of the log) to the cache, once, and reconciles it. */
  deliverAndReconcile(i: number): void {
    const e = this.agentLog[i];
    if (e?.type !== 'upsert' || this.cache.has(e.agent.metadata.name)) return;
    this.cache.set(e.agent.metadata.name, e.agent);
    this.book.upsert(`${NS}/${e.agent.metadata.name}`, e.agent);
    this.reconcile(e.agent.metadata.name);
  }

  /** Delivers every pending watch event to the cache. */
  settleCache(): void {
    while (this.agentCursor < this.agentLog.length) this.run({ kind: 'deliverAgent' });
    while (this.jobCursor < this.jobLog.length) this.run({ kind: 'deliverJob' });
  }

  /** Delivers everything, then reconciles and runs writes until nothing changes (or a bound). */
  settle(): void {
    for (let round = 0; round < 400; round++) {
      const before = `${this.rv}/${this.jobLog.length}/${this.chains.length}/${this.agentCursor}/${this.jobCursor}`;
      this.settleCache();
      this.check();
      for (const name of [...this.cache.keys()]) this.reconcile(name);
      while (this.chains.length > 0) {
        this.step(0);
        this.check();
      }
      for (const [name, j] of this.jobs) {
        if (!j.finished) this.run({ kind: 'finish', i: Number(name.replace(/^agent-job-a/, '')) });
      }
      const after = `${this.rv}/${this.jobLog.length}/${this.chains.length}/${this.agentCursor}/${this.jobCursor}`;
      if (after === before) return;
    }
  }

  check(): void {
    const n = this.inFlight();
    this.maxInFlight = Math.max(this.maxInFlight, n);
    assert.ok(n <= this.limit, `${n} runs in flight, limit ${this.limit}`);
  }

  /** Names of the Agents whose Job the API server holds, sorted. */
  withJobs(): string[] {
    return [...this.jobs.values()].map((j) => j.owner).sort();
  }
}

/**
 * A Station as the test sets it up, with the limit the test expects of it (docs/design/reference-behaviour.md#concurrency,
 * written here by hand): `Allow` runs `maxConcurrentRuns` at once, 0 meaning no limit; `Forbid` and `Replace` run one.
 */
interface StationCase {
  readonly concurrencyPolicy: 'Allow' | 'Forbid' | 'Replace';
  readonly maxConcurrentRuns: number;
  readonly limit: number;
}

/** Queue order, by hand: creationTimestamp (here the second Agent `a<i>` was created at), then name. */
function fifo(seconds: readonly number[]): (i: number, j: number) => number {
  return (i, j) => {
    const [si, sj] = [seconds[i] ?? 0, seconds[j] ?? 0];
    if (si !== sj) return si - sj;
    const [ni, nj] = [`a${i}`, `a${j}`];
    return ni < nj ? -1 : ni > nj ? 1 : 0;
  };
}

/** The distinct values of `xs`, first occurrence first. */
const distinct = (xs: readonly number[]): number[] => [...new Set(xs)];
const names = (is: readonly number[]): string[] => is.map((i) => `a${i}`).sort();

const AGENTS = 8;
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('create' as const), i: fc.nat(AGENTS - 1), second: fc.nat(3) }),
  },
  { weight: 4, arbitrary: fc.constant({ kind: 'deliverAgent' as const }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'deliverJob' as const }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('reconcile' as const), i: fc.nat(AGENTS - 1) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('step' as const), c: fc.nat(5) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('finish' as const), i: fc.nat(AGENTS - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('userDelete' as const), i: fc.nat(AGENTS - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('leaderChange' as const), land: fc.nat(63) }) },
);
const stationSpec: fc.Arbitrary<StationCase> = fc.oneof(
  fc
    .integer({ min: 1, max: 3 })
    .map((n) => ({ concurrencyPolicy: 'Allow' as const, maxConcurrentRuns: n, limit: n })),
  fc.constant({ concurrencyPolicy: 'Allow' as const, maxConcurrentRuns: 0, limit: Number.POSITIVE_INFINITY }),
  fc
    .integer({ min: 0, max: 2 })
    .map((n) => ({ concurrencyPolicy: 'Forbid' as const, maxConcurrentRuns: n, limit: 1 })),
  fc
    .integer({ min: 0, max: 2 })
    .map((n) => ({ concurrencyPolicy: 'Replace' as const, maxConcurrentRuns: n, limit: 1 })),
);

describe('admission under any interleaving (D-l)', () => {
  it('never has more runs in flight than the Station allows, and every Agent runs once things settle', () => {
    fc.assert(
      fc.property(stationSpec, fc.array(command, { minLength: 1, maxLength: 120 }), (spec, commands) => {
        const w = new World(spec);
        for (const cmd of commands) {
          w.run(cmd);
          w.check();
        }
        w.settle();
        // Liveness: with every echo delivered and every run finished, no Agent is left waiting (a Replace
        // victim is gone; everything else has run to the end).
        for (const a of w.agents.values()) {
          const phase = a.status.phase;
          assert.ok(phase === 'Succeeded' || phase === 'Failed', `${a.name} ended ${String(phase)}`);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('a burst decided from one stale cache admits exactly the limit (bursts of 30 at once)', () => {
    fc.assert(
      fc.property(
        stationSpec,
        fc.array(fc.nat(2), { minLength: 30, maxLength: 30 }),
        fc.array(fc.nat(29), { minLength: 30, maxLength: 30 }),
        (spec, seconds, order) => {
          const w = new World(spec);
          for (const [i, second] of seconds.entries()) w.run({ kind: 'create', i, second });
          // Agents reach the cache in a random order (creationTimestamp has one-second resolution, and commit
          // order is not creation order), and each is reconciled as soon as it arrives, before any write lands.
          for (const i of order) w.deliverAndReconcile(i);
          while (w.chains.length > 0) {
            w.step(w.chains.length - 1);
            w.check();
          }
          // The model: an arriving Agent starts iff the runs started so far plus the Agents waiting ahead of it in
          // queue order (those that arrived before it) leave room under the limit; otherwise it waits (Replace
          // too: no run shows Running yet, so there is nothing to preempt).
          const before = fifo(seconds);
          const started: number[] = [];
          const waiting: number[] = [];
          for (const i of distinct(order)) {
            const ahead = waiting.filter((j) => before(j, i) < 0).length;
            (started.length + ahead < spec.limit ? started : waiting).push(i);
          }
          const arrived = distinct(order).length;
          assert.equal(
            started.length,
            Math.min(spec.limit, arrived),
            'the model itself starts min(limit, arrived)',
          );
          assert.deepEqual(w.withJobs(), names(started));
          assert.equal(w.inFlight(), Math.min(spec.limit, arrived));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('Agents all in the cache, reconciled in any order before any write lands: the first min(limit, n) in queue order run', () => {
    fc.assert(
      fc.property(
        stationSpec,
        fc.array(fc.nat(2), { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(40), { minLength: 1, maxLength: 40 }),
        (spec, seconds, order) => {
          const w = new World(spec);
          for (const [i, second] of seconds.entries()) w.run({ kind: 'create', i, second });
          w.settleCache();
          for (const i of order) w.reconcile(`a${i % seconds.length}`);
          while (w.chains.length > 0) {
            w.step(w.chains.length - 1);
            w.check();
          }
          const eligible = distinct(order.map((i) => i % seconds.length));
          const queue = seconds.map((_, i) => i).sort(fifo(seconds));
          // Only reconciled Agents can start; those that do are the head of the whole queue.
          const head = queue.slice(0, Math.min(spec.limit, seconds.length));
          const expected = head.filter((i) => eligible.includes(i));
          assert.deepEqual(w.withJobs(), names(expected));
          if (eligible.length === seconds.length)
            assert.equal(w.inFlight(), Math.min(spec.limit, seconds.length));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a new leader counts the runs the previous one half admitted (Job created, Running not yet written)', () => {
    fc.assert(
      fc.property(
        stationSpec,
        fc.array(fc.nat(2), { minLength: 6, maxLength: 12 }),
        fc.array(fc.nat(40), { minLength: 40, maxLength: 40 }),
        (spec, seconds, order) => {
          const w = new World(spec);
          for (const [i, second] of seconds.entries()) w.run({ kind: 'create', i, second });
          // The old leader sees the Agents arrive in commit order, which is not queue order, and reconciles each
          // on arrival.
          for (const i of order) w.deliverAndReconcile(i % seconds.length);
          // Every admission's Job create lands; the old leader stops before any Running patch.
          w.run({ kind: 'leaderChange', land: 0xffff });
          w.check();
          for (const i of order) {
            w.reconcile(`a${i % seconds.length}`);
            while (w.chains.length > 0) {
              w.step(0);
              w.check();
            }
            w.settleCache();
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
