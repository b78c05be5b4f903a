// The supervisor of a realtime run (`AGENT_EXECUTION=realtime`): a live CLI session that the controller's prompt
// API talks to. It serves prompts on `AGENT_PROMPT_PORT` (8090) at the pod IP and accepts only the run's own token
// (`AGENT_PROMPT_TOKEN`, from the run's Secret; compared in constant time; anything else → 401 without detail).
//
// One CLI invocation per turn, continuing the session by id (docs/reference/vendor-cli-events.md#resuming-a-session:
// all three vendor CLIs resume by id; no
// input format for a long-lived stdin session is documented, so none is relied on). The first turn is the rendered
// prompt (`AGENT_PROMPT_FILE`, from the run's input ConfigMap) unless the run resumes a session
// (`AGENT_RESUME_SESSION`: restored by the init container, no initial prompt). Every turn's lines go where a Job
// run's go (stdout, sinks, `output.select`) and, for a turn asked through the API, back to the caller as NDJSON until
// the turn ends. A prompt too long for one CLI argument goes to the CLI's stdin (see `deliverPrompt`).
//
// Between turns the session's state (the CLI's state folder under $HOME and the workspace) can be read as one archive
// (`GET /session/state`); a pod started with `AGENT_SESSION_RESTORE=true` sends no opening prompt and waits for such
// an archive (`PUT /session/state`), then goes on with that session by id, counting turns on from the given number
// (docs/design/sessions.md, "The run pod").
//
// The session ends, and with it the pod, on `POST /close` (exit code of the last turn, 0 if none failed), when a turn
// exits non-zero (its code), on SIGTERM (143), or at the run deadline (124). Closing twice is harmless.
//
// The run report (termination message) covers the turns served: the last turn's answer, usage and cost summed over
// the turns. It is rewritten after every turn and once more when the session ends (after the turn in flight, if any,
// is over or a grace period has passed).
//
// The prompt server's routes are a Hono app (realtime-app.ts) over this session as its port, served by the pod's serve
// adapter (http.ts). The recipe (`parseRecipe`) and the system prompt (`readSystemPrompt`) also serve a server-mode
// run (server.ts).

import { readFile } from 'node:fs/promises';
import * as v from 'valibot';
import type { RunningServer } from '../../server/serve.ts';
import type { Logger } from '../../shared/log.ts';
import { vendorCommand } from '../../vendors/cli/argv.ts';
import {
  addTurnResult,
  argvWithoutPrompt,
  deliverPrompt,
  type PromptDelivery,
  type ResultAccumulator,
  type RunResult,
  resultAccumulator,
} from '../../vendors/cli/index.ts';
import { VENDOR_INFO } from '../../vendors/cli/info.ts';
import { sessionIdOf } from '../../vendors/cli/session.ts';
import { agentFailedBeforeStart, agentFinished, agentStarted, parseLine } from '../shared/index.ts';
import { servePod } from './http.ts';
import {
  createPromptApp,
  type PromptPort,
  type RestoreAnswer,
  type StateAnswer,
  type TurnOutput,
} from './realtime-app.ts';
import { writeRunReport } from './report.ts';
import { packSessionState, type StatePlaces, unpackSessionState } from './session-state.ts';
import {
  cliAttributes,
  epilogue,
  launch,
  prepare,
  promptedCommand,
  type RunContext,
  type SupervisorIo,
  signalGroup,
  superviseChild,
  within,
} from './supervise.ts';
import { tracedResults } from './tracing.ts';
import { normalizeRoot } from './watch.ts';

/** Default port of the prompt server. */
export const DEFAULT_PROMPT_PORT = 8090;
/** How long the end of a session waits for the prompt server's connections to close before it cuts them. */
const CLOSE_CONNECTIONS_MS = 2000;

/** The recipe each turn's argv is built from (the Job's `AGENT_RUN_RECIPE`): vendor options, no prompt. */
export const RecipeSchema = v.object({
  model: v.string(),
  permissionMode: v.optional(v.string()),
  allowedTools: v.optional(v.array(v.string())),
  disallowedTools: v.optional(v.array(v.string())),
  maxTurns: v.optional(v.number()),
  mcpServers: v.optional(
    v.array(
      v.object({
        name: v.string(),
        transport: v.string(),
        command: v.optional(v.string()),
        args: v.optional(v.array(v.string())),
        url: v.optional(v.string()),
        headers_secret: v.optional(v.string()),
      }),
    ),
  ),
});
export type Recipe = v.InferOutput<typeof RecipeSchema>;

/** Reads `AGENT_RUN_RECIPE` (realtime and server runs); one line naming the variable when it is unusable. */
export function parseRecipe(
  env: Readonly<Record<string, string | undefined>>,
): { ok: true; value: Recipe } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(env.AGENT_RUN_RECIPE ?? '');
  } catch {
    return { ok: false, error: 'AGENT_RUN_RECIPE is not JSON' };
  }
  const recipe = v.safeParse(RecipeSchema, raw);
  if (!recipe.success) return { ok: false, error: `AGENT_RUN_RECIPE: ${v.summarize(recipe.issues)}` };
  return { ok: true, value: recipe.output };
}

/** What the realtime supervisor reads besides the Job run's configuration. */
export interface RealtimeConfig {
  readonly token: string;
  readonly port: number;
  readonly host: string;
  readonly recipe: Recipe;
  readonly resumeSession: string | undefined;
  /**
   * `AGENT_SESSION_RESTORE=true`: the pod waits for `PUT /session/state` before its first turn and sends no opening
   * prompt (docs/design/sessions.md, "The run pod").
   */
  readonly restore: boolean;
  /** `$HOME` (absolute), where the CLI's state folder is; undefined without one (then no state folder is saved). */
  readonly home: string | undefined;
}

/** `AGENT_SESSION_RESTORE`: `true` or `false` (or unset, or empty: false). */
const RestoreFlagSchema = v.optional(v.picklist(['true', 'false', '']), '');

/** Reads the realtime settings; one line naming the variable when one is unusable. */
export function parseRealtimeConfig(
  env: Readonly<Record<string, string | undefined>>,
): { ok: true; value: RealtimeConfig } | { ok: false; error: string } {
  const token = env.AGENT_PROMPT_TOKEN ?? '';
  if (token.length < 16) return { ok: false, error: 'AGENT_PROMPT_TOKEN is missing or too short' };
  const rawPort = env.AGENT_PROMPT_PORT ?? '';
  const port = rawPort === '' ? DEFAULT_PROMPT_PORT : Number(rawPort);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    return { ok: false, error: `AGENT_PROMPT_PORT must be a port number, got ${JSON.stringify(rawPort)}` };
  const recipe = parseRecipe(env);
  if (!recipe.ok) return recipe;
  const resume = env.AGENT_RESUME_SESSION ?? '';
  const restore = v.safeParse(RestoreFlagSchema, env.AGENT_SESSION_RESTORE);
  if (!restore.success)
    return {
      ok: false,
      error: `AGENT_SESSION_RESTORE must be true or false, got ${JSON.stringify(env.AGENT_SESSION_RESTORE)}`,
    };
  return {
    ok: true,
    value: {
      token,
      port,
      host: env.AGENT_POD_IP || '0.0.0.0',
      recipe: recipe.value,
      resumeSession: resume === '' ? undefined : resume,
      restore: restore.output === 'true',
      home: normalizeRoot(env.HOME ?? ''),
    },
  };
}

/**
 * The definition's system prompt (`AGENT_SYSTEM_PROMPT_FILE`, from the run's input ConfigMap), undefined without one,
 * or `unreadable` (logged) when the file cannot be read.
 */
export async function readSystemPrompt(ctx: RunContext): Promise<string | undefined | 'unreadable'> {
  const file = ctx.io.env.AGENT_SYSTEM_PROMPT_FILE ?? '';
  if (file === '') return undefined;
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    ctx.log.error('[supervisor] cannot read the system prompt', {
      file,
      error: error instanceof Error ? error.message : String(error),
    });
    return 'unreadable';
  }
}

/** How a session ended. */
type End = { readonly code: number; readonly why: string };

/**
 * Runs a realtime session (see the header). Resolves to the pod's exit code; never rejects for agent, client or sink
 * problems.
 */
export async function runRealtimeSupervisor(io: SupervisorIo): Promise<number> {
  const ctx = prepare(io);
  const parsed = parseRealtimeConfig(io.env);
  if (!parsed.ok) {
    ctx.log.error(`[supervisor] realtime: ${parsed.error}`);
    writeRunReport(ctx.config.terminationMessagePath, {}, ctx.log);
    ctx.emit(agentFailedBeforeStart('spawn'));
    await ctx.sinks.close(ctx.budget(ctx.config.flushMs));
    return 1;
  }
  const rt = parsed.value;
  const session = new Session(ctx, rt);
  const code = await session.run();
  return code;
}

class Session implements PromptPort {
  readonly #ctx: RunContext;
  readonly #rt: RealtimeConfig;
  #sessionId: string | undefined;
  /** The turn in flight, settled when it is over. */
  #turn: Promise<void> | undefined;
  /** The definition's system prompt (`AGENT_SYSTEM_PROMPT_FILE`), given to every turn. */
  #systemPrompt: string | undefined;
  #child: { kill(signal: NodeJS.Signals): void } | undefined;
  #lastCode = 0;
  #ended: End | undefined;
  #endSession: (end: End) => void = () => undefined;
  #server: RunningServer | undefined;
  /** The finished turns' combined result. */
  #served: RunResult | undefined;
  /** The result of the turn in flight, as far as its lines go. */
  #inFlight: ResultAccumulator | undefined;
  /** Turns ended so far (counted on from a restored session's). */
  #turns = 0;
  /** Waiting for `PUT /session/state` (a pod started to restore, not restored yet). */
  #restoring: boolean;
  /** A `PUT /session/state` is being unpacked. */
  #unpacking = false;
  /** `GET /session/state` calls reading the state now: no turn starts meanwhile. */
  #reading = 0;

  constructor(ctx: RunContext, rt: RealtimeConfig) {
    this.#ctx = ctx;
    this.#rt = rt;
    this.#sessionId = rt.resumeSession;
    this.#restoring = rt.restore;
  }

  /** Where this pod keeps the session's state. */
  get #places(): StatePlaces {
    const stateDir = VENDOR_INFO[this.#ctx.config.vendor].stateDir;
    return {
      home: this.#rt.home ?? '/',
      stateDir: this.#rt.home === undefined ? undefined : stateDir,
      workspace: this.#ctx.config.workspace,
    };
  }

  async run(): Promise<number> {
    const ctx = this.#ctx;
    const ended = new Promise<End>((resolve) => {
      this.#endSession = (end) => {
        if (this.#ended !== undefined) return;
        this.#ended = end;
        resolve(end);
      };
    });
    const removeSignals = [
      this.#ctx.io.onSignal('SIGTERM', () => this.#stop(143, 'SIGTERM')),
      this.#ctx.io.onSignal('SIGINT', () => this.#stop(130, 'SIGINT')),
      this.#ctx.io.onSignal('SIGPIPE', () => undefined),
    ];
    const deadline =
      ctx.deadlineAt === undefined
        ? undefined
        : setTimeout(
            () => this.#stop(124, 'the run deadline passed'),
            Math.max(0, ctx.deadlineAt - ctx.io.now()),
          );
    /** The session ends before it served anything: report, tell the sinks, undo the timers and handlers. */
    const failBeforeStart = async (reason: string): Promise<number> => {
      this.#writeReport();
      ctx.emit(agentFailedBeforeStart(reason));
      await ctx.sinks.close(ctx.budget(ctx.config.flushMs));
      clearTimeout(deadline);
      for (const remove of removeSignals) remove();
      return 1;
    };
    // The system prompt goes with every turn (the first one reads it with its prompt, below).
    const system = await readSystemPrompt(ctx);
    if (system === 'unreadable') return failBeforeStart('input');
    this.#systemPrompt = system;
    // The first turn's prompt is read before prompts are served, so no prompt or close can come in between. A
    // resumed or restored session has none: it goes on with the next prompt.
    const opens = this.#rt.resumeSession === undefined && !this.#rt.restore;
    const initial = opens ? await promptedCommand(ctx, ctx.io.argv) : undefined;
    if (opens && initial === undefined) return failBeforeStart('input');
    try {
      this.#server = await servePod(createPromptApp(this), this.#rt.port, this.#rt.host);
    } catch (error) {
      ctx.log.error('[supervisor] realtime: cannot serve prompts', {
        port: this.#rt.port,
        error: error instanceof Error ? error.message : String(error),
      });
      return failBeforeStart('spawn');
    }
    ctx.log.info('[supervisor] realtime session: serving prompts', {
      port: this.#rt.port,
      ...(this.#rt.restore ? { restoring: true } : {}),
    });
    ctx.emit(agentStarted());
    // Synchronously after listening: the first turn is in flight before any request is handled.
    if (initial !== undefined) void this.#runTurn(initial, undefined);
    const end = await ended;
    clearTimeout(deadline);
    ctx.log.info('[supervisor] realtime session ended', { code: end.code, why: end.why });
    // A turn stopped by a signal or the deadline: its CLI gets the grace to exit before the report is written.
    if (this.#turn !== undefined) await within(this.#turn, ctx.budget(ctx.config.graceMs));
    this.#writeReport();
    // No new connections, idle ones closed; the answer to /close (if that ended it) says `connection: close`, so its
    // connection ends once the answer is out. What is still open after a short wait is cut.
    const server = this.#server;
    if (server !== undefined) {
      const closed = server.close();
      if (!(await within(closed, CLOSE_CONNECTIONS_MS))) {
        server.closeConnections();
        await within(closed, 1000);
      }
    }
    await epilogue(ctx, this.#sessionId);
    ctx.emit(agentFinished(end.code));
    await Promise.all([ctx.sinks.close(ctx.budget(ctx.config.flushMs)), ctx.tracer.flush(ctx.budget(3000))]);
    for (const remove of removeSignals) remove();
    return end.code;
  }

  /** Writes the run report: the finished turns plus the one in flight, if any. */
  #writeReport(): void {
    const served =
      this.#inFlight === undefined ? this.#served : addTurnResult(this.#served, this.#inFlight.result());
    writeRunReport(this.#ctx.config.terminationMessagePath, served ?? {}, this.#ctx.log);
  }

  /** Ends the session now (a signal or the deadline): the turn in flight is stopped. */
  #stop(code: number, why: string): void {
    if (this.#child !== undefined) {
      try {
        this.#child.kill('SIGTERM');
      } catch {
        // already gone
      }
    }
    this.#endSession({ code, why });
  }

  /**
   * Starts one turn (its lines also go to `respond`, absent for the first turn, which nobody asked for) and marks it
   * in flight until it is over.
   */
  #runTurn(command: PromptDelivery, respond: TurnOutput | undefined): Promise<void> {
    const turn = this.#turnToEnd(command, respond).finally(() => {
      this.#turn = undefined;
    });
    this.#turn = turn;
    return turn;
  }

  /** Runs one turn to its end; a non-zero exit ends the session with that code. */
  async #turnToEnd(command: PromptDelivery, respond: TurnOutput | undefined): Promise<void> {
    const ctx = this.#ctx;
    const [file, ...args] = command.argv;
    const started = await launch(ctx, file ?? '', args, command.stdin);
    if (!started.ok) {
      respond?.end(`${JSON.stringify({ type: 'error', message: 'the agent CLI could not be started' })}\n`);
      this.#endSession({ code: 1, why: `the agent CLI could not be started (${started.reason})` });
      return;
    }
    const { child, exited } = started;
    this.#child = { kill: (signal) => signalGroup(child, signal) };
    const results = resultAccumulator(ctx.config.vendor);
    this.#inFlight = results;
    const cli = ctx.tracer.cli(ctx.config.vendor, cliAttributes(ctx));
    const code = await superviseChild(ctx, child, exited, tracedResults(results, cli), (line) => {
      const parsed = parseLine(line);
      if (parsed.json) {
        const id = sessionIdOf(ctx.config.vendor, parsed.value);
        if (id !== undefined) this.#sessionId = id;
      }
      respond?.line(line);
    });
    this.#child = undefined;
    cli.end(code);
    this.#served = addTurnResult(this.#served, results.result());
    this.#inFlight = undefined;
    this.#turns++;
    this.#writeReport();
    this.#lastCode = code;
    respond?.end();
    if (code !== 0) this.#endSession({ code, why: `a turn ended with exit code ${code}` });
  }

  // The PromptPort of the prompt server (realtime-app.ts).

  get token(): string {
    return this.#rt.token;
  }

  get log(): Logger {
    return this.#ctx.log;
  }

  health() {
    return {
      sessionId: this.#sessionId ?? null,
      busy: this.#turn !== undefined,
      turns: this.#turns,
      restoring: this.#restoring,
    };
  }

  refusal(): string | undefined {
    if (this.#ended !== undefined || this.#closing) return 'the session has ended';
    if (this.#restoring) return 'waiting for the session state';
    if (this.#turn !== undefined) return 'a prompt is already in flight';
    if (this.#reading > 0) return 'the session state is being read';
    return undefined;
  }

  async sessionState(): Promise<StateAnswer> {
    if (this.#restoring) return { ok: false, status: 409, message: 'waiting for the session state' };
    if (this.#turn !== undefined) return { ok: false, status: 409, message: 'a turn is in flight' };
    const sessionId = this.#sessionId;
    if (this.#turns === 0) return { ok: false, status: 409, message: 'no turn has ended yet' };
    if (sessionId === undefined) return { ok: false, status: 409, message: 'the CLI has named no session' };
    const turns = this.#turns;
    this.#reading++;
    try {
      const packed = await packSessionState(this.#places);
      if (!packed.ok) {
        this.#ctx.log.error('[supervisor] the session state is over the size cap');
        return { ok: false, status: 413, message: 'the session state is larger than the cap (64 MiB)' };
      }
      this.#ctx.log.info('[supervisor] session state read', {
        turns,
        bytes: packed.archive.length,
        members: packed.members,
        ...(packed.skipped > 0 ? { skippedNotRegular: packed.skipped } : {}),
      });
      return { ok: true, archive: packed.archive, sessionId, turns };
    } finally {
      this.#reading--;
    }
  }

  restoreRefusal(): string | undefined {
    if (!this.#rt.restore) return 'this pod was not started to restore a session';
    if (this.#ended !== undefined || this.#closing) return 'the session has ended';
    if (this.#unpacking) return 'a session state is being restored';
    if (!this.#restoring) return 'the session state was restored already';
    return undefined;
  }

  async restoreState(archive: Uint8Array, sessionId: string, turns: number): Promise<RestoreAnswer> {
    const refused = this.restoreRefusal();
    if (refused !== undefined) return { ok: false, status: 409, message: refused };
    this.#unpacking = true;
    try {
      const unpacked = await unpackSessionState(archive, this.#places);
      if (!unpacked.ok) {
        const { kind, message } = unpacked.error;
        this.#ctx.log.error('[supervisor] session state not restored', { reason: kind, error: message });
        return { ok: false, status: kind === 'too-large' ? 413 : kind === 'invalid' ? 400 : 500, message };
      }
      this.#sessionId = sessionId;
      this.#turns = turns;
      this.#restoring = false;
      this.#ctx.log.info('[supervisor] session state restored', {
        sessionId,
        turns,
        members: unpacked.members,
      });
      return { ok: true, members: unpacked.members };
    } finally {
      this.#unpacking = false;
    }
  }

  delivery(prompt: string): { ok: true; value: PromptDelivery } | { ok: false; error: string } {
    const command = vendorCommand({ ...this.#rt.recipe, prompt, resumeSession: this.#sessionId });
    // A prompt too long for one argument goes to the CLI's stdin where it reads one (issue 10 §1).
    return command.ok
      ? deliverPrompt(command.value.vendor, argvWithoutPrompt(command.value.argv), prompt, this.#systemPrompt)
      : command;
  }

  startTurn(delivery: PromptDelivery, out: TurnOutput): void {
    void this.#runTurn(delivery, out);
  }

  close(): { readonly sessionId: string | null } {
    const sessionId = this.#sessionId ?? null;
    this.#closeAfterTurn();
    return { sessionId };
  }

  #closing = false;

  /** Ends the session once the turn in flight (if any) is over. */
  #closeAfterTurn(): void {
    if (this.#closing) return;
    this.#closing = true;
    void (this.#turn ?? Promise.resolve()).then(() =>
      this.#endSession({ code: this.#lastCode, why: 'closed' }),
    );
  }
}
