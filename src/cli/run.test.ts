import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from './command.ts';
import { guarded } from './context.ts';
import {
  AGENTS_PATH,
  captureIo,
  DEFINITIONS_PATH,
  FakeCluster,
  fakeDeps,
  PODS_PATH,
  STATIONS_PATH,
  until,
} from './fake-cluster.ts';
import { agentBody, parseRunRequest, promptWarning, runSpec } from './run.ts';
import { rawAgent, rawDefinition, rawStation } from './test-fixtures.ts';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

function cluster(stationSpec: Record<string, unknown> = {}, definitionSpec: Record<string, unknown> = {}) {
  const c = new FakeCluster();
  c.put(STATIONS_PATH, rawStation('hello', stationSpec) as Obj);
  c.put(DEFINITIONS_PATH, rawDefinition('hello', definitionSpec) as Obj);
  return c;
}

/** The controller's side: sets the created Agent's status. */
function setStatus(c: FakeCluster, name: string, status: Record<string, unknown>): void {
  const a = c.get(AGENTS_PATH, name);
  assert.ok(a, `agent ${name} exists`);
  c.put(AGENTS_PATH, { ...a, status });
}

const created = (c: FakeCluster) => c.calls('POST', AGENTS_PATH);
const agentWatch = (c: FakeCluster) => c.watching(AGENTS_PATH) > 0;

describe('run: flags (pure)', () => {
  it('collects station, parameters, prompt, model, name, wait/follow, timeout', () => {
    const req = parseRunRequest(
      {
        set: ['a=1', 'b=x=y', 'c='],
        model: 'm',
        name: 'n',
        follow: true,
        json: true,
        timeout: '1m30s',
        prompt: 'go',
      },
      ['hello'],
    );
    assert.deepEqual(req, {
      station: 'hello',
      name: 'n',
      model: 'm',
      parameters: { a: '1', b: 'x=y', c: '' },
      prompt: { text: 'go' },
      wait: true,
      follow: true,
      raw: true,
      timeoutMs: 90_000,
    });
    assert.deepEqual(parseRunRequest({ 'prompt-file': '-' }, ['s']).prompt, { file: '-' });
  });

  it('refuses contradictions with a usage error', () => {
    const bad: [Record<string, unknown>, string[], RegExp][] = [
      [{}, [], /missing the Station/],
      [{}, ['a', 'b'], /unexpected argument "b"/],
      [{ prompt: 'x', 'prompt-file': 'f' }, ['s'], /not both/],
      [{ 'prompt-file': '' }, ['s'], /needs a file/],
      [{ prompt: 'x', set: ['prompt=y'] }, ['s'], /both set the parameter prompt/],
      [{ json: true, wait: true }, ['s'], /--json prints the raw log lines of --follow/],
      [{ timeout: '5m' }, ['s'], /--timeout needs --wait or --follow/],
      [{ wait: true, timeout: 'soon' }, ['s'], /--timeout must be a duration/],
      [{ set: ['novalue'] }, ['s'], /--set takes key=value/],
      [{ name: '' }, ['s'], /--name must not be empty/],
    ];
    for (const [values, pos, msg] of bad)
      assert.throws(
        () => parseRunRequest(values, pos),
        (e) => e instanceof UsageError && msg.test(e.message),
      );
  });

  it('the Agent body: generateName unless named, parameters with the prompt, the model', () => {
    const req = parseRunRequest({ set: ['name=world'] }, ['hello']);
    assert.deepEqual(agentBody(req, undefined), {
      metadata: { generateName: 'hello-' },
      spec: { stationRef: 'hello', parameters: { name: 'world' } },
    });
    assert.deepEqual(agentBody(parseRunRequest({ name: 'mine', model: 'gpt-6' }, ['hello']), 'do it'), {
      metadata: { name: 'mine' },
      spec: { stationRef: 'hello', parameters: { prompt: 'do it' }, model: 'gpt-6' },
    });
    assert.deepEqual(agentBody(parseRunRequest({}, ['hello']), undefined), {
      metadata: { generateName: 'hello-' },
      spec: { stationRef: 'hello' },
    });
  });

  it('warns when the prompt template has no {prompt}', () => {
    const def = (prompt: string) =>
      ({ kind: 'ok', value: { metadata: { name: 'd' }, spec: { prompt } } }) as unknown as Parameters<
        typeof promptWarning
      >[0];
    assert.equal(promptWarning(def('Review {prompt}'), 'x'), undefined);
    assert.match(promptWarning(def('Say hello to {name}'), 'x') ?? '', /has no \{prompt\} placeholder/);
    assert.equal(promptWarning(def('Say hello'), undefined), undefined);
    assert.equal(promptWarning({ kind: 'forbidden' }, 'x'), undefined);
  });
});

describe('run: creating the Agent', () => {
  it('creates an Agent of the Station and prints its name', async () => {
    const c = cluster();
    const io = captureIo(['hello', '--set', 'name=world', '-n', 'team', '--model', 'claude-sonnet-5-5']);
    const deps = fakeDeps(c);
    assert.equal(await guarded(runSpec, io, deps), 0);
    const post = created(c)[0];
    assert.deepEqual(post?.body, {
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'Agent',
      metadata: { generateName: 'hello-' },
      spec: { stationRef: 'hello', parameters: { name: 'world' }, model: 'claude-sonnet-5-5' },
    });
    assert.equal(io.stdoutText(), 'hello-xxxx1\n');
    assert.equal(io.stderrText(), '');
    assert.deepEqual(deps.connected, [{ kubeconfig: undefined, context: undefined, namespace: 'team' }]);
    assert.equal(deps.closed, 1, 'the connection is closed');
  });

  it('reads the prompt from stdin with --prompt-file -, and from a file', async () => {
    const c = cluster();
    const deps = fakeDeps(c, { stdin: 'review this diff\n', files: { 'task.md': 'the task' } });
    assert.equal(await guarded(runSpec, captureIo(['hello', '--prompt-file', '-']), deps), 0);
    const body = (i: number) => created(c)[i]?.body as { spec: { parameters?: unknown } };
    assert.deepEqual(body(0).spec, {
      stationRef: 'hello',
      parameters: { prompt: 'review this diff\n' },
    });
    assert.equal(await guarded(runSpec, captureIo(['hello', '--prompt-file', 'task.md']), deps), 0);
    assert.deepEqual(body(1).spec.parameters, {
      prompt: 'the task',
    });
    const io = captureIo(['hello', '--prompt-file', 'nope.md']);
    assert.equal(await guarded(runSpec, io, deps), 1);
    assert.match(io.stderrText(), /^error: cannot read --prompt-file nope\.md: ENOENT/);
  });

  it('warns on stderr when the definition does not use {prompt}', async () => {
    const c = cluster({}, { prompt: 'Say hello to {name}' });
    const io = captureIo(['hello', '--prompt', 'hi']);
    assert.equal(await guarded(runSpec, io, fakeDeps(c)), 0);
    assert.match(
      io.stderrText(),
      /^warning: the prompt of AgentDefinition "hello" has no \{prompt\} placeholder/,
    );
  });

  it('a missing Station is exit 4 with one line, and nothing is created', async () => {
    const c = cluster();
    const io = captureIo(['nope']);
    assert.equal(await guarded(runSpec, io, fakeDeps(c)), 4);
    assert.equal(io.stderrText(), 'error: station "nope" not found in namespace "team"\n');
    assert.equal(created(c).length, 0);
  });

  it('a refused create is exit 3 with the API server message', async () => {
    const c = cluster();
    c.override = (req) =>
      req.method === 'POST'
        ? {
            status: 403,
            body: {
              kind: 'Status',
              code: 403,
              reason: 'Forbidden',
              message: 'agents.agents.re-cinq.com is forbidden: User "dev" cannot create resource "agents"',
            },
          }
        : undefined;
    const io = captureIo(['hello']);
    assert.equal(await guarded(runSpec, io, fakeDeps(c)), 3);
    assert.equal(
      io.stderrText(),
      'error: not allowed (403): agents.agents.re-cinq.com is forbidden: User "dev" cannot create resource "agents"\n',
    );
  });

  it('a Station that cannot be read (403) does not stop the run', async () => {
    const c = cluster();
    c.override = (req) =>
      req.method === 'GET' && req.path.startsWith(STATIONS_PATH)
        ? { status: 403, body: { kind: 'Status', code: 403 } }
        : undefined;
    const io = captureIo(['hello']);
    assert.equal(await guarded(runSpec, io, fakeDeps(c)), 0);
    assert.equal(created(c).length, 1);
  });

  it('a name already taken is one line, exit 1', async () => {
    const c = cluster();
    c.put(AGENTS_PATH, rawAgent('mine') as Obj);
    const io = captureIo(['hello', '--name', 'mine']);
    assert.equal(await guarded(runSpec, io, fakeDeps(c)), 1);
    assert.equal(io.stderrText(), 'error: agent "mine" in namespace "team" already exists\n');
  });

  it('usage mistakes are exit 2 with a pointer to --help; --help is exit 0', async () => {
    const io = captureIo(['--bogus']);
    assert.equal(await guarded(runSpec, io, fakeDeps(cluster(), { program: 'kubectl agent' })), 2);
    assert.match(io.stderrText(), /^error: Unknown option '--bogus'.*\(see 'kubectl agent run --help'\)\n$/);
    const help = captureIo(['--help']);
    assert.equal(await guarded(runSpec, help, fakeDeps(cluster(), { program: 'kubectl agent' })), 0);
    assert.match(help.stdoutText(), /^Usage: kubectl agent run <station>/);
    assert.match(help.stdoutText(), /Examples:/);
    assert.match(help.stdoutText(), /Exit codes: 0 ok; 1 the run failed/);
  });
});

describe('run --wait', () => {
  it('waits for the run and exits with its exit code; off a terminal, a line per change', async () => {
    const c = cluster();
    const io = captureIo(['hello', '--wait']);
    const deps = fakeDeps(c);
    const done = guarded(runSpec, io, deps);
    await until(() => agentWatch(c), 'the agents watch');
    setStatus(c, 'hello-xxxx1', { phase: 'Running', jobName: 'agent-job-hello-xxxx1' });
    await until(() => io.stderrText().includes('Running'), 'the Running line');
    await deps.clock.advance(12_000);
    setStatus(c, 'hello-xxxx1', { phase: 'Succeeded', exitCode: 0, jobName: 'agent-job-hello-xxxx1' });
    assert.equal(await done, 0);
    assert.equal(io.stdoutText(), 'hello-xxxx1\n');
    assert.equal(
      io.stderrText(),
      [
        'hello-xxxx1  Pending · waiting for the controller · 0s',
        'hello-xxxx1  Running · job agent-job-hello-xxxx1 · 0s',
        'hello-xxxx1  Succeeded · exit 0 · 12s',
        '',
      ].join('\n'),
    );
    assert.equal(c.watching(AGENTS_PATH), 0, 'the watch is closed');
  });

  it('a server: waits until it serves (Serving and Ready), then exits 0', async () => {
    const c = cluster();
    const io = captureIo(['hello', '--wait']);
    const done = guarded(runSpec, io, fakeDeps(c));
    await until(() => agentWatch(c), 'the agents watch');
    const url = 'http://hello-xxxx1-server.team.svc:8080/v1';
    const ready = (status: string, reason: string, message: string) => ({
      phase: 'Serving',
      url,
      conditions: [{ type: 'Ready', status, reason, message, lastTransitionTime: '2026-12-01T12:00:00Z' }],
    });
    setStatus(c, 'hello-xxxx1', ready('False', 'Progressing', '0 of 1 replica available'));
    await until(() => io.stderrText().includes('Serving'), 'the Serving line');
    assert.match(
      io.stderrText(),
      /hello-xxxx1 {2}Serving · 0 of 1 replica available · http:\/\/hello-xxxx1-server/,
    );
    setStatus(c, 'hello-xxxx1', ready('True', 'Available', '1 of 1 replica available'));
    assert.equal(await done, 0);
    assert.equal(c.watching(AGENTS_PATH), 0, 'the watch is closed');
  });

  it("a failed run's exit code; 1 when it has none", async () => {
    for (const [status, code] of [
      [{ phase: 'Failed', exitCode: 7, failureReason: 'Job failed' }, 7],
      [{ phase: 'Failed', failureReason: 'Station or AgentDefinition not found' }, 1],
    ] as const) {
      const c = cluster();
      c.onCreate = (a) => queueMicrotask(() => c.put(AGENTS_PATH, { ...a, status }));
      const io = captureIo(['hello', '-w']);
      assert.equal(await guarded(runSpec, io, fakeDeps(c)), code);
      assert.match(io.stderrText(), new RegExp(`Failed · exit ${code} · ${status.failureReason}`));
    }
  });

  it('shows the queue position behind the Station limit, then the run', async () => {
    const c = cluster({ maxConcurrentRuns: 1 });
    c.put(
      AGENTS_PATH,
      rawAgent('busy', { phase: 'Running', jobName: 'agent-job-busy', created: -60 }) as Obj,
    );
    c.put(
      AGENTS_PATH,
      rawAgent('earlier', { created: -30, ready: { reason: 'Queued', message: 'Waiting' } }) as Obj,
    );
    const io = captureIo(['hello', '--wait']);
    const done = guarded(runSpec, io, fakeDeps(c));
    await until(() => agentWatch(c), 'the agents watch');
    setStatus(c, 'hello-xxxx1', {
      phase: 'Pending',
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'Queued',
          message: 'Waiting for a free run slot',
          lastTransitionTime: '2026-12-01T12:00:00Z',
        },
      ],
    });
    await until(() => io.stderrText().includes('queued 2nd of 2'), 'second in the queue');
    setStatus(c, 'busy', { phase: 'Succeeded', exitCode: 0 });
    setStatus(c, 'earlier', { phase: 'Running', jobName: 'agent-job-earlier' });
    await until(() => io.stderrText().includes('queued 1st of 1'), 'at the head');
    setStatus(c, 'hello-xxxx1', { phase: 'Running', jobName: 'agent-job-hello-xxxx1' });
    setStatus(c, 'hello-xxxx1', { phase: 'Succeeded', exitCode: 0 });
    assert.equal(await done, 0);
    const lines = io.stderrText().split('\n');
    assert.ok(
      lines.includes('hello-xxxx1  Pending · queued 2nd of 2 (1 running, Station allows 1 at once) · 0s'),
      lines.join('\n'),
    );
    assert.ok(
      lines.includes('hello-xxxx1  Pending · queued 1st of 1 (1 running, Station allows 1 at once) · 0s'),
      lines.join('\n'),
    );
    assert.ok(lines.includes('hello-xxxx1  Succeeded · exit 0 · 0s'));
  });

  it('--timeout ends the wait with 124; the run goes on', async () => {
    const c = cluster();
    const io = captureIo(['hello', '--wait', '--timeout', '5s']);
    const deps = fakeDeps(c);
    const done = guarded(runSpec, io, deps);
    await until(() => agentWatch(c), 'the agents watch');
    await deps.clock.advance(4_999);
    await until(() => true, 'settle');
    assert.equal(c.watching(AGENTS_PATH), 1, 'still waiting before the timeout');
    await deps.clock.advance(1);
    assert.equal(await done, 124);
    assert.match(
      io.stderrText(),
      /error: timed out after 5s waiting for agent "hello-xxxx1" \(still Pending\)\n$/,
    );
    assert.equal(c.calls('DELETE', AGENTS_PATH).length, 0, 'nothing is deleted');
  });

  it('Ctrl-C stops waiting with 130 and says how to find or stop the run', async () => {
    const c = cluster();
    const io = captureIo(['hello', '--wait']);
    const deps = fakeDeps(c);
    const done = guarded(runSpec, io, deps);
    await until(() => agentWatch(c), 'the agents watch');
    deps.fireInterrupt();
    assert.equal(await done, 130);
    assert.match(
      io.stderrText(),
      /interrupted: agent "hello-xxxx1" goes on; see it with 'agent-controller get agent hello-xxxx1', stop it with 'agent-controller delete agent hello-xxxx1'\n$/,
    );
  });

  it('an Agent deleted while waited for is exit 1', async () => {
    const c = cluster();
    const io = captureIo(['hello', '--wait']);
    const done = guarded(runSpec, io, fakeDeps(c));
    await until(() => agentWatch(c), 'the agents watch');
    c.remove(AGENTS_PATH, 'hello-xxxx1');
    assert.equal(await done, 1);
    assert.match(io.stderrText(), /error: agent "hello-xxxx1" was deleted while waiting for it\n$/);
  });

  it('a watch that is refused is exit 3', async () => {
    const c = cluster();
    c.override = (req) =>
      req.method === 'GET' && req.path === AGENTS_PATH
        ? { status: 403, body: { kind: 'Status', code: 403, message: 'cannot list resource "agents"' } }
        : undefined;
    const io = captureIo(['hello', '--wait']);
    assert.equal(await guarded(runSpec, io, fakeDeps(c)), 3);
    assert.match(io.stderrText(), /error: not allowed \(403\): cannot list resource "agents"\n$/);
  });

  it('on a terminal: one line rewritten in place, ticking every second, coloured, then the final line', async () => {
    const c = cluster();
    const io = captureIo(['hello', '--wait'], { TERM: 'xterm' });
    const deps = fakeDeps(c, { stderrTty: true });
    const done = guarded(runSpec, io, deps);
    await until(() => agentWatch(c), 'the agents watch');
    await deps.clock.advance(2_000);
    setStatus(c, 'hello-xxxx1', { phase: 'Succeeded', exitCode: 0 });
    assert.equal(await done, 0);
    const err = io.stderrText();
    assert.ok(
      err.includes('\r\x1b[2Khello-xxxx1  \x1b[33mPending\x1b[0m · waiting for the controller · 0s'),
      JSON.stringify(err),
    );
    assert.ok(
      err.includes('\r\x1b[2Khello-xxxx1  \x1b[33mPending\x1b[0m · waiting for the controller · 2s'),
      'ticks',
    );
    assert.ok(
      err.endsWith('\r\x1b[2Khello-xxxx1  \x1b[32mSucceeded\x1b[0m · exit 0 · 2s\n'),
      JSON.stringify(err),
    );
  });

  it('NO_COLOR keeps a terminal line plain', async () => {
    const c = cluster();
    c.onCreate = (a) =>
      queueMicrotask(() => c.put(AGENTS_PATH, { ...a, status: { phase: 'Succeeded', exitCode: 0 } }));
    const io = captureIo(['hello', '--wait'], { NO_COLOR: '1' });
    assert.equal(await guarded(runSpec, io, fakeDeps(c, { stderrTty: true })), 0);
    assert.ok(!io.stderrText().includes('\x1b[3'), 'no colour codes');
    assert.ok(io.stderrText().endsWith('hello-xxxx1  Succeeded · exit 0 · 0s\n'));
  });

  it('TERM=dumb: no in-place rewriting on a terminal either, a line per change', async () => {
    const c = cluster();
    c.onCreate = (a) =>
      queueMicrotask(() => c.put(AGENTS_PATH, { ...a, status: { phase: 'Succeeded', exitCode: 0 } }));
    const io = captureIo(['hello', '--wait'], { TERM: 'dumb' });
    assert.equal(await guarded(runSpec, io, fakeDeps(c, { stderrTty: true })), 0);
    assert.ok(!io.stderrText().includes('\x1b'), JSON.stringify(io.stderrText()));
    assert.ok(!io.stderrText().includes('\r'), JSON.stringify(io.stderrText()));
    assert.match(io.stderrText(), /^hello-xxxx1 {2}Pending · .*\nhello-xxxx1 {2}Succeeded · exit 0 · 0s\n$/);
  });
});

describe('run --follow', () => {
  const claudeLog = [
    { type: 'system', subtype: 'init', session_id: 's-1', model: 'claude-opus-5-5' },
    {
      type: 'assistant',
      message: { content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'ls' } }] },
    },
    { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] } },
    { type: 'assistant', message: { content: [{ type: 'text', text: 'all tests pass' }] } },
    { type: 'result', subtype: 'success', is_error: false, result: 'all tests pass', num_turns: 1 },
  ]
    .map((l, i) => `2026-12-01T12:00:0${i}.${i}00000000Z ${JSON.stringify(l)}\n`)
    .join('');

  function runningPod(name: string, job: string) {
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: 'team',
        uid: `uid-${name}`,
        resourceVersion: '1',
        creationTimestamp: '2026-12-01T12:00:01Z',
        labels: { 'job-name': job },
      },
      spec: { containers: [{ name: 'agent' }] },
      status: {
        phase: 'Running',
        containerStatuses: [{ name: 'agent', state: { running: { startedAt: 'x' } } }],
      },
    };
  }

  it('streams the log as readable text, then the final status and the exit code', async () => {
    const c = cluster();
    c.logs.set('agent-job-hello-xxxx1-abcde', { chunks: [claudeLog.slice(0, 100), claudeLog.slice(100)] });
    const io = captureIo(['hello', '--follow']);
    const done = guarded(runSpec, io, fakeDeps(c));
    await until(() => agentWatch(c), 'the agents watch');
    setStatus(c, 'hello-xxxx1', { phase: 'Running', jobName: 'agent-job-hello-xxxx1' });
    await until(() => c.watching(PODS_PATH) > 0, 'the pods watch');
    c.put(PODS_PATH, runningPod('agent-job-hello-xxxx1-abcde', 'agent-job-hello-xxxx1') as Obj);
    await until(() => io.stdoutText().includes('✓ done'), 'the log');
    setStatus(c, 'hello-xxxx1', { phase: 'Succeeded', exitCode: 0, jobName: 'agent-job-hello-xxxx1' });
    assert.equal(await done, 0);
    assert.equal(
      io.stdoutText(),
      [
        'hello-xxxx1',
        '· session s-1 · model claude-opus-5-5',
        '▸ Bash ls',
        '  ↳ Bash: ok',
        'all tests pass',
        '✓ done · 1 turn',
        '',
      ].join('\n'),
    );
    const log = c.calls('GET', `${PODS_PATH}/agent-job-hello-xxxx1-abcde/log`)[0];
    assert.deepEqual(log?.query, { container: 'agent', follow: true, timestamps: true });
    assert.match(io.stderrText(), /hello-xxxx1 {2}Succeeded · exit 0 · 0s\n$/);
  });

  it('--json prints the raw lines; a failing run exits with its code', async () => {
    const c = cluster();
    c.logs.set('p', { chunks: ['2026-12-01T12:00:00Z {"type":"turn.failed","error":{"message":"x"}}\n'] });
    const io = captureIo(['hello', '--follow', '--json']);
    const done = guarded(runSpec, io, fakeDeps(c));
    await until(() => agentWatch(c), 'the agents watch');
    setStatus(c, 'hello-xxxx1', { phase: 'Running', jobName: 'j' });
    await until(() => c.watching(PODS_PATH) > 0, 'the pods watch');
    c.put(PODS_PATH, runningPod('p', 'j') as Obj);
    await until(() => io.stdoutText().includes('turn.failed'), 'the log');
    setStatus(c, 'hello-xxxx1', { phase: 'Failed', exitCode: 3, jobName: 'j' });
    assert.equal(await done, 3);
    assert.equal(io.stdoutText(), 'hello-xxxx1\n{"type":"turn.failed","error":{"message":"x"}}\n');
  });

  it('resumes a dropped log stream without repeating lines', async () => {
    const c = cluster();
    let opened = 0;
    c.override = (req) => {
      if (!req.path.endsWith('/log')) return undefined;
      opened++;
      return undefined;
    };
    c.logs.set('p', {
      chunks: ['2026-12-01T12:00:00.5Z one\n2026-12-01T12:00:01.25Z two\n'],
      end: { error: { kind: 'network', message: 'ECONNRESET' } },
    });
    const io = captureIo(['hello', '--follow', '--json']);
    const deps = fakeDeps(c);
    const done = guarded(runSpec, io, deps);
    await until(() => agentWatch(c), 'the agents watch');
    setStatus(c, 'hello-xxxx1', { phase: 'Running', jobName: 'j' });
    await until(() => c.watching(PODS_PATH) > 0, 'the pods watch');
    c.put(PODS_PATH, runningPod('p', 'j') as Obj);
    await until(() => opened === 1 && io.stdoutText().includes('two'), 'the first stream');
    // The replay from sinceTime repeats "two", then goes on.
    c.logs.set('p', { chunks: ['2026-12-01T12:00:01.25Z two\n2026-12-01T12:00:02Z three\n'] });
    await deps.clock.advance(500);
    await until(() => io.stdoutText().includes('three'), 'the resumed stream');
    setStatus(c, 'hello-xxxx1', { phase: 'Succeeded', exitCode: 0, jobName: 'j' });
    assert.equal(await done, 0);
    assert.equal(io.stdoutText(), 'hello-xxxx1\none\ntwo\nthree\n');
    assert.equal(c.calls('GET', `${PODS_PATH}/p/log`)[1]?.query.sinceTime, '2026-12-01T12:00:01Z');
  });

  it('a run without a pod (a batch run) shows its output at the end', async () => {
    const c = cluster();
    const output = `${JSON.stringify({ type: 'item.completed', item: { type: 'agent_message', text: 'summary' } })}\n`;
    c.onCreate = (a) =>
      queueMicrotask(() => c.put(AGENTS_PATH, { ...a, status: { phase: 'Succeeded', exitCode: 0, output } }));
    const io = captureIo(['hello', '--follow']);
    assert.equal(await guarded(runSpec, io, fakeDeps(c)), 0);
    assert.equal(io.stdoutText(), 'hello-xxxx1\nsummary\n');
  });

  it('a log that stays open after the run ended is given up after the grace period', async () => {
    const c = cluster();
    c.logs.set('p', { chunks: ['2026-12-01T12:00:00Z still talking\n'], end: 'hang' });
    const io = captureIo(['hello', '--follow', '--json']);
    const deps = fakeDeps(c);
    const done = guarded(runSpec, io, deps);
    await until(() => agentWatch(c), 'the agents watch');
    setStatus(c, 'hello-xxxx1', { phase: 'Running', jobName: 'j' });
    await until(() => c.watching(PODS_PATH) > 0, 'the pods watch');
    c.put(PODS_PATH, runningPod('p', 'j') as Obj);
    await until(() => io.stdoutText().includes('still talking'), 'the log');
    setStatus(c, 'hello-xxxx1', { phase: 'Succeeded', exitCode: 0, jobName: 'j' });
    await until(() => true, 'settle');
    let finished = false;
    void done.then(() => {
      finished = true;
    });
    await deps.clock.advance(9_999);
    assert.equal(finished, false, 'waits for the log a while');
    await deps.clock.advance(1);
    assert.equal(await done, 0);
    assert.equal(
      io.stderrText().match(/Succeeded/g)?.length,
      1,
      'off a terminal the final line is not repeated',
    );
  });

  it('a run already over when its pod is looked up: the log of its pod is read once, not the recorded output', async () => {
    const c = cluster();
    const pod = runningPod('p', 'j');
    c.put(PODS_PATH, {
      ...pod,
      status: {
        phase: 'Succeeded',
        containerStatuses: [{ name: 'agent', state: { terminated: { exitCode: 0 } } }],
      },
    } as Obj);
    c.logs.set('p', { chunks: ['2026-12-01T12:00:00Z from the pod\n'] });
    c.onCreate = (a) =>
      queueMicrotask(() =>
        c.put(AGENTS_PATH, {
          ...a,
          status: { phase: 'Succeeded', exitCode: 0, jobName: 'j', output: 'recorded\n' },
        }),
      );
    const io = captureIo(['hello', '--follow', '--json']);
    assert.equal(await guarded(runSpec, io, fakeDeps(c)), 0);
    assert.equal(io.stdoutText(), 'hello-xxxx1\nfrom the pod\n');
    assert.equal(c.calls('GET', `${PODS_PATH}/p/log`).length, 1);
  });

  it('a run already over without a started pod shows its recorded output', async () => {
    const c = cluster();
    c.onCreate = (a) =>
      queueMicrotask(() =>
        c.put(AGENTS_PATH, {
          ...a,
          status: { phase: 'Failed', exitCode: 2, jobName: 'j', output: 'recorded\n' },
        }),
      );
    const io = captureIo(['hello', '--follow', '--json']);
    assert.equal(await guarded(runSpec, io, fakeDeps(c)), 2);
    assert.equal(io.stdoutText(), 'hello-xxxx1\nrecorded\n');
  });

  for (const [what, reply] of [
    ['refused (403)', { status: 403, body: { kind: 'Status', code: 403, message: 'cannot list pods' } }],
    ['failing (503)', { status: 503, body: { kind: 'Status', code: 503, message: 'etcd is down' } }],
  ] as const)
    it(`pods that cannot be read (${what}): one warning, the wait goes on, the recorded output at the end`, async () => {
      const c = cluster();
      c.override = (req) => (req.path === PODS_PATH ? reply : undefined);
      const io = captureIo(['hello', '--follow']);
      const done = guarded(runSpec, io, fakeDeps(c));
      await until(() => agentWatch(c), 'the agents watch');
      setStatus(c, 'hello-xxxx1', { phase: 'Running', jobName: 'j' });
      await until(() => io.stderrText().includes('warning:'), 'the warning');
      setStatus(c, 'hello-xxxx1', { phase: 'Succeeded', exitCode: 0, jobName: 'j', output: 'the answer\n' });
      assert.equal(await done, 0);
      assert.equal(io.stdoutText(), 'hello-xxxx1\nthe answer\n');
      const warnings = io.stderrText().match(/^warning: .*$/gm) ?? [];
      assert.equal(warnings.length, 1, io.stderrText());
      assert.match(
        warnings[0] ?? '',
        /^warning: no live log: .*(cannot list pods|etcd is down).*; waiting for the run to end/,
      );
      assert.match(io.stderrText(), /hello-xxxx1 {2}Succeeded · exit 0/);
    });

  it('a dropped stream: its unterminated last line is dropped (the resumed stream repeats it); data resets the backoff', async () => {
    const c = cluster();
    const scripts = [
      {
        chunks: ['2026-12-01T12:00:00.5Z one\n2026-12-01T12:00:01.25Z tw'],
        end: { error: { kind: 'network', message: 'reset' } },
      },
      {
        chunks: ['2026-12-01T12:00:01.25Z two\n2026-12-01T12:00:02Z three\n'],
        end: { error: { kind: 'network', message: 'reset' } },
      },
      { chunks: ['2026-12-01T12:00:02Z three\n2026-12-01T12:00:03Z four\n'] },
    ] as const;
    let opened = 0;
    c.override = (req) => {
      if (req.path.endsWith('/p/log')) c.logs.set('p', { ...scripts[Math.min(opened++, 2)] } as never);
      return undefined;
    };
    c.logs.set('p', { chunks: [] });
    const io = captureIo(['hello', '--follow', '--json']);
    const deps = fakeDeps(c);
    const done = guarded(runSpec, io, deps);
    await until(() => agentWatch(c), 'the agents watch');
    setStatus(c, 'hello-xxxx1', { phase: 'Running', jobName: 'j' });
    await until(() => c.watching(PODS_PATH) > 0, 'the pods watch');
    c.put(PODS_PATH, runningPod('p', 'j') as Obj);
    await until(() => opened === 1 && io.stdoutText().includes('one'), 'the first stream');
    await deps.clock.advance(500);
    await until(() => opened === 2 && io.stdoutText().includes('three'), 'the second stream');
    // Data came in the second stream: the next pause is the first one again, not twice as long.
    await deps.clock.advance(500);
    await until(() => opened === 3 && io.stdoutText().includes('four'), 'the third stream');
    setStatus(c, 'hello-xxxx1', { phase: 'Succeeded', exitCode: 0, jobName: 'j' });
    assert.equal(await done, 0);
    assert.equal(io.stdoutText(), 'hello-xxxx1\none\ntwo\nthree\nfour\n');
  });
});
