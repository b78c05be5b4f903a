import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeTransport } from '../../kube/fake-transport.ts';
import type { PromptTarget } from '../../server/prompt.ts';
import { createLogger } from '../../shared/log.ts';
import { memorySessionState } from '../sessions/port.ts';
import { sessionPorts } from './session-ports.ts';

const TARGET: PromptTarget = {
  namespace: 'team',
  name: 'live',
  uid: 'uid-live',
  phase: 'Running',
  jobName: 'agent-job-live',
  sessionId: 's-1',
  turns: 1,
};
const ARCHIVE = new Uint8Array([0x1f, 0x8b, 8, 0, 1, 2, 3]);

interface PodCall {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body?: Uint8Array | undefined;
}

function setup(pod: (call: PodCall) => Response | 'refused') {
  const transport = createFakeTransport({
    request: async (req) => (req.method === 'PATCH' ? { status: 200, body: {} } : { status: 404, body: {} }),
  });
  const store = memorySessionState();
  const podCalls: PodCall[] = [];
  const saves: string[] = [];
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const call: PodCall = {
      method: init?.method ?? 'GET',
      url: String(input),
      headers,
      body: init?.body instanceof Uint8Array ? init.body : undefined,
    };
    podCalls.push(call);
    const answer = pod(call);
    if (answer === 'refused') throw new TypeError('fetch failed');
    return answer;
  }) as typeof fetch;
  const ports = sessionPorts(
    {
      transport,
      tokens: () => ({ tokenFor: (uid: string) => `token-of-${uid}` }),
      logger: createLogger('error', () => {}),
      now: () => Date.parse('2026-12-07T12:00:00.000Z'),
      observeSave: (r) => void saves.push(r),
    },
    store,
    fakeFetch,
  );
  const patches = () =>
    transport.requests
      .filter((r) => r.method === 'PATCH')
      .map(
        (r) => (r.body as { metadata: { uid: string; annotations: Record<string, string | null> } }).metadata,
      );
  return { ports, store, podCalls, patches, saves };
}

describe('session ports (issue 29)', () => {
  it('a turn started: in flight turn N+1 and the last prompt, with the uid', async () => {
    const t = setup(() => new Response(null, { status: 500 }));
    await t.ports.turnStarted(TARGET);
    assert.deepEqual(t.patches(), [
      {
        uid: 'uid-live',
        annotations: {
          'agents.re-cinq.com/session-turn-in-flight': '2',
          'agents.re-cinq.com/session-last-prompt': '2026-12-07T12:00:00.000Z',
        },
      },
    ]);
  });

  it('a turn ended: the state read from the pod with the run token, saved as its turn, then reported', async () => {
    const t = setup(
      () =>
        new Response(ARCHIVE, {
          status: 200,
          headers: { 'x-agent-session-id': 's-1', 'x-agent-turns': '2', 'x-agent-vendor': 'claude' },
        }),
    );
    await t.ports.turnEnded(TARGET, 'http://10.0.0.9:8090');
    assert.deepEqual(
      t.podCalls.map((c) => [c.method, c.url, c.headers.authorization]),
      [['GET', 'http://10.0.0.9:8090/session/state', 'Bearer token-of-uid-live']],
    );
    const saved = (await t.store.loadLatest('team', 'uid-live')) as { ok: true; value: unknown };
    assert.deepEqual(saved.value, { turn: 2, archive: ARCHIVE, sessionId: 's-1', vendor: 'claude' });
    assert.deepEqual(t.patches().at(-1)?.annotations, {
      'agents.re-cinq.com/session-turns': '2',
      'agents.re-cinq.com/session-saved-turn': '2',
      'agents.re-cinq.com/session-last-prompt': '2026-12-07T12:00:00.000Z',
      'agents.re-cinq.com/session-turn-in-flight': null,
    });
    assert.deepEqual(t.saves, ['ok']);
  });

  it('the pod could not give its state: the turn counted, not saved (the session is not suspended on it)', async () => {
    const t = setup(() => 'refused');
    await t.ports.turnEnded(TARGET, 'http://10.0.0.9:8090');
    assert.equal(t.store.turns.size, 0);
    assert.deepEqual(t.patches().at(-1)?.annotations, {
      'agents.re-cinq.com/session-turns': '2',
      'agents.re-cinq.com/session-last-prompt': '2026-12-07T12:00:00.000Z',
      'agents.re-cinq.com/session-turn-in-flight': null,
    });
    assert.deepEqual(t.saves, ['error']);
  });

  it('409 (the next turn began): nothing written, that turn saves both', async () => {
    const t = setup(() => new Response('{"message":"a turn is in flight"}', { status: 409 }));
    await t.ports.turnEnded(TARGET, 'http://10.0.0.9:8090');
    assert.deepEqual(t.patches(), []);
  });

  it('restore: the last saved turn PUT to the pod with its session id and turn; no pod → notListening', async () => {
    const t = setup((c) => (c.method === 'PUT' ? new Response(null, { status: 204 }) : 'refused'));
    await t.store.saveTurn('team', 'uid-live', 1, new Uint8Array([1]), {
      sessionId: 's-1',
      vendor: 'claude',
    });
    await t.store.saveTurn('team', 'uid-live', 2, ARCHIVE, { sessionId: 's-1', vendor: 'claude' });
    assert.equal(await t.ports.restore(TARGET, 'http://10.0.0.9:8090'), true);
    const put = t.podCalls[0];
    assert.equal(put?.method, 'PUT');
    assert.equal(put?.headers['x-agent-turns'], '2');
    assert.equal(put?.headers['x-agent-session-id'], 's-1');
    assert.equal(put?.headers['content-type'], 'application/gzip');
    assert.deepEqual(put?.body, ARCHIVE);
    const gone = setup(() => 'refused');
    await gone.store.saveTurn('team', 'uid-live', 1, ARCHIVE, { sessionId: 's-1', vendor: 'claude' });
    assert.equal(await gone.ports.restore(TARGET, 'http://10.0.0.9:8090'), 'notListening');
  });

  it('restore with nothing saved is an error, nothing sent', async () => {
    const t = setup(() => new Response(null, { status: 204 }));
    assert.deepEqual(await t.ports.restore(TARGET, 'http://10.0.0.9:8090'), {
      error: 'the session has no saved turn',
    });
    assert.equal(t.podCalls.length, 0);
  });

  it('a wake is asked with the time; a lost turn is no longer in flight', async () => {
    const t = setup(() => 'refused');
    assert.equal(await t.ports.requestWake(TARGET), true);
    await t.ports.turnLost(TARGET);
    assert.deepEqual(
      t.patches().map((p) => p.annotations),
      [
        { 'agents.re-cinq.com/wake-requested': '2026-12-07T12:00:00.000Z' },
        { 'agents.re-cinq.com/session-turn-in-flight': null },
      ],
    );
  });
});
