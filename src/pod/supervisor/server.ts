// The supervisor of a server-mode run (`AGENT_EXECUTION=server`, issue 12): an OpenAI-compatible HTTP API in front
// of the vendor CLI, run by a Deployment (restartPolicy Always) behind a Service. It starts idle and never ends on
// its own.
//
// Served on `AGENT_SERVER_PORT` (8080) at `AGENT_POD_IP` (else 0.0.0.0):
// - `GET /healthz` (no auth; the liveness probe): `{"ok":true,"inFlight":n}` (503 with `ok: false` while shutting
//   down);
// - `GET /readyz` (no auth; the readiness probe): as /healthz, and 503 with `ok: false` and a `reason` also while
//   there is no usable API key, so the pod is not Ready (no Service sends it requests it would refuse);
// - `GET /metrics` (no auth): Prometheus text (server-metrics.ts);
// - `GET /v1/models`, `GET /v1/models/{id}` and `POST /v1/chat/completions`, for holders of the API key
//   (`Authorization: Bearer <key>`, compared in constant time; anything else → 401 `invalid_api_key`, no detail).
//
// The API key is read from the file `AGENT_SERVER_API_KEY_FILE` names (the pod's mounted Secret; its value is never
// in the environment): its content with surrounding whitespace trimmed, at least 16 characters. The file is read
// again at most once a second (when a request or a probe needs the key and the last read is older, on the monotonic
// clock: a wall clock set back cannot stop it), so a key the kubelet has refreshed in the volume is in use within a
// second, without a restart, and the old one is refused from then on. While the file is missing, empty or too
// short, every API request is answered 503 `api_key_unavailable` (its body never read) and /readyz fails; the server
// keeps running and takes a key as soon as one is there.
// A 401 or 413 (a body over `AGENT_SERVER_MAX_BODY_BYTES`, refused as soon as it is declared or read past the limit)
// is answered with `connection: close` and the connection closed after it, its body never read: no client can make
// the server read an unbounded body (nor can one with a 404 or 405, whose connection is closed when it has a body).
// The routes are a Hono app (server-app.ts) over the ApiServer below, served by the pod's serve adapter (http.ts).
//
// Each completion request is one CLI turn built from `AGENT_RUN_RECIPE` (as a realtime turn's), the prompt and system
// prompt mapped from its messages (openai.ts; `AGENT_SYSTEM_PROMPT_FILE`, the definition's system prompt, goes first
// in every turn), resuming `session_id` when given. At most `AGENT_SERVER_CONCURRENCY` turns run at once; one more
// is refused (429, `Retry-After: 1`), never queued; the limit is checked and the slot taken in one synchronous step,
// and the slot is given back however the request ends. A turn running longer than
// `AGENT_SERVER_REQUEST_TIMEOUT_SECONDS` has its CLI's process group sent SIGTERM, then SIGKILL after the exit grace
// (`AGENT_EXIT_GRACE_MS`), and is answered 504 (streamed: an error event); a client that goes away stops its turn the
// same way. Every request has an id (`chatcmpl-…`, the completion's id and `X-Request-Id`), logged and carried by
// every line of its turn on stdout and to the sinks (`requestId`, see `superviseChild`). The key file's name is
// removed from the environment the CLI turns get, so the key is not pointed out to the agent; the CLI runs as the
// same user as the supervisor, though, and the file is readable to that user: this keeps the key from being passed
// on, it is no boundary against a hostile agent. When a
// turn is over, whatever its CLI left running in its process group is killed. `agent_server_requests_total` counts
// each request by how it ended (see `handle`): a stream's status line says 200 before its turn runs, its count says
// 504, 500, 503 or 499 when it ended so.
//
// SIGTERM/SIGINT: the listener closes, turns in flight get the exit grace to finish (then are killed), the sinks
// and traces are flushed, and the process exits 0. A run deadline does not apply (a warning names it).

import { randomBytes } from 'node:crypto';
import type { RunningServer } from '../../server/serve.ts';
import type { Logger } from '../../shared/log.ts';
import { err, ok, type Result } from '../../shared/result.ts';
import { vendorCommand } from '../../vendors/cli/argv.ts';
import {
  argvWithoutPrompt,
  deliverPrompt,
  resultAccumulator,
  vendorForModel,
} from '../../vendors/cli/index.ts';
import { sessionIdOf } from '../../vendors/cli/session.ts';
import {
  agentFailedBeforeStart,
  agentFinished,
  agentStarted,
  type Env,
  parseInteger,
} from '../shared/index.ts';
import { jsonResponse, readBody, servePod, textStream } from './http.ts';
import {
  chatCompletion,
  chatTurnOf,
  completionChunk,
  completionId,
  SSE_DONE,
  sseData,
  streamedText,
  systemPromptOf,
  usageChunk,
} from './openai.ts';
import { parseRecipe, type Recipe, readSystemPrompt } from './realtime.ts';
import {
  type ApiApp,
  type ApiPort,
  type ChatAnswer,
  createApiApp,
  type Refusal,
  refusal,
  refusalResponse,
} from './server-app.ts';
import { ApiKeyFile, type ApiKeyState } from './server-key.ts';
import { createServerMetrics, type ServerMetrics } from './server-metrics.ts';
import { Turn, type TurnEnd, type TurnPlan } from './server-turn.ts';
import {
  cliAttributes,
  launch,
  PIPE_DRAIN_MS,
  prepare,
  type RunContext,
  type SupervisorIo,
  signalGroup,
  superviseChild,
  within,
} from './supervise.ts';
import { tracedResults } from './tracing.ts';

/** Default port of the API. */
export const DEFAULT_SERVER_PORT = 8080;
/** Default number of turns in flight at once. */
export const DEFAULT_SERVER_CONCURRENCY = 4;
/** Default longest turn, seconds. */
export const DEFAULT_SERVER_REQUEST_TIMEOUT_SECONDS = 300;
/** Default largest request body, bytes. */
export const DEFAULT_SERVER_MAX_BODY_BYTES = 1024 * 1024;
/** How long the shutdown waits for the connections to close once the answers are out, before it cuts them. */
const CLOSE_CONNECTIONS_MS = 2000;
/** How often a quiet stream gets an SSE comment, so proxies do not drop the connection. */
const SSE_HEARTBEAT_MS = 15_000;
/** The env variable naming the API key file; removed from the CLI turns' environment. */
const API_KEY_FILE_ENV = 'AGENT_SERVER_API_KEY_FILE';
/**
 * Env the CLI turns never get: the key file's name, and a key value in the environment (which the server no longer
 * reads; a pod template of an older controller carried it).
 */
const NOT_FOR_TURNS: ReadonlySet<string> = new Set([API_KEY_FILE_ENV, 'AGENT_SERVER_API_KEY']);

/** What the server-mode supervisor reads besides the Job run's configuration. */
export interface ServerConfig {
  /** The file holding the API key (re-read while serving, see ApiKeyFile). */
  readonly apiKeyFile: string;
  readonly port: number;
  readonly host: string;
  readonly concurrency: number;
  readonly requestTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly recipe: Recipe;
}

/** An integer setting: `fallback` when unset or blank, else a decimal integer within [min, max]. */
function intSetting(
  env: Env,
  name: string,
  fallback: number,
  min: number,
  max: number,
): Result<number, string> {
  const raw = env[name] ?? '';
  if (raw.trim() === '') return ok(fallback);
  const n = parseInteger(raw);
  if (n === undefined || n < min || n > max)
    return err(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw.slice(0, 40))}`);
  return ok(n);
}

/**
 * Reads the server settings; one line naming the variable when one is unusable. The API key file need not exist
 * yet: it is read while serving (see ApiKeyFile).
 */
export function parseServerConfig(env: Env): Result<ServerConfig, string> {
  const apiKeyFile = (env[API_KEY_FILE_ENV] ?? '').trim();
  if (apiKeyFile === '')
    return err(`${API_KEY_FILE_ENV} is not set: the server reads its API key from the file it names`);
  const port = intSetting(env, 'AGENT_SERVER_PORT', DEFAULT_SERVER_PORT, 1, 65535);
  if (!port.ok) return port;
  const concurrency = intSetting(env, 'AGENT_SERVER_CONCURRENCY', DEFAULT_SERVER_CONCURRENCY, 1, 1024);
  if (!concurrency.ok) return concurrency;
  const timeout = intSetting(
    env,
    'AGENT_SERVER_REQUEST_TIMEOUT_SECONDS',
    DEFAULT_SERVER_REQUEST_TIMEOUT_SECONDS,
    1,
    86_400,
  );
  if (!timeout.ok) return timeout;
  const maxBody = intSetting(
    env,
    'AGENT_SERVER_MAX_BODY_BYTES',
    DEFAULT_SERVER_MAX_BODY_BYTES,
    1,
    64 * 1024 * 1024,
  );
  if (!maxBody.ok) return maxBody;
  const recipe = parseRecipe(env);
  if (!recipe.ok) return err(recipe.error);
  return ok({
    apiKeyFile,
    port: port.value,
    host: env.AGENT_POD_IP || '0.0.0.0',
    concurrency: concurrency.value,
    requestTimeoutMs: timeout.value * 1000,
    maxBodyBytes: maxBody.value,
    recipe: recipe.value,
  });
}

/**
 * Runs the API server (see the header). Resolves to the pod's exit code: 1 when it cannot start (bad settings, an
 * unreadable system prompt, the port taken), 0 after a signal; never rejects for agent, client or sink problems.
 */
export async function runServerSupervisor(io: SupervisorIo): Promise<number> {
  const parsed = parseServerConfig(io.env);
  // The CLI turns get the environment without the key file's name (the agent's user can still read the file; see
  // the header).
  const env = Object.fromEntries(Object.entries(io.env).filter(([name]) => !NOT_FOR_TURNS.has(name)));
  const base = prepare({ ...io, env });
  if (!parsed.ok) {
    base.log.error(`[supervisor] server: ${parsed.error}`);
    base.emit(agentFailedBeforeStart('spawn'));
    await base.sinks.close(base.budget(base.config.flushMs));
    return 1;
  }
  const config = parsed.value;
  if (base.deadlineAt !== undefined)
    base.log.warn(
      '[supervisor] server: a server has no run deadline; AGENT_DEADLINE_MS/AGENT_DEADLINE_AT ignored',
    );
  return new ApiServer(serverContext(base, config), config).run();
}

/** The context of a server's turns: the recipe's model and vendor, and no run deadline. */
export function serverContext(base: RunContext, config: ServerConfig): RunContext {
  // Every turn runs the recipe's model: its vendor reads the lines (terminal event, selectors, result).
  const model = config.recipe.model;
  return {
    ...base,
    config: { ...base.config, model, vendor: vendorForModel(model) },
    deadlineAt: undefined,
    budget: (want) => want,
  };
}

const NOT_STARTED = refusal(500, 'The agent CLI could not be started', 'server_error', 'agent_not_started');
const SHUTTING_DOWN = refusal(503, 'The server is shutting down', 'server_error', 'shutting_down', null, {
  connection: 'close',
});
/** A client that left before its request was read (nobody hears this answer; it is counted as 499). */
const CLIENT_GONE = refusal(499, 'The client went away', 'server_error');

/** Runs a turn's CLI to its end; `onLine` sees each parsed stdout JSON value and the session id so far. */
export type RunCli = (
  ctx: RunContext,
  plan: TurnPlan,
  onLine: (value: unknown, sessionId: string | undefined) => void,
) => Promise<TurnEnd>;

/** What an ApiServer runs its turns with; every field has a default (the real one). */
export interface ApiServerOptions {
  /** Default `runCli`: launches the turn's CLI. */
  readonly runCli?: RunCli;
}

/** An answer and how its turn ended (a stream's when it is over). */
interface Served {
  readonly response: Response;
  readonly ended: Promise<{ readonly status: number; readonly end: TurnEnd }>;
}

/**
 * The API of a server-mode run (see the header): the state behind the routes of server-app.ts (the turns in flight,
 * the API key, the metrics) and the turns themselves. `run` serves `app`.
 */
export class ApiServer implements ApiPort {
  readonly #ctx: RunContext;
  readonly #cfg: ServerConfig;
  readonly metrics: ServerMetrics;
  readonly #key: ApiKeyFile;
  readonly startedAt: number;
  /** The definition's system prompt (`AGENT_SYSTEM_PROMPT_FILE`), first in every turn's. */
  #systemPrompt: string | undefined;
  readonly #turns = new Set<Turn>();
  /** Turns being answered, until their answer is complete (awaited, within the grace, at shutdown). */
  readonly #handling = new Set<Promise<void>>();
  readonly #runCli: RunCli;
  #stopping = false;
  #stop: (why: string) => void = () => undefined;
  /** The routes (server-app.ts) over this server. */
  readonly app: ApiApp;

  constructor(ctx: RunContext, cfg: ServerConfig, options: ApiServerOptions = {}) {
    this.#ctx = ctx;
    this.#cfg = cfg;
    this.#runCli = options.runCli ?? runCli;
    this.metrics = createServerMetrics(cfg.concurrency);
    this.startedAt = Math.floor(ctx.io.now() / 1000);
    // The key file's age on the monotonic clock (the default), not the wall clock `io.now`: a clock stepped back
    // would otherwise stop the re-reads, and a revoked key would keep working.
    this.#key = new ApiKeyFile(cfg.apiKeyFile, {
      onChange: (state, previous) => {
        // Never the key: only that there is one, that it changed, or why there is none.
        if (state.kind === 'usable')
          ctx.log.info(
            previous?.kind === 'usable'
              ? '[supervisor] server: the API key changed; the new one is in use'
              : '[supervisor] server: API key loaded',
            { file: cfg.apiKeyFile },
          );
        else
          ctx.log.warn(
            `[supervisor] server: no usable API key: ${state.why}; API requests are answered 503 and /readyz fails until there is one`,
            { file: cfg.apiKeyFile },
          );
      },
    });
    this.app = createApiApp(this);
  }

  get model(): string {
    return this.#cfg.recipe.model;
  }

  get log(): Logger {
    return this.#ctx.log;
  }

  stopping(): boolean {
    return this.#stopping;
  }

  inFlight(): number {
    return this.#turns.size;
  }

  key(): Promise<ApiKeyState> {
    return this.#key.current();
  }

  async run(): Promise<number> {
    const ctx = this.#ctx;
    const stopped = new Promise<string>((resolve) => {
      this.#stop = resolve;
    });
    const removeSignals = [
      ctx.io.onSignal('SIGTERM', () => this.#stop('SIGTERM')),
      ctx.io.onSignal('SIGINT', () => this.#stop('SIGINT')),
      ctx.io.onSignal('SIGPIPE', () => undefined),
    ];
    const failBeforeStart = async (reason: string): Promise<number> => {
      ctx.emit(agentFailedBeforeStart(reason));
      await ctx.sinks.close(ctx.config.flushMs);
      for (const remove of removeSignals) remove();
      return 1;
    };
    const system = await readSystemPrompt(ctx);
    if (system === 'unreadable') return failBeforeStart('input');
    this.#systemPrompt = system;
    // Read once before serving, so the log says at once whether there is a key (missing: served all the same).
    await this.#key.current();
    let server: RunningServer;
    try {
      server = await servePod(this.app, this.#cfg.port, this.#cfg.host);
    } catch (error) {
      ctx.log.error('[supervisor] server: cannot serve the API', {
        port: this.#cfg.port,
        error: describe(error),
      });
      return failBeforeStart('spawn');
    }
    ctx.log.info('[supervisor] server: serving the API', {
      port: this.#cfg.port,
      model: this.#cfg.recipe.model,
      concurrency: this.#cfg.concurrency,
      requestTimeoutSeconds: this.#cfg.requestTimeoutMs / 1000,
    });
    ctx.emit(agentStarted());

    const why = await stopped;
    this.#stopping = true;
    ctx.log.info('[supervisor] server: stopping', { why, inFlight: this.#turns.size });
    // No new connections; idle keep-alive ones are closed, requests in flight go on.
    const closed = server.close();
    const settled = (): Promise<unknown> => Promise.all([...this.#handling]);
    if (!(await within(settled(), ctx.config.graceMs))) {
      ctx.log.warn('[supervisor] server: killing the turns still in flight after the grace', {
        inFlight: this.#turns.size,
        graceMs: ctx.config.graceMs,
      });
      for (const turn of this.#turns) turn.stop('shutdown', 'SIGKILL');
      await within(settled(), PIPE_DRAIN_MS + 1000);
    }
    // The answers are out or on their way, each saying `connection: close`: the connections idle now are closed, the
    // others once their answer is out; what is still open after a moment is cut.
    server.closeIdleConnections();
    if (!(await within(closed, CLOSE_CONNECTIONS_MS))) {
      server.closeConnections();
      await within(closed, 1000);
    }
    ctx.emit(agentFinished(0));
    await Promise.all([ctx.sinks.close(ctx.config.flushMs), ctx.tracer.flush(3000)]);
    for (const remove of removeSignals) remove();
    return 0;
  }

  /** `POST /v1/chat/completions` (authenticated): validates, takes a turn slot or refuses, runs the turn, answers. */
  async chat(request: Request): Promise<ChatAnswer> {
    const id = completionId(randomBytes(12));
    const headers = { 'x-request-id': id };
    const log = this.#ctx.log.with({ requestId: id });
    const start = performance.now();
    const planned = await this.#plan(request, id);
    if (!planned.ok) {
      const r = planned.error === 'gone' ? CLIENT_GONE : planned.error;
      if (planned.error === 'gone')
        log.info('[supervisor] server: the client went away before its request was read');
      else
        log.info('[supervisor] server: request refused', {
          status: r.status,
          reason: r.body.error.message.slice(0, 200),
        });
      return { response: refusalResponse(r, headers), settled: Promise.resolve(r.status) };
    }
    // The plan holds a slot (taken by #plan with its check): from here on it is given back however the request
    // ends (an answer, an error thrown, the timeout, the client leaving, the shutdown).
    const plan = planned.value;
    const timer = setTimeout(() => plan.turn.stop('timeout'), this.#cfg.requestTimeoutMs);
    // A client that leaves before its answer is complete stops its turn (a stream's cancel says so too).
    const leave = (): void => plan.turn.stop('disconnected');
    request.signal.addEventListener('abort', leave, { once: true });
    if (request.signal.aborted) leave();
    const over = (): void => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', leave);
      this.#release(plan.turn);
    };
    log.info('[supervisor] server: turn started', {
      stream: plan.chat.stream,
      resume: plan.chat.sessionId !== undefined,
      inFlight: this.#turns.size,
    });
    // Handled (awaited at shutdown) from here until the answer is complete.
    let handled: () => void = () => undefined;
    const handling = new Promise<void>((resolve) => {
      handled = resolve;
    });
    this.#handling.add(handling);
    void handling.then(() => this.#handling.delete(handling));
    let served: Served;
    try {
      served = plan.chat.stream ? this.#streamed(plan, headers) : await this.#answered(plan, headers);
    } catch (error) {
      over();
      handled();
      throw error;
    }
    const settled = served.ended.then(
      ({ status, end }) => {
        over();
        log.info('[supervisor] server: request served', {
          status,
          stream: plan.chat.stream,
          durationMs: Math.round(performance.now() - start),
          ...(end.kind === 'exited' ? { exitCode: end.code } : { exitCode: null }),
          ...(plan.turn.stopped !== undefined ? { stopped: plan.turn.stopped } : {}),
          ...(end.kind === 'exited' && end.sessionId !== undefined ? { sessionId: end.sessionId } : {}),
        });
        return status;
      },
      (error: unknown) => {
        over();
        log.warn('[supervisor] server request failed', { error: describe(error) });
        return 500;
      },
    );
    void settled.then(handled);
    return { response: served.response, settled };
  }

  /**
   * Reads and checks a completion request; takes a turn slot when it can run (the caller gives it back), `gone` when
   * the client left before its body was read.
   */
  async #plan(request: Request, id: string): Promise<Result<TurnPlan, Refusal | 'gone'>> {
    const max = this.#cfg.maxBodyBytes;
    const body = await readBody(request, max);
    if (body.kind === 'gone') return err('gone');
    if (body.kind === 'tooLarge')
      return err({
        ...refusal(
          413,
          `The request body is larger than ${max} bytes`,
          'invalid_request_error',
          'request_too_large',
        ),
        close: true,
      });
    let raw: unknown;
    try {
      raw = JSON.parse(body.text);
    } catch {
      return err(refusal(400, 'The request body must be JSON', 'invalid_request_error', 'invalid_json'));
    }
    const chat = chatTurnOf(raw);
    if (!chat.ok)
      return err(
        refusal(400, chat.error.message, 'invalid_request_error', 'invalid_request', chat.error.param),
      );
    const command = vendorCommand({
      ...this.#cfg.recipe,
      prompt: chat.value.prompt,
      resumeSession: chat.value.sessionId,
    });
    if (!command.ok)
      return err(refusal(400, command.error, 'invalid_request_error', 'invalid_request', 'session_id'));
    const delivery = deliverPrompt(
      command.value.vendor,
      argvWithoutPrompt(command.value.argv),
      chat.value.prompt,
      systemPromptOf(this.#systemPrompt, chat.value.system),
    );
    if (!delivery.ok)
      return err(refusal(400, delivery.error, 'invalid_request_error', 'invalid_request', 'messages'));
    if (this.#stopping) return err(SHUTTING_DOWN);
    // The limit is checked and the slot taken in this one synchronous block, with nothing awaited between them:
    // two requests read in the same tick cannot both pass the check.
    if (this.#turns.size >= this.#cfg.concurrency)
      return err(
        refusal(
          429,
          `${this.#cfg.concurrency} requests are in flight, the most this server runs at once; retry later`,
          'rate_limit_exceeded',
          'rate_limit_exceeded',
          null,
          { 'retry-after': '1' },
        ),
      );
    const turn = new Turn(id, this.#ctx.config.graceMs);
    this.#turns.add(turn);
    this.metrics.setInFlight(this.#turns.size);
    return ok({
      turn,
      chat: chat.value,
      delivery: delivery.value,
      vendor: command.value.vendor,
      head: { id, created: Math.floor(this.#ctx.io.now() / 1000), model: this.#cfg.recipe.model },
    });
  }

  /** Gives a turn's slot back: nothing is signalled to its CLI any more. */
  #release(turn: Turn): void {
    turn.done();
    this.#turns.delete(turn);
    this.metrics.setInFlight(this.#turns.size);
  }

  /** Why a finished turn has no answer, or undefined when it has one. */
  #failure(plan: TurnPlan, end: TurnEnd): Refusal | undefined {
    switch (plan.turn.stopped) {
      case 'timeout':
        return refusal(
          504,
          `The turn did not finish within ${this.#cfg.requestTimeoutMs / 1000} s and was stopped`,
          'timeout',
          'timeout',
        );
      case 'shutdown':
        return refusal(503, 'The server shut down before the turn finished', 'server_error', 'shutting_down');
      case 'disconnected':
        return refusal(499, 'The client went away', 'server_error');
      case undefined:
        break;
    }
    if (end.kind === 'not-started') return NOT_STARTED;
    // The exit code only: the CLI's stderr and output may hold anything.
    if (end.code !== 0)
      return refusal(500, `The agent CLI exited with code ${end.code}`, 'server_error', 'agent_failed');
    return undefined;
  }

  /** A non-streamed answer: the completion, or the error. */
  async #answered(plan: TurnPlan, headers: Record<string, string>): Promise<Served> {
    const end = await this.#runCli(this.#ctx, plan, () => undefined);
    const failure = this.#failure(plan, end);
    if (failure !== undefined || end.kind !== 'exited') {
      const r = failure ?? NOT_STARTED;
      return { response: refusalResponse(r, headers), ended: Promise.resolve({ status: r.status, end }) };
    }
    const session = end.sessionId === undefined ? {} : { 'x-session-id': end.sessionId };
    const completion = chatCompletion(plan.head, end.result.result ?? '', end.result.usage, end.sessionId);
    return {
      response: jsonResponse(200, completion, { ...headers, ...session }),
      ended: Promise.resolve({ status: 200, end }),
    };
  }

  /**
   * A streamed answer: role chunk, content deltas as the CLI speaks, the last chunk, usage, `[DONE]`; or, when the
   * turn fails, an error event and no `[DONE]`. The status line says 200 before the turn runs: the status `ended`
   * settles with (for the metrics) is how the stream ended, 499 when its client left first.
   */
  #streamed(plan: TurnPlan, headers: Record<string, string>): Served {
    const { head } = plan;
    const sse = textStream(() => plan.turn.stop('disconnected'));
    sse.write(sseData(completionChunk(head, { role: 'assistant', content: '' }, null, undefined)));
    const heartbeat = setInterval(() => sse.write(': keep-alive\n\n'), SSE_HEARTBEAT_MS);
    const ended = (async () => {
      const text = streamedText(plan.vendor);
      let end: TurnEnd;
      try {
        end = await this.#runCli(this.#ctx, plan, (value, sessionId) => {
          const delta = text.push(value);
          if (delta !== '') sse.write(sseData(completionChunk(head, { content: delta }, null, sessionId)));
        });
      } catch (error) {
        sse.fail(error);
        throw error;
      } finally {
        clearInterval(heartbeat);
      }
      let status = 200;
      const failure = this.#failure(plan, end);
      if (failure !== undefined || end.kind !== 'exited') {
        const r = failure ?? NOT_STARTED;
        sse.write(sseData(r.body));
        status = r.status;
      } else {
        const { result, sessionId } = end;
        // A CLI whose lines carry no assistant text as it goes still has its answer streamed, in one piece.
        if (!text.said && result.result !== undefined && result.result !== '')
          sse.write(sseData(completionChunk(head, { content: result.result }, null, sessionId)));
        sse.write(sseData(completionChunk(head, {}, 'stop', sessionId)));
        if (plan.chat.includeUsage) sse.write(sseData(usageChunk(head, result.usage, sessionId)));
        sse.write(SSE_DONE);
      }
      // A client that went away is counted as 499 (its stream was cancelled before it was complete).
      return { status: sse.close() ? status : 499, end };
    })();
    const response = new Response(sse.stream, {
      status: 200,
      headers: {
        ...headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      },
    });
    return { response, ended };
  }
}

/** Runs a turn's CLI to its end (the default RunCli). */
export async function runCli(
  ctx: RunContext,
  plan: TurnPlan,
  onLine: (value: unknown, sessionId: string | undefined) => void,
): Promise<TurnEnd> {
  const { turn, delivery, vendor } = plan;
  const [file, ...args] = delivery.argv;
  const started = await launch(ctx, file ?? '', args, delivery.stdin);
  if (!started.ok) return { kind: 'not-started' };
  const { child, exited } = started;
  turn.attach(child, exited);
  const results = resultAccumulator(vendor);
  const cli = ctx.tracer.cli(vendor, { ...cliAttributes(ctx), 'agent.request_id': turn.id });
  let sessionId: string | undefined;
  const code = await superviseChild(
    ctx,
    child,
    exited,
    tracedResults(results, cli),
    (_line, parsed) => {
      if (!parsed.json) return;
      sessionId = sessionIdOf(vendor, parsed.value) ?? sessionId;
      onLine(parsed.value, sessionId);
    },
    { requestId: turn.id },
  );
  cli.end(code);
  // What the CLI left running in its process group (a background command, a stray child) goes with the turn: a
  // server lives long, and leftovers of every turn would pile up.
  signalGroup(child, 'SIGKILL');
  return { kind: 'exited', code, result: results.result(), sessionId };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
