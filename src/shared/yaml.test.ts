import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { toYaml, yamlString } from './yaml.ts';

// An independent YAML parser for round trips: js-yaml (YAML 1.2), already installed as a dependency of
// @kubernetes/client-node. YAML 1.1 words (yes/no/on/off) are checked separately because 1.2 reads them as
// strings.
let load: (text: string) => unknown;
before(async () => {
  const specifier = 'js-yaml';
  const mod = (await import(specifier)) as { load: (text: string) => unknown };
  load = (text) => mod.load(text);
});

const TRICKY = [
  '',
  ' ',
  'yes',
  'No',
  'ON',
  'off',
  'y',
  'N',
  'true',
  'False',
  'null',
  'Null',
  '~',
  ':',
  'a: b',
  'key:',
  '# comment',
  'a #b',
  'a#b',
  ' leading',
  'trailing ',
  '123',
  '0123',
  '1.5',
  '-1',
  '+1',
  '0x1F',
  '0o17',
  '1e3',
  '.inf',
  '-.Inf',
  '.NaN',
  '1_000',
  '1:20',
  '2001-12-14',
  '2001-12-14T21:59:43.10-05:00',
  "it's",
  '"quoted"',
  'back\\slash',
  'multi\nline',
  'tab\there',
  'bell\u0007',
  'del\u007f',
  'nbsp\u00a0x',
  'ümlaut é',
  '— dash',
  '{x}',
  '[a]',
  '- item',
  '-',
  '? q',
  '@at',
  '`tick`',
  '%pct',
  '!tag',
  '&anchor',
  '*alias',
  '|literal',
  '>folded',
  '<<',
  '=',
  'a,b',
  'http://example.com/a?b=c',
  '.status.phase',
  '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  '\u2028sep',
  '\ufeffbom',
];

describe('yamlString', () => {
  it('round-trips tricky strings through an independent parser', () => {
    for (const s of TRICKY) {
      const doc = `k: ${yamlString(s)}\n`;
      assert.deepEqual(load(doc), { k: s }, `string ${JSON.stringify(s)} emitted as ${yamlString(s)}`);
      assert.deepEqual(load(`- ${yamlString(s)}\n`), [s], `in a sequence: ${JSON.stringify(s)}`);
      assert.deepEqual(load(`${yamlString(s)}: 1\n`), { [s]: 1 }, `as a key: ${JSON.stringify(s)}`);
    }
  });

  it('quotes every YAML 1.1 boolean and null word, any case', () => {
    for (const w of [
      'y',
      'Y',
      'yes',
      'Yes',
      'YES',
      'n',
      'no',
      'NO',
      'on',
      'On',
      'off',
      'OFF',
      'true',
      'false',
    ]) {
      assert.equal(yamlString(w), `'${w}'`);
    }
    for (const w of ['null', 'NULL', '~']) assert.equal(yamlString(w), `'${w}'`);
  });

  it('quotes numbers-as-strings, leading/trailing spaces, indicators and comments', () => {
    for (const s of [
      '123',
      '1.5',
      '-1',
      '.inf',
      '1:20',
      '2001-12-14',
      ' x',
      'x ',
      'a: b',
      'a #b',
      '#x',
      '-',
      '@x',
      '<<',
    ])
      assert.ok(yamlString(s).startsWith("'"), `${JSON.stringify(s)} → ${yamlString(s)}`);
    assert.equal(yamlString("it's: x"), "'it''s: x'");
  });

  it('double-quotes control characters and line breaks with escapes', () => {
    assert.equal(yamlString('a\nb'), '"a\\nb"');
    assert.equal(yamlString('a\tb"c\\'), '"a\\tb\\"c\\\\"');
    assert.equal(yamlString('\u0007'), '"\\u0007"');
  });

  it('leaves ordinary words, names, paths and simple sentences plain', () => {
    for (const s of [
      'Agent',
      'agents.re-cinq.com',
      'x-kubernetes-preserve-unknown-fields',
      'date-time',
      'a/b',
      'Run deadline in minutes; becomes the Job activeDeadlineSeconds.',
      'http://x:80/y',
    ])
      assert.equal(yamlString(s), s);
  });
});

describe('toYaml', () => {
  it('emits a fixed layout', () => {
    const text = toYaml({
      kind: 'X',
      num: 3,
      f: -1.5,
      t: true,
      z: null,
      skipped: undefined,
      empty: {},
      none: [],
      list: ['a', { k: 1, m: { deep: 'yes' } }, ['n1', 'n2']],
      obj: { inner: [{ a: 1 }], s: 'on' },
    });
    assert.equal(
      text,
      [
        'kind: X',
        'num: 3',
        'f: -1.5',
        't: true',
        'z: null',
        'empty: {}',
        'none: []',
        'list:',
        '- a',
        '- k: 1',
        '  m:',
        "    deep: 'yes'",
        '- - n1',
        '  - n2',
        'obj:',
        '  inner:',
        '  - a: 1',
        "  s: 'on'",
        '',
      ].join('\n'),
    );
  });

  it('round-trips nested JSON values', () => {
    const value = {
      apiVersion: 'v1',
      items: [
        { name: 'a', tags: ['x', 'yes', '1'], meta: { n: 0, neg: -2, big: 1e21, small: 1.25e-7 } },
        { name: '', nested: [[], [{}], [[1, 2]]] },
      ],
      map: { 'key with space': 'v', 'x:y': 'w', '123': 'num-key', '': 'empty-key' },
      desc: 'A sentence: with a colon, a #hash and a {brace}.',
    };
    assert.deepEqual(load(toYaml(value)), value);
  });

  it('emits scalar and empty documents', () => {
    assert.equal(toYaml('yes'), "'yes'\n");
    assert.equal(toYaml(7), '7\n');
    assert.equal(toYaml({}), '{}\n');
    assert.equal(toYaml([]), '[]\n');
    assert.equal(toYaml({ a: undefined }), '{}\n');
  });

  it('refuses what JSON cannot represent', () => {
    assert.throws(() => toYaml({ a: Number.NaN }), /non-finite number at a/);
    assert.throws(() => toYaml({ a: [1, undefined] }), /undefined array item at a\[1\]/);
    assert.throws(() => toYaml({ d: new Date(0) }), /unsupported object at d/);
    assert.throws(() => toYaml({ f: () => 1 }), /unsupported function at f/);
  });

  it('is deterministic: keys in insertion order, the same text for an equal value', () => {
    const v = { b: 1, a: [{ y: 2, x: 1 }] };
    // (`y` is quoted: YAML 1.1 reads it as a boolean.)
    const expected = "b: 1\na:\n- 'y': 2\n  x: 1\n";
    assert.equal(toYaml(v), expected);
    assert.equal(toYaml(structuredClone(v)), expected);
    assert.equal(toYaml(v), expected, 'a second call');
  });
});
