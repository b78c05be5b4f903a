import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fnv1a8, JOB_LABEL_SELECTOR, jobNameFor, MAX_NAME_LENGTH, safeName } from './names.ts';

describe('safeName', () => {
  const vectors: ReadonlyArray<readonly [string, string]> = [
    [
      'agent-job-an-extremely-long-agent-name-that-runs-well-past-the-sixty-three-char-limit',
      'agent-job-an-extremely-long-agent-name-that-runs-well-1a4440fa',
    ],
    [
      'an-extremely-long-agent-name-that-runs-well-past-the-sixty-three-char-limit',
      'an-extremely-long-agent-name-that-runs-well-past-the-s-7ae605e8',
    ],
    [`agent-job-${'a'.repeat(43)}.${'b'.repeat(20)}`, `agent-job-${'a'.repeat(43)}-ad13fdfa`],
    ['agent-job-bug-fixer-run-6ltzm', 'agent-job-bug-fixer-run-6ltzm'],
  ];
  for (const [input, want] of vectors) {
    it(`maps ${input.slice(0, 40)}… to the spec vector`, () => {
      const got = safeName(input);
      assert.equal(got, want);
      assert.ok(got.length <= MAX_NAME_LENGTH);
    });
  }

  it('keeps a name of exactly 63 characters and hashes one of 64', () => {
    assert.equal(safeName('x'.repeat(63)), 'x'.repeat(63));
    const long = safeName('x'.repeat(64));
    assert.equal(long.length, 63);
    assert.match(long, /^x{54}-[0-9a-f]{8}$/);
  });

  it('honours a custom max', () => {
    const got = safeName('abcdefghijklmnopqrstuvwxyz', 20);
    assert.equal(got.length, 20);
    assert.match(got, /^abcdefghijk-[0-9a-f]{8}$/);
  });

  it('is deterministic and distinguishes inputs that share the kept prefix', () => {
    const a = `${'p'.repeat(60)}-one`;
    const b = `${'p'.repeat(60)}-two`;
    assert.equal(safeName(a), safeName(a));
    assert.notEqual(safeName(a), safeName(b));
  });
});

describe('fnv1a8', () => {
  it('matches the published FNV-1a 64 vectors (low 32 bits)', () => {
    // FNV-1a 64 of "" = cbf29ce484222325, of "a" = af63dc4c8601ec8c, of "foobar" = 85944171f73967e8.
    assert.equal(fnv1a8(''), '84222325');
    assert.equal(fnv1a8('a'), '8601ec8c');
    assert.equal(fnv1a8('foobar'), 'f73967e8');
  });
});

describe('jobNameFor', () => {
  it('prefixes agent-job- and truncates long names', () => {
    assert.equal(jobNameFor('bug-fixer-run-6ltzm'), 'agent-job-bug-fixer-run-6ltzm');
    assert.equal(
      jobNameFor('an-extremely-long-agent-name-that-runs-well-past-the-sixty-three-char-limit'),
      'agent-job-an-extremely-long-agent-name-that-runs-well-1a4440fa',
    );
  });

  it('exposes the Job watch selector', () => {
    assert.equal(JOB_LABEL_SELECTOR, 'agents.re-cinq.com/component=job');
  });
});
