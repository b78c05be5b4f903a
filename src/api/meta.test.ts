import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgent } from './agent.ts';
import { parseList } from './meta.ts';
import { storedMeta } from './test-fixtures.ts';

const agent = (name: string, spec: unknown = { stationRef: 'st' }) => ({ metadata: storedMeta(name), spec });

describe('parseList', () => {
  it('keeps good items and reports bad ones by index and name', () => {
    const r = parseList(
      {
        kind: 'AgentList',
        metadata: { resourceVersion: '100', continue: 'tok' },
        items: [agent('a'), agent('b', { stationRef: 'st' }), { metadata: { name: 'poison' }, spec: 5 }, 7],
      },
      parseAgent,
    );
    assert.ok(r.ok);
    assert.deepEqual(
      r.value.items.map((a) => a.metadata.name),
      ['a', 'b'],
    );
    assert.equal(r.value.resourceVersion, '100');
    assert.equal(r.value.continue, 'tok');
    assert.equal(r.value.skipped.length, 2);
    assert.equal(r.value.skipped[0]?.index, 2);
    assert.equal(r.value.skipped[0]?.name, 'poison');
    assert.match(r.value.skipped[0]?.error ?? '', /^invalid Agent: /);
    assert.equal(r.value.skipped[1]?.index, 3);
    assert.equal(r.value.skipped[1]?.name, undefined);
  });

  it('treats an empty continue token and null items as the last, empty page', () => {
    const r = parseList({ metadata: { resourceVersion: '5', continue: '' }, items: null }, parseAgent);
    assert.ok(r.ok);
    assert.deepEqual(r.value.items, []);
    assert.equal('continue' in r.value, false);
    const m = parseList({ items: [] }, parseAgent);
    assert.ok(m.ok);
    assert.equal(m.value.resourceVersion, '');
  });

  it('rejects a body that is not a list', () => {
    const r = parseList({ items: 'nope' }, parseAgent, 'AgentList');
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /^invalid AgentList: items/);
    assert.equal(parseList('x', parseAgent).ok, false);
  });
});

describe('parse error messages', () => {
  it('cut a huge received value so the error stays one short line', () => {
    const r = parseAgent({
      metadata: storedMeta('a'),
      spec: { stationRef: 's' },
      status: { exitCode: 'x'.repeat(100_000) },
    });
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.match(r.error, /^invalid Agent: status\.exitCode: Invalid type/);
      assert.ok(r.error.length < 300, `length ${r.error.length}`);
      assert.equal(r.error.includes('\n'), false);
    }
  });

  it('name at most five issues and count the rest', () => {
    const r = parseAgent({
      metadata: {},
      spec: { stationRef: 1 },
    });
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /\(\d+ more\)$/);
  });
});
