import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sessionIdInOutput, sessionIdOf, sessionIdOfAny } from './session.ts';

describe('sessionIdOf', () => {
  it('reads each CLI’s line: Claude and Gemini session_id, Codex thread_id, OpenCode sessionID on any line', () => {
    assert.equal(sessionIdOf('claude', { type: 'system', subtype: 'init', session_id: 's-1' }), 's-1');
    assert.equal(sessionIdOf('gemini', { type: 'init', session_id: 'g-1' }), 'g-1');
    assert.equal(sessionIdOf('codex', { type: 'thread.started', thread_id: 't-1' }), 't-1');
    assert.equal(
      sessionIdOf('opencode', { type: 'step_start', sessionID: 'ses_db5fb07b3ffevAcZju20M2fv4l', part: {} }),
      'ses_db5fb07b3ffevAcZju20M2fv4l',
    );
    assert.equal(sessionIdOf('opencode', { type: 'text', sessionID: 'ses_2' }), 'ses_2');
  });

  it('never an id that could pass for a flag, nor one from another CLI’s line', () => {
    assert.equal(sessionIdOf('opencode', { type: 'text', sessionID: '--help' }), undefined);
    assert.equal(sessionIdOf('opencode', { sessionID: 'ses_1' }), undefined);
    assert.equal(sessionIdOf('opencode', { type: 'init', session_id: 'g-1' }), undefined);
    assert.equal(sessionIdOf('exec', { type: 'text', sessionID: 'ses_1' }), undefined);
  });

  it('sessionIdOfAny: any CLI’s line, for the prompt API that relays lines without knowing the vendor', () => {
    assert.equal(sessionIdOfAny({ type: 'system', subtype: 'init', session_id: 's-1' }), 's-1');
    assert.equal(sessionIdOfAny({ type: 'init', session_id: 'g-1' }), 'g-1');
    assert.equal(sessionIdOfAny({ type: 'thread.started', thread_id: 't-1' }), 't-1');
    assert.equal(
      sessionIdOfAny({ type: 'text', sessionID: 'ses_db3f85685ffe3DmNTCyLqDEu7X', part: {} }),
      'ses_db3f85685ffe3DmNTCyLqDEu7X',
    );
    assert.equal(sessionIdOfAny({ type: 'result', result: 'x' }), undefined);
    assert.equal(sessionIdOfAny({ type: 'text', sessionID: '-x' }), undefined);
    assert.equal(sessionIdOfAny('ses_1'), undefined);
  });

  it('sessionIdInOutput: the last one revealed', () => {
    const out = [
      '{"type":"step_start","sessionID":"ses_a","part":{}}',
      'plain text',
      '{"type":"step_finish","sessionID":"ses_b","part":{"reason":"stop"}}',
    ].join('\n');
    assert.equal(sessionIdInOutput('opencode', out), 'ses_b');
  });
});
