import { API_VERSION } from '../src/api/index.ts';

/** Name of the Station and of the AgentDefinition every benchmark Agent runs on. */
export const BENCH_STATION = 'bench';
/** Label on everything the benchmark creates, so leftovers are easy to find. */
export const BENCH_LABEL = 'agent-controller.bench/run';

/** The name of the i-th Agent (0-based): `bench-00000`, `bench-00001`, … (sorts in creation order). */
export function agentName(i: number): string {
  return `bench-${String(i).padStart(5, '0')}`;
}

/** A trivial `exec` recipe: the supervisor runs `true`, so a run costs only the pod's own processes. */
export function benchDefinition(namespace: string, runId: string): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: 'AgentDefinition',
    metadata: { name: BENCH_STATION, namespace, labels: { [BENCH_LABEL]: runId } },
    spec: {
      description: 'Benchmark recipe: exits 0 at once',
      model: 'exec',
      prompt: 'bench {i}',
      tool_config: { command: ['true'] },
    },
  };
}

/**
 * The benchmark Station: unlimited concurrency (`maxConcurrentRuns: 0`), the default history limits (3 + 3: the
 * controller prunes older terminal Agents, which also bounds the test node's disk, since each run pod holds a copy
 * of the runtime until its Job is garbage-collected), and an `agent` container whose image the test node ignores.
 */
export function benchStation(
  namespace: string,
  runId: string,
  pods: 'real' | 'instant' = 'real',
): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: 'Station',
    metadata: { name: BENCH_STATION, namespace, labels: { [BENCH_LABEL]: runId } },
    spec: {
      agentDefRef: BENCH_STATION,
      deadlineMinutes: 30,
      maxConcurrentRuns: 0,
      concurrencyPolicy: 'Allow',
      template: {
        // Instant pods (test/node-agent/instant.ts): the test node runs no process and reports exit 0 at once.
        ...(pods === 'instant'
          ? { metadata: { annotations: { 'testbed.agent-controller.dev/instant': 'true' } } }
          : {}),
        spec: { containers: [{ name: 'agent', image: 'debian:bookworm-slim' }] },
      },
    },
  };
}

/** The i-th benchmark Agent. */
export function benchAgent(namespace: string, runId: string, i: number): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: 'Agent',
    metadata: { name: agentName(i), namespace, labels: { [BENCH_LABEL]: runId } },
    spec: { stationRef: BENCH_STATION, taskId: `bench-${runId}-${i}`, parameters: { i: String(i) } },
  };
}
