// Supervisor host integration (docs/design/reference-behaviour.md#tests-we-reproduce): the real `supervisor`
// subcommand around the mock agent CLI, with
// loopback HTTP sinks. The Node pass runs from source; the Deno pass runs the bundle (built first when stale).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ensureFreshBundle } from '../support/bundle.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MOCK = join(ROOT, 'test', 'mock-agent', 'mock-agent.mjs');
const BUNDLE = join(ROOT, 'dist', 'agent-controller.mjs');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');

type Runtime = 'node' | 'deno';

const IDENTITY = {
  AGENT_NAME: 'test-agent',
  STATION_NAME: 'test-station',
  POD_NAME: 'test-pod',
  POD_NAMESPACE: 'ai-agents',
};
const SOURCE = { agent: 'test-agent', station: 'test-station', pod: 'test-pod', namespace: 'ai-agents' };
const STARTED = '{"kind":"lifecycle","phase":"agent","status":"started"}';
const finished = (code: number) =>
  `{"kind":"lifecycle","phase":"agent","status":"${code === 0 ? 'succeeded' : 'failed'}","exitCode":${code}}`;

// ---------------------------------------------------------------------------------------------------------------
// Harness

interface Finished {
  readonly code: number | null;
  readonly signal: string | null;
  readonly stdout: string[];
  readonly stderr: string;
  readonly ms: number;
}

interface Run {
  readonly proc: ChildProcess;
  readonly lines: string[];
  readonly stderr: () => string;
  readonly done: Promise<Finished>;
}

/** Polls `condition` every 20 ms until it holds or `ms` passes (then fails with `what`). */
async function waitFor(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function supervisorArgv(runtime: Runtime): [string, string[]] {
  if (runtime === 'deno') return [DENO, ['run', '-A', BUNDLE, 'supervisor', '--']];
  return [process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), 'supervisor', '--']];
}

/** Starts the supervisor around `agent` (default: the mock on Node) with the test identity plus `env`. */
function start(
  runtime: Runtime,
  env: Record<string, string>,
  agent: string[] = [process.execPath, MOCK],
): Run {
  const [cmd, args] = supervisorArgv(runtime);
  const begun = Date.now();
  const proc = spawn(cmd, [...args, ...agent], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...IDENTITY, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  proc.stdout?.setEncoding('utf8');
  proc.stderr?.setEncoding('utf8');
  proc.stdout?.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  proc.stderr?.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const done = new Promise<Finished>((resolve) => {
    proc.on('close', (code, signal) => {
      if (partial !== '') lines.push(partial);
      resolve({ code, signal, stdout: lines, stderr, ms: Date.now() - begun });
    });
  });
  return { proc, lines, stderr: () => stderr, done };
}

async function runToEnd(
  runtime: Runtime,
  env: Record<string, string>,
  agent?: string[],
  timeoutMs = 30_000,
): Promise<Finished> {
  const run = start(runtime, env, agent);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      run.proc.kill('SIGKILL');
      reject(new Error(`supervisor did not exit within ${timeoutMs} ms; stderr:\n${run.stderr()}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([run.done, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

interface Recorded {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** A loopback HTTP server recording every request; answers 200 `{"ok":true}`. */
async function recorder() {
  const requests: Recorded[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    requests,
    base: `http://127.0.0.1:${port}`,
    events: () =>
      requests.map((r) => JSON.parse(r.body.toString('utf8')) as { source: unknown; event: unknown }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const parsed = (lines: readonly string[]) =>
  lines.filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>);

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Scenarios

let scratch = '';
before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'supervisor-host-'));
});
after(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function freshDir(name: string): Promise<string> {
  const dir = join(scratch, `${name}-${Math.random().toString(36).slice(2, 8)}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** The 22 reference scenarios plus our additions, for one runtime; `only` limits the set (Deno pass). */
function scenarios(runtime: Runtime, only?: ReadonlySet<string>) {
  const test = (id: string, name: string, fn: () => Promise<void>) => {
    if (only && !only.has(id)) return;
    it(`${id}: ${name}`, { timeout: 60_000 }, fn);
  };

  test('1', 'streaming: three payload lines, exit 0', async () => {
    const r = await runToEnd(runtime, { MOCK_LINES: '3' });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      r.stdout.filter((l) => l.includes('"i":')),
      ['{"i":1}', '{"i":2}', '{"i":3}'],
    );
  });

  test('2', 'lifecycle: started first, succeeded with exitCode 0 last', async () => {
    const r = await runToEnd(runtime, {});
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout[0], STARTED);
    assert.equal(r.stdout.at(-1), finished(0));
  });

  test('3', 'exit passthrough: MOCK_EXIT=7 exits 7 with a failed event', async () => {
    const r = await runToEnd(runtime, { MOCK_EXIT: '7' });
    assert.equal(r.code, 7);
    assert.equal(r.stdout.at(-1), finished(7));
  });

  test('4', 'bare stdout: no envelope, no identity on stdout', async () => {
    const r = await runToEnd(runtime, { MOCK_LINES: '2' });
    const all = r.stdout.join('\n');
    assert.ok(!all.includes('"agent":"test-agent"'));
    assert.ok(!all.includes('"pod":"test-pod"'));
    assert.ok(!all.includes('"event":'));
    assert.ok(!all.includes('"source":'));
  });

  test('5', 'file sink: every event as one envelope with the identity', async () => {
    const dir = await freshDir('file-sink');
    const path = join(dir, 'events.jsonl');
    const r = await runToEnd(runtime, { AGENT_SINKS: JSON.stringify([{ type: 'file', path }]) });
    assert.equal(r.code, 0, r.stderr);
    const text = await readFile(path, 'utf8');
    assert.ok(text.includes('"agent":"test-agent"'));
    const envelopes = parsed(text.split('\n'));
    assert.deepEqual(
      envelopes.map((e) => e.event),
      [JSON.parse(STARTED), { i: 1 }, JSON.parse(finished(0))],
    );
    for (const e of envelopes) {
      assert.deepEqual(Object.keys(e), ['source', 'event']);
      assert.deepEqual(e.source, SOURCE);
    }
  });

  test(
    '6',
    'http sink: exactly 5 POSTs (started, 3 payloads, succeeded) with ids and exitCode 0',
    async () => {
      const srv = await recorder();
      try {
        const r = await runToEnd(runtime, { AGENT_NOTIFY_URL: `${srv.base}/notify`, MOCK_LINES: '3' });
        assert.equal(r.code, 0, r.stderr);
        assert.equal(srv.requests.length, 5);
        for (const req of srv.requests) {
          assert.equal(req.method, 'POST');
          assert.equal(req.url, '/notify');
          assert.equal(req.headers['content-type'], 'application/json');
        }
        const events = srv.events();
        assert.deepEqual(
          events.map((e) => e.event),
          [JSON.parse(STARTED), { i: 1 }, { i: 2 }, { i: 3 }, JSON.parse(finished(0))],
        );
        for (const e of events) assert.deepEqual(e.source, SOURCE);
      } finally {
        await srv.close();
      }
    },
  );

  for (const [id, signal, number] of [
    ['7', 'SIGTERM', 15],
    ['8', 'SIGINT', 2],
  ] as const) {
    test(id, `${signal} is forwarded to the agent; its exit code (42) is kept`, async () => {
      const run = start(runtime, { MOCK_MODE: 'signal', MOCK_EXIT: '42' });
      await waitFor(() => run.lines.includes('{"started":1}'), 20_000, 'the mock to start');
      run.proc.kill(signal);
      const r = await run.done;
      assert.ok(r.stdout.includes(`{"signal":${number}}`), r.stdout.join('\n'));
      assert.equal(r.code, 42, r.stderr);
      assert.equal(r.stdout.at(-1), finished(42));
    });
  }

  test('9', 'SIGPIPE is ignored; a later SIGTERM is still forwarded', async () => {
    const run = start(runtime, { MOCK_MODE: 'signal', MOCK_EXIT: '42' });
    await waitFor(() => run.lines.includes('{"started":1}'), 20_000, 'the mock to start');
    run.proc.kill('SIGPIPE');
    run.proc.kill('SIGTERM');
    const r = await run.done;
    assert.equal(r.signal, null, 'the supervisor was not killed by a signal');
    assert.ok(r.stdout.includes('{"signal":15}'), r.stdout.join('\n'));
    assert.equal(r.code, 42, r.stderr);
  });

  test('10', 'crash: an agent that SIGKILLs itself gives a non-zero exit and a failed event', async () => {
    const r = await runToEnd(runtime, { MOCK_MODE: 'crash' });
    assert.equal(r.code, 137);
    assert.equal(r.stdout.at(-1), finished(137));
  });

  test('11', 'dead sink: output still streams, exit 0, "sink failed" on stderr, bounded time', async () => {
    const r = await runToEnd(runtime, { AGENT_NOTIFY_URL: 'http://127.0.0.1:1/notify', MOCK_LINES: '3' });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes('{"i":3}'));
    assert.equal(r.stdout.at(-1), finished(0));
    assert.match(r.stderr, /sink failed/);
    // Bounded: runToEnd fails the test when the supervisor has not exited within its deadline.
  });

  test('12', 'orphan: a detached grandchild holding stdout cannot keep the supervisor alive', async () => {
    const r = await runToEnd(runtime, { MOCK_MODE: 'orphan', MOCK_ORPHAN_SECONDS: '60' }, undefined, 20_000);
    const orphan = parsed(r.stdout).find((e) => typeof e.orphan === 'number')?.orphan as number | undefined;
    if (orphan !== undefined) killQuietly(orphan);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout[0], STARTED);
    assert.equal(r.stdout.at(-1), finished(0));
    // The orphan lives 60 s: exiting within runToEnd's 20 s deadline proves it did not hold the supervisor.
  });

  test('13', 'linger with SIGTERM ignored: escalates to SIGKILL, exit 0, succeeded', async () => {
    const r = await runToEnd(runtime, {
      MOCK_MODE: 'linger',
      MOCK_IGNORE_TERM: '1',
      AGENT_EXIT_GRACE_MS: '200',
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.at(-1), finished(0));
    assert.match(r.stderr, /sending SIGKILL/);
  });

  test('14', 'linger: an agent that dies on SIGTERM after its result gives exit 0', async () => {
    const r = await runToEnd(runtime, { MOCK_MODE: 'linger', AGENT_EXIT_GRACE_MS: '200' });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.at(-1), finished(0));
    assert.match(r.stderr, /forcing it down/);
    assert.doesNotMatch(r.stderr, /sending SIGKILL/);
  });

  test('15', 'deadline: a wedged agent ends with 124 and "run deadline expired"', async () => {
    const r = await runToEnd(runtime, { MOCK_MODE: 'wedge', AGENT_DEADLINE_MS: '700' });
    assert.equal(r.code, 124, r.stderr);
    assert.equal(r.stdout.at(-1), finished(124));
    assert.match(r.stderr, /run deadline expired/);
    // Not before the deadline; a wedged agent that the deadline did not end would outlive runToEnd's deadline.
    assert.ok(r.ms >= 700, `took ${r.ms} ms`);
  });

  test('15b', 'deadline: AGENT_DEADLINE_AT wins when it is earlier than AGENT_DEADLINE_MS', async () => {
    const r = await runToEnd(runtime, {
      MOCK_MODE: 'wedge',
      AGENT_DEADLINE_MS: '600000',
      AGENT_DEADLINE_AT: String(Date.now() + 1500),
      AGENT_EXIT_GRACE_MS: '300',
    });
    assert.equal(r.code, 124, r.stderr);
    assert.equal(r.stdout.at(-1), finished(124));
    // AGENT_DEADLINE_MS (10 min) would outlive runToEnd's deadline: exiting at all shows the earlier one won.
  });

  test('15c', 'deadline: a bad AGENT_DEADLINE_AT is reported and ignored, never a crash', async () => {
    const r = await runToEnd(runtime, { AGENT_DEADLINE_AT: 'tomorrow', AGENT_EXIT_GRACE_MS: '-5' });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /AGENT_DEADLINE_AT must be a positive integer/);
    assert.match(r.stderr, /AGENT_EXIT_GRACE_MS must be at least 1/);
    for (const line of r.stderr.trim().split('\n'))
      assert.equal(typeof JSON.parse(line).level, 'string', line);
  });

  test('16', 'stderr forwarding: agent stderr is tagged [agent] and kept off stdout', async () => {
    const r = await runToEnd(runtime, { MOCK_STDERR: 'auth failed: invalid api key' });
    assert.match(r.stderr, /^\[agent\] auth failed: invalid api key$/m);
    assert.ok(!r.stdout.join('\n').includes('auth failed'));
  });

  test('17', '4000 stderr lines (and 4000 stdout lines): no deadlock, all forwarded', async () => {
    const r = await runToEnd(runtime, { MOCK_STDERR_LINES: '4000', MOCK_LINES: '4000' });
    assert.equal(r.code, 0);
    const tagged = r.stderr.split('\n').filter((l) => l.startsWith('[agent] mock stderr line '));
    assert.equal(tagged.length, 4000);
    assert.equal(tagged.at(-1), '[agent] mock stderr line 4000 of 4000');
    assert.equal(r.stdout.filter((l) => l.startsWith('{"i":')).length, 4000);
    assert.equal(r.stdout.at(-1), finished(0));
  });

  test('18', 'bad argv: exit 1, "agent not found" on stderr, reason not-found', async () => {
    const r = await runToEnd(runtime, {}, ['/no-such-agent-binary-xyz']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /\[supervisor\] agent not found: \/no-such-agent-binary-xyz/);
    assert.deepEqual(r.stdout, [
      '{"kind":"lifecycle","phase":"agent","status":"failed","reason":"not-found"}',
    ]);
  });

  test('18b', 'bad argv: a bare name not on PATH is not found either', async () => {
    const r = await runToEnd(runtime, {}, ['no-such-agent-binary-xyz']);
    assert.equal(r.code, 1);
    assert.ok(r.stdout.join('').includes('"reason":"not-found"'));
  });

  test('19', 'watched file: a file event with name and content, before the terminal event', async () => {
    const ws = await freshDir('ws');
    const r = await runToEnd(runtime, {
      WORKSPACE_DIR: ws,
      MOCK_WRITE_FILE: join(ws, 'out', 'result.json'),
      MOCK_WRITE_BODY: '{"answer":42}',
      AGENT_WATCH: JSON.stringify([{ event: 'result-file', path: 'out/result.json' }]),
    });
    assert.equal(r.code, 0, r.stderr);
    const events = parsed(r.stdout);
    const fileIndex = events.findIndex((e) => e.kind === 'file');
    assert.deepEqual(events[fileIndex], {
      kind: 'file',
      event: 'result-file',
      path: join(ws, 'out', 'result.json'),
      content: '{"answer":42}',
    });
    assert.equal(fileIndex, events.length - 2, 'kind:file precedes status:succeeded');
    assert.equal(r.stdout.at(-1), finished(0));
  });

  test('20', 'watched file missing: reason missing, no content', async () => {
    const ws = await freshDir('ws-missing');
    const r = await runToEnd(runtime, {
      WORKSPACE_DIR: ws,
      AGENT_WATCH: JSON.stringify([{ event: 'result-file', path: 'out/none.json' }]),
    });
    const file = parsed(r.stdout).find((e) => e.kind === 'file');
    assert.deepEqual(file, {
      kind: 'file',
      event: 'result-file',
      path: join(ws, 'out', 'none.json'),
      reason: 'missing',
    });
  });

  test(
    '20b',
    'watch confinement: .., absolute and symlink escapes emit nothing; big files are too-large',
    async () => {
      const ws = await freshDir('ws-escape');
      const outside = await freshDir('outside');
      await writeFile(join(outside, 'secret.txt'), 'top secret');
      await symlink(join(outside, 'secret.txt'), join(ws, 'link.txt'));
      await symlink(outside, join(ws, 'linkdir'));
      await writeFile(join(ws, 'big.txt'), 'x'.repeat(131073));
      await writeFile(join(ws, 'edge.txt'), 'y'.repeat(131072));
      const r = await runToEnd(runtime, {
        WORKSPACE_DIR: ws,
        AGENT_WATCH: JSON.stringify([
          { event: 'dotdot', path: '../outside/secret.txt' },
          { event: 'absolute', path: join(outside, 'secret.txt') },
          { event: 'root', path: '.' },
          { event: 'symlink', path: 'link.txt' },
          { event: 'symlink-dir', path: 'linkdir/secret.txt' },
          { event: 'big', path: 'big.txt' },
          { event: 'edge', path: join(ws, 'edge.txt') },
          { event: '', path: 'x' },
        ]),
      });
      assert.equal(r.code, 0, r.stderr);
      assert.ok(!r.stdout.join('\n').includes('top secret'));
      const files = parsed(r.stdout).filter((e) => e.kind === 'file');
      assert.deepEqual(
        files.map((f) => [f.event, f.reason ?? (f.content as string).length]),
        [
          ['big', 'too-large'],
          ['edge', 131072],
        ],
      );
    },
  );

  test('21', 'conversation saved: one gzip POST that tar -xzf restores byte-identically', async () => {
    const home = await freshDir('home');
    const convDir = join(home, '.claude', 'projects', '-workspace-target');
    await mkdir(convDir, { recursive: true });
    const original = Buffer.from(`${'{"type":"user","message":"hi"}\n'.repeat(50)}\u00e9\u4e2d\n`, 'utf8');
    await writeFile(join(convDir, 'conv-new.jsonl'), original);
    const srv = await recorder();
    try {
      const r = await runToEnd(runtime, {
        HOME: home,
        AGENT_MODEL: 'claude-sonnet-4-6',
        AGENT_CONVERSATION_SOURCE: `${srv.base}/conversations`,
        AGENT_CONVERSATION_PIN: 'conv-new',
        AGENT_CONVERSATION_AUTH: 'CONV_AUTH',
        CONV_AUTH: 'Authorization: Bearer conv-token',
      });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(srv.requests.length, 1);
      const [req] = srv.requests;
      assert.equal(req?.url, '/conversations/conv-new');
      assert.equal(req?.headers['content-type'], 'application/gzip');
      assert.equal(req?.headers.authorization, 'Bearer conv-token');
      const body = req?.body ?? Buffer.alloc(0);
      assert.deepEqual([...body.subarray(0, 2)], [0x1f, 0x8b]);
      const out = await freshDir('restore');
      await writeFile(join(out, 'archive.tgz'), body);
      const tar = spawnSync('tar', ['-xzf', join(out, 'archive.tgz'), '-C', out], { encoding: 'utf8' });
      assert.equal(tar.status, 0, tar.stderr);
      const restored = await readFile(
        join(out, '.claude', 'projects', '-workspace-target', 'conv-new.jsonl'),
      );
      assert.ok(restored.equals(original), 'byte-identical');
      assert.ok(!r.stderr.includes('conv-token'), 'the credential is never logged');
    } finally {
      await srv.close();
    }
  });

  test('22', 'no conversation configured: no [conversation] lines', async () => {
    const r = await runToEnd(runtime, {});
    assert.equal(r.code, 0);
    assert.ok(!r.stderr.includes('[conversation]'));
  });

  test('S1', 'output.select: only selected agent lines reach the sink; stdout keeps everything', async () => {
    const srv = await recorder();
    try {
      const r = await runToEnd(runtime, {
        AGENT_NOTIFY_URL: `${srv.base}/notify`,
        MOCK_STYLE: 'claude',
        MOCK_TOOL: 'Bash',
        MOCK_LINES: '2',
        AGENT_SELECT: JSON.stringify([
          { event: 'tool_call', tool: 'Bash' },
          { event: 'message', contains: 'agent 2' },
          { event: 'bogus' },
        ]),
      });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /dropping output.select entry with unknown event 'bogus'/);
      const events = srv.events().map((e) => e.event as Record<string, unknown>);
      assert.deepEqual(
        events.map((e) => (e.kind === 'lifecycle' ? e.status : e.type)),
        ['started', 'assistant', 'assistant', 'succeeded'],
      );
      assert.ok(JSON.stringify(events[1]).includes('"tool_use"'));
      assert.ok(JSON.stringify(events[2]).includes('hello from the mock agent 2'));
      assert.equal(r.stdout.length, 8, 'stdout is never select-filtered');
    } finally {
      await srv.close();
    }
  });

  test(
    'S2',
    'terminal detection follows the model: codex turn.completed ends a lingering codex run',
    async () => {
      const r = await runToEnd(runtime, {
        MOCK_STYLE: 'codex',
        MOCK_MODE: 'linger',
        AGENT_MODEL: 'gpt-5-codex',
        AGENT_EXIT_GRACE_MS: '200',
      });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /forcing it down/);
    },
  );

  test('S3', 'terminal detection follows the model: a claude run ignores codex turn.completed', async () => {
    const r = await runToEnd(runtime, {
      MOCK_STYLE: 'codex',
      MOCK_MODE: 'linger',
      AGENT_MODEL: 'claude-opus-5-5',
      AGENT_DEADLINE_MS: '1200',
      AGENT_EXIT_GRACE_MS: '200',
    });
    assert.equal(r.code, 124, r.stderr);
  });

  test('S4', 'an error result forced down after grace ends with exit 1', async () => {
    const r = await runToEnd(runtime, {
      MOCK_STYLE: 'claude',
      MOCK_MODE: 'linger',
      MOCK_RESULT_ERROR: '1',
      MOCK_IGNORE_TERM: '1',
      AGENT_EXIT_GRACE_MS: '200',
    });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout.at(-1), finished(1));
  });

  test('S5', 'gemini: a successful result line is terminal for a gemini model', async () => {
    const r = await runToEnd(runtime, {
      MOCK_STYLE: 'gemini',
      MOCK_MODE: 'linger',
      AGENT_MODEL: 'gemini-3.8-flash',
      AGENT_EXIT_GRACE_MS: '200',
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /forcing it down/);
  });

  test('S6', 'an already-wrapped line is echoed but never wrapped again', async () => {
    const dir = await freshDir('double');
    const path = join(dir, 'events.jsonl');
    const wrapped = '{"source":{"agent":"x"},"event":{"i":0}}';
    const r = await runToEnd(runtime, {
      AGENT_SINKS: JSON.stringify([{ type: 'file', path }]),
      MOCK_PRINT: wrapped,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes(wrapped));
    assert.match(r.stderr, /BUG: refusing to wrap an already-wrapped agent output line/);
    const envelopes = parsed((await readFile(path, 'utf8')).split('\n'));
    assert.equal(envelopes.length, 3);
    assert.ok(envelopes.every((e) => !JSON.stringify(e.event).includes('"source"')));
  });

  test('S7', 'http sink headers come from the env var named by headers_secret', async () => {
    const srv = await recorder();
    try {
      const r = await runToEnd(runtime, {
        AGENT_SINKS: JSON.stringify([{ type: 'http', url: `${srv.base}/hook`, headers_secret: 'SINK_AUTH' }]),
        SINK_AUTH: 'Authorization: Bearer sink-token\nX-Run: test',
      });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(srv.requests.length, 3);
      for (const req of srv.requests) {
        assert.equal(req.headers.authorization, 'Bearer sink-token');
        assert.equal(req.headers['x-run'], 'test');
      }
      assert.ok(!r.stderr.includes('sink-token'));
    } finally {
      await srv.close();
    }
  });

  test(
    'P1',
    'AGENT_PROMPT_FILE: the prompt read from the file reaches the CLI intact, as argv or stdin',
    async () => {
      const dir = await freshDir('prompt');
      const file = join(dir, 'prompt');
      const fakeClaude = join(dir, 'claude');
      await writeFile(fakeClaude, `#!/bin/sh\nexec '${process.execPath}' '${MOCK}' "$@"\n`, { mode: 0o755 });
      const sha = (t: string) => createHash('sha256').update(t, 'utf8').digest('hex');
      const digestOf = (r: Finished) =>
        parsed(r.stdout.filter((l) => l.startsWith('{"prompt"'))).at(0)?.prompt;
      // Short: the last argument after the `--` fence, exactly as the reference passes it.
      const short = 'fix the -flaky test\nnow ✓';
      await writeFile(file, short);
      const env = { AGENT_PROMPT_FILE: file, MOCK_PROMPT_DIGEST: '1', AGENT_MODEL: 'claude-opus-5-5' };
      const a = await runToEnd(runtime, env, [fakeClaude, '-p', '--']);
      assert.equal(a.code, 0, a.stderr);
      assert.deepEqual(digestOf(a), { bytes: Buffer.byteLength(short), sha256: sha(short), via: 'argv' });
      // 500 KiB of mixed-width text: on stdin, byte for byte.
      const big = 'añ😀 line\n'.repeat(40_000).slice(0, 500 * 1024);
      await writeFile(file, big);
      const b = await runToEnd(runtime, env, [fakeClaude, '-p', '--']);
      assert.equal(b.code, 0, b.stderr);
      assert.deepEqual(digestOf(b), { bytes: Buffer.byteLength(big), sha256: sha(big), via: 'stdin' });
      // An exec recipe gets it on stdin too (no prompt argument).
      const c = await runToEnd(runtime, { ...env, AGENT_MODEL: 'exec' });
      assert.equal(c.code, 0, c.stderr);
      assert.deepEqual(digestOf(c), { bytes: Buffer.byteLength(big), sha256: sha(big), via: 'stdin' });
      // OpenCode reads every prompt on stdin (as an argument it would arrive quoted).
      const d = await runToEnd(runtime, { ...env, AGENT_MODEL: 'opencode/anthropic/claude-opus-5-5' });
      assert.equal(d.code, 0, d.stderr);
      assert.deepEqual(digestOf(d), { bytes: Buffer.byteLength(big), sha256: sha(big), via: 'stdin' });
      // A missing file: exit 1, the reason logged, the CLI never started.
      const e = await runToEnd(runtime, { ...env, AGENT_PROMPT_FILE: join(dir, 'absent') });
      assert.equal(e.code, 1);
      assert.match(e.stderr, /cannot read the prompt/);
      assert.ok(e.stdout.includes('{"kind":"lifecycle","phase":"agent","status":"failed","reason":"input"}'));
    },
  );
}

describe('supervisor host scenarios (Node, from source)', { concurrency: 3 }, () => {
  scenarios('node');
});

describe('supervisor host scenarios (Deno, bundle)', { concurrency: 2 }, () => {
  before(() => ensureFreshBundle());
  scenarios(
    'deno',
    new Set(['1', '2', '6', '7', '9', '12', '13', '15', '15b', '17', '18', '19', '20b', '21', 'P1']),
  );
});
