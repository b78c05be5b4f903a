/** Which part of the run pod a lifecycle event is about. */
export type LifecyclePhase = 'init' | 'agent';
export type LifecycleStatus = 'started' | 'installing' | 'running' | 'succeeded' | 'failed';

/**
 * `{"kind":"lifecycle","phase","status","tool"?,"reason"?,"exitCode"?}`
 * (docs/design/reference-behaviour.md#lifecycle-events). Optional fields are
 * absent when empty; `exitCode: 0` is kept.
 */
export interface LifecycleEvent {
  readonly kind: 'lifecycle';
  readonly phase: LifecyclePhase;
  readonly status: LifecycleStatus;
  readonly tool?: string;
  readonly reason?: string;
  readonly exitCode?: number;
}

export interface LifecycleDetails {
  readonly tool?: string | undefined;
  readonly reason?: string | undefined;
  readonly exitCode?: number | undefined;
}

/**
 * Builds a lifecycle event with its keys in wire order (kind, phase, status, tool, reason, exitCode); empty
 * strings and undefined are omitted, numeric exit codes (0 included) kept.
 */
export function lifecycleEvent(
  phase: LifecyclePhase,
  status: LifecycleStatus,
  details: LifecycleDetails = {},
): LifecycleEvent {
  const event: { -readonly [K in keyof LifecycleEvent]: LifecycleEvent[K] } = {
    kind: 'lifecycle',
    phase,
    status,
  };
  if (details.tool) event.tool = details.tool;
  if (details.reason) event.reason = details.reason;
  if (typeof details.exitCode === 'number') event.exitCode = details.exitCode;
  return event;
}

/** `agent/started`: the supervisor spawned the agent CLI. */
export const agentStarted = (): LifecycleEvent => lifecycleEvent('agent', 'started');

/** `agent/failed` with a reason and no exit code (`not-found`, `spawn`). */
export const agentFailedBeforeStart = (reason: string): LifecycleEvent =>
  lifecycleEvent('agent', 'failed', { reason });

/** The terminal agent event: `succeeded` iff `exitCode` is 0, `failed` otherwise; always carries `exitCode`. */
export const agentFinished = (exitCode: number): LifecycleEvent =>
  lifecycleEvent('agent', exitCode === 0 ? 'succeeded' : 'failed', { exitCode });

/** The bare JSON line (no trailing newline) for any pod event object. */
export const encodeEvent = (event: object): string => JSON.stringify(event);
