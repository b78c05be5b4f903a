import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { INSTANT_ANNOTATION, instantRun } from './instant.ts';

const on = (extra: Record<string, string> = {}) => ({ [INSTANT_ANNOTATION]: 'true', ...extra });

describe('instantRun', () => {
  it('is off unless the pod asks for it', () => {
    assert.equal(instantRun(undefined, 'app', 'agent'), undefined);
    assert.equal(instantRun({ [INSTANT_ANNOTATION]: 'yes' }, 'app', 'agent'), undefined);
  });
  it('the agent container exits 0 at once with the supervisor lifecycle lines by default', () => {
    assert.deepEqual(instantRun(on(), 'app', 'agent'), {
      delayMs: 0,
      exitCode: 0,
      log: '{"kind":"lifecycle","phase":"agent","status":"started"}\n{"kind":"lifecycle","phase":"agent","status":"succeeded","exitCode":0}\n',
    });
  });
  it('reads delay, exit code and log lines from the annotations; bad numbers fall back', () => {
    const r = instantRun(
      on({
        'testbed.agent-controller.dev/delay-ms': '250',
        'testbed.agent-controller.dev/exit-code': '7',
        'testbed.agent-controller.dev/log': 'one\ntwo\n',
      }),
      'app',
      'agent',
    );
    assert.deepEqual(r, { delayMs: 250, exitCode: 7, log: 'one\ntwo\n' });
    const fallback = instantRun(on({ 'testbed.agent-controller.dev/delay-ms': '-3' }), 'app', 'agent');
    assert.equal(fallback?.delayMs, 0);
    const failed = instantRun(on({ 'testbed.agent-controller.dev/exit-code': '3' }), 'app', 'agent');
    assert.match(failed?.log ?? '', /"status":"failed","exitCode":3/);
  });
  it('init containers and side containers exit 0 at once, silently', () => {
    assert.deepEqual(instantRun(on({ 'testbed.agent-controller.dev/exit-code': '9' }), 'init', 'init'), {
      delayMs: 0,
      exitCode: 0,
      log: '',
    });
    assert.deepEqual(instantRun(on(), 'app', 'sidecar'), { delayMs: 0, exitCode: 0, log: '' });
  });
  it('sidecars (restartable init containers) run until the pod stops them, even one named agent', () => {
    const plan = instantRun(on({ 'testbed.agent-controller.dev/exit-code': '9' }), 'sidecar', 'agent');
    assert.deepEqual(plan, { delayMs: 0, exitCode: 0, log: '', untilStopped: true });
    assert.equal(instantRun(on(), 'init', 'x')?.untilStopped, undefined);
    assert.equal(instantRun(undefined, 'sidecar', 'x'), undefined);
  });
});
