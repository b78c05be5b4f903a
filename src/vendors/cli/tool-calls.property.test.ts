// Property tests of the tool-call extractor (issue 13 §2): `toolCallEvents` takes any JSON value of any vendor
// without throwing; every event is well-formed (ids non-empty and bounded, names non-empty and at most
// MAX_TOOL_NAME characters); a Codex command never leaks past its program name; vendors without tool calls say none.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { VENDORS, type Vendor } from './route.ts';
import { MAX_TOOL_NAME, type ToolCallEvent, toolCallEvents } from './tool-calls.ts';

const vendor = fc.constantFrom<Vendor>(...VENDORS);
const anyText = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('', '   ', 'Bash', 'mcp__github__search'),
  fc.nat(600).map((n) => 'n'.repeat(n)),
  fc.nat(600).map((n) => ` ${'é'.repeat(n)} `),
);
const anyValue = fc.oneof(anyText, fc.jsonValue({ maxDepth: 2 }));

/** Lines shaped like each vendor's tool events, with random fields (and random extra content). */
const shaped: fc.Arbitrary<unknown> = fc.oneof(
  fc.record({
    type: fc.constantFrom('assistant', 'user', 'result'),
    message: fc.record(
      {
        content: fc.array(
          fc.oneof(
            fc.record(
              {
                type: fc.constantFrom('tool_use', 'tool_result', 'text'),
                id: anyValue,
                name: anyValue,
                tool_use_id: anyValue,
                is_error: anyValue,
              },
              { requiredKeys: ['type'] },
            ),
            fc.jsonValue({ maxDepth: 1 }),
          ),
          { maxLength: 4 },
        ),
      },
      { requiredKeys: [] },
    ),
  }),
  fc.record({
    type: fc.constantFrom('item.started', 'item.completed', 'item.updated'),
    item: fc.record(
      {
        id: anyValue,
        type: fc.constantFrom(
          'command_execution',
          'mcp_tool_call',
          'file_change',
          'web_search',
          'collab_tool_call',
          'agent_message',
        ),
        command: anyValue,
        tool: anyValue,
        server: anyValue,
        status: fc.oneof(fc.constantFrom('failed', 'completed'), anyValue),
        exit_code: fc.oneof(fc.integer({ min: -1, max: 2 }), anyValue),
      },
      { requiredKeys: [] },
    ),
  }),
  fc.record(
    {
      type: fc.constantFrom('tool_use', 'tool_result', 'message'),
      tool_id: anyValue,
      tool_name: anyValue,
      status: anyValue,
    },
    { requiredKeys: ['type'] },
  ),
  fc.jsonValue(),
  fc.anything(),
);

function checkEvent(e: ToolCallEvent): void {
  assert.ok(typeof e.id === 'string' && e.id !== '' && e.id.length <= 256, `id ${JSON.stringify(e.id)}`);
  if (e.kind === 'start') {
    assert.equal(typeof e.name, 'string');
    assert.ok(e.name.trim() !== '', 'names are never blank');
    assert.ok(e.name.length <= MAX_TOOL_NAME, `a name of ${e.name.length} characters`);
  } else {
    assert.equal(e.kind, 'end');
    assert.equal(typeof e.failed, 'boolean');
  }
}

describe('toolCallEvents (properties)', () => {
  it('never throws on any value of any vendor; every event is well-formed', () => {
    fc.assert(
      fc.property(vendor, shaped, (v, line) => {
        const events = toolCallEvents(v, line);
        assert.ok(Array.isArray(events));
        for (const e of events) checkEvent(e);
        if (v === 'opencode' || v === 'exec') assert.deepEqual(events, []);
        // Pure: the same line gives the same events.
        assert.deepEqual(toolCallEvents(v, line), events);
      }),
      { numRuns: 2000 },
    );
  });

  it('a Codex command is named by its program only: no whitespace, no folder, nothing past the first word', () => {
    const word = fc.stringMatching(/^[^\s]{1,12}$/);
    fc.assert(
      fc.property(
        fc.oneof(
          anyText,
          fc
            .tuple(fc.constantFrom('', ' ', '/usr/bin/', "'", '"'), word, fc.array(word, { maxLength: 4 }))
            .map(([pre, prog, args]) => [`${pre}${prog}`, ...args].join(' ')),
        ),
        (command) => {
          const events = toolCallEvents('codex', {
            type: 'item.started',
            item: { id: 'i', type: 'command_execution', command },
          });
          assert.equal(events.length, 1);
          const [e] = events;
          assert.ok(e?.kind === 'start');
          checkEvent(e);
          assert.doesNotMatch(e.name, /\s/, 'a program name holds no whitespace');
          assert.ok(!e.name.includes('/'), 'a program name holds no folder');
          const first = command.trim().split(/\s+/)[0] ?? '';
          assert.ok(
            e.name === 'command' || first.includes(e.name),
            `${JSON.stringify(e.name)} is not from ${JSON.stringify(first)}`,
          );
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('Claude: one start per tool_use block with a usable id, in order', () => {
    const block = fc.record({ id: anyValue, name: anyValue });
    fc.assert(
      fc.property(fc.array(block, { maxLength: 6 }), (blocks) => {
        const events = toolCallEvents('claude', {
          type: 'assistant',
          message: { content: blocks.map((b) => ({ type: 'tool_use', ...b })) },
        });
        const usable = blocks.filter((b) => typeof b.id === 'string' && b.id !== '' && b.id.length <= 256);
        assert.deepEqual(
          events.map((e) => e.id),
          usable.map((b) => b.id),
        );
        for (const e of events) checkEvent(e);
      }),
      { numRuns: 500 },
    );
  });
});
