import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_TOOL_NAME, toolCallEvents } from './tool-calls.ts';

describe('toolCallEvents', () => {
  it('Claude: tool_use blocks start calls, tool_result blocks end them (is_error → failed)', () => {
    const assistant = {
      type: 'assistant',
      message: {
        role: 'assistant',
        content: [
          { type: 'text', text: 'let me look' },
          { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } },
          { type: 'tool_use', id: 'toolu_2', name: 'Read', input: {} },
        ],
      },
    };
    assert.deepEqual(toolCallEvents('claude', assistant), [
      { kind: 'start', id: 'toolu_1', name: 'Bash' },
      { kind: 'start', id: 'toolu_2', name: 'Read' },
    ]);
    const user = {
      type: 'user',
      message: {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'nope', is_error: true },
        ],
      },
    };
    assert.deepEqual(toolCallEvents('claude', user), [
      { kind: 'end', id: 'toolu_1', failed: false },
      { kind: 'end', id: 'toolu_2', failed: true },
    ]);
    // A tool_use in a user message or a tool_result in an assistant one is not a call boundary.
    assert.deepEqual(toolCallEvents('claude', { ...user, type: 'assistant' }), []);
    assert.deepEqual(toolCallEvents('claude', { type: 'result', result: 'x' }), []);
  });

  it('Codex: tool items start on item.started and end on item.completed', () => {
    const started = {
      type: 'item.started',
      item: { id: 'item_0', type: 'command_execution', command: 'npm test', status: 'in_progress' },
    };
    assert.deepEqual(toolCallEvents('codex', started), [{ kind: 'start', id: 'item_0', name: 'npm' }]);
    // Only the program: arguments can hold credentials.
    for (const [command, program] of [
      ['git clone https://user:s3cret@git.example/x.git', 'git'],
      ["/usr/bin/curl -H 'Authorization: Bearer t0ken' https://x", 'curl'],
      ["'bash' -lc 'echo hi'", 'bash'],
      ['   ', 'command'],
    ] as const) {
      const e = toolCallEvents('codex', {
        type: 'item.started',
        item: { id: 'i', type: 'command_execution', command },
      });
      assert.deepEqual(e, [{ kind: 'start', id: 'i', name: program }], command);
    }
    const done = (extra: Record<string, unknown>) => ({
      type: 'item.completed',
      item: { id: 'item_0', type: 'command_execution', command: 'npm test', ...extra },
    });
    assert.deepEqual(toolCallEvents('codex', done({ exit_code: 0, status: 'completed' })), [
      { kind: 'end', id: 'item_0', failed: false },
    ]);
    assert.deepEqual(toolCallEvents('codex', done({ exit_code: 2 })), [
      { kind: 'end', id: 'item_0', failed: true },
    ]);
    assert.deepEqual(toolCallEvents('codex', done({ status: 'failed' })), [
      { kind: 'end', id: 'item_0', failed: true },
    ]);
    assert.deepEqual(
      toolCallEvents('codex', {
        type: 'item.started',
        item: { id: 'item_3', type: 'mcp_tool_call', tool: 'search' },
      }),
      [{ kind: 'start', id: 'item_3', name: 'search' }],
    );
    assert.deepEqual(
      toolCallEvents('codex', { type: 'item.started', item: { id: 'item_4', type: 'file_change' } }),
      [{ kind: 'start', id: 'item_4', name: 'file_change' }],
    );
    // Messages and reasoning are not tool calls.
    assert.deepEqual(
      toolCallEvents('codex', {
        type: 'item.completed',
        item: { id: 'item_1', type: 'agent_message', text: 'x' },
      }),
      [],
    );
    assert.deepEqual(toolCallEvents('codex', { type: 'turn.completed', usage: {} }), []);
  });

  it('Gemini: tool_use starts, tool_result ends (status error → failed)', () => {
    assert.deepEqual(
      toolCallEvents('gemini', { type: 'tool_use', timestamp: 't', tool_name: 'read_file', tool_id: 'a1' }),
      [{ kind: 'start', id: 'a1', name: 'read_file' }],
    );
    assert.deepEqual(toolCallEvents('gemini', { type: 'tool_result', tool_id: 'a1', status: 'success' }), [
      { kind: 'end', id: 'a1', failed: false },
    ]);
    assert.deepEqual(toolCallEvents('gemini', { type: 'tool_result', tool_id: 'a1', status: 'error' }), [
      { kind: 'end', id: 'a1', failed: true },
    ]);
  });

  it('hostile or foreign lines yield nothing; names are bounded', () => {
    for (const line of [null, 7, 'text', [], {}, { type: 3 }, { type: 'tool_use', tool_id: 5 }]) {
      for (const vendor of ['claude', 'codex', 'gemini', 'opencode', 'exec'] as const) {
        assert.deepEqual(toolCallEvents(vendor, line), [], `${vendor} ${JSON.stringify(line)}`);
      }
    }
    assert.deepEqual(
      toolCallEvents('gemini', { type: 'tool_use', tool_id: 'x'.repeat(300), tool_name: 'n' }),
      [],
    );
    const long = toolCallEvents('gemini', { type: 'tool_use', tool_id: 'b', tool_name: 'n'.repeat(500) });
    assert.equal(long[0]?.kind === 'start' ? long[0].name.length : 0, MAX_TOOL_NAME);
    assert.deepEqual(toolCallEvents('gemini', { type: 'tool_use', tool_id: 'c', tool_name: '  ' }), [
      { kind: 'start', id: 'c', name: 'tool' },
    ]);
    // The other vendors' shapes mean nothing to a vendor.
    assert.deepEqual(toolCallEvents('claude', { type: 'tool_use', tool_id: 'a1', tool_name: 'x' }), []);
    assert.deepEqual(toolCallEvents('opencode', { type: 'tool_use', tool_id: 'a1', tool_name: 'x' }), []);
  });
});
