import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEADLINE_EXIT_CODE,
  exitCodeOf,
  initialOutcome,
  nextWakeAt,
  type OutcomeEvent,
  type OutcomeState,
  type Phase,
  step,
} from './outcome.ts';

const tick = (now: number): OutcomeEvent => ({ type: 'tick', now });
const exit = (now: number, code: number | null, signal: string | null = null): OutcomeEvent => ({
  type: 'exit',
  code,
  signal,
  now,
});
const terminal = (now: number, ok: boolean): OutcomeEvent => ({ type: 'terminal', ok, now });

/** Runs events through the machine, collecting every action. */
function run(state: OutcomeState, ...events: OutcomeEvent[]) {
  const actions: string[] = [];
  let s = state;
  for (const e of events) {
    const r = step(s, e);
    s = r.state;
    for (const a of r.actions) actions.push(a.type === 'signal' ? a.signal : `log:${a.level}`);
  }
  return { phase: s.phase, state: s, actions };
}

const at = (phase: Phase, config = { graceMs: 1000, deadlineAt: 10_000 }): OutcomeState => ({
  config,
  phase,
});

describe('exitCodeOf', () => {
  it('keeps real exit codes and maps signal deaths to 128 + n', () => {
    assert.equal(exitCodeOf(0, null), 0);
    assert.equal(exitCodeOf(7, null), 7);
    assert.equal(exitCodeOf(300, null), 44);
    assert.equal(exitCodeOf(null, 'SIGKILL'), 137);
    assert.equal(exitCodeOf(null, 'SIGTERM'), 143);
    assert.equal(exitCodeOf(null, 'SIGINT'), 130);
    assert.equal(exitCodeOf(null, 'SIGWHATEVER'), 143);
    assert.equal(exitCodeOf(null, null), 1);
  });
});

describe('outcome state machine', () => {
  const noDeadline = initialOutcome({ graceMs: 1000 });
  const withDeadline = initialOutcome({ graceMs: 1000, deadlineAt: 10_000 });

  it('a child exit while running ends the run with its own code', () => {
    assert.deepEqual(run(noDeadline, exit(5, 7)).phase, { tag: 'done', code: 7 });
    assert.deepEqual(run(withDeadline, exit(5, null, 'SIGKILL')).phase, { tag: 'done', code: 137 });
    assert.deepEqual(run(withDeadline, exit(5, 0)).actions, []);
  });

  it('running without a deadline never needs a timer; ticks do nothing', () => {
    assert.equal(nextWakeAt(noDeadline), undefined);
    assert.deepEqual(run(noDeadline, tick(1e12)).phase, { tag: 'running' });
  });

  it('running wakes at the deadline; before it a tick does nothing', () => {
    assert.equal(nextWakeAt(withDeadline), 10_000);
    assert.deepEqual(run(withDeadline, tick(9_999)), {
      phase: { tag: 'running' },
      state: withDeadline,
      actions: [],
    });
  });

  it('the deadline forces the agent down with 124: SIGTERM, then SIGKILL, then done', () => {
    const r1 = run(withDeadline, tick(10_000));
    assert.deepEqual(r1.actions, ['log:error', 'SIGTERM']);
    assert.deepEqual(r1.phase, { tag: 'terminating', killAt: 11_000, code: DEADLINE_EXIT_CODE });
    const r2 = run(r1.state, tick(10_999));
    assert.deepEqual(r2.actions, []);
    const r3 = run(r1.state, tick(11_000));
    assert.deepEqual(r3.actions, ['log:warn', 'SIGKILL']);
    assert.deepEqual(r3.phase, { tag: 'killing', giveUpAt: 12_000, code: 124 });
    assert.deepEqual(run(r3.state, exit(11_050, null, 'SIGKILL')).phase, { tag: 'done', code: 124 });
  });

  it('the deadline message is the reference text', () => {
    const r = step(withDeadline, tick(10_000));
    const log = r.actions.find((a) => a.type === 'log');
    assert.equal(
      log?.type === 'log' && log.msg,
      '[supervisor] run deadline expired with no terminal event; forcing the agent down',
    );
  });

  it('an agent that obeys SIGTERM at the deadline still ends with 124', () => {
    const r = run(withDeadline, tick(10_000), exit(10_100, null, 'SIGTERM'));
    assert.deepEqual(r.phase, { tag: 'done', code: 124 });
    assert.deepEqual(r.actions, ['log:error', 'SIGTERM']);
  });

  it('the wait after SIGTERM on the deadline path is capped at 3 s even with a long grace', () => {
    const long = initialOutcome({ graceMs: 60_000, deadlineAt: 10_000 });
    const r = run(long, tick(10_000));
    assert.deepEqual(r.phase, { tag: 'terminating', killAt: 13_000, code: 124 });
    const k = run(r.state, tick(13_000));
    assert.deepEqual(k.phase, { tag: 'killing', giveUpAt: 15_000, code: 124 });
  });

  it('a terminal event starts the grace; a natural exit inside it keeps the real code', () => {
    const g = run(withDeadline, terminal(100, true));
    assert.deepEqual(g.phase, { tag: 'grace', until: 1_100, code: 0 });
    assert.equal(nextWakeAt(g.state), 1_100);
    assert.deepEqual(run(g.state, exit(500, 3)).phase, { tag: 'done', code: 3 });
  });

  it('after the grace a lingering agent is forced down with runOk ? 0 : 1', () => {
    for (const [ok, code] of [
      [true, 0],
      [false, 1],
    ] as const) {
      const r = run(noDeadline, terminal(100, ok), tick(1_099), tick(1_100));
      assert.deepEqual(r.actions, ['log:info', 'SIGTERM']);
      assert.deepEqual(r.phase, { tag: 'terminating', killAt: 2_100, code });
      const k = run(r.state, tick(2_100), exit(2_150, null, 'SIGKILL'));
      assert.deepEqual(k.actions, ['log:warn', 'SIGKILL']);
      assert.deepEqual(k.phase, { tag: 'done', code });
    }
  });

  it('a lingering agent that dies on SIGTERM is not sent SIGKILL', () => {
    const r = run(noDeadline, terminal(0, true), tick(1_000), exit(1_010, null, 'SIGTERM'));
    assert.deepEqual(r.actions, ['log:info', 'SIGTERM']);
    assert.deepEqual(r.phase, { tag: 'done', code: 0 });
  });

  it('the deadline cuts a grace short but keeps the terminal outcome', () => {
    const g = run(withDeadline, terminal(9_500, true));
    assert.equal(nextWakeAt(g.state), 10_000);
    const r = run(g.state, tick(10_000));
    assert.deepEqual(r.phase, { tag: 'terminating', killAt: 11_000, code: 0 });
  });

  it('a terminal event at or after the deadline forces the agent down at once with its outcome', () => {
    const r = run(withDeadline, terminal(10_000, false));
    assert.deepEqual(r.actions, ['log:warn', 'SIGTERM']);
    assert.deepEqual(r.phase, { tag: 'terminating', killAt: 11_000, code: 1 });
  });

  it('only the first terminal event counts', () => {
    const r = run(noDeadline, terminal(0, true), terminal(10, false));
    assert.deepEqual(r.phase, { tag: 'grace', until: 1_000, code: 0 });
    const t = run(withDeadline, tick(10_000), terminal(10_001, true));
    assert.deepEqual(t.phase, { tag: 'terminating', killAt: 11_000, code: 124 });
  });

  it('an agent never reaped after SIGKILL is given up on with the decided code', () => {
    const r = run(withDeadline, tick(10_000), tick(11_000), tick(11_999));
    assert.equal(r.phase.tag, 'killing');
    const g = run(r.state, tick(12_000));
    assert.deepEqual(g.phase, { tag: 'done', code: 124 });
    assert.deepEqual(g.actions, ['log:error']);
  });

  it('the SIGKILL wait is capped at 2 s and at most the grace', () => {
    const short = initialOutcome({ graceMs: 200, deadlineAt: 0 });
    const r = run(short, tick(0), tick(200));
    assert.deepEqual(r.phase, { tag: 'killing', giveUpAt: 400, code: 124 });
  });

  it('done is absorbing and has no wake-up', () => {
    const done = at({ tag: 'done', code: 5 });
    for (const e of [tick(1e9), exit(1, 0), terminal(1, false)]) {
      assert.deepEqual(step(done, e), { state: done, actions: [] });
    }
    assert.equal(nextWakeAt(done), undefined);
  });

  it('nextWakeAt follows each phase', () => {
    assert.equal(nextWakeAt(at({ tag: 'grace', until: 5, code: 0 })), 5);
    assert.equal(nextWakeAt(at({ tag: 'grace', until: 50_000, code: 0 })), 10_000);
    assert.equal(nextWakeAt(at({ tag: 'terminating', killAt: 7, code: 0 })), 7);
    assert.equal(nextWakeAt(at({ tag: 'killing', giveUpAt: 9, code: 0 })), 9);
  });

  it('is pure: the same state and event always give the same step', () => {
    const a = step(withDeadline, tick(10_000));
    const b = step(withDeadline, tick(10_000));
    assert.deepEqual(a, b);
    assert.deepEqual(withDeadline.phase, { tag: 'running' });
  });
});
