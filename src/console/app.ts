// The web console (issue 11 §2): a few server-rendered pages on their own port (`--console`), built from injected
// ports so it is tested with `app.request()`.
//
//   GET  /login[?code=…]      sign in: paste a bearer token (TokenReview), or redeem a local run's one-time link
//   POST /login, POST /logout
//   GET  /agents?namespace=&station=&phase=[&fragment=1]      Agents by Station and phase
//   GET  /agents/:ns/:name[?fragment=status]                  one Agent
//   GET  /agents/:ns/:name/stream                             its output as server-sent events
//   POST /agents/:ns/:name/prompt                             a prompt to a realtime run (answer as text)
//   GET  /stations/:ns/:name/run, POST …                      start a run
//
// Every action is authorised for the signed-in person with a SubjectAccessReview, so kube RBAC decides; the
// controller's own credentials only carry out what was allowed. Sessions live in this replica's memory; the browser
// holds a random id (HttpOnly, SameSite=Lax), every POST carries the session's CSRF token, and cross-site requests
// are refused by their Origin. Pages are escaped throughout and sent with a strict Content-Security-Policy.

import { type Context, Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { type Agent, DNS1123_SUBDOMAIN, type Job, type Pod, type Station } from '../api/index.ts';
import type { EventRead, Optional } from '../cli/api.ts';
import {
  finishRender,
  INITIAL_RENDER_STATE,
  type RenderState,
  renderLine,
  renderText,
} from '../cli/event-lines.ts';
import { agentBody, PROMPT_PARAMETER } from '../cli/run.ts';
import { painter } from '../cli/style.ts';
import { type CallerIdentity, readLimited } from '../server/prompt.ts';
import { CONSOLE_CSS, CONSOLE_ICON, CONSOLE_JS } from './assets.ts';
import {
  agentDetailPage,
  agentListFragment,
  agentListPage,
  loginPage,
  messagePage,
  PHASES,
  runFormPage,
  statusFragment,
  type Viewer,
} from './pages.ts';
import {
  csrfMatches,
  randomToken,
  type Session,
  type SessionStore,
  SignInLimiter,
  tokenExpiry,
} from './session.ts';

export const SESSION_COOKIE = 'agent_console_session';
export const LOGIN_COOKIE = 'agent_console_login';
/** Largest form or prompt body the console reads. */
export const MAX_CONSOLE_BODY_BYTES = 1024 * 1024;
/** Output streams (each holds a pod watch or a log stream on the API server) one person may have open at once. */
export const MAX_STREAMS_PER_USER = 16;

/** What a SubjectAccessReview asks. */
export interface AccessRequest {
  readonly verb: 'get' | 'list' | 'create';
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly namespace: string;
  readonly name?: string;
}

/** An Agent's surroundings, each read only when the person may read it. */
export interface AgentExtras {
  readonly job: Optional<Job> | undefined;
  readonly pods: Optional<Pod[]> | undefined;
  readonly events: Optional<EventRead[]>;
}

/** How an output stream ended. */
export type OutputEnd = 'ended' | 'gone' | 'aborted' | { readonly error: string };

export interface ConsolePorts {
  /** Who a bearer token belongs to (TokenReview); undefined when nobody; `error` when the review failed. */
  authenticateToken(token: string): Promise<CallerIdentity | undefined | { readonly error: string }>;
  /** Whether `caller` may do it (SubjectAccessReview); `error` when the review failed. */
  authorize(caller: CallerIdentity, access: AccessRequest): Promise<boolean | { readonly error: string }>;
  listAgents(namespace: string): Promise<readonly Agent[] | { readonly error: string }>;
  listStations(namespace: string): Promise<readonly Station[] | { readonly error: string }>;
  getAgent(namespace: string, name: string): Promise<Optional<Agent>>;
  getStation(namespace: string, name: string): Promise<Optional<Station>>;
  /** The prompt template of an AgentDefinition, when it can be read. */
  promptTemplate(namespace: string, definition: string): Promise<string | undefined>;
  /** The Agent's Job, pods and Events; `allowed` says which of them the person may read. */
  agentExtras(
    agent: Agent,
    allowed: { readonly job: boolean; readonly pods: boolean; readonly events: boolean },
  ): Promise<AgentExtras>;
  /** Creates an Agent; the created Agent or the API server's message. */
  createAgent(
    namespace: string,
    body: Readonly<Record<string, unknown>>,
  ): Promise<{ readonly agent: Agent } | { readonly error: string; readonly status: number }>;
  /** Streams the agent log of the run's pod, line by line, until it ends, the pod is gone, or `signal` aborts. */
  streamOutput(o: {
    readonly namespace: string;
    readonly jobName: string;
    readonly runOver: boolean;
    readonly signal: AbortSignal;
    readonly onLine: (line: string) => void;
  }): Promise<OutputEnd>;
  /** Sends a prompt to a realtime run as `caller` (through the prompt API: it authorises `agents/prompt`). */
  prompt(
    caller: CallerIdentity,
    namespace: string,
    name: string,
    body: string,
    signal: AbortSignal,
  ): Promise<Response>;
  readonly sessions: SessionStore;
  /** The namespace shown when none is asked for. */
  readonly defaultNamespace: string;
  /** Served over TLS: cookies are `Secure`. */
  readonly secure: boolean;
  /** Where a trace id links to (`{traceID}` replaced). */
  readonly traceUrl?: string | undefined;
  readonly now: () => number;
}

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

const GROUP = 'agents.re-cinq.com';
const TERMINAL = new Set(['Succeeded', 'Failed']);
const plain = painter(false);

/** A namespace or object name as Kubernetes allows (DNS-1123 subdomain); anything else is refused. */
export function validName(name: string): boolean {
  return name.length <= 253 && DNS1123_SUBDOMAIN.test(name);
}

/** Builds the console app. */
type Env = { Variables: { session: Session; sessionId: string; form: URLSearchParams | undefined } };

export function createConsoleApp(ports: ConsolePorts): Hono<Env> {
  const app = new Hono<Env>();
  const viewer = (s: Session): Viewer => ({ username: s.identity.username, csrf: s.csrf });
  const page = (c: Context, body: string, status = 200) =>
    c.html(body, status as 200, { ...SECURITY_HEADERS });
  const may = async (s: Session, access: AccessRequest): Promise<boolean | { readonly error: string }> =>
    ports.authorize(s.identity, access);
  const denied = (c: Context, s: Session, what: string) =>
    page(c, messagePage('Not allowed', `${s.identity.username} may not ${what}.`, viewer(s)), 403);
  const failed = (c: Context, s: Session | undefined, message: string, status = 500) =>
    page(c, messagePage('Something went wrong', message, s === undefined ? undefined : viewer(s)), status);
  const cookieOptions = { httpOnly: true, sameSite: 'Lax' as const, path: '/', secure: ports.secure };
  const signIns = new SignInLimiter(() => performance.now());

  app.use('*', async (c, next) => {
    await next();
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) if (!c.res.headers.has(k)) c.res.headers.set(k, v);
  });

  // Cross-site requests that change something are refused outright (the CSRF token is checked as well).
  app.use('*', async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && !sameOrigin(c.req.raw))
      return c.text('cross-site request refused', 403);
    return next();
  });

  app.get('/static/console.css', (c) =>
    c.body(CONSOLE_CSS, 200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'max-age=300' }),
  );
  app.get('/static/console.js', (c) =>
    c.body(CONSOLE_JS, 200, {
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'max-age=300',
    }),
  );

  app.get('/favicon.ico', (c) =>
    c.body(CONSOLE_ICON, 200, { 'content-type': 'image/svg+xml', 'cache-control': 'max-age=86400' }),
  );

  app.get('/login', (c) => {
    const code = c.req.query('code');
    if (code !== undefined) {
      const identity = ports.sessions.redeemLoginCode(code);
      if (identity === undefined) {
        const csrf = randomToken();
        setCookie(c, LOGIN_COOKIE, csrf, { ...cookieOptions, maxAge: 3600 });
        return page(c, loginPage('That sign-in link was used already or has expired.', csrf), 401);
      }
      return signIn(c, identity);
    }
    const csrf = randomToken();
    setCookie(c, LOGIN_COOKIE, csrf, { ...cookieOptions, maxAge: 3600 });
    return page(c, loginPage(undefined, csrf));
  });

  app.post('/login', async (c) => {
    const form = await readForm(c.req.raw);
    const expected = getCookie(c, LOGIN_COOKIE);
    const csrf = randomToken();
    setCookie(c, LOGIN_COOKIE, csrf, { ...cookieOptions, maxAge: 3600 });
    if (form === undefined) return page(c, loginPage('The request is too large.', csrf), 413);
    if (expected === undefined || !csrfMatches({ csrf: expected } as Session, form.get('_csrf') ?? undefined))
      return page(c, loginPage('The sign-in form expired; try again.', csrf), 403);
    const token = (form.get('token') ?? '').trim();
    if (token === '') return page(c, loginPage('Paste a token.', csrf), 400);
    const waitSeconds = signIns.begin();
    if (waitSeconds !== undefined) {
      c.header('retry-after', String(waitSeconds));
      return page(c, loginPage(`Too many failed sign-ins; try again in ${waitSeconds} s.`, csrf), 429);
    }
    let identity: Awaited<ReturnType<ConsolePorts['authenticateToken']>>;
    try {
      identity = await ports.authenticateToken(token);
    } finally {
      signIns.end(identity === undefined);
    }
    if (identity === undefined)
      return page(c, loginPage('The API server does not accept that token.', csrf), 401);
    if ('error' in identity)
      return page(c, loginPage(`The token could not be checked: ${identity.error}`, csrf), 500);
    deleteCookie(c, LOGIN_COOKIE, { path: '/' });
    // The session ends when the token does: signing in must not outlive a short-lived or expiring token.
    return signIn(c, identity, tokenExpiry(token));
  });

  function signIn(c: Context, identity: CallerIdentity, until?: number) {
    const { id } = ports.sessions.create(identity, until);
    setCookie(c, SESSION_COOKIE, id, cookieOptions);
    return c.redirect('/agents', 303);
  }

  // Everything below needs a session; every POST its CSRF token.
  app.use('*', async (c, next) => {
    const id = getCookie(c, SESSION_COOKIE);
    const session = ports.sessions.get(id);
    if (session === undefined || id === undefined) {
      const wantsPage = c.req.method === 'GET' && (c.req.header('accept') ?? '').includes('text/html');
      return wantsPage && c.req.query('fragment') === undefined
        ? c.redirect('/login', 303)
        : c.json({ message: 'sign in first' }, 401);
    }
    if (c.req.method === 'POST') {
      let presented = c.req.header('x-csrf-token');
      if (presented === undefined && isForm(c.req.raw)) {
        const form = await readForm(c.req.raw);
        if (form === undefined) return c.json({ message: 'the form is too large' }, 413);
        c.set('form', form);
        presented = form.get('_csrf') ?? undefined;
      }
      if (!csrfMatches(session, presented)) return c.json({ message: 'missing or wrong CSRF token' }, 403);
    }
    c.set('session', session);
    c.set('sessionId', id);
    return next();
  });

  app.get('/', (c) => c.redirect('/agents', 303));

  app.post('/logout', (c) => {
    ports.sessions.delete(c.get('sessionId'));
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.redirect('/login', 303);
  });

  app.get('/agents', async (c) => {
    const s = c.get('session');
    const namespace = c.req.query('namespace') || ports.defaultNamespace;
    if (!validName(namespace)) return failed(c, s, `"${namespace}" is not a namespace name`, 400);
    const phaseQuery = c.req.query('phase') || undefined;
    const phase = PHASES.find((p) => p === phaseQuery);
    const station = c.req.query('station') || undefined;
    const allowed = await may(s, { verb: 'list', group: GROUP, resource: 'agents', namespace });
    if (typeof allowed !== 'boolean') return failed(c, s, `checking access failed: ${allowed.error}`);
    if (!allowed) return denied(c, s, `list Agents in namespace ${namespace}`);
    const [agents, stations] = await Promise.all([
      ports.listAgents(namespace),
      may(s, { verb: 'list', group: GROUP, resource: 'stations', namespace }).then((ok) =>
        ok === true ? ports.listStations(namespace) : [],
      ),
    ]);
    if ('error' in agents) return failed(c, s, `listing the Agents failed: ${agents.error}`);
    const view = {
      namespace,
      agents,
      stations: 'error' in stations ? [] : stations,
      station,
      phase,
      now: ports.now(),
    };
    if (c.req.query('fragment') !== undefined)
      return c.html(agentListFragment(view).text, 200, { ...SECURITY_HEADERS });
    return page(c, agentListPage(view, viewer(s)));
  });

  /** The Agent the route names, once the person may get it; otherwise the response to send. */
  async function agentFor(c: Context, s: Session): Promise<Agent | Response> {
    const namespace = c.req.param('namespace') ?? '';
    const name = c.req.param('name') ?? '';
    if (!validName(namespace) || !validName(name)) return failed(c, s, 'not an Agent name', 404);
    const allowed = await may(s, { verb: 'get', group: GROUP, resource: 'agents', namespace, name });
    if (typeof allowed !== 'boolean') return failed(c, s, `checking access failed: ${allowed.error}`);
    if (!allowed) return denied(c, s, `read Agent ${namespace}/${name}`);
    const got = await ports.getAgent(namespace, name);
    if (got.kind === 'missing') return failed(c, s, `Agent ${namespace}/${name} does not exist`, 404);
    if (got.kind !== 'ok')
      return failed(
        c,
        s,
        `reading Agent ${namespace}/${name} failed: ${got.kind === 'error' ? got.error.message : got.kind}`,
      );
    // status.jobName is written by whoever may patch the status: one that is not an object name ('.' would make the
    // Job's path the namespace's Job list; a selector would match other pods) is not used to read anything.
    const jobName = got.value.status.jobName;
    if (jobName !== undefined && !validName(jobName))
      return { ...got.value, status: { ...got.value.status, jobName: undefined } };
    return got.value;
  }

  /** Output streams open, by user name (entries leave at zero). */
  const streamsOpen = new Map<string, number>();

  app.get('/agents/:namespace/:name', async (c) => {
    const s = c.get('session');
    const agent = await agentFor(c, s);
    if (agent instanceof Response) return agent;
    const namespace = agent.metadata.namespace ?? '';
    if (c.req.query('fragment') === 'status')
      return c.html(statusFragment({ agent, now: ports.now() }).text, 200, {
        ...SECURITY_HEADERS,
        'x-agent-phase': agent.status.phase,
      });
    const check = (access: Omit<AccessRequest, 'namespace'>) =>
      may(s, { ...access, namespace }).then((ok) => ok === true);
    const [job, pods, events] = await Promise.all([
      check({ verb: 'get', group: 'batch', resource: 'jobs' }),
      check({ verb: 'list', group: '', resource: 'pods' }),
      check({ verb: 'list', group: '', resource: 'events' }),
    ]);
    const extras = await ports.agentExtras(agent, { job, pods, events });
    const realtime =
      agent.status.phase === 'Running' &&
      extras.pods?.kind === 'ok' &&
      extras.pods.value.some((p) => p.metadata.labels?.['agents.re-cinq.com/execution'] === 'realtime');
    return page(
      c,
      agentDetailPage({ agent, ...extras, realtime, traceUrl: ports.traceUrl, now: ports.now() }, viewer(s)),
    );
  });

  app.get('/agents/:namespace/:name/stream', async (c) => {
    const s = c.get('session');
    const agent = await agentFor(c, s);
    if (agent instanceof Response) return agent;
    const namespace = agent.metadata.namespace ?? '';
    const logs = await may(s, { verb: 'get', group: '', resource: 'pods', subresource: 'log', namespace });
    const user = s.identity.username;
    const open = streamsOpen.get(user) ?? 0;
    if (open >= MAX_STREAMS_PER_USER)
      return c.json({ message: `${user} has ${open} output streams open already; close some tabs` }, 429);
    streamsOpen.set(user, open + 1);
    const release = () => {
      const left = (streamsOpen.get(user) ?? 1) - 1;
      if (left > 0) streamsOpen.set(user, left);
      else streamsOpen.delete(user);
    };
    const encoder = new TextEncoder();
    const jobName = agent.status.jobName;
    const abort = new AbortController();
    c.req.raw.signal.addEventListener('abort', () => abort.abort(), { once: true });
    if (c.req.raw.signal.aborted) abort.abort();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        try {
          const send = (event: string | undefined, data: string) => {
            if (abort.signal.aborted) return;
            try {
              controller.enqueue(
                encoder.encode(`${event !== undefined ? `event: ${event}\n` : ''}data: ${data}\n\n`),
              );
            } catch {
              abort.abort();
            }
          };
          const text = (t: string) => {
            if (t !== '') send(undefined, JSON.stringify(t));
          };
          const recorded = () => {
            if (agent.status.output !== undefined) text(renderText(agent.status.output, plain));
          };
          if (logs !== true) {
            text(`(${s.identity.username} may not read the run's pod log; the recorded output follows)\n`);
            recorded();
          } else if (jobName === undefined) {
            if (TERMINAL.has(agent.status.phase)) recorded();
          } else {
            let state: RenderState = INITIAL_RENDER_STATE;
            const end = await ports.streamOutput({
              namespace,
              jobName,
              runOver: TERMINAL.has(agent.status.phase),
              signal: abort.signal,
              onLine: (line) => {
                const r = renderLine(line, state, plain);
                state = r.state;
                text(r.text);
              },
            });
            text(finishRender(state));
            if (end === 'gone') recorded();
            else if (typeof end === 'object') text(`(the live log cannot be read: ${end.error})\n`);
          }
          send('end', '""');
          try {
            controller.close();
          } catch {
            // the browser went away
          }
        } finally {
          release();
        }
      },
      cancel() {
        abort.abort();
      },
    });
    return new Response(body, {
      headers: {
        ...SECURITY_HEADERS,
        'content-type': 'text/event-stream; charset=utf-8',
        'x-accel-buffering': 'no',
      },
    });
  });

  app.post('/agents/:namespace/:name/prompt', async (c) => {
    const s = c.get('session');
    const namespace = c.req.param('namespace');
    const name = c.req.param('name');
    if (!validName(namespace) || !validName(name)) return c.json({ message: 'not an Agent name' }, 404);
    // A form's body was read for its CSRF token; a prompt is JSON with the x-csrf-token header.
    if (c.get('form') !== undefined)
      return c.json({ message: 'send the prompt as JSON, with the x-csrf-token header' }, 415);
    const text = await readLimited(c.req.raw, MAX_CONSOLE_BODY_BYTES);
    if (text === undefined) return c.json({ message: 'the prompt is too large' }, 413);
    const upstream = await ports.prompt(s.identity, namespace, name, text, c.req.raw.signal);
    if (upstream.status !== 200 || upstream.body === null) return upstream;
    return new Response(upstream.body.pipeThrough(renderStream()), {
      headers: { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8' },
    });
  });

  async function stationFor(c: Context, s: Session): Promise<Station | Response> {
    const namespace = c.req.param('namespace') ?? '';
    const name = c.req.param('name') ?? '';
    if (!validName(namespace) || !validName(name)) return failed(c, s, 'not a Station name', 404);
    const [read, create] = await Promise.all([
      may(s, { verb: 'get', group: GROUP, resource: 'stations', namespace, name }),
      may(s, { verb: 'create', group: GROUP, resource: 'agents', namespace }),
    ]);
    if (typeof read !== 'boolean') return failed(c, s, `checking access failed: ${read.error}`);
    if (typeof create !== 'boolean') return failed(c, s, `checking access failed: ${create.error}`);
    if (!read) return denied(c, s, `read Station ${namespace}/${name}`);
    if (!create) return denied(c, s, `create Agents in namespace ${namespace}`);
    const got = await ports.getStation(namespace, name);
    if (got.kind === 'missing') return failed(c, s, `Station ${namespace}/${name} does not exist`, 404);
    if (got.kind !== 'ok')
      return failed(
        c,
        s,
        `reading Station ${namespace}/${name} failed: ${got.kind === 'error' ? got.error.message : got.kind}`,
      );
    return got.value;
  }

  app.get('/stations/:namespace/:name/run', async (c) => {
    const s = c.get('session');
    const station = await stationFor(c, s);
    if (station instanceof Response) return station;
    const namespace = c.req.param('namespace');
    const promptTemplate = await templateFor(s, namespace, station);
    return page(
      c,
      runFormPage(
        {
          namespace,
          station,
          promptTemplate,
          values: { prompt: '', parameters: '', model: '', name: '' },
          error: undefined,
        },
        viewer(s),
      ),
    );
  });

  async function templateFor(s: Session, namespace: string, station: Station): Promise<string | undefined> {
    const name = station.spec.agentDefRef;
    const ok = await may(s, { verb: 'get', group: GROUP, resource: 'agentdefinitions', namespace, name });
    return ok === true ? ports.promptTemplate(namespace, name) : undefined;
  }

  app.post('/stations/:namespace/:name/run', async (c) => {
    const s = c.get('session');
    const station = await stationFor(c, s);
    if (station instanceof Response) return station;
    const namespace = c.req.param('namespace');
    // The CSRF check read the form unless the token came as the x-csrf-token header: then it is read here.
    let form: URLSearchParams | undefined = c.get('form');
    if (form === undefined) {
      if (!isForm(c.req.raw)) return c.json({ message: 'send the run form urlencoded' }, 415);
      form = await readForm(c.req.raw);
      if (form === undefined) return c.json({ message: 'the form is too large' }, 413);
    }
    const values = {
      prompt: form.get('prompt') ?? '',
      parameters: form.get('parameters') ?? '',
      model: (form.get('model') ?? '').trim(),
      name: (form.get('name') ?? '').trim(),
    };
    const again = async (error: string, status: number) =>
      page(
        c,
        runFormPage(
          { namespace, station, promptTemplate: await templateFor(s, namespace, station), values, error },
          viewer(s),
        ),
        status,
      );
    let body: Record<string, unknown>;
    try {
      const parameters = parseParameterLines(values.parameters);
      const prompt = values.prompt.trim() === '' ? undefined : values.prompt;
      if (prompt !== undefined && Object.hasOwn(parameters, PROMPT_PARAMETER))
        return again(`the prompt and the parameter ${PROMPT_PARAMETER} both set ${PROMPT_PARAMETER}`, 422);
      if (values.name !== '' && !validName(values.name))
        return again(
          `the name ${JSON.stringify(values.name)} is not valid: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`,
          422,
        );
      body = agentBody(
        {
          station: station.metadata.name,
          name: values.name === '' ? undefined : values.name,
          model: values.model === '' ? undefined : values.model,
          parameters,
          prompt: undefined,
          wait: false,
          follow: false,
          raw: false,
          timeoutMs: undefined,
        },
        prompt,
      );
    } catch (error) {
      return again(error instanceof Error ? error.message : String(error), 422);
    }
    const created = await ports.createAgent(namespace, body);
    if ('error' in created) return again(created.error, created.status);
    return c.redirect(`/agents/${namespace}/${created.agent.metadata.name}`, 303);
  });

  app.notFound((c) => c.text('not found', 404));
  app.onError((error, c) => c.text(`console error: ${error.message}`, 500));
  return app;
}

/** NDJSON event lines in, readable text out. */
function renderStream(): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let partial = '';
  let state: RenderState = INITIAL_RENDER_STATE;
  const emit = (line: string, controller: TransformStreamDefaultController<Uint8Array>) => {
    const r = renderLine(line, state, plain);
    state = r.state;
    if (r.text !== '') controller.enqueue(encoder.encode(r.text));
  };
  return new TransformStream({
    transform(chunk, controller) {
      const lines = (partial + decoder.decode(chunk, { stream: true })).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) emit(line, controller);
    },
    flush(controller) {
      if (partial !== '') emit(partial, controller);
      const tail = finishRender(state);
      if (tail !== '') controller.enqueue(encoder.encode(tail));
    },
  });
}

/**
 * The parameters of the run form: one `key=value` per line, blanks around the key and value ignored, empty lines
 * skipped. Throws one clear line for a line without a key.
 */
export function parseParameterLines(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    const eq = line.indexOf('=');
    const key = eq < 0 ? '' : line.slice(0, eq).trim();
    if (key === '' || /\s/.test(key))
      throw new Error(
        `parameters, line ${i + 1}: write key=value (a key without blanks), got ${JSON.stringify(line)}`,
      );
    // An own property whatever the key (`out[key] =` would set the prototype for `__proto__`).
    Object.defineProperty(out, key, {
      value: line.slice(eq + 1).trim(),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  });
  return out;
}

/** The origin the console is reached at on this host (for the one-time link a local run prints). */
export function consoleOrigin(bindAddress: string, port: number, tls: boolean): string {
  const host = bindAddress === '0.0.0.0' || bindAddress === '::' ? '127.0.0.1' : bindAddress;
  return `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Whether a request that changes something comes from the console's own pages (Origin, else Sec-Fetch-Site). */
export function sameOrigin(request: Request): boolean {
  const origin = request.headers.get('origin');
  if (origin !== null && origin !== 'null') {
    const host = request.headers.get('host') ?? new URL(request.url).host;
    try {
      return new URL(origin).host === host;
    } catch {
      return false;
    }
  }
  if (origin === 'null') return false;
  const site = request.headers.get('sec-fetch-site');
  return site === null || site === 'same-origin' || site === 'none';
}

function isForm(request: Request): boolean {
  const type = request.headers.get('content-type') ?? '';
  return type.startsWith('application/x-www-form-urlencoded') || type.startsWith('multipart/form-data');
}

/** A urlencoded form, or undefined when larger than the limit. */
async function readForm(request: Request): Promise<URLSearchParams | undefined> {
  const text = await readLimited(request, MAX_CONSOLE_BODY_BYTES);
  return text === undefined ? undefined : new URLSearchParams(text);
}
