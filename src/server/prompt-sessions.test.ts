// The prompt API's part of durable sessions (issue 29): the wake of a Suspended session with the prompt held, the
// saved state handed to a restore pod, each turn reported and saved, a lost turn ended with an error line.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createPromptApi,
  POD_LOST_LINE,
  type PromptApiDeps,
  type PromptTarget,
  type SessionPorts,
  type Upstream,
  WAITING_FOR_STATE,
} from './prompt.ts';

const PATH = '/apis/agents.re-cinq.com/v1alpha1/namespaces/team/agents/live/prompt';
const BASE: PromptTarget = {
  namespace: 'team',
  name: 'live',
  uid: 'uid-live',
  phase: 'Running',
  jobName: 'agent-job-live',
  sessionId: 's-1',
  turns: 2,
};

const enc = new TextEncoder();
const answer = (): Upstream => ({
  status: 200,
  body: new ReadableStream({
    start(c) {
      c.enqueue(enc.encode('{"type":"result","result":"three"}\n'));
      c.close();
    },
  }),
  text: async () => '',
});

interface World {
  /** The Agent as each read returns it, in turn (the last one repeats). */
  reads: PromptTarget[];
  /** What the pod answers each forward, in turn (the last one repeats). */
  answers: (Upstream | 'refused')[];
  restore?: (true | 'notListening' | { error: string })[];
  wakeWaitMs?: number;
}

function app(w: World) {
  let clock = 0;
  const calls: string[] = [];
  const wakes: string[] = [];
  let read = 0;
  let forwarded = 0;
  let restored = 0;
  const sessions: SessionPorts = {
    turnStarted: async (t) => void calls.push(`started ${t.turns ?? 0}`),
    turnEnded: async (t, url) => void calls.push(`ended ${t.turns ?? 0} ${url}`),
    turnLost: async () => void calls.push('lost'),
    requestWake: async () => {
      calls.push('wake');
      return true;
    },
    restore: async (_t, url) => {
      calls.push(`restore ${url}`);
      const r = w.restore ?? [true];
      return r[Math.min(restored++, r.length - 1)] ?? true;
    },
    observeWake: (seconds, result) => void wakes.push(`${result} ${seconds}`),
  };
  const deps: PromptApiDeps = {
    now: () => clock,
    sleep: async (ms) => {
      clock += ms;
    },
    authenticate: async () => ({ username: 'alice', groups: [] }),
    authorize: async () => true,
    agent: async () => w.reads[Math.min(read++, w.reads.length - 1)],
    endpoint: async (t) => ({ kind: 'ready', url: `http://pod-of-${t.startedAt ?? 'first'}:8090` }),
    forward: async (url, path) => {
      calls.push(`forward ${path} ${url}`);
      const a = w.answers[Math.min(forwarded++, w.answers.length - 1)];
      if (a === 'refused' || a === undefined) throw new Error('connect ECONNREFUSED');
      return a;
    },
    sessionSeen: () => {},
    sessionIdOf: () => undefined,
    sessions,
    ...(w.wakeWaitMs !== undefined ? { wakeWaitMs: w.wakeWaitMs } : {}),
  };
  const post = () =>
    createPromptApi(deps).request(PATH, {
      method: 'POST',
      body: JSON.stringify({ prompt: 'three' }),
      headers: { 'content-type': 'application/json' },
    });
  return { post, calls, wakes };
}

describe('prompt API: a prompt to a Suspended session (issue 29 §2)', () => {
  it('asks for the wake, holds the prompt until the new pod has the saved state, then delivers it', async () => {
    const suspended = { ...BASE, phase: 'Suspended', startedAt: 'first' };
    const woken = { ...BASE, startedAt: 'second' };
    const w = app({ reads: [suspended, suspended, suspended, woken], answers: [answer()] });
    const res = await w.post();
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '{"type":"result","result":"three"}\n');
    assert.deepEqual(w.calls, [
      'wake',
      'restore http://pod-of-second:8090',
      'forward /prompt http://pod-of-second:8090',
      'started 2',
      'ended 2 http://pod-of-second:8090',
    ]);
    assert.deepEqual(w.wakes, ['ok 1.5']);
  });

  it('the pod not listening yet is asked again while the bound lasts', async () => {
    const suspended = { ...BASE, phase: 'Suspended' };
    const woken = { ...BASE, startedAt: 'second' };
    const w = app({
      reads: [suspended, woken],
      answers: [answer()],
      restore: ['notListening', 'notListening', true],
    });
    assert.equal((await w.post()).status, 200);
    assert.equal(w.calls.filter((c) => c.startsWith('restore')).length, 3);
  });

  it('past AGENT_SESSION_WAKE_WAIT_SECONDS: 503 with Retry-After, nothing delivered', async () => {
    const suspended = { ...BASE, phase: 'Suspended' };
    const w = app({ reads: [suspended], answers: [answer()], wakeWaitMs: 3000 });
    const res = await w.post();
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '2');
    const body = (await res.json()) as { message: string; reason: string };
    assert.equal(body.reason, 'ServiceUnavailable');
    assert.match(body.message, /waking .* not ready within 3s: try again/);
    assert.equal(w.calls.includes('forward /prompt http://pod-of-first:8090'), false);
    assert.deepEqual(w.wakes, ['timeout 3']);
  });

  it('a session that ended while waking → 409', async () => {
    const suspended = { ...BASE, phase: 'Suspended' };
    const w = app({ reads: [suspended, { ...BASE, phase: 'Failed' }], answers: [answer()] });
    assert.equal((await w.post()).status, 409);
  });
});

describe('prompt API: a restore pod and a lost pod (issue 29 §3)', () => {
  it('a pod waiting for the session state gets the last saved turn, then the prompt', async () => {
    const waiting: Upstream = {
      status: 409,
      body: null,
      text: async () => JSON.stringify({ message: WAITING_FOR_STATE }),
    };
    const w = app({ reads: [BASE], answers: [waiting, answer()] });
    const res = await w.post();
    assert.equal(res.status, 200);
    assert.deepEqual(w.calls.slice(0, 3), [
      'forward /prompt http://pod-of-first:8090',
      'restore http://pod-of-first:8090',
      'forward /prompt http://pod-of-first:8090',
    ]);
  });

  it('a pod whose state is being read for a save is asked again a moment later', async () => {
    const reading: Upstream = {
      status: 409,
      body: null,
      text: async () => JSON.stringify({ message: 'the session state is being read' }),
    };
    const w = app({ reads: [BASE], answers: [reading, reading, answer()] });
    const res = await w.post();
    assert.equal(res.status, 200);
    assert.equal(w.calls.filter((c) => c.startsWith('forward')).length, 3);
  });

  it('another 409 (a prompt in flight) is passed on unchanged', async () => {
    const busy: Upstream = {
      status: 409,
      body: null,
      text: async () => JSON.stringify({ message: 'a prompt is already in flight' }),
    };
    const w = app({ reads: [BASE], answers: [busy] });
    const res = await w.post();
    assert.equal(res.status, 409);
    assert.match(((await res.json()) as { message: string }).message, /already in flight/);
    assert.equal(
      w.calls.some((c) => c.startsWith('restore')),
      false,
    );
  });

  it('the pod lost mid-turn: the stream ends with an error line, the turn is no longer in flight, not saved', async () => {
    let sent = false;
    const broken: Upstream = {
      status: 200,
      body: new ReadableStream({
        pull(c) {
          if (!sent) {
            sent = true;
            c.enqueue(enc.encode('{"type":"assistant","text":"thinking"}\n'));
            return;
          }
          c.error(new Error('socket hang up'));
        },
      }),
      text: async () => '',
    };
    const w = app({ reads: [BASE], answers: [broken] });
    const res = await w.post();
    assert.equal(res.status, 200);
    assert.equal(await res.text(), `{"type":"assistant","text":"thinking"}\n${POD_LOST_LINE}`);
    assert.deepEqual(w.calls.slice(1), ['started 2', 'lost']);
    const line = JSON.parse(POD_LOST_LINE) as { type: string; message: string };
    assert.equal(line.type, 'error');
    assert.match(line.message, /not replayed/);
  });
});
