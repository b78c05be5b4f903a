import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type CallerIdentity,
  createPromptApi,
  MAX_PROMPT_REQUEST_BYTES,
  type PodEndpoint,
  type PromptApiDeps,
  type PromptTarget,
  peerOf,
  type Upstream,
} from './prompt.ts';

const PATH = '/apis/agents.re-cinq.com/v1alpha1/namespaces/team/agents/live';
const ALICE: CallerIdentity = { username: 'alice', groups: ['devs'] };
const RUNNING: PromptTarget = {
  namespace: 'team',
  name: 'live',
  uid: 'uid-live',
  phase: 'Running',
  jobName: 'agent-job-live',
  sessionId: undefined,
};

function streamOf(lines: readonly string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const l of lines) c.enqueue(enc.encode(`${l}\n`));
      c.close();
    },
  });
}

interface World {
  caller?: CallerIdentity | undefined;
  allowed?: boolean;
  target?: PromptTarget | undefined;
  endpoint?: PodEndpoint;
  upstream?: Upstream | 'refused';
  /** What a fresh read (from the API server, not the cache) says. */
  fresh?: PromptTarget;
}

function app(w: World) {
  const forwarded: { url: string; path: string; uid: string; body: string }[] = [];
  const sessions: string[] = [];
  const reviews: { subresource: string; name: string }[] = [];
  const samples: { action: string; result: string }[] = [];
  const deps: PromptApiDeps = {
    now: () => 0,
    authenticate: async (_req, _peer) => ('caller' in w ? w.caller : ALICE),
    authorize: async (_c, t) => {
      reviews.push({ subresource: t.subresource, name: t.name });
      return w.allowed ?? true;
    },
    agent: async (_ns, _name, fresh) =>
      fresh === true && w.fresh !== undefined ? w.fresh : 'target' in w ? w.target : RUNNING,
    endpoint: async () => w.endpoint ?? { kind: 'ready', url: 'http://127.0.0.9:8090' },
    forward: async (url, path, uid, body) => {
      forwarded.push({ url, path, uid, body });
      if (w.upstream === 'refused') throw new Error('connect ECONNREFUSED');
      return (
        w.upstream ?? {
          status: 200,
          body: streamOf([
            '{"type":"system","subtype":"init","session_id":"s-1"}',
            '{"type":"result","result":"ok"}',
          ]),
          text: async () => '',
        }
      );
    },
    sessionSeen: (_t, id) => sessions.push(id),
    sessionIdOf: (line) => (JSON.parse(line) as { session_id?: string }).session_id,
    observe: (s) => samples.push({ action: s.action, result: s.result }),
  };
  return { api: createPromptApi(deps), forwarded, sessions, reviews, samples };
}

const post = (body: unknown = { prompt: 'hi' }, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: 'Bearer t', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

async function status(res: Response) {
  const body = (await res.json()) as Record<string, unknown>;
  assert.equal(body.kind, 'Status');
  assert.equal(body.apiVersion, 'v1');
  assert.equal(body.status, 'Failure');
  assert.equal(body.code, res.status);
  return body;
}

describe('prompt API', () => {
  it('streams the turn back as NDJSON, forwards the prompt with the run uid, records the session id once', async () => {
    const t = app({});
    const res = await t.api.request(`${PATH}/prompt`, post({ prompt: 'what now' }));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    const lines = (await res.text()).trim().split('\n');
    assert.equal(lines.length, 2);
    assert.deepEqual(t.forwarded, [
      { url: 'http://127.0.0.9:8090', path: '/prompt', uid: 'uid-live', body: '{"prompt":"what now"}' },
    ]);
    assert.deepEqual(t.sessions, ['s-1']);
    assert.deepEqual(t.reviews, [{ subresource: 'prompt', name: 'live' }]);
    assert.deepEqual(t.samples, [{ action: 'prompt', result: 'ok' }]);
  });

  it('close forwards to /close after a review of agents/close', async () => {
    const t = app({ upstream: { status: 200, body: null, text: async () => '{"closed":true}' } });
    const res = await t.api.request(`${PATH}/close`, post({}));
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { closed: true });
    assert.equal(t.forwarded[0]?.path, '/close');
    assert.deepEqual(t.reviews, [{ subresource: 'close', name: 'live' }]);
  });

  const refusals: [string, World, RequestInit, number, RegExp][] = [
    ['no credentials', { caller: undefined }, post(), 401, /Unauthorized/],
    ['RBAC refuses', { allowed: false }, post(), 403, /User "alice" cannot create resource "agents\/prompt"/],
    ['an unknown Agent', { target: undefined }, post(), 404, /"live" not found/],
    [
      'a Pending Agent',
      { target: { ...RUNNING, phase: 'Pending', jobName: undefined } },
      post(),
      409,
      /not a Running realtime run/,
    ],
    [
      'a finished Agent',
      { target: { ...RUNNING, phase: 'Succeeded' } },
      post(),
      409,
      /not a Running realtime run/,
    ],
    ['a job run', { endpoint: { kind: 'notRealtime' } }, post(), 409, /not a realtime run/],
    [
      'a pod not running yet',
      { endpoint: { kind: 'notYet', detail: 'pod p is Pending' } },
      post(),
      503,
      /not listening yet: pod p is Pending/,
    ],
    ['a pod that refuses the connection', { upstream: 'refused' }, post(), 503, /not listening yet/],
    [
      'a prompt already in flight',
      {
        upstream: {
          status: 409,
          body: null,
          text: async () => '{"message":"a prompt is already in flight"}',
        },
      },
      post(),
      409,
      /already in flight/,
    ],
    ['a body that is not JSON', {}, post('not json'), 400, /must be JSON/],
    ['an empty prompt', {}, post({ prompt: '' }), 400, /prompt must not be empty/],
    ['an oversized body', {}, post({ prompt: 'x'.repeat(MAX_PROMPT_REQUEST_BYTES) }), 413, /larger than/],
  ];
  for (const [name, world, init, code, message] of refusals) {
    it(`${name} → ${code} with a Status`, async () => {
      const t = app(world);
      const res = await t.api.request(`${PATH}/prompt`, init);
      assert.equal(res.status, code);
      const body = await status(res);
      assert.match(String(body.message), message);
      if (code === 401 || code === 403 || code === 400 || code === 413)
        assert.equal(t.forwarded.length, 0, 'nothing forwarded');
    });
  }

  it('a refused connection to a run that has just ended (the cache was behind) is a 409, not a 503', async () => {
    const t = app({ upstream: 'refused', fresh: { ...RUNNING, phase: 'Succeeded' } });
    const res = await t.api.request(`${PATH}/prompt`, post());
    assert.equal(res.status, 409);
    assert.match(String((await status(res)).message), /phase Succeeded/);
  });

  it('an unknown path is a 404 Status', async () => {
    const res = await app({}).api.request('/apis/other', post());
    assert.equal(res.status, 404);
    await status(res);
  });
});

describe('peerOf (the client certificate of a TLS connection)', () => {
  const env = (authorized: boolean, subject: unknown) => ({
    incoming: { socket: { authorized, getPeerCertificate: () => ({ subject }) } },
  });
  it('reads CN and O (one or many) and whether the client CA verified it', () => {
    assert.deepEqual(peerOf(env(true, { CN: 'alice', O: 'devs' })), {
      authorized: true,
      commonName: 'alice',
      organizations: ['devs'],
    });
    assert.deepEqual(peerOf(env(false, { CN: 'mallory', O: ['a', 'b'] }))?.organizations, ['a', 'b']);
    assert.equal(peerOf(env(false, { CN: 'mallory' }))?.authorized, false);
  });
  it('is undefined without TLS, without a certificate, or without an env', () => {
    assert.equal(peerOf(undefined), undefined);
    assert.equal(peerOf({ incoming: { socket: {} } }), undefined);
    assert.equal(peerOf({ incoming: { socket: { getPeerCertificate: () => ({}) } } }), undefined);
  });
});
