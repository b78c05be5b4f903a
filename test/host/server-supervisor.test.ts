// The server-mode supervisor on the host (AGENT_EXECUTION=server): the real `supervisor` subcommand serving the
// OpenAI-compatible API on a loopback port around a fake `claude` and `gemini` (the mock agent CLI in their styles,
// on PATH), on Node from source and on Deno from the bundle: what needs the process, its sockets and a real CLI. The
// routes themselves (the API key, paths and methods, validation, body limits, error shapes, the streams' framing) are
// tested through `app.request()` in src/pod/supervisor/server-app.test.ts. Here: the API key read from its file
// (AGENT_SERVER_API_KEY_FILE, as the pod mounts its Secret): a rewritten file switching keys without a restart, a
// missing or empty one answering 503 and failing /readyz until a key is there; an answer and its usage from a CLI,
// a streamed answer, the concurrency limit (429), the request timeout (504, the CLI gone), a client leaving
// mid-stream or before a plain answer (its CLI killed, its slot freed), a failing CLI (500), a 401 or 413 closing the
// connection without reading the body, resuming a session, the request id on every line of a turn (stdout and a file
// sink), SIGTERM (the turn in flight finishes, exit 0), /metrics (a stream counted by how it ended: 500, 504, 499),
// and unusable settings.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ensureFreshBundle } from '../support/bundle.ts';
import { capture, freePort, waitFor } from './harness.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MOCK = join(ROOT, 'test', 'mock-agent', 'mock-agent.mjs');
const BUNDLE = join(ROOT, 'dist', 'agent-controller.mjs');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');
const KEY = 'sk-test-0123456789abcdef0123456789';
const SESSION = 'sess-0001';

type Runtime = 'node' | 'deno';
/** Each test's timeout: a turn that is never stopped fails its test instead of hanging the file. */
const T = { timeout: 30_000 };
type Json = Record<string, unknown>;
interface Cli {
  readonly name: string;
  readonly model: string;
}
const CLAUDE: Cli = { name: 'claude', model: 'claude-opus-5-5' };
const GEMINI: Cli = { name: 'gemini', model: 'gemini-3.8-flash' };

/** True while a process with this pid exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface Served {
  readonly proc: ChildProcess;
  readonly url: string;
  readonly stdout: string[];
  readonly exited: Promise<number | null>;
  stderr(): string;
  /** The JSON stdout lines tagged with `requestId`. */
  linesOf(requestId: string): Json[];
}

/** Where each test file's fake bin folder keeps the key file every server reads unless told otherwise. */
const keyFileIn = (bin: string): string => join(bin, 'api-key');

/** Spawns the supervisor in server mode; resolves once it answers /healthz (or `ready: false`: at once). */
async function startServer(
  runtime: Runtime,
  bin: string,
  env: Record<string, string> = {},
  cli: Cli = CLAUDE,
  ready = true,
): Promise<Served> {
  const port = await freePort();
  const [cmd, args] =
    runtime === 'deno'
      ? [DENO, ['run', '-A', BUNDLE, 'supervisor', '--']]
      : [process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), 'supervisor', '--']];
  const proc = spawn(cmd, [...args, cli.name], {
    cwd: ROOT,
    env: {
      PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: process.env.HOME ?? '/tmp',
      AGENT_NAME: 'srv',
      POD_NAME: 'srv-pod',
      POD_NAMESPACE: 'ns',
      AGENT_MODEL: cli.model,
      AGENT_EXECUTION: 'server',
      AGENT_SERVER_API_KEY_FILE: keyFileIn(bin),
      AGENT_SERVER_PORT: String(port),
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
  if (ready) {
    await waitFor(
      async () => {
        if (proc.exitCode !== null)
          assert.fail(`the supervisor exited early (${proc.exitCode}): ${stderr()}`);
        const ok = await fetch(`${url}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
        return ok ? true : undefined;
      },
      20_000,
      'the API server',
    );
  }
  const linesOf = (requestId: string): Json[] =>
    stdout.flatMap((l) => {
      if (!l.includes(requestId)) return [];
      const value = JSON.parse(l) as Json;
      return value.requestId === requestId ? [value] : [];
    });
  return { proc, url, stdout, exited, stderr, linesOf };
}

const auth = { authorization: `Bearer ${KEY}` };

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Json;
  readonly text: string;
}

/** POSTs a chat completion request (`messages` from `prompt` unless the body has its own). */
async function chat(s: Served, body: Json, headers: Record<string, string> = auth): Promise<Answer> {
  const res = await fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: Json = {};
  if (res.headers.get('content-type')?.includes('application/json')) parsed = JSON.parse(text) as Json;
  return { status: res.status, headers: res.headers, body: parsed, text };
}

const ask = (prompt: string, extra: Json = {}): Json => ({
  model: 'anything',
  messages: [{ role: 'user', content: prompt }],
  ...extra,
});

/** The `data:` payloads of a server-sent event stream, in order. */
function sseEvents(text: string): string[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .flatMap((block) =>
      block
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice('data: '.length)),
    );
}

interface Chunk {
  readonly id: string;
  readonly object: string;
  readonly model: string;
  /** Absent on an error event. */
  readonly choices?: { delta: { role?: string; content?: string }; finish_reason: string | null }[];
  readonly usage?: Json;
  readonly session_id?: string;
  readonly error?: Json;
}

/** A streamed completion: its chunks (the `[DONE]` marker as a flag). */
async function chatStream(s: Served, body: Json) {
  const r = await chat(s, { ...body, stream: true });
  const events = sseEvents(r.text);
  const done = events.at(-1) === '[DONE]';
  const chunks = events.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e) as Chunk);
  const content = chunks.flatMap((c) => (c.choices ?? []).map((ch) => ch.delta.content ?? '')).join('');
  return { ...r, events, chunks, done, content };
}

async function health(s: Served): Promise<{ ok: boolean; inFlight: number }> {
  return (await (await fetch(`${s.url}/healthz`)).json()) as { ok: boolean; inFlight: number };
}

/** Waits until `n` turns are in flight. */
function inFlight(s: Served, n: number): Promise<true> {
  return waitFor(
    async () => ((await health(s)).inFlight === n ? true : undefined),
    10_000,
    `${n} turn(s) in flight`,
  );
}

/** The pid of a request's CLI (the fake CLI prints it first), once its line is out. */
function cliPid(s: Served, requestId: string): Promise<number> {
  return waitFor(
    () => {
      const line = s.linesOf(requestId).find((l) => typeof l.pid === 'number');
      return line === undefined ? undefined : (line.pid as number);
    },
    10_000,
    `the CLI pid of ${requestId}`,
  );
}

/** Waits until the process is gone. */
function gone(pid: number, what: string): Promise<true> {
  return waitFor(() => (alive(pid) ? undefined : true), 10_000, `${what} (pid ${pid}) to be gone`);
}

async function metrics(s: Served): Promise<{ text: string; value(series: string): number }> {
  const res = await fetch(`${s.url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  const text = await res.text();
  return {
    text,
    value(series) {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? 0 : Number(line.slice(series.length + 1));
    },
  };
}

/** What came back on a raw connection, and whether the server closed it. */
interface Raw {
  readonly text: string;
  readonly closed: boolean;
}

/**
 * Writes `data` on a fresh connection to the server; resolves with what came back once the server closes the
 * connection (`closed`), or after `ms` (then `closed: false`).
 */
function raw(s: Served, data: string, ms: number): Promise<Raw> {
  const { hostname, port } = new URL(s.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    let settled = false;
    const done = (closed: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => done(false), ms);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    // A reset (the server closing with our bytes unread) is a close too.
    socket.on('error', () => done(true));
    socket.on('close', () => done(true));
    socket.on('connect', () => socket.write(data));
  });
}

/** The status codes of the responses in raw HTTP text, in order (a body need not end in a newline). */
const statusesOf = (text: string): number[] =>
  [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

/** A raw chat completion request head (`length`: the content-length; undefined: chunked). */
function rawHead(s: Served, length: number | undefined, authorization = `Bearer ${KEY}`): string {
  const { host } = new URL(s.url);
  return [
    'POST /v1/chat/completions HTTP/1.1',
    `host: ${host}`,
    `authorization: ${authorization}`,
    'content-type: application/json',
    length === undefined ? 'transfer-encoding: chunked' : `content-length: ${length}`,
    '',
    '',
  ].join('\r\n');
}

/**
 * Stops a server this file started (by its process) and waits for it to be gone; the CLIs it started (their pids are
 * on its stdout, each leads its own process group) are killed too, so a failed test leaves no wedged CLI behind.
 */
async function stop(s: Served | undefined): Promise<void> {
  if (s === undefined) return;
  if (s.proc.exitCode === null && s.proc.signalCode === null) {
    s.proc.kill('SIGKILL');
    await s.exited;
  }
  for (const line of s.stdout) {
    const pid = /"pid":(\d+)/.exec(line)?.[1];
    if (pid === undefined) continue;
    try {
      process.kill(-Number(pid), 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

for (const runtime of ['node', 'deno'] as const) {
  const skip = runtime === 'deno' && !existsSync(DENO) ? 'deno is missing (npm ci installs it)' : false;
  describe(`server supervisor (${runtime})`, { skip }, () => {
    let bin: string;
    before(async () => {
      if (runtime === 'deno') ensureFreshBundle();
      bin = await mkdtemp(join(tmpdir(), 'srv-bin-'));
      // The fake CLIs: the mock agent, after a line with their pid and whether they were given the API key. A
      // prompt saying please-stall hangs ignoring SIGTERM, please-slow takes about a second, please-fail exits 3.
      const script = [
        '#!/bin/sh',
        'saw=""; [ -n "$AGENT_SERVER_API_KEY$AGENT_SERVER_API_KEY_FILE" ] && saw=yes',
        'echo "{\\"pid\\":$$,\\"sawApiKey\\":\\"$saw\\"}"',
        'case "$*" in',
        '  *please-stall*) export MOCK_MODE=wedge ;;',
        '  *please-slow*) export MOCK_DELAY_MS=300 MOCK_LINES=4 ;;',
        '  *please-fail*) export MOCK_EXIT=3 MOCK_STDERR="secret stderr text" ;;',
        '  *please-background*) sleep 60 >/dev/null 2>&1 & echo "{\\"background\\":$!}" ;;',
        'esac',
        `exec "${process.execPath}" "${MOCK}" "$@"`,
        '',
      ].join('\n');
      for (const name of ['claude', 'gemini']) {
        await writeFile(join(bin, name), script);
        await chmod(join(bin, name), 0o755);
      }
      // As a Secret made with --from-file would hold it: with a trailing newline.
      await writeFile(keyFileIn(bin), `${KEY}\n`);
    });
    after(() => rm(bin, { recursive: true, force: true }));

    describe('serving', () => {
      let s: Served;
      let sink: string;
      before(async () => {
        sink = join(bin, 'sink.jsonl');
        const system = join(bin, 'system.md');
        await writeFile(system, 'Definition rules.');
        s = await startServer(runtime, bin, {
          AGENT_SERVER_CONCURRENCY: '1',
          AGENT_SERVER_REQUEST_TIMEOUT_SECONDS: '60',
          AGENT_SERVER_MAX_BODY_BYTES: '4096',
          AGENT_SYSTEM_PROMPT_FILE: system,
          AGENT_SINKS: JSON.stringify([{ type: 'file', path: sink }]),
        });
      });
      after(() => stop(s));

      it(
        "answers with the CLI's final answer, its usage and session; every line of the turn carries the request id",
        T,
        async () => {
          const r = await chat(s, {
            model: 'gpt-4o',
            temperature: 0.3,
            messages: [
              { role: 'system', content: 'Be brief.' },
              { role: 'user', content: 'hello there' },
            ],
          });
          assert.equal(r.status, 200, r.text);
          const id = r.headers.get('x-request-id') ?? '';
          assert.match(id, /^chatcmpl-[0-9a-f]{24}$/);
          assert.equal(r.headers.get('x-session-id'), SESSION);
          assert.equal(r.body.id, id);
          assert.equal(r.body.object, 'chat.completion');
          assert.equal(r.body.model, CLAUDE.model, 'the served model, whatever the request named');
          assert.deepEqual(r.body.choices, [
            {
              index: 0,
              message: { role: 'assistant', content: 'echo: hello there', refusal: null },
              logprobs: null,
              finish_reason: 'stop',
            },
          ]);
          // The mock's usage: 12 uncached input, 3 cache reads, 2 cache writes, 7 output.
          assert.deepEqual(r.body.usage, {
            prompt_tokens: 17,
            completion_tokens: 7,
            total_tokens: 24,
            prompt_tokens_details: { cached_tokens: 3 },
          });
          assert.equal(r.body.session_id, SESSION);
          // stdout: the turn's lines, each tagged; the CLI got the system prompts and never the API key.
          const lines = s.linesOf(id);
          assert.deepEqual(lines[0], { requestId: id, pid: lines[0]?.pid, sawApiKey: '' });
          const argv = lines.find((l) => Array.isArray(l.argv))?.argv as string[];
          assert.ok(argv, 'the argv line is tagged');
          assert.equal(argv[argv.indexOf('--append-system-prompt') + 1], 'Definition rules.\n\nBe brief.');
          assert.equal(argv.at(-1), 'hello there');
          assert.ok(!argv.includes('--resume'), 'a request without session_id starts a fresh session');
          assert.ok(lines.some((l) => l.type === 'result'));
          // The file sink: enveloped lines with the request id next to the event.
          await waitFor(
            async () => {
              const text = await readFile(sink, 'utf8').catch(() => '');
              const envelopes = text
                .split('\n')
                .filter((l) => l !== '')
                .map((l) => JSON.parse(l) as { source: Json; event: Json; requestId?: string });
              const result = envelopes.find((e) => e.requestId === id && e.event.type === 'result');
              if (result === undefined) return undefined;
              assert.deepEqual(result.source, { agent: 'srv', pod: 'srv-pod', namespace: 'ns' });
              assert.ok(
                envelopes.some(
                  (e) => e.event.kind === 'lifecycle' && e.event.status === 'started' && !('requestId' in e),
                ),
              );
              return true;
            },
            10_000,
            'the result line in the file sink with its request id',
          );
        },
      );

      it('streams the answer as chunks ending with [DONE]; the deltas join to the answer', T, async () => {
        const r = await chatStream(s, ask('stream me', { stream_options: { include_usage: true } }));
        assert.equal(r.status, 200);
        assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
        assert.equal(r.done, true, 'the stream ends with [DONE]');
        const id = r.headers.get('x-request-id');
        for (const c of r.chunks) {
          assert.equal(c.id, id);
          assert.equal(c.object, 'chat.completion.chunk');
          assert.equal(c.model, CLAUDE.model);
        }
        assert.deepEqual(r.chunks[0]?.choices?.[0]?.delta, { role: 'assistant', content: '' });
        assert.equal(r.content, 'echo: stream me');
        const [last, usage] = r.chunks.slice(-2);
        assert.deepEqual(
          last?.choices?.map((c) => [c.delta, c.finish_reason]),
          [[{}, 'stop']],
        );
        assert.deepEqual(usage?.choices, []);
        assert.equal(usage?.usage?.total_tokens, 24);
        assert.equal(usage?.session_id, SESSION);
        assert.equal(
          r.chunks.filter((c) => (c.choices ?? []).some((ch) => ch.finish_reason !== null)).length,
          1,
        );
      });

      it('leaves the usage chunk out unless asked', T, async () => {
        const r = await chatStream(s, ask('no usage'));
        assert.equal(r.done, true);
        assert.ok(!r.chunks.some((c) => c.usage !== undefined));
        assert.equal(r.content, 'echo: no usage');
      });

      it('maps a conversation to a transcript prompt', T, async () => {
        const r = await chat(s, {
          messages: [
            { role: 'user', content: 'one' },
            { role: 'assistant', content: 'two' },
            { role: 'user', content: [{ type: 'text', text: 'three' }] },
          ],
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(
          (r.body.choices as { message: { content: string } }[])[0]?.message.content,
          'echo: User: one\n\nAssistant: two\n\nUser: three',
        );
      });

      it('resumes the session named by session_id', T, async () => {
        const r = await chat(s, ask('go on', { session_id: 'sess-resume-42' }));
        assert.equal(r.status, 200, r.text);
        const argv = s.linesOf(r.headers.get('x-request-id') ?? '').find((l) => Array.isArray(l.argv))
          ?.argv as string[];
        assert.deepEqual(argv.slice(argv.indexOf('--resume'), argv.indexOf('--resume') + 2), [
          '--resume',
          'sess-resume-42',
        ]);
        // The mock reports the session it resumes.
        assert.equal(r.body.session_id, 'sess-resume-42');
        assert.equal(r.headers.get('x-session-id'), 'sess-resume-42');
      });

      it('answers a CLI failure with 500 naming only the exit code', T, async () => {
        const r = await chat(s, ask('please-fail now'));
        assert.equal(r.status, 500);
        assert.deepEqual(r.body, {
          error: {
            message: 'The agent CLI exited with code 3',
            type: 'server_error',
            param: null,
            code: 'agent_failed',
          },
        });
        assert.ok(!r.text.includes('secret'), 'nothing of the CLI output or stderr');
        const m0 = await metrics(s);
        const streamed = await chatStream(s, ask('please-fail again'));
        assert.equal(streamed.status, 200, 'the status line of a stream is sent before the turn runs');
        assert.equal(streamed.done, false, 'no [DONE] after an error');
        assert.equal(streamed.chunks.at(-1)?.error?.type, 'server_error');
        // The metric counts how the stream ended, not its status line.
        await waitFor(
          async () => {
            const m1 = await metrics(s);
            const failed = m1.value('agent_server_requests_total{code="500"}');
            return failed === m0.value('agent_server_requests_total{code="500"}') + 1 ? m1 : undefined;
          },
          5000,
          'the failed stream counted as 500',
        ).then((m1) =>
          assert.equal(
            m1.value('agent_server_requests_total{code="200"}'),
            m0.value('agent_server_requests_total{code="200"}'),
            'a failed stream is no 200',
          ),
        );
      });

      it('kills what a turn left running in its process group when it is over', T, async () => {
        const r = await chat(s, ask('please-background now'));
        assert.equal(r.status, 200, r.text);
        const line = s
          .linesOf(r.headers.get('x-request-id') ?? '')
          .find((l) => typeof l.background === 'number');
        assert.ok(line, 'the fake CLI started a background process');
        await gone(line.background as number, 'the background process of a finished turn');
      });

      it(
        'refuses one more turn than AGENT_SERVER_CONCURRENCY with 429 and Retry-After, never queueing it',
        T,
        async () => {
          const first = chat(s, ask('please-slow one'));
          await inFlight(s, 1);
          const second = await chat(s, ask('too many'));
          assert.equal(second.status, 429);
          assert.equal(second.headers.get('retry-after'), '1');
          assert.equal((second.body.error as Json).type, 'rate_limit_exceeded');
          const stream = await chatStream(s, ask('too many streamed'));
          assert.equal(stream.status, 429);
          const done = await first;
          assert.equal(done.status, 200);
          assert.equal(
            (done.body.choices as { message: { content: string } }[])[0]?.message.content,
            'echo: please-slow one 4',
          );
          assert.ok(!s.stdout.some((l) => l.includes('echo: too many')), 'the refused request never ran');
          assert.deepEqual(await health(s), { ok: true, inFlight: 0 });
        },
      );

      it('stops the turn of a client that leaves mid-stream', T, async () => {
        const abort = new AbortController();
        const res = await fetch(`${s.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...auth },
          body: JSON.stringify(ask('please-stall forever', { stream: true })),
          signal: abort.signal,
        });
        assert.equal(res.status, 200);
        const id = res.headers.get('x-request-id') ?? '';
        const reader = res.body?.getReader();
        assert.ok(reader);
        let text = '';
        // Read until the assistant text has come: the CLI is running and wedged.
        while (!text.includes('echo: please-stall')) {
          const { value, done } = await reader.read();
          assert.ok(!done, 'the stream ended early');
          text += new TextDecoder().decode(value);
        }
        const pid = await cliPid(s, id);
        assert.ok(alive(pid));
        const m0 = await metrics(s);
        abort.abort();
        await gone(pid, 'the CLI of a client that left');
        await inFlight(s, 0);
        const m1 = await metrics(s);
        assert.equal(
          m1.value('agent_server_requests_total{code="499"}'),
          m0.value('agent_server_requests_total{code="499"}') + 1,
          'a stream whose client left is counted as 499',
        );
        assert.equal(
          m1.value('agent_server_requests_total{code="200"}'),
          m0.value('agent_server_requests_total{code="200"}'),
        );
      });

      it(
        'stops the turn of a client that leaves before a non-streamed answer, freeing its slot',
        T,
        async () => {
          const abort = new AbortController();
          const prompt = 'please-stall unanswered';
          const pending = fetch(`${s.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...auth },
            body: JSON.stringify(ask(prompt)),
            signal: abort.signal,
          }).then(
            () => assert.fail('the request was answered'),
            (error: unknown) => error,
          );
          // The CLI of this request runs (and is wedged): its argv line names the prompt.
          const id = await waitFor(
            () => {
              const line = s.stdout.find((l) => l.includes('"argv"') && l.includes(prompt));
              return line === undefined ? undefined : ((JSON.parse(line) as Json).requestId as string);
            },
            10_000,
            'the CLI of the request',
          );
          const pid = await cliPid(s, id);
          assert.ok(alive(pid));
          await inFlight(s, 1);
          const m0 = await metrics(s);
          abort.abort();
          assert.equal(((await pending) as Error).name, 'AbortError');
          await gone(pid, 'the CLI of a client that left');
          await inFlight(s, 0);
          // The concurrency is 1: the slot is free again.
          const next = await chat(s, ask('after the one who left'));
          assert.equal(next.status, 200, next.text);
          const m1 = await metrics(s);
          assert.equal(
            m1.value('agent_server_requests_total{code="499"}'),
            m0.value('agent_server_requests_total{code="499"}') + 1,
          );
          assert.ok(
            s.linesOf(id).every((l) => l.requestId === id),
            'the turn lines carry the request id',
          );
        },
      );

      it('closes the connection after a 401 without reading the body', T, async () => {
        const r = await raw(
          s,
          `${rawHead(s, 100 * 1024 * 1024, 'Bearer wrong')}${'x'.repeat(64 * 1024)}`,
          5000,
        );
        assert.deepEqual(statusesOf(r.text), [401], r.text);
        assert.match(r.text, /^connection: close\r$/im);
        assert.ok(r.closed, 'the server closed the connection instead of waiting for the body');
      });

      it('closes the connection after a 413 without reading the rest of the body', T, async () => {
        // Declared too large: refused before any of it is read.
        const declared = await raw(s, `${rawHead(s, 100 * 1024 * 1024)}${'x'.repeat(1024)}`, 5000);
        assert.deepEqual(statusesOf(declared.text), [413], declared.text);
        assert.match(declared.text, /^connection: close\r$/im);
        assert.ok(declared.closed, 'the server closed the connection (declared length)');
        // Chunked, never ending: refused once it passes the limit.
        const chunk = 'x'.repeat(8192);
        const chunked = await raw(s, `${rawHead(s, undefined)}${(8192).toString(16)}\r\n${chunk}\r\n`, 5000);
        assert.deepEqual(statusesOf(chunked.text), [413], chunked.text);
        assert.match(chunked.text, /^connection: close\r$/im);
        assert.ok(chunked.closed, 'the server closed the connection (chunked)');
        assert.deepEqual(await health(s), { ok: true, inFlight: 0 });
      });

      it('counts requests by status code in /metrics', T, async () => {
        const m0 = await metrics(s);
        const ok0 = m0.value('agent_server_requests_total{code="200"}');
        const unauthorized0 = m0.value('agent_server_requests_total{code="401"}');
        const count0 = m0.value('agent_server_request_duration_seconds_count');
        assert.equal((await chat(s, ask('counted'))).status, 200);
        assert.equal((await chat(s, ask('counted'), {})).status, 401);
        assert.equal((await chat(s, ask('counted'), { authorization: 'Bearer x' })).status, 401);
        await health(s);
        const m1 = await metrics(s);
        assert.equal(m1.value('agent_server_requests_total{code="200"}'), ok0 + 1);
        assert.equal(m1.value('agent_server_requests_total{code="401"}'), unauthorized0 + 2);
        assert.equal(
          m1.value('agent_server_request_duration_seconds_count'),
          count0 + 3,
          'health is not counted',
        );
        assert.equal(m1.value('agent_server_requests_in_flight'), 0);
        assert.equal(m1.value('agent_server_concurrency_limit'), 1);
        assert.match(m1.text, /agent_server_request_duration_seconds_bucket\{le="600"\}/);
        assert.ok(!m1.text.includes(KEY));
      });

      it('never logs the API key', T, () => {
        assert.ok(!s.stderr().includes(KEY));
        assert.ok(!s.stdout.some((l) => l.includes(KEY)));
        assert.ok(
          s.stdout.filter((l) => l.includes('"sawApiKey"')).every((l) => l.includes('"sawApiKey":""')),
          'no CLI saw the key',
        );
      });
    });

    describe('streaming Gemini deltas', () => {
      let s: Served;
      before(async () => {
        s = await startServer(runtime, bin, { MOCK_LINES: '3' }, GEMINI);
      });
      after(() => stop(s));

      it('streams each delta chunk as it comes; they join to the non-streamed answer', T, async () => {
        const plain = await chat(s, ask('tell me three things'));
        assert.equal(plain.status, 200, plain.text);
        const answer = (plain.body.choices as { message: { content: string } }[])[0]?.message.content;
        assert.equal(answer, 'echo: tell me three things');
        const r = await chatStream(
          s,
          ask('tell me three things', { stream_options: { include_usage: true } }),
        );
        assert.equal(r.done, true);
        const deltas = r.chunks
          .flatMap((c) => (c.choices ?? []).map((ch) => ch.delta.content ?? ''))
          .filter((d) => d !== '');
        assert.equal(deltas.length, 3, JSON.stringify(deltas));
        assert.equal(r.content, answer);
        // Gemini's usage: 12 input of which 3 cached, 7 output.
        assert.deepEqual(r.chunks.at(-1)?.usage, {
          prompt_tokens: 12,
          completion_tokens: 7,
          total_tokens: 19,
          prompt_tokens_details: { cached_tokens: 3 },
        });
      });
    });

    describe('the request timeout', () => {
      let s: Served;
      before(async () => {
        s = await startServer(runtime, bin, { AGENT_SERVER_REQUEST_TIMEOUT_SECONDS: '1' });
      });
      after(() => stop(s));

      it('kills a turn past the timeout (SIGKILL after an ignored SIGTERM) and answers 504', T, async () => {
        const started = Date.now();
        const r = await chat(s, ask('please-stall now'));
        const took = Date.now() - started;
        assert.equal(r.status, 504, r.text);
        assert.equal((r.body.error as Json).type, 'timeout');
        assert.ok(took >= 1000, `answered after ${took} ms, before the timeout`);
        const pid = await cliPid(s, r.headers.get('x-request-id') ?? '');
        await gone(pid, 'the timed-out CLI');
        await inFlight(s, 0);
      });

      it('ends a stream past the timeout with an error event, counted as 504', T, async () => {
        const m0 = await metrics(s);
        const r = await chatStream(s, ask('please-stall streamed'));
        assert.equal(r.status, 200);
        await waitFor(
          async () => {
            const m1 = await metrics(s);
            return m1.value('agent_server_requests_total{code="504"}') ===
              m0.value('agent_server_requests_total{code="504"}') + 1
              ? true
              : undefined;
          },
          5000,
          'the timed-out stream counted as 504',
        );
        assert.equal(
          (await metrics(s)).value('agent_server_requests_total{code="200"}'),
          m0.value('agent_server_requests_total{code="200"}'),
          'a timed-out stream is no 200',
        );
        assert.equal(r.done, false, 'no [DONE] after an error');
        assert.equal(r.chunks.at(-1)?.error?.type, 'timeout');
        assert.equal(
          r.content,
          'echo: please-stall streamed',
          'what was said before the timeout was streamed',
        );
        await gone(await cliPid(s, r.headers.get('x-request-id') ?? ''), 'the timed-out CLI');
      });

      it('serves quick turns as usual', T, async () => {
        assert.equal((await chat(s, ask('quick'))).status, 200);
      });
    });

    describe('SIGTERM', () => {
      it('stops listening, lets the turn in flight finish, and exits 0', T, async () => {
        const s = await startServer(runtime, bin, { AGENT_EXIT_GRACE_MS: '10000' });
        try {
          const pending = chat(s, ask('please-slow last'));
          await inFlight(s, 1);
          s.proc.kill('SIGTERM');
          const r = await pending;
          assert.equal(r.status, 200, r.text);
          assert.equal(
            (r.body.choices as { message: { content: string } }[])[0]?.message.content,
            'echo: please-slow last 4',
          );
          assert.equal(await s.exited, 0);
          assert.match(s.stdout.at(-1) ?? '', /"status":"succeeded","exitCode":0/);
          await assert.rejects(fetch(`${s.url}/healthz`), 'the listener is closed');
        } finally {
          await stop(s);
        }
      });

      it('kills a turn that outlives the grace, answers it 503, and exits 0', T, async () => {
        const s = await startServer(runtime, bin, { AGENT_EXIT_GRACE_MS: '500' });
        try {
          const pending = chat(s, ask('please-stall until the end'));
          await inFlight(s, 1);
          const id = await waitFor(
            () => s.stdout.map((l) => /"requestId":"(chatcmpl-[0-9a-f]+)","pid"/.exec(l)?.[1]).find(Boolean),
            10_000,
            'the stalled CLI',
          );
          const pid = await cliPid(s, id);
          s.proc.kill('SIGTERM');
          const r = await pending;
          assert.equal(r.status, 503);
          assert.equal((r.body.error as Json).code, 'shutting_down');
          assert.equal(await s.exited, 0);
          assert.ok(!alive(pid), 'the CLI is gone');
        } finally {
          await stop(s);
        }
      });
    });

    describe('the API key file', () => {
      /** A folder laid out as the kubelet writes a Secret volume: `api-key -> ..data/api-key`, `..data -> <dir>`. */
      async function secretVolume(key: string): Promise<{ file: string; swap(key: string): Promise<void> }> {
        const dir = await mkdtemp(join(bin, 'vol-'));
        let n = 0;
        const swap = async (next: string): Promise<void> => {
          const data = `..${++n}`;
          await mkdir(join(dir, data));
          await writeFile(join(dir, data, 'api-key'), next);
          // One rename switches every file at once, as the kubelet's atomic writer does.
          await symlink(data, join(dir, '..data_tmp'));
          await rename(join(dir, '..data_tmp'), join(dir, '..data'));
        };
        await swap(key);
        await symlink('..data/api-key', join(dir, 'api-key'));
        return { file: join(dir, 'api-key'), swap };
      }

      const models = async (s: Served, key: string): Promise<number> =>
        (await fetch(`${s.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status;
      const readyz = async (s: Served): Promise<{ status: number; body: Json }> => {
        const res = await fetch(`${s.url}/readyz`);
        return { status: res.status, body: (await res.json()) as Json };
      };

      it('serves with the key its file holds; /readyz and /healthz pass', T, async () => {
        const vol = await secretVolume(`${KEY}\n`);
        const s = await startServer(runtime, bin, { AGENT_SERVER_API_KEY_FILE: vol.file });
        try {
          assert.equal(await models(s, KEY), 200);
          assert.equal((await chat(s, ask('from the file'))).status, 200);
          assert.equal(await models(s, `${KEY}x`), 401);
          assert.deepEqual(await readyz(s), { status: 200, body: { ok: true, inFlight: 0 } });
          assert.deepEqual(await health(s), { ok: true, inFlight: 0 });
          assert.match(s.stderr(), /API key loaded/);
        } finally {
          await stop(s);
        }
      });

      it(
        'switches to a rewritten key without a restart: the new one answers, the old one is refused 401',
        T,
        async () => {
          const vol = await secretVolume(KEY);
          const s = await startServer(runtime, bin, { AGENT_SERVER_API_KEY_FILE: vol.file });
          const next = 'sk-next-9876543210fedcba9876543210';
          try {
            assert.equal(await models(s, KEY), 200);
            await vol.swap(`${next}\n`);
            await waitFor(
              async () => ((await models(s, next)) === 200 ? true : undefined),
              10_000,
              'the new key',
            );
            assert.equal(await models(s, KEY), 401, 'the old key is refused');
            assert.equal((await chat(s, ask('new key'), { authorization: `Bearer ${next}` })).status, 200);
            assert.equal((await chat(s, ask('old key'))).status, 401);
            assert.equal(s.proc.exitCode, null, 'the same process: no restart');
            assert.match(s.stderr(), /the API key changed; the new one is in use/);
            for (const k of [KEY, next]) {
              assert.ok(!s.stderr().includes(k), 'no key in the log');
              assert.ok(!s.stdout.some((l) => l.includes(k)));
            }
          } finally {
            await stop(s);
          }
        },
      );

      it(
        'without a key file answers every API request 503 and is not ready; a key appearing makes it ready',
        T,
        async () => {
          const dir = await mkdtemp(join(bin, 'nokey-'));
          const file = join(dir, 'api-key');
          const s = await startServer(runtime, bin, { AGENT_SERVER_API_KEY_FILE: file });
          try {
            assert.deepEqual(await health(s), { ok: true, inFlight: 0 }, 'alive: the liveness probe passes');
            const ready = await readyz(s);
            assert.equal(ready.status, 503);
            assert.equal(ready.body.ok, false);
            assert.match(String(ready.body.reason), /no usable API key: the API key file is missing/);
            for (const headers of [auth, {}]) {
              const r = await chat(s, ask('anyone?'), headers);
              assert.equal(r.status, 503);
              assert.equal(r.headers.get('retry-after'), '5');
              assert.deepEqual(r.body, {
                error: {
                  message:
                    'The server has no usable API key yet (its key file is missing, empty or too short); retry later',
                  type: 'server_error',
                  param: null,
                  code: 'api_key_unavailable',
                },
              });
            }
            assert.equal(await models(s, KEY), 503);
            assert.ok(!s.stdout.some((l) => l.includes('"pid"')), 'no CLI ran');
            assert.match(s.stderr(), /no usable API key: the API key file is missing/);
            // An empty file is no key either.
            await writeFile(file, '\n');
            await waitFor(
              async () =>
                /the API key file is empty/.test(String((await readyz(s)).body.reason)) ? true : undefined,
              10_000,
              'the empty file seen',
            );
            assert.equal(await models(s, KEY), 503);
            // The key arrives: ready, and it answers.
            await writeFile(file, KEY);
            await waitFor(async () => ((await readyz(s)).status === 200 ? true : undefined), 10_000, 'ready');
            assert.equal(await models(s, KEY), 200);
            assert.equal((await chat(s, ask('now?'))).status, 200);
            assert.equal(s.proc.exitCode, null);
          } finally {
            await stop(s);
          }
        },
      );
    });

    describe('unusable settings', () => {
      const cases: [string, Record<string, string>, RegExp][] = [
        [
          'no API key file named (a key in the environment is not read)',
          { AGENT_SERVER_API_KEY_FILE: '', AGENT_SERVER_API_KEY: KEY },
          /AGENT_SERVER_API_KEY_FILE is not set/,
        ],
        [
          'a concurrency of 0',
          { AGENT_SERVER_CONCURRENCY: '0' },
          /AGENT_SERVER_CONCURRENCY must be an integer/,
        ],
        [
          'a timeout that is no number',
          { AGENT_SERVER_REQUEST_TIMEOUT_SECONDS: '5m' },
          /AGENT_SERVER_REQUEST_TIMEOUT_SECONDS/,
        ],
        ['no recipe', { AGENT_RUN_RECIPE: '' }, /AGENT_RUN_RECIPE is not JSON/],
      ];
      for (const [what, env, message] of cases) {
        it(`exits 1 with one clear log line for ${what}`, T, async () => {
          const s = await startServer(runtime, bin, env, CLAUDE, false);
          try {
            assert.equal(await s.exited, 1);
            const errors = s
              .stderr()
              .split('\n')
              .filter((l) => l.includes('"level":"error"'));
            assert.equal(errors.length, 1, s.stderr());
            assert.match(errors[0] ?? '', message);
            assert.ok(!s.stderr().includes(KEY));
          } finally {
            await stop(s);
          }
        });
      }
    });
  });
}
