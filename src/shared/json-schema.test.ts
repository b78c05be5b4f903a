import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateJson } from './json-schema.ts';

const schema = {
  type: 'object',
  required: ['verdict', 'files'],
  additionalProperties: false,
  properties: {
    verdict: { enum: ['pass', 'fail'] },
    score: { type: 'number', minimum: 0, maximum: 1 },
    files: { type: 'array', minItems: 1, items: { type: 'string', minLength: 5 } },
    note: { type: ['string', 'null'], maxLength: 5 },
  },
};

describe('validateJson (output.schema)', () => {
  it('accepts a matching value', () => {
    assert.equal(
      validateJson(schema, { verdict: 'pass', score: 0.5, files: ['src/a.ts'], note: null }),
      undefined,
    );
    assert.equal(validateJson(true, 42), undefined);
    assert.equal(validateJson({}, 'anything'), undefined);
  });

  it('answers the first problem with its path', () => {
    const rows: [unknown, string][] = [
      ['text', '$: expected object, got string'],
      [{ files: ['src/a'] }, '$: missing required property "verdict"'],
      [{ verdict: 'maybe', files: ['src/a'] }, '$.verdict: "maybe" is not one of ["pass","fail"]'],
      [{ verdict: 'pass', files: [] }, '$.files: fewer than 1 items'],
      [{ verdict: 'pass', files: ['a'] }, '$.files[0]: shorter than 5'],
      [{ verdict: 'pass', files: ['src/a'], score: 2 }, '$.score: more than 1'],
      [{ verdict: 'pass', files: ['src/a'], extra: 1 }, '$: property "extra" is not allowed'],
      [{ verdict: 'pass', files: ['src/a'], note: 'too long' }, '$.note: longer than 5'],
      [{ verdict: 'pass', files: ['src/a'], note: 3 }, '$.note: expected string or null, got integer'],
    ];
    for (const [value, problem] of rows)
      assert.equal(validateJson(schema, value), problem, JSON.stringify(value));
  });

  it('integer, anyOf, oneOf, not, const; $ref is refused rather than ignored', () => {
    assert.equal(validateJson({ type: 'integer' }, 1.5), '$: expected integer, got number');
    assert.equal(validateJson({ type: 'number' }, 2), undefined);
    assert.equal(
      validateJson({ anyOf: [{ type: 'string' }, { type: 'null' }] }, 1),
      '$: matches none of anyOf',
    );
    assert.equal(
      validateJson({ oneOf: [{ type: 'number' }, { type: 'integer' }] }, 1),
      '$: matches 2 of oneOf, not exactly one',
    );
    assert.equal(validateJson({ not: { type: 'string' } }, 'x'), '$: matches the schema under not');
    assert.equal(validateJson({ const: { a: [1] } }, { a: [1] }), undefined);
    assert.equal(validateJson({ $ref: '#/defs/x' }, 1), '$: $ref is not supported in output.schema');
    assert.equal(validateJson(false, 1), '$: no value is allowed here');
    // A regular expression over agent output could backtrack for hours: refused, never ignored.
    assert.equal(
      validateJson({ pattern: '^([a-z]+ ?)*$' }, 'x'),
      '$: pattern is not supported in output.schema',
    );
  });
});
