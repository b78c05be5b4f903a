import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { failureMessageOf, MAX_FAILURE_MESSAGE_CHARS, terminalOf } from './terminal.ts';

describe('terminalOf: the CLI error message of a failure terminal (docs/reference/vendor-clis.md)', () => {
  it("takes each CLI's own field, as the real CLIs print it", () => {
    const cases: ReadonlyArray<readonly [Parameters<typeof terminalOf>[0], unknown, string | undefined]> = [
      [
        'claude',
        {
          type: 'result',
          subtype: 'success',
          is_error: true,
          result: 'API Error: 529 Overloaded',
          api_error_status: 529,
        },
        'API Error: 529 Overloaded',
      ],
      [
        'codex',
        { type: 'turn.failed', error: { message: 'stream disconnected before completion' } },
        'stream disconnected before completion',
      ],
      [
        'gemini',
        { type: 'result', status: 'error', error: { type: 'unknown', message: '[API Error: quota]' } },
        '[API Error: quota]',
      ],
      [
        'opencode',
        {
          type: 'error',
          error: { name: 'APIError', data: { message: 'Too Many Requests', statusCode: 429 } },
        },
        'Too Many Requests',
      ],
      ['opencode', { type: 'error', error: { name: 'UnknownError', message: 'boom' } }, 'boom'],
      // A failure terminal without a usable message.
      ['claude', { type: 'result', is_error: true }, undefined],
      ['codex', { type: 'turn.failed', error: { message: '   ' } }, undefined],
      ['gemini', { type: 'result', status: 'error', error: 'not an object' }, undefined],
    ];
    for (const [vendor, event, want] of cases) {
      const t = terminalOf(vendor, event);
      assert.deepEqual(
        t,
        want === undefined ? { ok: false } : { ok: false, message: want },
        JSON.stringify(event),
      );
    }
  });

  it('a success terminal carries no message, even when the event has text', () => {
    assert.deepEqual(terminalOf('claude', { type: 'result', is_error: false, result: 'done' }), { ok: true });
    assert.deepEqual(terminalOf('gemini', { type: 'result', status: 'success' }), { ok: true });
    assert.equal(terminalOf('claude', { type: 'assistant' }), undefined);
  });

  it('cuts a long message to 512 characters (code points, not bytes)', () => {
    const long = '界'.repeat(600);
    const got = failureMessageOf('claude', { type: 'result', is_error: true, result: long });
    assert.equal(MAX_FAILURE_MESSAGE_CHARS, 512);
    assert.equal(got, '界'.repeat(512));
  });
});
