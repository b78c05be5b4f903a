// `npm run release` after the build (scripts/release.mjs runs this): writes the release files and prints them.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, isAbsolute, join, relative } from 'node:path';
import { CHART_DIR } from '../helm/chart.ts';
import { loadBase, ROOT } from '../helm/kustomize.ts';
import { imageMarkdown, parseReleaseArgs, RELEASE_USAGE, sha256sumLine } from './release.ts';

function log(message: string): void {
  process.stderr.write(`release: ${message}\n`);
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function run(cmd: string, args: readonly string[]): { status: number; stdout: string } {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return { status: r.error !== undefined ? 127 : (r.status ?? 1), stdout: r.stdout ?? '' };
}

/** helm from $HELM, PATH, or scripts/build-helm (cached; built from its Go module when Go is there). */
function findHelm(): string | undefined {
  const fromEnv = process.env.HELM;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  if (run('helm', ['version', '--short']).status === 0) return 'helm';
  if (run('go', ['version']).status !== 0) return undefined;
  log('building helm with scripts/build-helm (cached; slow the first time)');
  const built = run('bash', ['scripts/build-helm']);
  return built.status === 0 ? built.stdout.trim().split('\n').at(-1) : undefined;
}

function gitCommit(): { sha: string; dirty: boolean } | undefined {
  const head = run('git', ['rev-parse', 'HEAD']);
  if (head.status !== 0) return undefined;
  const status = run('git', ['status', '--porcelain']);
  return { sha: head.stdout.trim(), dirty: status.stdout.trim() !== '' };
}

let opts: ReturnType<typeof parseReleaseArgs>;
try {
  opts = parseReleaseArgs(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`release: ${(error as Error).message}\n${RELEASE_USAGE}`);
  process.exit(2);
}
if (opts === 'help') {
  process.stdout.write(RELEASE_USAGE);
  process.exit(0);
}

const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const repository = opts.image ?? loadBase(join(ROOT, 'deploy')).images[0]?.name;
if (repository === undefined) {
  log('deploy/kustomization.yaml names no image; pass --image');
  process.exit(2);
}
const out = isAbsolute(opts.out) ? opts.out : join(ROOT, opts.out);
mkdirSync(out, { recursive: true });
// Only what an earlier release wrote here is replaced (a chart of another version included).
for (const name of readdirSync(out)) {
  if (/^(agent-controller\.mjs(\.sha256)?|agent-controller-.*\.tgz(\.sha256)?|IMAGE\.md)$/.test(name))
    rmSync(join(out, name));
}

const written: string[] = [];
const bundle = join(out, 'agent-controller.mjs');
copyFileSync(join(ROOT, 'dist', 'agent-controller.mjs'), bundle);
chmodSync(bundle, 0o755);
const bundleSha256 = sha256(bundle);
writeFileSync(`${bundle}.sha256`, sha256sumLine(bundleSha256, 'agent-controller.mjs'));
written.push(bundle, `${bundle}.sha256`);

let chartFile: string | undefined;
if (opts.chart) {
  const helm = findHelm();
  if (helm === undefined)
    log('no helm ($HELM, PATH, or Go for scripts/build-helm): the chart is not packaged');
  else {
    const packaged = run(helm, ['package', CHART_DIR, '--destination', out]);
    const name = `agent-controller-${version}.tgz`;
    if (packaged.status !== 0) {
      log('helm package failed');
      process.exit(1);
    }
    chartFile = name;
    const tgz = join(out, name);
    writeFileSync(`${tgz}.sha256`, sha256sumLine(sha256(tgz), name));
    written.push(tgz, `${tgz}.sha256`);
  }
}

const commit = gitCommit();
if (commit?.dirty)
  log('the working tree has uncommitted changes: publish a release built from a clean checkout');
writeFileSync(
  join(out, 'IMAGE.md'),
  imageMarkdown({
    version,
    repository,
    bundleSha256,
    ...(commit !== undefined ? { commit } : {}),
    ...(chartFile !== undefined ? { chartFile } : {}),
  }),
);
written.push(join(out, 'IMAGE.md'));

for (const file of written) {
  const shown = relative(ROOT, file).startsWith('..') ? file : relative(ROOT, file);
  const size = statSync(file).size;
  const sum = file.endsWith('.sha256') || file.endsWith('.md') ? '' : `  sha256:${sha256(file)}`;
  process.stdout.write(`${shown} (${size} bytes)${sum}\n`);
}
process.stdout.write(`agent-controller ${version}: ${written.length} files in ${basename(out)}/\n`);
