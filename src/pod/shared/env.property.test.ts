// Property tests of the pod env readers (issue 13 §2): whatever a variable holds, the readers never throw, return a
// value within their rule or the fallback, and report exactly one problem for a value present but unusable.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type EnvProblem, parseInteger, readInt, readOptionalPositiveInt, readString } from './env.ts';

const NAME = 'AGENT_SOMETHING';
const INTEGER_TEXT = /^[+-]?\d{1,16}$/;

const padding = fc.constantFrom('', ' ', '\t', '\n', ' \r\n');
/** Values a variable might hold: integers in every notation, near-integers and anything else. */
const value: fc.Arbitrary<string> = fc.oneof(
  fc.integer().map(String),
  fc.maxSafeInteger().map(String),
  fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
  fc.tuple(padding, fc.integer({ min: -1000, max: 1000 }), padding).map(([a, n, b]) => `${a}${n}${b}`),
  fc.constantFrom(
    '',
    ' ',
    '+5',
    '-0',
    '007',
    '1e3',
    '0x10',
    '1.5',
    '1_000',
    'NaN',
    'Infinity',
    '٣',
    '١٢',
    '9007199254740993',
  ),
  fc.string({ unit: 'binary', maxLength: 20 }),
);

describe('parseInteger (properties)', () => {
  it('accepts exactly the decimal integers of at most 16 digits that are safe, and reads them exactly', () => {
    fc.assert(
      fc.property(value, (text) => {
        const n = parseInteger(text);
        const trimmed = text.trim();
        if (n === undefined) {
          assert.ok(!INTEGER_TEXT.test(trimmed) || !Number.isSafeInteger(Number(trimmed)), text);
          return;
        }
        assert.ok(Number.isSafeInteger(n));
        assert.match(trimmed, INTEGER_TEXT);
        assert.equal(BigInt(n), BigInt(trimmed));
      }),
      { numRuns: 1000 },
    );
  });

  it('round-trips every safe integer (at most 16 digits), padded or not', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
        padding,
        (n, pad) => {
          assert.equal(parseInteger(`${pad}${n}${pad}`), n);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('readInt / readOptionalPositiveInt / readString (properties)', () => {
  const rule = fc.record({
    fallback: fc.integer({ min: -5, max: 100 }),
    min: fc.integer({ min: -5, max: 50 }),
    clampBelow: fc.option(fc.boolean(), { nil: undefined }),
  });

  it('readInt returns the value, the clamp or the fallback, with one problem exactly when a value is unusable', () => {
    fc.assert(
      fc.property(fc.option(value, { nil: undefined }), rule, (raw, r) => {
        const problems: EnvProblem[] = [];
        const ruleIn =
          r.clampBelow === undefined
            ? { fallback: r.fallback, min: r.min }
            : { ...r, clampBelow: r.clampBelow };
        const got = readInt({ [NAME]: raw }, NAME, ruleIn, problems);
        const parsed = raw === undefined ? undefined : parseInteger(raw);
        assert.ok(problems.length <= 1);
        for (const p of problems) assert.equal(p.name, NAME);
        if (raw === undefined || raw.trim() === '') {
          assert.equal(got, r.fallback);
          assert.equal(problems.length, 0);
        } else if (parsed === undefined) {
          assert.equal(got, r.fallback);
          assert.equal(problems.length, 1);
        } else if (parsed < r.min) {
          assert.equal(got, r.clampBelow === true ? r.min : r.fallback);
          assert.equal(problems.length, r.clampBelow === true ? 0 : 1);
        } else {
          assert.equal(got, parsed);
          assert.equal(problems.length, 0);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('readOptionalPositiveInt returns a positive safe integer or undefined, one problem for an unusable value', () => {
    fc.assert(
      fc.property(fc.option(value, { nil: undefined }), (raw) => {
        const problems: EnvProblem[] = [];
        const got = readOptionalPositiveInt({ [NAME]: raw }, NAME, problems);
        if (got !== undefined) {
          assert.ok(Number.isSafeInteger(got) && got > 0);
          assert.equal(got, parseInteger(raw ?? ''));
        }
        const blank = raw === undefined || raw.trim() === '';
        assert.equal(problems.length, !blank && got === undefined ? 1 : 0);
      }),
      { numRuns: 500 },
    );
  });

  it('readString returns the trimmed value, or empty when unset', () => {
    fc.assert(
      fc.property(fc.option(value, { nil: undefined }), (raw) => {
        assert.equal(readString({ [NAME]: raw }, NAME), (raw ?? '').trim());
      }),
      { numRuns: 300 },
    );
  });
});
