import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  agentFailedBeforeStart,
  agentFinished,
  agentStarted,
  encodeEvent,
  lifecycleEvent,
} from './lifecycle.ts';

describe('lifecycle events', () => {
  it('encodes agent/started exactly', () => {
    assert.equal(encodeEvent(agentStarted()), '{"kind":"lifecycle","phase":"agent","status":"started"}');
  });

  it('keeps exitCode 0 and maps it to succeeded', () => {
    assert.equal(
      encodeEvent(agentFinished(0)),
      '{"kind":"lifecycle","phase":"agent","status":"succeeded","exitCode":0}',
    );
  });

  it('maps any non-zero exit code to failed', () => {
    for (const code of [1, 7, 124, 137]) {
      assert.deepEqual(agentFinished(code), {
        kind: 'lifecycle',
        phase: 'agent',
        status: 'failed',
        exitCode: code,
      });
    }
  });

  it('carries a reason without an exit code for start failures', () => {
    assert.equal(
      encodeEvent(agentFailedBeforeStart('not-found')),
      '{"kind":"lifecycle","phase":"agent","status":"failed","reason":"not-found"}',
    );
  });

  it('omits empty optional fields and orders keys kind, phase, status, tool, reason, exitCode', () => {
    const e = lifecycleEvent('init', 'failed', { exitCode: 3, reason: 'install', tool: 'git' });
    assert.equal(
      encodeEvent(e),
      '{"kind":"lifecycle","phase":"init","status":"failed","tool":"git","reason":"install","exitCode":3}',
    );
    assert.deepEqual(Object.keys(lifecycleEvent('init', 'running', { tool: '', reason: '' })), [
      'kind',
      'phase',
      'status',
    ]);
  });
});
