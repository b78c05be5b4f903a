import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as v from 'valibot';
import { buildCrd } from '../api/crd/index.ts';
import { UsageError } from './command.ts';
import {
  AGENTS_KIND,
  checkName,
  KINDS,
  kindOf,
  kindWords,
  parseTargets,
  qualifiedName,
  validatedSchema,
} from './kinds.ts';
import { rawAgent } from './test-fixtures.ts';

describe('kinds', () => {
  it('every word of a kind names it, case-insensitively', () => {
    for (const [word, name] of <[string, string][]>[
      ['agents', 'agents'],
      ['Agent', 'agents'],
      ['agt', 'agents'],
      ['agents.agents.re-cinq.com', 'agents'],
      ['stn', 'stations'],
      ['station', 'stations'],
      ['ad', 'definitions'],
      ['agentdef', 'definitions'],
      ['AgentDefinitions', 'definitions'],
      ['defs', 'definitions'],
    ])
      assert.equal(kindOf(word)?.name, name, word);
    assert.equal(kindOf('pods'), undefined);
    assert.equal(new Set(kindWords()).size, kindWords().length, 'no word names two kinds');
  });

  it("the columns are the CRDs' own printer columns", () => {
    for (const k of KINDS)
      assert.deepEqual(k.columns, buildCrd(k.kind).spec.versions[0]?.additionalPrinterColumns, k.name);
    assert.equal(AGENTS_KIND.resource.plural, 'agents');
    assert.equal(qualifiedName(AGENTS_KIND, 'x'), 'agent.agents.re-cinq.com/x');
  });

  it('validatedSchema keeps the object as sent, and refuses what the parser refuses', () => {
    const raw = rawAgent('a', { phase: 'Running' });
    const ok = v.safeParse(validatedSchema(AGENTS_KIND), raw);
    assert.ok(ok.success);
    if (ok.success) assert.deepEqual(ok.output, raw, 'managedFields and every field kept');
    const bad = v.safeParse(validatedSchema(AGENTS_KIND), { ...raw, spec: {} });
    assert.ok(!bad.success);
    if (!bad.success) assert.match(bad.issues[0]?.message ?? '', /stationRef/);
  });

  it('checkName refuses what would address another path: empty, ., .., / and %', () => {
    assert.equal(checkName('hello-x7k2p'), 'hello-x7k2p');
    for (const bad of ['', '.', '..', 'a/b', '%2e%2e', 'x%'])
      assert.throws(() => checkName(bad), UsageError, JSON.stringify(bad));
    assert.throws(() => checkName('', '--name'), /^UsageError: --name must not be empty$/);
  });

  it('parseTargets reads [KIND] NAME... and KIND/NAME...', () => {
    assert.deepEqual(parseTargets([]), { kind: undefined, names: [] });
    assert.deepEqual(parseTargets(['a', 'b']), { kind: undefined, names: ['a', 'b'] });
    assert.equal(parseTargets(['stations']).kind?.name, 'stations');
    const slashed = parseTargets(['agent/a', 'agent.agents.re-cinq.com/b']);
    assert.deepEqual([slashed.kind?.name, slashed.names], ['agents', ['a', 'b']]);
    assert.throws(() => parseTargets(['a', 'agent/b']), /give every name as KIND\/NAME/);
    assert.throws(() => parseTargets(['agent/a/b']), /not a valid name/);
    assert.throws(() => parseTargets(['agents', '']), /must not be empty/);
  });
});
