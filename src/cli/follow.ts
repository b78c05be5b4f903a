// Waiting for a run (`run --wait`, `run --follow`, `logs -f`): one watch of the namespace's Agents (for the run's
// own changes and the queue in front of it), a status line on stderr (rewritten in place on a terminal, a line per
// change elsewhere), the agent container's log on stdout when following, and the exit code at the end: the run's
// own, 124 when --timeout passes, 130 on Ctrl-C (the run goes on).
import type { Agent, Station } from '../api/index.ts';
import { AgentReadSchema } from './api.ts';
import type { CommandIo } from './command.ts';
import type { CliDeps, Connection } from './context.ts';
import { finishRender, INITIAL_RENDER_STATE, renderLine, renderText } from './event-lines.ts';
import { CliError, EXIT } from './exit.ts';
import { AGENTS_KIND } from './kinds.ts';
import { type StreamEnd, streamRunLog } from './log-stream.ts';
import { exitCodeOf, queueInfo, type RunView, runView, sameView, statusLine } from './status.ts';
import type { Paint } from './style.ts';
import { clockDuration } from './table.ts';
import { startWatch } from './watch.ts';

export interface LiveStatusOptions {
  readonly write: (text: string) => void;
  readonly tty: boolean;
  readonly paint: Paint;
  readonly columns: () => number | undefined;
  /** Milliseconds the run has been waited for. */
  readonly elapsed: () => number;
}

/** The status line: rewritten in place on a terminal, one plain line per change anywhere else. */
export class LiveStatus {
  readonly #o: LiveStatusOptions;
  #view: RunView | undefined;
  #printed: RunView | undefined;
  #shown = false;
  #suspended = false;

  constructor(o: LiveStatusOptions) {
    this.#o = o;
  }

  /** A new view of the run. */
  update(view: RunView): void {
    this.#view = view;
    if (this.#o.tty) this.#draw();
    else if (!sameView(this.#printed, view)) {
      this.#o.write(`${statusLine(view, this.#o.elapsed(), this.#o.paint)}\n`);
      this.#printed = view;
    }
  }

  /** Redraws the line (the elapsed time moves on a terminal). */
  tick(): void {
    if (this.#o.tty) this.#draw();
  }

  /** Takes the line off the terminal while something else prints (the log). */
  suspend(): void {
    this.clear();
    this.#suspended = true;
  }

  resume(): void {
    this.#suspended = false;
    this.tick();
  }

  /** The last word: the final view, on a line of its own. */
  finish(view: RunView): void {
    this.clear();
    this.#suspended = true;
    if (this.#o.tty || !sameView(this.#printed, view)) {
      this.#o.write(`${statusLine(view, this.#o.elapsed(), this.#o.paint)}\n`);
      this.#printed = view;
    }
  }

  clear(): void {
    if (this.#shown) this.#o.write('\r\x1b[2K');
    this.#shown = false;
  }

  #draw(): void {
    if (this.#suspended || this.#view === undefined) return;
    this.#o.write(`\r\x1b[2K${statusLine(this.#view, this.#o.elapsed(), this.#o.paint, this.#o.columns())}`);
    this.#shown = true;
  }
}

export interface AwaitOptions {
  readonly io: CommandIo;
  readonly deps: CliDeps;
  readonly conn: Connection;
  readonly program: string;
  readonly agent: Agent;
  readonly station: Station | undefined;
  /** Clock time the wait counts from (the status line's elapsed time). */
  readonly startedAt: number;
  readonly timeoutMs: number | undefined;
  /** Show the status line (run); `logs -f` prints only the log. */
  readonly statusLine: boolean;
  /** Stream the agent container's log: readable text, or the raw lines. */
  readonly follow?: { readonly raw: boolean } | undefined;
  /** Stop when the log ends rather than at the terminal phase (`logs -f`). */
  readonly untilLogEnds?: boolean | undefined;
  readonly paintOut: Paint;
  readonly paintErr: Paint;
}

/** How long a finished run's log may still be read before it is given up. */
export const LOG_GRACE_MS = 10_000;

/**
 * Waits until the run ends and resolves with its exit code. Throws a CliError when the Agent is deleted (1), the
 * watch is refused (3) or --timeout passes (124). Ctrl-C resolves 130 with a note that the run goes on.
 */
export async function awaitRun(o: AwaitOptions): Promise<number> {
  const { io, deps, conn } = o;
  const ns = o.agent.metadata.namespace;
  const name = o.agent.metadata.name;
  const uid = o.agent.metadata.uid;
  const elapsed = () => deps.clock.now() - o.startedAt;
  // A terminal that cannot move the cursor (TERM=dumb) gets a line per change, as a pipe does.
  const inPlace = deps.stderrTty && io.env.TERM !== 'dumb';
  const live = new LiveStatus({
    write: o.statusLine ? io.stderr : () => {},
    tty: inPlace,
    paint: o.paintErr,
    columns: () => deps.columns(),
    elapsed,
  });
  let current = o.agent;
  let outcome: { code: number } | { error: CliError } | undefined;
  let wake: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const settle = (r: { code: number } | { error: CliError }): void => {
    if (outcome !== undefined) return;
    outcome = r;
    wake();
  };

  // The log, when following.
  const log = new LogFollower(o, {
    suspend: () => live.suspend(),
    failed: (message) => {
      // No live log (the pods or the log may not be read, or cannot be now): wait for the run as --wait does;
      // its recorded output is shown at the end.
      live.clear();
      io.stderr(
        `warning: no live log: ${message}; waiting for the run to end (its recorded output is shown then)\n`,
      );
      live.resume();
      check();
    },
    ended: (end) => {
      if (
        o.untilLogEnds === true &&
        end.kind !== 'aborted' &&
        !(end.kind === 'gone' && log.printedLines === 0)
      )
        settle({ code: EXIT.ok });
      else {
        live.resume();
        check();
      }
    },
  });

  const station = o.station;
  const check = (): void => {
    if (outcome !== undefined) return;
    const terminal = current.status.phase === 'Succeeded' || current.status.phase === 'Failed';
    // A server never ends: waiting for it means waiting until it serves (Ready).
    if (
      current.status.phase === 'Serving' &&
      current.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true
    ) {
      settle({ code: EXIT.ok });
      return;
    }
    const jobName = current.status.jobName;
    if (o.follow !== undefined && !log.started && jobName !== undefined && jobName !== '') log.start(jobName);
    if (!terminal) return;
    if (o.follow !== undefined && log.started && log.end === undefined) {
      log.runEnded();
      return;
    }
    if (o.follow !== undefined && log.printedLines === 0 && (current.status.output ?? '') !== '') {
      // No pod to read (a batch run, a run that failed before its pod, a pod already collected): its output.
      live.clear();
      io.stdout(
        o.follow.raw
          ? `${current.status.output!.replace(/\n$/, '')}\n`
          : renderText(current.status.output!, o.paintOut),
      );
    }
    settle({ code: exitCodeOf(current) });
  };

  const watch = startWatch<Agent>({
    transport: conn.transport,
    resource: AGENTS_KIND.resource,
    namespace: ns,
    schema: AgentReadSchema,
    clock: deps.clock,
    random: deps.random,
    subject: `agents in namespace "${ns}"`,
    onChange: (c) => {
      if (c.object.metadata.uid === uid) {
        if (c.type === 'deleted') {
          settle({ error: new CliError(`agent "${name}" was deleted while waiting for it`) });
          return;
        }
        current = c.object;
      }
      if (outcome === undefined)
        live.update(runView(current, queueInfo(current, watch.store.list(), station)));
      check();
    },
    onFatal: (error) => settle({ error }),
  });
  void watch.ready.then(() => {
    if (watch.store.get(`${ns}/${name}`) === undefined)
      settle({ error: new CliError(`agent "${name}" was deleted while waiting for it`) });
  });

  const interrupt = deps.interrupt();
  const onInterrupt = (): void => settle({ code: EXIT.interrupted });
  interrupt.signal.addEventListener('abort', onInterrupt, { once: true });
  const cancelTimeout =
    o.timeoutMs === undefined
      ? () => {}
      : deps.clock.setTimer(o.timeoutMs, () =>
          settle({
            error: new CliError(
              `timed out after ${clockDuration(o.timeoutMs ?? 0)} waiting for agent "${name}" (still ${current.status.phase})`,
              EXIT.timedOut,
            ),
          }),
        );
  let cancelTick = () => {};
  const tick = (): void => {
    live.tick();
    cancelTick = deps.clock.setTimer(1000, tick);
  };
  if (o.statusLine && inPlace) cancelTick = deps.clock.setTimer(1000, tick);
  // The first view before the watch answers, so a terminal shows something at once.
  live.update(runView(current, undefined));

  try {
    await done;
  } finally {
    cancelTick();
    cancelTimeout();
    interrupt.signal.removeEventListener('abort', onInterrupt);
    interrupt.dispose();
    await Promise.all([watch.stop(), log.stop()]);
  }
  return finishAwait(o, live, current, outcome as { code: number } | { error: CliError } | undefined);
}

/** What the command says and returns once the wait is over: the error, the Ctrl-C note, or the final status line. */
function finishAwait(
  o: AwaitOptions,
  live: LiveStatus,
  current: Agent,
  result: { code: number } | { error: CliError } | undefined,
): number {
  const name = o.agent.metadata.name;
  if (result === undefined) return EXIT.failed;
  if ('error' in result) {
    live.clear();
    throw result.error;
  }
  if (result.code === EXIT.interrupted) {
    live.clear();
    o.io.stderr(
      `interrupted: agent "${name}" goes on; see it with '${o.program} get agent ${name}', stop it with '${o.program} delete agent ${name}'\n`,
    );
    return result.code;
  }
  if (o.statusLine) live.finish(runView(current, undefined));
  return result.code;
}

/** What the log follower tells `awaitRun`. */
interface LogEvents {
  /** The run's pod was found: its log follows, the status line steps aside. */
  readonly suspend: () => void;
  /** No live log can be read; the message says why. */
  readonly failed: (message: string) => void;
  /** The log ended (not failed). */
  readonly ended: (end: StreamEnd) => void;
}

/**
 * The run's log while following (`--follow`, `logs -f`): started once the Job is known, printed raw or rendered,
 * given up `LOG_GRACE_MS` after the run has ended (a finished container's stream closes by itself, but not always).
 */
class LogFollower {
  #stop = new AbortController();
  /** Fired when the run has ended: the pod lookup finishes its first list, a started pod's log is read once. */
  #runOver = new AbortController();
  #state = INITIAL_RENDER_STATE;
  #podFound = false;
  #graceTimer: (() => void) | undefined;
  #done: Promise<void> = Promise.resolve();
  started = false;
  end: StreamEnd | undefined;
  printedLines = 0;

  constructor(
    private readonly o: AwaitOptions,
    private readonly events: LogEvents,
  ) {}

  #print(line: string): void {
    this.printedLines++;
    if (this.o.follow?.raw === true) {
      this.o.io.stdout(`${line}\n`);
      return;
    }
    const r = renderLine(line, this.#state, this.o.paintOut);
    this.#state = r.state;
    if (r.text !== '') this.o.io.stdout(r.text);
  }

  #graceAfterEnd(): void {
    this.#graceTimer ??= this.o.deps.clock.setTimer(LOG_GRACE_MS, () => this.#stop.abort());
  }

  start(jobName: string): void {
    const { o } = this;
    this.started = true;
    this.#done = streamRunLog({
      transport: o.conn.transport,
      namespace: o.agent.metadata.namespace,
      jobName,
      clock: o.deps.clock,
      random: o.deps.random,
      signal: this.#stop.signal,
      runOver: this.#runOver.signal,
      onPod: () => {
        this.#podFound = true;
        this.events.suspend();
        if (this.#runOver.signal.aborted) this.#graceAfterEnd();
      },
      onLine: (line) => this.#print(line),
    }).then((end) => {
      this.end = end;
      if (o.follow?.raw !== true) o.io.stdout(finishRender(this.#state));
      this.#state = INITIAL_RENDER_STATE;
      if (end.kind === 'failed') this.events.failed(end.error.message);
      else this.events.ended(end);
    });
  }

  /**
   * The run ended while its log is still open: the stream closes by itself; do not wait for it for ever. The pod
   * lookup finishes its first list (a started pod's log is read once; without one, the recorded output is shown).
   */
  runEnded(): void {
    this.#runOver.abort();
    if (this.#podFound) this.#graceAfterEnd();
  }

  /** Stops following and resolves once the stream has closed. */
  stop(): Promise<void> {
    this.#graceTimer?.();
    this.#stop.abort();
    return this.#done;
  }
}
