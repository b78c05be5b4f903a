import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Agent } from '../api/index.ts';
import { agentOf, iso, NS, stationOf, T0 } from '../cli/test-fixtures.ts';
import type { CallerIdentity } from '../server/prompt.ts';
import { consoleOrigin, createConsoleApp } from './app.ts';
import type { AccessRequest, ConsolePorts } from './contract.ts';
import { LOGIN_COOKIE, MAX_STREAMS_PER_USER, SESSION_COOKIE, sameOrigin } from './kit.ts';
import { SessionStore, SIGN_IN_FAILURES_PER_WINDOW } from './session.ts';

const ALICE: CallerIdentity = { username: 'alice', groups: ['devs', 'system:authenticated'] };
const ORIGIN = 'http://console.test';

interface World {
  agents?: Agent[];
  /** Denied requests, as `verb resource[/sub] ns[/name]`. */
  deny?: string[];
  created?: Record<string, unknown>[];
  createError?: { error: string; status: number };
  lines?: string[];
  promptUpstream?: Response;
  prompts?: { caller: CallerIdentity; namespace: string; name: string; body: string }[];
  reviews?: string[];
  traceUrl?: string;
  streamOutput?: ConsolePorts['streamOutput'];
  /** The Agents agentExtras was asked about. */
  extras?: Agent[];
}

const key = (a: AccessRequest): string =>
  `${a.verb} ${a.resource}${a.subresource !== undefined ? `/${a.subresource}` : ''} ${a.namespace}${a.name !== undefined ? `/${a.name}` : ''}`;

function setup(w: World = {}) {
  const sessions = new SessionStore(() => T0 + 60_000);
  w.created ??= [];
  w.prompts ??= [];
  w.reviews ??= [];
  w.extras ??= [];
  const agents = w.agents ?? [];
  const ports: ConsolePorts = {
    authenticateToken: async (token) =>
      token === 'good-token' || token.startsWith('eyJ')
        ? ALICE
        : token === 'broken'
          ? { error: 'boom' }
          : undefined,
    authorize: async (_caller, access) => {
      w.reviews?.push(key(access));
      return !(w.deny ?? []).includes(key(access));
    },
    listAgents: async (ns) => agents.filter((a) => a.metadata.namespace === ns),
    listStations: async () => [stationOf('hello'), stationOf('idle')],
    getAgent: async (_ns, name) => {
      const a = agents.find((x) => x.metadata.name === name);
      return a === undefined ? { kind: 'missing' } : { kind: 'ok', value: a };
    },
    getStation: async (_ns, name) =>
      name === 'hello' ? { kind: 'ok', value: stationOf('hello') } : { kind: 'missing' },
    promptTemplate: async () => 'Fix {prompt} in {repo}',
    agentExtras: async (agent) => {
      w.extras?.push(agent);
      return {
        job: undefined,
        pods: undefined,
        events: {
          kind: 'ok',
          value: [
            {
              metadata: { name: 'e1', namespace: NS },
              involvedObject: { kind: 'Agent', name: 'done' },
              type: 'Warning',
              reason: 'BackOff',
              message: 'pod <b>crashed</b>',
              lastTimestamp: iso(30),
            },
          ],
        } as never,
      };
    },
    createAgent: async (_ns, body) => {
      if (w.createError !== undefined) return w.createError;
      w.created?.push(body);
      return { agent: agentOf('hello-x7k2p') };
    },
    streamOutput:
      w.streamOutput ??
      (async (o) => {
        for (const l of w.lines ?? []) o.onLine(l);
        return 'ended';
      }),
    prompt: async (caller, namespace, name, body) => {
      w.prompts?.push({ caller, namespace, name, body });
      return w.promptUpstream ?? new Response('', { status: 200 });
    },
    sessions,
    defaultNamespace: NS,
    secure: false,
    traceUrl: w.traceUrl ?? 'https://traces.test/trace/{traceID}',
    now: () => T0 + 60_000,
  };
  const app = createConsoleApp(ports);
  const { id, session } = sessions.create(ALICE);
  const cookie = `${SESSION_COOKIE}=${id}`;
  const get = (path: string, headers: Record<string, string> = {}) =>
    app.request(`${ORIGIN}${path}`, { headers: { cookie, accept: 'text/html', ...headers } });
  const post = (path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
    app.request(`${ORIGIN}${path}`, {
      method: 'POST',
      headers: {
        cookie,
        origin: ORIGIN,
        'content-type': 'application/x-www-form-urlencoded',
        ...headers,
      },
      body: new URLSearchParams(form).toString(),
    });
  return { app, sessions, session, cookie, get, post, w };
}

function cookieValue(res: Response, name: string): string | undefined {
  const all = res.headers.getSetCookie();
  const line = all.find((c) => c.startsWith(`${name}=`));
  return line?.slice(name.length + 1).split(';')[0];
}

/** A sign-in form post whose login cookie holds the CSRF token `expected`. */
async function postLogin(
  app: ReturnType<typeof setup>['app'],
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return app.request(`${ORIGIN}/login`, {
    method: 'POST',
    headers: {
      cookie: `${LOGIN_COOKIE}=expected`,
      origin: ORIGIN,
      'content-type': 'application/x-www-form-urlencoded',
      ...headers,
    },
    body: new URLSearchParams(form).toString(),
  });
}

describe('console: signing in', () => {
  it('sends a page request without a session to the sign-in page, and a fragment or stream request gets 401', async () => {
    const { app } = setup();
    const page = await app.request(`${ORIGIN}/agents`, { headers: { accept: 'text/html' } });
    assert.equal(page.status, 303);
    assert.equal(page.headers.get('location'), '/login');
    const fragment = await app.request(`${ORIGIN}/agents?fragment=1`, { headers: { accept: 'text/html' } });
    assert.equal(fragment.status, 401);
    const forged = await app.request(`${ORIGIN}/agents`, {
      headers: { accept: 'text/html', cookie: `${SESSION_COOKIE}=not-a-session` },
    });
    assert.equal(forged.status, 303);
  });

  it('signs in with a token the API server vouches for; the cookie is HttpOnly and SameSite, the token not kept', async () => {
    const { app, sessions } = setup();
    const form = await app.request(`${ORIGIN}/login`);
    assert.equal(form.status, 200);
    const loginCsrf = cookieValue(form, LOGIN_COOKIE) ?? '';
    assert.ok(loginCsrf.length >= 40);
    assert.match(await form.text(), new RegExp(`name="_csrf" value="${loginCsrf}"`));
    const before = sessions.size;
    const res = await app.request(`${ORIGIN}/login`, {
      method: 'POST',
      headers: {
        cookie: `${LOGIN_COOKIE}=${loginCsrf}`,
        origin: ORIGIN,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ _csrf: loginCsrf, token: ' good-token\n' }).toString(),
    });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/agents');
    const set = res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`)) ?? '';
    assert.match(set, /HttpOnly/);
    assert.match(set, /SameSite=Lax/);
    assert.doesNotMatch(set, /good-token/);
    assert.equal(sessions.size, before + 1);
    assert.equal(sessions.get(cookieValue(res, SESSION_COOKIE))?.identity.username, 'alice');
  });

  it('refuses a sign-in without the form token, an unknown token, a failed review, and a cross-site post', async () => {
    const { app } = setup();
    const attempt = (form: Record<string, string>, headers: Record<string, string> = {}) =>
      postLogin(app, form, headers);
    const noCsrf = await attempt({ token: 'good-token' });
    assert.equal(noCsrf.status, 403);
    assert.equal(cookieValue(noCsrf, SESSION_COOKIE), undefined);
    const unknown = await attempt({ _csrf: 'expected', token: 'stolen' });
    assert.equal(unknown.status, 401);
    assert.match(await unknown.text(), /does not accept that token/);
    const broken = await attempt({ _csrf: 'expected', token: 'broken' });
    assert.equal(broken.status, 500);
    assert.match(await broken.text(), /could not be checked: boom/);
    const crossSite = await attempt(
      { _csrf: 'expected', token: 'good-token' },
      { origin: 'http://evil.test' },
    );
    assert.equal(crossSite.status, 403);
  });

  it('refuses token sign-ins with 429 and Retry-After once SIGN_IN_FAILURES_PER_WINDOW failed; a one-time link still works', async () => {
    const { app, sessions } = setup();
    const attempt = (token: string) => postLogin(app, { _csrf: 'expected', token });
    // Reviews that could not be made (the API server away) do not use the budget.
    for (let i = 0; i <= SIGN_IN_FAILURES_PER_WINDOW; i += 1)
      assert.equal((await attempt('broken')).status, 500);
    const statuses = await Promise.all(
      Array.from({ length: SIGN_IN_FAILURES_PER_WINDOW }, (_, i) =>
        attempt(`guess-${i}`).then((r) => r.status),
      ),
    );
    assert.deepEqual(new Set(statuses), new Set([401]));
    const refused = await attempt('good-token');
    assert.equal(refused.status, 429);
    assert.match(refused.headers.get('retry-after') ?? '', /^(59|60)$/);
    assert.match(await refused.text(), /Too many failed sign-ins; try again in (59|60) s/);
    assert.equal(cookieValue(refused, SESSION_COOKIE), undefined);
    const code = sessions.issueLoginCode({ username: 'kubernetes-admin', groups: ['system:masters'] });
    assert.equal((await app.request(`${ORIGIN}/login?code=${code}`)).status, 303);
  });

  it('the one-time link of a local run signs in once, then never again', async () => {
    const { app, sessions } = setup();
    const code = sessions.issueLoginCode({ username: 'kubernetes-admin', groups: ['system:masters'] });
    const first = await app.request(`${ORIGIN}/login?code=${code}`);
    assert.equal(first.status, 303);
    assert.equal(sessions.get(cookieValue(first, SESSION_COOKIE))?.identity.username, 'kubernetes-admin');
    const again = await app.request(`${ORIGIN}/login?code=${code}`);
    assert.equal(again.status, 401);
    assert.equal(cookieValue(again, SESSION_COOKIE), undefined);
    assert.match(await again.text(), /used already or has expired/);
  });

  it('signs out: the session is gone', async () => {
    const { post, get, session } = setup();
    const out = await post('/logout', { _csrf: session.csrf });
    assert.equal(out.status, 303);
    assert.equal(out.headers.get('location'), '/login');
    assert.equal((await get('/agents')).status, 303);
  });
});

describe('console: CSRF and headers', () => {
  it('refuses a POST without the session token or with a wrong one, and one from another origin', async () => {
    const { post, session, w } = setup();
    assert.equal((await post('/stations/team/hello/run', { prompt: 'x' })).status, 403);
    assert.equal((await post('/stations/team/hello/run', { prompt: 'x', _csrf: 'nope' })).status, 403);
    assert.equal(
      (
        await post(
          '/stations/team/hello/run',
          { prompt: 'x', _csrf: session.csrf },
          { origin: 'http://evil.test' },
        )
      ).status,
      403,
    );
    assert.equal(w.created?.length, 0, 'nothing was created');
  });

  it('every page has a strict Content-Security-Policy and is not cached or framed', async () => {
    const { get } = setup({ agents: [agentOf('a1', { phase: 'Running' })] });
    const res = await get('/agents');
    assert.equal(res.status, 200);
    assert.match(
      res.headers.get('content-security-policy') ?? '',
      /script-src 'self'.*frame-ancestors 'none'/,
    );
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  });

  it('tells same-origin requests from cross-site ones', () => {
    const req = (h: Record<string, string>) => new Request(`${ORIGIN}/x`, { method: 'POST', headers: h });
    assert.equal(sameOrigin(req({ origin: ORIGIN })), true);
    assert.equal(sameOrigin(req({ origin: 'http://evil.test' })), false);
    assert.equal(sameOrigin(req({ origin: 'null' })), false);
    assert.equal(sameOrigin(req({ 'sec-fetch-site': 'cross-site' })), false);
    assert.equal(sameOrigin(req({ 'sec-fetch-site': 'same-origin' })), true);
    assert.equal(sameOrigin(req({})), true, 'a non-browser client (no Origin) still needs the CSRF token');
  });
});

describe('console: Agents', () => {
  const agents = [
    agentOf('run-ok', { phase: 'Succeeded', created: 10, exitCode: 0, jobName: 'agent-job-run-ok' }),
    agentOf('run-bad', {
      phase: 'Failed',
      created: 20,
      exitCode: 3,
      failureReason: '<script>alert(1)</script>',
    }),
    agentOf('run-live', { phase: 'Running', created: 30, station: 'other' }),
    agentOf('elsewhere', { namespace: 'ops' }),
  ];

  it('lists the namespace’s Agents by Station with counts per phase, escaping what the cluster says', async () => {
    const { get } = setup({ agents });
    const res = await get('/agents');
    const text = await res.text();
    assert.equal(res.status, 200);
    for (const station of ['hello', 'idle', 'other'])
      assert.match(text, new RegExp(`data-station="${station}"`));
    assert.match(text, /data-agent="run-ok"/);
    assert.doesNotMatch(text, /elsewhere/, 'another namespace is not listed');
    assert.doesNotMatch(text, /<script>alert/);
    assert.match(text, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(text, /Succeeded <b>1<\/b>/);
    assert.match(text, /href="\/stations\/team\/hello\/run"/);
  });

  it('filters by phase and Station; the fragment is the list alone', async () => {
    const { get } = setup({ agents });
    const text = await (await get('/agents?station=hello&phase=Failed&fragment=1')).text();
    assert.match(text, /data-agent="run-bad"/);
    assert.doesNotMatch(text, /data-agent="run-ok"/);
    assert.doesNotMatch(text, /data-station="other"/);
    assert.doesNotMatch(text, /<html/);
  });

  it('asks RBAC: without list on agents the page says so (403) and reads nothing', async () => {
    const { get, w } = setup({ agents, deny: ['list agents team'] });
    const res = await get('/agents');
    assert.equal(res.status, 403);
    assert.match(await res.text(), /alice may not list Agents in namespace team/);
    assert.deepEqual(w.reviews, ['list agents team']);
  });

  it('refuses a namespace that is not a name', async () => {
    const { get } = setup({ agents });
    assert.equal((await get('/agents?namespace=..%2Fetc')).status, 400);
  });

  it('shows one Agent: status, conditions, Events, usage, cost, a trace link and its result', async () => {
    const done = agentOf('done', {
      phase: 'Succeeded',
      exitCode: 0,
      jobName: 'agent-job-done',
      ready: { status: 'False', reason: 'Completed', message: 'the run is over' },
      status: {
        startedAt: iso(5),
        completedAt: iso(65),
        traceID: '0123456789abcdef0123456789abcdef',
        tokenUsage: { input: 10, output: 20, cacheRead: 1, cacheWrite: 2, total: 33 },
        costEstimate: { usd: '0.0042', source: 'priceTable', model: 'claude-opus-5-5' },
        result: 'All <tests> pass',
      },
    });
    const { get, w } = setup({ agents: [done] });
    const res = await get('/agents/team/done');
    const text = await res.text();
    assert.equal(res.status, 200);
    assert.match(text, /badge succeeded">Succeeded/);
    assert.match(text, /href="https:\/\/traces.test\/trace\/0123456789abcdef0123456789abcdef"/);
    assert.match(text, /33 \(input 10, output 20/);
    assert.match(text, /\$0\.0042 \(priceTable, claude-opus-5-5\)/);
    assert.match(text, /All &lt;tests&gt; pass/);
    assert.match(text, /<td>Ready<\/td><td>False<\/td><td>Completed<\/td>/);
    assert.match(text, /pod &lt;b&gt;crashed&lt;\/b&gt;/);
    assert.match(text, /data-stream="\/agents\/team\/done\/stream"/);
    assert.doesNotMatch(text, /prompt-form/, 'no prompt box for a finished run');
    assert.doesNotMatch(text, /data-refresh/, 'a finished run does not refresh');
    assert.ok(w.reviews?.includes('get agents team/done'));
  });

  it('a missing Agent is a 404; one the person may not get is a 403', async () => {
    assert.equal((await setup().get('/agents/team/nope')).status, 404);
    const denied = setup({ agents, deny: ['get agents team/run-ok'] });
    assert.equal((await denied.get('/agents/team/run-ok')).status, 403);
  });

  it('the status fragment carries the phase, so the page reloads when the run moves on', async () => {
    const { get } = setup({ agents });
    const res = await get('/agents/team/run-live?fragment=status');
    assert.equal(res.headers.get('x-agent-phase'), 'Running');
    assert.doesNotMatch(await res.text(), /<html/);
  });

  it('streams the output as server-sent events of readable text, then an end event', async () => {
    const lines = [
      JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: 'Hello <you>' }] } }),
      'plain line',
    ];
    const { get } = setup({ agents, lines });
    const res = await get('/agents/team/run-ok/stream');
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const body = await res.text();
    const data = [...body.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1] ?? '""') as string).join('');
    assert.match(data, /Hello <you>/);
    assert.match(data, /plain line/);
    assert.match(body, /event: end\ndata: ""\n\n$/);
  });

  it('without pods/log the stream says so and shows the recorded output instead', async () => {
    const withOutput = agentOf('rec', {
      phase: 'Succeeded',
      jobName: 'j',
      status: { output: 'recorded tail' },
    });
    const { get } = setup({ agents: [withOutput], deny: ['get pods/log team'], lines: ['live line'] });
    const body = await (await get('/agents/team/rec/stream')).text();
    assert.match(body, /may not read the run's pod log/);
    assert.match(body, /recorded tail/);
    assert.doesNotMatch(body, /live line/);
  });
});

describe('console: starting a run', () => {
  it('shows the form with the recipe’s prompt template and its placeholders', async () => {
    const { get } = setup();
    const text = await (await get('/stations/team/hello/run')).text();
    assert.match(text, /Fix \{prompt\} in \{repo\}/);
    assert.match(text, /<code>\{repo\}<\/code>/);
    assert.match(text, /name="_csrf" value="/);
  });

  it('creates an Agent from the form (generateName, the prompt and parameters) and goes to it', async () => {
    const { post, session, w } = setup();
    const res = await post('/stations/team/hello/run', {
      _csrf: session.csrf,
      prompt: 'the flaky test',
      parameters: 'repo=re-cinq/demo\r\n\r\nbranch = main',
      model: 'claude-sonnet-5',
      name: '',
    });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/agents/team/hello-x7k2p');
    assert.deepEqual(w.created, [
      {
        metadata: { generateName: 'hello-' },
        spec: {
          stationRef: 'hello',
          parameters: { repo: 're-cinq/demo', branch: 'main', prompt: 'the flaky test' },
          model: 'claude-sonnet-5',
        },
      },
    ]);
  });

  it('a bad parameter line or name shows the form again with the error and keeps what was typed', async () => {
    const { post, session, w } = setup();
    const bad = await post('/stations/team/hello/run', {
      _csrf: session.csrf,
      prompt: 'keep <me>',
      parameters: 'no equals sign',
    });
    assert.equal(bad.status, 422);
    const text = await bad.text();
    assert.match(text, /role="alert"/);
    assert.match(text, /keep &lt;me&gt;/);
    const badName = await post('/stations/team/hello/run', { _csrf: session.csrf, name: 'Not_A_Name' });
    assert.equal(badName.status, 422);
    assert.equal(w.created?.length, 0);
  });

  it('the API server’s refusal is shown on the form', async () => {
    const { post, session } = setup({ createError: { error: 'admission webhook said no', status: 422 } });
    const res = await post('/stations/team/hello/run', { _csrf: session.csrf, prompt: 'x' });
    assert.equal(res.status, 422);
    assert.match(await res.text(), /admission webhook said no/);
  });

  it('needs create on agents: the form is refused without it', async () => {
    const { get, post, session, w } = setup({ deny: ['create agents team'] });
    assert.equal((await get('/stations/team/hello/run')).status, 403);
    assert.equal((await post('/stations/team/hello/run', { _csrf: session.csrf, prompt: 'x' })).status, 403);
    assert.equal(w.created?.length, 0);
  });
});

describe('console: running an Agent again', () => {
  const source = (() => {
    const a = agentOf('nightly-abcde', {
      phase: 'Succeeded',
      jobName: 'agent-job-nightly-abcde',
      station: 'hello',
      parameters: { topic: 'tests' },
    });
    return {
      ...a,
      metadata: {
        ...a.metadata,
        labels: { team: 'infra' },
        annotations: { 'agents.re-cinq.com/session-id': 's-1' },
        finalizers: ['agents.re-cinq.com/spend'],
      },
      spec: { ...a.spec, model: 'claude-sonnet-5' },
    };
  })();

  it('the run page offers Rerun (a form with the CSRF token) to someone who may create Agents, and links a rerun to its source', async () => {
    const rerun = {
      ...agentOf('nightly-abcde-rerun-x1y2z'),
      metadata: {
        ...agentOf('nightly-abcde-rerun-x1y2z').metadata,
        annotations: { 'agents.re-cinq.com/rerun-of': 'nightly-abcde' },
      },
    };
    const { get, session } = setup({ agents: [source, rerun] });
    const text = await (await get('/agents/team/nightly-abcde')).text();
    assert.match(
      text,
      new RegExp(
        `<form method="post" action="/agents/team/nightly-abcde/rerun" class="rerun"><input type="hidden" name="_csrf" value="${session.csrf}">`,
      ),
    );
    assert.doesNotMatch(text, /Rerun of/, 'not a rerun itself');
    const again = await (await get('/agents/team/nightly-abcde-rerun-x1y2z')).text();
    assert.match(
      again,
      /<th>Rerun of<\/th><td><a href="\/agents\/team\/nightly-abcde">nightly-abcde<\/a><\/td>/,
    );
    const { get: getDenied } = setup({ agents: [source], deny: ['create agents team'] });
    assert.doesNotMatch(await (await getDenied('/agents/team/nightly-abcde')).text(), /\/rerun"/);
  });

  it('POST …/rerun creates the copy (same spec, user labels, the rerun annotations) and goes to it', async () => {
    const { post, session, w } = setup({ agents: [source] });
    const res = await post('/agents/team/nightly-abcde/rerun', { _csrf: session.csrf });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/agents/team/hello-x7k2p');
    assert.deepEqual(w.created, [
      {
        apiVersion: 'agents.re-cinq.com/v1alpha1',
        kind: 'Agent',
        metadata: {
          generateName: 'nightly-abcde-rerun-',
          labels: { team: 'infra' },
          annotations: {
            'agents.re-cinq.com/rerun-of': 'nightly-abcde',
            'agents.re-cinq.com/rerun-of-uid': 'uid-nightly-abcde',
          },
        },
        spec: { stationRef: 'hello', parameters: { topic: 'tests' }, model: 'claude-sonnet-5' },
      },
    ]);
  });

  it('needs the CSRF token, get on the Agent and create on agents; a missing Agent is 404; a refusal is shown', async () => {
    const noToken = setup({ agents: [source] });
    assert.equal((await noToken.post('/agents/team/nightly-abcde/rerun', {})).status, 403);
    assert.equal(noToken.w.created?.length, 0);

    const noCreate = setup({ agents: [source], deny: ['create agents team'] });
    const refused = await noCreate.post('/agents/team/nightly-abcde/rerun', { _csrf: noCreate.session.csrf });
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /alice may not create Agents in namespace team/);
    assert.equal(noCreate.w.created?.length, 0);

    const noGet = setup({ agents: [source], deny: ['get agents team/nightly-abcde'] });
    const unread = await noGet.post('/agents/team/nightly-abcde/rerun', { _csrf: noGet.session.csrf });
    assert.equal(unread.status, 403);
    assert.equal(noGet.w.created?.length, 0);

    const missing = setup({ agents: [] });
    assert.equal(
      (await missing.post('/agents/team/nope/rerun', { _csrf: missing.session.csrf })).status,
      404,
    );

    const webhook = setup({
      agents: [source],
      createError: { error: 'admission webhook said no', status: 422 },
    });
    const no = await webhook.post('/agents/team/nightly-abcde/rerun', { _csrf: webhook.session.csrf });
    assert.equal(no.status, 422);
    assert.match(await no.text(), /running nightly-abcde again failed: admission webhook said no/);
  });
});

describe('console: talking to a realtime run', () => {
  it('shows the prompt box for a Running realtime run', async () => {
    const live = agentOf('live', { phase: 'Running', jobName: 'agent-job-live' });
    const { app, cookie } = setup({ agents: [live] });
    // The realtime label is on the run's pod.
    const text = await (
      await app.request(`${ORIGIN}/agents/team/live`, { headers: { cookie, accept: 'text/html' } })
    ).text();
    assert.doesNotMatch(text, /prompt-form/, 'no pod with the realtime label: no prompt box');
  });

  it('sends the prompt as the signed-in person and renders the NDJSON answer as text', async () => {
    const answer = `${JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: 'pong' }] } })}\n`;
    const { app, cookie, session, w } = setup({
      promptUpstream: new Response(answer, {
        status: 200,
        headers: { 'content-type': 'application/x-ndjson' },
      }),
    });
    const res = await app.request(`${ORIGIN}/agents/team/live/prompt`, {
      method: 'POST',
      headers: { cookie, origin: ORIGIN, 'content-type': 'application/json', 'x-csrf-token': session.csrf },
      body: JSON.stringify({ prompt: 'ping' }),
    });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /pong/);
    assert.deepEqual(w.prompts, [
      { caller: ALICE, namespace: 'team', name: 'live', body: JSON.stringify({ prompt: 'ping' }) },
    ]);
  });

  it('passes the prompt API’s refusal through, and needs the CSRF header', async () => {
    const refusal = Response.json({ message: 'Agent live is not a Running realtime run' }, { status: 409 });
    const { app, cookie, session, w } = setup({ promptUpstream: refusal });
    const send = (headers: Record<string, string>) =>
      app.request(`${ORIGIN}/agents/team/live/prompt`, {
        method: 'POST',
        headers: { cookie, origin: ORIGIN, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ prompt: 'ping' }),
      });
    assert.equal((await send({})).status, 403);
    assert.equal(w.prompts?.length, 0);
    const res = await send({ 'x-csrf-token': session.csrf });
    assert.equal(res.status, 409);
    assert.match(await res.text(), /not a Running realtime run/);
  });
});

describe('console: review fixes', () => {
  const jwt = (claims: Record<string, unknown>): string =>
    `eyJhbGciOiJSUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;

  it('links only a trace id of hex digits: the Agent status cannot steer the trace link', async () => {
    const hostile = ['evil.test/#', 'x/../../admin?orgId=2', '$`', '" onmouseover="alert(1)'];
    for (const traceUrl of ['https://traces.test/trace/{traceID}', 'https://{traceID}.traces.test/']) {
      for (const traceID of hostile) {
        const a = agentOf('t', { phase: 'Succeeded', status: { traceID } });
        const text = await (await setup({ agents: [a], traceUrl }).get('/agents/team/t')).text();
        assert.doesNotMatch(text, /href="https:\/\/[^"]*traces\.test/, `${traceID} is not linked`);
        assert.doesNotMatch(text, /href="https:\/\/evil/);
        assert.match(text, /<code>[^<]+<\/code>/, 'the id is shown as text');
      }
      const good = agentOf('t', {
        phase: 'Succeeded',
        status: { traceID: 'ABCDEF0123456789abcdef0123456789' },
      });
      const text = await (await setup({ agents: [good], traceUrl }).get('/agents/team/t')).text();
      assert.match(text, /href="https:\/\/(traces\.test\/trace\/)?ABCDEF0123456789abcdef0123456789/);
    }
  });

  it('a session lasts no longer than the token it was started with', async () => {
    const { app, sessions } = setup();
    const form = await app.request(`${ORIGIN}/login`);
    const loginCsrf = cookieValue(form, LOGIN_COOKIE) ?? '';
    const exp = Math.floor((T0 + 60_000) / 1000) + 600;
    const res = await app.request(`${ORIGIN}/login`, {
      method: 'POST',
      headers: {
        cookie: `${LOGIN_COOKIE}=${loginCsrf}`,
        origin: ORIGIN,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ _csrf: loginCsrf, token: jwt({ sub: 'alice', exp }) }).toString(),
    });
    assert.equal(res.status, 303);
    assert.equal(sessions.get(cookieValue(res, SESSION_COOKIE))?.expiresAt, exp * 1000);
  });

  it('caps the output streams one person holds open, and frees a place when a stream is closed', async () => {
    let open = 0;
    const live = agentOf('live', { phase: 'Running', jobName: 'agent-job-live' });
    const { get } = setup({
      agents: [live],
      streamOutput: (o) =>
        new Promise((resolve) => {
          open++;
          o.signal.addEventListener('abort', () => {
            open--;
            resolve('aborted');
          });
        }),
    });
    const streams: Response[] = [];
    for (let i = 0; i < MAX_STREAMS_PER_USER; i++) {
      const res = await get('/agents/team/live/stream');
      assert.equal(res.status, 200);
      streams.push(res);
    }
    assert.equal(open, MAX_STREAMS_PER_USER);
    const refused = await get('/agents/team/live/stream');
    assert.equal(refused.status, 429);
    assert.equal(open, MAX_STREAMS_PER_USER, 'no pod watch for the refused one');
    await streams[0]?.body?.cancel();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(open, MAX_STREAMS_PER_USER - 1, 'closing the tab stops its watch');
    const again = await get('/agents/team/live/stream');
    assert.equal(again.status, 200);
    for (const s of [...streams.slice(1), again]) await s.body?.cancel();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(open, 0);
  });

  it('a stream asked for by a browser that has already gone starts no watch that would outlive it', async () => {
    let aborted: boolean | undefined;
    const live = agentOf('live', { phase: 'Running', jobName: 'agent-job-live' });
    const { app, cookie } = setup({
      agents: [live],
      streamOutput: async (o) => {
        aborted = o.signal.aborted;
        return 'aborted';
      },
    });
    const gone = new AbortController();
    gone.abort();
    const res = await app.request(
      new Request(`${ORIGIN}/agents/team/live/stream`, { headers: { cookie }, signal: gone.signal }),
    );
    await res.body?.cancel();
    assert.equal(aborted, true);
  });

  it('a run form posted with the CSRF header still carries its fields; a body that is not a form is refused', async () => {
    const { post, session, w } = setup();
    const res = await post(
      '/stations/team/hello/run',
      { prompt: 'the flaky test', parameters: 'repo=re-cinq/demo' },
      { 'x-csrf-token': session.csrf },
    );
    assert.equal(res.status, 303);
    assert.deepEqual(w.created?.[0]?.spec, {
      stationRef: 'hello',
      parameters: { repo: 're-cinq/demo', prompt: 'the flaky test' },
    });
    const json = await post(
      '/stations/team/hello/run',
      {},
      {
        'x-csrf-token': session.csrf,
        'content-type': 'application/json',
      },
    );
    assert.equal(json.status, 415);
    assert.equal(w.created?.length, 1, 'no run without its form');
  });

  it('a prompt sent as a form is refused plainly (its body was read for the CSRF token)', async () => {
    const { post, session, w } = setup();
    const res = await post('/agents/team/live/prompt', { _csrf: session.csrf, prompt: 'ping' });
    assert.equal(res.status, 415);
    assert.equal(w.prompts?.length, 0);
  });

  it('a status.jobName that is not an object name is never used to read Jobs, pods or logs', async () => {
    let streamed = 0;
    const odd = agentOf('odd', { phase: 'Succeeded', jobName: '.', status: { output: 'recorded' } });
    const { get, w } = setup({
      agents: [odd],
      streamOutput: async () => {
        streamed++;
        return 'ended';
      },
    });
    assert.equal((await get('/agents/team/odd')).status, 200);
    assert.equal(w.extras?.[0]?.status.jobName, undefined);
    const body = await (await get('/agents/team/odd/stream')).text();
    assert.equal(streamed, 0);
    assert.match(body, /recorded/);
  });

  it('the one-time link is printed for the console’s own address', () => {
    assert.equal(consoleOrigin('127.0.0.1', 8082, false), 'http://127.0.0.1:8082');
    assert.equal(consoleOrigin('::1', 8082, false), 'http://[::1]:8082');
    assert.equal(consoleOrigin('0.0.0.0', 9000, true), 'https://127.0.0.1:9000');
    assert.equal(consoleOrigin('::', 9000, true), 'https://127.0.0.1:9000');
    assert.equal(consoleOrigin('localhost', 8082, false), 'http://localhost:8082');
  });
});
