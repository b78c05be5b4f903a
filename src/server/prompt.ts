// The realtime prompt API (docs/design/reference-behaviour.md#d-m-prompt-api-auth): the controller's own HTTP API in
// front of the run pods' prompt servers.
//
//   POST /apis/agents.re-cinq.com/v1alpha1/namespaces/{ns}/agents/{name}/prompt   {"prompt": "..."} → NDJSON lines
//   POST /apis/agents.re-cinq.com/v1alpha1/namespaces/{ns}/agents/{name}/close
//
// Authenticated like an aggregated API server (a bearer token through a TokenReview, or a client certificate the
// cluster's client CA signed) and authorised with a SubjectAccessReview on the Agent's subresource `agents/prompt`
// or `agents/close` (verb create), so ordinary RBAC decides who may talk to which run. Stateless: any replica answers
// (the run's token is derived from the Agent uid; the pod IP comes from the API). Errors are Kubernetes `Status`
// objects: 401, 403, 404, 409 (not a Running realtime run, or a prompt already in flight), 413, 503 (the pod is not
// listening yet). Built from injected ports, so it is tested with `app.request()`.

import { Hono } from 'hono';
import * as v from 'valibot';
import { GROUP, VERSION } from '../api/index.ts';

/** Largest prompt request body (413 beyond); the run pod enforces the same bound. */
export const MAX_PROMPT_REQUEST_BYTES = 1024 * 1024;

/** Who is calling, as a TokenReview or a client certificate says. */
export interface CallerIdentity {
  readonly username: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** The Agent facts the API needs (read live from the API server). */
export interface PromptTarget {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly phase: string | undefined;
  readonly jobName: string | undefined;
  readonly sessionId: string | undefined;
  /** When its current pod's run started (a wake or a restore starts a new pod: its address is looked up again). */
  readonly startedAt?: string | undefined;
  /** Turns of its session that ended so far, as last reported (issue 29). */
  readonly turns?: number | undefined;
}

/**
 * Durable sessions (issue 29, docs/design/sessions.md): what the prompt API does around each turn when the controller
 * has a session store. Each reports through the Agent's annotations (decide records them) and never rejects.
 */
export interface SessionPorts {
  /** The prompt is about to reach the session: turn `turns + 1` in flight, the last prompt now. */
  turnStarted(target: PromptTarget): Promise<void>;
  /** The turn ended with its pod alive: the state fetched from the pod, saved as its turn, reported. */
  turnEnded(target: PromptTarget, url: string): Promise<void>;
  /** The turn's pod was lost mid-turn: it is no longer in flight (and never replayed). */
  turnLost(target: PromptTarget): Promise<void>;
  /** Asks a Suspended session to wake (`agents.re-cinq.com/wake-requested`). */
  requestWake(target: PromptTarget): Promise<true | { readonly error: string }>;
  /**
   * Hands the last saved turn to a pod started to restore (`PUT /session/state`): `true` once the pod has it (or had
   * it already), `notListening` while it cannot be reached, an error otherwise.
   */
  restore(target: PromptTarget, url: string): Promise<true | 'notListening' | { readonly error: string }>;
  /** Metrics: how long a prompt to a Suspended session was held, and how that ended. */
  observeWake?(seconds: number, result: 'ok' | 'timeout' | 'error'): void;
}

/**
 * The saves of turns that just ended, by Agent uid, on this replica: the next prompt to the session waits for its
 * predecessor's save (the pod refuses prompts while its state is read).
 */
const savesInFlight = new Map<string, Promise<void>>();

/** The save of the session's previous turn on this replica, if one is going on (bounded: SAVE_WAIT_MS). */
async function previousSave(uid: string): Promise<void> {
  const saving = savesInFlight.get(uid);
  if (saving !== undefined) await Promise.race([saving, new Promise((r) => setTimeout(r, SAVE_WAIT_MS))]);
}

/** What a restore pod answers `/prompt` with until it has the state (the supervisor's 409 message). */
export const WAITING_FOR_STATE = 'waiting for the session state';
/** Default bound of a prompt held while its Suspended session wakes (`AGENT_SESSION_WAKE_WAIT_SECONDS`). */
export const DEFAULT_WAKE_WAIT_MS = 60_000;
/** How often a held prompt looks at its waking session. */
export const WAKE_POLL_MS = 500;
/** The error line a caller's stream ends with when the pod is lost mid-turn. */
export const POD_LOST_LINE = `${JSON.stringify({
  type: 'error',
  message:
    "the session's pod was lost during this turn: the turn failed and is not replayed; the session goes on from its last saved turn",
})}\n`;

/** Where the run's prompt server is: its URL, or why there is none to talk to. */
export type PodEndpoint =
  | { readonly kind: 'ready'; readonly url: string }
  /** The run is not a realtime run (its pod has no realtime label). */
  | { readonly kind: 'notRealtime' }
  /** No running pod with an IP yet. */
  | { readonly kind: 'notYet'; readonly detail: string };

/** What the upstream pod answered: a status and, for 200, a stream of body chunks. */
export interface Upstream {
  readonly status: number;
  readonly body: ReadableStream<Uint8Array> | null;
  text(): Promise<string>;
}

/** The client certificate of a TLS connection, as the server verified it against the client CA. */
export interface PeerCertificate {
  /** True when the certificate chains to the client CA (and is valid now). */
  readonly authorized: boolean;
  readonly commonName: string | undefined;
  readonly organizations: readonly string[];
}

export interface PromptApiDeps {
  /**
   * Undefined: no valid credentials (401). A string: the check itself failed (500). `peer` is the connection's
   * client certificate, when one was presented over TLS.
   */
  authenticate(
    request: Request,
    peer: PeerCertificate | undefined,
  ): Promise<CallerIdentity | undefined | { readonly error: string }>;
  /** Whether `caller` may `create` the subresource of the Agent; a string when the review itself failed. */
  authorize(
    caller: CallerIdentity,
    target: { readonly namespace: string; readonly name: string; readonly subresource: 'prompt' | 'close' },
  ): Promise<boolean | { readonly error: string }>;
  /**
   * The Agent, undefined when it does not exist, a string when it could not be read. It may come from a cache;
   * `fresh` reads it from the API server.
   */
  agent(
    namespace: string,
    name: string,
    fresh?: boolean,
  ): Promise<PromptTarget | undefined | { readonly error: string }>;
  endpoint(target: PromptTarget): Promise<PodEndpoint | { readonly error: string }>;
  /** Sends to the pod's prompt server with the run's token; rejects when the pod cannot be reached. */
  forward(
    url: string,
    path: '/prompt' | '/close',
    uid: string,
    body: string,
    signal: AbortSignal,
  ): Promise<Upstream>;
  /**
   * A turn revealed the run's session id: reported (the shell annotates the Agent; decide records it in
   * status.sessionId and announces it, issue 27 §2); never rejects, never writes status itself.
   */
  sessionSeen(target: PromptTarget, sessionId: string): void;
  /** The session id in one NDJSON line of this run, if it reveals one. */
  sessionIdOf(line: string): string | undefined;
  /** Durable sessions (issue 29): absent when the controller has no session store. */
  readonly sessions?: SessionPorts | undefined;
  /** Bound of a prompt held while its Suspended session wakes, in ms (default DEFAULT_WAKE_WAIT_MS). */
  readonly wakeWaitMs?: number | undefined;
  /** Waits `ms` (tests pass a fake clock's). */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
  /** Metrics: a prompt's result and its latency to the first line. */
  observe?(sample: {
    readonly action: 'prompt' | 'close';
    readonly result: string;
    readonly firstLineMs?: number;
  }): void;
  readonly now: () => number;
}

/** A Kubernetes `Status` failure body. */
export function statusBody(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

const REASONS: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  413: 'RequestEntityTooLarge',
  500: 'InternalError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
};

const PromptBody = v.object({ prompt: v.pipe(v.string(), v.minLength(1, 'prompt must not be empty')) });
const ErrorBody = v.looseObject({ message: v.optional(v.string()) });

/** The body forwarded for a prompt request (`{"prompt": ...}` and nothing else), or why the request is bad. */
function promptBody(text: string): { readonly body: string } | { readonly problem: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { problem: 'the body must be JSON: {"prompt": "..."}' };
  }
  const parsed = v.safeParse(PromptBody, raw);
  if (!parsed.success) return { problem: `invalid prompt request: ${v.summarize(parsed.issues)}` };
  return { body: JSON.stringify({ prompt: parsed.output.prompt }) };
}

/** A Kubernetes `Status` failure answer. */
function fail(code: number, message: string): Response {
  return new Response(JSON.stringify(statusBody(code, REASONS[code] ?? 'InternalError', message)), {
    status: code,
    headers: { 'content-type': 'application/json' },
  });
}

/** Builds the prompt API app. */
export function createPromptApi(deps: PromptApiDeps): Hono {
  const app = new Hono();
  const base = `/apis/${GROUP}/${VERSION}/namespaces/:namespace/agents/:name`;

  async function handle(
    request: Request,
    peer: PeerCertificate | undefined,
    namespace: string,
    name: string,
    action: 'prompt' | 'close',
  ) {
    const started = deps.now();
    const done = (result: string, firstLineMs?: number) =>
      deps.observe?.({ action, result, ...(firstLineMs !== undefined ? { firstLineMs } : {}) });
    const caller = await deps.authenticate(request, peer);
    if (caller === undefined) {
      done('unauthorized');
      return fail(401, 'Unauthorized');
    }
    if ('error' in caller) {
      done('error');
      return fail(500, `authentication failed: ${caller.error}`);
    }
    const declared = Number(request.headers.get('content-length') ?? '0');
    if (declared > MAX_PROMPT_REQUEST_BYTES) {
      done('too_large');
      return fail(413, `the request body is larger than ${MAX_PROMPT_REQUEST_BYTES} bytes`);
    }
    const allowed = await deps.authorize(caller, { namespace, name, subresource: action });
    if (typeof allowed !== 'boolean') {
      done('error');
      return fail(500, `authorization failed: ${allowed.error}`);
    }
    if (!allowed) {
      done('forbidden');
      return fail(
        403,
        `agents.${GROUP} "${name}" is forbidden: User "${caller.username}" cannot create resource "agents/${action}" in API group "${GROUP}" in the namespace "${namespace}"`,
      );
    }
    const text = await readLimited(request, MAX_PROMPT_REQUEST_BYTES);
    if (text === undefined) {
      done('too_large');
      return fail(413, `the request body is larger than ${MAX_PROMPT_REQUEST_BYTES} bytes`);
    }
    const body = action === 'prompt' ? promptBody(text) : { body: '{}' };
    if ('problem' in body) {
      done('bad_request');
      return fail(400, body.problem);
    }
    const found = await deps.agent(namespace, name);
    if (found === undefined) {
      done('not_found');
      return fail(404, `agents.${GROUP} "${name}" not found`);
    }
    if ('error' in found) {
      done('error');
      return fail(500, `reading the Agent failed: ${found.error}`);
    }
    let target = found;
    // A prompt to a Suspended session wakes it and is held, bounded, until its new pod has the saved state (issue 29).
    let woken: { readonly url: string } | undefined;
    if (action === 'prompt' && target.phase === 'Suspended' && deps.sessions !== undefined) {
      const waited = await wake(deps, deps.sessions, target, request.signal);
      if ('response' in waited) {
        done(waited.result);
        return waited.response;
      }
      target = waited.target;
      woken = { url: waited.url };
    }
    if (target.phase !== 'Running' || target.jobName === undefined) {
      done('conflict');
      return fail(409, `Agent ${name} is not a Running realtime run (phase ${target.phase ?? 'Pending'})`);
    }
    const endpoint =
      woken !== undefined ? ({ kind: 'ready', url: woken.url } as const) : await deps.endpoint(target);
    if ('error' in endpoint) {
      done('error');
      return fail(500, `finding the run pod failed: ${endpoint.error}`);
    }
    if (endpoint.kind === 'notRealtime') {
      done('conflict');
      return fail(409, `Agent ${name} is not a realtime run`);
    }
    if (endpoint.kind === 'notYet') {
      done('unavailable');
      return fail(503, `the run pod of Agent ${name} is not listening yet: ${endpoint.detail}`);
    }
    const abort = new AbortController();
    request.signal.addEventListener('abort', () => abort.abort(), { once: true });
    const sessions = action === 'prompt' ? deps.sessions : undefined;
    if (sessions !== undefined) await previousSave(target.uid);
    let upstream: Upstream;
    try {
      const sent = await forwardRestoring(
        deps,
        sessions,
        target,
        endpoint.url,
        `/${action}`,
        body.body,
        abort.signal,
      );
      if ('restoreFailed' in sent) {
        done('unavailable');
        return fail(503, `the session of Agent ${name} is being restored: ${sent.restoreFailed}`);
      }
      upstream = sent;
    } catch (error) {
      // A cached Agent may be a moment behind: a run that just ended is a conflict, not an outage.
      const now = await deps.agent(namespace, name, true);
      if (now !== undefined && !('error' in now) && now.phase !== 'Running') {
        done('conflict');
        return fail(409, `Agent ${name} is not a Running realtime run (phase ${now.phase ?? 'Pending'})`);
      }
      done('unavailable');
      return fail(503, `the run pod of Agent ${name} is not listening yet: ${describe(error)}`);
    }
    if (upstream.status !== 200) {
      const detail = v.safeParse(ErrorBody, safeJson(await upstream.text().catch(() => '')));
      const message = detail.success ? (detail.output.message ?? '') : '';
      const code =
        upstream.status === 409 || upstream.status === 413 || upstream.status === 400 ? upstream.status : 502;
      done(code === 502 ? 'error' : (REASONS[code]?.toLowerCase() ?? 'error'));
      return fail(code, message !== '' ? message : `the run pod answered ${upstream.status}`);
    }
    if (action === 'close') {
      done('ok');
      return new Response(await upstream.text(), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    }
    return streamTurn(deps, sessions, target, endpoint.url, upstream, {
      first: () => done('ok', deps.now() - started),
      failed: () => done('interrupted'),
    });
  }

  app.post(`${base}/prompt`, (c) =>
    handle(c.req.raw, peerOf(c.env), c.req.param('namespace'), c.req.param('name'), 'prompt'),
  );
  app.post(`${base}/close`, (c) =>
    handle(c.req.raw, peerOf(c.env), c.req.param('namespace'), c.req.param('name'), 'close'),
  );
  app.notFound(() => fail(404, 'the server could not find the requested resource'));
  app.onError((error) => fail(500, describe(error)));
  return app;
}

/**
 * Wakes a Suspended session and holds the prompt until its new pod has the saved state: the wake is asked for
 * (the controller admits it, FIFO behind its Station's limit), the Agent is looked at every WAKE_POLL_MS, and once
 * Running with a pod listening the last saved turn is handed to it. Past the bound: 503 with Retry-After.
 */
async function wake(
  deps: PromptApiDeps,
  sessions: SessionPorts,
  suspended: PromptTarget,
  signal: AbortSignal,
): Promise<
  | { readonly target: PromptTarget; readonly url: string }
  | { readonly response: Response; readonly result: string }
> {
  const began = deps.now();
  const bound = deps.wakeWaitMs ?? DEFAULT_WAKE_WAIT_MS;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const name = suspended.name;
  const asked = await sessions.requestWake(suspended);
  if (asked !== true) {
    sessions.observeWake?.((deps.now() - began) / 1000, 'error');
    return {
      response: fail(500, `waking the session of Agent ${name} failed: ${asked.error}`),
      result: 'error',
    };
  }
  let last = 'it waits for a run slot';
  while (deps.now() - began < bound && !signal.aborted) {
    await sleep(WAKE_POLL_MS);
    const t = await deps.agent(suspended.namespace, name);
    if (t === undefined)
      return { response: fail(404, `agents.${GROUP} "${name}" not found`), result: 'not_found' };
    if ('error' in t || t.uid !== suspended.uid) continue;
    if (t.phase !== 'Suspended' && t.phase !== 'Running') {
      sessions.observeWake?.((deps.now() - began) / 1000, 'error');
      return {
        response: fail(409, `Agent ${name} is not a Running realtime run (phase ${t.phase ?? 'Pending'})`),
        result: 'conflict',
      };
    }
    if (t.phase !== 'Running' || t.jobName === undefined) continue;
    const endpoint = await deps.endpoint(t);
    if ('error' in endpoint || endpoint.kind !== 'ready') {
      last =
        'error' in endpoint ? endpoint.error : endpoint.kind === 'notYet' ? endpoint.detail : 'not realtime';
      continue;
    }
    const restored = await sessions.restore(t, endpoint.url);
    if (restored === true) {
      sessions.observeWake?.((deps.now() - began) / 1000, 'ok');
      return { target: t, url: endpoint.url };
    }
    last = restored === 'notListening' ? 'its pod is not listening yet' : restored.error;
  }
  sessions.observeWake?.((deps.now() - began) / 1000, 'timeout');
  const response = fail(
    503,
    `Agent ${name} is waking (${last}); not ready within ${Math.round(bound / 1000)}s: try again`,
  );
  response.headers.set('retry-after', String(Math.max(1, Math.round(bound / 2000))));
  return { response, result: 'unavailable' };
}

/**
 * The turn's answer streamed to the caller as the pod sends it: the session id it reveals reported; with a session
 * store the turn is reported in flight first and saved once it ended, and a pod lost mid-turn ends the caller's
 * stream with an error line (the turn is not replayed).
 */
async function streamTurn(
  deps: PromptApiDeps,
  sessions: SessionPorts | undefined,
  turn: PromptTarget,
  url: string,
  upstream: Upstream,
  hooks: { first(): void; failed(): void },
): Promise<Response> {
  const source = upstream.body;
  if (sessions !== undefined) await sessions.turnStarted(turn);
  const lost = (): string => {
    void sessions?.turnLost(turn);
    return POD_LOST_LINE;
  };
  return new Response(
    source === null
      ? ''
      : tapLines(
          source,
          (line) => {
            const id = deps.sessionIdOf(line);
            if (id !== undefined && id !== turn.sessionId) deps.sessionSeen(turn, id);
          },
          {
            ...hooks,
            ended: () => {
              if (sessions === undefined) return;
              const saving = sessions.turnEnded(turn, url).finally(() => {
                if (savesInFlight.get(turn.uid) === saving) savesInFlight.delete(turn.uid);
              });
              savesInFlight.set(turn.uid, saving);
            },
            ...(sessions !== undefined ? { lost } : {}),
          },
        ),
    { status: 200, headers: { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' } },
  );
}

/**
 * Forwards to the pod; a pod started to restore the session (after a wake or a lost pod) answers 409 until it has
 * the saved state: it is handed over, then the request is sent again.
 */
async function forwardRestoring(
  deps: PromptApiDeps,
  sessions: SessionPorts | undefined,
  target: PromptTarget,
  url: string,
  path: '/prompt' | '/close',
  body: string,
  signal: AbortSignal,
): Promise<Upstream | { readonly restoreFailed: string }> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let restored = false;
  for (let attempt = 0; ; attempt++) {
    const upstream = await deps.forward(url, path, target.uid, body, signal);
    if (sessions === undefined || upstream.status !== 409) return upstream;
    const text = await upstream.text().catch(() => '');
    // The pod is handing its state to a save (this turn's predecessor, saved by another replica): a moment.
    if (text.includes(STATE_BEING_READ) && attempt < STATE_READ_RETRIES && !signal.aborted) {
      await sleep(STATE_READ_RETRY_MS);
      continue;
    }
    if (!text.includes(WAITING_FOR_STATE) || restored)
      return { status: 409, body: null, text: async () => text };
    const answer = await sessions.restore(target, url);
    if (answer !== true)
      return { restoreFailed: answer === 'notListening' ? 'its pod is not listening yet' : answer.error };
    restored = true;
  }
}

/** What the pod answers a prompt while its session state is being read for a save. */
const STATE_BEING_READ = 'the session state is being read';
const STATE_READ_RETRIES = 50;
const STATE_READ_RETRY_MS = 200;
/** How long a prompt waits for its predecessor's save on this replica. */
const SAVE_WAIT_MS = 30_000;

const PeerSocket = v.looseObject({
  authorized: v.optional(v.boolean()),
  getPeerCertificate: v.optional(v.function()),
});
const PeerCert = v.looseObject({
  subject: v.optional(
    v.looseObject({ CN: v.optional(v.string()), O: v.optional(v.union([v.string(), v.array(v.string())])) }),
  ),
});

/**
 * The client certificate of the request's TLS connection (`@hono/node-server` hands the Node request over as
 * `env.incoming`); undefined without TLS, without a certificate, or on Deno (whose server cannot ask for one).
 */
export function peerOf(env: unknown): PeerCertificate | undefined {
  const incoming = (env as { incoming?: { socket?: unknown } } | undefined)?.incoming;
  const socket = v.safeParse(PeerSocket, incoming?.socket);
  if (!socket.success || socket.output.getPeerCertificate === undefined) return undefined;
  const raw = (socket.output.getPeerCertificate as () => unknown).call(incoming?.socket);
  const cert = v.safeParse(PeerCert, raw);
  if (!cert.success || cert.output.subject === undefined) return undefined;
  const o = cert.output.subject.O;
  return {
    authorized: socket.output.authorized === true,
    commonName: cert.output.subject.CN,
    organizations: o === undefined ? [] : Array.isArray(o) ? o : [o],
  };
}

/** Passes a byte stream through unchanged while handing each complete line to `onLine`. */
function tapLines(
  source: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
  hooks: {
    first(): void;
    failed(): void;
    /** The stream ended whole (the turn is over). */
    ended?(): void;
    /** The upstream broke mid-stream: the line to end the caller's stream with (else the stream errors). */
    lost?(): string;
  },
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  let partial = '';
  let seenFirst = false;
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          if (partial !== '') onLine(partial);
          if (!seenFirst) hooks.first();
          controller.close();
          hooks.ended?.();
          return;
        }
        const text = partial + decoder.decode(value, { stream: true });
        const lines = text.split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          if (line === '') continue;
          if (!seenFirst) {
            seenFirst = true;
            hooks.first();
          }
          onLine(line);
        }
        controller.enqueue(value);
      } catch (error) {
        hooks.failed();
        const line = hooks.lost?.();
        if (line === undefined) {
          controller.error(error);
          return;
        }
        controller.enqueue(new TextEncoder().encode(partial !== '' ? `\n${line}` : line));
        controller.close();
      }
    },
    cancel(reason) {
      hooks.failed();
      return reader.cancel(reason);
    },
  });
}

/** The body as text, or undefined once it passes `max` bytes. */
export async function readLimited(request: Request, max: number): Promise<string | undefined> {
  const bytes = await readLimitedBytes(request, max);
  return bytes === undefined ? undefined : new TextDecoder().decode(bytes);
}

/** A request body of at most `max` bytes, as sent; undefined (reading stopped, the body cancelled) past `max`. */
export async function readLimitedBytes(request: Request, max: number): Promise<Uint8Array | undefined> {
  if (request.body === null) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return all;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
