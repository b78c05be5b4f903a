// Issue 14 / docs/design/reference-behaviour.md#d-l-admission-by-construction: a burst of Agents never exceeds a
// Station's concurrency limit. Two controller replicas
// (one leads), three Stations (Forbid, Allow with maxConcurrentRuns 3, Replace with maxConcurrentRuns 2, which
// Replace caps at one), 30 Agents each created at once by concurrent POSTs. For 30 s the Running Agents and the live
// Jobs of each Station are sampled every 200 ms, and a watch records every phase change; no run finishes in that
// window (the runs sleep), so the Jobs of Forbid and Allow Stations are exactly the runs ever started.
// The second case stops the leader in the middle of the burst: the standby takes over from its own cache and must
// count the runs the first leader started, including any it admitted but had not yet marked Running.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  collectionPath,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  nodePassOnlySkipReason,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

const PER_STATION = 30;
const WINDOW_MS = 30_000;
const SAMPLE_MS = 200;
const STATION_LABEL = 'agents.re-cinq.com/station';

/** Station name → its effective limit. */
const STATIONS: ReadonlyArray<{ name: string; spec: Record<string, unknown>; limit: number }> = [
  { name: 'forbid-1', spec: { concurrencyPolicy: 'Forbid', maxConcurrentRuns: 1 }, limit: 1 },
  { name: 'allow-3', spec: { concurrencyPolicy: 'Allow', maxConcurrentRuns: 3 }, limit: 3 },
  { name: 'replace-2', spec: { concurrencyPolicy: 'Replace', maxConcurrentRuns: 2 }, limit: 1 },
];

interface Figures {
  /** Most Running Agents seen at once per Station: by sampling and by the watch. */
  readonly sampledRunning: Map<string, number>;
  readonly watchedRunning: Map<string, number>;
  /** Most live Jobs (not being deleted, Agent still there) seen at once per Station. */
  readonly liveJobs: Map<string, number>;
  /** Every Job name seen per Station. */
  readonly jobsSeen: Map<string, Set<string>>;
  readonly samples: number;
}

async function sampleFor(s: Scenario, ms: number, onSample?: (n: number) => Promise<void>): Promise<Figures> {
  const sampledRunning = new Map<string, number>();
  const liveJobs = new Map<string, number>();
  const jobsSeen = new Map<string, Set<string>>(STATIONS.map((st) => [st.name, new Set<string>()]));
  const bump = (m: Map<string, number>, k: string, n: number) => m.set(k, Math.max(m.get(k) ?? 0, n));
  const end = Date.now() + ms;
  let samples = 0;
  while (Date.now() < end) {
    const next = Date.now() + SAMPLE_MS;
    // Jobs first, then Agents: a Job counts as live only if its Agent still exists afterwards. A Replace victim
    // is deleted before its successor's Job is created, but its own Job lingers (without deletionTimestamp) until
    // the garbage collector gets to it; listed in this order, the two never both count.
    const jobs = await s.jobs();
    const agents = await s.agents();
    const present = new Set(agents.map((a) => a.metadata.name ?? ''));
    for (const st of STATIONS) {
      const running = agents.filter((a) => a.spec.stationRef === st.name && a.status.phase === 'Running');
      bump(sampledRunning, st.name, running.length);
      const mine = jobs.filter((j) => j.metadata.labels?.[STATION_LABEL] === st.name);
      for (const j of mine) jobsSeen.get(st.name)?.add(j.metadata.name ?? '');
      const live = mine.filter(
        (j) =>
          j.metadata.deletionTimestamp === undefined &&
          (j.metadata.ownerReferences ?? []).some((o) => present.has(o.name)),
      );
      bump(liveJobs, st.name, live.length);
      if (live.length > st.limit) {
        const detail = live.map((j) => {
          const owner = agents.find((a) =>
            (j.metadata.ownerReferences ?? []).some((o) => o.name === a.metadata.name),
          );
          return `${j.metadata.name} (created ${j.metadata.creationTimestamp}, Agent ${owner?.status.phase ?? '?'}${owner?.metadata.deletionTimestamp ? ' deleting' : ''})`;
        });
        process.stdout.write(`# ${st.name}: ${live.length} live Jobs: ${detail.join('; ')}\n`);
      }
    }
    samples++;
    await onSample?.(samples);
    const wait = next - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  return { sampledRunning, watchedRunning: new Map(), liveJobs, jobsSeen, samples };
}

async function burst(s: Scenario, midway?: (sample: number) => Promise<void>): Promise<Figures> {
  await s.create(
    execDefinition('long-nap', ['sh', '-c', 'sleep 120; echo "done $0"']),
    ...STATIONS.map((st) => stationManifest(st.name, 'long-nap', st.spec)),
  );
  const rec = await s.recordAgents();
  const manifests = STATIONS.flatMap((st) =>
    Array.from({ length: PER_STATION }, (_, i) => agentManifest(`${st.name}-${i}`, st.name)),
  );
  // All at once: concurrent POSTs, so many share a creationTimestamp second and commit out of name order.
  await Promise.all(manifests.map((m) => s.client.create(collectionPath('Agent', s.ns), m)));
  const figures = await sampleFor(s, WINDOW_MS, midway);
  await rec.stop();
  assert.deepEqual(rec.errors, []);
  return { ...figures, watchedRunning: rec.maxRunningByStation };
}

function assertWithinLimits(f: Figures): void {
  const report = JSON.stringify({
    sampled: Object.fromEntries(f.sampledRunning),
    watched: Object.fromEntries(f.watchedRunning),
    liveJobs: Object.fromEntries(f.liveJobs),
    jobsSeen: Object.fromEntries([...f.jobsSeen].map(([k, v]) => [k, v.size])),
    samples: f.samples,
  });
  process.stdout.write(`# burst figures: ${report}\n`);
  assert.ok(f.samples >= 20, `sampled often enough: ${f.samples}`);
  for (const st of STATIONS) {
    assert.ok(
      (f.watchedRunning.get(st.name) ?? 0) <= st.limit,
      `${st.name}: Running per watch ≤ ${st.limit}: ${report}`,
    );
    assert.ok(
      (f.sampledRunning.get(st.name) ?? 0) <= st.limit,
      `${st.name}: Running per sample ≤ ${st.limit}: ${report}`,
    );
    assert.ok((f.liveJobs.get(st.name) ?? 0) <= st.limit, `${st.name}: live Jobs ≤ ${st.limit}: ${report}`);
    // The limit is also reached: the Station is not simply stuck.
    assert.equal(
      f.watchedRunning.get(st.name),
      st.limit,
      `${st.name} filled its ${st.limit} slot(s): ${report}`,
    );
  }
  // No run ends within the window, so every Job of a Forbid or Allow Station is a run that was started.
  for (const st of STATIONS.filter((x) => x.spec.concurrencyPolicy !== 'Replace')) {
    assert.equal(
      f.jobsSeen.get(st.name)?.size,
      st.limit,
      `${st.name}: Jobs ever created = ${st.limit}: ${report}`,
    );
  }
}

describe(`controller: a burst of Agents never exceeds a Station's limit (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'two replicas, 3 × 30 Agents at once: never above Forbid 1, Allow 3, Replace 1',
    { timeout: 180_000 },
    () =>
      runScenario(cluster, 'ctl-burst', async (s) => {
        await s.startReplica();
        await s.startReplica();
        assertWithinLimits(await burst(s));
      }),
  );

  it(
    'the leader stops in the middle of the burst: the standby counts what it started',
    { timeout: 180_000 },
    () =>
      runScenario(cluster, 'ctl-burst-handover', async (s) => {
        const replicas = [await s.startReplica(), await s.startReplica()];
        const leader = await pollUntil(
          async () => {
            for (const r of replicas) if ((await r.metric('controller_is_leader')) === 1) return r;
            return undefined;
          },
          { timeoutMs: 30_000, description: 'a leader' },
        );
        let stopped = false;
        const figures = await burst(s, async (n) => {
          // A few samples in: the first admissions are in flight; a clean stop releases the Lease at once.
          if (n !== 3 || stopped) return;
          stopped = true;
          await leader.stop(20_000);
        });
        assert.ok(stopped, 'the leader was stopped during the window');
        const standby = replicas.find((r) => r !== leader);
        assert.equal(await standby?.metric('controller_is_leader'), 1, 'the standby leads');
        assertWithinLimits(figures);
      }),
  );
});
