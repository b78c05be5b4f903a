// Streaming the agent container's log: find the run's pod (label job-name=<status.jobName>), wait until its agent
// container has started, then GET pods/<pod>/log?container=agent&follow=true. The log is read with timestamps so
// that a dropped connection resumes where it stopped (sinceTime, lines already seen skipped) instead of printing
// the log twice. The timestamp handling is pure; the rest is a thin loop over the transport.
import { type Pod, PodSchema } from '../api/index.ts';
import { createLineDecoder, getObject, PODS, resourcePath, type Transport } from '../kube/index.ts';
import type { Clock } from '../runtime/index.ts';
import { newestFirst } from './api.ts';
import { type CliError, kubeFailure } from './exit.ts';
import { startWatch } from './watch.ts';

/** The agent container, which every run pod has. */
export const AGENT_CONTAINER = 'agent';

const STAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2}) /;

/** A log line read with `timestamps=true`: its time as a sortable key (UTC ns), and the line itself. */
export function splitTimestamp(line: string): { key: string | undefined; text: string } {
  const m = STAMP.exec(line);
  if (!m) return { key: undefined, text: line };
  const zone = m[3] ?? 'Z';
  const ms = Date.parse(`${m[1]}${zone}`);
  if (Number.isNaN(ms)) return { key: undefined, text: line };
  const utc = new Date(ms).toISOString().slice(0, 19);
  return { key: `${utc}.${(m[2] ?? '').padEnd(9, '0')}`, text: line.slice(m[0].length) };
}

/** The `sinceTime` to resume from after the line with `key` (whole seconds, rounded down: the API takes RFC 3339). */
export function sinceTimeOf(key: string): string {
  return `${key.slice(0, 19)}Z`;
}

/**
 * Which lines to show after a reconnect from `sinceTime`: the replay repeats lines up to the last one seen, so
 * lines are skipped until one is newer than it (lines of the same instant as the last seen are taken as seen).
 */
export interface Resume {
  readonly lastKey: string | undefined;
  readonly replaying: boolean;
}

export function admitLine(resume: Resume, key: string | undefined): { show: boolean; resume: Resume } {
  if (key === undefined) return { show: !resume.replaying, resume };
  if (resume.replaying && resume.lastKey !== undefined && key <= resume.lastKey)
    return { show: false, resume };
  return { show: true, resume: { lastKey: key, replaying: false } };
}

/** Whether a pod's agent container has started (running or ended), so that its log can be read. */
export function agentStarted(pod: Pod): boolean {
  const st = pod.status.containerStatuses.find((c) => c.name === AGENT_CONTAINER);
  return st !== undefined && (st.state.running !== undefined || st.state.terminated !== undefined);
}

/** The pod to read: the newest one whose agent container has started. */
export function pickPod(pods: readonly Pod[]): Pod | undefined {
  return newestFirst(pods).find(agentStarted);
}

/** The log path of a pod. */
export function logPath(namespace: string, pod: string): string {
  return resourcePath(PODS, { namespace, name: pod, subresource: 'log' });
}

export interface StreamLogOptions {
  readonly transport: Transport;
  readonly namespace: string;
  readonly jobName: string;
  readonly clock: Clock;
  readonly random: () => number;
  readonly signal: AbortSignal;
  /** Each log line (without its timestamp), in order. */
  readonly onLine: (line: string) => void;
  /** The pod whose log is read (once found). */
  readonly onPod?: ((pod: string) => void) | undefined;
  /** How long the log may be silent before the connection is presumed dead and re-opened (default 2 min). */
  readonly idleMs?: number | undefined;
  /**
   * Fires when the run has ended: the pod lookup then finishes its first list and reads the log of a started pod
   * once, or ends (`gone`) when there is none, instead of waiting for one to appear.
   */
  readonly runOver?: AbortSignal | undefined;
}

/** How streaming ended. */
export type StreamEnd =
  | { readonly kind: 'ended'; readonly pod: string }
  | { readonly kind: 'gone' }
  | { readonly kind: 'aborted' }
  | { readonly kind: 'failed'; readonly error: CliError };

/**
 * Waits for the run's pod to start its agent container; undefined when aborted, `none` when the run is over
 * (`runOver`) and its first list found no started pod.
 */
async function waitForPod(o: StreamLogOptions): Promise<Pod | { error: CliError } | 'none' | undefined> {
  return new Promise((resolve) => {
    let settled = false;
    let listed = false;
    const settle = (r: Pod | { error: CliError } | 'none' | undefined): void => {
      if (settled) return;
      settled = true;
      o.signal.removeEventListener('abort', onAbort);
      o.runOver?.removeEventListener('abort', check);
      void watch.stop().then(() => resolve(r));
    };
    const onAbort = (): void => settle(undefined);
    const check = (): void => {
      const pod = pickPod(watch.store.list());
      if (pod !== undefined) settle(pod);
      else if (listed && o.runOver?.aborted === true) settle('none');
    };
    const watch = startWatch<Pod>({
      transport: o.transport,
      resource: PODS,
      namespace: o.namespace,
      labelSelector: `job-name=${o.jobName}`,
      schema: PodSchema,
      clock: o.clock,
      random: o.random,
      subject: `the pods of job "${o.jobName}"`,
      onChange: check,
      onFatal: (error) => settle({ error }),
    });
    o.signal.addEventListener('abort', onAbort, { once: true });
    o.runOver?.addEventListener('abort', check, { once: true });
    if (o.signal.aborted) onAbort();
    void watch.ready.then(() => {
      listed = true;
      check();
    });
  });
}

/** Whether the pod's agent container still runs (so a log stream that ended cleanly is resumed); false when unknown. */
async function stillRunning(o: StreamLogOptions, pod: string): Promise<boolean> {
  const r = await getObject(o.transport, PODS, { namespace: o.namespace, name: pod }, PodSchema, {
    signal: o.signal,
  });
  if (!r.ok) return false;
  const st = r.value.status.containerStatuses.find((c) => c.name === AGENT_CONTAINER);
  return st?.state.running !== undefined && st.state.terminated === undefined;
}

/**
 * Streams the agent container's log of the run's pod until the container ends (the API server then closes the
 * stream), the pod is gone, or `signal` aborts. Dropped connections and silences re-open the stream from where it
 * stopped.
 */
export async function streamRunLog(o: StreamLogOptions): Promise<StreamEnd> {
  const found = await waitForPod(o);
  if (found === undefined) return { kind: 'aborted' };
  if (found === 'none') return { kind: 'gone' };
  if ('error' in found) return { kind: 'failed', error: found.error };
  const pod = found.metadata.name;
  o.onPod?.(pod);
  let resume: Resume = { lastKey: undefined, replaying: false };
  let failures = 0;
  for (;;) {
    if (o.signal.aborted) return { kind: 'aborted' };
    const decoder = createLineDecoder();
    const deliver = (line: string): void => {
      const { key, text } = splitTimestamp(line);
      const next = admitLine(resume, key);
      resume = next.resume;
      if (next.show) o.onLine(text);
    };
    const r = await o.transport.stream(logPath(o.namespace, pod), {
      query: {
        container: AGENT_CONTAINER,
        follow: true,
        timestamps: true,
        ...(resume.lastKey !== undefined ? { sinceTime: sinceTimeOf(resume.lastKey) } : {}),
      },
      signal: o.signal,
      idleTimeoutMs: o.idleMs ?? 120_000,
      onData: (chunk) => {
        // Data arrived: the connection works, whatever failed before.
        failures = 0;
        for (const line of decoder.push(chunk).lines) deliver(line);
      },
    });
    const tail = decoder.flush();
    if (r.ok) {
      // A clean end: the last line is whole even without its line break.
      if (tail !== undefined) deliver(tail);
      // The API server also ends a stream cleanly while the container runs on (a kubelet restart, a rotated
      // file): resume from the last line then, else the log is complete. Once the run is over, a clean end is the
      // end.
      if (o.signal.aborted || o.runOver?.aborted === true || !(await stillRunning(o, pod)))
        return { kind: 'ended', pod };
    }
    // Not a clean end: an unterminated last line is dropped (the resumed stream repeats it in full).
    else if (r.error.kind === 'aborted') return { kind: 'aborted' };
    else if (r.error.kind === 'api' && r.error.code === 404) return { kind: 'gone' };
    else if (r.error.kind === 'api' && (r.error.code === 401 || r.error.code === 403))
      return { kind: 'failed', error: kubeFailure(r.error, `the log of pod "${pod}"`) };
    // Transient (dropped, silent, 5xx) or the container not started yet (400): try again shortly.
    failures++;
    resume = { lastKey: resume.lastKey, replaying: resume.lastKey !== undefined };
    // The end of the run cuts the pause short: one more read then gets what the container wrote last.
    const pause = o.runOver?.aborted === false ? AbortSignal.any([o.signal, o.runOver]) : o.signal;
    const slept = await o.clock.sleep(Math.min(5000, 500 * failures), pause);
    if (!slept && o.signal.aborted) return { kind: 'aborted' };
  }
}
