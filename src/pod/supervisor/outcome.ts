/**
 * The run outcome as a pure state machine (docs/design/reference-behaviour.md#supervisor-flow step 9, with our
 * absolute-deadline fix). The shell feeds
 * it events — the child's exit, the first terminal event, clock ticks — and carries out the actions it returns.
 * Time only enters through the `now` of each event.
 */

/** Exit code of a run cut short by the run deadline. */
export const DEADLINE_EXIT_CODE = 124;

export interface OutcomeConfig {
  /** Grace after a terminal event before the agent is forced down, and after SIGTERM before SIGKILL (ms, > 0). */
  readonly graceMs: number;
  /** Absolute run deadline (epoch ms), if any. */
  readonly deadlineAt?: number;
}

/** After SIGTERM on the deadline path, wait at most this long before SIGKILL: the pod's own kill is ≈ 10 s away. */
export const DEADLINE_TERM_WAIT_MAX_MS = 3000;
/** After SIGKILL, wait at most this long for the exit to be observed before giving up on it. */
export const KILL_WAIT_MAX_MS = 2000;

export type Phase =
  /** Waiting for the child to exit, a terminal event or the deadline. */
  | { readonly tag: 'running' }
  /** A terminal event was seen; waiting up to `until` for a natural exit. */
  | { readonly tag: 'grace'; readonly until: number; readonly code: number }
  /** SIGTERM sent; SIGKILL at `killAt`; the run's code is already decided. */
  | { readonly tag: 'terminating'; readonly killAt: number; readonly code: number }
  /** SIGKILL sent; stop waiting for the exit at `giveUpAt`. */
  | { readonly tag: 'killing'; readonly giveUpAt: number; readonly code: number }
  /** The run is over with `code`. */
  | { readonly tag: 'done'; readonly code: number };

export interface OutcomeState {
  readonly config: OutcomeConfig;
  readonly phase: Phase;
}

export type OutcomeEvent =
  | { readonly type: 'tick'; readonly now: number }
  /** The first terminal event of the run (later ones are ignored by the caller or here). */
  | { readonly type: 'terminal'; readonly ok: boolean; readonly now: number }
  /** The child was reaped: an exit code, or the signal that killed it. */
  | {
      readonly type: 'exit';
      readonly code: number | null;
      readonly signal: string | null;
      readonly now: number;
    };

export type OutcomeAction =
  | { readonly type: 'signal'; readonly signal: 'SIGTERM' | 'SIGKILL' }
  | { readonly type: 'log'; readonly level: 'info' | 'warn' | 'error'; readonly msg: string };

export interface Step {
  readonly state: OutcomeState;
  readonly actions: readonly OutcomeAction[];
}

/** The starting state. */
export function initialOutcome(config: OutcomeConfig): OutcomeState {
  return { config, phase: { tag: 'running' } };
}

const SIGNAL_NUMBERS: Readonly<Record<string, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
  SIGXCPU: 24,
  SIGXFSZ: 25,
};

/**
 * The exit code a shell would report for a reaped child: its own code, or 128 + the signal number when a signal
 * killed it (unknown signals count as 128 + 15). Always in 0..255 and never 0 for a signal death.
 */
export function exitCodeOf(code: number | null, signal: string | null): number {
  if (typeof code === 'number') return code & 0xff;
  if (signal !== null) return 128 + (SIGNAL_NUMBERS[signal] ?? 15);
  return 1;
}

/** When the shell must tick next (epoch ms), or undefined when only an exit or a terminal event can move it. */
export function nextWakeAt(state: OutcomeState): number | undefined {
  const { phase, config } = state;
  switch (phase.tag) {
    case 'running':
      return config.deadlineAt;
    case 'grace':
      return config.deadlineAt === undefined ? phase.until : Math.min(phase.until, config.deadlineAt);
    case 'terminating':
      return phase.killAt;
    case 'killing':
      return phase.giveUpAt;
    case 'done':
      return undefined;
  }
}

const DEADLINE_MSG = '[supervisor] run deadline expired with no terminal event; forcing the agent down';

/** Advances the state machine by one event. Pure and total: every (phase, event) pair has an answer. */
export function step(state: OutcomeState, event: OutcomeEvent): Step {
  const { phase, config } = state;
  const to = (next: Phase, ...actions: OutcomeAction[]): Step => ({
    state: { config, phase: next },
    actions,
  });
  const stay = (): Step => ({ state, actions: [] });
  const termWait = (deadline: boolean): number =>
    deadline ? Math.min(config.graceMs, DEADLINE_TERM_WAIT_MAX_MS) : config.graceMs;
  const killWait = Math.min(config.graceMs, KILL_WAIT_MAX_MS);

  if (phase.tag === 'done') return stay();

  if (event.type === 'exit') {
    // A natural exit keeps the child's own code; once we force the agent down, the decided code stands.
    if (phase.tag === 'running' || phase.tag === 'grace')
      return to({ tag: 'done', code: exitCodeOf(event.code, event.signal) });
    return to({ tag: 'done', code: phase.code });
  }

  if (event.type === 'terminal') {
    if (phase.tag !== 'running') return stay();
    const code = event.ok ? 0 : 1;
    if (config.deadlineAt !== undefined && event.now >= config.deadlineAt) {
      return to(
        { tag: 'terminating', killAt: event.now + termWait(true), code },
        {
          type: 'log',
          level: 'warn',
          msg: '[supervisor] terminal event at the run deadline; forcing the agent down',
        },
        { type: 'signal', signal: 'SIGTERM' },
      );
    }
    return to({ tag: 'grace', until: event.now + config.graceMs, code });
  }

  // tick
  const now = event.now;
  switch (phase.tag) {
    case 'running':
      if (config.deadlineAt !== undefined && now >= config.deadlineAt) {
        return to(
          { tag: 'terminating', killAt: now + termWait(true), code: DEADLINE_EXIT_CODE },
          { type: 'log', level: 'error', msg: DEADLINE_MSG },
          { type: 'signal', signal: 'SIGTERM' },
        );
      }
      return stay();
    case 'grace': {
      const atDeadline = config.deadlineAt !== undefined && now >= config.deadlineAt;
      if (now >= phase.until || atDeadline) {
        return to(
          { tag: 'terminating', killAt: now + termWait(atDeadline), code: phase.code },
          {
            type: 'log',
            level: 'info',
            msg: '[supervisor] agent still running after its terminal event; forcing it down',
          },
          { type: 'signal', signal: 'SIGTERM' },
        );
      }
      return stay();
    }
    case 'terminating':
      if (now >= phase.killAt) {
        return to(
          { tag: 'killing', giveUpAt: now + killWait, code: phase.code },
          { type: 'log', level: 'warn', msg: '[supervisor] agent ignored SIGTERM; sending SIGKILL' },
          { type: 'signal', signal: 'SIGKILL' },
        );
      }
      return stay();
    case 'killing':
      if (now >= phase.giveUpAt) {
        return to(
          { tag: 'done', code: phase.code },
          {
            type: 'log',
            level: 'error',
            msg: '[supervisor] agent not reaped after SIGKILL; giving up on it',
          },
        );
      }
      return stay();
  }
}
