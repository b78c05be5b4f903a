import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseLine } from '../shared/index.ts';
import { matches, parseSelectors, selected } from './select.ts';

const line = (value: unknown) => parseLine(JSON.stringify(value));
const claudeToolUse = line({
  type: 'assistant',
  message: {
    content: [
      { type: 'text', text: 'let me look' },
      { type: 'tool_use', name: 'Bash', input: {} },
    ],
  },
});
const claudeText = line({
  type: 'assistant',
  message: {
    content: [
      { type: 'text', text: 'hello ' },
      { type: 'text', text: 'world' },
    ],
  },
});
const claudeToolResult = line({
  type: 'user',
  message: { content: [{ type: 'tool_result', content: 'file list' }] },
});
const claudeResult = line({ type: 'result', result: 'all done' });
const claudeUsage = line({ type: 'system', subtype: 'token_usage' });
const claudeInit = line({ type: 'system', subtype: 'init' });

describe('AGENT_SELECT parsing', () => {
  it('unset, blank and [] give an empty list without warnings', () => {
    for (const text of [undefined, '', '  ', '[]'])
      assert.deepEqual(parseSelectors(text), { selectors: [], warnings: [] });
  });

  it('keeps known entries, with tool and contains when they are non-empty strings; role is ignored', () => {
    const r = parseSelectors(
      JSON.stringify([
        { event: 'tool_call', tool: 'Bash', role: 'assistant' },
        { event: 'message', contains: 'done', tool: '' },
        { event: 'result', tool: null },
      ]),
    );
    assert.deepEqual(r.selectors, [
      { event: 'tool_call', tool: 'Bash' },
      { event: 'message', contains: 'done' },
      { event: 'result' },
    ]);
    assert.deepEqual(r.warnings, []);
  });

  it('skips entries without a string event silently and unknown events with the reference warning', () => {
    const r = parseSelectors(
      JSON.stringify([{ tool: 'x' }, { event: 5 }, 'message', { event: 'thinking' }, { event: 'usage' }]),
    );
    assert.deepEqual(r.selectors, [{ event: 'usage' }]);
    assert.deepEqual(r.warnings, [
      "[selectmatcher] dropping output.select entry with unknown event 'thinking'",
    ]);
  });

  it('skips entries whose tool or contains is not a string', () => {
    assert.deepEqual(
      parseSelectors('[{"event":"tool_call","tool":3},{"event":"message","contains":{}}]').selectors,
      [],
    );
  });

  it('malformed JSON and non-arrays give an empty list (fail-open) with a warning', () => {
    assert.equal(parseSelectors('[{').selectors.length, 0);
    assert.equal(parseSelectors('[{').warnings.length, 1);
    assert.equal(parseSelectors('{"event":"message"}').selectors.length, 0);
  });
});

describe('selected', () => {
  it('an empty list passes everything, even non-JSON lines', () => {
    assert.ok(selected([], 'claude', parseLine('plain text')));
    assert.ok(selected([], 'claude', claudeInit));
  });

  it('with selectors, unparseable and unclassified lines never pass', () => {
    const all = parseSelectors(
      JSON.stringify(['tool_call', 'message', 'tool_result', 'result', 'usage'].map((event) => ({ event }))),
    ).selectors;
    assert.equal(all.length, 5);
    assert.ok(!selected(all, 'claude', parseLine('plain text')));
    assert.ok(!selected(all, 'claude', claudeInit));
    assert.ok(!selected(all, 'claude', line([1, 2])));
  });

  it('claude rules: tool_use wins over text; tool_result; message text is the joined text blocks', () => {
    assert.ok(selected([{ event: 'tool_call', tool: 'Bash' }], 'claude', claudeToolUse));
    assert.ok(
      !selected([{ event: 'tool_call', tool: 'bash' }], 'claude', claudeToolUse),
      'tool matches exactly',
    );
    assert.ok(!selected([{ event: 'message' }], 'claude', claudeToolUse));
    assert.ok(selected([{ event: 'tool_result', contains: 'list' }], 'claude', claudeToolResult));
    assert.ok(selected([{ event: 'message', contains: 'hello world' }], 'claude', claudeText));
    assert.ok(!selected([{ event: 'message', contains: 'goodbye' }], 'claude', claudeText));
    assert.ok(selected([{ event: 'result', contains: 'all' }], 'claude', claudeResult));
    assert.ok(selected([{ event: 'usage' }], 'claude', claudeUsage));
  });

  it('codex rules', () => {
    const cmd = line({ type: 'item.completed', item: { type: 'command_execution', command: 'npm test' } });
    const mcp = line({ type: 'item.completed', item: { type: 'mcp_tool_call', tool: 'search' } });
    const msg = line({ type: 'item.completed', item: { type: 'agent_message', text: 'fixed it' } });
    const started = line({ type: 'item.started', item: { type: 'command_execution', command: 'npm test' } });
    assert.ok(selected([{ event: 'tool_call', contains: 'npm' }], 'codex', cmd));
    assert.ok(selected([{ event: 'tool_call', tool: 'search' }], 'codex', mcp));
    assert.ok(selected([{ event: 'message', contains: 'fixed' }], 'codex', msg));
    assert.ok(selected([{ event: 'usage' }], 'codex', line({ type: 'turn.completed' })));
    assert.ok(!selected([{ event: 'tool_call' }], 'codex', started));
    assert.ok(
      !selected([{ event: 'result' }], 'codex', claudeResult),
      'a claude result is unclassified for codex',
    );
  });

  it('gemini rules', () => {
    assert.ok(
      selected(
        [{ event: 'tool_call', tool: 'read_file' }],
        'gemini',
        line({ type: 'tool_use', tool_name: 'read_file' }),
      ),
    );
    assert.ok(
      selected(
        [{ event: 'message', contains: 'hi' }],
        'gemini',
        line({ type: 'message', role: 'assistant', content: 'hi there' }),
      ),
    );
    assert.ok(selected([{ event: 'result' }], 'gemini', line({ type: 'result', status: 'success' })));
    assert.ok(!selected([{ event: 'result' }], 'gemini', line({ type: 'init' })));
  });

  it('matches needs every set field', () => {
    const c = { event: 'tool_call' as const, tool: 'Bash', text: 'ls -la' };
    assert.ok(matches({ event: 'tool_call' }, c));
    assert.ok(matches({ event: 'tool_call', tool: 'Bash', contains: '-la' }, c));
    assert.ok(!matches({ event: 'tool_call', tool: 'Bash', contains: 'rm' }, c));
    assert.ok(!matches({ event: 'message', tool: 'Bash' }, c));
    assert.ok(!matches({ event: 'message', contains: 'x' }, { event: 'message' }));
  });
});
