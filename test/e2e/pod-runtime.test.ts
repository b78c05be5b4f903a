// The in-pod runtime end to end on the control plane, through the controller (issue 4 §4), on the runtime named by
// AGENT_E2E_RUNTIME: the controller builds the Job, the run pod's init container (our bundle, image
// `agent-controller:e2e[-deno]`) injects the runtime and the bundle into /agent/bin and clones repos, and the agent
// container (`debian:bookworm-slim`, run from the host as uid 1000 with /agent and /workspace bind-mounted) runs
// `/agent/bin/node /agent/bin/agent-controller.mjs supervisor -- node <mock-agent> <prompt>`.
//
// How the mock runs under the real supervisor: the `exec` vendor (AgentDefinition `model: exec`,
// `tool_config.command: ["node", <mock-agent.mjs>]`, knobs in `resources.env`). The supervisor classifies exec
// lines with the Claude rules for both terminal detection and `output.select` (src/vendors/cli/terminal.ts and
// events.ts: `case 'claude': case 'exec'`), so `MOCK_STYLE=claude` gives Claude-style select classification
// without a `claude-*` model or a fake `claude` binary on PATH. `node` is found on the run PATH (/usr/bin comes
// before /agent/bin), i.e. the host's Node runs the mock on both runtime passes; the supervisor itself runs on the
// injected runtime (Deno in the deno pass).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, copyFileSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, parse as parsePath } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import {
  type AgentObject,
  agentManifest,
  apiPath,
  applyCrds,
  type ContainerStatus,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  type HttpSink,
  type Job,
  type Manifest,
  pollUntil,
  runPodImage,
  runScenario,
  type Scenario,
  startHttpSink,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

const REPO_MOCK = join(dirname(fileURLToPath(import.meta.url)), '..', 'mock-agent', 'mock-agent.mjs');

/** Whether uid 1000 can read `file` (world-readable, every ancestor world-searchable). */
function worldReadable(file: string): boolean {
  try {
    if ((statSync(file).mode & 0o004) === 0) return false;
    let dir = dirname(file);
    for (;;) {
      if ((statSync(dir).mode & 0o001) === 0) return false;
      if (dir === parsePath(dir).root) return true;
      dir = dirname(dir);
    }
  } catch {
    return false;
  }
}

/** A directory the pod processes (uid 1000) can read, removed with the scenario. */
function podReadableDir(s: Scenario): string {
  const dir = s.tempDir();
  chmodSync(dir, 0o755);
  return dir;
}

/**
 * The mock agent CLI as the agent container (uid 1000, host filesystem) sees it: the repo copy when uid 1000 can
 * read it, else a copy in a world-readable temp dir of the scenario.
 */
function mockPath(s: Scenario): string {
  if (worldReadable(REPO_MOCK)) return REPO_MOCK;
  const dir = podReadableDir(s);
  const copy = join(dir, 'mock-agent.mjs');
  copyFileSync(REPO_MOCK, copy);
  chmodSync(copy, 0o755);
  return copy;
}

/** An exec AgentDefinition running the mock under the supervisor, knobs as literal env. */
function mockDefinition(
  name: string,
  mock: string,
  env: Readonly<Record<string, string>>,
  extra: { resources?: Record<string, unknown>; output?: Record<string, unknown>; command?: string[] } = {},
): Manifest {
  return execDefinition(name, extra.command ?? ['node', mock], {
    resources: { env: Object.entries(env).map(([k, value]) => ({ name: k, value })), ...extra.resources },
    ...(extra.output !== undefined ? { output: extra.output } : {}),
  });
}

/**
 * The lifecycle events the supervisor prints bare on stdout (docs/design/reference-behaviour.md#lifecycle-events).
 */
const AGENT_STARTED = { kind: 'lifecycle', phase: 'agent', status: 'started' };
const agentFinished = (exitCode: number) => ({
  kind: 'lifecycle',
  phase: 'agent',
  status: exitCode === 0 ? 'succeeded' : 'failed',
  exitCode,
});

/** The lines of `status.output` (the agent container's log), without the trailing empty line. */
function outputLines(a: AgentObject): string[] {
  return (a.status.output ?? '').split('\n').filter((l) => l !== '');
}

/** Parses a line as JSON; undefined for anything else. */
function json(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return undefined;
  }
}

/** `value` as a plain JSON object, or undefined. */
function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Index of the first output line whose JSON equals `expected` (deep, strict); -1 when none. */
function indexOfEvent(lines: readonly string[], expected: unknown): number {
  return lines.findIndex((l) => isDeepStrictEqual(json(l), expected));
}

/** Asserts that every `expected` event is an output line, in this order; returns their indexes. */
function assertEventsInOrder(a: AgentObject, expected: readonly unknown[]): number[] {
  const lines = outputLines(a);
  const at = expected.map((e) => indexOfEvent(lines, e));
  for (const [k, i] of at.entries())
    assert.notEqual(i, -1, `status.output has ${JSON.stringify(expected[k])}:\n${a.status.output}`);
  for (let k = 1; k < at.length; k++)
    assert.ok((at[k - 1] ?? 0) < (at[k] ?? 0), `events in order ${JSON.stringify(at)}:\n${a.status.output}`);
  return at;
}

interface ContainerView {
  readonly name: string;
  readonly image?: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly env?: readonly {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name?: string; key?: string } };
  }[];
}

/** A container of the Job's pod template, by name; shape checked loosely for the fields we read. */
function templateContainer(job: Job, which: 'containers' | 'initContainers', name: string): ContainerView {
  const template = job.spec.template as { spec?: Record<string, unknown> } | undefined;
  const list = template?.spec?.[which];
  assert.ok(Array.isArray(list), `Job ${job.metadata.name} has ${which}`);
  const found = (list as ContainerView[]).find((c) => c.name === name);
  assert.ok(found, `Job ${job.metadata.name} has ${which} ${name}`);
  return found;
}

/** Waits for the Job of the Agent `name` (`agent-job-<name>`). */
function waitJob(s: Scenario, name: string): Promise<Job> {
  return pollUntil(() => s.job(`agent-job-${name}`), {
    timeoutMs: 60_000,
    description: `the Job agent-job-${name}`,
  });
}

/** The `agent` container status of the (single) pod of the Job. */
async function agentContainer(
  s: Scenario,
  jobName: string,
): Promise<{ pod: string; status: ContainerStatus }> {
  const pods = await s.jobPods(jobName);
  assert.equal(pods.length, 1, `one pod for ${jobName} (backoffLimit 0)`);
  const pod = pods[0];
  assert.ok(pod);
  const status = pod.status.containerStatuses?.find((c) => c.name === 'agent');
  assert.ok(status, `pod ${pod.metadata.name} reports the agent container`);
  return { pod: pod.metadata.name ?? '', status };
}

/** Runs `body`; on failure writes the sink's requests to stderr before rethrowing. */
async function withSinkDump(sink: HttpSink, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    process.stderr.write(`\n===== sink requests (${sink.requests.length}) =====\n${sink.dump()}\n`);
    throw error;
  }
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.invalid', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_TERMINAL_PROMPT: '0' },
  }).trim();
}

describe(`pod runtime through the controller (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'the injected supervisor runs the mock CLI: Succeeded with its bare lines, in order, between the lifecycle events',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'pod-mock', async (s) => {
        await s.startReplica();
        const mock = mockPath(s);
        await s.create(
          mockDefinition('mock', mock, {
            MOCK_LINES: '3',
            MOCK_ECHO_ARGV: '1',
            MOCK_STDERR: 'a note on stderr',
          }),
          stationManifest('mock', 'mock'),
          agentManifest('mock-run', 'mock'),
        );
        const job = await waitJob(s, 'mock-run');
        const agent = templateContainer(job, 'containers', 'agent');
        assert.deepEqual(agent.command, [
          '/agent/bin/node',
          '/agent/bin/agent-controller.mjs',
          'supervisor',
          '--',
          'node',
          mock,
          // The prompt is not in the Job: the supervisor adds it from the run's input ConfigMap (issue 10 §1).
        ]);
        const env = (agent.env ?? []) as { name: string; value?: string }[];
        assert.equal(env.find((e) => e.name === 'AGENT_PROMPT_FILE')?.value, '/agent/input/prompt');
        const init = templateContainer(job, 'initContainers', 'init');
        assert.equal(init.image, runPodImage(runtime));
        assert.deepEqual([init.command, init.args], [undefined, ['init']]);

        const done = await s.waitTerminal('mock-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.equal(done.status.exitCode, 0);
        assertEventsInOrder(done, [
          AGENT_STARTED,
          { argv: ['run mock-run'] },
          { i: 1 },
          { i: 2 },
          { i: 3 },
          agentFinished(0),
        ]);
        const output = done.status.output ?? '';
        // Bare: the agent's lines are echoed exactly as printed, never wrapped in an envelope on stdout.
        for (const n of [1, 2, 3]) assert.match(output, new RegExp(`^\\{"i":${n}\\}$`, 'm'));
        assert.doesNotMatch(output, /"source"/, 'no envelope on stdout');
        assert.match(output, /^\[agent\] a note on stderr$/m, 'the agent stderr is tagged [agent]');
        const { status } = await agentContainer(s, 'agent-job-mock-run');
        assert.equal(status.state.terminated?.exitCode, 0);
      }),
  );

  it('a local HTTP sink receives agent/started, each selected line and succeeded, each as one {source, event} envelope, in order', {
    timeout: 240_000,
  }, async () => {
    const sink = await startHttpSink();
    try {
      await runScenario(cluster, 'pod-sink', (s) =>
        withSinkDump(sink, async () => {
          await s.startReplica();
          const mock = mockPath(s);
          const bearer = `e2e-${randomBytes(12).toString('hex')}`;
          await s.create({
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: 'agent-secrets' },
            stringData: { SINK_AUTH: `Authorization: Bearer ${bearer}\n\nX-Sink-Test: pod-runtime\n` },
          });
          const path = `/events/${s.ns}`;
          await s.create(
            mockDefinition(
              'sink',
              mock,
              {
                MOCK_STYLE: 'claude',
                MOCK_LINES: '2',
                MOCK_TOOL: 'Bash',
                MOCK_PRINT: 'plain text, not JSON',
              },
              {
                output: {
                  sinks: [{ type: 'http', url: sink.url(path), headers_secret: 'SINK_AUTH' }],
                  select: [
                    { event: 'tool_call', tool: 'Bash' },
                    { event: 'tool_call', tool: 'Edit' },
                    { event: 'message', contains: 'mock agent 2' },
                    { event: 'result' },
                  ],
                },
              },
            ),
            stationManifest('sink', 'sink'),
            agentManifest('sink-run', 'sink'),
          );
          const done = await s.waitTerminal('sink-run');
          assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
          assert.equal(done.status.exitCode, 0);

          // What the mock printed, as the supervisor echoed it bare on stdout.
          const printed = outputLines(done).map(json);
          const find = (what: string, pick: (e: Record<string, unknown>) => boolean) => {
            const found = printed.flatMap((e) => {
              const r = asRecord(e);
              return r !== undefined && pick(r) ? [r] : [];
            });
            assert.equal(
              found.length,
              1,
              `exactly one ${what} line in status.output:\n${done.status.output}`,
            );
            return found[0];
          };
          const content = (e: Record<string, unknown>) =>
            JSON.stringify((e.message as { content?: unknown } | undefined)?.content ?? null);
          const systemInit = find('system/init', (e) => e.type === 'system');
          const toolUse = find(
            'tool_use',
            (e) => e.type === 'assistant' && content(e).includes('"tool_use"'),
          );
          const toolResult = find('tool_result', (e) => e.type === 'user');
          const message1 = find(
            'message 1',
            (e) => e.type === 'assistant' && content(e).includes('agent 1"'),
          );
          const message2 = find(
            'message 2',
            (e) => e.type === 'assistant' && content(e).includes('agent 2"'),
          );
          const result = find('result', (e) => e.type === 'result');
          assert.match(done.status.output ?? '', /^plain text, not JSON$/m);

          const expected = [AGENT_STARTED, toolUse, message2, result, agentFinished(0)];
          // Everything has arrived once the terminal lifecycle event has: the sink keeps order per run.
          await sink.waitFor(
            () =>
              sink.envelopes(path).some((e) => isDeepStrictEqual(e.event, agentFinished(0)))
                ? true
                : undefined,
            'agent/succeeded',
          );

          assert.deepEqual(
            sink.requests.map((r) => [r.method, r.path]),
            sink.requests.map(() => ['POST', path]),
            'only POSTs to the configured path',
          );
          const { pod } = await agentContainer(s, 'agent-job-sink-run');
          const envelopes = sink.envelopes(path);
          for (const [k, e] of envelopes.entries()) {
            assert.deepEqual(
              e.source,
              { agent: 'sink-run', station: 'sink', pod, namespace: s.ns },
              `envelope #${k} names the run (no empty task)`,
            );
            const inner = e.event as Record<string, unknown> | null;
            assert.ok(
              !(typeof inner === 'object' && inner !== null && 'source' in inner && 'event' in inner),
              `envelope #${k} is not double-wrapped`,
            );
          }
          for (const r of sink.posts(path)) {
            assert.match(r.headers['content-type'] ?? '', /^application\/json\b/);
            assert.equal(r.headers.authorization, `Bearer ${bearer}`, 'header lines from headers_secret');
            assert.equal(r.headers['x-sink-test'], 'pod-runtime');
          }

          // The init container reports its own lifecycle to the same sink first (init/started … init/succeeded);
          // from agent/started on, exactly the run.
          const events = envelopes.map((e) => e.event);
          const startAt = events.findIndex((e) => isDeepStrictEqual(e, AGENT_STARTED));
          assert.notEqual(startAt, -1, 'agent/started was delivered');
          for (const e of events.slice(0, startAt)) {
            const r = asRecord(e);
            assert.ok(
              r?.kind === 'lifecycle' && r.phase === 'init',
              `only init lifecycle events precede agent/started: ${JSON.stringify(e)}`,
            );
          }
          assert.deepEqual(
            [events[0], events[startAt - 1]],
            [
              { kind: 'lifecycle', phase: 'init', status: 'started' },
              { kind: 'lifecycle', phase: 'init', status: 'succeeded' },
            ],
            'the init lifecycle opens the stream and ends before agent/started',
          );
          assert.deepEqual(events.slice(startAt), expected, 'started, the selected lines, succeeded');
          for (const [what, line] of Object.entries({ systemInit, toolResult, message1 })) {
            assert.ok(
              !events.some((e) => isDeepStrictEqual(e, line)),
              `the unselected ${what} line was not delivered`,
            );
          }
          assert.ok(!events.includes('plain text, not JSON'), 'a non-JSON line is never selected');
          assert.ok(!(done.status.output ?? '').includes(bearer), 'the sink credential is not in the output');
        }),
      );
    } finally {
      await sink.close();
    }
  });

  it('a mock that exits 7 ends Failed with exitCode 7', { timeout: 240_000 }, () =>
    runScenario(cluster, 'pod-exit7', async (s) => {
      await s.startReplica();
      const mock = mockPath(s);
      await s.create(
        mockDefinition('exit7', mock, { MOCK_LINES: '2', MOCK_EXIT: '7' }),
        stationManifest('exit7', 'exit7'),
        agentManifest('exits-7', 'exit7'),
      );
      const done = await s.waitTerminal('exits-7');
      assert.equal(done.status.phase, 'Failed', JSON.stringify(done.status));
      assert.equal(done.status.exitCode, 7);
      assertEventsInOrder(done, [AGENT_STARTED, { i: 1 }, { i: 2 }, agentFinished(7)]);
      const { status } = await agentContainer(s, 'agent-job-exits-7');
      assert.equal(status.state.terminated?.exitCode, 7, 'the supervisor exits with the agent code');
    }),
  );

  it(
    'a wedged mock ends at the absolute deadline (Job creation + 60 s - 10 s) with exit 124, before the Job deadline',
    { timeout: 300_000 },
    (t) =>
      runScenario(cluster, 'pod-wedge', async (s) => {
        await s.startReplica();
        const mock = mockPath(s);
        await s.create(
          mockDefinition('wedge', mock, { MOCK_MODE: 'wedge', MOCK_LINES: '1' }),
          stationManifest('wedge', 'wedge', { deadlineMinutes: 1 }),
          agentManifest('wedged', 'wedge'),
        );
        const job = await waitJob(s, 'wedged');
        assert.equal(job.spec.activeDeadlineSeconds, 60);
        const agentEnv = templateContainer(job, 'containers', 'agent').env ?? [];
        const at = Number(agentEnv.find((e) => e.name === 'AGENT_DEADLINE_AT')?.value);
        const created = Date.parse(job.metadata.creationTimestamp ?? '');
        assert.ok(Number.isFinite(at) && Number.isFinite(created), 'AGENT_DEADLINE_AT and creation time');
        // creationTimestamp has second resolution; the controller stamps its own clock just before the create.
        assert.ok(
          Math.abs(at - (created + 50_000)) < 5_000,
          `AGENT_DEADLINE_AT ${at} ≈ creation ${created} + 50 s`,
        );

        const done = await s.waitTerminal('wedged', 180_000);
        assert.equal(done.status.phase, 'Failed', JSON.stringify(done.status));
        assert.equal(done.status.exitCode, 124);
        assertEventsInOrder(done, [AGENT_STARTED, agentFinished(124)]);
        assert.match(done.status.output ?? '', /run deadline expired with no terminal event/);
        const { status } = await agentContainer(s, 'agent-job-wedged');
        const terminated = status.state.terminated;
        assert.equal(terminated?.exitCode, 124, 'the supervisor ended the run itself');
        // Container times have second resolution. On an idle testbed the pod starts within a second or two and the
        // mock prints its line, then wedges; on a loaded one the pod may start late, and the absolute deadline still
        // holds (that is the point of AGENT_DEADLINE_AT), so the mock may be forced down before it printed.
        const agentStarted = Date.parse(terminated.startedAt ?? '');
        const finished = Date.parse(terminated.finishedAt ?? '');
        const timing = `Job created ${job.metadata.creationTimestamp}, agent started ${terminated.startedAt}, finished ${terminated.finishedAt}, run deadline ${new Date(at).toISOString()}`;
        if (agentStarted <= at - 5_000)
          assertEventsInOrder(done, [AGENT_STARTED, { i: 1 }, agentFinished(124)]);
        else t.diagnostic(`the pod started late (${timing}); not requiring the mock's line`);
        // Ended at the run deadline (plus at most the kill grace), neither before it nor at the Job deadline.
        assert.ok(finished >= at - 1_000, `not before the run deadline: ${timing}`);
        assert.ok(finished <= at + 10_000, `within the kill grace after the run deadline: ${timing}`);
        // The Job's own verdict: the pod failed (backoffLimit 0), not the Job's activeDeadlineSeconds.
        const failed = await pollUntil(
          async (observe) => {
            const j = await s.job('agent-job-wedged');
            observe(j?.status);
            return j?.status.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
          },
          { timeoutMs: 30_000, description: 'the Job agent-job-wedged to fail' },
        );
        assert.notEqual(failed.reason, 'DeadlineExceeded', `the supervisor beat the Job deadline: ${timing}`);
        t.diagnostic(
          `${timing}; Job ${failed.reason} at ${failed.lastTransitionTime}; Agent completedAt ${done.status.completedAt}`,
        );
      }),
  );

  it(
    'a key of Secret agent-secrets reaches the mock environment; its value is in neither the Job nor the Agent',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'pod-secret', async (s) => {
        const ctl = await s.startReplica();
        const mock = mockPath(s);
        const value = `mock-secret-${randomBytes(16).toString('hex')}`;
        // The expectation travels in the Secret too, so the value never appears in a literal env var.
        await s.create({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'agent-secrets' },
          stringData: {
            k: value,
            expect: JSON.stringify({ MOCK_SECRET: value }),
            'expect-other': JSON.stringify({ MOCK_SECRET: 'some-other-value' }),
          },
        });
        const reader = (name: string, expectKey: string) =>
          mockDefinition(
            name,
            mock,
            { MOCK_LINES: '1' },
            {
              resources: {
                secrets: [
                  { name: 'MOCK_SECRET', ref: 'k' },
                  { name: 'MOCK_EXPECT_ENV', ref: expectKey },
                ],
              },
            },
          );
        await s.create(
          reader('reader', 'expect'),
          stationManifest('reader', 'reader'),
          agentManifest('secret-run', 'reader'),
          // Control: the same check against a different value must fail, so the check is live.
          reader('reader-other', 'expect-other'),
          stationManifest('reader-other', 'reader-other'),
          agentManifest('secret-mismatch', 'reader-other'),
        );

        const job = await waitJob(s, 'secret-run');
        for (const [which, name] of [
          ['containers', 'agent'],
          ['initContainers', 'init'],
        ] as const) {
          const env = templateContainer(job, which, name).env?.find((e) => e.name === 'MOCK_SECRET');
          assert.deepEqual(
            env && { value: env.value, ref: env.valueFrom?.secretKeyRef },
            { value: undefined, ref: { name: 'agent-secrets', key: 'k', optional: false } },
            `${name}: MOCK_SECRET comes from secretKeyRef agent-secrets/k`,
          );
        }

        const ok = await s.waitTerminal('secret-run');
        assert.equal(ok.status.phase, 'Succeeded', JSON.stringify(ok.status));
        assert.equal(ok.status.exitCode, 0);
        assertEventsInOrder(ok, [AGENT_STARTED, { i: 1 }, agentFinished(0)]);

        const mismatch = await s.waitTerminal('secret-mismatch');
        assert.equal(mismatch.status.phase, 'Failed', JSON.stringify(mismatch.status));
        assert.equal(mismatch.status.exitCode, 7);
        assert.match(mismatch.status.output ?? '', /env MOCK_SECRET does not have the expected value/);

        const jobs = JSON.stringify(await s.jobs());
        assert.ok(!jobs.includes(value), 'the secret value is not in any Job');
        const { items: pods } = await s.client.list(apiPath('v1', 'pods', { namespace: s.ns }), {});
        assert.ok(!JSON.stringify(pods).includes(value), 'the secret value is not in any pod spec');
        for (const a of await s.agents())
          assert.ok(!JSON.stringify(a).includes(value), `the value is not in Agent ${a.metadata.name}`);
        assert.ok(!ctl.logText().includes(value), 'the controller never logs the value');
      }),
  );

  it(
    'a repo from a local file:// origin is cloned at its ref into the workspace the agent sees',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'pod-repo', async (s) => {
        await s.startReplica();
        const mock = mockPath(s);
        const dir = podReadableDir(s);
        const marker = `hello from the origin ${randomBytes(6).toString('hex')}`;
        const origin = join(dir, 'origin.git');
        const work = join(dir, 'work');
        git(dir, 'init', '-q', '--bare', origin);
        git(dir, 'init', '-q', '-b', 'main', work);
        writeFileSync(join(work, 'hello.txt'), `${marker}\n`);
        git(work, 'add', 'hello.txt');
        git(work, 'commit', '-q', '-m', 'main: hello');
        git(work, 'remote', 'add', 'origin', origin);
        git(work, 'push', '-q', 'origin', 'main');
        git(work, 'checkout', '-q', '-b', 'other');
        mkdirSync(join(work, 'only-on-other'));
        writeFileSync(join(work, 'only-on-other', 'x.txt'), 'x\n');
        git(work, 'add', 'only-on-other');
        git(work, 'commit', '-q', '-m', 'other: extra folder');
        git(work, 'push', '-q', 'origin', 'other');
        // The origin's default branch is `other`: only the checkout of `ref: main` yields main's tree.
        git(origin, 'symbolic-ref', 'HEAD', 'refs/heads/other');
        // The init clones as the run user (uid 1000, restricted Pod Security): git serves only repositories that
        // user owns (safe.directory), as a real origin it can reach would be.
        chownSync(origin, 1000, 1000);
        for (const entry of readdirSync(origin, { recursive: true, encoding: 'utf8' })) {
          chownSync(join(origin, entry), 1000, 1000);
        }

        // sh reads the cloned file, then execs the mock (which writes into the clone, then lists it).
        const script = 'printf "hello.txt: %s\\n" "$(cat /workspace/demo/hello.txt)"; exec node "$0" "$@"';
        await s.create(
          mockDefinition(
            'repo',
            mock,
            {
              MOCK_LINES: '1',
              MOCK_WRITE_FILE: '/workspace/demo/notes/by-agent.txt',
              MOCK_LIST_DIR: '/workspace/demo',
            },
            {
              command: ['sh', '-c', script, mock],
              resources: {
                repos: [{ name: 'demo', url: `file://${origin}`, ref: 'main', path: 'demo' }],
              },
            },
          ),
          stationManifest('repo', 'repo'),
          agentManifest('repo-run', 'repo'),
        );
        const done = await s.waitTerminal('repo-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.equal(done.status.exitCode, 0);
        assert.match(done.status.output ?? '', new RegExp(`^hello\\.txt: ${marker}$`, 'm'));
        // The agent (uid 1000) could write into the clone (init gave it the workspace) and sees main's tree.
        assertEventsInOrder(done, [
          AGENT_STARTED,
          { dir: '/workspace/demo', entries: ['.git', 'hello.txt', 'notes'] },
          { i: 1 },
          agentFinished(0),
        ]);
      }),
  );
});
