import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { definition } from '../test-fixtures.ts';
import { DEFAULT_PRICES } from './prices.ts';
import { type RunResultInput, runResultFields } from './run-result.ts';

const claudeLines = (result: string, usage = { input_tokens: 1000, output_tokens: 500 }, cost?: number) =>
  [
    JSON.stringify({ type: 'system', subtype: 'init', session_id: 's', model: 'claude-opus-5-5' }),
    JSON.stringify({
      type: 'result',
      subtype: 'success',
      is_error: false,
      result,
      usage,
      ...(cost !== undefined ? { total_cost_usd: cost } : {}),
    }),
  ].join('\n');

const base: RunResultInput = {
  definition: definition(),
  model: 'claude-opus-5-5',
  vendor: 'claude',
  report: undefined,
  output: '',
  batch: false,
  prices: DEFAULT_PRICES,
  maxResultBytes: 262144,
};

describe('runResultFields: what a finished run produced', () => {
  it('from the log tail: the final text, usage, and the price-table cost when the CLI names none', () => {
    const f = runResultFields({ ...base, output: claudeLines('done') });
    assert.equal(f.result, 'done');
    assert.deepEqual(f.tokenUsage, { input: 1000, output: 500, cacheRead: 0, cacheWrite: 0, total: 1500 });
    // 1000 × $4/MTok + 500 × $20/MTok.
    assert.deepEqual(f.costEstimate, { usd: '0.014', source: 'priceTable', model: 'claude-opus-5-5' });
    assert.equal(f.metricModel, 'claude-opus-5-5');
    const batch = runResultFields({ ...base, output: claudeLines('done'), batch: true });
    assert.equal(batch.costEstimate?.usd, '0.007', 'batch rate');
  });

  it("the CLI's own cost wins; the run report wins over the log; a cut report text is completed from the log", () => {
    const f = runResultFields({ ...base, output: claudeLines('done', undefined, 0.5) });
    assert.deepEqual(f.costEstimate, { usd: '0.5', source: 'cli', model: 'claude-opus-5-5' });
    const reported = runResultFields({
      ...base,
      output: claudeLines('from the log'),
      report: {
        result: 'from the report',
        usage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, total: 3 },
      },
    });
    assert.equal(reported.result, 'from the report');
    assert.equal(reported.tokenUsage?.total, 3);
    const cut = runResultFields({
      ...base,
      output: claudeLines('the whole answer'),
      report: { result: 'the who', resultTruncated: true },
    });
    assert.equal(cut.result, 'the whole answer');
  });

  it('no lines, no report: nothing but the metric label; an unpriced model gets usage but no estimate', () => {
    const f = runResultFields({ ...base, output: 'plain text\n' });
    assert.deepEqual(f, { metricModel: 'claude-opus-5-5' });
    const gpt = runResultFields({
      ...base,
      model: 'gpt-6-astra',
      vendor: 'codex',
      output: [
        JSON.stringify({ type: 'item.completed', item: { id: 'item_0', type: 'agent_message', text: 'ok' } }),
        JSON.stringify({
          type: 'turn.completed',
          usage: { input_tokens: 10, cached_input_tokens: 4, output_tokens: 2 },
        }),
      ].join('\n'),
    });
    assert.equal(gpt.result, 'ok');
    assert.deepEqual(gpt.tokenUsage, { input: 6, output: 2, cacheRead: 4, cacheWrite: 0, total: 12 });
    assert.equal(gpt.costEstimate, undefined);
    assert.equal(gpt.metricModel, 'other');
  });

  it('the answer as read, uncapped, and whether it is known to be cut (what the memory block is read from)', () => {
    const long = `${'a'.repeat(100)}<memory>m</memory>`;
    const f = runResultFields({ ...base, output: claudeLines(long), maxResultBytes: 10 });
    assert.equal(f.answer, long);
    assert.notEqual(f.result, long, 'status.result is capped');
    assert.equal(f.answerTruncated, undefined);
    const cut = runResultFields({ ...base, report: { result: 'the who', resultTruncated: true } });
    assert.equal(cut.answer, 'the who');
    assert.equal(cut.answerTruncated, true);
    const completed = runResultFields({
      ...base,
      output: claudeLines('the whole answer'),
      report: { result: 'the who', resultTruncated: true },
    });
    assert.equal(completed.answerTruncated, undefined, 'completed from the log');
  });

  describe('output.format json with output.schema', () => {
    const jsonDef = definition('def', {
      output: {
        format: 'json',
        schema: {
          type: 'object',
          required: ['verdict'],
          properties: { verdict: { enum: ['pass', 'fail'] } },
        },
      },
    });
    it('a matching answer becomes the parsed value (a code fence around it is fine)', () => {
      const f = runResultFields({
        ...base,
        definition: jsonDef,
        output: claudeLines('```json\n{"verdict":"pass"}\n```'),
      });
      assert.deepEqual(f.result, { verdict: 'pass' });
      assert.equal(f.schemaProblem, undefined);
    });
    it('a mismatch, non-JSON or a missing answer is a problem with the first error', () => {
      const rows: [string, string][] = [
        [
          claudeLines('{"verdict":"maybe"}'),
          'result does not match output.schema: $.verdict: "maybe" is not one of ["pass","fail"]',
        ],
        [claudeLines('{}'), 'result does not match output.schema: $: missing required property "verdict"'],
        ['', 'result does not match output.schema: the run produced no result'],
      ];
      for (const [output, problem] of rows) {
        assert.equal(runResultFields({ ...base, definition: jsonDef, output }).schemaProblem, problem);
      }
      const prose = runResultFields({
        ...base,
        definition: jsonDef,
        output: claudeLines('I think it passes'),
      });
      assert.match(prose.schemaProblem ?? '', /^result does not match output\.schema: not JSON \(/);
      assert.equal(prose.result, 'I think it passes', 'the text is kept for people to read');
    });
  });
});

describe('runResultFields: a JSON result stays within what a status can hold', () => {
  const jsonDef = definition('def', { output: { format: 'json', schema: {} } });
  const claude = (result: string) =>
    JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result });
  const input: RunResultInput = {
    definition: jsonDef,
    model: 'claude-opus-5-5',
    vendor: 'claude',
    report: undefined,
    output: '',
    batch: false,
    prices: DEFAULT_PRICES,
    maxResultBytes: 1000,
  };

  it('too deep or too large when serialised (numbers grow: 9e20 is 21 bytes written) is result_invalid', () => {
    const deep = `${'['.repeat(70)}1${']'.repeat(70)}`;
    assert.equal(
      runResultFields({ ...input, output: claude(deep) }).schemaProblem,
      'result does not match output.schema: the JSON value nests deeper than 64 levels',
    );
    const grows = `[${Array.from({ length: 60 }, () => '9e20').join(',')}]`;
    assert.ok(grows.length < 1000);
    assert.match(
      runResultFields({ ...input, output: claude(grows) }).schemaProblem ?? '',
      /the JSON value takes \d+ bytes, over the 1000-byte cap$/,
    );
    assert.deepEqual(runResultFields({ ...input, output: claude('[[1]]') }).result, [[1]]);
    // JSON nested far past any parser's comfort never throws here.
    const abyss = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    assert.match(
      runResultFields({ ...input, output: claude(abyss) }).schemaProblem ?? '',
      /deeper than 64|not JSON/,
    );
  });

  it("a batch run's cost field is not a measurement: batch runs are priced at the batch rate", () => {
    const lines = JSON.stringify({
      type: 'result',
      subtype: 'success',
      is_error: false,
      result: 'ok',
      total_cost_usd: 0,
      usage: { input_tokens: 1_000_000, output_tokens: 1_000_000 },
    });
    const f = runResultFields({ ...input, definition: definition(), output: lines, batch: true });
    assert.deepEqual(f.costEstimate, { usd: '12', source: 'priceTable', model: 'claude-opus-5-5' });
  });
});
