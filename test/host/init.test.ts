// Host integration tests of the `init` subcommand (docs/design/reference-behaviour.md#tests-we-reproduce, plus our
// hardening): real git against a local
// origin (file:// and an authenticated smart-HTTP server on 127.0.0.1), real sinks on 127.0.0.1, temp dirs for
// HOME and the workspace. Runs as root in CI, so the final lchown to 1000:1000 is exercised too.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { initCommand } from '../../src/cmd/init.ts';
import { findExecutable } from '../../src/pod/init/fs-ops.ts';
import {
  type CommandRunner,
  createProcessRunner,
  INIT_FAILURE,
  type InitStatus,
  parseInitConfig,
  planInit,
  type RunOptions,
  runInit,
} from '../../src/pod/init/index.ts';
import { createLogger } from '../../src/shared/log.ts';
import { VENDOR_INFO, vendorForModel } from '../../src/vendors/cli/index.ts';
import { createGitOrigin, type GitOrigin, git } from './fixtures/git-origin.ts';
import { startFileServer, startGitServer, startSink, type TestServer } from './fixtures/http-recorder.ts';

const IS_ROOT = process.geteuid?.() === 0;
/** The user a test drops to when it must not be root (with setpriv), as the restricted profile's run user. */
const RUN_AS = 1000;
const HERE = dirname(fileURLToPath(import.meta.url));
const REAL_GIT = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();

let root: string;
let origin: GitOrigin;
let sink: TestServer;
let shimDir: string;
let dummyBundle: string;
let caseNo = 0;

before(() => {
  root = mkdtempSync(join(tmpdir(), 'init-host-'));
  origin = createGitOrigin(root);
  shimDir = join(root, 'shim');
  mkdirSync(shimDir);
  // A git that records its argv (one line per call, \x1f between arguments) and runs the real git.
  writeFileSync(
    join(shimDir, 'git'),
    `#!/bin/sh\nfor a in "$@"; do printf '%s\\037' "$a"; done >> "$GIT_ARGV_LOG"\nprintf '\\n' >> "$GIT_ARGV_LOG"\nexec ${REAL_GIT} "$@"\n`,
  );
  // Vendor CLIs "already installed", so the installers are skipped.
  for (const cli of ['codex', 'claude']) writeFileSync(join(shimDir, cli), '#!/bin/sh\nexit 0\n');
  for (const f of readdirSync(shimDir)) chmodSync(join(shimDir, f), 0o755);
  dummyBundle = join(root, 'bundle.mjs');
  writeFileSync(dummyBundle, 'console.log("dummy bundle");\n');
});
before(async () => {
  sink = await startSink();
});
after(async () => {
  await sink.close();
  rmSync(root, { recursive: true, force: true });
});

interface Case {
  readonly dir: string;
  readonly home: string;
  readonly ws: string;
  readonly argvLog: string;
  readonly fileSink: string;
}

function newCase(): Case {
  caseNo += 1;
  const dir = join(root, `case-${caseNo}`);
  const c = {
    dir,
    home: join(dir, 'home'),
    ws: join(dir, 'ws'),
    argvLog: join(dir, 'git-argv.log'),
    fileSink: join(dir, 'sink.jsonl'),
  };
  mkdirSync(c.home, { recursive: true });
  mkdirSync(c.ws, { recursive: true });
  writeFileSync(c.argvLog, '');
  return c;
}

interface InitRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly events: Array<{ status: string; tool?: string; reason?: string; exitCode?: number }>;
  readonly sinkBodies: string[];
}

/** Runs `agent-controller init` in-process through the real command, with a run env like the controller's. */
async function runInitCommand(c: Case, env: Record<string, string>): Promise<InitRun> {
  let stdout = '';
  let stderr = '';
  const before = sink.requests.length;
  const code = await initCommand.run({
    argv: ['--bundle', dummyBundle],
    env: {
      HOME: c.home,
      WORKSPACE_DIR: c.ws,
      PATH: `${shimDir}:/usr/local/bin:/usr/bin:/bin`,
      GIT_ARGV_LOG: c.argvLog,
      GIT_CONFIG_NOSYSTEM: '1',
      AGENT_MODEL: 'gpt-5-codex',
      AGENT_NAME: 'test-agent',
      STATION_NAME: 'test-station',
      TASK_ID: 'run-42',
      POD_NAME: 'test-pod',
      POD_NAMESPACE: 'ai-agents',
      AGENT_SINKS: JSON.stringify([
        { type: 'http', url: `${sink.url}/notify` },
        { type: 'file', path: c.fileSink },
      ]),
      AGENT_SINK_RETRY_BASE_MS: '10',
      ...env,
    },
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
  });
  const events = stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as InitRun['events'][number] & { kind: string; phase: string });
  for (const e of events)
    assert.deepEqual([e.kind, e.phase], ['lifecycle', 'init'], 'stdout carries only init events');
  return {
    code,
    stdout,
    stderr,
    events,
    sinkBodies: sink.requests.slice(before).map((r) => r.body.toString()),
  };
}

const statuses = (run: InitRun): string[] =>
  run.events.map((e) => (e.tool ? `${e.status}:${e.tool}` : e.status));
const gitCalls = (c: Case): string[][] =>
  readFileSync(c.argvLog, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split('\x1f').slice(0, -1));

function logLines(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('init: initializer checks (docs/design/reference-behaviour.md#tests-we-reproduce)', () => {
  it('clones a repo pinned to a tag; started, succeeded and the run id reach the sinks', async () => {
    const c = newCase();
    const run = await runInitCommand(c, {
      AGENT_REPOS: JSON.stringify([{ name: 'app', url: origin.url, ref: 'v1' }]),
    });
    assert.equal(run.code, 0, run.stderr);
    const dest = join(c.ws, 'app');
    assert.ok(existsSync(join(dest, 'README.md')));
    assert.equal(git(dest, '-c', 'safe.directory=*', 'rev-parse', 'HEAD'), origin.v1);
    assert.deepEqual(statuses(run), [
      'started',
      'running:supervisor',
      'running:git',
      'running:skills',
      'succeeded',
    ]);

    const posted = run.sinkBodies.map(
      (b) => JSON.parse(b) as { source: Record<string, string>; event: InitRun['events'][number] },
    );
    assert.deepEqual(
      posted.map((p) => p.event.status),
      run.events.map((e) => e.status),
    );
    for (const p of posted) {
      assert.deepEqual(p.source, {
        agent: 'test-agent',
        station: 'test-station',
        task: 'run-42',
        pod: 'test-pod',
        namespace: 'ai-agents',
      });
    }
    const fileLines = readFileSync(c.fileSink, 'utf8').trim().split('\n');
    assert.match(fileLines[0] ?? '', /"task":"run-42".*"status":"started"/);
    assert.match(fileLines.at(-1) ?? '', /"status":"succeeded"/);

    const clone = gitCalls(c).find((a) => a.includes('clone'));
    assert.deepEqual(clone, ['clone', '--', origin.url, dest]);
    assert.ok(gitCalls(c).some((a) => a.join(' ') === `-C ${dest} checkout v1 --`));

    // The supervisor was injected, and skills in the cloned repo were collected into HOME.
    const node = statSync(join(c.home, 'bin', 'node'));
    assert.equal(node.mode & 0o777, 0o755);
    assert.equal(node.size, statSync(process.execPath).size);
    const bundle = statSync(join(c.home, 'bin', 'agent-controller.mjs'));
    assert.equal(bundle.mode & 0o777, 0o644);
    assert.equal(
      readFileSync(join(c.home, 'bin', 'agent-controller.mjs'), 'utf8'),
      readFileSync(dummyBundle, 'utf8'),
    );
    assert.equal(readFileSync(join(c.home, '.claude', 'skills', 'demo', 'SKILL.md'), 'utf8'), 'demo skill\n');
    assert.deepEqual(
      readdirSync(join(c.home, 'bin')).sort(),
      ['agent-controller.mjs', 'node'],
      'no temp files left behind',
    );

    if (IS_ROOT) {
      for (const p of [c.home, join(c.home, 'bin', 'node'), c.ws, dest, join(dest, '.git', 'HEAD')]) {
        const s = lstatSync(p);
        assert.deepEqual([s.uid, s.gid], [1000, 1000], p);
      }
    }
  });

  it('clones a private repo with token_secret GH_TOKEN; the token is never in argv, logs, sinks or .git/config', async () => {
    const c = newCase();
    const token = 'ghp_TESTTOKEN_9f3a71c2';
    const server = await startGitServer(origin.bare, token);
    const seenInProc: string[] = [];
    let scanning = true;
    const scan = (async () => {
      while (scanning) {
        for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
          try {
            const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
            if (cmdline.includes(token)) seenInProc.push(cmdline.replaceAll('\0', ' '));
          } catch {
            // the process ended
          }
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    try {
      const run = await runInitCommand(c, {
        AGENT_REPOS: JSON.stringify([
          { name: 'private', url: `${server.url}/origin.git`, token_secret: 'GH_TOKEN' },
        ]),
        GH_TOKEN: token,
      });
      scanning = false;
      await scan;
      assert.equal(run.code, 0, run.stderr);
      const dest = join(c.ws, 'private');
      assert.ok(existsSync(join(dest, 'README.md')));
      assert.ok(
        server.requests.some((r) => r.headers.authorization !== undefined),
        'git authenticated through the helper',
      );
      for (const [where, text] of [
        ['stdout', run.stdout],
        ['stderr', run.stderr],
        ['sinks', run.sinkBodies.join('\n')],
        ['file sink', readFileSync(c.fileSink, 'utf8')],
        ['git argv', readFileSync(c.argvLog, 'utf8')],
        ['.git/config', readFileSync(join(dest, '.git', 'config'), 'utf8')],
      ] as const) {
        assert.ok(!text.includes(token), `token leaked into ${where}`);
      }
      assert.deepEqual(seenInProc, [], 'token seen in a process command line');
      assert.match(readFileSync(join(dest, '.git', 'config'), 'utf8'), /helper = .*\$GH_TOKEN/);
      // The persisted helper lets the agent talk to the remote later (lesson #204) — and only with the token.
      const fetchWith = (value: string): Promise<number> =>
        new Promise((resolve) => {
          execFile(
            REAL_GIT,
            ['-c', 'safe.directory=*', '-C', dest, 'fetch', '-q', 'origin'],
            { env: { PATH: '/usr/bin:/bin', HOME: c.home, GH_TOKEN: value, GIT_TERMINAL_PROMPT: '0' } },
            (error) => resolve(error ? 1 : 0),
          );
        });
      assert.equal(await fetchWith(token), 0);
      assert.equal(await fetchWith('wrong'), 1);
    } finally {
      scanning = false;
      await scan;
      await server.close();
    }
  });

  it('clones with a token whose Secret key is not a shell name (gh-token), never putting it in argv', async () => {
    const c = newCase();
    const token = 'dashed-secret-4411';
    const server = await startGitServer(origin.bare, token);
    try {
      const run = await runInitCommand(c, {
        AGENT_REPOS: JSON.stringify([
          { name: 'p', url: `${server.url}/origin.git`, token_secret: 'gh-token' },
        ]),
        'gh-token': token,
      });
      assert.equal(run.code, 0, run.stderr);
      assert.ok(existsSync(join(c.ws, 'p', 'README.md')));
      assert.ok(!readFileSync(c.argvLog, 'utf8').includes(token));
      assert.ok(!readFileSync(join(c.ws, 'p', '.git', 'config'), 'utf8').includes('credential'));
      assert.ok(logLines(run.stderr).some((l) => String(l.reason).includes('not a shell name')));
    } finally {
      await server.close();
    }
  });

  it('is idempotent: a re-run over an existing clone succeeds', async () => {
    const c = newCase();
    const env = { AGENT_REPOS: JSON.stringify([{ name: 'app', url: origin.url, ref: 'v1' }]) };
    assert.equal((await runInitCommand(c, env)).code, 0);
    writeFileSync(join(c.ws, 'app', 'stale.txt'), 'left over');
    const second = await runInitCommand(c, env);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(git(join(c.ws, 'app'), '-c', 'safe.directory=*', 'rev-parse', 'HEAD'), origin.v1);
    assert.ok(!existsSync(join(c.ws, 'app', 'stale.txt')), 'the destination was cleared first');
  });

  it('fails with a failed event on a bad URL', async () => {
    const c = newCase();
    const run = await runInitCommand(c, {
      AGENT_REPOS: JSON.stringify([{ name: 'app', url: `file://${join(root, 'no-such-repo.git')}` }]),
    });
    assert.notEqual(run.code, 0);
    const failed = run.events.at(-1);
    assert.equal(failed?.status, 'failed');
    assert.equal(failed?.tool, 'git');
    assert.equal(failed?.exitCode, run.code);
    assert.ok(run.sinkBodies.some((b) => b.includes('"status":"failed"')));
  });

  it('refuses ref "--orphan=pwned": fails, and HEAD never becomes pwned', async () => {
    const c = newCase();
    const run = await runInitCommand(c, {
      AGENT_REPOS: JSON.stringify([{ name: 'app', url: origin.url, ref: '--orphan=pwned' }]),
    });
    assert.notEqual(run.code, 0);
    assert.deepEqual(run.events.at(-1), {
      kind: 'lifecycle',
      phase: 'init',
      status: 'failed',
      tool: 'git',
      exitCode: 2,
    });
    assert.deepEqual(gitCalls(c), [], 'git never ran');
    const dest = join(c.ws, 'app');
    if (existsSync(dest)) assert.notEqual(git(dest, 'rev-parse', '--abbrev-ref', 'HEAD'), 'pwned');
  });

  it('refuses url "--upload-pack=touch <sentinel> foo@bar": fails, no sentinel, the error quotes it', async () => {
    const c = newCase();
    const sentinel = join(c.dir, 'sentinel');
    const url = `--upload-pack=touch ${sentinel} foo@bar`;
    const run = await runInitCommand(c, { AGENT_REPOS: JSON.stringify([{ name: 'app', url }]) });
    assert.notEqual(run.code, 0);
    assert.equal(run.events.at(-1)?.status, 'failed');
    assert.ok(!existsSync(sentinel), 'sentinel created: git options were injected');
    const refused = logLines(run.stderr).find((l) => l.msg === 'Refused repository');
    assert.ok(String(refused?.reason).includes(`repository ${JSON.stringify(url)}`), run.stderr);
  });

  it('skips "../canary" and an absolute path outside the workspace, leaving them intact', async () => {
    const c = newCase();
    const canary = join(c.dir, 'canary');
    const outside = join(c.dir, 'outside');
    for (const d of [canary, outside]) {
      mkdirSync(d);
      writeFileSync(join(d, 'keep.txt'), 'intact');
    }
    const run = await runInitCommand(c, {
      AGENT_REPOS: JSON.stringify([
        { name: 'a', url: origin.url, path: '../canary' },
        { name: 'b', url: origin.url, path: outside },
      ]),
    });
    assert.equal(run.code, 0, run.stderr);
    for (const d of [canary, outside]) {
      assert.equal(readFileSync(join(d, 'keep.txt'), 'utf8'), 'intact');
      assert.ok(!existsSync(join(d, '.git')), `${d} was cloned into`);
    }
    assert.ok(!statuses(run).includes('running:git'), 'no git tool when every repo is skipped');
    assert.equal(logLines(run.stderr).filter((l) => l.msg === 'Left out of the init').length, 2);
  });

  it('clones into a nested relative path', async () => {
    const c = newCase();
    const run = await runInitCommand(c, {
      AGENT_REPOS: JSON.stringify([{ name: 'app', url: origin.url, path: 'nested/app' }]),
    });
    assert.equal(run.code, 0, run.stderr);
    assert.ok(existsSync(join(c.ws, 'nested', 'app', 'README.md')));
    assert.equal(
      git(join(c.ws, 'nested', 'app'), '-c', 'safe.directory=*', 'rev-parse', 'HEAD'),
      origin.main,
    );
  });
});

describe('init: hardening beyond the reference', () => {
  it('refuses a destination that escapes through a symlink in the workspace', async () => {
    const c = newCase();
    const elsewhere = join(c.dir, 'elsewhere');
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, 'keep.txt'), 'intact');
    symlinkSync(elsewhere, join(c.ws, 'link'));
    const run = await runInitCommand(c, {
      AGENT_REPOS: JSON.stringify([{ name: 'app', url: origin.url, path: 'link/app' }]),
    });
    assert.equal(run.code, 2);
    assert.deepEqual(run.events.at(-1), {
      kind: 'lifecycle',
      phase: 'init',
      status: 'failed',
      tool: 'git',
      exitCode: 2,
    });
    assert.ok(!existsSync(join(elsewhere, 'app')));
    assert.ok(!gitCalls(c).some((a) => a.includes('clone')), 'git clone never ran');
  });

  it('replaces a symlink at the destination itself without touching its target', async () => {
    const c = newCase();
    const target = join(c.dir, 'target');
    mkdirSync(target);
    writeFileSync(join(target, 'keep.txt'), 'intact');
    symlinkSync(target, join(c.ws, 'app'));
    const run = await runInitCommand(c, { AGENT_REPOS: JSON.stringify([{ name: 'app', url: origin.url }]) });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(readFileSync(join(target, 'keep.txt'), 'utf8'), 'intact');
    assert.ok(lstatSync(join(c.ws, 'app')).isDirectory());
    assert.ok(existsSync(join(c.ws, 'app', 'README.md')));
  });

  it('lchowns: a symlink in the workspace to a root-owned file keeps the target root-owned', {
    skip: !IS_ROOT,
  }, async () => {
    const c = newCase();
    const target = join(c.dir, 'root-owned.txt');
    writeFileSync(target, 'x');
    symlinkSync(target, join(c.ws, 'link-out'));
    const run = await runInitCommand(c, {});
    assert.equal(run.code, 0, run.stderr);
    assert.equal(lstatSync(target).uid, 0);
    assert.equal(lstatSync(join(c.ws, 'link-out')).uid, 1000);
    assert.equal(readlinkSync(join(c.ws, 'link-out')), target);
  });

  it('fails with reason config on a malformed AGENT_REPOS', async () => {
    const c = newCase();
    const run = await runInitCommand(c, { AGENT_REPOS: '[{"name":' });
    assert.equal(run.code, 2);
    assert.deepEqual(statuses(run), ['started', 'failed']);
    assert.equal(run.events.at(-1)?.reason, 'config');
  });

  it('downloads skills and restores a conversation with the header from a dashed env var', async () => {
    const c = newCase();
    const fixtures = join(c.dir, 'fixtures');
    mkdirSync(join(fixtures, 'skill', 'lint'), { recursive: true });
    writeFileSync(join(fixtures, 'skill', 'lint', 'SKILL.md'), 'lint skill\n');
    execFileSync('tar', ['-czf', join(fixtures, 'lint.tar.gz'), '-C', join(fixtures, 'skill'), 'lint']);
    mkdirSync(join(fixtures, 'conv', '.claude', 'projects', '-workspace-app'), { recursive: true });
    writeFileSync(
      join(fixtures, 'conv', '.claude', 'projects', '-workspace-app', 'conv.jsonl'),
      '{"turn":1}\n',
    );
    execFileSync('tar', ['-czf', join(fixtures, 'conv.tar.gz'), '-C', join(fixtures, 'conv'), '.claude']);
    const skills = await startFileServer({
      '/skills/settings.json': '{"permissions":{}}',
      '/skills/lint.tar.gz': readFileSync(join(fixtures, 'lint.tar.gz')),
    });
    const conv = await startFileServer(
      { '/conv/abc': readFileSync(join(fixtures, 'conv.tar.gz')) },
      'Bearer conv-secret-77',
    );
    try {
      const run = await runInitCommand(c, {
        AGENT_MODEL: 'claude-opus-5-5',
        AGENT_SKILLS: JSON.stringify(['lint', '../escape', 'missing']),
        AGENT_SKILLS_SOURCE: `${skills.url}/skills`,
        AGENT_CONVERSATION_SOURCE: `${conv.url}/conv`,
        AGENT_CONVERSATION_ID: 'abc',
        AGENT_CONVERSATION_AUTH: 'conv-auth',
        'conv-auth': 'Authorization: Bearer conv-secret-77',
      });
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(statuses(run), [
        'started',
        'running:supervisor',
        'running:skills',
        'running:conversation',
        'succeeded',
      ]);
      assert.equal(readFileSync(join(c.home, '.claude', 'settings.json'), 'utf8'), '{"permissions":{}}');
      assert.equal(
        readFileSync(join(c.home, '.claude', 'skills', 'lint', 'SKILL.md'), 'utf8'),
        'lint skill\n',
      );
      assert.ok(!skills.requests.some((r) => r.url.includes('escape')), 'unsafe skill name was requested');
      assert.ok(
        skills.requests.some((r) => r.url === '/skills/missing.tar.gz'),
        'missing skill is best effort',
      );
      assert.equal(
        readFileSync(join(c.home, '.claude', 'projects', '-workspace-app', 'conv.jsonl'), 'utf8'),
        '{"turn":1}\n',
      );
      assert.equal(conv.requests[0]?.headers.authorization, 'Bearer conv-secret-77');
      assert.ok(!run.stderr.includes('conv-secret-77'));
    } finally {
      await skills.close();
      await conv.close();
    }
  });
});

describe('init: vendor CLI and prerequisites (injectable runner)', () => {
  interface Recorded {
    readonly argv: readonly string[];
    readonly options: RunOptions;
  }

  async function runPlanned(
    c: Case,
    env: Record<string, string>,
    runner: CommandRunner,
    which?: (name: string, pathVar: string) => Promise<string | undefined>,
    euid?: number,
  ): Promise<{ code: number; events: string[]; reports: string[] }> {
    const fullEnv = { HOME: c.home, WORKSPACE_DIR: c.ws, PATH: `${c.dir}/bin:/usr/bin:/bin`, ...env };
    const config = parseInitConfig(fullEnv);
    assert.ok(config.ok);
    const vendor = vendorForModel(config.value.model);
    const info = VENDOR_INFO[vendor];
    const plan = planInit(config.value, { vendor, ...info });
    const events: string[] = [];
    const reports: string[] = [];
    const fakeRuntime = join(c.dir, 'fake-runtime');
    writeFileSync(fakeRuntime, 'runtime');
    const code = await runInit(plan, {
      runner,
      emit: (status: InitStatus, d = {}) =>
        void events.push([status, d.tool ?? d.reason].filter(Boolean).join(':')),
      log: createLogger('error', () => undefined),
      env: fullEnv,
      runtime: { execPath: fakeRuntime, bundlePath: dummyBundle, isDeno: false },
      euid,
      reportFailure: (m) => void reports.push(m),
      ...(which ? { which } : {}),
    });
    return { code, events, reports };
  }

  /** PATH lookups of an image without npm (everything else as on this machine). */
  const noNpm = async (name: string, pathVar: string) =>
    name === 'npm' ? undefined : findExecutable(name, pathVar);

  it('runs the codex installer exactly as specified when codex is missing and the image has no npm', async () => {
    const c = newCase();
    mkdirSync(join(c.dir, 'bin'));
    const calls: Recorded[] = [];
    const { code, events } = await runPlanned(
      c,
      { AGENT_MODEL: 'gpt-5-codex' },
      async (argv, options) => {
        calls.push({ argv, options });
        return 0;
      },
      noNpm,
    );
    assert.equal(code, 0);
    assert.deepEqual(events, [
      'started',
      'running:supervisor',
      'running:codex',
      'running:skills',
      'succeeded',
    ]);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0]?.argv, [
      'bash',
      '-o',
      'pipefail',
      '-c',
      'command -v codex >/dev/null 2>&1 || curl -fsSL https://chatgpt.com/codex/install.sh | sh',
    ]);
    assert.equal(calls[0]?.options.env.HOME, c.home);
    assert.ok(existsSync(join(c.home, '.local', 'bin')));
  });

  it('installs the pinned npm package of the CLI when the image has npm, with the registry env reaching npm', async () => {
    const c = newCase();
    mkdirSync(join(c.dir, 'bin'));
    const calls: Recorded[] = [];
    const registry = 'http://127.0.0.1:4873/';
    const { code, events } = await runPlanned(
      c,
      { AGENT_MODEL: 'claude-opus-5-5', NPM_CONFIG_REGISTRY: registry },
      async (argv, options) => {
        calls.push({ argv, options });
        return 0;
      },
      async (name, pathVar) => (name === 'npm' ? '/usr/bin/npm' : findExecutable(name, pathVar)),
    );
    assert.equal(code, 0);
    assert.deepEqual(events, [
      'started',
      'running:supervisor',
      'running:claude',
      'running:skills',
      'succeeded',
    ]);
    assert.deepEqual(
      calls.map((r) => r.argv),
      [
        [
          'npm',
          'install',
          '--global',
          '--prefix',
          `${c.home}/.local`,
          '--no-audit',
          '--no-fund',
          // Claude Code's bin is a stub until its own postinstall runs: only that package's script is allowed.
          '--allow-scripts=@anthropic-ai/claude-code',
          '@anthropic-ai/claude-code@2.1.332',
        ],
        [`${c.home}/.local/bin/claude`, '--version'],
      ],
    );
    assert.equal(calls[0]?.options.env.NPM_CONFIG_REGISTRY, registry);
    assert.equal(calls[0]?.options.env.HOME, c.home);
    assert.ok(existsSync(join(c.home, '.local', 'bin')));
  });

  it('skips the installer when the CLI is already on PATH (or in ~/.local/bin)', async () => {
    for (const where of ['path', 'local'] as const) {
      const c = newCase();
      const dir = where === 'path' ? join(c.dir, 'bin') : join(c.home, '.local', 'bin');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'claude'), '#!/bin/sh\n');
      chmodSync(join(dir, 'claude'), 0o755);
      const calls: Recorded[] = [];
      const { code, events } = await runPlanned(c, { AGENT_MODEL: '' }, async (argv, options) => {
        calls.push({ argv, options });
        return 0;
      });
      assert.equal(code, 0);
      assert.deepEqual(calls, [], where);
      assert.ok(!events.includes('running:claude'), where);
    }
  });

  it('fails with the installer exit code when the install fails', async () => {
    const c = newCase();
    const { code, events } = await runPlanned(c, { AGENT_MODEL: 'claude-opus-5-5' }, async () => 7);
    assert.equal(code, 7);
    assert.equal(events.at(-1), 'failed:claude');
  });

  it('installs missing prerequisites with the package manager first', async () => {
    const c = newCase();
    const present = new Set(['apt-get', 'sh', 'curl', 'tar']);
    const calls: string[] = [];
    const { code, events } = await runPlanned(
      c,
      { AGENT_MODEL: 'exec', AGENT_REPOS: JSON.stringify([{ name: 'a', url: origin.url }]) },
      async (argv) => {
        calls.push(argv.join(' '));
        if (argv[0] === 'apt-get' && argv[1] === 'install') present.add('git');
        return 0;
      },
      async (name) => (present.has(name) ? `/usr/bin/${name}` : undefined),
    );
    assert.equal(code, 0);
    assert.deepEqual(calls.slice(0, 2), ['apt-get update', 'apt-get install --no-install-recommends -y git']);
    assert.ok(calls[2]?.startsWith('git clone -- '));
    assert.deepEqual(events.slice(0, 2), ['started', 'installing:apt']);
  });

  it('fails with no-package-manager, install and prerequisites as specified', async () => {
    const env = { AGENT_MODEL: 'exec', AGENT_REPOS: JSON.stringify([{ name: 'a', url: origin.url }]) };
    const none = await runPlanned(
      newCase(),
      env,
      async () => 0,
      async () => undefined,
    );
    assert.deepEqual([none.code, none.events.at(-1)], [2, 'failed:no-package-manager']);
    const dnf = async (name: string) => (name === 'dnf' ? '/usr/bin/dnf' : undefined);
    const broken = await runPlanned(newCase(), env, async () => 100, dnf);
    assert.deepEqual([broken.code, broken.events.at(-1)], [100, 'failed:install']);
    const useless = await runPlanned(newCase(), env, async () => 0, dnf);
    assert.deepEqual([useless.code, useless.events.at(-1)], [2, 'failed:prerequisites']);
    // Each failure is also one line for people: the init's termination message.
    assert.deepEqual(
      [none.reports, broken.reports, useless.reports],
      [
        [INIT_FAILURE.noPackageManager(['git'])],
        [INIT_FAILURE.install('dnf install -y git', 100)],
        [INIT_FAILURE.prerequisites(['git'])],
      ],
    );
  });

  it('as a non-root user (restricted Pod Security) never runs a package manager: fails naming the tool to bake in', async () => {
    const env = { AGENT_MODEL: 'exec', AGENT_REPOS: JSON.stringify([{ name: 'a', url: origin.url }]) };
    const calls: string[] = [];
    const apt = async (name: string) => (name === 'apt-get' ? '/usr/bin/apt-get' : undefined);
    const r = await runPlanned(
      newCase(),
      env,
      async (argv) => {
        calls.push(argv.join(' '));
        return 0;
      },
      apt,
      1000,
    );
    assert.deepEqual([r.code, r.events.at(-1)], [2, 'failed:git']);
    assert.deepEqual(calls, [], 'no package manager ran');
    assert.deepEqual(r.reports, [
      "installing git needs git, which the image lacks, and installing them needs root; the restricted Pod Security profile runs the init as a non-root user: bake them into the image, or set the Station's spec.podSecurityProfile: baseline",
    ]);
    // As root (baseline), the same plan installs with the package manager.
    const root = await runPlanned(newCase(), env, async () => 0, apt, 0);
    assert.equal(root.events.includes('installing:apt'), true);
  });

  it('reports a failing step with its tool, step and exit code', async () => {
    const c = newCase();
    const { code, reports } = await runPlanned(c, { AGENT_MODEL: 'claude-opus-5-5' }, async () => 7);
    assert.equal(code, 7);
    assert.equal(reports.length, 1);
    assert.match(reports[0] ?? '', /^claude: .* failed with exit code 7$/);
  });

  it('fails with reason home when HOME cannot be written and a CLI must be installed', async () => {
    // Root may write anywhere, so the init runs in a process of its own, as uid 1000 when we are root (setpriv, as
    // the restricted profile runs it): HOME is that user's own, read-only. Everything else it reads is readable by
    // all (the temp root is 0700 when made).
    const c = newCase();
    chmodSync(root, 0o755);
    if (IS_ROOT) chownSync(c.home, RUN_AS, RUN_AS);
    chmodSync(c.home, 0o500);
    const fakeRuntime = join(c.dir, 'fake-runtime');
    writeFileSync(fakeRuntime, 'runtime');
    const input = {
      env: {
        HOME: c.home,
        WORKSPACE_DIR: c.ws,
        PATH: `${c.dir}/bin:/usr/bin:/bin`,
        AGENT_MODEL: 'gpt-5-codex',
      },
      bundle: dummyBundle,
      runtime: fakeRuntime,
    };
    const node = [process.execPath, '--import', 'tsx', join(HERE, 'fixtures', 'run-init-planned.ts')];
    const argv = IS_ROOT
      ? ['setpriv', `--reuid=${RUN_AS}`, `--regid=${RUN_AS}`, '--clear-groups', '--', ...node]
      : node;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        argv[0]!,
        [...argv.slice(1), JSON.stringify(input)],
        { cwd: join(HERE, '..', '..'), env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: c.home } },
        (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    const { code, events, euid } = JSON.parse(out) as { code: number; events: string[]; euid: number };
    assert.notEqual(euid, 0, 'the init ran as a user other than root');
    assert.deepEqual([code, events.at(-1)], [2, 'failed:home']);
  });

  it('the real runner reports a missing executable as 2 and a signal death as 128+N', async () => {
    const run = createProcessRunner(() => undefined);
    const env = { PATH: '/usr/bin:/bin' };
    assert.equal(await run(['no-such-executable-xyz'], { env }), 2);
    assert.equal(await run(['sh', '-c', 'exit 5'], { env }), 5);
    assert.equal(await run(['sh', '-c', 'kill -TERM $$'], { env }), 143);
  });
});
