// What `run --wait` shows about a run and how it ends: the queue position behind its Station's limit (computed as
// the controller admits: first come first served by creationTimestamp, then name, then uid), the one-line status,
// and the exit code. Pure.
import type { Agent, AgentPhase, Station } from '../api/index.ts';
import { CONDITION_READY, CONDITION_START_BLOCKED, REASON } from '../reconcile/reasons.ts';
import { concurrencyOf } from '../reconcile/station/admission.ts';
import { EXIT } from './exit.ts';
import { type Paint, phaseTone, sanitize } from './style.ts';
import { clockDuration } from './table.ts';

/** Where a Pending run stands in its Station's queue. */
export interface QueueInfo {
  /** 1 for the head of the queue. */
  readonly position: number;
  /** Runs waiting in the queue, this one included. */
  readonly queued: number;
  /** Runs of the Station holding a slot (Running, or with a Job). */
  readonly running: number;
  /** Runs the Station allows at once (0: unlimited); undefined when the Station could not be read. */
  readonly limit: number | undefined;
}

const isTerminal = (p: AgentPhase) => p === 'Succeeded' || p === 'Failed';
const condition = (a: Agent, type: string) => a.status.conditions.find((c) => c.type === type);

/** True for an Agent that waits for a run slot (not one waiting for its dependencies, which takes none). */
function waitsForSlot(a: Agent): boolean {
  if (a.metadata.deletionTimestamp !== undefined || a.status.phase !== 'Pending') return false;
  if (a.status.jobName !== undefined) return false;
  return condition(a, CONDITION_READY)?.reason !== REASON.waitingForDependencies;
}

function holdsSlot(a: Agent): boolean {
  if (a.metadata.deletionTimestamp !== undefined || isTerminal(a.status.phase)) return false;
  return a.status.phase === 'Running' || a.status.jobName !== undefined;
}

function queueTime(a: Agent): number {
  const t = Date.parse(a.metadata.creationTimestamp);
  return Number.isNaN(t) ? Number.POSITIVE_INFINITY : t;
}

/** Queue order: creationTimestamp, then name, then uid (as the controller admits). */
export function compareQueueOrder(a: Agent, b: Agent): number {
  const ta = queueTime(a);
  const tb = queueTime(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a.metadata.name !== b.metadata.name) return a.metadata.name < b.metadata.name ? -1 : 1;
  return a.metadata.uid === b.metadata.uid ? 0 : a.metadata.uid < b.metadata.uid ? -1 : 1;
}

/**
 * The queue position of `me` among `agents` (any Agents; those of its namespace and Station are counted), or
 * undefined when it is not waiting for a slot.
 */
export function queueInfo(
  me: Agent,
  agents: readonly Agent[],
  station: Station | undefined,
): QueueInfo | undefined {
  if (!waitsForSlot(me)) return undefined;
  const lane = agents.filter(
    (a) =>
      a.metadata.namespace === me.metadata.namespace &&
      a.spec.stationRef === me.spec.stationRef &&
      a.metadata.uid !== me.metadata.uid,
  );
  const queue = [...lane.filter(waitsForSlot), me].sort(compareQueueOrder);
  const limit = station === undefined ? undefined : concurrencyOf(station.spec).limit;
  return {
    position: queue.indexOf(me) + 1,
    queued: queue.length,
    running: lane.filter(holdsSlot).length,
    limit,
  };
}

/** `1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`… */
export function ordinal(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  switch (n % 10) {
    case 1:
      return `${n}st`;
    case 2:
      return `${n}nd`;
    case 3:
      return `${n}rd`;
    default:
      return `${n}th`;
  }
}

/** What a status line says, without the elapsed time. */
export interface RunView {
  readonly name: string;
  readonly phase: AgentPhase;
  /** The words after the phase. */
  readonly detail: string;
}

/** The view of a run at one moment: phase and what it waits for, or how it ended. */
export function runView(agent: Agent, queue: QueueInfo | undefined): RunView {
  const { phase } = agent.status;
  const ready = condition(agent, CONDITION_READY);
  const message = (m: string | undefined) => sanitize((m ?? '').replace(/\s+/g, ' ').trim());
  let detail: string;
  if (phase === 'Succeeded') detail = `exit ${agent.status.exitCode ?? 0}`;
  else if (phase === 'Failed') {
    const reason = message(agent.status.failureReason ?? ready?.message);
    detail = `exit ${exitCodeOf(agent)}${reason ? ` · ${reason}` : ''}`;
  } else if (agent.metadata.deletionTimestamp !== undefined) detail = 'being deleted';
  else if (phase === 'Serving') {
    const state = ready?.status === 'True' ? 'ready' : message(ready?.message) || 'starting';
    detail = `${state} · ${agent.status.url ?? ''}`;
  } else if (phase === 'Running') {
    const blocked = condition(agent, CONDITION_START_BLOCKED);
    if (blocked?.status === 'True')
      detail = `pod not starting: ${message(blocked.reason)}: ${message(blocked.message)}`;
    else detail = agent.status.jobName !== undefined ? `job ${agent.status.jobName}` : 'started';
  } else if (ready?.reason === REASON.waitingForDependencies)
    detail = `waiting for dependencies: ${message(ready.message)}`;
  else if (queue !== undefined && (ready?.reason === REASON.queued || queue.position > 1)) {
    const limit =
      queue.limit === undefined
        ? ''
        : `, Station allows ${queue.limit === 0 ? 'any number' : queue.limit} at once`;
    detail = `queued ${ordinal(queue.position)} of ${queue.queued} (${queue.running} running${limit})`;
  } else if (ready?.reason === REASON.queued) detail = `queued: ${message(ready.message)}`;
  else detail = 'waiting for the controller';
  // Every word of it may come from the cluster: made safe once more as a whole.
  return { name: sanitize(agent.metadata.name), phase, detail: sanitize(detail) };
}

/** Two views say the same thing (off a terminal, a line is printed only on change). */
export function sameView(a: RunView | undefined, b: RunView): boolean {
  return a !== undefined && a.name === b.name && a.phase === b.phase && a.detail === b.detail;
}

/** Cuts plain text to `columns - 1` characters (so a terminal never wraps it), marking the cut with `…`. */
export function fitLine(text: string, columns: number | undefined): string {
  if (columns === undefined || columns < 10) return text;
  const chars = Array.from(text);
  return chars.length <= columns - 1 ? text : `${chars.slice(0, columns - 2).join('')}…`;
}

/** The status line: `<name>  <Phase> · <detail> · <elapsed>`, cut to the terminal width, the phase coloured. */
export function statusLine(view: RunView, elapsedMs: number, paint: Paint, columns?: number): string {
  const head = `${view.name}  `;
  const plain = fitLine(`${head}${view.phase} · ${view.detail} · ${clockDuration(elapsedMs)}`, columns);
  if (!plain.startsWith(`${head}${view.phase}`)) return plain;
  return `${head}${paint(phaseTone(view.phase), view.phase)}${plain.slice(head.length + view.phase.length)}`;
}

/**
 * The exit code a finished run gives the CLI: a Succeeded run's exit code (0), a Failed run's own non-zero exit code
 * when it has one (1 to 255), else 1.
 */
export function exitCodeOf(agent: Agent): number {
  const code = agent.status.exitCode;
  if (agent.status.phase === 'Succeeded')
    return code !== undefined && code >= 0 && code <= 255 ? code : EXIT.ok;
  return code !== undefined && code >= 1 && code <= 255 ? code : EXIT.failed;
}
