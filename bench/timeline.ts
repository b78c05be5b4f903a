import { peakOverlap, perSecond, type Summary, summarize } from './stats.ts';

/** Job condition types that carry the Job controller's verdict (the early `…Target/…Met` forms included). */
export const VERDICT_CONDITIONS = ['Complete', 'Failed', 'SuccessCriteriaMet', 'FailureTarget'] as const;

/** Agent phases after which the controller is done with a run. */
export const TERMINAL_AGENT_PHASES = ['Succeeded', 'Failed'] as const;
export type TerminalAgentPhase = (typeof TERMINAL_AGENT_PHASES)[number];

/** Client-side timestamps (epoch ms) of one Agent's life as the benchmark saw it. */
export interface AgentTimes {
  /** Just before the POST was sent. */
  postStartMs?: number;
  /** When the POST response had been read (the Agent exists from here on). */
  createdMs?: number;
  /** First watch event of the Job the controller created for the Agent. */
  jobSeenMs?: number;
  /** First watch event where the Job carries a verdict condition with status True. */
  jobFinishedMs?: number;
  jobVerdict?: string;
  /** First watch event where the Agent's status.phase is terminal. */
  terminalMs?: number;
  phase?: TerminalAgentPhase;
  /** The Agent was deleted before the benchmark saw it terminal. */
  lostMs?: number;
}

/** The fields of a watched Job this benchmark reads. */
export interface JobView {
  /** Name of the Agent that controls the Job (its controller ownerReference), if any. */
  readonly owner: string | undefined;
  /** Types of the Job's conditions whose status is "True". */
  readonly trueConditions: readonly string[];
}

/** The fields of a watched Agent this benchmark reads. */
export interface AgentView {
  readonly name: string;
  readonly phase: string | undefined;
}

/**
 * Per-Agent timestamps fed by the benchmark's own POSTs and by its watches on Agents and Jobs. Only the first
 * sighting of each milestone counts, so duplicate or replayed watch events (a re-list after a reconnect) never move
 * a timestamp. No I/O and no clock: every time comes in as an argument.
 */
export class Timeline {
  readonly #agents = new Map<string, AgentTimes>();

  #entry(name: string): AgentTimes {
    let t = this.#agents.get(name);
    if (!t) {
      t = {};
      this.#agents.set(name, t);
    }
    return t;
  }

  /** The benchmark is about to POST Agent `name`. */
  postStarted(name: string, at: number): void {
    this.#entry(name).postStartMs ??= at;
  }

  /** The POST of Agent `name` returned successfully at `at`. */
  created(name: string, at: number): void {
    this.#entry(name).createdMs ??= at;
  }

  /** A watch event for a Job (any type but DELETED) arrived at `at`. Jobs not owned by an Agent are ignored. */
  jobEvent(job: JobView, at: number): void {
    if (job.owner === undefined) return;
    const t = this.#entry(job.owner);
    t.jobSeenMs ??= at;
    if (t.jobFinishedMs === undefined) {
      const verdict = VERDICT_CONDITIONS.find((c) => job.trueConditions.includes(c));
      if (verdict !== undefined) {
        t.jobFinishedMs = at;
        t.jobVerdict = verdict;
      }
    }
  }

  /** A watch event for an Agent arrived at `at`; `deleted` for a DELETED event. */
  agentEvent(agent: AgentView, at: number, deleted = false): void {
    const t = this.#entry(agent.name);
    const phase = TERMINAL_AGENT_PHASES.find((p) => p === agent.phase);
    if (phase !== undefined && t.terminalMs === undefined) {
      t.terminalMs = at;
      t.phase = phase;
    }
    if (deleted && t.terminalMs === undefined) t.lostMs ??= at;
  }

  /** How many of the Agents the benchmark created are terminal (or lost) so far. */
  settled(): number {
    let n = 0;
    for (const t of this.#agents.values())
      if (t.createdMs !== undefined && (t.terminalMs !== undefined || t.lostMs !== undefined)) n++;
    return n;
  }

  /** Progress counters over the Agents the benchmark created. */
  progress(): { created: number; jobs: number; finished: number; terminal: number } {
    let created = 0;
    let jobs = 0;
    let finished = 0;
    let terminal = 0;
    for (const t of this.#agents.values()) {
      if (t.createdMs === undefined) continue;
      created++;
      if (t.jobSeenMs !== undefined) jobs++;
      if (t.jobFinishedMs !== undefined) finished++;
      if (t.terminalMs !== undefined) terminal++;
    }
    return { created, jobs, finished, terminal };
  }

  /** A copy of every Agent's timestamps, keyed by name. */
  snapshot(): ReadonlyMap<string, Readonly<AgentTimes>> {
    return new Map([...this.#agents].map(([k, t]) => [k, { ...t }]));
  }
}

/** What the controller run measured, ready to print. Latencies in ms, rates per second, times relative to start. */
export interface ControllerRunFigures {
  readonly requested: number;
  readonly created: number;
  readonly createFailures: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly lost: number;
  /** Created Agents never seen terminal (timed out). */
  readonly unfinished: number;
  readonly verdicts: Readonly<Record<string, number>>;
  /** Agent POST returned → first watch event of its Job. */
  readonly createToJob: Summary;
  /** Job verdict seen → Agent terminal phase seen. */
  readonly finishedToTerminal: Summary;
  /** Agent POST returned → Agent terminal phase seen. */
  readonly createToTerminal: Summary;
  /** Job seen → Job verdict seen: the pod's own run time on the node, for context (not the controller's doing). */
  readonly jobRun: Summary;
  /** Agent POST latency of the creating client. */
  readonly post: Summary;
  /** First POST sent → last POST returned. */
  readonly createWallMs: number;
  /** First POST sent → last Agent terminal. */
  readonly wallMs: number;
  readonly agentsPerSecond: number;
  readonly jobsPerSecond: number;
  /** Most Jobs seen but not yet finished at one time (pods in flight). */
  readonly peakJobsInFlight: number;
}

function defined(x: number | undefined): x is number {
  return x !== undefined;
}

function minOf(xs: readonly number[]): number | undefined {
  return xs.length === 0 ? undefined : xs.reduce((a, b) => Math.min(a, b));
}

function maxOf(xs: readonly number[]): number | undefined {
  return xs.length === 0 ? undefined : xs.reduce((a, b) => Math.max(a, b));
}

/**
 * Turns the timestamps of a controller run into figures. Only Agents whose POST succeeded count; a latency is
 * computed only when both of its endpoints were seen. Throughputs run from the first POST sent to the last
 * milestone of their kind (Agents/s to the last terminal Agent, Jobs/s to the last Job seen).
 */
export function controllerFigures(
  times: ReadonlyMap<string, Readonly<AgentTimes>>,
  requested: number,
): ControllerRunFigures {
  const all = [...times.values()];
  const ok = all.filter((t) => t.createdMs !== undefined);
  const diff = (pick: (t: Readonly<AgentTimes>) => [number | undefined, number | undefined]): number[] =>
    ok.flatMap((t) => {
      const [a, b] = pick(t);
      return a !== undefined && b !== undefined ? [b - a] : [];
    });
  const start = minOf(all.map((t) => t.postStartMs).filter(defined)) ?? 0;
  const lastCreated = maxOf(ok.map((t) => t.createdMs).filter(defined));
  const terminals = ok.map((t) => t.terminalMs).filter(defined);
  const jobs = ok.map((t) => t.jobSeenMs).filter(defined);
  const lastTerminal = maxOf(terminals);
  const lastJob = maxOf(jobs);
  const verdicts: Record<string, number> = {};
  for (const t of ok)
    if (t.jobVerdict !== undefined) verdicts[t.jobVerdict] = (verdicts[t.jobVerdict] ?? 0) + 1;
  return {
    requested,
    created: ok.length,
    createFailures: all.filter((t) => t.postStartMs !== undefined && t.createdMs === undefined).length,
    succeeded: ok.filter((t) => t.phase === 'Succeeded').length,
    failed: ok.filter((t) => t.phase === 'Failed').length,
    lost: ok.filter((t) => t.terminalMs === undefined && t.lostMs !== undefined).length,
    unfinished: ok.filter((t) => t.terminalMs === undefined && t.lostMs === undefined).length,
    verdicts,
    createToJob: summarize(diff((t) => [t.createdMs, t.jobSeenMs])),
    finishedToTerminal: summarize(diff((t) => [t.jobFinishedMs, t.terminalMs])),
    createToTerminal: summarize(diff((t) => [t.createdMs, t.terminalMs])),
    jobRun: summarize(diff((t) => [t.jobSeenMs, t.jobFinishedMs])),
    post: summarize(diff((t) => [t.postStartMs, t.createdMs])),
    createWallMs: lastCreated === undefined ? Number.NaN : lastCreated - start,
    wallMs: lastTerminal === undefined ? Number.NaN : lastTerminal - start,
    agentsPerSecond:
      lastTerminal === undefined ? Number.NaN : perSecond(terminals.length, lastTerminal - start),
    jobsPerSecond: lastJob === undefined ? Number.NaN : perSecond(jobs.length, lastJob - start),
    peakJobsInFlight: peakOverlap(
      ok.flatMap((t) =>
        t.jobSeenMs === undefined
          ? []
          : [
              t.jobFinishedMs === undefined
                ? { start: t.jobSeenMs }
                : { start: t.jobSeenMs, end: t.jobFinishedMs },
            ],
      ),
    ),
  };
}
