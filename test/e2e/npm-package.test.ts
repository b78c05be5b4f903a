// The npm package as a user installs it (issue 11 §4): `npm pack` of the repository (the built bundle, deploy/, the
// changelog) installed with `npm i -g` into a prefix of its own, offline (the bundle needs no dependency). The
// installed `agent-controller`, `kubectl-agent` and `kubectl_complete-agent` run; kubectl would find the plugin on
// PATH. Node pass only: it checks packaging, not a JavaScript runtime. Needs the bundle (`npm run build`, which the
// e2e tier runs first).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { BUNDLE_PATH } from '../support/index.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const skip =
  process.env.AGENT_E2E_RUNTIME === 'deno'
    ? 'the package does not depend on the JavaScript runtime; it runs in the node pass only'
    : !existsSync(BUNDLE_PATH)
      ? `${BUNDLE_PATH} is missing: run \`npm run build\``
      : false;
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

describe('npm package: npm i -g installs the command line and the kubectl plugin', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'npm-package-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    npm_config_cache: join(dir, 'cache'),
    npm_config_update_notifier: 'false',
  };

  it('packs the bundle and deploy/, installs offline with no dependency, and the three commands run', () => {
    // --ignore-scripts: the bundle the e2e tier built is packed as it is (prepack would build it again).
    const pack = spawnSync(NPM, ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
      cwd: ROOT,
      encoding: 'utf8',
      env,
    });
    assert.equal(pack.status, 0, pack.stderr);
    const [info] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
    assert.ok(info !== undefined);
    const files = info.files.map((f) => f.path);
    for (const want of [
      'dist/agent-controller.mjs',
      'package.json',
      'deploy/kustomization.yaml',
      'CHANGELOG.md',
    ])
      assert.ok(files.includes(want), `${want} is packed`);
    assert.ok(
      files.some((f) => f.startsWith('charts/agent-controller/')),
      'the chart is packed',
    );
    assert.ok(!files.some((f) => f.startsWith('src/') || f.startsWith('test/')), 'no sources or tests');
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(
      manifest.dependencies,
      undefined,
      'the bundle carries its libraries: nothing to install with it',
    );

    const prefix = join(dir, 'prefix');
    const install = spawnSync(
      NPM,
      ['install', '-g', '--offline', '--prefix', prefix, join(dir, info.filename)],
      {
        encoding: 'utf8',
        env,
      },
    );
    assert.equal(install.status, 0, install.stderr);
    const bin = (name: string) => join(prefix, 'bin', name);
    const run = (name: string, args: string[]) =>
      spawnSync(bin(name), args, {
        encoding: 'utf8',
        env: { ...env, PATH: `${join(prefix, 'bin')}:${env.PATH ?? ''}` },
      });

    const version = run('agent-controller', ['version']);
    assert.equal(version.status, 0, version.stderr);
    assert.match(version.stdout, /^agent-controller \d+\.\d+\.\d+/);
    const plugin = run('kubectl-agent', ['version']);
    assert.equal(plugin.status, 0, plugin.stderr);
    assert.equal(plugin.stdout, version.stdout);
    // As kubectl's plugin without arguments it is the command line: its help, not the controller.
    const help = run('kubectl-agent', []);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage: kubectl agent <command>/);
    // kubectl's completion of plugins runs kubectl_complete-agent with the words typed so far.
    const complete = run('kubectl_complete-agent', ['completion', '']);
    assert.equal(complete.status, 0, complete.stderr);
    assert.match(complete.stdout, /^bash\nzsh\nfish\n:\d+\n$/);
  });
});
