import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') && name !== 'test-fixtures.ts' ? [path] : [];
  });
}

const FORBIDDEN: [RegExp, string][] = [
  [/from '(node:|[a-z@][^'.]*')/, 'a node built-in or npm package import'],
  [/from '\.\.\/\.\.\/(kube|runtime|effects|server|metrics|config|cmd|pod)\//, 'an import of an I/O layer'],
  [/from '\.\.\/(kube|runtime|effects|server|metrics|config|cmd|pod)\//, 'an import of an I/O layer'],
  [/\bDate\.now\(/, 'Date.now()'],
  [/\bnew Date\(\)/, 'new Date() (reads the clock)'],
  [/\bMath\.random\(/, 'Math.random()'],
  [/\bprocess\./, 'process'],
  [/\bfetch\(/, 'fetch'],
  [/\bsetTimeout\(|\bsetInterval\(/, 'timers'],
];

describe('reconcile core purity', () => {
  const files = sources(here);
  it('has source files to check', () => {
    assert.ok(files.length >= 10);
  });
  for (const file of files) {
    it(`${relative(here, file)} does no I/O and reads no clock or randomness`, () => {
      const text = readFileSync(file, 'utf8');
      for (const [pattern, what] of FORBIDDEN) {
        assert.doesNotMatch(text, pattern, `${relative(here, file)} uses ${what}`);
      }
    });
  }
});
