// `npm run bench -- --scenario ttft` (issue 25 §5): time to first token. In one namespace with one controller, the
// real Claude Code (test/clis, the test images of test/support/real-clis.ts) runs against the loopback Anthropic
// Messages fake playing a one-turn script, and the mock CLI (test/mock-agent in Claude style) runs beside it; bare
// Pods of the same agent images (no controller, no init container, no supervisor) give the raw bound. First one run
// of each alone on the idle control plane, then a burst of N of each created at once. Every mark is a time on this
// host's clock: the POST's return, the pods' log lines (`timestamps=true`: when the test node read them) and the
// fake's arrival time of each request. Prints figures; asserts nothing.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import * as v from 'valibot';
import { API_VERSION } from '../src/api/index.ts';
import {
  apiPath,
  fakeClaudeImages,
  type ImageHost,
  type KubeClient,
  readTestbedInfo,
} from '../test/support/index.ts';
import { startAnthropicModel } from '../test/support/model-api/index.ts';
import { realCliImages } from '../test/support/real-clis.ts';
import type { BenchOptions } from './args.ts';
import { type ControllerProcess, startControllerProcess, waitLeader } from './controller-process.ts';
import { BENCH_LABEL } from './fixtures.ts';
import { runPool } from './http.ts';
import {
  agentRunMarks,
  firstRequests,
  markerText,
  parseTimedLog,
  type RunMarks,
  rawRunMarks,
  type TimedRun,
  type TtftCli,
  type TtftPath,
  type TtftPhase,
  type TtftReport,
  ttftRows,
} from './ttft.ts';

const info = (text: string): void => void process.stderr.write(`[bench] ${text}\n`);
const now = (): number => performance.timeOrigin + performance.now();
const MODEL = 'claude-sonnet-4-5';
const PROMPT = 'Answer with one word: done.';
/** Runs of each kind timed one at a time on the idle control plane (each alone, after the previous has ended). */
export const IDLE_RUNS = 5;

const AgentView = v.looseObject({
  metadata: v.looseObject({ name: v.string() }),
  status: v.optional(v.looseObject({ phase: v.optional(v.string()), jobName: v.optional(v.string()) })),
});
const PodView = v.looseObject({
  metadata: v.looseObject({ name: v.string(), labels: v.optional(v.record(v.string(), v.string())) }),
  status: v.optional(v.looseObject({ phase: v.optional(v.string()) })),
});

export interface TtftScenarioInput {
  readonly opts: BenchOptions;
  readonly repoRoot: string;
  readonly client: KubeClient;
  readonly runId: string;
  readonly live: { controller: ControllerProcess | undefined; readonly namespaces: Set<string> };
  readonly signal: AbortSignal;
  readonly createNamespace: (name: string) => Promise<void>;
}

/** Peak resident memory and count of `claude` processes on this host, sampled from /proc every second. */
function startClaudeSampler(): { stop(): Promise<{ rssMiB: number; processes: number }> } {
  let rssMiB = 0;
  let processes = 0;
  const ac = new AbortController();
  const loop = (async () => {
    while (!ac.signal.aborted) {
      let kib = 0;
      let n = 0;
      for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
        try {
          if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'claude') continue;
          const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
          n++;
          kib += Number(m?.[1] ?? 0);
        } catch {
          // gone meanwhile
        }
      }
      rssMiB = Math.max(rssMiB, kib / 1024);
      processes = Math.max(processes, n);
      await delay(1000, undefined, { signal: ac.signal }).catch(() => undefined);
    }
  })();
  return {
    async stop() {
      ac.abort();
      await loop;
      return { rssMiB, processes };
    },
  };
}

export async function runTtftScenario(input: TtftScenarioInput): Promise<TtftReport> {
  const { opts, client, runId, live, signal } = input;
  const namespace = `bench-ttft-${runId}`;
  const testbed = readTestbedInfo(opts.kubeconfig);
  if (testbed?.imageDir === undefined)
    throw new Error('--scenario ttft needs the local testbed with an image folder (scripts/testbed up)');
  const cleanups: (() => Promise<void> | void)[] = [];
  const dir = mkdtempSync(join(tmpdir(), `bench-ttft-${runId}-`));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const host: ImageHost = {
    cluster: { kubeconfig: opts.kubeconfig, client, testbed },
    ns: namespace,
    tempDir: () => mkdtempSync(join(dir, 'd-')),
    defer: (fn) => void cleanups.push(fn),
  };
  const apiKey = `sk-ant-bench-${runId}`;
  const fake = await startAnthropicModel({
    turns: [{ text: 'done', usage: { input: 20, output: 2 } }],
    apiKey,
  });
  cleanups.push(() => fake.close());
  const notes: string[] = [];
  const runs: TimedRun[] = [];
  const burstWallMs: Record<string, number> = {};
  let claudePeak: { rssMiB: number; processes: number } | undefined;
  try {
    info('installing (or reusing) the pinned CLIs and adding the test images');
    const real = realCliImages(host, opts.runtime);
    const mock = fakeClaudeImages(host, opts.runtime);
    const agentImage: Record<TtftCli, string> = { claude: real.agent, mock: mock.agent };

    await input.createNamespace(namespace);
    live.namespaces.add(namespace);
    const labels = { [BENCH_LABEL]: runId };
    const group = (resource: string) => apiPath(API_VERSION, resource, { namespace });
    await client.create(apiPath('v1', 'secrets', { namespace }), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'agent-secrets', labels },
      stringData: { anthropic: apiKey },
    });
    for (const cli of ['claude', 'mock'] as const) {
      await client.create(group('agentdefinitions'), {
        apiVersion: API_VERSION,
        kind: 'AgentDefinition',
        metadata: { name: cli, labels },
        spec: {
          model: MODEL,
          prompt: `${PROMPT} ${markerText('{marker}')}`,
          ...(cli === 'claude'
            ? {
                resources: {
                  env: [{ name: 'ANTHROPIC_BASE_URL', value: fake.baseUrl }],
                  secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }],
                },
              }
            : {}),
        },
      });
      await client.create(group('stations'), {
        apiVersion: API_VERSION,
        kind: 'Station',
        metadata: { name: cli, labels },
        spec: {
          agentDefRef: cli,
          maxConcurrentRuns: 0,
          concurrencyPolicy: 'Allow',
          deadlineMinutes: 30,
          // Keep every run's pod until the logs are read (the default history of 3 would prune them).
          successfulRunsHistoryLimit: 100_000,
          failedRunsHistoryLimit: 100_000,
          template: {
            spec: {
              terminationGracePeriodSeconds: 2,
              containers: [{ name: 'agent', image: agentImage[cli] }],
            },
          },
        },
      });
    }

    const logFile = join(tmpdir(), `agent-controller-bench-${runId}-ttft.log`);
    info(`starting the controller (${opts.runtime}); log ${logFile}`);
    // One init image for both Stations: the real CLIs' run-pod image (its init finds `claude` and installs nothing);
    // the agent container's own image decides which `claude` runs.
    const controller = await startControllerProcess({
      runtime: opts.runtime,
      repoRoot: input.repoRoot,
      bundle: join(input.repoRoot, opts.bundle),
      kubeconfig: opts.kubeconfig,
      namespace,
      agentImage: real.init,
      logFile,
    });
    live.controller = controller;
    if (!(await waitLeader(controller.metricsUrl, 60_000, signal)))
      throw new Error(`the controller did not become leader within 60 s (log: ${logFile})`);
    // The namespace's default ServiceAccount (bare pods need it to pass admission).
    for (let i = 0; i < 100; i++) {
      if (await client.tryGet(apiPath('v1', 'serviceaccounts', { namespace, name: 'default' }))) break;
      await delay(200);
    }

    const deadline = (): number => Date.now() + opts.timeoutMs;

    /** Creates `count` Agents of `cli` at once; waits until all are terminal; reads their marks. */
    const agentBatch = async (cli: TtftCli, phase: TtftPhase, count: number, from: number): Promise<void> => {
      const names = Array.from(
        { length: count },
        (_, i) => `${cli}-${phase}-${String(from + i).padStart(4, '0')}`,
      );
      const created = new Map<string, number>();
      const firstSent = now();
      await runPool(
        count,
        count,
        async (i) => {
          const name = names[i] ?? '';
          await client.create(group('agents'), {
            apiVersion: API_VERSION,
            kind: 'Agent',
            metadata: { name, labels },
            spec: { stationRef: cli, parameters: { marker: name } },
          });
          created.set(name, now());
        },
        signal,
      );
      const until = deadline();
      let jobs = new Map<string, string>();
      while (Date.now() < until && !signal.aborted) {
        const list = await client.list(group('agents'), {}, AgentView);
        const mine = list.items.filter((a) => created.has(a.metadata.name));
        jobs = new Map(mine.map((a) => [a.metadata.name, a.status?.jobName ?? '']));
        const terminal = mine.filter((a) => a.status?.phase === 'Succeeded' || a.status?.phase === 'Failed');
        if (terminal.length === created.size) {
          const failed = terminal.filter((a) => a.status?.phase === 'Failed').length;
          if (failed > 0) notes.push(`${cli} ${phase}: ${failed} of ${count} Agents Failed`);
          break;
        }
        await delay(500);
      }
      const pods = await client.list(apiPath('v1', 'pods', { namespace }), {}, PodView);
      const podOfJob = new Map(
        pods.items.map((p) => [p.metadata.labels?.['job-name'] ?? '', p.metadata.name]),
      );
      const seen = firstRequests(fake.requests, names);
      let last = firstSent;
      await runPool(names.length, 8, async (i) => {
        const name = names[i] ?? '';
        const at = created.get(name);
        if (at === undefined) return;
        const pod = podOfJob.get(jobs.get(name) ?? '');
        const logs = async (container: string) =>
          pod === undefined
            ? []
            : parseTimedLog(
                await client.logs(namespace, pod, { container, timestamps: true }).catch(() => ''),
              );
        const podMarks = agentRunMarks(await logs('init'), await logs('agent'));
        const request = seen.get(name);
        const marks: RunMarks = {
          created: at,
          ...podMarks,
          ...(cli === 'claude' && request !== undefined ? { firstRequest: request } : {}),
        };
        last = Math.max(last, ...Object.values(marks));
        runs.push({ cli, path: 'controller', phase, name, marks });
      });
      if (phase === 'burst') burstWallMs[`${cli}-controller`] = last - firstSent;
    };

    /** Creates `count` bare Pods running the CLI of `cli` at once; waits until all ended; reads their marks. */
    const rawBatch = async (cli: TtftCli, phase: TtftPhase, count: number, from: number): Promise<void> => {
      const names = Array.from(
        { length: count },
        (_, i) => `raw-${cli}-${phase}-${String(from + i).padStart(4, '0')}`,
      );
      const created = new Map<string, number>();
      const firstSent = now();
      await runPool(
        count,
        count,
        async (i) => {
          const name = names[i] ?? '';
          const prompt = `${PROMPT} ${markerText(name)}`;
          await client.create(apiPath('v1', 'pods', { namespace }), {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, labels },
            spec: {
              restartPolicy: 'Never',
              automountServiceAccountToken: false,
              terminationGracePeriodSeconds: 2,
              containers: [
                {
                  name: 'cli',
                  image: agentImage[cli],
                  // The argv the product gives Claude Code, minus the settings file and tool flags.
                  command: [
                    'sh',
                    '-c',
                    `echo raw-started; exec claude --print --verbose --output-format stream-json --model ${MODEL} "$0"`,
                    prompt,
                  ],
                  workingDir: '/home/bench',
                  env: [
                    { name: 'HOME', value: '/home/bench' },
                    { name: 'ANTHROPIC_BASE_URL', value: fake.baseUrl },
                    { name: 'ANTHROPIC_API_KEY', value: apiKey },
                    { name: 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', value: '1' },
                  ],
                  volumeMounts: [{ name: 'home', mountPath: '/home/bench' }],
                },
              ],
              volumes: [{ name: 'home', emptyDir: {} }],
            },
          });
          created.set(name, now());
        },
        signal,
      );
      const until = deadline();
      while (Date.now() < until && !signal.aborted) {
        const pods = await client.list(apiPath('v1', 'pods', { namespace }), {}, PodView);
        const done = pods.items.filter(
          (p) =>
            created.has(p.metadata.name) && (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed'),
        );
        if (done.length === created.size) {
          const failed = done.filter((p) => p.status?.phase === 'Failed').length;
          if (failed > 0) notes.push(`raw ${cli} ${phase}: ${failed} of ${count} pods Failed`);
          break;
        }
        await delay(500);
      }
      const seen = firstRequests(fake.requests, names);
      let last = firstSent;
      await runPool(names.length, 8, async (i) => {
        const name = names[i] ?? '';
        const at = created.get(name);
        if (at === undefined) return;
        const log = parseTimedLog(
          await client.logs(namespace, name, { container: 'cli', timestamps: true }).catch(() => ''),
        );
        const request = seen.get(name);
        const marks: RunMarks = {
          created: at,
          ...rawRunMarks(log),
          ...(cli === 'claude' && request !== undefined ? { firstRequest: request } : {}),
        };
        last = Math.max(last, ...Object.values(marks));
        runs.push({ cli, path: 'raw', phase, name, marks });
      });
      if (phase === 'burst') burstWallMs[`${cli}-raw`] = last - firstSent;
    };

    const step = async (what: string, pauseMs: number, body: () => Promise<void>): Promise<void> => {
      if (signal.aborted) return;
      const t = Date.now();
      info(`${what}`);
      await body();
      info(`  done in ${((Date.now() - t) / 1000).toFixed(1)} s`);
      // Let the test node finish tearing the step's pods down before the next step is timed.
      await delay(pauseMs);
    };
    const batch = (path: TtftPath, cli: TtftCli, phase: TtftPhase, count: number, from = 0) =>
      path === 'controller' ? agentBatch(cli, phase, count, from) : rawBatch(cli, phase, count, from);
    // Idle first: one run at a time, each kind in turn, IDLE_RUNS rounds. Then the bursts, each on its own.
    for (let round = 0; round < IDLE_RUNS; round++)
      for (const [path, cli] of [
        ['raw', 'claude'],
        ['controller', 'claude'],
        ['raw', 'mock'],
        ['controller', 'mock'],
      ] as const)
        await step(
          `idle ${round + 1}/${IDLE_RUNS}: one ${cli} ${path === 'raw' ? 'bare pod' : 'Agent'}`,
          3000,
          () => batch(path, cli, 'idle', 1, round),
        );
    const sampler = startClaudeSampler();
    for (const [path, cli] of [
      ['controller', 'claude'],
      ['raw', 'claude'],
    ] as const)
      await step(
        `burst: ${opts.agents} ${cli} ${path === 'raw' ? 'bare pods' : 'Agents'} at once`,
        5000,
        () => batch(path, cli, 'burst', opts.agents),
      );
    claudePeak = await sampler.stop();
    for (const [path, cli] of [
      ['controller', 'mock'],
      ['raw', 'mock'],
    ] as const)
      await step(
        `burst: ${opts.agents} ${cli} ${path === 'raw' ? 'bare pods' : 'Agents'} at once`,
        5000,
        () => batch(path, cli, 'burst', opts.agents),
      );
    await controller.stop();
    live.controller = undefined;
    const other = fake.requests.filter((r) => !(r.method === 'POST' && r.path === '/v1/messages'));
    if (other.length > 0)
      notes.push(
        `the fake also got ${other.length} other requests (${[...new Set(other.map((r) => `${r.method} ${r.path}`))].join(', ')})`,
      );
    const order = (r: TimedRun) => `${r.phase === 'idle' ? 0 : 1}${r.cli}${r.path}${r.name}`;
    runs.sort((a, b) => order(a).localeCompare(order(b)));
    return {
      idleRuns: IDLE_RUNS,
      burst: opts.agents,
      claudeVersion: real.manifest.clis.claude.version,
      runs,
      rows: ttftRows(runs),
      burstWallMs,
      claudePeak,
      notes,
    };
  } finally {
    for (const fn of cleanups.reverse()) await fn();
  }
}
