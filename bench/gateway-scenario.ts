// `npm run bench -- --scenario gateway` (issue 28, "Bench"): what the model gateway adds to a model call, measured
// against the same call straight to the vendor fake in the same run. On the local control plane: one namespace with
// the credential key Secret, `agent-secrets` and one Agent whose status carries a grant (as the controller writes
// it; no controller runs), the gateway from the built bundle as a process (test/support/gateway.ts, log level info),
// and the Anthropic Messages fake in a process of its own (bench/gateway-fake.ts). Then:
//  1. N whole and N streamed calls, one at a time, each call made once straight to the fake and once through the
//     gateway (the order alternating), after 20 of each to warm up: latency to the end, time to the first text
//     delta (first token), and the difference within each pair.
//  2. Three rounds of S streams opened at once (default 200) each way, alternating: all complete?, wall time,
//     streams/s and events/s, first token and end p50/p99.
//  3. Throughout, the gateway's RSS and CPU time from /proc/<pid> every 200 ms; at the end, what it metered.
// The client is plain fetch (undici) reading raw bytes, so the figures carry no SDK's parsing. Prints; asserts nothing.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import * as v from 'valibot';
import { API_VERSION } from '../src/api/index.ts';
import { mintGatewayCredential } from '../src/shared/gateway-credential.ts';
import { type GatewayProcess, startGatewayProcess } from '../test/support/gateway.ts';
import { apiPath, type KubeClient, pollUntil } from '../test/support/index.ts';
import type { BenchOptions } from './args.ts';
import { BENCH_LABEL } from './fixtures.ts';
import {
  BENCH_ANSWER,
  type BurstFigures,
  countSseEvents,
  cpuTicksOfStat,
  type GatewayReport,
  type Path,
  type ProcSample,
  pairedDifference,
  phaseUsage,
  rssOfStatus,
  type SequentialFigures,
} from './gateway-figures.ts';
import { perSecond, summarize } from './stats.ts';

const info = (text: string): void => void process.stderr.write(`[bench] ${text}\n`);
const now = (): number => performance.timeOrigin + performance.now();
const MiB = 1024 * 1024;
const MODEL = 'claude-sonnet-4-5';
const AGENT = 'gateway-bench';
const WARM_UP = 20;
const ROUNDS = 3;
const ANNOTATION = 'agents.re-cinq.com/gateway-usage';

export interface GatewayScenarioInput {
  readonly opts: BenchOptions;
  readonly client: KubeClient;
  readonly runId: string;
  readonly live: { readonly namespaces: Set<string> };
  readonly signal: AbortSignal;
  readonly createNamespace: (name: string) => Promise<void>;
}

/** Where a call goes: base URL (ending before `/v1/messages`) and the key it carries. */
interface Target {
  readonly base: string;
  readonly key: string;
}

type CallResult =
  | { readonly ok: true; readonly totalMs: number; readonly firstMs: number; readonly events: number }
  | { readonly ok: false; readonly error: string };

/** One Messages call; whole or streamed. Streamed: first token = the first chunk holding a text delta. */
async function call(target: Target, stream: boolean, signal: AbortSignal): Promise<CallResult> {
  const start = now();
  let res: Response;
  try {
    res = await fetch(`${target.base}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': target.key,
        'anthropic-version': '2023-06-01',
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        model: MODEL,
        max_tokens: 64,
        stream,
        messages: [{ role: 'user', content: 'Say hello.' }],
      }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(120_000)]),
    });
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
  if (res.status !== 200)
    return { ok: false, error: `HTTP ${res.status} ${(await res.text()).slice(0, 160)}` };
  if (!stream) {
    const text = await res.text();
    const totalMs = now() - start;
    return text.includes(BENCH_ANSWER)
      ? { ok: true, totalMs, firstMs: totalMs, events: 0 }
      : { ok: false, error: `unexpected answer ${text.slice(0, 160)}` };
  }
  let first: number | undefined;
  let text = '';
  const decoder = new TextDecoder();
  const reader = res.body?.getReader();
  for (;;) {
    if (reader === undefined) break;
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (first === undefined && text.includes('"text_delta"')) first = now() - start;
  }
  const totalMs = now() - start;
  if (first === undefined || !text.includes('event: message_stop'))
    return { ok: false, error: `incomplete stream ${text.slice(-160)}` };
  return { ok: true, totalMs, firstMs: first, events: countSseEvents(text) };
}

/** Samples the process `pid` every `everyMs` while running. */
function sampleProcess(pid: number, everyMs: number): { samples: ProcSample[]; stop(): void } {
  const tick = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  const samples: ProcSample[] = [];
  const read = (): void => {
    try {
      const ticks = cpuTicksOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      const rss = rssOfStatus(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (ticks !== undefined && rss !== undefined)
        samples.push({ at: Date.now(), rssBytes: rss, cpuSeconds: ticks / tick });
    } catch {
      // the process is gone
    }
  };
  read();
  const timer = setInterval(read, everyMs);
  return {
    samples,
    stop() {
      clearInterval(timer);
      read();
    },
  };
}

/** The fake in its own process; resolves with its URL and key. */
async function startFakeProcess(): Promise<{ baseUrl: string; apiKey: string; stop(): void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/gateway-fake.ts'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    rl.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the fake exited (${code})`)));
  });
  const { baseUrl, apiKey } = v.parse(
    v.object({ baseUrl: v.string(), apiKey: v.string() }),
    JSON.parse(line),
  );
  return { baseUrl, apiKey, stop: () => child.stdin.end() };
}

/** N calls of one kind, each made both ways in a pair (order alternating), after a warm-up. */
async function sequential(
  targets: Record<Path, Target>,
  n: number,
  stream: boolean,
  failures: string[],
  signal: AbortSignal,
): Promise<{ total: SequentialFigures; first: SequentialFigures }> {
  const kept: Record<Path, { total: number[]; first: number[] }> = {
    direct: { total: [], first: [] },
    gateway: { total: [], first: [] },
  };
  for (let i = 0; i < WARM_UP + n && !signal.aborted; i++) {
    const order: Path[] = i % 2 === 0 ? ['direct', 'gateway'] : ['gateway', 'direct'];
    const got = {} as Record<Path, CallResult>;
    for (const path of order) got[path] = await call(targets[path], stream, signal);
    if (!got.direct.ok || !got.gateway.ok) {
      for (const r of [got.direct, got.gateway]) if (!r.ok) failures.push(r.error);
      continue;
    }
    if (i < WARM_UP) continue;
    for (const path of order) {
      const r = got[path];
      if (!r.ok) continue;
      kept[path].total.push(r.totalMs);
      kept[path].first.push(r.firstMs);
    }
  }
  const figures = (k: 'total' | 'first'): SequentialFigures => ({
    direct: summarize(kept.direct[k]),
    gateway: summarize(kept.gateway[k]),
    added: pairedDifference(kept.direct[k], kept.gateway[k]),
  });
  return { total: figures('total'), first: figures('first') };
}

/** S streams opened at once along `path`. */
async function burst(
  target: Target,
  path: Path,
  round: number,
  streams: number,
  failures: string[],
  signal: AbortSignal,
): Promise<BurstFigures> {
  const start = now();
  const results = await Promise.all(Array.from({ length: streams }, () => call(target, true, signal)));
  const wallMs = now() - start;
  const done = results.filter((r): r is Extract<CallResult, { ok: true }> => r.ok);
  for (const r of results) if (!r.ok) failures.push(`${path} burst: ${r.error}`);
  const events = done.reduce((n, r) => n + r.events, 0);
  return {
    path,
    round,
    streams,
    completed: done.length,
    wallMs,
    streamsPerSecond: perSecond(done.length, wallMs),
    eventsPerSecond: perSecond(events, wallMs),
    eventsPerStream: done.length === 0 ? 0 : events / done.length,
    ttft: summarize(done.map((r) => r.firstMs)),
    total: summarize(done.map((r) => r.totalMs)),
  };
}

/** Namespace, Secrets and the granted Agent; returns the run's credential. */
async function prepareCluster(
  input: GatewayScenarioInput,
  namespace: string,
  fakeKey: string,
  hmacKey: Buffer,
) {
  const { client, runId } = input;
  await input.createNamespace(namespace);
  input.live.namespaces.add(namespace);
  const labels = { [BENCH_LABEL]: runId };
  const secrets = apiPath('v1', 'secrets', { namespace });
  await client.create(secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'agent-controller-gateway', labels },
    type: 'Opaque',
    data: { 'hmac-key': hmacKey.toString('base64') },
  });
  await client.create(secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'agent-secrets', labels },
    type: 'Opaque',
    stringData: { ANTHROPIC_API_KEY: fakeKey },
  });
  const agents = apiPath(API_VERSION, 'agents', { namespace });
  const agent = await client.create(
    agents,
    {
      apiVersion: API_VERSION,
      kind: 'Agent',
      metadata: { name: AGENT, labels },
      spec: { stationRef: 'bench', parameters: { name: AGENT } },
    },
    v.looseObject({ metadata: v.looseObject({ uid: v.string() }) }),
  );
  await client.patch(`${agents}/${AGENT}/status`, {
    status: { phase: 'Running', gateway: { keys: { anthropic: 'ANTHROPIC_API_KEY' }, models: ['claude-*'] } },
  });
  return mintGatewayCredential(hmacKey, { namespace, name: AGENT, uid: agent.metadata.uid });
}

/** Calls recorded in the Agent's usage annotation once it holds `expected` (or what it holds after 20 s). */
async function annotatedCalls(
  client: KubeClient,
  namespace: string,
  expected: number,
): Promise<number | undefined> {
  const path = apiPath(API_VERSION, 'agents', { namespace, name: AGENT });
  const Usage = v.object({ models: v.record(v.string(), v.looseObject({ calls: v.number() })) });
  const read = async (): Promise<number | undefined> => {
    const a = await client.get(
      path,
      v.looseObject({
        metadata: v.looseObject({ annotations: v.optional(v.record(v.string(), v.string())) }),
      }),
    );
    const text = a.metadata.annotations?.[ANNOTATION];
    if (text === undefined) return undefined;
    return Object.values(v.parse(Usage, JSON.parse(text)).models).reduce((n, m) => n + m.calls, 0);
  };
  try {
    return await pollUntil(async () => ((await read()) === expected ? expected : undefined), {
      timeoutMs: 20_000,
      intervalMs: 250,
      description: `${expected} calls in the usage annotation`,
    });
  } catch {
    return read();
  }
}

export async function runGatewayScenario(input: GatewayScenarioInput): Promise<GatewayReport> {
  const { opts, client, runId, signal } = input;
  const namespace = `bench-gw-${runId}`;
  const fake = await startFakeProcess();
  let gw: GatewayProcess | undefined;
  let sampler: ReturnType<typeof sampleProcess> | undefined;
  try {
    const credential = await prepareCluster(input, namespace, fake.apiKey, randomBytes(32));
    const origin = new URL(fake.baseUrl).origin;
    gw = await startGatewayProcess({
      kubeconfig: opts.kubeconfig,
      namespace,
      upstreams: { anthropic: origin, openai: origin, gemini: origin },
      runtime: opts.runtime,
      logLevel: 'info',
      identity: `gateway-bench-${runId}`,
    });
    const pid = gw.process.pid;
    if (pid === undefined) throw new Error('the gateway process has no pid');
    sampler = sampleProcess(pid, 200);
    const targets: Record<Path, Target> = {
      direct: { base: fake.baseUrl.replace(/\/v1\/?$/, ''), key: fake.apiKey },
      gateway: { base: `${gw.url}/anthropic`, key: credential },
    };
    const failures: string[] = [];
    const idleRss = sampler.samples.at(-1)?.rssBytes;
    info(`${opts.agents} whole and ${opts.agents} streamed calls each way (pid ${pid})`);
    const seqStart = Date.now();
    const whole = await sequential(targets, opts.agents, false, failures, signal);
    const streamed = await sequential(targets, opts.agents, true, failures, signal);
    const seqEnd = Date.now();
    info(`${ROUNDS} rounds of ${opts.streams} streams at once each way`);
    const bursts: BurstFigures[] = [];
    const burstWindows: [number, number][] = [];
    for (let round = 1; round <= ROUNDS && !signal.aborted; round++) {
      const order: Path[] = round % 2 === 1 ? ['direct', 'gateway'] : ['gateway', 'direct'];
      for (const path of order) {
        const from = Date.now();
        bursts.push(await burst(targets[path], path, round, opts.streams, failures, signal));
        if (path === 'gateway') burstWindows.push([from, Date.now()]);
      }
    }
    sampler.stop();
    const gatewayCalls = 2 * (WARM_UP + opts.agents) + ROUNDS * opts.streams;
    const meteredRequests = await gw.process.metric('gateway_requests_total', { code: '200' });
    const annotated = await annotatedCalls(client, namespace, gatewayCalls);
    const burstUsage = burstWindows
      .map(([from, to]) => phaseUsage(sampler?.samples ?? [], from, to))
      .filter((u) => u !== undefined);
    return {
      runtime: opts.runtime,
      calls: opts.agents,
      sequentialGatewayCalls: 2 * (WARM_UP + opts.agents),
      streamsPerBurst: opts.streams,
      eventsPerStream: bursts[0]?.eventsPerStream ?? 0,
      whole: whole.total,
      streamed: streamed.total,
      ttft: streamed.first,
      bursts,
      idleRssMiB: idleRss === undefined ? undefined : idleRss / MiB,
      sequentialUsage: phaseUsage(sampler.samples, seqStart, seqEnd),
      burstUsage:
        burstUsage.length === 0
          ? undefined
          : {
              samples: burstUsage.reduce((n, u) => n + u.samples, 0),
              peakRssMiB: Math.max(...burstUsage.map((u) => u.peakRssMiB)),
              cpuSeconds: burstUsage.reduce((n, u) => n + u.cpuSeconds, 0),
              cores:
                burstUsage.reduce((n, u) => n + u.cpuSeconds, 0) /
                (burstWindows.reduce((n, [from, to]) => n + (to - from), 0) / 1000),
            },
      finalRssMiB: (sampler.samples.at(-1)?.rssBytes ?? Number.NaN) / MiB,
      gatewayCalls,
      meteredRequests,
      annotatedCalls: annotated,
      failures: failures.length,
      firstFailures: failures.slice(0, 3),
    };
  } finally {
    sampler?.stop();
    await gw?.process.stop();
    fake.stop();
  }
}
