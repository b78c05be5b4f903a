import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { load } from 'js-yaml';
import { literalBlock, toYaml } from './yaml.ts';

describe('toYaml (-o yaml)', () => {
  it('prints an object in block style, sequences at their key indent, as kubectl does', () => {
    const obj = {
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'Agent',
      metadata: { name: 'hello', labels: { app: 'x' }, finalizers: ['a/b'] },
      spec: { stationRef: 'hello', parameters: {} },
      status: {
        phase: 'Succeeded',
        exitCode: 0,
        conditions: [{ type: 'Ready', status: 'True' }],
        batchFallback: false,
        empty: [],
        gone: undefined,
        nothing: null,
      },
    };
    assert.equal(
      toYaml(obj),
      [
        'apiVersion: agents.re-cinq.com/v1alpha1',
        'kind: Agent',
        'metadata:',
        '  name: hello',
        '  labels:',
        '    app: x',
        '  finalizers:',
        '  - a/b',
        'spec:',
        '  stationRef: hello',
        '  parameters: {}',
        'status:',
        '  phase: Succeeded',
        '  exitCode: 0',
        '  conditions:',
        '  - type: Ready',
        "    status: 'True'",
        '  batchFallback: false',
        '  empty: []',
        '  nothing: null',
        '',
      ].join('\n'),
    );
  });

  it('quotes strings that would read as something else', () => {
    assert.equal(
      toYaml({ a: 'true', b: '12', c: '', d: 'a: b', e: '2026-01-01T00:00:00Z', f: 'x\ty' }),
      ["a: 'true'", "b: '12'", "c: ''", "d: 'a: b'", "e: '2026-01-01T00:00:00Z'", 'f: "x\\ty"', ''].join(
        '\n',
      ),
    );
  });

  it('prints multi-line strings as literal blocks, with the right chomping', () => {
    assert.equal(toYaml({ out: 'line 1\nline 2\n' }), 'out: |\n  line 1\n  line 2\n');
    assert.equal(toYaml({ out: 'line 1\nline 2' }), 'out: |-\n  line 1\n  line 2\n');
    assert.equal(toYaml({ out: 'a\n\nb\n\n\n' }), 'out: |+\n  a\n\n  b\n\n\n');
    assert.equal(toYaml({ out: '  indented\nnext\n' }), 'out: |2\n    indented\n  next\n');
    assert.equal(toYaml(['x\ny']), '- |-\n  x\n  y\n');
    assert.equal(toYaml('top\nlevel\n'), '|\n  top\n  level\n');
  });

  it('quotes multi-line strings a literal block cannot hold', () => {
    assert.equal(toYaml({ a: 'bell\x07\nx' }), 'a: "bell\\u0007\\nx"\n');
    assert.equal(toYaml({ a: 'cr\r\nlf' }), 'a: "cr\\r\\nlf"\n');
    assert.equal(toYaml({ a: '\n\n' }), 'a: "\\n\\n"\n');
    assert.equal(literalBlock('one line', 2), undefined);
  });

  it('nests sequences of mappings and of sequences', () => {
    assert.equal(
      toYaml({ items: [{ a: 1, b: [1, 2] }, [3, 4]] }),
      ['items:', '- a: 1', '  b:', '  - 1', '  - 2', '- - 3', '  - 4', ''].join('\n'),
    );
  });

  it('prints scalars and empty containers at the top', () => {
    assert.equal(toYaml(null), 'null\n');
    assert.equal(toYaml(3.5), '3.5\n');
    assert.equal(toYaml(-0), '0\n');
    assert.equal(toYaml({}), '{}\n');
    assert.equal(toYaml([]), '[]\n');
    assert.equal(toYaml({ a: undefined }), '{}\n');
  });

  it('refuses what JSON cannot hold', () => {
    assert.throws(() => toYaml({ a: Number.NaN }), /non-finite number at a/);
    assert.throws(() => toYaml({ a: [new Date(0)] }), /unsupported object at a\[0\]/);
    assert.throws(() => toYaml({ f: () => 1 }), /unsupported function at f/);
  });

  it('reads back as the same value, for any JSON value (js-yaml)', () => {
    const json = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
    const texty = fc.oneof(
      fc.string({
        unit: fc.constantFrom('a', ' ', '\n', '\t', '#', ':', '-', "'", '"', '|', 'é', '\r', '\x07'),
      }),
      fc.string(),
    );
    const value = fc
      .oneof(
        json,
        fc.dictionary(fc.string(), texty),
        fc.array(texty),
        fc.record({ nested: fc.array(fc.dictionary(texty, fc.oneof(texty, json))) }),
      )
      .map((v) => JSON.parse(JSON.stringify(v)) as unknown);
    fc.assert(
      fc.property(value, (v) => {
        assert.deepEqual(load(toYaml(v)), v);
      }),
      { numRuns: 600 },
    );
  });

  it('numbers written with an exponent read as numbers in YAML 1.1 and 1.2', () => {
    // YAML 1.1's float: a fraction point is required, the exponent signed.
    const yaml11Float = /^[-+]?([0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)?$/;
    for (const n of [1e21, 1.5e21, -2e300, 1e-7, 5e-324, Number.MAX_VALUE]) {
      const text = toYaml({ v: n }).trim().replace(/^v: /, '');
      assert.match(text, yaml11Float, `${n} as ${text}`);
      assert.equal((load(`v: ${text}`) as { v: number }).v, n);
    }
    assert.equal(toYaml({ v: 1e20 }).trim(), 'v: 100000000000000000000');
    assert.equal(toYaml({ v: 0.5 }).trim(), 'v: 0.5');
  });
});
