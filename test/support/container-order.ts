// When a pod's containers ran, as a node reports it: the terminated state's start and finish times (whole seconds
// on a kubelet), and each log line's timestamp (`pods/log?timestamps=true`: nanoseconds from containerd on the
// real node, milliseconds on the test node). Tool-sidecar tests on both nodes check the same order with these.
import assert from 'node:assert/strict';
import type { Scenario } from './controller.ts';
import { pollUntil } from './poll.ts';
import type { ContainerStatus, Pod } from './schemas.ts';

/** One log line with its timestamp in nanoseconds since the epoch. */
export interface TimedLine {
  readonly ns: bigint;
  readonly text: string;
}

/** A container log read with `timestamps=true`: each line with its RFC 3339 timestamp as nanoseconds. */
export function timedLines(log: string): TimedLine[] {
  return log
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z (.*)$/.exec(l);
      assert.ok(m?.[1] !== undefined, `a timestamped log line: ${l}`);
      const seconds = BigInt(Date.parse(`${m[1]}Z`) / 1000);
      return { ns: seconds * 1_000_000_000n + BigInt((m[2] ?? '').padEnd(9, '0')), text: m[3] ?? '' };
    });
}

/** The first line matching `re`; fails the test when there is none. */
export function lineOf(lines: readonly TimedLine[], re: RegExp): TimedLine {
  const found = lines.find((l) => re.test(l.text));
  assert.ok(found, `a line matching ${re}: ${lines.map((l) => l.text).join(' | ')}`);
  return found;
}

/** The terminated state of a container status with its times in ms; fails the test when it has not ended. */
export function terminatedTimes(status: ContainerStatus | undefined, what: string) {
  const t = status?.state.terminated;
  assert.ok(t?.startedAt && t.finishedAt, `${what} terminated with times: ${JSON.stringify(status)}`);
  return { ...t, startedAt: Date.parse(t.startedAt), finishedAt: Date.parse(t.finishedAt) };
}

/**
 * Waits until the native sidecar `sidecar` of the Job's pod has terminated (a node stops it after the agent
 * container ends, and says so a moment later), then checks the order a kubelet gives: the sidecar exited 0 (its
 * SIGTERM), started no later and finished no earlier than the agent container (whole seconds), and its log shows
 * `listening` before the agent container's first line and `stopping` after its last. Returns the pod and both logs.
 */
export async function assertSidecarAroundAgent(
  s: Scenario,
  jobName: string,
  sidecar: string,
  lines: { readonly listening: RegExp; readonly stopping: RegExp },
): Promise<{ pod: Pod; sidecarLog: TimedLine[]; agentLog: TimedLine[] }> {
  const pod = await pollUntil(
    async (observe) => {
      const [p] = await s.jobPods(jobName);
      const st = p?.status.initContainerStatuses.find((c) => c.name === sidecar);
      observe(st);
      return st?.state.terminated !== undefined ? p : undefined;
    },
    { timeoutMs: 30_000, description: `sidecar ${sidecar} terminated in the pod status` },
  );
  const tool = terminatedTimes(
    pod.status.initContainerStatuses.find((c) => c.name === sidecar),
    'the sidecar',
  );
  const agent = terminatedTimes(
    pod.status.containerStatuses.find((c) => c.name === 'agent'),
    'the agent container',
  );
  assert.equal(tool.exitCode, 0, 'the sidecar exited on SIGTERM');
  assert.ok(tool.startedAt <= agent.startedAt, `sidecar started ${tool.startedAt}, agent ${agent.startedAt}`);
  assert.ok(
    tool.finishedAt >= agent.finishedAt,
    `sidecar ended ${tool.finishedAt}, agent ${agent.finishedAt}`,
  );
  const name = pod.metadata.name ?? '';
  const sidecarLog = timedLines(await s.client.logs(s.ns, name, { container: sidecar, timestamps: true }));
  const agentLog = timedLines(await s.client.logs(s.ns, name, { container: 'agent', timestamps: true }));
  const first = agentLog[0];
  const last = agentLog.at(-1);
  assert.ok(first && last, 'the agent container logged');
  assert.ok(
    lineOf(sidecarLog, lines.listening).ns < first.ns,
    'the sidecar listened before the agent started',
  );
  assert.ok(last.ns < lineOf(sidecarLog, lines.stopping).ns, 'the sidecar was stopped after the agent ended');
  return { pod, sidecarLog, agentLog };
}
