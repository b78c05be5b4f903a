// helm for tests: the binary scripts/build-helm builds from helm's Go module (and caches), and `helm template`
// output parsed into objects.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Why helm tests cannot run here (no Go to build helm with), or false. */
export function helmSkipReason(): string | false {
  const go = spawnSync('go', ['version'], { stdio: 'ignore' });
  return go.error !== undefined || go.status !== 0
    ? 'Go is not on PATH: scripts/build-helm builds helm from its Go module (go >= 1.26)'
    : false;
}

/** Builds (or reuses) helm and returns the path of its binary. Needs Go on PATH. */
export function helmBinary(): string {
  const r = spawnSync('bash', [join(ROOT, 'scripts', 'build-helm')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`scripts/build-helm failed (exit ${r.status ?? r.signal})`);
  const bin = r.stdout.trim().split('\n').at(-1);
  if (!bin) throw new Error('scripts/build-helm printed no binary path');
  return bin;
}

export interface HelmResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs helm in the repository root with its own config and cache directories under `home`. */
export function runHelm(bin: string, args: readonly string[], home: string): HelmResult {
  const r = spawnSync(bin, args, {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
      // helm template must not reach a cluster: no kubeconfig.
      KUBECONFIG: join(home, 'no-kubeconfig'),
    },
  });
  if (r.error) throw r.error;
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

/** The objects of a YAML stream (`helm template` output), empty documents left out. */
export function parseManifests(text: string): Record<string, unknown>[] {
  return loadAll(text).filter(
    (d): d is Record<string, unknown> => typeof d === 'object' && d !== null && !Array.isArray(d),
  );
}
