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
}

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

/** Builds the prompt API app. */
export function createPromptApi(deps: PromptApiDeps): Hono {
  const app = new Hono();
  const base = `/apis/${GROUP}/${VERSION}/namespaces/:namespace/agents/:name`;
  const fail = (code: number, message: string) =>
    new Response(JSON.stringify(statusBody(code, REASONS[code] ?? 'InternalError', message)), {
      status: code,
      headers: { 'content-type': 'application/json' },
    });

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
    const target = await deps.agent(namespace, name);
    if (target === undefined) {
      done('not_found');
      return fail(404, `agents.${GROUP} "${name}" not found`);
    }
    if ('error' in target) {
      done('error');
      return fail(500, `reading the Agent failed: ${target.error}`);
    }
    if (target.phase !== 'Running' || target.jobName === undefined) {
      done('conflict');
      return fail(409, `Agent ${name} is not a Running realtime run (phase ${target.phase ?? 'Pending'})`);
    }
    const endpoint = await deps.endpoint(target);
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
    let upstream: Upstream;
    try {
      upstream = await deps.forward(endpoint.url, `/${action}`, target.uid, body.body, abort.signal);
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
    const source = upstream.body;
    return new Response(
      source === null
        ? ''
        : tapLines(
            source,
            (line) => {
              const id = deps.sessionIdOf(line);
              if (id !== undefined && id !== target.sessionId) deps.sessionSeen(target, id);
            },
            {
              first: () => done('ok', deps.now() - started),
              failed: () => done('interrupted'),
            },
          ),
      { status: 200, headers: { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' } },
    );
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
  hooks: { first(): void; failed(): void },
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
        controller.error(error);
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
