// The init as it runs in a pod: the built bundle, as a process, on Node and on Deno. It must inject a runtime and
// the bundle into <home>/bin such that `<bin>/node <bin>/agent-controller.mjs supervisor -- …` works from a
// clean folder with no node_modules anywhere above it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DENO = join(REPO, 'node_modules', 'deno', 'deno');
const CLEAN_PATH = '/usr/local/bin:/usr/bin:/bin';

let root: string;
let bundle: string;

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(
  argv: readonly string[],
  env: Record<string, string>,
  cwd: string,
  timeoutMs = 60_000,
): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const [cmd, ...args] = argv;
    const child = spawn(cmd!, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${argv.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'init-bundle-'));
  assert.ok(
    !existsSync(join(tmpdir(), 'node_modules')),
    'a node_modules in the temp dir would hide missing deps',
  );
  const build = await run(
    [process.execPath, join(REPO, 'scripts', 'build.mjs')],
    { ...process.env } as Record<string, string>,
    REPO,
    120_000,
  );
  assert.equal(build.code, 0, build.stderr);
  bundle = join(root, 'agent-controller.mjs');
  copyFileSync(join(REPO, 'dist', 'agent-controller.mjs'), bundle);
});
after(() => rmSync(root, { recursive: true, force: true }));

for (const runtime of ['node', 'deno'] as const) {
  describe(`init bundle on ${runtime}`, () => {
    it('injects a supervisor that runs from a clean folder with no node_modules', async () => {
      const dir = join(root, runtime);
      const home = join(dir, 'home');
      const ws = join(dir, 'ws');
      mkdirSync(ws, { recursive: true });
      const launch = runtime === 'node' ? [process.execPath, bundle] : [DENO, 'run', '-A', bundle];
      const init = await run(
        [...launch, 'init'],
        {
          HOME: home,
          WORKSPACE_DIR: ws,
          PATH: CLEAN_PATH,
          AGENT_MODEL: 'exec',
          AGENT_SINKS: '[]',
          AGENT_REPOS: '[]',
          DENO_NO_UPDATE_CHECK: '1',
        },
        dir,
      );
      assert.equal(init.code, 0, init.stderr);
      const events = init.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { status: string }).status);
      assert.deepEqual(events.at(0), 'started');
      assert.deepEqual(events.at(-1), 'succeeded');

      const injected = readdirSync(join(home, 'bin')).sort();
      assert.deepEqual(
        injected,
        runtime === 'node' ? ['agent-controller.mjs', 'node'] : ['agent-controller.mjs', 'deno', 'node'],
      );
      assert.equal(statSync(join(home, 'bin', 'node')).mode & 0o777, 0o755);
      assert.equal(statSync(join(home, 'bin', 'agent-controller.mjs')).size, statSync(bundle).size);

      const clean = mkdtempSync(join(tmpdir(), `clean-${runtime}-`));
      try {
        for (const f of injected) copyFileSync(join(home, 'bin', f), join(clean, f));
        for (const f of injected) if (f !== 'agent-controller.mjs') chmodSync(join(clean, f), 0o755);
        const env = { PATH: CLEAN_PATH, HOME: clean, AGENT_SINKS: '[]' };
        const version = await run(
          [join(clean, 'node'), join(clean, 'agent-controller.mjs'), 'version', '--json'],
          env,
          clean,
        );
        assert.equal(version.code, 0, version.stderr);
        assert.match(version.stdout, runtime === 'node' ? /"runtime":"node v/ : /"runtime":"deno /);

        const sup = await run(
          [
            join(clean, 'node'),
            join(clean, 'agent-controller.mjs'),
            'supervisor',
            '--',
            'sh',
            '-c',
            'echo hi',
          ],
          env,
          clean,
        );
        assert.equal(sup.code, 0, sup.stderr);
        assert.ok(sup.stdout.split('\n').includes('hi'), sup.stdout);
      } finally {
        rmSync(clean, { recursive: true, force: true });
      }
    });
  });
}
