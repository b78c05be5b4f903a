// Instant pods (issue 15 §1, like kwok's stages): a pod annotated `testbed.agent-controller.dev/instant: "true"`
// runs no process. The test node reports each container running, then terminated after the pod's delay, with the
// exit code and log lines its annotations ask for (default: exit 0 and the supervisor's lifecycle lines). The
// benchmark uses it so its figures measure the controller and the API server, not two Node starts per pod.
import { agentFinished, agentStarted, encodeEvent } from '../../src/pod/shared/lifecycle.ts';

export const INSTANT_ANNOTATION = 'testbed.agent-controller.dev/instant';
/** Milliseconds each app container "runs" (default 0). */
export const INSTANT_DELAY_ANNOTATION = 'testbed.agent-controller.dev/delay-ms';
/** Exit code of the container named `agent` (default 0; other containers always exit 0). */
export const INSTANT_EXIT_ANNOTATION = 'testbed.agent-controller.dev/exit-code';
/** Log of the container named `agent`, lines separated by `\n` (default: the supervisor's lifecycle lines). */
export const INSTANT_LOG_ANNOTATION = 'testbed.agent-controller.dev/log';

/** What one container of an instant pod does. */
export interface InstantRun {
  readonly delayMs: number;
  readonly exitCode: number;
  /** Text written to the container's stdout log (ends with a newline when not empty). */
  readonly log: string;
  /** A sidecar: runs (started and ready) until the pod stops it, then exits 0; delay and exit code do not apply. */
  readonly untilStopped?: true;
}

const intOr = (value: string | undefined, fallback: number, min: number, max: number): number => {
  if (value === undefined || !/^\d+$/.test(value.trim())) return fallback;
  return Math.min(max, Math.max(min, Number(value.trim())));
};

/**
 * The instant plan of one container, or undefined when the pod runs its processes as usual. Init containers and
 * app containers other than `agent` exit 0 at once with no output; sidecars (init containers with restartPolicy
 * Always) run silently until the pod stops them.
 */
export function instantRun(
  annotations: Readonly<Record<string, string>> | undefined,
  kind: 'init' | 'sidecar' | 'app',
  container: string,
): InstantRun | undefined {
  if (annotations?.[INSTANT_ANNOTATION] !== 'true') return undefined;
  if (kind === 'sidecar') return { delayMs: 0, exitCode: 0, log: '', untilStopped: true };
  if (kind === 'init' || container !== 'agent') return { delayMs: 0, exitCode: 0, log: '' };
  const exitCode = intOr(annotations[INSTANT_EXIT_ANNOTATION], 0, 0, 255);
  const custom = annotations[INSTANT_LOG_ANNOTATION];
  const lines =
    custom !== undefined
      ? custom.split('\n')
      : [encodeEvent(agentStarted()), encodeEvent(agentFinished(exitCode))];
  const log = lines.filter((l) => l !== '').join('\n');
  return {
    delayMs: intOr(annotations[INSTANT_DELAY_ANNOTATION], 0, 0, 3_600_000),
    exitCode,
    log: log === '' ? '' : `${log}\n`,
  };
}
