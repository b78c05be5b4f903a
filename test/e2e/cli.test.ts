// The command line (issue 11 §1) end to end on the local control plane, on the runtime named by AGENT_E2E_RUNTIME:
// `run --wait` (exit 0, the run's own code, 124 on --timeout), a run queued behind a Station limit of 1 showing its
// place then finishing, `run --follow` turning the fake Claude's stream-JSON into readable text (and --json keeping
// it raw), `get` (table, wide, json, yaml, name), `describe`, `logs`, `delete`, 404 and 403 exit codes, and the
// bundle as kubectl's plugin (`kubectl agent …`, through a file named kubectl-agent on PATH); `version`, `get
// agents --watch` (a row for an Agent created while it watches, until stopped) and `logs -f` (a running Agent's log
// followed until the run ends).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import {
  agentManifest,
  applyCrds,
  BUNDLE_PATH,
  bundleArgv,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  fakeClaudeImages,
  GROUP_VERSION,
  type Manifest,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/** How one CLI invocation ended. */
interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Callbacks told the output so far each time more of it arrives (to act while the program runs). */
interface Watchers {
  readonly stdout?: ((soFar: string) => void) | undefined;
  readonly stderr?: ((soFar: string) => void) | undefined;
  /** Ends the program with SIGTERM when it fires (a command that runs until stopped, as `get --watch`). */
  readonly stop?: AbortSignal | undefined;
}

/** Runs a program to its end (killed after `timeoutMs`), collecting its output; never rejects for an exit code. */
function exec(
  cmd: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  timeoutMs = 180_000,
  watch: Watchers = {},
): Promise<CliRun> {
  const child = spawn(cmd, [...args], { cwd: ROOT, env: { ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
    watch.stdout?.(stdout);
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
    watch.stderr?.(stderr);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const stop = (): void => void child.kill('SIGTERM');
  if (watch.stop?.aborted === true) stop();
  else watch.stop?.addEventListener('abort', stop, { once: true });
  return new Promise((resolve, reject) => {
    child.once('error', (error) => {
      clearTimeout(timer);
      watch.stop?.removeEventListener('abort', stop);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      watch.stop?.removeEventListener('abort', stop);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The environment of a CLI run: no colour settings, no inherited kubeconfig (each call names its own). */
function cliEnv(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    DENO_NO_UPDATE_CHECK: '1',
    DENO_NO_PROMPT: '1',
    ...extra,
  };
}

/** `agent-controller ARGS…` on the bundle, on the runtime under test. */
function cli(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  watch: Watchers = {},
): Promise<CliRun> {
  const [cmd, ...pre] = bundleArgv(runtime);
  return exec(cmd ?? process.execPath, [...pre, ...args], cliEnv(env), 180_000, watch);
}

/** The connection flags of a scenario: the admin kubeconfig and its namespace. */
const at = (s: Scenario): string[] => ['--kubeconfig', s.cluster.kubeconfig, '-n', s.ns];

/** The stderr lines of a run, for failure messages. */
const show = (r: CliRun): string => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

/** kubectl as the local control plane builds it, when it is there. */
function kubectlBinary(): string | undefined {
  const r = spawnSync('bash', [join(ROOT, 'scripts', 'build-kube-binaries')], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (r.status !== 0) return undefined;
  const bin = r.stdout.trim().split('\n').at(-1) ?? '';
  const kubectl = join(bin, 'kubectl');
  return bin !== '' && existsSync(kubectl) ? kubectl : undefined;
}

/** `text` as a regular expression matching it literally. */
const literally = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A shell word. */
const shq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * An AgentDefinition on the fake Claude CLI, with one tool call and a final answer; the prompt is `{prompt}`.
 * `delayMs`: a pause after each line it prints (the run stays Running while its first lines are out).
 */
function claudeDefinition(name: string, delayMs = 0): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: {
      model: 'claude-opus-5-5',
      prompt: 'Review: {prompt}',
      resources: {
        env: [
          { name: 'MOCK_TOOL', value: 'Bash' },
          { name: 'MOCK_TEXT', value: 'all tests pass' },
          ...(delayMs > 0 ? [{ name: 'MOCK_DELAY_MS', value: String(delayMs) }] : []),
        ],
      },
    },
  };
}

describe(`command line (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('version exits 0 and prints the version of package.json and the runtime', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await cli(['version']);
    assert.equal(r.code, 0, show(r));
    assert.match(
      r.stdout,
      new RegExp(`^agent-controller ${literally(pkg.version)} \\(${runtime} v?\\d\\S*\\)\n$`),
      show(r),
    );
    assert.equal(r.stderr, '', show(r));
    const json = await cli(['version', '--json']);
    assert.equal(json.code, 0, show(json));
    const parsed = JSON.parse(json.stdout) as { version?: unknown; runtime?: unknown };
    assert.equal(parsed.version, pkg.version, show(json));
    assert.match(String(parsed.runtime), new RegExp(`^${runtime} `), show(json));
    const flag = await cli(['--version']);
    assert.equal(flag.code, 0, show(flag));
    assert.equal(flag.stdout, r.stdout, '--version prints what version does');
  });

  it(
    'run --wait exits with the run code (0, 7, 124 on --timeout); get, -o wide|json|yaml|name, describe, logs, delete; 404 is exit 4',
    { timeout: 300_000 },
    () =>
      runScenario(cluster, 'cli-runs', async (s) => {
        await s.startReplica();
        await s.create(
          execDefinition('hello', ['sh', '-c', 'echo "hello from the cli: $0"']),
          stationManifest('hello', 'hello'),
          execDefinition('failing', ['sh', '-c', 'echo "about to fail"; exit 7']),
          stationManifest('failing', 'failing'),
          execDefinition('slow', ['sh', '-c', 'sleep 120']),
          stationManifest('slow', 'slow'),
        );

        // A run that succeeds: its name on stdout, the status lines on stderr (not a terminal: one per change).
        const ok = await cli(['run', 'hello', '--set', 'name=world', '--wait', ...at(s)]);
        assert.equal(ok.code, 0, show(ok));
        const name = ok.stdout.trim();
        assert.match(name, /^hello-[a-z0-9]{5}$/, show(ok));
        assert.match(ok.stderr, new RegExp(`^${name} {2}Succeeded · exit 0 · \\S+$`, 'm'), show(ok));
        assert.ok(!ok.stderr.includes('\x1b['), 'no colour off a terminal');
        const created = await s.agent(name);
        assert.deepEqual((created?.spec as { parameters?: unknown } | undefined)?.parameters, {
          name: 'world',
        });

        // A run that fails with exit code 7: the CLI exits 7.
        const bad = await cli(['run', 'failing', '--wait', ...at(s)]);
        assert.equal(bad.code, 7, show(bad));
        const badName = bad.stdout.trim();
        assert.match(bad.stderr, new RegExp(`^${badName} {2}Failed · exit 7`, 'm'), show(bad));

        // --timeout: 124, the run goes on; then delete it.
        const slow = await cli(['run', 'slow', '--wait', '--timeout', '3s', ...at(s)]);
        assert.equal(slow.code, 124, show(slow));
        const slowName = slow.stdout.trim();
        assert.match(
          slow.stderr,
          new RegExp(
            `^error: timed out after 3s waiting for agent "${slowName}" \\(still (Pending|Running)\\)$`,
            'm',
          ),
          show(slow),
        );
        assert.ok((await s.agent(slowName)) !== undefined, 'the run goes on after the timeout');
        const del = await cli(['delete', 'agent', slowName, ...at(s)]);
        assert.equal(del.code, 0, show(del));
        assert.equal(del.stdout, `agent.agents.re-cinq.com "${slowName}" deleted\n`);
        await s.waitAgentGone(slowName, 60_000);

        // get: the table, the wide columns, the stations.
        const table = await cli(['get', ...at(s)]);
        assert.equal(table.code, 0, show(table));
        const lines = table.stdout.trimEnd().split('\n');
        assert.match(lines[0] ?? '', /^NAME\s+PHASE\s+STATION\s+JOB\s+AGE$/);
        assert.ok(
          lines.some((l) =>
            new RegExp(`^${name}\\s+Succeeded\\s+hello\\s+agent-job-${name}\\s+\\d+[smh]`).test(l),
          ),
          table.stdout,
        );
        assert.ok(
          lines.some((l) => new RegExp(`^${badName}\\s+Failed\\s+failing\\s`).test(l)),
          table.stdout,
        );
        const wide = await cli(['get', 'agents', '-o', 'wide', ...at(s)]);
        assert.match(
          wide.stdout,
          /^NAME\s+PHASE\s+STATION\s+JOB\s+AGE\s+SESSION\s+BATCH\s+TOKENS\s+COST\s+URL$/m,
          show(wide),
        );
        const stations = await cli(['get', 'stations', ...at(s)]);
        assert.match(stations.stdout, /^NAME\s+RECIPE\s+DEADLINE\s+AGE$/m, show(stations));
        assert.match(stations.stdout, /^hello\s+hello\s+5\s+\d\S*$/m, show(stations));

        // -o json (one object), -o yaml (a List), -o name.
        const json = await cli(['get', 'agent', name, '-o', 'json', ...at(s)]);
        assert.equal(json.code, 0, show(json));
        const obj = JSON.parse(json.stdout) as {
          kind: string;
          metadata: Record<string, unknown>;
          status: { phase: string; exitCode: number };
        };
        assert.equal(obj.kind, 'Agent');
        assert.equal(obj.metadata.name, name);
        assert.equal(obj.status.phase, 'Succeeded');
        assert.equal(obj.status.exitCode, 0);
        assert.ok(!('managedFields' in obj.metadata), 'managedFields are hidden, as kubectl does');
        const yaml = await cli(['get', 'agents', '-o', 'yaml', ...at(s)]);
        assert.equal(yaml.code, 0, show(yaml));
        const doc = load(yaml.stdout) as { kind: string; items: { metadata: { name: string } }[] };
        assert.equal(doc.kind, 'List');
        assert.deepEqual(doc.items.map((i) => i.metadata.name).sort(), [badName, name].sort());
        const names = await cli(['get', '-o', 'name', ...at(s)]);
        assert.ok(names.stdout.split('\n').includes(`agent.agents.re-cinq.com/${name}`), show(names));

        // describe: status, Job and pod, conditions, Events.
        await s.waitForEvents(name, created?.metadata.uid, ['Normal/Started', 'Normal/Succeeded']);
        const described = await cli(['describe', 'agent', name, ...at(s)]);
        assert.equal(described.code, 0, show(described));
        for (const re of [
          new RegExp(`^Name: +${name}$`, 'm'),
          /^Station: +hello$/m,
          /^Parameters: +name=world$/m,
          /^Phase: +Succeeded$/m,
          /^Exit Code: +0$/m,
          new RegExp(`^Job: +agent-job-${name} \\(`, 'm'),
          new RegExp(`^Pods: +agent-job-${name}-\\S+ \\(\\w+; agent terminated, exit 0`, 'm'),
          /^Conditions:\n {2}Type +Status +Reason +Age +Message\n/m,
          /^ {2}Complete +True +Succeeded /m,
          /^Events:\n/m,
          /^ {2}Normal +Started /m,
          /^ {2}Normal +Succeeded /m,
        ])
          assert.match(described.stdout, re, show(described));

        // logs: the agent container's output.
        const logs = await cli(['logs', name, ...at(s)]);
        assert.equal(logs.code, 0, show(logs));
        assert.match(logs.stdout, /^hello from the cli: run world$/m, show(logs));
        const badLogs = await cli(['logs', badName, ...at(s)]);
        assert.match(badLogs.stdout, /^about to fail$/m, show(badLogs));

        // Not found: exit 4, one line.
        for (const args of [
          ['get', 'agent', 'nope'],
          ['describe', 'agent', 'nope'],
          ['logs', 'nope'],
          ['delete', 'agent', 'nope'],
        ]) {
          const r = await cli([...args, ...at(s)]);
          assert.equal(r.code, 4, `${args.join(' ')}: ${show(r)}`);
          assert.equal(r.stderr, `error: agent "nope" in namespace "${s.ns}" not found\n`, args.join(' '));
        }
        const noStation = await cli(['run', 'nope', '--wait', ...at(s)]);
        assert.equal(noStation.code, 4, show(noStation));
        assert.equal(noStation.stderr, `error: station "nope" not found in namespace "${s.ns}"\n`);
        assert.equal(noStation.stdout, '', 'nothing created');

        // Usage mistakes: exit 2, one line.
        const usage = await cli(['run', ...at(s)]);
        assert.equal(usage.code, 2, show(usage));
        assert.equal(usage.stderr.trim().split('\n').length, 1, show(usage));
      }),
  );

  it(
    'run --wait behind a Station limit of 1 shows its place in the queue, then finishes',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'cli-queue', async (s) => {
        await s.startReplica();
        // The first run holds the only slot until the test deletes it (after the second has shown its place in
        // the queue): no timing assumption. `$0` is the prompt, `run <name>`.
        await s.create(
          execDefinition('one-at-a-time', [
            'sh',
            '-c',
            'case "$0" in *first*) sleep 300;; esac; echo "done: $0"',
          ]),
          stationManifest('single', 'one-at-a-time', { maxConcurrentRuns: 1 }),
        );
        const first = await cli(['run', 'single', '--name', 'first', '--set', 'name=first', ...at(s)]);
        assert.equal(first.code, 0, show(first));
        assert.equal(first.stdout, 'first\n');
        await s.waitForAgent('first', (a) => a.status.phase === 'Running', 'Running');

        const queuedLine =
          /^second {2}Pending · queued 1st of 1 \(1 running, Station allows 1 at once\) · \S+$/m;
        let sawQueued: () => void = () => {};
        const queuedSeen = new Promise<void>((resolve) => {
          sawQueued = resolve;
        });
        const running = cli(
          [
            'run',
            'single',
            '--name',
            'second',
            '--set',
            'name=second',
            '--wait',
            '--timeout',
            '3m',
            ...at(s),
          ],
          {},
          { stderr: (soFar) => (queuedLine.test(soFar) ? sawQueued() : undefined) },
        );
        const early = await Promise.race([queuedSeen.then(() => undefined), running]);
        assert.equal(
          early,
          undefined,
          `the second run showed its place while the first ran:\n${early && show(early)}`,
        );
        const freedAt = Date.now();
        const deleted = await cli(['delete', 'agent', 'first', ...at(s)]);
        assert.equal(deleted.code, 0, show(deleted));

        const second = await running;
        assert.equal(second.code, 0, show(second));
        const lines = second.stderr.split('\n');
        const queued = lines.findIndex((l) => queuedLine.test(l));
        const startedLine = lines.findIndex((l) =>
          /^second {2}Running · (job agent-job-second|started) · /.test(l),
        );
        const done = lines.findIndex((l) => /^second {2}Succeeded · exit 0 · /.test(l));
        assert.ok(queued >= 0, `the queue position was shown:\n${second.stderr}`);
        assert.ok(
          queued < startedLine && startedLine < done,
          `queued, then running, then done:\n${second.stderr}`,
        );
        const b = await s.agent('second');
        // startedAt has whole seconds: compare with the second the first run's slot was given up in.
        assert.ok(
          Date.parse(b?.status.startedAt ?? '') >= Math.floor(freedAt / 1000) * 1000,
          `the second run started once the first was deleted (${b?.status.startedAt}, deleted at ${new Date(freedAt).toISOString()})`,
        );
      }),
  );

  it(
    'run --follow prints the fake Claude run as readable text, --json as raw lines; describe shows tokens and cost',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'cli-follow', async (s) => {
        const images = fakeClaudeImages(s, runtime);
        const template = {
          spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'agent', image: images.agent }] },
        };
        // `reviewer` pauses 6 s after each line it prints: its first lines are out long before it ends, so only a
        // live stream (not the status.output shown at the end) can put them on stdout while it is still Running.
        await s.create(
          claudeDefinition('reviewer', 6000),
          stationManifest('reviewer', 'reviewer', { template }),
          claudeDefinition('quick'),
          stationManifest('quick', 'quick', { template }),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init } });

        let seen: { at: number; phase: Promise<string | undefined> } | undefined;
        const r = await cli(
          ['run', 'reviewer', '--prompt', 'the open pull request', '--follow', ...at(s)],
          {},
          {
            stdout: (soFar) => {
              const name = /^(reviewer-[a-z0-9]{5})\n/.exec(soFar)?.[1];
              if (name === undefined || seen !== undefined || !/^▸ Bash ls$/m.test(soFar)) return;
              // The tool call line has reached the CLI's stdout: what is the run's phase at this moment?
              seen = { at: Date.now(), phase: s.agent(name).then((a) => a?.status.phase) };
            },
          },
        );
        assert.equal(r.code, 0, show(r));
        assert.ok(seen !== undefined, `the tool call line was printed:\n${show(r)}`);
        assert.equal(await seen.phase, 'Running', 'the line was streamed while the run was still running');
        const [name = '', ...text] = r.stdout.split('\n');
        const finished = await s.agent(name);
        const completedAt = Date.parse(finished?.status.completedAt ?? '');
        assert.ok(
          seen.at < completedAt,
          `the line arrived (${new Date(seen.at).toISOString()}) before the run completed (${finished?.status.completedAt})`,
        );
        assert.match(name, /^reviewer-[a-z0-9]{5}$/);
        const body = text.join('\n');
        for (const re of [
          /^▸ Bash ls$/m,
          /^ {2}↳ Bash: ok$/m,
          /^all tests pass$/m,
          /^✓ done · 1 turn · 12 in \/ 7 out tokens · \$0\.0123$/m,
        ])
          assert.match(body, re, show(r));
        assert.ok(!body.includes('{"type"'), `no raw stream-JSON in the readable text:\n${body}`);
        assert.doesNotMatch(r.stderr, /^warning:/m, 'the template uses {prompt}');
        assert.match(r.stderr, new RegExp(`^${name} {2}Succeeded · exit 0 · `, 'm'), show(r));
        const created = await s.agent(name);
        assert.deepEqual((created?.spec as { parameters?: unknown } | undefined)?.parameters, {
          prompt: 'the open pull request',
        });

        const raw = await cli(['run', 'quick', '--prompt', 'again', '--follow', '--json', ...at(s)]);
        assert.equal(raw.code, 0, show(raw));
        const parsed = raw.stdout
          .split('\n')
          .slice(1)
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { type?: string });
        assert.ok(
          parsed.some((l) => l.type === 'assistant'),
          show(raw),
        );
        assert.ok(
          parsed.some((l) => l.type === 'result'),
          show(raw),
        );

        const described = await cli(['describe', name, ...at(s)]);
        assert.equal(described.code, 0, show(described));
        assert.match(
          described.stdout,
          /^Tokens: +\d+ \(input 12, output 7, cache read 3, cache write 2\)$/m,
          show(described),
        );
        assert.match(
          described.stdout,
          /^Cost: +\$0\.0123 \(reported by the CLI, claude-opus-5-5\)$/m,
          show(described),
        );
        assert.match(described.stdout, /^Result: +all tests pass$/m, show(described));

        const logs = await cli(['logs', name, ...at(s)]);
        assert.equal(logs.code, 0, show(logs));
        assert.match(logs.stdout, /^all tests pass$/m, show(logs));
        const rawLogs = await cli(['logs', name, '--json', ...at(s)]);
        assert.match(rawLogs.stdout, /"type":"result"/, show(rawLogs));
      }),
  );

  it(
    'a caller without the grants gets exit 3 and the API server reason on one line',
    { timeout: 120_000 },
    () =>
      runScenario(cluster, 'cli-refused', async (s) => {
        await s.create(
          { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'nobody' } },
          execDefinition('hello', ['sh', '-c', 'echo hi']),
          stationManifest('hello', 'hello'),
        );
        const kubeconfig = await s.kubeconfigAs('nobody');
        const flags = ['--kubeconfig', kubeconfig, '-n', s.ns];
        const got = await cli(['get', 'agents', ...flags]);
        assert.equal(got.code, 3, show(got));
        assert.match(got.stderr, /^error: not allowed \(403\): .*cannot list resource "agents"/, show(got));
        assert.equal(got.stderr.trim().split('\n').length, 1, show(got));
        const ran = await cli(['run', 'hello', ...flags]);
        assert.equal(ran.code, 3, show(ran));
        assert.match(ran.stderr, /^error: not allowed \(403\): .*cannot create resource "agents"/, show(ran));
        const described = await cli(['describe', 'agent', 'x', ...flags]);
        assert.equal(described.code, 3, show(described));
      }),
  );

  it(
    'get agents --watch prints a row for an Agent created while it watches, a row per change, until stopped',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'cli-watch', async (s) => {
        await s.startReplica();
        await s.create(
          execDefinition('hello', ['sh', '-c', 'echo "watched: $0"']),
          stationManifest('hello', 'hello'),
        );
        let stdout = '';
        let stderr = '';
        let ended = false;
        const stop = new AbortController();
        const watching = cli(
          ['get', 'agents', '--watch', ...at(s)],
          {},
          {
            stdout: (soFar) => {
              stdout = soFar;
            },
            stderr: (soFar) => {
              stderr = soFar;
            },
            stop: stop.signal,
          },
        );
        void watching.then(() => {
          ended = true;
        });
        /** Waits until the watch's output so far passes `test`; its output is in the timeout error. */
        const outputUntil = (test: () => boolean, description: string, timeoutMs = 60_000) =>
          pollUntil(
            (observe) => {
              observe({ ended, stdout, stderr });
              return test() ? true : undefined;
            },
            { timeoutMs, description },
          );
        try {
          // The namespace has no Agent yet: the watch says so once it has listed, then waits for changes.
          await outputUntil(
            () => stderr.includes(`No resources found in ${s.ns} namespace.`),
            'get --watch to list the empty namespace',
          );
          assert.equal(ended, false, 'the watch goes on after the empty list');
          await s.create(agentManifest('watched', 'hello'));
          await outputUntil(
            () => /^NAME\s+PHASE\s+STATION\s+JOB\s+AGE\nwatched\s+\S/.test(stdout),
            'the header and a row of the new Agent',
          );
          // The controller runs it: each change is a new row, up to the terminal phase.
          await outputUntil(
            () => /^watched\s+Succeeded\s+hello\s+agent-job-watched\s+\d+[smh]/m.test(stdout),
            'a row of the Agent Succeeded',
            150_000,
          );
        } finally {
          stop.abort();
        }
        const r = await watching;
        // SIGTERM stops the watch as Ctrl-C does: the watch is closed and the exit code is 0.
        assert.equal(r.code, 0, show(r));
        const rows = r.stdout.split('\n').filter((l) => /^watched\s/.test(l));
        assert.ok(rows.length >= 2, `a row for the new Agent and one per change:\n${show(r)}`);
        assert.equal(r.stdout.match(/^NAME\s/gm)?.length, 1, `one header:\n${show(r)}`);
      }),
  );

  it("logs -f follows a running Agent's log until the run ends, then exits 0", { timeout: 240_000 }, () =>
    runScenario(cluster, 'cli-logs-follow', async (s) => {
      await s.startReplica();
      // A line, then 8 s later the last one: the first is out long before the run ends.
      await s.create(
        execDefinition('paced', ['sh', '-c', 'echo "first line: $0"; sleep 8; echo "last line: $0"']),
        stationManifest('paced', 'paced'),
      );
      const started = await cli(['run', 'paced', '--set', 'name=followed', ...at(s)]);
      assert.equal(started.code, 0, show(started));
      const name = started.stdout.trim();
      assert.match(name, /^paced-[a-z0-9]{5}$/, show(started));
      await s.waitForAgent(name, (a) => a.status.phase === 'Running', 'Running');

      let firstSeen: Promise<string | undefined> | undefined;
      const r = await cli(
        ['logs', name, '-f', ...at(s)],
        {},
        {
          stdout: (soFar) => {
            if (firstSeen !== undefined || !/^first line: run followed$/m.test(soFar)) return;
            // The first line has reached the CLI's stdout: what is the run's phase at this moment?
            firstSeen = s.agent(name).then((a) => a?.status.phase);
          },
        },
      );
      assert.equal(r.code, 0, show(r));
      assert.ok(firstSeen !== undefined, `the first line was printed:\n${show(r)}`);
      assert.equal(await firstSeen, 'Running', 'the first line was streamed while the run was still running');
      const first = r.stdout.indexOf('first line: run followed\n');
      const last = r.stdout.indexOf('last line: run followed\n');
      assert.ok(first >= 0 && last > first, `both lines, in order:\n${show(r)}`);
      assert.equal(r.stdout.match(/^first line: /gm)?.length, 1, `no line twice:\n${show(r)}`);
      // It followed to the end of the run: the run is over (its status may be written a moment after the log ends).
      const done = await s.waitTerminal(name);
      assert.equal(done.status.phase, 'Succeeded');
    }),
  );

  it('kubectl agent: the bundle as a kubectl plugin (a file named kubectl-agent on PATH)', {
    timeout: 240_000,
  }, (t) => {
    const kubectl = kubectlBinary();
    if (kubectl === undefined) {
      t.skip('no kubectl built with the control plane (scripts/build-kube-binaries)');
      return;
    }
    return runScenario(cluster, 'cli-plugin', async (s) => {
      await s.startReplica();
      await s.create(
        execDefinition('hello', ['sh', '-c', 'echo "hello from the plugin: $0"']),
        stationManifest('hello', 'hello'),
      );
      // kubectl runs `kubectl-agent` from PATH: a script running the bundle on the runtime under test through a
      // link named kubectl-agent.mjs, so the bundle sees that name (as an npm-installed kubectl-agent would).
      const dir = s.tempDir();
      const lib = join(dir, 'lib');
      mkdirSync(lib);
      const link = join(lib, 'kubectl-agent.mjs');
      symlinkSync(BUNDLE_PATH, link);
      const argv = bundleArgv(runtime).map((a) => (a === BUNDLE_PATH ? link : a));
      const plugin = join(dir, 'kubectl-agent');
      writeFileSync(plugin, `#!/bin/sh\nexec ${argv.map(shq).join(' ')} "$@"\n`);
      chmodSync(plugin, 0o755);
      const env = cliEnv({
        PATH: `${dir}:${process.env.PATH ?? '/usr/bin:/bin'}`,
        KUBECONFIG: s.cluster.kubeconfig,
      });

      const listed = await exec(kubectl, ['plugin', 'list'], env);
      assert.ok(listed.stdout.includes(plugin), show(listed));

      const help = await exec(kubectl, ['agent'], env);
      assert.equal(help.code, 0, show(help));
      assert.match(help.stdout, /^Usage: kubectl agent <command> \[flags\]/, show(help));
      assert.doesNotMatch(help.stderr, /Serving health|leader/i, 'no controller started');

      const run = await exec(
        kubectl,
        ['agent', '-n', s.ns, 'run', 'hello', '--set', 'name=plugin', '--wait'],
        env,
      );
      assert.equal(run.code, 0, show(run));
      const name = run.stdout.trim();
      assert.match(name, /^hello-[a-z0-9]{5}$/);

      const got = await exec(kubectl, ['agent', 'get', 'agents', '-n', s.ns], env);
      assert.equal(got.code, 0, show(got));
      assert.match(got.stdout, new RegExp(`^${name}\\s+Succeeded\\s+hello\\s`, 'm'), show(got));

      const logs = await exec(kubectl, ['agent', 'logs', name, '-n', s.ns], env);
      assert.match(logs.stdout, /^hello from the plugin: run plugin$/m, show(logs));

      const missing = await exec(kubectl, ['agent', 'get', 'agent', 'nope', '-n', s.ns], env);
      assert.equal(missing.code, 4, show(missing));
      assert.equal(missing.stderr, `error: agent "nope" in namespace "${s.ns}" not found\n`);

      const usage = await exec(kubectl, ['agent', 'frobnicate'], env);
      assert.equal(usage.code, 2, show(usage));
      assert.equal(usage.stderr, `error: unknown command "frobnicate" (try 'kubectl agent --help')\n`);
    });
  });
});
