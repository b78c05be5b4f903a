// Property tests of prompt templating (issue 13 §2): `renderPrompt` never throws, agrees with an independent
// left-to-right scanner of the documented rule (one pass of `{name}`, name chars `[A-Za-z0-9_.-]`), never re-scans a
// substituted value (a value holding `{other}` stays literal), and leaves unknown tokens verbatim.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { renderPrompt } from './prompt.ts';

const NAME_CHAR = /[A-Za-z0-9_.-]/;

/** The documented rule, as a hand-written scanner (no regular expression over the template). */
function reference(template: string, parameters: Readonly<Record<string, string>> | undefined): string {
  if (parameters === undefined) return template;
  let out = '';
  let i = 0;
  while (i < template.length) {
    const c = template[i] as string;
    if (c !== '{') {
      out += c;
      i++;
      continue;
    }
    let j = i + 1;
    while (j < template.length && NAME_CHAR.test(template[j] as string)) j++;
    const name = template.slice(i + 1, j);
    if (j < template.length && template[j] === '}' && name !== '') {
      out += Object.hasOwn(parameters, name) ? parameters[name] : template.slice(i, j + 1);
      i = j + 1;
    } else {
      out += '{';
      i++;
    }
  }
  return out;
}

const names = [
  'thing',
  'a',
  'b.c',
  'x-y',
  '_',
  '0',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
];
const name = fc.oneof(fc.constantFrom(...names), fc.stringMatching(/^[A-Za-z0-9_.-]{1,6}$/));
const templatePiece = fc.oneof(
  name.map((n) => `{${n}}`),
  fc.constantFrom(
    '{',
    '}',
    '{}',
    '{a b}',
    '{{thing}}',
    '{thing',
    'thing}',
    '{é}',
    ' ',
    '\n',
    '$&',
    '$1',
    "$'",
  ),
  fc.string({ unit: 'binary', maxLength: 8 }),
);
const template = fc.array(templatePiece, { maxLength: 12 }).map((p) => p.join(''));
const value = fc.oneof(
  name.map((n) => `{${n}}`),
  fc.constantFrom('', '$&', '$1', "$'", '$$', '{', '}', '{{a}}'),
  fc.string({ unit: 'binary', maxLength: 10 }),
);
/** Parameters as an Agent's spec carries them: own string values (prototype names included). */
const parameters = fc
  .array(fc.tuple(name, value), { maxLength: 6 })
  .map((entries) => Object.fromEntries(entries) as Record<string, string>);

describe('renderPrompt (properties)', () => {
  it('never throws and agrees with the reference scanner', () => {
    fc.assert(
      fc.property(template, fc.option(parameters, { nil: undefined }), (t, p) => {
        assert.equal(renderPrompt(t, p), reference(t, p));
      }),
      { numRuns: 2000 },
    );
  });

  it('never re-scans a substituted value: a value holding {other} stays literal', () => {
    fc.assert(
      fc.property(name, name, value, (a, b, other) => {
        fc.pre(a !== b);
        const p = { [a]: `<{${b}}>`, [b]: other };
        assert.equal(renderPrompt(`{${a}}`, p), `<{${b}}>`);
        assert.equal(renderPrompt(`{${a}}{${b}}`, p), `<{${b}}>${other}`);
      }),
      { numRuns: 500 },
    );
  });

  it('leaves every token verbatim when no parameter is known', () => {
    fc.assert(
      fc.property(template, (t) => {
        assert.equal(renderPrompt(t, {}), t);
        assert.equal(renderPrompt(t, undefined), t);
      }),
      { numRuns: 500 },
    );
  });

  it('substitution is per token: rendering a concatenation of tokens renders each', () => {
    fc.assert(
      fc.property(
        fc.array(
          name.map((n) => `{${n}}`),
          { maxLength: 8 },
        ),
        parameters,
        (tokens, p) => {
          assert.equal(renderPrompt(tokens.join(''), p), tokens.map((t) => renderPrompt(t, p)).join(''));
        },
      ),
      { numRuns: 500 },
    );
  });
});
