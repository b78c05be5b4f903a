import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Builds dist/agent-controller.mjs unless it is newer than every file under src/, for the host tests that run it on
 * Deno (the unit tier runs before the e2e tier builds it). One test file at a time (flock on dist/.build.lock), and
 * the freshness is checked inside the lock, so a file never rebuilds the bundle another is running.
 */
export function ensureFreshBundle(): void {
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  const script = join(ROOT, 'test', 'support', 'build-if-stale.mjs');
  let r = spawnSync('flock', [join(ROOT, 'dist', '.build.lock'), process.execPath, script], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  // Without flock (util-linux), build unlocked.
  if (r.error !== undefined) r = spawnSync(process.execPath, [script], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, `npm run build failed:\n${r.stdout}\n${r.stderr}`);
}
