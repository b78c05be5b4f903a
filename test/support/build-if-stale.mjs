// Builds dist/agent-controller.mjs (scripts/build.mjs) unless it is newer than every file under src/. Run under a
// lock by ensureFreshBundle (test/support/bundle.ts), so test files never build it at once nor over one another.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bundle = join(root, 'dist', 'agent-controller.mjs');

function newest(dir) {
  let max = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    max = Math.max(max, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return max;
}

if (!existsSync(bundle) || statSync(bundle).mtimeMs <= newest(join(root, 'src'))) {
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], {
    cwd: root,
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}
