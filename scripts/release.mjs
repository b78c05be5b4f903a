// `npm run release -- [--out DIR] [--image REPOSITORY] [--no-chart]`: builds the bundle, checks that the Helm chart
// matches deploy/ (gen:helm --check), then writes the release files (scripts/release/main.ts): the single-file
// agent-controller.mjs and its SHA-256, the Helm chart packaged when helm is available, and IMAGE.md with the image
// build instructions for Dockerfile.distroless. Prints each file it wrote.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);

function step(argv) {
  const r = spawnSync(process.execPath, argv, { cwd: root, stdio: 'inherit' });
  if (r.error) throw r.error;
  if (r.status !== 0) process.exit(r.status ?? 1);
}

if (!args.includes('--help') && !args.includes('-h')) {
  step(['scripts/build.mjs']);
  step(['scripts/gen-helm.mjs', '--check']);
}
step(['--import', 'tsx', 'scripts/release/main.ts', ...args]);
