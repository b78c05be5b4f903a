import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ClassifiedEvent, classifySelectEvent } from './events.ts';
import type { Vendor } from './route.ts';
import { classifyLine, isTerminal, type LineClass } from './terminal.ts';

const P: LineClass = { kind: 'progress' };
const OK: LineClass = { kind: 'terminal-success' };
const FAIL: LineClass = { kind: 'terminal-failure' };

describe('classifyLine', () => {
  const cases: ReadonlyArray<readonly [Vendor, string, LineClass]> = [
    // Claude Code stream-json (docs/reference/vendor-cli-events.md#claude-code-stream-json).
    [
      'claude',
      '{"type":"system","subtype":"init","session_id":"u-1","model":"claude-opus-5-5"}',
      {
        kind: 'started',
        sessionId: 'u-1',
      },
    ],
    ['claude', '{"type":"system","subtype":"init"}', { kind: 'started' }],
    ['claude', '{"type":"system","subtype":"compact_boundary"}', P],
    ['claude', '{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}', P],
    ['claude', '{"type":"result","subtype":"success","is_error":false,"result":"done"}', OK],
    ['claude', '{"type":"result","subtype":"success"}', OK],
    ['claude', '{"type":"result","subtype":"error_max_turns","is_error":true}', FAIL],
    ['claude', '{"type":"result","subtype":"success","is_error":true,"result":"API Error"}', FAIL],
    ['claude', '{"type":"result","is_error":"true"}', OK],
    ['claude', '{"type":"turn.completed"}', P],
    // exec follows the Claude rules.
    ['exec', '{"type":"result","is_error":true}', FAIL],
    ['exec', '{"type":"result"}', OK],
    ['exec', 'plain text line', P],
    // Codex exec --json (docs/reference/vendor-cli-events.md#codex-exec-json).
    ['codex', '{"type":"thread.started","thread_id":"0199-a"}', { kind: 'started', sessionId: '0199-a' }],
    ['codex', '{"type":"turn.started"}', P],
    ['codex', '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"x"}}', P],
    [
      'codex',
      '{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":2}}',
      OK,
    ],
    ['codex', '{"type":"turn.failed","error":{"message":"boom"}}', FAIL],
    ['codex', '{"type":"error","message":"Reconnecting... 1/5"}', P],
    ['codex', '{"type":"result"}', P],
    // Gemini CLI stream-json (docs/reference/vendor-cli-events.md#gemini-cli-stream-json).
    [
      'gemini',
      '{"type":"init","timestamp":"t","session_id":"g-1","model":"gemini-3.8-flash"}',
      {
        kind: 'started',
        sessionId: 'g-1',
      },
    ],
    ['gemini', '{"type":"message","role":"assistant","content":"x","delta":true}', P],
    ['gemini', '{"type":"error","severity":"error","message":"bad"}', P],
    ['gemini', '{"type":"result","status":"success","stats":{}}', OK],
    ['gemini', '{"type":"result","status":"error","error":{"type":"t","message":"m"}}', FAIL],
    ['gemini', '{"type":"result"}', FAIL],
    // OpenCode run --format json.
    [
      'opencode',
      '{"type":"step_start","timestamp":1,"sessionID":"ses_1","part":{"type":"step-start"}}',
      {
        kind: 'started',
        sessionId: 'ses_1',
      },
    ],
    ['opencode', '{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"hi"}}', P],
    ['opencode', '{"type":"tool_use","part":{"tool":"bash","state":{"status":"completed"}}}', P],
    ['opencode', '{"type":"step_finish","part":{"type":"step-finish","reason":"tool-calls"}}', P],
    ['opencode', '{"type":"step_finish","part":{"type":"step-finish","reason":"unknown"}}', P],
    ['opencode', '{"type":"step_finish","part":{"type":"step-finish"}}', P],
    ['opencode', '{"type":"step_finish","part":{"type":"step-finish","reason":"stop"}}', OK],
    ['opencode', '{"type":"step_finish","part":{"type":"step-finish","reason":"length"}}', FAIL],
    ['opencode', '{"type":"step_finish","part":{"type":"step-finish","reason":"error"}}', FAIL],
    ['opencode', '{"type":"step_finish","part":"weird"}', P],
    ['opencode', '{"type":"error","error":{"name":"APIError","data":{"message":"x"}}}', FAIL],
    ['opencode', '{"type":"done","reason":"idle","rejected":[]}', OK],
    ['opencode', '{"type":"result"}', P],
  ];
  for (const [vendor, line, want] of cases) {
    it(`${vendor}: ${line.slice(0, 70)}`, () => assert.deepEqual(classifyLine(vendor, line), want));
  }

  const junk = ['', '   ', 'not json', '{broken', '[1,2]', '"result"', '42', 'null', '{"type":7}', '{}'];
  for (const vendor of ['claude', 'codex', 'opencode', 'gemini', 'exec'] as const) {
    it(`${vendor}: malformed and non-object lines are never terminal`, () => {
      for (const line of junk) assert.deepEqual(classifyLine(vendor, line), P, line);
    });
  }

  it('accepts surrounding whitespace', () => {
    assert.deepEqual(classifyLine('claude', '  {"type":"result"}\r'), OK);
  });

  it('isTerminal covers exactly the two terminal kinds', () => {
    assert.deepEqual(
      (['started', 'progress', 'terminal-success', 'terminal-failure'] as const).map(isTerminal),
      [false, false, true, true],
    );
  });
});

describe('classifySelectEvent', () => {
  const cases: ReadonlyArray<readonly [Vendor, unknown, ClassifiedEvent | undefined]> = [
    // Claude rules (docs/design/reference-behaviour.md#event-selection).
    ['claude', { type: 'result', result: 'final' }, { event: 'result', text: 'final' }],
    ['claude', { type: 'result', is_error: true }, { event: 'result' }],
    [
      'claude',
      {
        type: 'assistant',
        message: {
          content: [
            { type: 'text', text: 'a' },
            { type: 'tool_use', name: 'Bash' },
          ],
        },
      },
      { event: 'tool_call', tool: 'Bash' },
    ],
    [
      'claude',
      { type: 'user', message: { content: [{ type: 'tool_result', content: 'out' }] } },
      { event: 'tool_result', text: 'out' },
    ],
    [
      'claude',
      {
        type: 'user',
        message: { content: [{ type: 'tool_result', content: [{ type: 'text', text: 'x' }] }] },
      },
      { event: 'tool_result' },
    ],
    [
      'claude',
      {
        type: 'assistant',
        message: {
          content: [
            { type: 'text', text: 'he' },
            { type: 'thinking', thinking: '…' },
            { type: 'text', text: 'llo' },
          ],
        },
      },
      { event: 'message', text: 'hello' },
    ],
    ['claude', { type: 'assistant' }, { event: 'message', text: '' }],
    ['claude', { type: 'system', subtype: 'token_usage' }, { event: 'usage' }],
    ['claude', { type: 'system', subtype: 'init' }, undefined],
    ['exec', { type: 'result', result: 'r' }, { event: 'result', text: 'r' }],
    // Codex rules (docs/design/reference-behaviour.md#event-selection).
    ['codex', { type: 'turn.completed', usage: {} }, { event: 'usage' }],
    [
      'codex',
      { type: 'item.completed', item: { type: 'agent_message', text: 'hi' } },
      { event: 'message', text: 'hi' },
    ],
    [
      'codex',
      { type: 'item.completed', item: { type: 'command_execution', command: 'ls' } },
      { event: 'tool_call', text: 'ls' },
    ],
    [
      'codex',
      { type: 'item.completed', item: { type: 'mcp_tool_call', tool: 'search' } },
      { event: 'tool_call', tool: 'search' },
    ],
    ['codex', { type: 'item.completed', item: { type: 'file_change' } }, { event: 'tool_call' }],
    ['codex', { type: 'item.completed', item: { type: 'web_search' } }, { event: 'tool_call' }],
    ['codex', { type: 'item.completed', item: { type: 'reasoning', text: 'x' } }, undefined],
    ['codex', { type: 'item.started', item: { type: 'command_execution' } }, undefined],
    ['codex', { type: 'thread.started', thread_id: 't' }, undefined],
    // Gemini rules.
    [
      'gemini',
      { type: 'message', role: 'assistant', content: 'hi', delta: true },
      { event: 'message', text: 'hi' },
    ],
    [
      'gemini',
      { type: 'tool_use', tool_name: 'read_file', tool_id: 'x' },
      { event: 'tool_call', tool: 'read_file' },
    ],
    [
      'gemini',
      { type: 'tool_result', status: 'success', output: 'data' },
      { event: 'tool_result', text: 'data' },
    ],
    ['gemini', { type: 'result', status: 'success' }, { event: 'result' }],
    ['gemini', { type: 'init', session_id: 's' }, undefined],
    ['gemini', { type: 'error', message: 'm' }, undefined],
    // OpenCode rules.
    ['opencode', { type: 'text', part: { text: 'hello' } }, { event: 'message', text: 'hello' }],
    ['opencode', { type: 'tool_use', part: { tool: 'bash' } }, { event: 'tool_call', tool: 'bash' }],
    ['opencode', { type: 'step_finish', part: { reason: 'stop' } }, { event: 'usage' }],
    ['opencode', { type: 'done' }, { event: 'result' }],
    ['opencode', { type: 'reasoning', part: { text: 'x' } }, undefined],
    ['opencode', { type: 'text', part: 5 }, undefined],
    // Non-objects.
    ['claude', 'result', undefined],
    ['codex', null, undefined],
    ['gemini', [1], undefined],
  ];
  for (const [vendor, event, want] of cases) {
    it(`${vendor}: ${JSON.stringify(event).slice(0, 70)}`, () =>
      assert.deepEqual(classifySelectEvent(vendor, event), want));
  }
});
