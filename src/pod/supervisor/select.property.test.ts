// Property tests of `output.select` in the supervisor (issue 13 §2): `parseSelectors` reads any AGENT_SELECT text
// without throwing and keeps exactly the usable entries; `selected` is total, lets everything through without
// selectors, and a list of selectors accepts a line iff one of them does.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { SELECT_EVENTS, VENDORS, type Vendor } from '../../vendors/cli/index.ts';
import { type ParsedLine, parseLine } from '../shared/index.ts';
import { parseSelectors, type Selector, selected } from './select.ts';

const eventName = fc.oneof(
  fc.constantFrom(...SELECT_EVENTS),
  fc.constantFrom('tool_use', 'Message', '', 'usage '),
);
const optionalText = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.constant(''),
  fc.string({ maxLength: 8 }),
);
const entry: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      { event: eventName, tool: optionalText, contains: optionalText, role: fc.jsonValue() },
      { requiredKeys: ['event'] },
    ),
  },
  { weight: 1, arbitrary: fc.jsonValue() },
);
const selectText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.array(entry, { maxLength: 6 }).map((a) => JSON.stringify(a)) },
  { weight: 1, arbitrary: fc.json() },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc.array(entry, { maxLength: 6 }).map((a) => ` ${JSON.stringify(a).slice(0, -1)} `),
  },
);

/**
 * The selectors an entry must give (docs/design/reference-behaviour.md#event-selection), for entries built by
 * `entry`'s record branch.
 */
function expectedSelector(e: unknown): Selector | 'skip' | 'warn' {
  if (typeof e !== 'object' || e === null || Array.isArray(e)) return 'skip';
  const r = e as Record<string, unknown>;
  if (typeof r.event !== 'string') return 'skip';
  for (const k of ['tool', 'contains'] as const) {
    if (r[k] !== undefined && r[k] !== null && typeof r[k] !== 'string') return 'skip';
  }
  const known = SELECT_EVENTS.find((x) => x === r.event);
  if (known === undefined) return 'warn';
  return {
    event: known,
    ...(typeof r.tool === 'string' && r.tool !== '' ? { tool: r.tool } : {}),
    ...(typeof r.contains === 'string' && r.contains !== '' ? { contains: r.contains } : {}),
  };
}

describe('parseSelectors (properties)', () => {
  it('never throws; keeps exactly the usable entries, in order, and warns once per unknown event', () => {
    fc.assert(
      fc.property(fc.option(selectText, { nil: undefined }), (text) => {
        const { selectors, warnings } = parseSelectors(text);
        for (const s of selectors) {
          assert.ok((SELECT_EVENTS as readonly string[]).includes(s.event));
          if (s.tool !== undefined) assert.ok(typeof s.tool === 'string' && s.tool !== '');
          if (s.contains !== undefined) assert.ok(typeof s.contains === 'string' && s.contains !== '');
        }
        const raw = (text ?? '').trim();
        if (raw === '') {
          assert.deepEqual({ selectors, warnings }, { selectors: [], warnings: [] });
          return;
        }
        let json: unknown;
        try {
          json = JSON.parse(raw);
        } catch {
          assert.deepEqual(selectors, []);
          assert.equal(warnings.length, 1);
          return;
        }
        if (!Array.isArray(json)) {
          assert.deepEqual(selectors, []);
          assert.equal(warnings.length, 1);
          return;
        }
        const want = json.map(expectedSelector);
        assert.deepEqual(
          selectors,
          want.filter((w): w is Selector => typeof w === 'object'),
        );
        assert.equal(warnings.length, want.filter((w) => w === 'warn').length);
      }),
      { numRuns: 1000 },
    );
  });
});

// ------------------------------------------------------------------------------------------------ selected

const selector: fc.Arbitrary<Selector> = fc
  .record({
    event: fc.constantFrom(...SELECT_EVENTS),
    tool: fc.option(fc.constantFrom('Bash', 'Read', 'search'), { nil: undefined }),
    contains: fc.option(fc.constantFrom('a', 'done', 'ls', 'x'), { nil: undefined }),
  })
  .map((s) => ({
    event: s.event,
    ...(s.tool !== undefined ? { tool: s.tool } : {}),
    ...(s.contains !== undefined ? { contains: s.contains } : {}),
  }));
const textish = fc.oneof(
  fc.constantFrom('all done', 'ls -la', 'a', ''),
  fc.string({ maxLength: 6 }),
  fc.jsonValue(),
);
/** Agent lines of every vendor's shapes, with random fields, plus anything else. */
const agentLine: fc.Arbitrary<ParsedLine> = fc.oneof(
  fc
    .record({
      type: fc.constantFrom('assistant', 'user'),
      blocks: fc.array(
        fc.record(
          {
            type: fc.constantFrom('text', 'tool_use', 'tool_result', 'other'),
            text: textish,
            name: textish,
            content: textish,
          },
          { requiredKeys: ['type'] },
        ),
        { maxLength: 3 },
      ),
    })
    .map((r) => ({ json: true as const, value: { type: r.type, message: { content: r.blocks } } })),
  fc
    .record(
      {
        type: fc.constantFrom(
          'result',
          'system',
          'turn.completed',
          'item.completed',
          'message',
          'tool_use',
          'tool_result',
          'text',
          'step_finish',
          'done',
        ),
        result: textish,
        subtype: textish,
        content: textish,
        tool_name: textish,
        output: textish,
        item: fc.record({
          type: fc.constantFrom(
            'agent_message',
            'command_execution',
            'mcp_tool_call',
            'file_change',
            'web_search',
            'x',
          ),
          text: textish,
          command: textish,
          tool: textish,
        }),
        part: fc.record({ text: textish, tool: textish }),
      },
      { requiredKeys: ['type'] },
    )
    .map((value) => ({ json: true as const, value })),
  fc.jsonValue().map((value) => ({ json: true as const, value })),
  fc.string({ maxLength: 20 }).map(parseLine),
  fc.constant<ParsedLine>({ json: false }),
);
const vendor = fc.constantFrom<Vendor>(...VENDORS);

describe('selected (properties)', () => {
  it('is total; no selectors pass everything; a list accepts a line iff one of its selectors does', () => {
    fc.assert(
      fc.property(
        fc.array(selector, { maxLength: 4 }),
        fc.array(selector, { maxLength: 4 }),
        vendor,
        agentLine,
        (a, b, v, line) => {
          assert.equal(selected([], v, line), true);
          const both = selected([...a, ...b], v, line);
          if (a.length > 0 && b.length > 0) assert.equal(both, selected(a, v, line) || selected(b, v, line));
          if (a.length > 0 && !line.json) assert.equal(selected(a, v, line), false);
          // A selector only narrows: dropping its tool or contains never loses a line it accepted.
          for (const s of a) {
            if (!selected([s], v, line)) continue;
            assert.equal(selected([{ event: s.event }], v, line), true);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});
