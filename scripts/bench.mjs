// `npm run bench -- [flags]`: builds the bundle, brings up the local control plane (scripts/testbed up) unless
// --kubeconfig is given, and runs bench/controller.bench.ts. `--no-build` skips the build. Flags: see --help.
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const help = args.includes('--help') || args.includes('-h');
const noBuild = args.includes('--no-build');
const benchArgs = args.filter((a) => a !== '--no-build');

if (!help && !noBuild) {
  const built = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}

if (!help && !benchArgs.some((a) => a === '--kubeconfig' || a.startsWith('--kubeconfig='))) {
  const up = spawnSync('bash', ['scripts/testbed', 'up'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (up.status !== 0) {
    console.error('bench: scripts/testbed up failed');
    process.exit(1);
  }
  const kubeconfig = String(up.stdout).trim().split('\n').at(-1);
  if (!kubeconfig) {
    console.error('bench: scripts/testbed up printed no kubeconfig path');
    process.exit(1);
  }
  benchArgs.push('--kubeconfig', kubeconfig);
}

const child = spawn(process.execPath, ['--import', 'tsx', 'bench/controller.bench.ts', ...benchArgs], {
  cwd: root,
  stdio: 'inherit',
});
// Ctrl-C reaches the benchmark too (same process group): it cleans up and exits; this wrapper just waits for it.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + 1 : 1)));
