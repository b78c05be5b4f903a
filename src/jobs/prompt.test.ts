import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderPrompt } from './prompt.ts';

describe('renderPrompt', () => {
  const cases: ReadonlyArray<readonly [string, Record<string, string> | undefined, string]> = [
    ['Fix {ticket} in {repo}', { ticket: 'ABC-1' }, 'Fix ABC-1 in {repo}'],
    ['{{x}}', { x: '1' }, '{1}'],
    ['{a}', { a: '{b}', b: '2' }, '{b}'],
    ['{} {a b} {open', { a: 'x', b: 'y', open: 'z' }, '{} {a b} {open'],
    ['{v1.2_x-y}', { 'v1.2_x-y': 'ok' }, 'ok'],
    ['', { a: 'x' }, ''],
    ['no tokens here', { a: 'x' }, 'no tokens here'],
    ['{a}{a}-{b}', { a: '1', b: '' }, '11-'],
    ['{a}', undefined, '{a}'],
    ['{a}', {}, '{a}'],
    ['{constructor} {toString}', {}, '{constructor} {toString}'],
    ['{ a}', { a: 'x', ' a': 'y' }, '{ a}'],
    ['{é}', { é: 'x' }, '{é}'],
    ['$& {a}', { a: '$&$1' }, '$& $&$1'],
  ];
  for (const [template, parameters, want] of cases) {
    it(`renders ${JSON.stringify(template)} with ${JSON.stringify(parameters)}`, () => {
      assert.equal(renderPrompt(template, parameters), want);
    });
  }
});
