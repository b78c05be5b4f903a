// Prometheus' promtool for tests: `$PROMTOOL` when set, else the one scripts/build-promtool builds from its Go module
// (and caches). `promtoolSkipReason()` says why the promtool tests cannot run here, if they cannot.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Why promtool cannot be had here (no `$PROMTOOL` and no Go to build it), or false. */
export function promtoolSkipReason(): string | false {
  if (process.env.PROMTOOL) return false;
  const go = spawnSync('go', ['version'], { stdio: 'ignore' });
  return go.error || go.status !== 0
    ? 'Go is required to build promtool (scripts/build-promtool), or set PROMTOOL to a promtool binary'
    : false;
}

/** `$PROMTOOL`, else builds (or reuses) promtool with scripts/build-promtool and returns its path. */
export function promtoolBinary(): string {
  if (process.env.PROMTOOL) return process.env.PROMTOOL;
  const r = spawnSync('bash', [join(ROOT, 'scripts', 'build-promtool')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`scripts/build-promtool failed (exit ${r.status ?? r.signal})`);
  const bin = r.stdout.trim().split('\n').at(-1);
  if (!bin) throw new Error('scripts/build-promtool printed no binary path');
  return bin;
}

/** What one promtool run printed and how it ended. */
export interface PromtoolResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `promtool args…` in `cwd` (default the repository root). */
export function runPromtool(bin: string, args: readonly string[], cwd = ROOT): PromtoolResult {
  const r = spawnSync(bin, args, { cwd, encoding: 'utf8', timeout: 120_000 });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
