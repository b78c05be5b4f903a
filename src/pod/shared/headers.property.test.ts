// Property tests of the sink header lines parser (issue 13 §2): any text parses without throwing; every kept header
// is a valid HTTP field (token name, trimmed non-empty value without control characters); every non-blank line is
// either kept or counted as dropped; well-formed lines round-trip whatever the line endings and blank lines.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { headersFromSecretEnv, parseHeaderLines } from './headers.ts';

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

const hostileText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc
    .array(
      fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom(
          '\n',
          '\r\n',
          ':',
          ' : ',
          'X-Key',
          '\x00',
          '\x7f',
          '\t',
          '\r',
          'Authorization: Bearer a',
        ),
      ),
      { maxLength: 30 },
    )
    .map((parts) => parts.join('')),
);

const tokenName = fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}$/);
/** A header value as written: no line breaks or control characters, non-empty once trimmed. */
const headerValue = fc
  .string({ unit: 'binary', minLength: 1, maxLength: 30 })
  .map((v) => v.replace(/[\x00-\x1f\x7f\u2028\u2029\u0085]/g, '').trim())
  .filter((v) => v !== '' && !CONTROL.test(v));

describe('parseHeaderLines (properties)', () => {
  it('never throws; keeps only valid fields; accounts for every non-blank line', () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        const { headers, dropped } = parseHeaderLines(text);
        for (const [name, value] of headers) {
          assert.match(name, TOKEN);
          assert.notEqual(value, '');
          assert.equal(value, value.trim());
          assert.ok(!CONTROL.test(value), `control character in ${JSON.stringify(value)}`);
        }
        const nonBlank = text.split(/\r?\n/).filter((l) => l.trim() !== '').length;
        assert.equal(headers.length + dropped, nonBlank);
        assert.ok(Number.isInteger(dropped) && dropped >= 0);
      }),
      { numRuns: 1000 },
    );
  });

  it('well-formed lines round-trip, whatever the line endings, padding and blank lines', () => {
    const line = fc.record({
      name: tokenName,
      value: headerValue,
      pad: fc.constantFrom('', ' ', '\t'),
      eol: fc.constantFrom('\n', '\r\n'),
      blank: fc.constantFrom('', '\n', ' \n', '\r\n'),
    });
    fc.assert(
      fc.property(fc.array(line, { maxLength: 8 }), (lines) => {
        const text = lines
          .map((l) => `${l.blank}${l.pad}${l.name}${l.pad}:${l.pad}${l.value}${l.pad}${l.eol}`)
          .join('');
        const r = parseHeaderLines(text);
        assert.equal(r.dropped, 0);
        assert.deepEqual(
          r.headers,
          lines.map((l) => [l.name, l.value]),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('headersFromSecretEnv reads the named variable only, and nothing without a name', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 8 }), hostileText),
        fc.option(fc.string({ maxLength: 8 })),
        (env, name) => {
          const r = headersFromSecretEnv(env, name ?? undefined);
          if (!name) assert.deepEqual(r, { headers: [], dropped: 0 });
          else assert.deepEqual(r, parseHeaderLines(Object.hasOwn(env, name) ? (env[name] ?? '') : ''));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('regression: a secret name the env object inherits (constructor, toString, __proto__) gives no headers', () => {
    for (const env of [{}, process.env, { ...process.env }, Object.create(null) as Record<string, string>]) {
      for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
        assert.deepEqual(headersFromSecretEnv(env, name), { headers: [], dropped: 0 }, name);
      }
    }
  });
});
