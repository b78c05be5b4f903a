import * as v from 'valibot';
import { parseAgent, parseAgentDefinition, parseStation } from '../src/api/index.ts';
import { buildJob, buildRunInput, buildRunNetworkPolicy, buildRunServiceAccount } from '../src/jobs/index.ts';
import { benchAgent } from './fixtures.ts';
import { type BenchHttp, runPool } from './http.ts';
import type { RawItemTimes } from './raw-figures.ts';

const Written = v.looseObject({
  metadata: v.looseObject({ uid: v.string(), resourceVersion: v.string(), name: v.string() }),
});

export interface RawBoundOptions {
  readonly http: BenchHttp;
  readonly namespace: string;
  readonly runId: string;
  readonly count: number;
  readonly concurrency: number;
  readonly agentImage: string;
  /** The Station and AgentDefinition as the API server returned them (the Job is built from them). */
  readonly station: unknown;
  readonly definition: unknown;
  readonly now: () => number;
  readonly signal: AbortSignal;
}

function condition(type: string, status: string, reason: string, at: string): Record<string, unknown> {
  return { type, status, reason, message: reason, lastTransitionTime: at, observedGeneration: 1 };
}

/**
 * The raw bound: for each of `count` items, with `concurrency` items in flight, makes the writes the controller makes
 * for one run, back to back, with no controller, no pod and no watch: POST the Agent, POST the run's ServiceAccount,
 * NetworkPolicy and input ConfigMap, POST the Job the controller
 * would build for it (same builder, same size, owned by the Agent) but with `suspend: true` so no pod ever starts,
 * PATCH status Running (resourceVersion precondition), PATCH status Succeeded. Events and the log read are left
 * out. Returns each item's timestamps; a failed step ends its item with the error.
 */
export async function runRawBound(o: RawBoundOptions): Promise<RawItemTimes[]> {
  const station = parseStation(o.station);
  const definition = parseAgentDefinition(o.definition);
  if (!station.ok) throw new Error(`bench Station does not parse: ${station.error}`);
  if (!definition.ok) throw new Error(`bench AgentDefinition does not parse: ${definition.error}`);
  const agents = `/apis/agents.re-cinq.com/v1alpha1/namespaces/${o.namespace}/agents`;
  const jobs = `/apis/batch/v1/namespaces/${o.namespace}/jobs`;
  const configMaps = `/api/v1/namespaces/${o.namespace}/configmaps`;
  const serviceAccounts = `/api/v1/namespaces/${o.namespace}/serviceaccounts`;
  const networkPolicies = `/apis/networking.k8s.io/v1/namespaces/${o.namespace}/networkpolicies`;
  const times: RawItemTimes[] = [];

  await runPool(
    o.count,
    o.concurrency,
    async (i) => {
      const startMs = o.now();
      const fail = (partial: Omit<RawItemTimes, 'startMs' | 'error'>, error: string): void => {
        times.push({ startMs, ...partial, error });
      };
      const manifest = benchAgent(o.namespace, o.runId, i);
      const posted = await o.http.call('POST', agents, manifest);
      const agentMs = o.now();
      if (!posted.ok) return fail({}, posted.error);
      const written = v.safeParse(Written, posted.body);
      const agent = parseAgent(posted.body);
      if (!written.success || !agent.ok) return fail({ agentMs }, 'POST Agent: unexpected response');

      const runInput = {
        agent: agent.value,
        station: station.value,
        definition: definition.value,
        agentImage: o.agentImage,
        now: new Date(agentMs),
      };
      const job = buildJob(runInput);
      if (!job.ok) return fail({ agentMs }, `Job build failed: ${job.error}`);
      // The run's own objects, which the controller writes before each Job: its ServiceAccount, NetworkPolicy and
      // input ConfigMap (the prompt).
      const stationName = station.value.metadata.name;
      for (const [path, body] of [
        [serviceAccounts, buildRunServiceAccount(agent.value, stationName)],
        [networkPolicies, buildRunNetworkPolicy(runInput)],
        [configMaps, buildRunInput(runInput)],
      ] as const) {
        const posted = await o.http.call('POST', path, body);
        if (!posted.ok) return fail({ agentMs }, posted.error);
      }
      const jobBody = { ...job.value, spec: { ...job.value.spec, suspend: true } };
      const jobPosted = await o.http.call('POST', jobs, jobBody);
      const jobMs = o.now();
      if (!jobPosted.ok) return fail({ agentMs }, jobPosted.error);

      const name = written.output.metadata.name;
      const statusPath = `${agents}/${name}/status`;
      const startedAt = new Date(jobMs).toISOString();
      const running = await o.http.call(
        'PATCH',
        statusPath,
        {
          metadata: { resourceVersion: written.output.metadata.resourceVersion },
          status: {
            phase: 'Running',
            jobName: job.value.metadata.name,
            startedAt,
            observedGeneration: 1,
            conditions: [condition('Ready', 'False', 'Running', startedAt)],
          },
        },
        'application/merge-patch+json',
      );
      const runningMs = o.now();
      if (!running.ok) return fail({ agentMs, jobMs }, running.error);
      const afterRunning = v.safeParse(Written, running.body);
      if (!afterRunning.success) return fail({ agentMs, jobMs }, 'PATCH status: unexpected response');

      const completedAt = new Date(runningMs).toISOString();
      const done = await o.http.call(
        'PATCH',
        statusPath,
        {
          metadata: { resourceVersion: afterRunning.output.metadata.resourceVersion },
          status: {
            phase: 'Succeeded',
            completedAt,
            exitCode: 0,
            output: '',
            conditions: [
              condition('Ready', 'True', 'Succeeded', completedAt),
              condition('Succeeded', 'True', 'Succeeded', completedAt),
            ],
          },
        },
        'application/merge-patch+json',
      );
      const doneMs = o.now();
      if (!done.ok) return fail({ agentMs, jobMs, runningMs }, done.error);
      times.push({ startMs, agentMs, jobMs, runningMs, doneMs });
    },
    o.signal,
  );
  return times;
}
