import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from './command.ts';
import { closeCommand, promptCommand, readable } from './prompt.ts';

describe('prompt CLI: readable lines', () => {
  const cases: [string, string, { text?: string; failed?: boolean }][] = [
    [
      'Claude assistant text and a tool call',
      '{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","name":"Bash"}]}}',
      { text: 'hi\n[tool] Bash' },
    ],
    ['Claude init says nothing', '{"type":"system","subtype":"init","session_id":"s"}', {}],
    [
      'Claude success result says nothing more',
      '{"type":"result","subtype":"success","is_error":false,"result":"hi"}',
      {},
    ],
    [
      'Claude error result',
      '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"boom"}',
      { failed: true, text: '[error] boom' },
    ],
    [
      'Codex agent message',
      '{"type":"item.completed","item":{"type":"agent_message","text":"done"}}',
      { text: 'done' },
    ],
    [
      'Codex command',
      '{"type":"item.completed","item":{"type":"command_execution","command":"ls"}}',
      { text: '[tool] ls' },
    ],
    [
      'Codex turn failed',
      '{"type":"turn.failed","error":{"message":"quota"}}',
      { failed: true, text: '[error] quota' },
    ],
    [
      'Gemini assistant delta',
      '{"type":"message","role":"assistant","content":"chunk","delta":true}',
      { text: 'chunk' },
    ],
    ['Gemini user echo says nothing', '{"type":"message","role":"user","content":"q"}', {}],
    [
      'Gemini error result',
      '{"type":"result","status":"error","error":{"type":"x","message":"bad"}}',
      { failed: true, text: '[error] bad' },
    ],
    ['a non-JSON line is shown as it is', 'plain text', { text: 'plain text' }],
  ];
  for (const [name, line, want] of cases) it(name, () => assert.deepEqual(readable(line), want));
});

describe('prompt CLI: usage', () => {
  const io = (argv: string[]) => ({ argv, env: {}, stdout: () => {}, stderr: () => {} });
  it('refuses a missing Agent, missing text, text with --interactive, and a bad endpoint', async () => {
    await assert.rejects(
      promptCommand.run(io([])),
      (e) => e instanceof UsageError && /missing the Agent name/.test(e.message),
    );
    await assert.rejects(promptCommand.run(io(['live'])), /missing the prompt text/);
    await assert.rejects(promptCommand.run(io(['live', 'x', '--interactive'])), /give no text/);
    await assert.rejects(
      promptCommand.run(io(['live', 'x', '--endpoint', 'ftp://x'])),
      /--endpoint must be an http/,
    );
    await assert.rejects(closeCommand.run(io(['a', 'b'])), /unexpected argument b/);
  });
  it('prints usage with examples for --help', async () => {
    let out = '';
    const code = await promptCommand.run({
      argv: ['--help'],
      env: {},
      stdout: (t) => {
        out += t;
      },
      stderr: () => {},
    });
    assert.equal(code, 0);
    assert.match(out, /Examples:/);
    assert.match(out, /Exit codes:/);
  });
});
