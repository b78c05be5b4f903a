// The one-file bundle (dist/agent-controller.mjs, built by the test script before e2e) runs unchanged on
// Node and on Deno: `version` names the runtime, every subcommand has --help, and usage mistakes exit 2
// with exactly one line on stderr. Runs the runtime named by AGENT_E2E_RUNTIME (both when unset).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BUNDLE = join(ROOT, 'dist', 'agent-controller.mjs');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');

interface Runtime {
  readonly name: 'node' | 'deno';
  readonly argv: readonly string[];
  readonly versionPattern: RegExp;
}

const RUNTIMES: readonly Runtime[] = [
  { name: 'node', argv: [process.execPath, BUNDLE], versionPattern: /\(node v\d+\.\d+\.\d+\)$/ },
  { name: 'deno', argv: [DENO, 'run', '-A', BUNDLE], versionPattern: /\(deno 2\.\d+\.\d+\)$/ },
];

const wanted = process.env.AGENT_E2E_RUNTIME;
const selected = RUNTIMES.filter((r) => wanted === undefined || wanted === '' || r.name === wanted);

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(runtime: Runtime, args: readonly string[]): Run {
  const [cmd, ...rest] = runtime.argv;
  const r = spawnSync(cmd ?? '', [...rest, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1', KUBECONFIG: '' },
  });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function lines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '');
}

describe('the bundle runs on each runtime', () => {
  it('is built', () => {
    assert.ok(existsSync(BUNDLE), `${BUNDLE} is missing: run \`npm run build\` (the e2e tier builds it)`);
  });

  for (const runtime of selected) {
    describe(runtime.name, { skip: existsSync(BUNDLE) ? false : 'bundle not built' }, () => {
      it('`version` prints the product version and this runtime', () => {
        const r = run(runtime, ['version']);
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stdout.trim(), /^agent-controller \d+\.\d+\.\d+\S* /);
        assert.match(r.stdout.trim(), runtime.versionPattern);
        const json = run(runtime, ['version', '--json']);
        assert.equal(json.status, 0, json.stderr);
        const parsed = JSON.parse(json.stdout) as { version?: unknown; runtime?: unknown };
        assert.equal(typeof parsed.version, 'string');
        assert.match(String(parsed.runtime), new RegExp(`^${runtime.name} `));
      });

      it('--help works at the top and for every subcommand', () => {
        const top = run(runtime, ['--help']);
        assert.equal(top.status, 0, top.stderr);
        for (const sub of ['controller', 'supervisor', 'init', 'version']) {
          assert.match(top.stdout, new RegExp(`\\b${sub}\\b`), `top-level help lists ${sub}`);
          const r = run(runtime, [sub, '--help']);
          assert.equal(r.status, 0, `${sub} --help: ${r.stderr}`);
          assert.match(
            r.stdout,
            new RegExp(`^Usage: agent-controller ${sub}\\b`),
            `${sub} --help prints its usage`,
          );
          assert.equal(r.stderr, '', `${sub} --help writes nothing to stderr`);
        }
      });

      const mistakes: readonly (readonly string[])[] = [
        ['frobnicate'],
        ['version', '--bogus'],
        ['controller', '--port', 'not-a-number'],
        ['controller', '--no-such-flag'],
        ['init', '--bogus'],
        ['supervisor'],
      ];
      for (const args of mistakes) {
        it(`\`${args.join(' ')}\` exits 2 with one line on stderr`, () => {
          const r = run(runtime, args);
          assert.equal(r.status, 2, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
          assert.equal(lines(r.stderr).length, 1, `exactly one stderr line, got:\n${r.stderr}`);
          assert.match(r.stderr, /^agent-controller\b/);
          assert.equal(r.stdout, '');
        });
      }
    });
  }
});
