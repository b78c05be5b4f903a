import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type EnvProblem, parseInteger, readInt, readOptionalPositiveInt, readString } from './env.ts';

describe('pod env parsing', () => {
  it('parses decimal integers only', () => {
    assert.equal(parseInteger('42'), 42);
    assert.equal(parseInteger(' -7 '), -7);
    assert.equal(parseInteger('+3'), 3);
    for (const bad of ['', '1.5', '1e3', '0x10', 'abc', '12k', '99999999999999999']) {
      assert.equal(parseInteger(bad), undefined, bad);
    }
  });

  it('readInt: unset and blank give the fallback silently', () => {
    const problems: EnvProblem[] = [];
    assert.equal(readInt({}, 'X', { fallback: 5, min: 1 }, problems), 5);
    assert.equal(readInt({ X: '  ' }, 'X', { fallback: 5, min: 1 }, problems), 5);
    assert.deepEqual(problems, []);
  });

  it('readInt: garbage and too-small values give the fallback and one problem each', () => {
    const problems: EnvProblem[] = [];
    assert.equal(readInt({ X: 'soon' }, 'X', { fallback: 5, min: 1 }, problems), 5);
    assert.equal(readInt({ X: '0' }, 'X', { fallback: 5, min: 1 }, problems), 5);
    assert.equal(problems.length, 2);
    assert.match(problems[0]?.message ?? '', /X must be an integer, got "soon"; using 5/);
    assert.match(problems[1]?.message ?? '', /X must be at least 1, got 0; using 5/);
  });

  it('readInt: clamps below min when asked, without a problem', () => {
    const problems: EnvProblem[] = [];
    assert.equal(readInt({ X: '-50' }, 'X', { fallback: 200, min: 0, clampBelow: true }, problems), 0);
    assert.equal(readInt({ X: '300' }, 'X', { fallback: 200, min: 0, clampBelow: true }, problems), 300);
    assert.deepEqual(problems, []);
  });

  it('readOptionalPositiveInt: none when unset, none plus a problem when not positive', () => {
    const problems: EnvProblem[] = [];
    assert.equal(readOptionalPositiveInt({}, 'D', problems), undefined);
    assert.equal(readOptionalPositiveInt({ D: '700' }, 'D', problems), 700);
    assert.equal(problems.length, 0);
    assert.equal(readOptionalPositiveInt({ D: '0' }, 'D', problems), undefined);
    assert.equal(readOptionalPositiveInt({ D: 'x' }, 'D', problems), undefined);
    assert.equal(problems.length, 2);
  });

  it('readString trims and defaults to empty', () => {
    assert.equal(readString({ A: ' v ' }, 'A'), 'v');
    assert.equal(readString({}, 'A'), '');
  });
});
