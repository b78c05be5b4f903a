import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { createLogger, type Logger } from '../../shared/log.ts';
import {
  deliverPrompt,
  GEMINI_SETTINGS_FILE,
  geminiSettings,
  type PromptDelivery,
  type ResultAccumulator,
  resultAccumulator,
  vendorLaunch,
} from '../../vendors/cli/index.ts';
import {
  agentFailedBeforeStart,
  agentFinished,
  agentStarted,
  createEventSink,
  type Env,
  type EventSink,
  type ParsedLine,
  parseLine,
  withRequestId,
} from '../shared/index.ts';
import {
  conversationForPin,
  effectiveDeadline,
  parseSupervisorConfig,
  type SupervisorConfig,
} from './config.ts';
import { saveConversation } from './conversation.ts';
import { LineSplitter, MAX_LINE_BYTES } from './line-splitter.ts';
import { initialOutcome, nextWakeAt, type OutcomeEvent, type OutcomeState, step } from './outcome.ts';
import { BareOutput, type WritableLike } from './output.ts';
import { descendantGroups, readProcesses } from './process-tree.ts';
import { writeRunReport } from './report.ts';
import { selected } from './select.ts';
import { terminalOf } from './terminal.ts';
import { type SupervisorTracer, supervisorTracer, tracedResults } from './tracing.ts';
import { collectFileEvents } from './watch.ts';

/** Signals the supervisor handles itself. */
export type HandledSignal = 'SIGTERM' | 'SIGINT' | 'SIGPIPE';

/** The process-level capabilities the supervisor runs on; `cmd/supervisor.ts` binds them to `process`. */
export interface SupervisorIo {
  /** The agent argv (everything after `--`), non-empty. */
  readonly argv: readonly string[];
  readonly env: Env;
  readonly stdout: WritableLike;
  readonly stderr: WritableLike;
  /** Wall clock, epoch ms (the absolute deadline is wall-clock time). */
  readonly now: () => number;
  /** Installs a handler for `signal` (replacing the default action); returns its removal. */
  readonly onSignal: (signal: HandledSignal, handler: () => void) => () => void;
}

/**
 * How long to wait for the agent's pipes to reach EOF after it exits
 * (docs/design/reference-behaviour.md#supervisor-flow step 10).
 */
export const PIPE_DRAIN_MS = 2000;
/** After the run deadline, everything must be over this much later (the kubelet kills the pod ≈ 10 s after it). */
export const HARD_STOP_AFTER_DEADLINE_MS = 8000;
/** The smallest budget any closing step gets, even when the hard stop has passed. */
export const MIN_STEP_BUDGET_MS = 250;
/** Upper bound for the conversation upload. */
export const CONVERSATION_TIMEOUT_MS = 30000;
/** Longest single timer; longer waits are re-armed (setTimeout overflows past 2^31 − 1 ms). */
const MAX_TIMER_MS = 3_600_000;

/** What every phase of one supervised run shares. */
export interface RunContext {
  readonly io: SupervisorIo;
  readonly config: SupervisorConfig;
  readonly log: Logger;
  readonly out: BareOutput;
  readonly errOut: BareOutput;
  readonly sinks: EventSink;
  /** Effective run deadline (epoch ms), if any. */
  readonly deadlineAt: number | undefined;
  /** Bounds `want` ms so that closing steps end near the hard stop after a deadline (never below the minimum). */
  readonly budget: (want: number) => number;
  /** Writes a pod event (lifecycle, file) bare to stdout and queues it, essential, for the sinks. */
  readonly emit: (event: object) => void;
  /** The run's spans (issue 10 §5); quiet without `TRACEPARENT` and an OTLP endpoint. */
  readonly tracer: SupervisorTracer;
}

/**
 * Runs the agent CLI under supervision (docs/design/reference-behaviour.md#supervisor-flow): streams its stdout as
 * bare lines to stdout and, when
 * selected, wrapped to the sinks; tags its stderr `[agent] `; forwards SIGTERM/SIGINT to its process group; ends the
 * run on exit, after a terminal event plus grace, or at the run deadline (124); then writes the run report (what its
 * stdout lines said: answer, usage, cost) to the termination message file, emits file events, saves the
 * conversation and emits the terminal lifecycle event. Resolves to the exit code; never rejects for agent, sink or
 * environment problems. The caller must hard-exit with the code (grandchildren may still hold the pipes).
 */
export async function runSupervisor(io: SupervisorIo): Promise<number> {
  const ctx = prepare(io);
  const signals = installSignalForwarding(io);
  try {
    const command = await promptedCommand(ctx, ctx.io.argv);
    const [file, ...args] = command?.argv ?? [];
    const started =
      command === undefined
        ? ({ ok: false, reason: 'input' } as const)
        : await launch(ctx, file ?? '', args, command.stdin);
    if (!started.ok) {
      writeRunReport(ctx.config.terminationMessagePath, {}, ctx.log);
      ctx.emit(agentFailedBeforeStart(started.reason));
      await ctx.sinks.close(ctx.budget(ctx.config.flushMs));
      return 1;
    }
    const { child, exited } = started;
    ctx.emit(agentStarted());
    signals.attach(child, exited);
    const results = resultAccumulator(ctx.config.vendor);
    const cli = ctx.tracer.cli(ctx.config.vendor, cliAttributes(ctx));
    let failure: string | undefined;
    const code = await superviseChild(ctx, child, exited, tracedResults(results, cli), undefined, {
      onFailure: (message) => {
        failure = message;
      },
    });
    // First thing after the agent is gone (the uploads below may be cut short by the pod's end).
    writeRunReport(
      ctx.config.terminationMessagePath,
      { ...results.result(), ...(failure !== undefined ? { error: failure } : {}) },
      ctx.log,
    );
    cli.end(code);
    await epilogue(ctx);
    ctx.emit(agentFinished(code));
    await Promise.all([ctx.sinks.close(ctx.budget(ctx.config.flushMs)), ctx.tracer.flush(ctx.budget(3000))]);
    return code;
  } finally {
    signals.remove();
  }
}

/** Reads the configuration, reports its problems, and opens the outputs and sinks. */
export function prepare(io: SupervisorIo): RunContext {
  const startedAt = io.now();
  const errOut = new BareOutput(io.stderr, () => undefined);
  const log = createLogger('info', (line) => errOut.write(line));
  const { config, warnings } = parseSupervisorConfig(io.env);
  for (const w of warnings) log.warn(w);
  const out = new BareOutput(io.stdout, (error) =>
    log.warn('[supervisor] stdout is closed; bare output lines are dropped from now on', {
      error: describe(error),
    }),
  );
  const sinks = createEventSink({
    sinks: config.sinks,
    retry: config.retry,
    source: config.source,
    env: io.env,
    log,
    tag: '[supervisor]',
  });
  const deadlineAt = effectiveDeadline(startedAt, config);
  const hardStopAt = deadlineAt === undefined ? undefined : deadlineAt + HARD_STOP_AFTER_DEADLINE_MS;
  return {
    io,
    config,
    log,
    out,
    errOut,
    sinks,
    deadlineAt,
    budget: (want) =>
      hardStopAt === undefined ? want : Math.max(MIN_STEP_BUDGET_MS, Math.min(want, hardStopAt - io.now())),
    emit: (event) => {
      out.line(JSON.stringify(event));
      sinks.deliverEvent(event);
    },
    tracer: supervisorTracer(io.env, log),
  };
}

/** The attributes of a CLI span: the run it belongs to. */
export function cliAttributes(ctx: RunContext): Record<string, string> {
  const { source, model } = ctx.config;
  const attributes: Record<string, string> = { 'agent.model': model };
  const ids: [string, string | undefined][] = [
    ['agent.name', source.agent],
    ['agent.station', source.station],
    ['agent.namespace', source.namespace],
  ];
  for (const [k, val] of ids) if (val !== undefined && val !== '') attributes[k] = val;
  return attributes;
}

/**
 * Installs SIGTERM/SIGINT forwarding and ignores SIGPIPE before the agent exists, so a signal arriving during the
 * spawn is held and forwarded once the agent runs; signals after the agent exited are not forwarded.
 */
function installSignalForwarding(io: SupervisorIo) {
  let target: ChildProcess | undefined;
  let gone = false;
  const pending: Array<'SIGTERM' | 'SIGINT'> = [];
  const forward = (signal: 'SIGTERM' | 'SIGINT'): void => {
    if (target === undefined) pending.push(signal);
    else if (!gone) signalGroup(target, signal);
  };
  const removers = [
    io.onSignal('SIGTERM', () => forward('SIGTERM')),
    io.onSignal('SIGINT', () => forward('SIGINT')),
    io.onSignal('SIGPIPE', () => undefined),
  ];
  return {
    attach(child: ChildProcess, exited: Promise<ExitInfo>): void {
      target = child;
      void exited.then(() => {
        gone = true;
      });
      for (const signal of pending.splice(0)) signalGroup(child, signal);
    },
    remove(): void {
      for (const remove of removers) remove();
    },
  };
}

export type Launch =
  | { readonly ok: true; readonly child: ChildProcess; readonly exited: Promise<ExitInfo> }
  | { readonly ok: false; readonly reason: 'not-found' | 'spawn' | 'input' };

/**
 * The CLI's argv and stdin (issue 10 §1): without `AGENT_PROMPT_FILE`, `argv` as it is (the prompt is its last
 * element, as in the reference); with it, `argv` lacks the prompt, which is read from that file (the run's input
 * ConfigMap) and put back as the CLI takes it (see `deliverPrompt`). Undefined, with the reason logged, when the file
 * cannot be read or the prompt cannot be delivered.
 */
export async function promptedCommand(
  ctx: RunContext,
  argv: readonly string[],
): Promise<PromptDelivery | undefined> {
  const file = ctx.io.env.AGENT_PROMPT_FILE ?? '';
  if (file === '') return { argv };
  const systemFile = ctx.io.env.AGENT_SYSTEM_PROMPT_FILE ?? '';
  let prompt: string;
  let system: string | undefined;
  try {
    prompt = await readFile(file, 'utf8');
    system = systemFile === '' ? undefined : await readFile(systemFile, 'utf8');
  } catch (error) {
    ctx.log.error('[supervisor] cannot read the prompt', { file, error: describe(error) });
    return undefined;
  }
  const delivery = deliverPrompt(ctx.config.vendor, argv, prompt, system);
  if (!delivery.ok) {
    ctx.log.error(`[supervisor] cannot hand the prompt to the agent: ${delivery.error}`, { file });
    return undefined;
  }
  return delivery.value;
}

/**
 * Finds and spawns the agent (docs/design/reference-behaviour.md#supervisor-flow steps 4–5) with `stdin` written to
 * its standard input (closed, i.e. /dev/null, when undefined), logging the reference messages on failure. Every
 * execution mode starts its CLI here, so what the vendor CLI needs from the pod's environment is added here too
 * (`vendorLaunch`: Codex's model provider from `OPENAI_BASE_URL`, OpenCode's env;
 * docs/reference/vendor-clis.md#codex-01710, docs/reference/vendor-clis.md#opencode-11833).
 */
export async function launch(
  ctx: RunContext,
  file: string,
  args: readonly string[],
  stdin?: string,
): Promise<Launch> {
  if (!(await locate(file, ctx.io.env))) {
    ctx.log.error(`[supervisor] agent not found: ${file}`);
    return { ok: false, reason: 'not-found' };
  }
  if (ctx.config.vendor === 'gemini') await provideGeminiSettings(ctx);
  const started = vendorLaunch(ctx.config.vendor, [file, ...args], ctx.io.env, ctx.config.cliSettings);
  const spawned = await spawnAgent(file, started.argv.slice(1), started.env, stdin);
  if (!spawned.ok) {
    ctx.log.error(`[supervisor] failed to start the agent: ${spawned.error}`, { agent: file });
    return { ok: false, reason: 'spawn' };
  }
  return spawned;
}

/**
 * Merges what a headless Gemini CLI needs into `$HOME/.gemini/settings.json` (see `geminiSettings`) right before it
 * starts: here, as the CLI's own user, so the file is the run user's under either Pod Security profile, and after
 * the init's skills and conversation restores, whose keys win. Best effort: a problem is logged and the CLI starts
 * anyway (it then says what is missing).
 */
export async function provideGeminiSettings(ctx: RunContext): Promise<void> {
  const home = ctx.io.env.HOME ?? '';
  if (!isAbsolute(home)) return;
  const path = join(home, GEMINI_SETTINGS_FILE);
  try {
    let existing: unknown;
    try {
      existing = JSON.parse(await readFile(path, 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') existing = null;
    }
    const settings = geminiSettings(existing, ctx.config.cliSettings);
    if (settings === undefined) {
      ctx.log.warn('[supervisor] the Gemini settings file is not a JSON object; left as it is', { path });
      return;
    }
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.tmp-${process.pid}`;
    await writeFile(tmp, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
    await rename(tmp, path);
  } catch (error) {
    ctx.log.warn('[supervisor] could not write the Gemini settings file', { path, error: describe(error) });
  }
}

/**
 * Streams the agent's output and drives the outcome state machine until the run has a code (steps 6–9); then
 * waits a bounded time for the pipes to reach EOF (step 10), cutting them off if a leftover process holds them.
 * Every stdout line that parses as JSON also goes to `results`.
 */
export async function superviseChild(
  ctx: RunContext,
  child: ChildProcess,
  exited: Promise<ExitInfo>,
  results: ResultAccumulator,
  /** Also sees every non-empty stdout line and its parse (a realtime or server turn streams them to its caller). */
  tap?: (line: string, parsed: ParsedLine) => void,
  /**
   * `requestId`: the request a server-mode turn answers; every stdout line of the turn carries it (the envelope's
   * `requestId` for the sinks, a first key of a JSON object line on stdout, see `withRequestId`). `onFailure`: told
   * the CLI's own error message when its terminal event reports a failure and carries one.
   */
  options: { readonly requestId?: string; readonly onFailure?: (message: string) => void } = {},
): Promise<number> {
  const { config, io, log } = ctx;
  let gone = false;
  let state: OutcomeState = initialOutcome({
    graceMs: config.graceMs,
    ...(ctx.deadlineAt !== undefined ? { deadlineAt: ctx.deadlineAt } : {}),
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  let settle: (code: number) => void = () => undefined;
  const outcome = new Promise<number>((resolve) => {
    settle = resolve;
  });
  const feed = (event: OutcomeEvent): void => {
    const next = step(state, event);
    state = next.state;
    for (const action of next.actions) {
      if (action.type === 'log') log[action.level](action.msg);
      else if (!gone) signalGroup(child, action.signal);
    }
    clearTimeout(timer);
    const wake = nextWakeAt(state);
    if (wake !== undefined) {
      const delay = Math.min(Math.max(0, wake - io.now()), MAX_TIMER_MS);
      timer = setTimeout(() => feed({ type: 'tick', now: io.now() }), delay);
    }
    if (state.phase.tag === 'done') settle(state.phase.code);
  };

  let terminalSeen = false;
  const onStdoutLine = (line: string): void => {
    if (line.trim() === '') return;
    const parsed: ParsedLine = parseLine(line);
    const { requestId } = options;
    ctx.out.line(requestId === undefined ? line : withRequestId(line, parsed, requestId));
    tap?.(line, parsed);
    if (parsed.json) results.add(parsed.value);
    if (!terminalSeen && parsed.json) {
      const terminal = terminalOf(config.vendor, parsed.value);
      if (terminal) {
        terminalSeen = true;
        if (terminal.message !== undefined) options.onFailure?.(terminal.message);
        feed({ type: 'terminal', ok: terminal.ok, now: io.now() });
      }
    }
    if (ctx.sinks.count > 0 && selected(config.selectors, config.vendor, parsed)) {
      ctx.sinks.deliver(line, {
        parsed,
        ...(options.requestId !== undefined ? { requestId: options.requestId } : {}),
      });
    }
  };
  const stdoutDone = pump(child, 'stdout', onStdoutLine, ctx.out, log);
  const stderrDone = pump(child, 'stderr', (line) => ctx.errOut.line(`[agent] ${line}`), ctx.errOut, log);
  void exited.then(({ code, signal }) => {
    gone = true;
    feed({ type: 'exit', code, signal, now: io.now() });
  });
  child.on('error', (error) => log.warn('[supervisor] agent process error', { error: describe(error) }));
  feed({ type: 'tick', now: io.now() });

  const code = await outcome;
  clearTimeout(timer);
  const drained = await within(Promise.all([stdoutDone, stderrDone]), ctx.budget(PIPE_DRAIN_MS));
  if (!drained) {
    log.warn(
      '[supervisor] agent output pipes still open after the agent ended; a leftover process holds them',
    );
    child.stdout?.destroy();
    child.stderr?.destroy();
  }
  return code;
}

/** File events for `output.watch` (step 11), then the conversation save (step 12). */
export async function epilogue(ctx: RunContext, pin?: string): Promise<void> {
  const { config, io, log } = ctx;
  if (config.watch.length > 0) {
    const files = await collectFileEvents(config.workspace, config.watch);
    for (const r of files.refused) {
      log.warn(`[supervisor] output.watch path ${r.why}; no file event`, {
        event: r.entry.event,
        path: r.entry.path,
      });
    }
    for (const event of files.events) ctx.emit(event);
  }
  const conversation =
    config.conversation ?? (pin !== undefined ? conversationForPin(config, io.env, pin) : undefined);
  if (conversation) {
    // After a deadline, the upload gets at most half of what is left, so the final event can still be delivered.
    const left =
      ctx.deadlineAt === undefined ? CONVERSATION_TIMEOUT_MS : ctx.budget(CONVERSATION_TIMEOUT_MS) / 2;
    await saveConversation(conversation, {
      env: io.env,
      log,
      retry: config.retry,
      timeoutMs: Math.max(MIN_STEP_BUDGET_MS, Math.min(CONVERSATION_TIMEOUT_MS, left)),
    });
  }
}

/** Reads one of the child's pipes line by line until EOF; resolves when the pipe ends, closes or fails. */
function pump(
  child: ChildProcess,
  which: 'stdout' | 'stderr',
  onLine: (line: string) => void,
  out: BareOutput,
  log: Logger,
): Promise<void> {
  const stream = child[which];
  if (!stream) return Promise.resolve();
  const splitter = new LineSplitter(MAX_LINE_BYTES);
  const tooLong = (n: number): void => {
    if (n > 0) log.warn(`[supervisor] dropped ${n} agent ${which} line(s) over ${MAX_LINE_BYTES} bytes`);
  };
  return new Promise<void>((resolve) => {
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      const rest = splitter.end();
      tooLong(rest.oversized);
      for (const line of rest.lines) onLine(line);
      resolve();
    };
    stream.on('data', (chunk: Uint8Array) => {
      const r = splitter.push(chunk);
      tooLong(r.oversized);
      for (const line of r.lines) onLine(line);
      if (out.congested) {
        stream.pause();
        void out.drained().then(() => stream.resume());
      }
    });
    stream.on('end', end);
    stream.on('close', end);
    stream.on('error', (error) => {
      log.warn(`[supervisor] reading agent ${which} failed`, { error: describe(error) });
      end();
    });
  });
}

/**
 * Sends `signal` to the child's process group (it leads its own), falling back to the child alone, and to the process
 * groups its descendants started of their own (a tool a CLI runs detached), so that none outlives it.
 */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  const pid = child.pid;
  if (pid === undefined) return;
  for (const group of descendantGroups(pid, readProcesses())) {
    try {
      process.kill(-group, signal);
    } catch {
      // already gone
    }
  }
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

/** True when `file` names an existing file: a path (contains `/`) as given, a bare name searched on `PATH`. */
async function locate(file: string, env: Env): Promise<boolean> {
  if (file === '') return false;
  if (file.includes('/')) return isFile(file);
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '' || !isAbsolute(dir)) continue;
    const candidate = join(dir, file);
    if ((await isFile(candidate)) && (await executable(candidate))) return true;
  }
  return false;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** How the child ended: an exit code, or the signal that killed it. */
export interface ExitInfo {
  readonly code: number | null;
  readonly signal: string | null;
}

type Spawned = { ok: true; child: ChildProcess; exited: Promise<ExitInfo> } | { ok: false; error: string };

/**
 * Spawns the agent in its own process group with both output pipes captured and stdin closed, or, with `stdin`,
 * fed that text and then closed (an agent that exits without reading it is not an error).
 */
function spawnAgent(file: string, args: readonly string[], env: Env, stdin?: string): Promise<Spawned> {
  return new Promise((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(file, args, {
        stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        detached: true,
        env: env as NodeJS.ProcessEnv,
      });
    } catch (error) {
      resolve({ ok: false, error: describe(error) });
      return;
    }
    // Listen for the exit right away, so an agent that ends at once is never missed.
    const exited = new Promise<ExitInfo>((done) =>
      child.once('exit', (code, signal) => done({ code, signal })),
    );
    const onError = (error: unknown): void => resolve({ ok: false, error: describe(error) });
    child.once('error', onError);
    child.once('spawn', () => {
      child.off('error', onError);
      if (stdin !== undefined && child.stdin !== null) {
        child.stdin.on('error', () => undefined);
        child.stdin.end(stdin);
      }
      resolve({ ok: true, child, exited });
    });
  });
}

/** Resolves true if `promise` settles within `ms`, false otherwise. */
export async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Re-exported for tests and composition: the parsed configuration type. */
export type { SupervisorConfig };
