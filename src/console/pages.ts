// The console's pages, rendered on the server from what was read (pure: no I/O, the time passed in). Every value
// from the cluster goes through `html`, which escapes it. No page ever shows a token or a Secret: the Agent's spec
// and status, its Events, its Job and pod summaries, and the run's own output are all it shows.
import { type Agent, DNS1123_SUBDOMAIN, type Job, type Pod, type Station } from '../api/index.ts';
import type { EventRead, Optional } from '../cli/api.ts';
import { eventAge, jobSummary, podSummary } from '../cli/describe-text.ts';
import { ANNOTATION_RERUN_OF } from '../cli/rerun.ts';
import { clockDuration, humanAge } from '../cli/table.ts';
import { type Html, html, query } from './html.ts';

/** Who is looking, and the token their forms echo. */
export interface Viewer {
  readonly username: string;
  readonly csrf: string;
}

/** Phases in the order the console lists them. */
export const PHASES = ['Pending', 'Running', 'Suspended', 'Serving', 'Succeeded', 'Failed'] as const;

const PHASE_CLASS: Readonly<Record<string, string>> = {
  Pending: 'pending',
  Running: 'running',
  Serving: 'running',
  Succeeded: 'succeeded',
  Failed: 'failed',
};

/** A phase as a coloured badge. */
export function phaseBadge(phase: string): Html {
  return html`<span class="badge ${PHASE_CLASS[phase] ?? 'unknown'}">${phase}</span>`;
}

/** The whole page around `body`. */
export function layout(title: string, body: Html, viewer: Viewer | undefined, namespace?: string): string {
  const header =
    viewer === undefined
      ? html``
      : html`<nav><a class="brand" href="/agents${query({ namespace })}">agent-controller</a>
<a href="/agents${query({ namespace })}">Agents</a>
<span class="spacer"></span>
<span class="user" title="signed in as">${viewer.username}</span>
<form method="post" action="/logout" class="inline"><input type="hidden" name="_csrf" value="${viewer.csrf}">
<button type="submit" class="link">Sign out</button></form></nav>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · agent-controller</title><link rel="icon" href="/favicon.ico" type="image/svg+xml">
<link rel="stylesheet" href="/static/console.css">
<script src="/static/console.js" defer></script></head>
<body${viewer === undefined ? '' : html` data-csrf="${viewer.csrf}"`}>${header}<main>${body}</main></body></html>`
    .text;
}

/** The sign-in page: paste a bearer token (a local run prints a one-time link instead). */
export function loginPage(message: string | undefined, csrf: string): string {
  return layout(
    'Sign in',
    html`<section class="login"><h1>Sign in</h1>
${message !== undefined ? html`<p class="error" role="alert">${message}</p>` : ''}
<p>Paste a Kubernetes bearer token. The console asks the API server who it belongs to (TokenReview) and checks
every action with a SubjectAccessReview, so your RBAC decides what you may see and do. The token is not kept in the
browser.</p>
<form method="post" action="/login"><input type="hidden" name="_csrf" value="${csrf}">
<label for="token">Token</label>
<textarea id="token" name="token" rows="4" autocomplete="off" spellcheck="false" required></textarea>
<p class="hint">For example <code>kubectl create token &lt;serviceaccount&gt;</code>. A local controller
(<code>npm start</code>) prints a one-time sign-in link instead.</p>
<button type="submit">Sign in</button></form></section>`,
    undefined,
  );
}

/** A message page (errors the user can act on: not allowed, not found). */
export function messagePage(title: string, message: string, viewer: Viewer | undefined): string {
  return layout(
    title,
    html`<h1>${title}</h1><p class="error" role="alert">${message}</p><p><a href="/agents">Back to the Agents</a></p>`,
    viewer,
  );
}

export interface AgentListView {
  readonly namespace: string;
  readonly agents: readonly Agent[];
  readonly stations: readonly Station[];
  readonly station: string | undefined;
  readonly phase: string | undefined;
  readonly now: number;
}

function age(iso: string | undefined, now: number): string {
  const t = iso === undefined ? Number.NaN : Date.parse(iso);
  return Number.isNaN(t) ? '' : humanAge(now - t);
}

function duration(a: Agent, now: number): string {
  const start = Date.parse(a.status.startedAt ?? '');
  if (Number.isNaN(start)) return '';
  const end = Date.parse(a.status.completedAt ?? '');
  return clockDuration((Number.isNaN(end) ? now : end) - start);
}

/** Newest first (creation time, then name). */
function newest(a: Agent, b: Agent): number {
  return (
    (Date.parse(b.metadata.creationTimestamp ?? '') || 0) -
      (Date.parse(a.metadata.creationTimestamp ?? '') || 0) || a.metadata.name.localeCompare(b.metadata.name)
  );
}

/** The part of the Agents page that refreshes itself: Stations with their phase counts and their runs. */
export function agentListFragment(v: AgentListView): Html {
  const byStation = new Map<string, Agent[]>();
  for (const s of v.stations) byStation.set(s.metadata.name, []);
  for (const a of v.agents) {
    const list = byStation.get(a.spec.stationRef) ?? [];
    list.push(a);
    byStation.set(a.spec.stationRef, list);
  }
  const known = new Set(v.stations.map((s) => s.metadata.name));
  const names = [...byStation.keys()]
    .filter((n) => v.station === undefined || n === v.station)
    .sort((a, b) => a.localeCompare(b));
  if (names.length === 0)
    return html`<p class="empty">No Stations or Agents in namespace ${v.namespace}.</p>`;
  return html`${names.map((station) => {
    const all = (byStation.get(station) ?? []).sort(newest);
    const shown = v.phase === undefined ? all : all.filter((a) => a.status.phase === v.phase);
    const counts = PHASES.map((p) => ({ p, n: all.filter((a) => a.status.phase === p).length }));
    return html`<section class="station" data-station="${station}">
<header><h2>${station}</h2>
<span class="counts">${counts.map(
      ({ p, n }) =>
        html`<a class="count ${PHASE_CLASS[p]}" href="/agents${query({ namespace: v.namespace, station, phase: p })}"
title="${p}">${p} <b>${n}</b></a>`,
    )}</span>
${
  known.has(station)
    ? html`<a class="button" href="/stations/${v.namespace}/${station}/run">New run</a>`
    : html`<span class="hint">Station not found</span>`
}</header>
${
  shown.length === 0
    ? html`<p class="empty">No runs${v.phase !== undefined ? html` in phase ${v.phase}` : ''}.</p>`
    : html`<table class="agents"><thead><tr><th>Name</th><th>Phase</th><th>Age</th><th>Duration</th><th>Exit</th>
<th>Reason</th></tr></thead><tbody>${shown.map(
        (
          a,
        ) => html`<tr data-agent="${a.metadata.name}"><td><a href="/agents/${v.namespace}/${a.metadata.name}">${
          a.metadata.name
        }</a></td><td>${phaseBadge(a.status.phase)}</td><td>${age(a.metadata.creationTimestamp, v.now)}</td>
<td>${duration(a, v.now)}</td><td>${a.status.exitCode}</td><td class="reason">${a.status.failureReason ?? ''}</td></tr>`,
      )}</tbody></table>`
}</section>`;
  })}`;
}

/** The Agents page: filters, then the refreshing list. */
export function agentListPage(v: AgentListView, viewer: Viewer): string {
  const filters = html`<form class="filters" method="get" action="/agents">
<label>Namespace <input name="namespace" value="${v.namespace}" size="16"></label>
<label>Phase <select name="phase"><option value="">any</option>${PHASES.map(
    (p) => html`<option${p === v.phase ? ' selected' : ''}>${p}</option>`,
  )}</select></label>
${v.station !== undefined ? html`<input type="hidden" name="station" value="${v.station}">` : ''}
<button type="submit">Show</button>
${v.station !== undefined || v.phase !== undefined ? html`<a href="/agents${query({ namespace: v.namespace })}">Clear filters</a>` : ''}
</form>`;
  const src = `/agents${query({ namespace: v.namespace, station: v.station, phase: v.phase, fragment: '1' })}`;
  return layout(
    'Agents',
    html`<h1>Agents</h1>${filters}<div id="agents" data-refresh="${src}">${agentListFragment(v)}</div>`,
    viewer,
    v.namespace,
  );
}

export interface AgentDetailView {
  readonly agent: Agent;
  readonly job: Optional<Job> | undefined;
  readonly pods: Optional<Pod[]> | undefined;
  readonly events: Optional<EventRead[]>;
  /** The run takes prompts now (a Running realtime run). */
  readonly realtime: boolean;
  /** Where a trace id links to (`{traceID}` replaced), if configured. */
  readonly traceUrl: string | undefined;
  readonly now: number;
  /** The person may create Agents in the namespace: the page offers to run this one again. */
  readonly canRerun?: boolean;
}

function unreadable(what: string, r: Optional<unknown> | undefined): Html {
  if (r === undefined) return html`<span class="hint">none</span>`;
  switch (r.kind) {
    case 'forbidden':
      return html`<span class="hint">not allowed to read ${what}</span>`;
    case 'missing':
      return html`<span class="hint">gone</span>`;
    case 'error':
      return html`<span class="error">cannot read ${what}: ${r.error.message}</span>`;
    case 'ok':
      return html``;
  }
}

/**
 * An OpenTelemetry trace id (32 hex digits). Only such an id is put into the trace link: `status.traceID` is written
 * by whoever may patch the Agent's status, and anything else could steer the link (another host when `{traceID}`
 * is in the host part, other query parameters, `$` replacement patterns).
 */
const TRACE_ID = /^[0-9a-fA-F]{32}$/;

/** The trace link: `{traceID}` replaced (literally, not as a replacement pattern) by the id. */
export function traceLink(template: string, traceID: string): string {
  return template.replaceAll('{traceID}', () => encodeURIComponent(traceID));
}

const row = (label: string, value: Html | string | number | undefined): Html =>
  value === undefined || value === '' ? html`` : html`<tr><th>${label}</th><td>${value}</td></tr>`;

/** One Agent: its status, usage and cost, conditions, Events, Job and pod, live output and (realtime) a prompt box. */
export function agentDetailPage(v: AgentDetailView, viewer: Viewer): string {
  const a = v.agent;
  const ns = a.metadata.namespace ?? '';
  const s = a.status;
  const base = `/agents/${ns}/${a.metadata.name}`;
  const trace =
    s.traceID === undefined
      ? undefined
      : v.traceUrl !== undefined && TRACE_ID.test(s.traceID)
        ? html`<a href="${traceLink(v.traceUrl, s.traceID)}" rel="noreferrer">${s.traceID}</a>`
        : html`<code>${s.traceID}</code>`;
  const usage =
    s.tokenUsage === undefined
      ? undefined
      : `${s.tokenUsage.total} (input ${s.tokenUsage.input}, output ${s.tokenUsage.output}, cache read ${s.tokenUsage.cacheRead}, cache write ${s.tokenUsage.cacheWrite})`;
  const cost =
    s.costEstimate === undefined
      ? undefined
      : `$${s.costEstimate.usd} (${s.costEstimate.source}${s.costEstimate.model !== undefined ? `, ${s.costEstimate.model}` : ''})`;
  const pod = v.pods?.kind === 'ok' ? v.pods.value[0] : undefined;
  const result =
    s.result === undefined
      ? undefined
      : typeof s.result === 'string'
        ? s.result
        : JSON.stringify(s.result, null, 2);
  const terminal = s.phase === 'Succeeded' || s.phase === 'Failed';
  // The annotation is anyone's text who may patch the Agent: linked only when it is an object name.
  const rerunOfText = a.metadata.annotations[ANNOTATION_RERUN_OF];
  const rerunOf =
    rerunOfText !== undefined && rerunOfText.length <= 253 && DNS1123_SUBDOMAIN.test(rerunOfText)
      ? rerunOfText
      : undefined;
  const body = html`<p class="crumbs"><a href="/agents${query({ namespace: ns })}">Agents</a> /
<a href="/agents${query({ namespace: ns, station: a.spec.stationRef })}">${a.spec.stationRef}</a></p>
<h1>${a.metadata.name} ${phaseBadge(s.phase)}</h1>
${
  v.canRerun === true
    ? html`<form method="post" action="${base}/rerun" class="rerun"><input type="hidden" name="_csrf" value="${viewer.csrf}">
<button type="submit" title="A new Agent with the same Station, parameters, model and spec">Rerun</button></form>`
    : ''
}
<section id="status" data-phase="${s.phase}"${terminal ? '' : html` data-refresh="${base}?fragment=status"`}>${statusFragment(v)}</section>
<div class="grid">
<section><h2>Run</h2><table class="fields">
${row('Namespace', ns)}
${row('Station', html`<a href="/agents${query({ namespace: ns, station: a.spec.stationRef })}">${a.spec.stationRef}</a>`)}
${row('Created', a.metadata.creationTimestamp)}
${row('Rerun of', rerunOf === undefined ? undefined : html`<a href="/agents/${ns}/${rerunOf}">${rerunOf}</a>`)}
${row('Model', a.spec.model)}
${row('Task', a.spec.taskId)}
${row('Session', s.sessionId)}
${row('Batch', s.batchId === undefined ? undefined : `${s.batchProvider ?? ''} ${s.batchId}`)}
${row('Trace', trace)}
${row('Tokens', usage)}
${row('Cost', cost)}
${row('Job', s.jobName === undefined ? undefined : v.job?.kind === 'ok' ? jobSummary(v.job.value) : html`${s.jobName} ${unreadable('the Job', v.job)}`)}
${row('Pod', pod !== undefined ? podSummary(pod) : s.jobName !== undefined && v.pods?.kind !== 'ok' ? unreadable('its pods', v.pods) : undefined)}
</table>
${
  Object.keys(a.spec.parameters).length === 0
    ? ''
    : html`<h3>Parameters</h3><table class="fields">${Object.entries(a.spec.parameters).map(([k, val]) => row(k, val))}</table>`
}</section>
<section><h2>Conditions</h2>${
    s.conditions.length === 0
      ? html`<p class="empty">None.</p>`
      : html`<table><thead><tr><th>Type</th><th>Status</th><th>Reason</th><th>Message</th></tr></thead><tbody>${s.conditions.map(
          (c) =>
            html`<tr><td>${c.type}</td><td>${c.status}</td><td>${c.reason}</td><td>${c.message ?? ''}</td></tr>`,
        )}</tbody></table>`
  }</section></div>
${
  v.realtime
    ? html`<section class="prompt"><h2>Prompt</h2>
<form id="prompt-form" data-action="${base}/prompt"><textarea name="prompt" rows="3" required
placeholder="Ask the running session"></textarea><button type="submit">Send</button></form>
<pre id="reply" class="output" aria-live="polite"></pre></section>`
    : ''
}
<section><h2>Output</h2>${
    result !== undefined ? html`<h3>Result</h3><pre class="result">${result}</pre>` : ''
  }<pre id="output" class="output" data-stream="${base}/stream" aria-live="polite">${
    terminal && s.jobName === undefined ? (s.output ?? '') : ''
  }</pre></section>
<section><h2>Events</h2>${eventsTable(v.events, v.now)}</section>`;
  return layout(a.metadata.name, body, viewer, ns);
}

/** The status summary that refreshes while the run is not over. */
export function statusFragment(v: Pick<AgentDetailView, 'agent' | 'now'>): Html {
  const s = v.agent.status;
  return html`<table class="fields">
${row('Phase', phaseBadge(s.phase))}
${row('Started', s.startedAt)}
${row('Completed', s.completedAt)}
${row('Duration', duration(v.agent, v.now))}
${row('Exit code', s.exitCode)}
${row('Reason', s.failureReason)}
</table>`;
}

function eventsTable(events: Optional<EventRead[]>, now: number): Html {
  if (events.kind !== 'ok') return unreadable('its Events', events);
  if (events.value.length === 0) return html`<p class="empty">None.</p>`;
  const sorted = [...events.value].sort(
    (a, b) =>
      Date.parse(a.lastTimestamp ?? a.eventTime ?? '') - Date.parse(b.lastTimestamp ?? b.eventTime ?? ''),
  );
  return html`<table class="events"><thead><tr><th>Type</th><th>Reason</th><th>Age</th><th>Message</th></tr></thead>
<tbody>${sorted.map(
    (e) =>
      html`<tr class="${e.type === 'Warning' ? 'warning' : ''}"><td>${e.type}</td><td>${e.reason}</td><td>${eventAge(e, now)}</td><td>${e.message ?? ''}</td></tr>`,
  )}</tbody></table>`;
}

export interface RunFormView {
  readonly namespace: string;
  readonly station: Station;
  /** The recipe's prompt template, when it can be read. */
  readonly promptTemplate: string | undefined;
  readonly values: {
    readonly prompt: string;
    readonly parameters: string;
    readonly model: string;
    readonly name: string;
  };
  readonly error: string | undefined;
}

/** The placeholders `{name}` of a prompt template, in order, without repeats. */
export function placeholders(template: string): string[] {
  return [...new Set([...template.matchAll(/\{([A-Za-z_][A-Za-z0-9_.-]*)\}/g)].map((m) => m[1] ?? ''))];
}

/** The form that starts a run of a Station. */
export function runFormPage(v: RunFormView, viewer: Viewer): string {
  const st = v.station;
  const names = v.promptTemplate === undefined ? [] : placeholders(v.promptTemplate);
  return layout(
    `New run of ${st.metadata.name}`,
    html`<p class="crumbs"><a href="/agents${query({ namespace: v.namespace })}">Agents</a> /
<a href="/agents${query({ namespace: v.namespace, station: st.metadata.name })}">${st.metadata.name}</a></p>
<h1>New run of ${st.metadata.name}</h1>
${v.error !== undefined ? html`<p class="error" role="alert">${v.error}</p>` : ''}
<p>Recipe <b>${st.spec.agentDefRef}</b>${
      v.promptTemplate !== undefined
        ? html`; prompt template:</p><pre class="template">${v.promptTemplate}</pre><p>${
            names.length > 0
              ? html`Placeholders: ${names.map((n, i) => html`${i > 0 ? ', ' : ''}<code>{${n}}</code>`)}.`
              : ''
          }`
        : '.'
    }</p>
<form method="post" action="/stations/${v.namespace}/${st.metadata.name}/run" class="run">
<input type="hidden" name="_csrf" value="${viewer.csrf}">
<label for="prompt">Prompt <span class="hint">(the parameter <code>prompt</code>)</span></label>
<textarea id="prompt" name="prompt" rows="5">${v.values.prompt}</textarea>
<label for="parameters">Parameters <span class="hint">(one <code>key=value</code> per line)</span></label>
<textarea id="parameters" name="parameters" rows="3">${v.values.parameters}</textarea>
<label for="model">Model <span class="hint">(empty: the recipe's)</span></label>
<input id="model" name="model" value="${v.values.model}">
<label for="name">Name <span class="hint">(empty: generated from the Station's)</span></label>
<input id="name" name="name" value="${v.values.name}">
<button type="submit">Start the run</button></form>`,
    viewer,
    v.namespace,
  );
}
