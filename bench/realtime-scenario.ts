// `npm run bench -- --mode realtime`: S realtime sessions (default 100) open at once on the local control plane,
// each prompted P times (default 5) through the controller's prompt API and, alternately, straight to its run pod
// with the run's own token. The difference is what the controller adds to a turn (TokenReview and
// SubjectAccessReview, reading the Agent and its pod, forwarding the stream): overhead p50/p99 from the same run.
// The run pods' `claude` is the mock agent CLI from a test image (no vendor), so a turn costs one process start.
// Prints figures; asserts nothing.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import * as v from 'valibot';
import { API_VERSION, GROUP, VERSION } from '../src/api/index.ts';
import { promptTokenSecretName } from '../src/jobs/realtime.ts';
import {
  addTestImages,
  apiPath,
  type KubeClient,
  readTestbedInfo,
  testbedImage,
} from '../test/support/index.ts';
import type { BenchOptions } from './args.ts';
import {
  type ControllerProcess,
  type Sampler,
  scrape,
  startControllerProcess,
  startSampler,
  waitLeader,
} from './controller-process.ts';
import { BENCH_LABEL, BENCH_STATION } from './fixtures.ts';
import { runPool } from './http.ts';
import { type Summary, summarize } from './stats.ts';

const info = (text: string): void => void process.stderr.write(`[bench] ${text}\n`);
const now = (): number => performance.timeOrigin + performance.now();
const MiB = 1024 * 1024;

const AgentView = v.looseObject({
  metadata: v.looseObject({ name: v.string() }),
  status: v.optional(v.looseObject({ phase: v.optional(v.string()), jobName: v.optional(v.string()) })),
});
const PodList = v.looseObject({
  items: v.array(
    v.looseObject({
      metadata: v.looseObject({ labels: v.optional(v.record(v.string(), v.string())) }),
      status: v.optional(v.looseObject({ phase: v.optional(v.string()), podIP: v.optional(v.string()) })),
    }),
  ),
});
const SecretView = v.looseObject({ data: v.optional(v.record(v.string(), v.string())) });
const TokenRequest = v.looseObject({ status: v.looseObject({ token: v.string() }) });

export interface RealtimeReport {
  readonly sessions: number;
  readonly prompts: number;
  readonly ready: number;
  readonly sessionsReadyMs: number | undefined;
  readonly viaController: Summary;
  readonly direct: Summary;
  readonly overhead: Summary;
  readonly firstLineViaController: Summary;
  readonly firstLineDirect: Summary;
  readonly failures: number;
  readonly firstFailures: readonly string[];
  readonly succeeded: number;
  /** Mean request → first line as the controller itself measured it (its own share, without the client's hop). */
  readonly controllerFirstLineMeanMs: number | undefined;
  /** API-server requests the controller made while the turns ran (reconciles included). */
  readonly apiCallsDuringTurns: number;
  readonly terminal: number;
  /** Closing every session → every Agent terminal. */
  readonly closeToTerminalMs: number | undefined;
  readonly rssPeakMiB: number | undefined;
  readonly cpuSeconds: number | undefined;
}

export interface RealtimeScenarioInput {
  readonly opts: BenchOptions;
  readonly repoRoot: string;
  readonly client: KubeClient;
  readonly runId: string;
  readonly live: { controller: ControllerProcess | undefined; readonly namespaces: Set<string> };
  readonly signal: AbortSignal;
  readonly createNamespace: (name: string) => Promise<void>;
}

/** One turn: POSTs the prompt, reads the NDJSON answer to its end; times to the first line and to the end. */
async function turn(
  url: string,
  token: string,
  prompt: string,
): Promise<{ ok: true; firstMs: number; totalMs: number } | { ok: false; error: string }> {
  const start = now();
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt }),
      signal: AbortSignal.timeout(120_000),
    });
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  if (res.status !== 200)
    return { ok: false, error: `HTTP ${res.status} ${(await res.text()).slice(0, 160)}` };
  let first: number | undefined;
  let text = '';
  const reader = res.body?.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    if (reader === undefined) break;
    const { done, value } = await reader.read();
    if (done) break;
    first ??= now() - start;
    text += decoder.decode(value, { stream: true });
  }
  if (!text.includes('"type":"result"')) return { ok: false, error: 'no result line' };
  return { ok: true, firstMs: first ?? now() - start, totalMs: now() - start };
}

export async function runRealtimeScenario(input: RealtimeScenarioInput): Promise<RealtimeReport> {
  const { opts, client, runId, live, signal } = input;
  const namespace = `bench-rt-${runId}`;
  const testbed = readTestbedInfo(opts.kubeconfig);
  if (testbed?.imageDir === undefined)
    throw new Error('--mode realtime needs the local testbed with an image folder (scripts/testbed up)');
  const cluster = { kubeconfig: opts.kubeconfig, client, testbed };
  // The fake claude: the mock agent CLI in Claude style, echoing each prompt.
  const wrapper = join(testbed.logDir, `..`, `bench-claude-${runId}`);
  writeFileSync(
    wrapper,
    '#!/bin/sh\nMOCK_STYLE=claude MOCK_ECHO_PROMPT=1 exec node /opt/fake-cli/mock-agent.mjs "$@"\n',
    {
      mode: 0o755,
    },
  );
  const files = {
    '/usr/local/bin/claude': wrapper,
    '/opt/fake-cli/mock-agent.mjs': join(input.repoRoot, 'test', 'mock-agent', 'mock-agent.mjs'),
  };
  const base = testbedImage(cluster, opts.agentImage);
  const initImage = `agent-controller:bench-${runId}`;
  const agentImage = `fake-claude:bench-${runId}`;
  const removeImages = addTestImages(cluster, `bench-${runId}`, {
    [initImage]: { ...base, files: { ...(base.files as Record<string, string>), ...files } },
    [agentImage]: { entrypoint: [], files },
  });
  let sampler: Sampler | undefined;
  try {
    await input.createNamespace(namespace);
    live.namespaces.add(namespace);
    const labels = { [BENCH_LABEL]: runId };
    const group = (resource: string) => apiPath(API_VERSION, resource, { namespace });
    await client.create(group('agentdefinitions'), {
      apiVersion: API_VERSION,
      kind: 'AgentDefinition',
      metadata: { name: BENCH_STATION, labels },
      spec: { model: 'claude-opus-5-5', prompt: 'session {i}', execution: 'realtime' },
    });
    await client.create(group('stations'), {
      apiVersion: API_VERSION,
      kind: 'Station',
      metadata: { name: BENCH_STATION, labels },
      spec: {
        agentDefRef: BENCH_STATION,
        maxConcurrentRuns: 0,
        deadlineMinutes: 30,
        // Keep every ended session: the report counts them (the default history of 3 would delete the rest).
        successfulRunsHistoryLimit: 100_000,
        failedRunsHistoryLimit: 100_000,
        template: {
          spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'agent', image: agentImage }] },
        },
      },
    });
    // The caller: a ServiceAccount allowed to prompt and close, and its token.
    await client.create(apiPath('v1', 'serviceaccounts', { namespace }), {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'prompter' },
    });
    await client.create(apiPath('rbac.authorization.k8s.io/v1', 'roles', { namespace }), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'prompter' },
      rules: [{ apiGroups: [GROUP], resources: ['agents/prompt', 'agents/close'], verbs: ['create'] }],
    });
    await client.create(apiPath('rbac.authorization.k8s.io/v1', 'rolebindings', { namespace }), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'prompter' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'prompter' },
      subjects: [{ kind: 'ServiceAccount', name: 'prompter', namespace }],
    });
    const caller = (
      await client.create(
        apiPath('v1', 'serviceaccounts', { namespace, name: 'prompter', subresource: 'token' }),
        { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
        TokenRequest,
      )
    ).status.token;

    const logFile = `/tmp/agent-controller-bench-${runId}-realtime.log`;
    info(`starting the controller (${opts.runtime}, REALTIME_ENABLED=true); log ${logFile}`);
    const controller = await startControllerProcess({
      runtime: opts.runtime,
      repoRoot: input.repoRoot,
      bundle: `${input.repoRoot}/${opts.bundle}`,
      kubeconfig: opts.kubeconfig,
      namespace,
      agentImage: initImage,
      logFile,
      env: { REALTIME_ENABLED: 'true', API_PORT: '0', HEALTH_HOST: '127.0.0.1' },
    });
    live.controller = controller;
    if (!(await waitLeader(controller.metricsUrl, 60_000, signal)))
      throw new Error(`the controller did not become leader within 60 s (log: ${logFile})`);
    sampler = startSampler(controller.metricsUrl, 1000);
    for (let i = 0; controller.apiPort() === undefined && i < 100; i++) await delay(100);
    const api = `http://127.0.0.1:${controller.apiPort() ?? 0}`;

    const names = Array.from({ length: opts.sessions }, (_, i) => `rt-${String(i).padStart(4, '0')}`);
    info(`opening ${names.length} sessions`);
    const opened = now();
    await runPool(names.length, opts.concurrency, async (i) => {
      await client.create(group('agents'), {
        apiVersion: API_VERSION,
        kind: 'Agent',
        metadata: { name: names[i], labels },
        spec: { stationRef: BENCH_STATION, parameters: { i: String(i) } },
      });
    });
    // Each session's pod IP and token; ready when its pod runs and its first turn (the rendered prompt) answered.
    const pods = new Map<string, { ip: string; token: string }>();
    const deadline = Date.now() + opts.timeoutMs;
    while (pods.size < names.length && Date.now() < deadline && !signal.aborted) {
      const list = await client.list(group('agents'), {}, AgentView);
      const podList = await client.get(apiPath('v1', 'pods', { namespace }), PodList);
      const ipByJob = new Map<string, string>();
      for (const p of podList.items) {
        const job = p.metadata.labels?.['job-name'];
        if (job !== undefined && p.status?.phase === 'Running' && p.status.podIP)
          ipByJob.set(job, p.status.podIP);
      }
      for (const a of list.items) {
        const name = a.metadata.name;
        const ip = ipByJob.get(a.status?.jobName ?? '');
        if (pods.has(name) || a.status?.phase !== 'Running' || ip === undefined) continue;
        const secret = await client.get(
          apiPath('v1', 'secrets', { namespace, name: promptTokenSecretName(name) }),
          SecretView,
        );
        const token = atob(secret.data?.token ?? '');
        const health = await fetch(`http://${ip}:8090/healthz`).then(
          async (r) => (r.ok ? ((await r.json()) as { busy: boolean }) : undefined),
          () => undefined,
        );
        if (health !== undefined && !health.busy) pods.set(name, { ip, token });
      }
      if (pods.size < names.length) await delay(500);
    }
    const sessionsReadyMs = pods.size === names.length ? now() - opened : undefined;
    info(
      `${pods.size} of ${names.length} sessions ready; ${opts.prompts} prompts each, alternating API and direct`,
    );

    const before = await scrape(controller.metricsUrl);
    const via: number[] = [];
    const direct: number[] = [];
    const overhead: number[] = [];
    const firstVia: number[] = [];
    const firstDirect: number[] = [];
    const failures: string[] = [];
    await runPool([...pods.keys()].length, names.length, async (i) => {
      const name = [...pods.keys()][i] ?? '';
      const pod = pods.get(name);
      if (pod === undefined) return;
      for (let k = 0; k < opts.prompts && !signal.aborted; k++) {
        const a = await turn(
          `${api}/apis/${GROUP}/${VERSION}/namespaces/${namespace}/agents/${name}/prompt`,
          caller,
          `via the API ${k}`,
        );
        const b = await turn(`http://${pod.ip}:8090/prompt`, pod.token, `straight to the pod ${k}`);
        if (!a.ok) failures.push(`${name} API: ${a.error}`);
        if (!b.ok) failures.push(`${name} direct: ${b.error}`);
        if (a.ok) {
          via.push(a.totalMs);
          firstVia.push(a.firstMs);
        }
        if (b.ok) {
          direct.push(b.totalMs);
          firstDirect.push(b.firstMs);
        }
        if (a.ok && b.ok) overhead.push(a.totalMs - b.totalMs);
      }
    });
    const afterTurns = await scrape(controller.metricsUrl);
    const inController = (x: typeof before) => x?.promptFirstLine ?? { sum: 0, count: 0 };
    const ctlFirst = inController(afterTurns);
    const ctlFirst0 = inController(before);
    const apiCalls = (x: typeof before) => Object.values(x?.apiByVerb ?? {}).reduce((n, c) => n + c.count, 0);
    const controllerFirstLineMeanMs =
      ctlFirst.count > ctlFirst0.count
        ? ((ctlFirst.sum - ctlFirst0.sum) / (ctlFirst.count - ctlFirst0.count)) * 1000
        : undefined;
    const apiCallsDuringTurns = apiCalls(afterTurns) - apiCalls(before);
    info('closing the sessions');
    await runPool(names.length, opts.concurrency, async (i) => {
      await fetch(`${api}/apis/${GROUP}/${VERSION}/namespaces/${namespace}/agents/${names[i]}/close`, {
        method: 'POST',
        headers: { authorization: `Bearer ${caller}`, 'content-type': 'application/json' },
        body: '{}',
      }).then(
        (r) => r.body?.cancel(),
        () => undefined,
      );
    });
    let succeeded = 0;
    let terminal = 0;
    const closed = now();
    const closeDeadline = Date.now() + Math.max(120_000, names.length * 3000);
    while (Date.now() < closeDeadline && !signal.aborted) {
      const list = await client.list(group('agents'), {}, AgentView);
      succeeded = list.items.filter((a) => a.status?.phase === 'Succeeded').length;
      terminal = list.items.filter(
        (a) => a.status?.phase === 'Succeeded' || a.status?.phase === 'Failed',
      ).length;
      if (terminal === list.items.length) break;
      await delay(500);
    }
    const closeToTerminalMs = terminal === names.length ? now() - closed : undefined;
    await sampler.stop();
    const rss = sampler.samples.map((x) => x.rssBytes).filter((x): x is number => x !== undefined);
    return {
      sessions: names.length,
      prompts: opts.prompts,
      ready: pods.size,
      sessionsReadyMs,
      viaController: summarize(via),
      direct: summarize(direct),
      overhead: summarize(overhead),
      firstLineViaController: summarize(firstVia),
      firstLineDirect: summarize(firstDirect),
      failures: failures.length,
      firstFailures: failures.slice(0, 3),
      succeeded,
      controllerFirstLineMeanMs,
      apiCallsDuringTurns,
      terminal,
      closeToTerminalMs,
      rssPeakMiB: rss.length === 0 ? undefined : Math.max(...rss) / MiB,
      cpuSeconds: sampler.samples.at(-1)?.cpuSeconds,
    };
  } finally {
    await sampler?.stop().catch(() => undefined);
    await live.controller?.stop();
    live.controller = undefined;
    removeImages();
  }
}

const ms = (x: number): string =>
  Number.isFinite(x) ? `${Math.round(x).toLocaleString('en-US')} ms` : 'n/a';

export function formatRealtimeReport(r: RealtimeReport): string {
  const rows: [string, string, string][] = [
    ['figure (p50 / p99)', 'through the controller', 'straight to the pod'],
    [
      'prompt round trip',
      `${ms(r.viaController.p50)} / ${ms(r.viaController.p99)}`,
      `${ms(r.direct.p50)} / ${ms(r.direct.p99)}`,
    ],
    [
      'to the first line',
      `${ms(r.firstLineViaController.p50)} / ${ms(r.firstLineViaController.p99)}`,
      `${ms(r.firstLineDirect.p50)} / ${ms(r.firstLineDirect.p99)}`,
    ],
    ['overhead of the controller (paired)', `${ms(r.overhead.p50)} / ${ms(r.overhead.p99)}`, ''],
    [
      "to the first line, the controller's own clock (mean)",
      r.controllerFirstLineMeanMs === undefined ? 'n/a' : ms(r.controllerFirstLineMeanMs),
      '',
    ],
  ];
  const w0 = Math.max(...rows.map((x) => x[0].length));
  const w1 = Math.max(...rows.map((x) => x[1].length));
  return [
    `realtime sessions: ${r.ready} of ${r.sessions} ready${r.sessionsReadyMs !== undefined ? ` in ${ms(r.sessionsReadyMs)}` : ''}, ${r.prompts} prompts each through the API and ${r.prompts} straight to the pod, all sessions at once`,
    '',
    ...rows.map(([a, b, c]) => `${a.padEnd(w0)}  ${b.padEnd(w1)}  ${c}`.trimEnd()),
    '',
    `turns measured: ${r.viaController.count} via the API, ${r.direct.count} direct; failures ${r.failures}${r.firstFailures.length > 0 ? `\n  ${r.firstFailures.join('\n  ')}` : ''}`,
    `API-server requests of the controller during the turns: ${r.apiCallsDuringTurns}`,
    `closed: ${r.terminal} terminal (${r.succeeded} Succeeded)${r.closeToTerminalMs !== undefined ? `, all within ${ms(r.closeToTerminalMs)} of the closes` : ''}; controller RSS peak ${r.rssPeakMiB?.toFixed(0) ?? 'n/a'} MiB, CPU ${r.cpuSeconds?.toFixed(1) ?? 'n/a'} s`,
    '',
  ].join('\n');
}
