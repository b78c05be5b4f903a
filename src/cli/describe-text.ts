// `describe agent` as text, in kubectl's describe layout: `Field:  value` lines, then the conditions and the Events
// as small tables. Everything the run left on the Agent (phase, exit code, reason, result, tokens and cost,
// session, trace), its Job and pod as they are now, and what could not be read said so. Pure.
import type { Agent, Job, Pod } from '../api/index.ts';
import type { EventRead, Optional } from './api.ts';
import { AGENT_CONTAINER } from './log-stream.ts';
import { ANNOTATION_RERUN_OF } from './rerun.ts';
import { type Paint, phaseTone, sanitize } from './style.ts';
import { clockDuration, humanAge, renderTable } from './table.ts';

/** What describe shows, as read. */
export interface DescribeInput {
  readonly agent: Agent;
  readonly job: Optional<Job> | undefined;
  readonly pods: Optional<Pod[]> | undefined;
  readonly events: Optional<EventRead[]>;
}

/** Lines of a result shown before it is cut. */
export const RESULT_LINES = 20;
const LABEL_WIDTH = 14;

/** One line of cluster text: control characters made visible, line breaks as blanks. */
const safe = (text: string): string => sanitize(text).replace(/[\n\t]/g, ' ');

/** A field whose value is already safe (painted: its colour codes must stay). */
const rawField = (label: string, value: string): string => `${`${label}:`.padEnd(LABEL_WIDTH)}${value}`;

/** A `Label:  value` line; the value is cluster text, made safe here. */
const field = (label: string, value: string): string => rawField(label, safe(value));

/** Continuation lines of a multi-line field value, indented under the value column (each line made safe). */
function block(label: string, lines: readonly string[]): string[] {
  if (lines.length === 0) return [];
  const [first, ...rest] = lines;
  return [field(label, first ?? ''), ...rest.map((l) => `${' '.repeat(LABEL_WIDTH)}${safe(l)}`)];
}

const ago = (iso: string | undefined, now: number): string => {
  const t = iso === undefined ? Number.NaN : Date.parse(iso);
  return Number.isNaN(t) ? '' : `${humanAge(now - t)} ago`;
};

function unreadable(what: string, r: Optional<unknown>): string {
  switch (r.kind) {
    case 'forbidden':
      return `<not allowed to read ${what}>`;
    case 'missing':
      return '<none: gone>';
    case 'error':
      return `<cannot read: ${r.error.kind === 'api' ? `${r.error.code} ${r.error.message}` : r.error.message}>`;
    case 'ok':
      return '';
  }
}

/** The Job in one line: its state and counts. */
export function jobSummary(job: Job): string {
  const state =
    job.status.conditions.find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')
      ?.type ?? (job.status.active ? 'Active' : 'Pending');
  const counts = [
    job.status.active ? `${job.status.active} active` : '',
    job.status.succeeded ? `${job.status.succeeded} succeeded` : '',
    job.status.failed ? `${job.status.failed} failed` : '',
  ].filter((x) => x !== '');
  return `${job.metadata.name} (${state}${counts.length > 0 ? `; ${counts.join(', ')}` : ''})`;
}

/** A pod in one line: phase, the agent container's state, the node. */
export function podSummary(pod: Pod): string {
  const st = pod.status.containerStatuses.find((c) => c.name === AGENT_CONTAINER);
  let agent = 'not started';
  if (st?.state.terminated !== undefined) {
    const t = st.state.terminated;
    agent = `terminated, exit ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}`;
  } else if (st?.state.running !== undefined) agent = 'running';
  else if (st?.state.waiting !== undefined)
    agent = `waiting${st.state.waiting.reason ? `: ${st.state.waiting.reason}` : ''}`;
  const node = pod.spec.nodeName ? `, node ${pod.spec.nodeName}` : '';
  return `${pod.metadata.name} (${pod.status.phase}; ${AGENT_CONTAINER} ${agent}${node})`;
}

/** An Event's age column: `5m`, or `5m (x3 over 10m)` for repeats. */
export function eventAge(e: EventRead, now: number): string {
  const last = e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata.creationTimestamp;
  const t = Date.parse(last);
  const age = Number.isNaN(t) ? '<unknown>' : humanAge(now - t);
  const first =
    e.firstTimestamp !== undefined && e.firstTimestamp !== null ? Date.parse(e.firstTimestamp) : Number.NaN;
  if ((e.count ?? 1) > 1 && !Number.isNaN(first)) return `${age} (x${e.count} over ${humanAge(now - first)})`;
  return age;
}

function resultLines(result: unknown): string[] {
  const text = typeof result === 'string' ? result : JSON.stringify(result, null, 2);
  const lines = sanitize(text).replace(/\s+$/, '').split('\n');
  return lines.length > RESULT_LINES
    ? [...lines.slice(0, RESULT_LINES), `… (${lines.length - RESULT_LINES} more lines: -o yaml shows it all)`]
    : lines;
}

/** The whole description. */
export function describeAgent(input: DescribeInput, now: number, paint: Paint): string {
  const { agent } = input;
  const st = agent.status;
  const out: string[] = [];
  out.push(field('Name', agent.metadata.name));
  out.push(field('Namespace', agent.metadata.namespace));
  out.push(field('Station', agent.spec.stationRef));
  if (agent.spec.model !== undefined) out.push(field('Model', agent.spec.model));
  const params = Object.entries(agent.spec.parameters).map(([k, v]) => {
    const one = sanitize(v).replace(/\s+/g, ' ');
    return `${k}=${one.length > 100 ? `${one.slice(0, 99)}…` : one}`;
  });
  out.push(...(params.length > 0 ? block('Parameters', params) : [field('Parameters', '<none>')]));
  for (const [label, value] of [
    ['Task', agent.spec.taskId],
    ['Repository', agent.spec.targetRepo],
    ['Branch', agent.spec.branch],
    ['Resumes', agent.spec.resumeSession],
  ] as const)
    if (value !== undefined) out.push(field(label, value));
  const rerunOf = agent.metadata.annotations[ANNOTATION_RERUN_OF];
  if (rerunOf !== undefined && rerunOf !== '') out.push(field('Rerun Of', rerunOf));
  out.push(
    field('Created', `${agent.metadata.creationTimestamp} (${ago(agent.metadata.creationTimestamp, now)})`),
  );
  if (agent.metadata.deletionTimestamp !== undefined)
    out.push(field('Deleting', `since ${agent.metadata.deletionTimestamp}`));
  out.push(rawField('Phase', paint(phaseTone(st.phase), safe(st.phase))));
  if (st.exitCode !== undefined) out.push(field('Exit Code', String(st.exitCode)));
  if (st.startedAt !== undefined) out.push(field('Started', `${st.startedAt} (${ago(st.startedAt, now)})`));
  if (st.completedAt !== undefined) {
    const took =
      st.startedAt !== undefined
        ? ` (took ${clockDuration(Date.parse(st.completedAt) - Date.parse(st.startedAt))})`
        : '';
    out.push(field('Completed', `${st.completedAt}${took}`));
  }
  if (st.failureReason !== undefined) out.push(...block('Failure', sanitize(st.failureReason).split('\n')));
  if (st.jobName !== undefined) {
    const job = input.job;
    out.push(
      field(
        'Job',
        job?.kind === 'ok'
          ? jobSummary(job.value)
          : `${st.jobName} ${job ? unreadable('jobs', job) : ''}`.trim(),
      ),
    );
    const pods = input.pods;
    if (pods?.kind === 'ok')
      out.push(
        ...(pods.value.length > 0 ? block('Pods', pods.value.map(podSummary)) : [field('Pods', '<none>')]),
      );
    else if (pods !== undefined) out.push(field('Pods', unreadable('pods', pods)));
  } else out.push(field('Job', '<none yet>'));
  if (st.batchId !== undefined)
    out.push(
      field(
        'Batch',
        `${st.batchProvider ?? '?'} ${st.batchId}${st.batchFallback ? ' (fell back to a Job)' : ''}`,
      ),
    );
  if (st.sessionId !== undefined) out.push(field('Session', st.sessionId));
  const saved = st.session;
  if (saved !== undefined && (saved.turns ?? 0) > 0)
    out.push(
      field(
        'Turns',
        `${saved.turns ?? 0} (saved ${saved.savedTurn ?? 0}${saved.restarts ? `, restored after pod loss ${saved.restarts}×` : ''}${saved.lastPromptTime !== undefined ? `, last prompt ${saved.lastPromptTime}` : ''}${st.phase === 'Suspended' && saved.suspendedAt !== undefined ? `, suspended ${saved.suspendedAt}` : ''})`,
      ),
    );
  if (st.traceID !== undefined) out.push(field('Trace', st.traceID));
  const u = st.tokenUsage;
  if (u !== undefined)
    out.push(
      field(
        'Tokens',
        `${u.total} (input ${u.input}, output ${u.output}, cache read ${u.cacheRead}, cache write ${u.cacheWrite})`,
      ),
    );
  const c = st.costEstimate;
  if (c !== undefined)
    out.push(
      field(
        'Cost',
        `$${c.usd} (${c.source === 'cli' ? 'reported by the CLI' : 'price table'}${c.model ? `, ${c.model}` : ''})`,
      ),
    );
  if (st.result !== undefined) out.push(...block('Result', resultLines(st.result)));

  out.push('Conditions:');
  if (st.conditions.length === 0) out.push('  <none>');
  else {
    const table = renderTable({
      header: ['Type', 'Status', 'Reason', 'Age', 'Message'],
      rows: st.conditions.map((cd) => [
        cd.type,
        cd.status,
        cd.reason,
        humanAge(now - Date.parse(cd.lastTransitionTime)),
        sanitize(cd.message).replace(/\s+/g, ' '),
      ]),
    });
    out.push(...table.lines.map((l) => `  ${l}`));
  }

  if (input.events.kind !== 'ok') out.push(field('Events', unreadable('events', input.events)));
  else if (input.events.value.length === 0) out.push('Events:       <none>');
  else {
    const sorted = [...input.events.value].sort(
      (a, b) =>
        (Date.parse(a.lastTimestamp ?? a.eventTime ?? a.metadata.creationTimestamp) || 0) -
        (Date.parse(b.lastTimestamp ?? b.eventTime ?? b.metadata.creationTimestamp) || 0),
    );
    const table = renderTable({
      header: ['Type', 'Reason', 'Age', 'From', 'Message'],
      rows: sorted.map((e) => [
        e.type === 'Warning' ? { text: 'Warning', paint: (t: string) => paint('yellow', t) } : (e.type ?? ''),
        e.reason ?? '',
        eventAge(e, now),
        e.source?.component ?? e.reportingComponent ?? '',
        sanitize(e.message ?? '').replace(/\s+/g, ' '),
      ]),
    });
    out.push('Events:', ...table.lines.map((l) => `  ${l}`));
  }
  return `${out.join('\n')}\n`;
}
