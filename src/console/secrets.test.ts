// The console never renders a Secret (pages.ts promises it): driven with its real ports (src/console/ports.ts
// and the realtime prompt ports) over a scripted API server that holds Secrets and serves them to anyone who asks.
// The Agents, their conditions, Events, Job, pods, log and the realtime run's prompt path all point at those Secrets
// (secretKeyRef, Secret names in messages, the run's prompt token in flight to the pod); no page, fragment, output
// stream or prompt answer may contain a Secret's value, and the console makes no request for a Secret at all.
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { describe, it } from 'node:test';
import { parseAgent } from '../api/index.ts';
import {
  AGENTS_PATH,
  DEFINITIONS_PATH,
  EVENTS_PATH,
  FakeCluster,
  JOBS_PATH,
  PODS_PATH,
  STATIONS_PATH,
} from '../cli/fake-cluster.ts';
import { iso, NS, rawAgent, rawDefinition, rawStation, T0 } from '../cli/test-fixtures.ts';
import { consolePorts } from '../console/ports.ts';
import type { AccessReviews } from '../effects/access-review.ts';
import { promptPorts } from '../effects/realtime/prompt-ports.ts';
import { promptTokens, REALTIME_KEY_FIELD, REALTIME_KEY_SECRET } from '../effects/realtime/tokens.ts';
import { ManualClock } from '../runtime/clock.ts';
import type { CallerIdentity } from '../server/prompt.ts';
import { createLogger } from '../shared/log.ts';
import { createConsoleApp } from './app.ts';
import { SESSION_COOKIE } from './kit.ts';
import { SessionStore } from './session.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

const ALICE: CallerIdentity = { username: 'alice', groups: ['devs', 'system:authenticated'] };
const ORIGIN = 'http://console.test';
const CONTROLLER_NS = 'ai-agents';
const SECRETS_PATH = `/api/v1/namespaces/${NS}/secrets`;
const CONTROLLER_SECRETS_PATH = `/api/v1/namespaces/${CONTROLLER_NS}/secrets`;

const b64 = (s: string | Uint8Array): string => Buffer.from(s).toString('base64');

/** The vendor API key, only in the Secret `vendor-api-key` (the run pods get it through secretKeyRef). */
const API_KEY = 'sk-ant-api03-NEVER-RENDER-7f3c9a1e5b2d4c6e';
/** The controller's realtime key, only in its Secret in the controller namespace. */
const HMAC_KEY = Buffer.from('hmac-key-NEVER-RENDER-0123456789ab');
/** The realtime run's prompt token, only in the Secret `agent-prompt-live` (and sent to the run pod). */
const PROMPT_TOKEN = promptTokens(HMAC_KEY).tokenFor('uid-live');
/** A literal env value of the run pod: the pod view shows no env, so not this either. */
const LITERAL_ENV = 'literal-env-NEVER-RENDER-93b1d7';

/** Everything no response may contain: each value as it is and as the Secret stores it (base64). */
const NEVER: Readonly<Record<string, string>> = {
  'the API key': API_KEY,
  'the API key (base64)': b64(API_KEY),
  'the prompt token': PROMPT_TOKEN,
  'the prompt token (base64)': b64(PROMPT_TOKEN),
  'the realtime key (base64)': b64(HMAC_KEY),
  'a literal env value': LITERAL_ENV,
};

const secret = (namespace: string, name: string, data: Record<string, string>): Obj => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: {
    name,
    namespace,
    uid: `uid-secret-${name}`,
    resourceVersion: '1',
    creationTimestamp: iso(-900),
  },
  type: 'Opaque',
  data,
});

/** The agent container's env as the controller writes it: Secrets by reference, plus one literal. */
const AGENT_ENV = [
  {
    name: 'ANTHROPIC_API_KEY',
    valueFrom: { secretKeyRef: { name: 'vendor-api-key', key: 'ANTHROPIC_API_KEY' } },
  },
  { name: 'AGENT_PROMPT_TOKEN', valueFrom: { secretKeyRef: { name: 'agent-prompt-live', key: 'token' } } },
  { name: 'LEGACY_WEBHOOK_TOKEN', value: LITERAL_ENV },
];

const job = (name: string, active: boolean): Obj => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name, namespace: NS, uid: `uid-${name}`, resourceVersion: '1', creationTimestamp: iso(2) },
  spec: { template: { spec: { containers: [{ name: 'agent', image: 'x', env: AGENT_ENV }] } } },
  status: active ? { active: 1 } : { failed: 1, conditions: [{ type: 'Failed', status: 'True' }] },
});

const pod = (name: string, jobName: string, running: boolean): Obj => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name,
    namespace: NS,
    uid: `uid-${name}`,
    resourceVersion: '1',
    creationTimestamp: iso(3),
    labels: { 'job-name': jobName, ...(running ? { 'agents.re-cinq.com/execution': 'realtime' } : {}) },
  },
  spec: { nodeName: 'node-1', containers: [{ name: 'agent', image: 'x', env: AGENT_ENV }] },
  status: {
    phase: running ? 'Running' : 'Failed',
    podIP: '10.0.0.7',
    containerStatuses: [
      {
        name: 'agent',
        state: running
          ? { running: { startedAt: iso(4) } }
          : { terminated: { exitCode: 1, reason: 'Error', message: 'invalid x-api-key' } },
      },
    ],
  },
});

const event = (name: string, agent: string, reason: string, message: string): Obj => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name, namespace: NS, uid: `uid-${name}`, resourceVersion: '1', creationTimestamp: iso(2) },
  involvedObject: { kind: 'Agent', name: agent, uid: `uid-${agent}` },
  type: 'Warning',
  reason,
  message,
  source: { component: 'agent-controller' },
  lastTimestamp: iso(2),
});

/** A cluster whose Agents point at Secrets it holds (and would hand to anyone who asked for them). */
function world() {
  const c = new FakeCluster();
  /** The objects the cluster holds in a collection. */
  const cached = (path: string) =>
    [...c.objects.entries()].filter(([k]) => k.startsWith(`${path}/`)).map(([, o]) => o);
  c.put(SECRETS_PATH, secret(NS, 'vendor-api-key', { ANTHROPIC_API_KEY: b64(API_KEY) }));
  c.put(SECRETS_PATH, secret(NS, 'agent-prompt-live', { token: b64(PROMPT_TOKEN) }));
  c.put(
    CONTROLLER_SECRETS_PATH,
    secret(CONTROLLER_NS, REALTIME_KEY_SECRET, { [REALTIME_KEY_FIELD]: b64(HMAC_KEY) }),
  );
  // Lists of Secrets are served too: a console that listed them would get their data.
  c.override = (req) =>
    req.method === 'GET' && (req.path === SECRETS_PATH || req.path === '/api/v1/secrets')
      ? {
          status: 200,
          body: {
            metadata: { resourceVersion: '1' },
            items:
              req.path === SECRETS_PATH
                ? cached(SECRETS_PATH)
                : [...cached(SECRETS_PATH), ...cached(CONTROLLER_SECRETS_PATH)],
          },
        }
      : undefined;

  c.put(
    STATIONS_PATH,
    rawStation('hello', {
      template: { spec: { containers: [{ name: 'agent', image: 'x', env: AGENT_ENV }] } },
    }) as Obj,
  );
  c.put(DEFINITIONS_PATH, rawDefinition('hello', { prompt: 'Fix {prompt} in {repo}' }) as Obj);
  c.put(
    AGENTS_PATH,
    rawAgent('live', {
      phase: 'Running',
      jobName: 'agent-job-live',
      ready: {
        status: 'True',
        reason: 'Running',
        message: 'realtime session; prompt token in Secret agent-prompt-live (key token)',
      },
      status: { startedAt: iso(4) },
    }) as Obj,
  );
  c.put(
    AGENTS_PATH,
    rawAgent('broken', {
      phase: 'Failed',
      jobName: 'agent-job-broken',
      exitCode: 1,
      failureReason: 'the agent exited 1: check ANTHROPIC_API_KEY in Secret vendor-api-key',
      ready: {
        reason: 'Failed',
        message: 'env ANTHROPIC_API_KEY from Secret team/vendor-api-key was rejected',
      },
      status: { startedAt: iso(4), completedAt: iso(20) },
    }) as Obj,
  );
  c.put(JOBS_PATH, job('agent-job-live', true));
  c.put(JOBS_PATH, job('agent-job-broken', false));
  c.put(PODS_PATH, pod('agent-job-live-1', 'agent-job-live', true));
  c.put(PODS_PATH, pod('agent-job-broken-1', 'agent-job-broken', false));
  c.put(
    EVENTS_PATH,
    event('e1', 'broken', 'Failed', 'agent exited 1 (env ANTHROPIC_API_KEY from Secret vendor-api-key)'),
  );
  c.put(EVENTS_PATH, event('e2', 'live', 'RealtimeToken', 'created Secret agent-prompt-live (key token)'));
  const logLine = JSON.stringify({
    type: 'assistant',
    message: {
      content: [{ type: 'text', text: 'the API rejected $ANTHROPIC_API_KEY: 401 invalid x-api-key' }],
    },
  });
  c.logs.set('agent-job-broken-1', { chunks: [`${iso(5)} ${logLine}\n`, `${iso(6)} exiting\n`] });

  /** What the run pod's prompt server received. */
  const forwarded: { url: string; authorization: string | null }[] = [];
  const podFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    forwarded.push({ url: String(input), authorization: new Headers(init?.headers).get('authorization') });
    const answer = { type: 'assistant', message: { content: [{ type: 'text', text: 'pong' }] } };
    return new Response(`${JSON.stringify(answer)}\n`, {
      status: 200,
      headers: { 'content-type': 'application/x-ndjson' },
    });
  }) as typeof fetch;

  const access: AccessReviews = {
    authenticateToken: async () => ALICE,
    authorize: async () => true,
  };
  const clock = new ManualClock(T0 + 60_000);
  const sessions = new SessionStore(() => clock.now());
  const app = createConsoleApp(
    consolePorts({
      transport: c.transport,
      access,
      sessions,
      // The controller watches every namespace: the lists come from its caches, as in a cluster.
      watched: undefined,
      cachedAgents: () =>
        cached(AGENTS_PATH).flatMap((o) => {
          const a = parseAgent(o);
          return a.ok ? [a.value] : [];
        }),
      cachedStations: () => cached(STATIONS_PATH),
      prompt: promptPorts({
        transport: c.transport,
        tokens: () => promptTokens(HMAC_KEY),
        logger: createLogger('error', () => {}),
        now: () => clock.now(),
        fetch: podFetch,
        access,
      }),
      defaultNamespace: NS,
      secure: false,
      traceUrl: undefined,
      clock,
      random: () => 0,
    }),
  );
  const { id, session } = sessions.create(ALICE);
  const cookie = `${SESSION_COOKIE}=${id}`;
  const request = (path: string, init: RequestInit = {}) =>
    app.request(`${ORIGIN}${path}`, {
      ...init,
      headers: { cookie, accept: 'text/html', origin: ORIGIN, ...(init.headers as Record<string, string>) },
    });
  return { c, request, csrf: session.csrf, forwarded };
}

/** The whole response as the browser gets it: status line, headers and body. */
async function whole(res: Response): Promise<string> {
  return `${res.status}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${await res.text()}`;
}

function assertNoSecret(where: string, text: string): void {
  for (const [what, value] of Object.entries(NEVER))
    assert.ok(!text.includes(value), `${where} shows ${what} (${value})`);
}

describe('console: Secrets are never rendered', () => {
  it('no list, detail, fragment, output stream, run form or prompt answer holds a Secret value, and no Secret is read', async () => {
    const { c, request, csrf, forwarded } = world();
    const seen: Record<string, string> = {};
    const visit = async (where: string, path: string, init?: RequestInit, status = 200) => {
      const res = await request(path, init);
      const text = await whole(res);
      assert.equal(res.status, status, `${where}: ${text.slice(0, 400)}`);
      assertNoSecret(where, text);
      seen[where] = text;
      return text;
    };

    await visit('the Agent list', '/agents');
    await visit('the Agent list fragment', '/agents?fragment=1');
    await visit('the detail page of the realtime run', '/agents/team/live');
    await visit('the status fragment', '/agents/team/live?fragment=status');
    await visit('the detail page of the failed run', '/agents/team/broken');
    await visit('the output stream', '/agents/team/broken/stream');
    await visit('the run form', '/stations/team/hello/run');
    await visit(
      'the run form shown again with an error',
      '/stations/team/hello/run',
      {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf, prompt: 'x', parameters: 'no equals sign' }).toString(),
      },
      422,
    );
    await visit('the prompt answer', '/agents/team/live/prompt', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify({ prompt: 'ping' }),
    });

    // The pages did render what points at the Secrets, so the absence above means something.
    assert.match(seen['the Agent list'] ?? '', /data-agent="live"/);
    assert.match(seen['the Agent list'] ?? '', /Secret vendor-api-key/, 'the failure reason is listed');
    assert.match(
      seen['the detail page of the realtime run'] ?? '',
      /prompt-form/,
      'the realtime run is seen',
    );
    assert.match(
      seen['the detail page of the realtime run'] ?? '',
      /agent-job-live-1 \(Running; agent running/,
    );
    assert.match(seen['the detail page of the realtime run'] ?? '', /created Secret agent-prompt-live/);
    assert.match(
      seen['the detail page of the failed run'] ?? '',
      /from Secret team\/vendor-api-key was rejected/,
    );
    assert.match(seen['the detail page of the failed run'] ?? '', /agent exited 1 \(env ANTHROPIC_API_KEY/);
    assert.match(seen['the output stream'] ?? '', /401 invalid x-api-key/);
    assert.match(seen['the run form'] ?? '', /Fix \{prompt\} in \{repo\}/);
    assert.match(seen['the prompt answer'] ?? '', /pong/);
    // The prompt token was in flight through the console (to the run pod), yet the answer does not carry it.
    assert.deepEqual(forwarded, [
      { url: 'http://10.0.0.7:8090/prompt', authorization: `Bearer ${PROMPT_TOKEN}` },
    ]);

    const secretReads = c.transport.requests.filter((r) => /\/secrets(\/|$)/.test(r.path));
    assert.deepEqual(
      secretReads.map((r) => `${r.method} ${r.path}`),
      [],
      'the console reads no Secret',
    );
    assert.ok(c.transport.requests.length > 0, 'the console did read the cluster');
  });
});
