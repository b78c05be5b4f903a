import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  clipLine,
  finishRender,
  INITIAL_RENDER_STATE,
  type RenderState,
  renderLine,
  renderText,
  resultPreview,
  toolDetail,
} from './event-lines.ts';
import { painter } from './style.ts';

const plain = painter(false);
const j = (o: unknown) => JSON.stringify(o);

/** Renders lines in order; the text and whether the turn ended (last verdict). */
function render(lines: readonly unknown[]): { text: string; ended: boolean | undefined } {
  let state: RenderState = INITIAL_RENDER_STATE;
  let text = '';
  let ended: boolean | undefined;
  for (const l of lines) {
    const r = renderLine(typeof l === 'string' ? l : j(l), state, plain);
    text += r.text;
    state = r.state;
    if (r.ended !== undefined) ended = r.ended;
  }
  return { text: text + finishRender(state), ended };
}

describe('event lines: Claude Code stream-json (docs/reference/vendor-cli-events.md#claude-code-stream-json)', () => {
  it('session, assistant text, tool call with its input, tool result named after its call, the end', () => {
    const out = render([
      { type: 'system', subtype: 'init', session_id: 's-1', model: 'claude-opus-5-5', tools: ['Bash'] },
      {
        type: 'assistant',
        message: {
          content: [
            { type: 'text', text: 'Let me look.\n' },
            {
              type: 'tool_use',
              id: 'toolu_1',
              name: 'Bash',
              input: { command: 'ls -la', description: 'list' },
            },
          ],
        },
      },
      {
        type: 'user',
        message: { content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a\nb\nc\nd\ne\nf' }] },
      },
      { type: 'assistant', message: { content: [{ type: 'text', text: 'Two files.' }] } },
      {
        type: 'result',
        subtype: 'success',
        is_error: false,
        num_turns: 2,
        result: 'Two files.',
        total_cost_usd: 0.0123,
        usage: { input_tokens: 12, output_tokens: 7 },
      },
    ]);
    assert.equal(
      out.text,
      [
        '· session s-1 · model claude-opus-5-5',
        'Let me look.',
        '▸ Bash ls -la',
        '  ↳ Bash: a',
        '    b',
        '    c',
        '    d',
        '    … (+2 lines)',
        'Two files.',
        '✓ done · 2 turns · 12 in / 7 out tokens · $0.0123',
        '',
      ].join('\n'),
    );
    assert.equal(out.ended, true);
  });

  it('an error result ends the turn as a failure with its errors', () => {
    const out = render([
      { type: 'result', subtype: 'error_during_execution', is_error: true, errors: ['mock failure'] },
    ]);
    assert.equal(out.text, '✗ error_during_execution: mock failure\n');
    assert.equal(out.ended, false);
  });

  it('failed tool results, array content, and an assistant error', () => {
    const out = render([
      {
        type: 'user',
        message: {
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'unknown',
              content: [{ type: 'text', text: 'denied' }],
              is_error: true,
            },
          ],
        },
      },
      { type: 'assistant', error: 'rate_limit', message: { content: [] } },
    ]);
    assert.equal(out.text, '  ↳ denied\n✗ assistant error: rate_limit\n');
  });

  it('system lines other than init say nothing', () => {
    assert.equal(render([{ type: 'system', subtype: 'compact_boundary' }]).text, '');
  });
});

describe('event lines: Codex exec --json (docs/reference/vendor-cli-events.md#codex-exec-json)', () => {
  it('thread, command started and finished, reasoning, message, usage', () => {
    const out = render([
      { type: 'thread.started', thread_id: 't-1' },
      { type: 'turn.started' },
      {
        type: 'item.started',
        item: { id: 'item_0', type: 'command_execution', command: 'npm test', status: 'in_progress' },
      },
      {
        type: 'item.completed',
        item: {
          id: 'item_0',
          type: 'command_execution',
          command: 'npm test',
          aggregated_output: 'ok',
          exit_code: 0,
          status: 'completed',
        },
      },
      { type: 'item.completed', item: { id: 'item_1', type: 'reasoning', text: 'check the\ntests' } },
      { type: 'item.completed', item: { id: 'item_2', type: 'agent_message', text: 'patched it' } },
      { type: 'turn.completed', usage: { input_tokens: 123, cached_input_tokens: 0, output_tokens: 45 } },
    ]);
    assert.equal(
      out.text,
      [
        '· thread t-1',
        '▸ command npm test',
        '  ↳ exit 0',
        '    ok',
        '· thinking: check the tests',
        'patched it',
        '✓ done · 123 in / 45 out tokens',
        '',
      ].join('\n'),
    );
    assert.equal(out.ended, true);
  });

  it('a failing command, MCP and file tools, retry notices and a failed turn', () => {
    const out = render([
      {
        type: 'item.completed',
        item: { id: 'i', type: 'command_execution', exit_code: 2, status: 'failed' },
      },
      {
        type: 'item.started',
        item: { id: 'm', type: 'mcp_tool_call', server: 'gh', tool: 'search', arguments: { query: 'bug' } },
      },
      {
        type: 'item.started',
        item: { id: 'f', type: 'file_change', changes: [{ path: 'a.ts' }, { path: 'b.ts' }] },
      },
      { type: 'item.completed', item: { id: 'e', type: 'error', message: 'boom' } },
      { type: 'error', message: 'reconnecting 1/5' },
      { type: 'turn.failed', error: { message: 'usage limit' } },
    ]);
    assert.equal(
      out.text,
      [
        '  ↳ exit 2',
        '▸ gh.search bug',
        '▸ edit a.ts, b.ts',
        '✗ boom',
        '! reconnecting 1/5',
        '✗ usage limit',
        '',
      ].join('\n'),
    );
    assert.equal(out.ended, false);
  });
});

describe('event lines: Gemini CLI stream-json (docs/reference/vendor-cli-events.md#gemini-cli-stream-json)', () => {
  it('streams assistant deltas on one line, tools, the echoed prompt left out, the end', () => {
    const out = render([
      { type: 'init', session_id: 'g-1', model: 'gemini-3.8-flash' },
      { type: 'message', role: 'user', content: 'the prompt' },
      { type: 'tool_use', tool_name: 'read_file', tool_id: 't1', parameters: { path: 'README.md' } },
      { type: 'tool_result', tool_id: 't1', status: 'success', output: 'ok' },
      { type: 'message', role: 'assistant', content: 'looks ', delta: true },
      { type: 'message', role: 'assistant', content: 'fine', delta: true },
      { type: 'result', status: 'success', stats: { input_tokens: 10, output_tokens: 3 } },
    ]);
    assert.equal(
      out.text,
      [
        '· session g-1 · model gemini-3.8-flash',
        '▸ read_file README.md',
        '  ↳ read_file: ok',
        'looks fine',
        '✓ done · 10 in / 3 out tokens',
        '',
      ].join('\n'),
    );
    assert.equal(out.ended, true);
  });

  it('ends streamed text with a line break when the log ends mid-line', () => {
    assert.equal(
      render([{ type: 'message', role: 'assistant', content: 'partial', delta: true }]).text,
      'partial\n',
    );
  });

  it('errors by severity, a failed tool, an error result', () => {
    const out = render([
      { type: 'error', severity: 'warning', message: 'slow' },
      { type: 'error', severity: 'error', message: 'quota' },
      { type: 'tool_result', tool_id: 'x', status: 'error', error: { type: 't', message: 'no such file' } },
      { type: 'result', status: 'error', error: { type: 'mock', message: 'mock failure' } },
    ]);
    assert.equal(out.text, ['! slow', '✗ quota', '  ↳ no such file', '✗ mock failure', ''].join('\n'));
    assert.equal(out.ended, false);
  });
});

describe('event lines: OpenCode, the supervisor, plain text', () => {
  it('OpenCode text, tools and done; errors', () => {
    const out = render([
      { type: 'step_start', sessionID: 'o-1' },
      { type: 'text', part: { text: 'hi' } },
      { type: 'tool_use', part: { tool: 'bash', state: { input: { command: 'ls' } } } },
      { type: 'step_finish', part: { reason: 'stop' } },
      { type: 'done' },
    ]);
    assert.equal(out.text, 'hi\n▸ bash ls\n✓ done\n');
    assert.equal(render([{ type: 'error', error: { data: { message: 'bad key' } } }]).text, '✗ bad key\n');
  });

  it('lifecycle and file events, supervisor warnings, [agent] stderr, plain text, unknown JSON', () => {
    const out = render([
      { kind: 'lifecycle', phase: 'agent', status: 'started' },
      { ts: '2026-12-01T00:00:00Z', level: 'info', msg: 'Started' },
      { ts: '2026-12-01T00:00:00Z', level: 'warn', msg: '[supervisor] sink slow' },
      '[agent] npm WARN deprecated',
      'hello from the mock agent: run x',
      { kind: 'file', event: 'created', path: '/workspace/out.txt', content: '' },
      { i: 1 },
      { kind: 'lifecycle', phase: 'agent', status: 'failed', exitCode: 7 },
      '',
    ]);
    assert.equal(
      out.text,
      [
        '· agent started',
        '! [supervisor] sink slow',
        '! npm WARN deprecated',
        'hello from the mock agent: run x',
        '· file created /workspace/out.txt',
        '· {"i":1}',
        '✗ agent failed (exit 7)',
        '',
      ].join('\n'),
    );
  });

  it('escape sequences from the log never reach the terminal', () => {
    assert.equal(render(['\x1b[2Jgone']).text, '^[[2Jgone\n');
    assert.equal(
      render([{ type: 'assistant', message: { content: [{ type: 'text', text: 'a\x1b]0;title\x07b' }] } }])
        .text,
      'a^[]0;title^Gb\n',
    );
  });

  it('colours tools, results, notes and verdicts on a terminal', () => {
    const color = painter(true);
    const r = renderLine(j({ type: 'turn.completed', usage: {} }), INITIAL_RENDER_STATE, color);
    assert.equal(r.text, '\x1b[32m✓ done\x1b[0m\n');
    const t = renderLine(j({ type: 'tool_use', tool_name: 'x', tool_id: '1' }), INITIAL_RENDER_STATE, color);
    assert.equal(t.text, '\x1b[36m▸ x\x1b[0m\n');
  });

  it('renderText renders a whole log (status.output)', () => {
    assert.equal(
      renderText(
        `${j({ type: 'item.completed', item: { type: 'agent_message', text: 'hi' } })}\nplain\n`,
        plain,
      ),
      'hi\nplain\n',
    );
  });

  it('never throws and remembers a bounded number of tool names, whatever the line', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.string(),
            fc.json(),
            fc.jsonValue().map((x) => JSON.stringify(x)),
          ),
        ),
        (lines) => {
          let state = INITIAL_RENDER_STATE;
          for (const l of lines) state = renderLine(l, state, plain).state;
          assert.ok(state.tools.length <= 64);
        },
      ),
    );
  });
});

describe('helpers', () => {
  it('clipLine folds blanks and marks the cut', () => {
    assert.equal(clipLine('a\n  b', 10), 'a b');
    assert.equal(clipLine('abcdefghij', 5), 'abcd…');
  });
  it('toolDetail picks the telling field', () => {
    assert.equal(toolDetail({ file_path: '/a', other: 1 }), '/a');
    assert.equal(toolDetail({ command: ['git', 'status'] }), 'git status');
    assert.equal(toolDetail({ x: 1 }), '{"x":1}');
    assert.equal(toolDetail({}), '');
    assert.equal(toolDetail(undefined), '');
    assert.equal(toolDetail('raw'), 'raw');
  });
  it('resultPreview keeps the first lines', () => {
    assert.deepEqual(resultPreview(''), ['(no output)']);
    assert.deepEqual(resultPreview('one\n'), ['one']);
  });
});
