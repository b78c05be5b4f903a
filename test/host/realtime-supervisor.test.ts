// The realtime supervisor on the host (AGENT_EXECUTION=realtime): the real `supervisor` subcommand serving prompts on
// a loopback port around a fake `claude` (the mock agent CLI in Claude style, on PATH), on Node from source and on
// Deno from the bundle. The routes themselves (the token, paths, body limits, error shapes, NDJSON framing) are tested
// through `app.request()` in src/pod/supervisor/realtime-app.test.ts. Here: a prompt streamed back as NDJSON, turns
// continuing the session by id, a second prompt while one is in flight (409), close, a CLI crash mid-turn, the
// deadline, an oversized body; the run report (termination message) over the turns served; the session's state
// read after two turns (GET /session/state) and restored in a second supervisor started with AGENT_SESSION_RESTORE
// (PUT /session/state), whose next turn resumes the session by id and counts on.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseRunReport } from '../../src/vendors/cli/run-report.ts';
import { ensureFreshBundle } from '../support/bundle.ts';
import { capture, freePort, waitFor } from './harness.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MOCK = join(ROOT, 'test', 'mock-agent', 'mock-agent.mjs');
const BUNDLE = join(ROOT, 'dist', 'agent-controller.mjs');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');
const TOKEN = 'tok-0123456789abcdef0123456789abcdef';
const SESSION = 'sess-0001';

type Runtime = 'node' | 'deno';

interface Session {
  readonly proc: ChildProcess;
  readonly url: string;
  readonly stdout: string[];
  readonly exited: Promise<number | null>;
  stderr(): string;
}

async function startSession(
  runtime: Runtime,
  bin: string,
  env: Record<string, string> = {},
  firstPrompt = 'first prompt',
  cli: { name: string; model: string } = { name: 'claude', model: 'claude-opus-5-5' },
): Promise<Session> {
  const port = await freePort();
  const [cmd, args] =
    runtime === 'deno'
      ? [DENO, ['run', '-A', BUNDLE, 'supervisor', '--']]
      : [process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), 'supervisor', '--']];
  const proc = spawn(cmd, [...args, cli.name, firstPrompt], {
    cwd: ROOT,
    env: {
      PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: process.env.HOME ?? '/tmp',
      AGENT_NAME: 'rt',
      POD_NAME: 'rt-pod',
      POD_NAMESPACE: 'ns',
      AGENT_MODEL: cli.model,
      AGENT_EXECUTION: 'realtime',
      AGENT_PROMPT_TOKEN: TOKEN,
      AGENT_PROMPT_PORT: String(port),
      AGENT_POD_IP: '127.0.0.1',
      AGENT_RUN_RECIPE: JSON.stringify({ model: cli.model, permissionMode: 'bypass' }),
      AGENT_EXIT_GRACE_MS: '500',
      MOCK_STYLE: cli.name,
      MOCK_ECHO_PROMPT: '1',
      MOCK_ECHO_ARGV: '1',
      MOCK_SESSION: SESSION,
      DENO_NO_UPDATE_CHECK: '1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { stdout, stderr, exited } = capture(proc);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (proc.exitCode !== null) assert.fail(`the supervisor exited early (${proc.exitCode}): ${stderr()}`);
      const ok = await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      return ok ? true : undefined;
    },
    20_000,
    'the prompt server',
  );
  return { proc, url, stdout, exited, stderr };
}

const auth = { authorization: `Bearer ${TOKEN}` };

async function prompt(s: Session, text: string, headers: Record<string, string> = auth) {
  const res = await fetch(`${s.url}/prompt`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ prompt: text }),
  });
  const body = await res.text();
  const lines = res.headers.get('content-type')?.includes('ndjson')
    ? body
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];
  return { status: res.status, body, lines };
}

/** Waits until the session's first turn (no caller) has ended: its result line is on stdout and the server is idle. */
async function firstTurnDone(s: Session): Promise<void> {
  await waitFor(
    async () => {
      const h = (await (await fetch(`${s.url}/healthz`)).json()) as { busy: boolean };
      return !h.busy && s.stdout.some((l) => /"type":"(result|turn\.completed)"/.test(l)) ? true : undefined;
    },
    20_000,
    'the first turn to end',
  );
}

for (const runtime of ['node', 'deno'] as const) {
  const skip = runtime === 'deno' && !existsSync(DENO) ? 'deno is missing (npm ci installs it)' : false;
  describe(`realtime supervisor (${runtime})`, { skip }, () => {
    let bin: string;
    before(async () => {
      if (runtime === 'deno') ensureFreshBundle();
      bin = await mkdtemp(join(tmpdir(), 'rt-bin-'));
      // The fake claude: the mock agent; a prompt containing "crash" kills it mid-turn.
      await writeFile(
        join(bin, 'claude'),
        `#!/bin/sh\ncase "$*" in *crash*) echo '{"type":"system","subtype":"init","session_id":"${SESSION}"}'; kill -9 $$;; esac\nexec "${process.execPath}" "${MOCK}" "$@"\n`,
      );
      await chmod(join(bin, 'claude'), 0o755);
      for (const name of ['codex', 'gemini']) {
        await writeFile(join(bin, name), `#!/bin/sh\nexec "${process.execPath}" "${MOCK}" "$@"\n`);
        await chmod(join(bin, name), 0o755);
      }
    });
    after(() => rm(bin, { recursive: true, force: true }));

    it('runs the first turn, streams later turns back as NDJSON, continues the session by id, closes with 0', async () => {
      const s = await startSession(runtime, bin);
      await firstTurnDone(s);
      assert.ok(
        s.stdout.some((l) => l.includes('echo: first prompt')),
        'the first turn ran the rendered prompt',
      );
      const two = await prompt(s, 'second question');
      assert.equal(two.status, 200, two.body);
      const argv = two.lines.find((l) => Array.isArray(l.argv))?.argv as string[];
      assert.deepEqual(argv.slice(argv.indexOf('--resume'), argv.indexOf('--resume') + 2), [
        '--resume',
        SESSION,
      ]);
      assert.equal(argv.at(-1), 'second question');
      const text = JSON.stringify(two.lines);
      assert.match(text, /echo: second question/);
      assert.equal(two.lines.at(-1)?.type, 'result', 'the turn ends with its result line');
      const three = await prompt(s, 'third');
      assert.match(JSON.stringify(three.lines), /echo: third/);
      assert.ok(
        s.stdout.some((l) => l.includes('echo: third')),
        'turn lines also go to stdout',
      );
      const closed = await fetch(`${s.url}/close`, { method: 'POST', headers: auth });
      assert.equal(closed.status, 200);
      assert.deepEqual(await closed.json(), { closed: true, sessionId: SESSION });
      assert.equal(await s.exited, 0);
      assert.match(s.stdout.at(-1) ?? '', /"status":"succeeded","exitCode":0/);
    });

    for (const cli of [
      { name: 'codex', model: 'gpt-6.1-sol', last: 'turn.completed' },
      { name: 'gemini', model: 'gemini-3.8-flash', last: 'result' },
    ]) {
      it(`${cli.name}: later turns resume the session the first one revealed, each ending with its own terminal line`, async () => {
        const s = await startSession(runtime, bin, {}, 'first prompt', cli);
        try {
          await firstTurnDone(s);
          const r = await prompt(s, 'next question');
          assert.equal(r.status, 200, r.body);
          const argv = r.lines.find((l) => Array.isArray(l.argv))?.argv as string[];
          assert.ok(argv.includes(SESSION), `the ${cli.name} turn resumes ${SESSION}: ${argv.join(' ')}`);
          assert.match(JSON.stringify(r.lines), /echo: next question/);
          assert.equal(r.lines.at(-1)?.type, cli.last);
          const closed = await fetch(`${s.url}/close`, { method: 'POST', headers: auth });
          assert.deepEqual(await closed.json(), { closed: true, sessionId: SESSION });
          assert.equal(await s.exited, 0);
        } finally {
          s.proc.kill('SIGKILL');
        }
      });
    }

    it('gives its state after a turn and restores it in a pod started to restore, which goes on with the session', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'rt-state-'));
      const [home1, ws1, home2, ws2] = ['home1', 'ws1', 'home2', 'ws2'].map((d) => join(dir, d)) as [
        string,
        string,
        string,
        string,
      ];
      await mkdir(join(home1, '.claude', 'projects', '-ws'), { recursive: true });
      await writeFile(join(home1, '.claude', 'projects', '-ws', `${SESSION}.jsonl`), '{"turn":1}\n');
      await writeFile(join(home1, '.claude', 'other.json'), 'not state');
      await mkdir(join(ws1, 'src'), { recursive: true });
      await writeFile(join(ws1, 'src', 'notes.md'), 'written in turn 1\n');
      await symlink('/etc/hostname', join(ws1, 'link'));
      await mkdir(ws2, { recursive: true });
      const one = await startSession(runtime, bin, { HOME: home1, WORKSPACE_DIR: ws1 });
      const two = { current: undefined as Session | undefined };
      try {
        await firstTurnDone(one);
        assert.equal((await prompt(one, 'second question')).status, 200);
        const health = (await (await fetch(`${one.url}/healthz`)).json()) as Record<string, unknown>;
        assert.deepEqual([health.turns, health.restoring], [2, false]);
        assert.equal((await fetch(`${one.url}/session/state`)).status, 401, 'the token is required');
        const state = await fetch(`${one.url}/session/state`, { headers: auth });
        assert.equal(state.status, 200);
        assert.equal(state.headers.get('content-type'), 'application/gzip');
        assert.equal(state.headers.get('x-agent-session-id'), SESSION);
        assert.equal(state.headers.get('x-agent-turns'), '2');
        const archive = new Uint8Array(await state.arrayBuffer());
        await writeFile(join(dir, 'state.tar.gz'), archive);
        const listed = spawnSync('tar', ['-tzf', join(dir, 'state.tar.gz')], { encoding: 'utf8' });
        assert.equal(listed.status, 0, listed.stderr);
        assert.deepEqual(listed.stdout.trim().split('\n'), [
          '.claude/projects/',
          '.claude/projects/-ws/',
          `.claude/projects/-ws/${SESSION}.jsonl`,
          'workspace/',
          'workspace/src/',
          'workspace/src/notes.md',
        ]);
        assert.equal((await fetch(`${one.url}/close`, { method: 'POST', headers: auth })).status, 200);
        assert.equal(await one.exited, 0);

        const s = await startSession(runtime, bin, {
          HOME: home2,
          WORKSPACE_DIR: ws2,
          AGENT_SESSION_RESTORE: 'true',
        });
        two.current = s;
        const waiting = (await (await fetch(`${s.url}/healthz`)).json()) as Record<string, unknown>;
        assert.deepEqual(
          [waiting.sessionId, waiting.turns, waiting.restoring, waiting.busy],
          [null, 0, true, false],
        );
        const early = await prompt(s, 'too early');
        assert.deepEqual(
          [early.status, JSON.parse(early.body)],
          [409, { message: 'waiting for the session state' }],
        );
        assert.equal((await fetch(`${s.url}/session/state`, { headers: auth })).status, 409);
        assert.ok(!s.stdout.some((l) => l.includes('echo: first prompt')), 'no opening prompt');
        const put = (headers: Record<string, string> = {}) =>
          fetch(`${s.url}/session/state`, {
            method: 'PUT',
            headers: {
              ...auth,
              'content-type': 'application/gzip',
              'x-agent-session-id': SESSION,
              'x-agent-turns': '2',
              ...headers,
            },
            body: archive,
          });
        const restored = await put();
        assert.equal(restored.status, 200);
        assert.deepEqual(await restored.json(), { restored: true, sessionId: SESSION, turns: 2, members: 6 });
        assert.equal(
          await readFile(join(home2, '.claude', 'projects', '-ws', `${SESSION}.jsonl`), 'utf8'),
          '{"turn":1}\n',
        );
        assert.equal(await readFile(join(ws2, 'src', 'notes.md'), 'utf8'), 'written in turn 1\n');
        await assert.rejects(lstat(join(ws2, 'link')), 'links are not carried');
        await assert.rejects(lstat(join(home2, '.claude', 'other.json')), 'only the state folder');
        const again = await put();
        assert.deepEqual(
          [again.status, await again.json()],
          [409, { message: 'the session state was restored already' }],
        );
        const three = await prompt(s, 'third, after the restore');
        assert.equal(three.status, 200, three.body);
        const argv = three.lines.find((l) => Array.isArray(l.argv))?.argv as string[];
        assert.deepEqual(argv.slice(argv.indexOf('--resume'), argv.indexOf('--resume') + 2), [
          '--resume',
          SESSION,
        ]);
        assert.match(JSON.stringify(three.lines), /echo: third, after the restore/);
        const after = (await (await fetch(`${s.url}/healthz`)).json()) as Record<string, unknown>;
        assert.deepEqual([after.sessionId, after.turns, after.restoring], [SESSION, 3, false]);
        const later = await fetch(`${s.url}/session/state`, { headers: auth });
        assert.equal(later.headers.get('x-agent-turns'), '3');
        await later.arrayBuffer();
        assert.equal((await fetch(`${s.url}/close`, { method: 'POST', headers: auth })).status, 200);
        assert.equal(await s.exited, 0);
      } finally {
        one.proc.kill('SIGKILL');
        two.current?.proc.kill('SIGKILL');
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('a pod not started to restore refuses a state (409); a bad AGENT_SESSION_RESTORE fails the start', async () => {
      const s = await startSession(runtime, bin);
      try {
        await firstTurnDone(s);
        const res = await fetch(`${s.url}/session/state`, {
          method: 'PUT',
          headers: {
            ...auth,
            'content-type': 'application/gzip',
            'x-agent-session-id': 'x',
            'x-agent-turns': '1',
          },
          body: new Uint8Array([31, 139]),
        });
        assert.deepEqual(
          [res.status, await res.json()],
          [409, { message: 'this pod was not started to restore a session' }],
        );
        assert.equal((await fetch(`${s.url}/close`, { method: 'POST', headers: auth })).status, 200);
        assert.equal(await s.exited, 0);
      } finally {
        s.proc.kill('SIGKILL');
      }
      await assert.rejects(
        startSession(runtime, bin, { AGENT_SESSION_RESTORE: 'yes' }),
        /AGENT_SESSION_RESTORE must be true or false/,
      );
    });

    it('the run report covers the turns served: the last answer, usage and cost summed', async () => {
      const report = join(bin, `report-${Math.random().toString(36).slice(2, 8)}`);
      await writeFile(report, '');
      const s = await startSession(runtime, bin, {
        AGENT_TERMINATION_MESSAGE_PATH: report,
        MOCK_USAGE: JSON.stringify({ input: 100, output: 10, cacheRead: 50, cacheWrite: 5 }),
        MOCK_COST: '0.25',
      });
      try {
        await firstTurnDone(s);
        assert.deepEqual(parseRunReport(await readFile(report, 'utf8'))?.result, 'echo: first prompt');
        assert.equal((await prompt(s, 'second question')).status, 200);
        assert.equal((await prompt(s, 'third')).status, 200);
        const closed = await fetch(`${s.url}/close`, { method: 'POST', headers: auth });
        assert.equal(closed.status, 200);
        assert.equal(await s.exited, 0);
        assert.deepEqual(parseRunReport(await readFile(report, 'utf8')), {
          result: 'echo: third',
          usage: { input: 300, output: 30, cacheRead: 150, cacheWrite: 15, total: 495 },
          costUsd: 0.75,
          model: 'claude-opus-5-5',
        });
      } finally {
        s.proc.kill('SIGKILL');
      }
    });

    it('a second prompt while one is in flight gets 409; a prompt after close gets nothing', async () => {
      const s = await startSession(runtime, bin, { MOCK_DELAY_MS: '300', MOCK_LINES: '4' });
      try {
        await firstTurnDone(s);
        const [a, b] = await Promise.all([
          prompt(s, 'slow one'),
          new Promise((r) => setTimeout(r, 150)).then(() => prompt(s, 'too soon')),
        ]);
        assert.equal(a.status, 200);
        assert.equal(b.status, 409);
        assert.match(b.body, /already in flight/);
        const closed = await fetch(`${s.url}/close`, { method: 'POST', headers: auth });
        assert.equal(closed.status, 200);
        assert.equal(await s.exited, 0);
        await assert.rejects(prompt(s, 'late'), 'the server is gone after close');
      } finally {
        s.proc.kill('SIGKILL');
      }
    });

    it('a CLI that crashes mid-turn ends the turn and the session with its code', async () => {
      const s = await startSession(runtime, bin);
      try {
        await firstTurnDone(s);
        const r = await prompt(s, 'please crash now');
        assert.equal(r.status, 200);
        assert.ok(!r.lines.some((l) => l.type === 'result'), 'no result line for a crashed turn');
        const code = await s.exited;
        assert.equal(code, 137);
        assert.match(s.stdout.at(-1) ?? '', /"status":"failed","exitCode":137/);
      } finally {
        s.proc.kill('SIGKILL');
      }
    });

    it('ends at the run deadline with 124; an oversized prompt gets 413', async () => {
      const report = join(bin, `report-${Math.random().toString(36).slice(2, 8)}`);
      await writeFile(report, '');
      const s = await startSession(runtime, bin, {
        AGENT_DEADLINE_MS: '4000',
        AGENT_TERMINATION_MESSAGE_PATH: report,
      });
      try {
        await firstTurnDone(s);
        const big = await fetch(`${s.url}/prompt`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...auth },
          body: JSON.stringify({ prompt: 'x'.repeat(1024 * 1024 + 10) }),
        });
        assert.equal(big.status, 413);
        assert.equal(await s.exited, 124);
        assert.equal(parseRunReport(await readFile(report, 'utf8'))?.result, 'echo: first prompt');
      } finally {
        s.proc.kill('SIGKILL');
      }
    });
  });
}
