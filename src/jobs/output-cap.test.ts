import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { capOutput, MAX_OUTPUT_BYTES, truncationMarker } from './output-cap.ts';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('capOutput', () => {
  const cases: ReadonlyArray<readonly [string, number, string]> = [
    ['HEADHEADTAILTAIL', 8, '...[truncated 8 bytes]...\nTAILTAIL'],
    ['abécd', 3, '...[truncated 4 bytes]...\ncd'],
    ['short', 8, 'short'],
    ['exactly8', 8, 'exactly8'],
    ['', 8, ''],
    ['€€', 4, '...[truncated 3 bytes]...\n€'],
    ['a😀b', 2, '...[truncated 5 bytes]...\nb'],
    ['abc', 0, '...[truncated 3 bytes]...\n'],
  ];
  for (const [log, max, want] of cases) {
    it(`caps ${JSON.stringify(log)} at ${max} bytes`, () => {
      assert.equal(capOutput(log, max), want);
      assert.equal(capOutput(bytes(log), max), want);
    });
  }

  it('defaults to 256 KiB and keeps exactly the last MAX_OUTPUT_BYTES bytes of ASCII', () => {
    assert.equal(MAX_OUTPUT_BYTES, 262144);
    const log = `${'h'.repeat(1000)}${'t'.repeat(MAX_OUTPUT_BYTES)}`;
    assert.equal(capOutput(log), truncationMarker(1000) + 't'.repeat(MAX_OUTPUT_BYTES));
    const fits = 'x'.repeat(MAX_OUTPUT_BYTES);
    assert.equal(capOutput(fits), fits);
  });

  it('never splits a multi-byte character at a large cap', () => {
    const log = 'é'.repeat(MAX_OUTPUT_BYTES); // 2 bytes each
    const got = capOutput(log);
    const tail = got.slice(got.indexOf('\n') + 1);
    assert.equal(tail, 'é'.repeat(MAX_OUTPUT_BYTES / 2));
    assert.ok(got.startsWith(truncationMarker(MAX_OUTPUT_BYTES)));
  });
});
