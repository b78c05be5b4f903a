// The chaos run (issue 13 §1): controller replicas (Node and Deno mixed) reach the local control plane through a
// fault-injecting proxy while a steady stream of Agents runs over several Stations; faults are injected on a seeded
// schedule; afterwards the invariants are checked from the API server's audit log (what was really written), not from
// the controller's own account, and the report gives each invariant's violations and the longest recovery per fault.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import * as v from 'valibot';
import { startFakeAnthropic } from '../support/fake-vendors/anthropic.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import {
  agentManifest,
  apiPath,
  applyCrds,
  applyRbacManifests,
  type ControllerProcess,
  collectionPath,
  type E2eCluster,
  type E2eRuntime,
  fakeClaudeImages,
  GROUP_VERSION,
  kubeconfigWithToken,
  type Manifest,
  restartTestbedApiServer,
  runScenario,
  runTestbed,
  type Scenario,
  startController,
  stationManifest,
} from '../support/index.ts';
import { type AuditRecord, readAuditLog } from './audit.ts';
import { checkInvariants, type InvariantResult, identityOf, oneBatchPerRun } from './invariants.ts';
import { between, type FaultKind, type PlannedFault, planFaults, seededRandom } from './schedule.ts';

export interface ChaosProfile {
  readonly name: string;
  readonly seed: number;
  /** How long Agents arrive and faults are injected. */
  readonly minutes: number;
  /** Controller replicas, runtimes alternating Node, Deno, Node. */
  readonly replicas: number;
  /** Gap between two Agents created, [min, max] ms. */
  readonly arrivalMs: readonly [number, number];
  /** Quiet time between faults, [min, max] ms. */
  readonly gapMs: readonly [number, number];
  /** A running pod or Job is deleted by hand about this often (ms). */
  readonly handDeleteMs: number;
  /** The controllers' poll interval (AGENT_POLL_INTERVAL_MS). */
  readonly pollMs: number;
  /** The kinds of fault injected (default: all). */
  readonly kinds?: readonly FaultKind[];
}

export const PROFILES: Readonly<Record<'short' | 'long', Omit<ChaosProfile, 'seed'>>> = {
  short: {
    name: 'short',
    minutes: 3,
    replicas: 2,
    arrivalMs: [1500, 3000],
    gapMs: [3000, 7000],
    handDeleteMs: 30_000,
    pollMs: 5000,
  },
  long: {
    name: 'long',
    minutes: 30,
    replicas: 3,
    arrivalMs: [1000, 3000],
    gapMs: [15_000, 40_000],
    handDeleteMs: 20_000,
    pollMs: 5000,
  },
};

/** The text a run prints and its Succeeded status must carry: its own name, delimited so no name is in another. */
export const markerOf = (name: string): string => `<<${name}>>`;

interface StationPlan {
  readonly name: string;
  readonly definition: string;
  readonly policy: 'Allow' | 'Forbid' | 'Replace';
  readonly limit: number;
  readonly deadlineMinutes: number;
  /** Share of arrivals. */
  readonly weight: number;
}

/** The recipes: a quick success, a quick failure (exit 3), a longer run, and one that outlives its deadline. */
const DEFINITIONS: Readonly<Record<string, string>> = {
  ok: 'sleep $(( $(date +%s) % 3 + 1 )); echo "<<$TASK_ID>>"',
  fail: 'sleep 1; echo "<<$TASK_ID>>"; exit 3',
  long: 'sleep 8; echo "<<$TASK_ID>>"',
  slow: 'echo "<<$TASK_ID>>"; sleep 600',
};

/** The batch recipe: the controller submits the prompt to the fake Anthropic batch API, which echoes it. */
const BATCH_DEFINITION = 'batch';
/**
 * The realtime recipe: a session whose pod runs the supervisor around the mock Claude CLI (echoing each prompt); the
 * driver prompts it once through a replica's prompt API, then closes it.
 */
const REALTIME_DEFINITION = 'realtime';

const STATIONS: readonly StationPlan[] = [
  { name: 'allow', definition: 'ok', policy: 'Allow', limit: 2, deadlineMinutes: 5, weight: 35 },
  { name: 'batch', definition: BATCH_DEFINITION, policy: 'Allow', limit: 3, deadlineMinutes: 5, weight: 10 },
  {
    name: 'realtime',
    definition: REALTIME_DEFINITION,
    policy: 'Allow',
    limit: 2,
    deadlineMinutes: 5,
    weight: 6,
  },
  { name: 'failing', definition: 'fail', policy: 'Allow', limit: 2, deadlineMinutes: 5, weight: 15 },
  { name: 'forbid', definition: 'long', policy: 'Forbid', limit: 1, deadlineMinutes: 5, weight: 12 },
  { name: 'replace', definition: 'long', policy: 'Replace', limit: 1, deadlineMinutes: 5, weight: 20 },
  { name: 'deadline', definition: 'slow', policy: 'Allow', limit: 1, deadlineMinutes: 1, weight: 3 },
];

const LeaseSchema = v.looseObject({
  spec: v.optional(v.looseObject({ holderIdentity: v.optional(v.nullable(v.string())) }), {}),
});
const AgentItemSchema = v.looseObject({
  metadata: v.looseObject({ name: v.string(), uid: v.string() }),
  spec: v.looseObject({ stationRef: v.string() }),
  status: v.optional(v.looseObject({ phase: v.optional(v.string()), jobName: v.optional(v.string()) }), {}),
});
const NamedSchema = v.looseObject({ metadata: v.looseObject({ name: v.string() }) });
const RawSchema = v.looseObject({
  metadata: v.looseObject({
    name: v.string(),
    finalizers: v.optional(v.array(v.string())),
    deletionTimestamp: v.optional(v.string()),
  }),
  status: v.optional(v.unknown()),
});

interface Replica {
  readonly identity: string;
  readonly runtime: E2eRuntime;
  readonly proc: ControllerProcess;
  /** Its realtime prompt API (`http://127.0.0.1:<port>`). */
  readonly api: string;
}

/** A fault as it happened. */
export interface InjectedFault {
  readonly kind: FaultKind;
  readonly start: number;
  readonly end: number;
  readonly detail: string;
  /** It could not be injected (no live leader to kill or pause): not counted as injected. */
  readonly skipped: boolean;
}

export interface ChaosReport {
  readonly profile: ChaosProfile;
  readonly created: number;
  readonly phases: Readonly<Record<string, number>>;
  readonly faults: readonly InjectedFault[];
  readonly invariants: readonly InvariantResult[];
  /** Longest time from a fault's end to the next successful Agent transition, per kind (ms). */
  readonly recovery: Readonly<Partial<Record<FaultKind, number>>>;
  readonly violations: number;
  readonly auditRecords: number;
}

function definition(name: string, script: string): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: { model: 'exec', prompt: 'run {name}', tool_config: { command: ['sh', '-c', script] } },
  };
}

/** A batch AgentDefinition: its prompt carries the run's marker, and the fake vendor's answer echoes the prompt. */
function batchDefinition(name: string): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: { model: 'claude-opus-5-5', prompt: 'run {marker}', execution: 'batch' },
  };
}

/** A realtime AgentDefinition: the first turn's prompt carries the run's marker (the mock CLI echoes it). */
function realtimeDefinition(name: string): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: { model: 'claude-opus-5-5', prompt: 'run {marker}', execution: 'realtime' },
  };
}

/** Runs the chaos profile on `cluster` (the local testbed, with its audit log) and returns the report. */
export async function runChaos(
  cluster: E2eCluster,
  profile: ChaosProfile,
  say: (line: string) => void,
): Promise<ChaosReport> {
  const testbed = cluster.testbed;
  if (testbed === undefined) throw new Error('the chaos run needs the local testbed (scripts/testbed up)');
  const auditLog = testbed.auditLog;
  if (auditLog === undefined)
    throw new Error(
      'the testbed has no audit log: restart it with `scripts/testbed down && scripts/testbed up`',
    );
  let report: ChaosReport | undefined;
  await runScenario(cluster, `chaos-${profile.name}`, async (s) => {
    report = await chaosScenario(s, profile, auditLog, say);
  });
  if (report === undefined) throw new Error('the chaos scenario ended without a report');
  return report;
}

async function chaosScenario(
  s: Scenario,
  profile: ChaosProfile,
  auditLog: string,
  say: (line: string) => void,
): Promise<ChaosReport> {
  // One stream per concern, so a replay draws the same numbers whatever the timing interleaves.
  const random = seededRandom(profile.seed);
  const handRandom = seededRandom(profile.seed ^ 0x4a4d);
  const burstRandom = seededRandom(profile.seed ^ 0xb0b);
  const sessionRandom = seededRandom(profile.seed ^ 0x5e55);
  const testbed = s.cluster.testbed;
  if (testbed === undefined) throw new Error('no testbed');
  const certs = join(testbed.logDir, '..', 'certs');
  await applyCrds(s.client);
  await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
  const proxy = await startFaultProxy({
    upstream: testbed.apiserver,
    caCertPath: join(certs, 'ca.crt'),
    caKeyPath: join(certs, 'ca.key'),
    workDir: s.tempDir(),
    random: seededRandom(profile.seed ^ 0x5eed),
  });
  s.defer(() => proxy.close());
  // Batch runs go to a loopback fake of Anthropic's batch API (not through the fault proxy: the faults are the
  // control plane's); each batch ends on its own 1.5 s after creation with the prompt echoed.
  await applyRbacManifests(s, 'deploy/components/batch/batch-rbac.yaml');
  // Realtime sessions: the realtime component's grants, a caller allowed agents/prompt and agents/close, and run
  // pods with the mock Claude CLI (its init image is the run-pod image plus the CLI, for every Station).
  await applyRbacManifests(s, 'deploy/components/realtime/realtime-rbac.yaml');
  await applyRbacManifests(s, 'deploy/rbac/caller-rbac.yaml');
  const images = fakeClaudeImages(s, 'node', { MOCK_ECHO_PROMPT: '1' });
  const vendor = await startFakeAnthropic({ autoFinishMs: 1500 });
  s.defer(() => vendor.close());
  const kubeconfig = kubeconfigWithToken(
    s.cluster.kubeconfig,
    await s.serviceAccountToken('agent-controller', 24 * 3600),
    'agent-controller',
    s.tempDir(),
    proxy.url,
  );

  const history = { successfulRunsHistoryLimit: 100_000, failedRunsHistoryLimit: 100_000 };
  await s.create(
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'agent-secrets' },
      stringData: { ANTHROPIC_API_KEY: vendor.apiKey },
    },
    batchDefinition(BATCH_DEFINITION),
    realtimeDefinition(REALTIME_DEFINITION),
    ...Object.entries(DEFINITIONS).map(([name, script]) => definition(name, script)),
    ...STATIONS.map((st) =>
      stationManifest(st.name, st.definition, {
        concurrencyPolicy: st.policy,
        maxConcurrentRuns: st.limit,
        deadlineMinutes: st.deadlineMinutes,
        ...history,
        ...(st.definition === REALTIME_DEFINITION
          ? {
              template: {
                spec: {
                  terminationGracePeriodSeconds: 2,
                  containers: [{ name: 'agent', image: images.agent }],
                },
              },
            }
          : {}),
      }),
    ),
  );

  // Replicas: Node, Deno, Node…; a killed one is replaced by a new process with a new identity (a new pod).
  const started = Date.now();
  const replicas: Replica[] = [];
  const killed = new Set<ControllerProcess>();
  const unexpected: string[] = [];
  let generation = 0;
  const startReplica = async (runtime: E2eRuntime): Promise<Replica> => {
    const identity = `chaos-${String.fromCharCode(97 + (generation % 26))}${Math.floor(generation / 26) || ''}`;
    generation++;
    const proc = startController({
      kubeconfig,
      namespace: s.ns,
      identity,
      runtime,
      pollIntervalMs: profile.pollMs,
      env: {
        BATCH_ENABLED: 'true',
        BATCH_POLL_SECONDS: '1',
        ANTHROPIC_BASE_URL: vendor.baseUrl,
        REALTIME_ENABLED: 'true',
        API_PORT: '0',
        AGENT_IMAGE: images.init,
      },
    });
    s.replicas.push(proc);
    void proc.exited.then((exit) => {
      if (!killed.has(proc)) unexpected.push(`${identity} (${runtime}) exited: ${JSON.stringify(exit)}`);
    });
    const served = await proc.waitForLog('Serving the realtime prompt API', {}, 90_000);
    const replica = { identity, runtime, proc, api: `http://127.0.0.1:${String(served.port)}` };
    replicas.push(replica);
    await proc.waitReady(90_000);
    return replica;
  };
  for (let i = 0; i < profile.replicas; i++) await startReplica(i % 2 === 0 ? 'node' : 'deno');
  say(`replicas: ${replicas.map((r) => `${r.identity} (${r.runtime})`).join(', ')}`);

  const leasePath = apiPath('coordination.k8s.io/v1', 'leases', {
    namespace: s.ns,
    name: 'agent-controller',
  });
  /** The replica holding the Lease, waiting (up to 45 s) for a live one: after a kill the Lease names the dead one a while. */
  const leader = async (): Promise<Replica | undefined> => {
    const until = Date.now() + 45_000;
    while (Date.now() < until) {
      try {
        const lease = await s.client.get(leasePath, LeaseSchema);
        const holder = lease.spec.holderIdentity ?? '';
        const live = replicas.find((r) => r.identity === holder && r.proc.running);
        if (live !== undefined) return live;
      } catch {}
      await delay(500);
    }
    return undefined;
  };

  // Realtime sessions: prompt once through a live replica's prompt API (any replica answers; the call is retried on
  // another after an error, a 503 before the pod listens, or a paused replica's silence), then close the session.
  const launcher = await s.serviceAccountToken('agent-launcher', 24 * 3600);
  const sessions: Promise<void>[] = [];
  const callApi = async (name: string, action: 'prompt' | 'close', body: unknown): Promise<number> => {
    const live = replicas.filter((r) => r.proc.running);
    const r = live[Math.floor(sessionRandom() * live.length)];
    if (r === undefined) return 0;
    try {
      const res = await fetch(`${r.api}/apis/${GROUP_VERSION}/namespaces/${s.ns}/agents/${name}/${action}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${launcher}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      await res.text();
      return res.status;
    } catch {
      return 0;
    }
  };
  /**
   * Prompts the session once, then closes it, until the Agent is terminal (a fault or a deleted pod may end it
   * first). A 409 or 503 means the session is not taking prompts yet (or the run just ended): asked again 2 s later.
   * Gives up after 4 minutes (the run then ends by its deadline, and invariant 6 says so).
   */
  const converse = async (name: string): Promise<void> => {
    const giveUp = Date.now() + 4 * 60_000;
    let prompted = false;
    while (Date.now() < giveUp) {
      const phase = await s.client
        .get(`${agents}/${name}`, AgentItemSchema)
        .then((a) => a.status.phase)
        .catch(() => undefined);
      if (phase === 'Succeeded' || phase === 'Failed') return;
      if (phase === 'Running') {
        if (!prompted)
          prompted = (await callApi(name, 'prompt', { prompt: `again ${markerOf(name)}` })) === 200;
        else if ((await callApi(name, 'close', {})) === 200) return;
      }
      await delay(2000);
    }
    say(`realtime ${name}: not closed within 4 minutes`);
  };

  // The workload: Agents arrive until the end of the fault window.
  const windowMs = profile.minutes * 60_000;
  const end = started + windowMs;
  const agents = collectionPath('Agent', s.ns);
  let created = 0;
  let deadlineRuns = 0;
  const totalWeight = STATIONS.reduce((n, st) => n + st.weight, 0);
  const arrivals = (async () => {
    while (Date.now() < end) {
      let pick = random() * totalWeight;
      let station = STATIONS[0] as StationPlan;
      for (const st of STATIONS) {
        pick -= st.weight;
        if (pick < 0) {
          station = st;
          break;
        }
      }
      // Runs past their deadline take a minute each: a few are enough.
      if (station.name === 'deadline' && deadlineRuns >= Math.max(1, profile.minutes / 5))
        station = STATIONS[0] as StationPlan;
      if (station.name === 'deadline') deadlineRuns++;
      const name = `r-${++created}`;
      try {
        await s.client.create(
          agents,
          agentManifest(name, station.name, { taskId: name, parameters: { marker: markerOf(name) } }),
        );
        if (station.definition === REALTIME_DEFINITION) sessions.push(converse(name));
      } catch (error) {
        // The API server may be restarting, or the request refused under load: try the next one later.
        created--;
        say(`create failed (${String(error).slice(0, 120)})`);
      }
      await delay(between(random, profile.arrivalMs[0], profile.arrivalMs[1]));
    }
  })();

  // By hand: a running run's pod or Job deleted.
  /** Agents whose pod or Job was deleted by hand: one that finished just then has no log left to read. */
  const deletedByHand = new Set<string>();
  const handDeletions = (async () => {
    let n = 0;
    while (Date.now() < end - 20_000) {
      await delay(profile.handDeleteMs);
      try {
        const list = await s.client.list(agents, {}, AgentItemSchema);
        const running = list.items.filter(
          (a) =>
            a.status.phase === 'Running' &&
            (a.spec.stationRef === 'forbid' || a.spec.stationRef === 'replace'),
        );
        const victim = running[between(handRandom, 0, Math.max(0, running.length - 1))];
        const jobName = victim?.status.jobName;
        if (victim === undefined || jobName === undefined) continue;
        deletedByHand.add(victim.metadata.name);
        if (n++ % 2 === 0) {
          const pods = await s.client.list(
            apiPath('v1', 'pods', { namespace: s.ns }),
            { labelSelector: `job-name=${jobName}` },
            NamedSchema,
          );
          for (const p of pods.items)
            await s.client.delete(apiPath('v1', 'pods', { namespace: s.ns, name: p.metadata.name }));
          say(`by hand: deleted the pod of ${victim.metadata.name}`);
        } else {
          await s.client.delete(apiPath('batch/v1', 'jobs', { namespace: s.ns, name: jobName }), {
            propagationPolicy: 'Background',
          });
          say(`by hand: deleted the Job of ${victim.metadata.name}`);
        }
      } catch (error) {
        say(`by-hand deletion failed (${String(error).slice(0, 120)})`);
      }
    }
  })();

  // The faults, on their seeded schedule.
  const plan = planFaults(profile.seed, {
    startMs: 0,
    endMs: windowMs - 15_000,
    gapMs: profile.gapMs,
    ...(profile.kinds !== undefined ? { kinds: profile.kinds } : {}),
  });
  const faults: InjectedFault[] = [];
  for (const f of plan) {
    const wait = started + f.at - Date.now();
    if (wait > 0) await delay(wait);
    const t0 = Date.now();
    const detail = await inject(f);
    const skipped = detail.startsWith('(');
    faults.push({ kind: f.kind, start: t0, end: Date.now(), detail, skipped });
    say(`${((t0 - started) / 1000).toFixed(1)} s: ${f.kind} ${detail}`);
  }

  async function inject(f: PlannedFault): Promise<string> {
    switch (f.kind) {
      case 'kill-leader': {
        const l = await leader();
        if (l === undefined) return '(no leader to kill)';
        killed.add(l.proc);
        await l.proc.kill();
        await delay(2000);
        const next = await startReplica(l.runtime);
        return `${l.identity} SIGKILLed; ${next.identity} started`;
      }
      case 'pause-leader': {
        const l = await leader();
        const pid = l?.proc.pid;
        if (l === undefined || pid === undefined) return '(no leader to pause)';
        process.kill(pid, 'SIGSTOP');
        // Continued whatever happens, also when this process is told to exit meanwhile.
        const resume = (): void => {
          try {
            process.kill(pid, 'SIGCONT');
          } catch {}
        };
        process.once('exit', resume);
        try {
          await delay(f.durationMs);
        } finally {
          resume();
          process.off('exit', resume);
        }
        return `${l.identity} SIGSTOPped for ${(f.durationMs / 1000).toFixed(0)} s`;
      }
      case 'restart-apiserver': {
        const run = await restartTestbedApiServer(s.cluster.kubeconfig);
        return `in ${run.durationMs} ms`;
      }
      case 'restart-node': {
        // The test node's kubelet: the run pods it was running fail (their processes are gone), as on a real node.
        const run = await runTestbed(s.cluster.kubeconfig, ['restart', 'node-agent']);
        if (run.code !== 0) throw new Error(`scripts/testbed restart node-agent failed: ${run.stderr}`);
        return `in ${run.durationMs} ms`;
      }
      case 'compact-etcd': {
        // Open watches keep streaming past a compaction; cut them so they resume from revisions now compacted.
        const compacted = await compactEtcd(testbed?.etcd ?? '');
        proxy.cut();
        return `${compacted}, then every connection cut`;
      }
      case 'cut':
        proxy.cut();
        return 'every connection cut';
      case 'half-open':
        proxy.stall();
        await delay(f.durationMs);
        proxy.cut();
        proxy.open();
        return `connections stalled ${(f.durationMs / 1000).toFixed(0)} s, then cut`;
      case 'latency':
        proxy.setFaults({ latencyMs: [100, 800] });
        await delay(f.durationMs);
        proxy.clearFaults();
        return `100–800 ms per request for ${(f.durationMs / 1000).toFixed(0)} s`;
      case 'errors':
        proxy.setFaults({ errorRate: 0.2, errorCodes: [429, 500, 503], retryAfterSeconds: 1 });
        await delay(f.durationMs);
        proxy.clearFaults();
        return `20% of requests answered 429/500/503 for ${(f.durationMs / 1000).toFixed(0)} s`;
      case 'watch-burst':
        return watchBurst(s, burstRandom);
    }
  }

  await arrivals;
  await handDeletions;
  proxy.clearFaults();
  proxy.open();
  const faultsStopped = Date.now();
  say(`faults stopped after ${((faultsStopped - started) / 1000).toFixed(0)} s; ${created} Agents created`);

  // (6) Every Agent terminal within the longest deadline and one poll, plus what its Station's queue asks: the
  // Agents still waiting behind a limit run one limit-full at a time (at most ~15 s each here).
  let backlog = 0;
  try {
    const waiting = (await s.client.list(agents, {}, AgentItemSchema)).items.filter(
      (a) => a.status.phase !== 'Succeeded' && a.status.phase !== 'Failed',
    );
    for (const st of STATIONS) {
      const n = waiting.filter((a) => a.spec.stationRef === st.name).length;
      if (st.limit > 0) backlog = Math.max(backlog, Math.ceil(n / st.limit) * 15_000);
    }
  } catch {}
  const settle = 60_000 + profile.pollMs + 60_000 + backlog;
  let unfinished: v.InferOutput<typeof AgentItemSchema>[] = [];
  const settleBy = Date.now() + settle;
  let phases: Record<string, number> = {};
  while (Date.now() < settleBy) {
    try {
      const list = await s.client.list(agents, {}, AgentItemSchema);
      phases = {};
      for (const a of list.items) {
        const p = a.status.phase ?? 'Pending';
        phases[p] = (phases[p] ?? 0) + 1;
      }
      unfinished = list.items.filter((a) => a.status.phase !== 'Succeeded' && a.status.phase !== 'Failed');
      if (unfinished.length === 0) break;
    } catch {}
    await delay(2000);
  }
  // Where each unfinished Agent stands (at most 5), read before the namespace goes: its Job's and pods' status.
  const standing = await whereStuck(
    s.client,
    s.ns,
    unfinished.map((a) => a.metadata.name),
  );
  // Realtime sessions still being closed end now (each gives up after its 4 minutes).
  await Promise.all(sessions);
  phases.deleted = created - Object.values(phases).reduce((n, x) => n + x, 0);

  // (7) No replica exited unless killed on purpose; nothing unhandled logged.
  const crashes = [...unexpected];
  for (const r of replicas) {
    for (const l of r.proc.lines) {
      if (/unhandled|uncaught/i.test(`${l.msg} ${JSON.stringify(l)}`) || l.level === 'fatal')
        crashes.push(`${r.identity}: ${l.msg}`);
    }
  }

  // (1)–(5) from the audit log.
  const records = readAuditLog(auditLog, started - 1000);
  const invariants: InvariantResult[] = [
    ...checkInvariants({
      records,
      namespace: s.ns,
      stations: new Map(STATIONS.map((st) => [st.name, st.limit])),
      lease: { namespace: s.ns, name: 'agent-controller' },
      controllerUser: `system:serviceaccount:${s.ns}:agent-controller`,
      markerOf,
      podDeletedByHand: deletedByHand,
    }),
    {
      id: 6,
      name: `every Agent terminal within ${Math.round(settle / 1000)} s after the faults stop (deadline, poll, queue)`,
      checked: created,
      violations: unfinished.map(
        (a) => `${a.metadata.name} (${a.spec.stationRef}: ${a.status.phase ?? 'Pending'})`,
      ),
    },
    {
      id: 7,
      name: 'no controller exited unless killed, nothing unhandled logged',
      checked: replicas.length,
      violations: crashes,
    },
    oneBatchPerRun(vendor.batches()),
  ];
  const recovery = recoveries(faults, records, `system:serviceaccount:${s.ns}:agent-controller`, s.ns);
  const violations = invariants.reduce((n, i) => n + i.violations.length, 0);
  if (violations > 0) {
    // The replicas' logs outlive the scenario's namespace and temp folders: where to look is printed.
    for (const r of replicas) {
      const path = join(tmpdir(), `chaos-${profile.seed}-${r.identity}.log`);
      writeFileSync(path, r.proc.logText());
      say(`log of ${r.identity}: ${path}`);
    }
    // CI keeps only what is printed: the story of each Agent named in a violation, from the audit log (its writes,
    // its Job's, its pods' and the reads of its pod's log) and from the replicas' own log lines.
    for (const line of violationStories(invariants, records, replicas)) say(line);
    for (const line of standing) say(line);
  }
  return {
    profile,
    created,
    phases,
    faults,
    invariants,
    recovery,
    violations,
    auditRecords: records.length,
  };
}

/** The Job and pods of the first unfinished Agents (by name), as the API server has them now (one line each). */
async function whereStuck(
  client: Scenario['client'],
  ns: string,
  names: readonly string[],
): Promise<string[]> {
  const out: string[] = [];
  for (const name of names.slice(0, 5)) {
    try {
      const agent = await client.get(apiPath(GROUP_VERSION, 'agents', { namespace: ns, name }), RawSchema);
      out.push(`now ${name}: Agent status ${JSON.stringify(agent.status ?? {}).slice(0, 600)}`);
      const jobs = await client.list(
        apiPath('batch/v1', 'jobs', { namespace: ns }),
        { labelSelector: `agents.re-cinq.com/agent=${name}` },
        RawSchema,
      );
      for (const j of jobs.items)
        out.push(
          `now ${name}: Job ${j.metadata.name} status ${JSON.stringify(j.status ?? {}).slice(0, 800)}`,
        );
      const pods = await client.list(
        apiPath('v1', 'pods', { namespace: ns }),
        { labelSelector: `job-name=${jobs.items[0]?.metadata.name ?? `agent-job-${name}`}` },
        RawSchema,
      );
      for (const p of pods.items)
        out.push(
          `now ${name}: pod ${p.metadata.name} finalizers ${JSON.stringify(p.metadata.finalizers ?? [])} ` +
            `deleting ${p.metadata.deletionTimestamp ?? 'no'} status ${JSON.stringify(p.status ?? {}).slice(0, 600)}`,
        );
    } catch (error) {
      out.push(`now ${name}: could not be read (${String(error).slice(0, 200)})`);
    }
  }
  return out;
}

/** The Agents named in the violations (at most 5), each with its audit trail and the replicas' lines about it. */
function violationStories(
  invariants: readonly InvariantResult[],
  records: readonly AuditRecord[],
  replicas: readonly Replica[],
): string[] {
  const names = new Set<string>();
  for (const inv of invariants)
    for (const text of inv.violations) for (const m of text.matchAll(/\b(r-\d+)\b/g)) names.add(m[1] ?? '');
  const out: string[] = [];
  for (const name of [...names].filter((n) => n !== '').slice(0, 5)) {
    // The Agent, its Job (`<prefix><name>`) and the Job's pods (`<job>-<suffix>`): names ending in the Agent's.
    const mine = new RegExp(`(^|-)${name}(-[a-z0-9]{5})?$`);
    out.push(`story of ${name}:`);
    for (const r of records) {
      const objectName = r.name ?? nameOf(r.responseObject);
      if (objectName === undefined || !mine.test(objectName)) continue;
      out.push(`  audit ${new Date(r.completed).toISOString()} ${auditSummary(r)}`);
    }
    for (const r of replicas) {
      const lines = r.proc
        .logText()
        .split('\n')
        .filter((l) => l.includes(`"${name}"`) || l.includes(`/${name}"`) || l.includes(`-${name}"`));
      for (const l of lines.slice(-40)) out.push(`  ${r.identity}: ${l.slice(0, 400)}`);
    }
  }
  return out;
}

const nameOf = (x: unknown): string | undefined => {
  const parsed = v.safeParse(NamedSchema, x);
  return parsed.success ? parsed.output.metadata.name : undefined;
};

/** One audit record in a line: who did what, the answer, and the status fields that tell a run's story. */
function auditSummary(r: AuditRecord): string {
  const what = `${r.verb} ${r.resource}${r.subresource === undefined ? '' : `/${r.subresource}`} ${r.name ?? ''}`;
  const body = r.responseObject ?? r.requestObject;
  const status =
    typeof body === 'object' && body !== null && 'status' in body
      ? JSON.stringify((body as { status: unknown }).status)
      : '';
  return `${what} by ${r.user} → ${r.code}${status === '' ? '' : ` status ${status.slice(0, 600)}`}`;
}

/** Compacts etcd at its current revision (every watch older than it gets 410 Gone). */
async function compactEtcd(etcd: string): Promise<string> {
  const range = await fetch(`${etcd}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from('/').toString('base64') }),
  });
  const revision = ((await range.json()) as { header?: { revision?: string } }).header?.revision;
  if (revision === undefined) return '(no revision)';
  const r = await fetch(`${etcd}/v3/kv/compaction`, {
    method: 'POST',
    body: JSON.stringify({ revision, physical: true }),
  });
  return `at revision ${revision} (${r.status})`;
}

/** Patches an annotation on up to 300 finished Agents at once: changes the controller must take in and ignore. */
async function watchBurst(s: Scenario, random: () => number): Promise<string> {
  const agents = collectionPath('Agent', s.ns);
  const list = await s.client.list(agents, {}, AgentItemSchema);
  const done = list.items
    .filter((a) => a.status.phase === 'Succeeded' || a.status.phase === 'Failed')
    .slice(0, 300);
  let n = 0;
  for (let i = 0; i < done.length; i += 25) {
    await Promise.all(
      done.slice(i, i + 25).map(async (a) => {
        try {
          await s.client.patch(`${agents}/${a.metadata.name}`, {
            metadata: { annotations: { 'chaos.test/burst': String(Math.floor(random() * 1e9)) } },
          });
          n++;
        } catch {}
      }),
    );
  }
  return `${n} finished Agents changed`;
}

/** For each fault, the time from its end to the next successful Agent status write by a controller; the longest per kind. */
function recoveries(
  faults: readonly InjectedFault[],
  records: readonly AuditRecord[],
  user: string,
  namespace: string,
): Partial<Record<FaultKind, number>> {
  const writes = records
    .filter(
      (r) =>
        r.user === user &&
        r.namespace === namespace &&
        r.resource === 'agents' &&
        r.subresource === 'status' &&
        r.code >= 200 &&
        r.code < 300 &&
        identityOf(r.userAgent) !== undefined,
    )
    .map((r) => r.completed)
    .sort((a, b) => a - b);
  const out: Partial<Record<FaultKind, number>> = {};
  for (const f of faults) {
    if (f.skipped) continue;
    const next = writes.find((t) => t >= f.end);
    if (next === undefined) continue;
    out[f.kind] = Math.max(out[f.kind] ?? 0, next - f.end);
  }
  return out;
}

/** The report as text. */
export function formatReport(r: ChaosReport): string {
  const lines: string[] = [];
  const p = r.profile;
  lines.push(
    `chaos run: profile ${p.name}, seed ${p.seed}, ${p.minutes} min of faults, ${p.replicas} replicas, poll ${p.pollMs} ms`,
  );
  lines.push(
    `runs: ${r.created} created; ${Object.entries(r.phases)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  const byKind = new Map<string, number>();
  for (const f of r.faults) if (!f.skipped) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
  lines.push(
    `faults: ${r.faults.filter((f) => !f.skipped).length} injected, ${r.faults.filter((f) => f.skipped).length} skipped (${[
      ...byKind,
    ]
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')})`,
  );
  lines.push(`invariants (audit records read: ${r.auditRecords}):`);
  for (const inv of r.invariants) {
    lines.push(`  ${inv.id}. ${inv.name}: ${inv.violations.length} violations (${inv.checked} checked)`);
    for (const v of inv.violations.slice(0, 10)) lines.push(`       - ${v}`);
    if (inv.violations.length > 10) lines.push(`       … ${inv.violations.length - 10} more`);
  }
  lines.push('longest recovery (fault end → next Agent transition written):');
  for (const [kind, ms] of Object.entries(r.recovery).sort())
    lines.push(`  ${kind}: ${(ms / 1000).toFixed(1)} s`);
  lines.push(`violations: ${r.violations}`);
  return lines.join('\n');
}
