import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { terminalOf } from './terminal.ts';

describe('supervisor terminal detection', () => {
  it('claude and exec: a result line is terminal; ok unless is_error is true', () => {
    assert.deepEqual(terminalOf('claude', { type: 'result', is_error: false }), { ok: true });
    assert.deepEqual(terminalOf('claude', { type: 'result' }), { ok: true });
    assert.deepEqual(terminalOf('claude', { type: 'result', is_error: true }), { ok: false });
    assert.deepEqual(terminalOf('exec', { type: 'result' }), { ok: true });
    assert.equal(terminalOf('claude', { type: 'assistant' }), undefined);
    assert.equal(terminalOf('claude', { type: 'turn.completed' }), undefined);
  });

  it('codex: turn.completed is terminal and ok; a claude result is not', () => {
    assert.deepEqual(terminalOf('codex', { type: 'turn.completed' }), { ok: true });
    assert.equal(terminalOf('codex', { type: 'result' }), undefined);
  });

  it('gemini: result is terminal, ok iff status is success', () => {
    assert.deepEqual(terminalOf('gemini', { type: 'result', status: 'success' }), { ok: true });
    assert.deepEqual(terminalOf('gemini', { type: 'result', status: 'error' }), { ok: false });
  });

  it('non-objects are never terminal', () => {
    for (const value of [null, 'result', 5, [{ type: 'result' }], undefined]) {
      assert.equal(terminalOf('claude', value), undefined);
    }
  });
});
