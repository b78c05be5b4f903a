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
// is answered with `connection: close` and the socket destroyed after it, its body never read: no client can make
// the server read an unbounded body (nor can one with a 404 or 405, whose connection is closed when it has a body).
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

import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { err, ok, type Result } from '../../shared/result.ts';
import { vendorCommand } from '../../vendors/cli/argv.ts';
import {
  argvWithoutPrompt,
  deliverPrompt,
  type PromptDelivery,
  type RunResult,
  resultAccumulator,
  type Vendor,
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
import {
  type ChatTurn,
  type CompletionHead,
  chatCompletion,
  chatTurnOf,
  completionChunk,
  completionId,
  type ErrorType,
  modelList,
  modelObject,
  type OpenAiError,
  openAiError,
  SSE_DONE,
  sseData,
  streamedText,
  systemPromptOf,
  usageChunk,
} from './openai.ts';
import { bearerMatches, listenHttp, parseRecipe, type Recipe, readSystemPrompt, reply } from './realtime.ts';
import { createServerMetrics, type ServerMetrics } from './server-metrics.ts';
import {
  cliAttributes,
  type ExitInfo,
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
/** The shortest API key accepted. */
export const MIN_API_KEY_LENGTH = 16;
/** How long a key read from its file is used before the file is read again (when the key is next needed). */
export const API_KEY_RELOAD_MS = 1000;
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

/** The API key as its file was last read: usable, or why not (never the content). */
export type ApiKeyState =
  | { readonly kind: 'usable'; readonly key: string }
  | { readonly kind: 'unusable'; readonly why: string };

/** What the key file's content says: the key between the surrounding whitespace, if it is long enough. */
export function apiKeyOfText(text: string): ApiKeyState {
  // A Secret made with `--from-file` usually ends in a newline, which no `Authorization: Bearer` header can carry.
  const key = text.trim();
  if (key === '') return { kind: 'unusable', why: 'the API key file is empty' };
  if (key.length < MIN_API_KEY_LENGTH)
    return {
      kind: 'unusable',
      why: `the API key in its file is shorter than ${MIN_API_KEY_LENGTH} characters`,
    };
  return { kind: 'usable', key };
}

/** What an ApiKeyFile reads with and reports to; every field has a default (the real ones). */
export interface ApiKeyFileOptions {
  /**
   * A monotonic clock in ms (default `performance.now()`): the age of the last read is measured with it, so a wall
   * clock stepping backwards cannot stop the re-reads (and keep a revoked key in use).
   */
  readonly now?: () => number;
  /** Reads the file's text (default `fs.promises.readFile(path, 'utf8')`); rejects with the errno error. */
  readonly readFile?: (path: string) => Promise<string>;
  /** Hears of each new state (the first read included; never the key itself), with the one before. */
  readonly onChange?: (state: ApiKeyState, previous: ApiKeyState | undefined) => void;
}

/**
 * The API key file, read when the key is needed and the last read is at least API_KEY_RELOAD_MS old (one read at a
 * time; callers meanwhile share it), so a rewritten file (the kubelet swapping in a refreshed Secret) takes effect
 * within a second and an unchanging one costs one small read a second at most. The age is measured on a monotonic
 * clock; should the clock given ever run backwards, the key is read again at once. `onChange` hears of each new
 * state (the first read included; never the key itself).
 */
export class ApiKeyFile {
  readonly #path: string;
  readonly #now: () => number;
  readonly #readFile: (path: string) => Promise<string>;
  readonly #onChange: (state: ApiKeyState, previous: ApiKeyState | undefined) => void;
  #state: ApiKeyState | undefined;
  #readAt = 0;
  #reading: Promise<ApiKeyState> | undefined;

  constructor(path: string, options: ApiKeyFileOptions = {}) {
    this.#path = path;
    this.#now = options.now ?? (() => performance.now());
    this.#readFile = options.readFile ?? ((file) => readFile(file, 'utf8'));
    this.#onChange = options.onChange ?? (() => undefined);
  }

  /** The key as of at most API_KEY_RELOAD_MS ago. */
  current(): Promise<ApiKeyState> {
    const state = this.#state;
    const age = this.#now() - this.#readAt;
    if (state !== undefined && age >= 0 && age < API_KEY_RELOAD_MS) return Promise.resolve(state);
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<ApiKeyState> {
    let next: ApiKeyState;
    try {
      next = apiKeyOfText(await this.#readFile(this.#path));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      next = {
        kind: 'unusable',
        why:
          code === 'ENOENT'
            ? 'the API key file is missing'
            : `the API key file cannot be read (${code ?? describe(error)})`,
      };
    }
    this.#readAt = this.#now();
    const previous = this.#state;
    this.#state = next;
    if (!sameKeyState(previous, next)) this.#onChange(next, previous);
    return next;
  }
}

function sameKeyState(a: ApiKeyState | undefined, b: ApiKeyState): boolean {
  if (a === undefined || a.kind !== b.kind) return false;
  return a.kind === 'usable'
    ? b.kind === 'usable' && a.key === b.key
    : b.kind === 'unusable' && a.why === b.why;
}

/** Why a turn was stopped before it ended by itself. */
type StopReason = 'timeout' | 'disconnected' | 'shutdown';

/** One CLI invocation answering one request: stopped by its timeout, its client leaving, or the shutdown. */
class Turn {
  readonly id: string;
  readonly #graceMs: number;
  #child: { kill(signal: NodeJS.Signals): void } | undefined;
  #gone = false;
  #stopped: StopReason | undefined;
  /** The strongest signal asked for before the CLI was started. */
  #pending: 'SIGTERM' | 'SIGKILL' | undefined;
  #killTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(id: string, graceMs: number) {
    this.id = id;
    this.#graceMs = graceMs;
  }

  get stopped(): StopReason | undefined {
    return this.#stopped;
  }

  /** The turn's CLI runs: a stop asked before is carried out now. */
  attach(child: ChildProcess, exited: Promise<ExitInfo>): void {
    this.#child = { kill: (signal) => signalGroup(child, signal) };
    void exited.then(() => {
      this.#gone = true;
      clearTimeout(this.#killTimer);
    });
    if (this.#pending !== undefined) this.#signal(this.#pending);
  }

  /** Stops the turn: SIGTERM to its CLI's process group, SIGKILL after the grace (or SIGKILL at once). */
  stop(reason: StopReason, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): void {
    this.#stopped ??= reason;
    if (this.#child === undefined) {
      if (this.#pending !== 'SIGKILL') this.#pending = signal;
      return;
    }
    this.#signal(signal);
  }

  #signal(signal: 'SIGTERM' | 'SIGKILL'): void {
    const child = this.#child;
    if (child === undefined || this.#gone) return;
    child.kill(signal);
    if (signal === 'SIGTERM' && this.#killTimer === undefined) {
      this.#killTimer = setTimeout(() => {
        if (!this.#gone) child.kill('SIGKILL');
      }, this.#graceMs);
    } else if (signal === 'SIGKILL') clearTimeout(this.#killTimer);
  }

  /**
   * The turn is over: nothing is signalled any more. A CLI still running (its answer given up on, an error thrown
   * while it ran) has its process group killed first, so no slot is given back while its CLI lives on.
   */
  done(): void {
    if (!this.#gone) this.#child?.kill('SIGKILL');
    this.#gone = true;
    clearTimeout(this.#killTimer);
  }
}

/** How a turn's CLI run ended. */
type TurnEnd =
  | { readonly kind: 'not-started' }
  | {
      readonly kind: 'exited';
      readonly code: number;
      readonly result: RunResult;
      readonly sessionId: string | undefined;
    };

/** What one turn needs: its request, its CLI invocation and the vendor that reads its lines. */
interface TurnPlan {
  readonly turn: Turn;
  readonly chat: ChatTurn;
  readonly delivery: PromptDelivery;
  readonly vendor: Vendor;
  readonly head: CompletionHead;
}

/** The problem of a request as an HTTP status and an OpenAI error body. */
interface Refusal {
  readonly status: number;
  readonly body: OpenAiError;
  readonly headers?: Readonly<Record<string, string>>;
  /** Answered with `connection: close` and the socket destroyed after it, the request body left unread. */
  readonly close?: true;
}

const refusal = (
  status: number,
  message: string,
  type: ErrorType,
  code: string | null = null,
  param: string | null = null,
  headers?: Readonly<Record<string, string>>,
): Refusal => ({ status, body: openAiError(message, type, code, param), ...(headers ? { headers } : {}) });

const UNAUTHORIZED: Refusal = {
  ...refusal(401, 'Invalid API key', 'invalid_request_error', 'invalid_api_key'),
  close: true,
};
const NOT_STARTED = refusal(500, 'The agent CLI could not be started', 'server_error', 'agent_not_started');
const SHUTTING_DOWN = refusal(503, 'The server is shutting down', 'server_error', 'shutting_down', null, {
  connection: 'close',
});
/** Every API request while the key file holds no usable key; the body is never read. */
const NO_API_KEY: Refusal = {
  ...refusal(
    503,
    'The server has no usable API key yet (its key file is missing, empty or too short); retry later',
    'server_error',
    'api_key_unavailable',
    null,
    { 'retry-after': '5' },
  ),
  close: true,
};

/** The API paths and the one method each takes. */
function routeOf(path: string): { readonly method: 'GET' | 'POST'; readonly name: string } | undefined {
  if (path === '/v1/chat/completions') return { method: 'POST', name: 'chat' };
  if (path === '/v1/models') return { method: 'GET', name: 'models' };
  if (path.startsWith('/v1/models/') && path.length > '/v1/models/'.length)
    return { method: 'GET', name: 'model' };
  return undefined;
}

/**
 * How an API request ended, for `agent_server_requests_total`, when its status line does not say it: a stream's
 * status line says 200 before its turn runs.
 */
interface Ending {
  status: number | undefined;
}

/** The API of a server-mode run (see the header); `run` serves it, `handle` answers one request (exported for tests). */
export class ApiServer {
  readonly #ctx: RunContext;
  readonly #cfg: ServerConfig;
  readonly #metrics: ServerMetrics;
  readonly #key: ApiKeyFile;
  /** Unix seconds of the start (the model's `created`). */
  readonly #startedAt: number;
  /** The definition's system prompt (`AGENT_SYSTEM_PROMPT_FILE`), first in every turn's. */
  #systemPrompt: string | undefined;
  readonly #turns = new Set<Turn>();
  /** API requests being handled (awaited, within the grace, at shutdown). */
  readonly #handling = new Set<Promise<void>>();
  #stopping = false;
  #stop: (why: string) => void = () => undefined;

  constructor(ctx: RunContext, cfg: ServerConfig) {
    this.#ctx = ctx;
    this.#cfg = cfg;
    this.#metrics = createServerMetrics(cfg.concurrency);
    this.#startedAt = Math.floor(ctx.io.now() / 1000);
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
    let server: Server;
    try {
      server = await listenHttp(this.#cfg.port, this.#cfg.host, (req, res) => this.handle(req, res), {
        log: ctx.log,
        what: 'server',
        internalError: openAiError('Internal error', 'server_error'),
      });
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
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const settled = (): Promise<unknown> => Promise.all([...this.#handling]);
    if (!(await within(settled(), ctx.config.graceMs))) {
      ctx.log.warn('[supervisor] server: killing the turns still in flight after the grace', {
        inFlight: this.#turns.size,
        graceMs: ctx.config.graceMs,
      });
      for (const turn of this.#turns) turn.stop('shutdown', 'SIGKILL');
      await within(settled(), PIPE_DRAIN_MS + 1000);
    }
    server.closeAllConnections();
    await within(closed, 1000);
    ctx.emit(agentFinished(0));
    await Promise.all([ctx.sinks.close(ctx.config.flushMs), ctx.tracer.flush(3000)]);
    for (const remove of removeSignals) remove();
    return 0;
  }

  /** Answers one HTTP request (what the listener calls). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (path === '/healthz' || path === '/readyz' || path === '/metrics') {
      skipBody(req, res);
      if (req.method !== 'GET') {
        reply(res, 405, openAiError('Method not allowed', 'invalid_request_error'), { allow: 'GET' });
        return;
      }
      if (path === '/healthz') {
        reply(res, this.#stopping ? 503 : 200, { ok: !this.#stopping, inFlight: this.#turns.size });
        return;
      }
      if (path === '/readyz') {
        const key = await this.#key.current();
        const reason = this.#stopping
          ? 'shutting down'
          : key.kind === 'unusable'
            ? `no usable API key: ${key.why}`
            : undefined;
        reply(res, reason === undefined ? 200 : 503, {
          ok: reason === undefined,
          inFlight: this.#turns.size,
          ...(reason !== undefined ? { reason } : {}),
        });
        return;
      }
      const metrics = await this.#metrics.render();
      res.writeHead(200, { 'content-type': metrics.contentType });
      res.end(metrics.body);
      return;
    }
    const start = performance.now();
    const ending: Ending = { status: undefined };
    res.once('close', () => {
      // What the request ended as: a stream's own ending (its status line said 200 before its turn ran; this says
      // 504 for a timeout, 500 for a CLI failure, 503 for the shutdown), else the status of a complete answer, else
      // 499 (the client left before its answer was complete, as proxies count it; a stream too).
      const status = ending.status ?? (res.writableFinished ? res.statusCode : 499);
      this.#metrics.requestDone(status, (performance.now() - start) / 1000);
    });
    const handling = this.#api(req, res, path, ending);
    this.#handling.add(handling);
    try {
      await handling;
    } finally {
      this.#handling.delete(handling);
    }
  }

  async #api(req: IncomingMessage, res: ServerResponse, path: string, ending: Ending): Promise<void> {
    const route = routeOf(path);
    if (route === undefined) {
      skipBody(req, res);
      send(req, res, refusal(404, 'Unknown endpoint', 'invalid_request_error', 'unknown_url'));
      return;
    }
    if (req.method !== route.method) {
      skipBody(req, res);
      send(
        req,
        res,
        refusal(405, 'Method not allowed', 'invalid_request_error', 'method_not_allowed', null, {
          allow: route.method,
        }),
      );
      return;
    }
    const key = await this.#key.current();
    if (key.kind !== 'usable') {
      // Nobody can be told apart without a key: nothing is read, nothing runs.
      send(req, res, NO_API_KEY);
      return;
    }
    if (!bearerMatches(key.key, req.headers.authorization)) {
      // Not a byte of the body is read for a client without the key.
      send(req, res, UNAUTHORIZED);
      return;
    }
    const model = this.#cfg.recipe.model;
    if (route.name === 'models') {
      skipBody(req, res);
      reply(res, 200, modelList(model, this.#startedAt));
      return;
    }
    if (route.name === 'model') {
      skipBody(req, res);
      let id: string;
      try {
        id = decodeURIComponent(path.slice('/v1/models/'.length));
      } catch {
        id = '';
      }
      if (id === model) reply(res, 200, modelObject(model, this.#startedAt));
      else send(req, res, refusal(404, 'No such model', 'invalid_request_error', 'model_not_found', 'model'));
      return;
    }
    await this.#chat(req, res, ending);
  }

  /** `POST /v1/chat/completions`: validates, takes a turn slot or refuses, runs the turn and answers. */
  async #chat(req: IncomingMessage, res: ServerResponse, ending: Ending): Promise<void> {
    const id = completionId(randomBytes(12));
    const headers = { 'x-request-id': id };
    const log = this.#ctx.log.with({ requestId: id });
    const start = performance.now();
    const planned = await this.#plan(req, id);
    if (!planned.ok) {
      const r = planned.error;
      if (r === 'gone') {
        log.info('[supervisor] server: the client went away before its request was read');
        return;
      }
      send(req, res, { ...r, headers: { ...r.headers, ...headers } });
      log.info('[supervisor] server: request refused', {
        status: r.status,
        reason: r.body.error.message.slice(0, 200),
      });
      return;
    }
    // The plan holds a slot (taken by #plan with its check): from here on it is given back however the request
    // ends (an answer, an error thrown, the timeout, the client leaving, the shutdown).
    const plan = planned.value;
    let outcome: { status: number; end: TurnEnd };
    const timer = setTimeout(() => plan.turn.stop('timeout'), this.#cfg.requestTimeoutMs);
    try {
      // A client that leaves before its answer is complete stops its turn.
      res.once('close', () => {
        if (!res.writableFinished) plan.turn.stop('disconnected');
      });
      if (res.destroyed) plan.turn.stop('disconnected');
      log.info('[supervisor] server: turn started', {
        stream: plan.chat.stream,
        resume: plan.chat.sessionId !== undefined,
        inFlight: this.#turns.size,
      });
      outcome = plan.chat.stream
        ? await this.#streamed(res, plan, headers, ending)
        : await this.#answered(res, plan, headers);
    } finally {
      clearTimeout(timer);
      this.#release(plan.turn);
    }
    const { end } = outcome;
    log.info('[supervisor] server: request served', {
      status: outcome.status,
      stream: plan.chat.stream,
      durationMs: Math.round(performance.now() - start),
      ...(end.kind === 'exited' ? { exitCode: end.code } : { exitCode: null }),
      ...(plan.turn.stopped !== undefined ? { stopped: plan.turn.stopped } : {}),
      ...(end.kind === 'exited' && end.sessionId !== undefined ? { sessionId: end.sessionId } : {}),
    });
  }

  /**
   * Reads and checks a completion request; takes a turn slot when it can run (the caller gives it back), `gone` when
   * the client left before its body was read.
   */
  async #plan(req: IncomingMessage, id: string): Promise<Result<TurnPlan, Refusal | 'gone'>> {
    const max = this.#cfg.maxBodyBytes;
    const body = await readLimitedBody(req, max);
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
    this.#metrics.setInFlight(this.#turns.size);
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
    this.#metrics.setInFlight(this.#turns.size);
  }

  /** Runs a turn's CLI to its end; `onLine` sees each parsed stdout JSON value and the session id so far. */
  async #runTurn(
    plan: TurnPlan,
    onLine: (value: unknown, sessionId: string | undefined) => void,
  ): Promise<TurnEnd> {
    const ctx = this.#ctx;
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
  async #answered(
    res: ServerResponse,
    plan: TurnPlan,
    headers: Record<string, string>,
  ): Promise<{ status: number; end: TurnEnd }> {
    const end = await this.#runTurn(plan, () => undefined);
    const failure = this.#failure(plan, end);
    if (res.destroyed || res.writableEnded) return { status: 499, end };
    if (failure !== undefined || end.kind !== 'exited') {
      const r = failure ?? NOT_STARTED;
      send(res.req, res, { ...r, headers: { ...r.headers, ...headers } });
      return { status: r.status, end };
    }
    const session = end.sessionId === undefined ? {} : { 'x-session-id': end.sessionId };
    reply(res, 200, chatCompletion(plan.head, end.result.result ?? '', end.result.usage, end.sessionId), {
      ...headers,
      ...session,
    });
    return { status: 200, end };
  }

  /**
   * A streamed answer: role chunk, content deltas as the CLI speaks, the last chunk, usage, `[DONE]`; or, when the
   * turn fails, an error event and no `[DONE]`. The status line says 200 before the turn runs: the status returned
   * (and put in `ending`, for the metrics) is how the stream ended.
   */
  async #streamed(
    res: ServerResponse,
    plan: TurnPlan,
    headers: Record<string, string>,
    ending: Ending,
  ): Promise<{ status: number; end: TurnEnd }> {
    const { head } = plan;
    const finish = (status: number, end: TurnEnd): { status: number; end: TurnEnd } => {
      // A client that went away has been counted as 499 already (its response closed before it was complete).
      if (res.destroyed) return { status: 499, end };
      ending.status = status;
      res.end();
      return { status, end };
    };
    const write = (text: string): void => {
      if (!res.destroyed && !res.writableEnded) res.write(text);
    };
    res.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
    write(sseData(completionChunk(head, { role: 'assistant', content: '' }, null, undefined)));
    const heartbeat = setInterval(() => write(': keep-alive\n\n'), SSE_HEARTBEAT_MS);
    const text = streamedText(plan.vendor);
    let end: TurnEnd;
    try {
      end = await this.#runTurn(plan, (value, sessionId) => {
        const delta = text.push(value);
        if (delta !== '') write(sseData(completionChunk(head, { content: delta }, null, sessionId)));
      });
    } finally {
      clearInterval(heartbeat);
    }
    const failure = this.#failure(plan, end);
    if (failure !== undefined || end.kind !== 'exited') {
      const r = failure ?? NOT_STARTED;
      write(sseData(r.body));
      return finish(r.status, end);
    }
    const { result, sessionId } = end;
    // A CLI whose lines carry no assistant text as it goes still has its answer streamed, in one piece.
    if (!text.said && result.result !== undefined && result.result !== '')
      write(sseData(completionChunk(head, { content: result.result }, null, sessionId)));
    write(sseData(completionChunk(head, {}, 'stop', sessionId)));
    if (plan.chat.includeUsage) write(sseData(usageChunk(head, result.usage, sessionId)));
    write(SSE_DONE);
    return finish(200, end);
  }
}

/** Answers with a refusal (closing the connection after it when the refusal says so). */
function send(req: IncomingMessage, res: ServerResponse, r: Refusal): void {
  if (r.close) closeAfterAnswer(req, res);
  reply(res, r.status, r.body, r.headers);
}

/**
 * The connection of `req` is closed once its answer is out: `connection: close`, then the socket destroyed, so what
 * is left of the request body is never read (a client cannot make the server read an unbounded body).
 */
function closeAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('connection', 'close');
  res.once('finish', () => req.socket.destroy());
}

/** True when a request says it has a body. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length.trim() !== '0');
}

/**
 * A request answered without its body: when it has one, its connection is closed after the answer rather than the
 * body read (whoever sent it, however long it is).
 */
function skipBody(req: IncomingMessage, res: ServerResponse): void {
  if (hasBody(req)) closeAfterAnswer(req, res);
  else req.resume();
}

/** A request body as read: its text, too large, or nothing (the client went away first). */
type Body =
  | { readonly kind: 'read'; readonly text: string }
  | { readonly kind: 'tooLarge' }
  | { readonly kind: 'gone' };

/**
 * Reads a request body of at most `max` bytes. A body declared larger is refused before any of it is read, one that
 * turns out larger is refused as soon as it passes `max` and reading stops there (the caller answers 413 and closes
 * the connection); a request whose client goes away first is `gone`.
 */
export function readLimitedBody(req: IncomingMessage, max: number): Promise<Body> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > max) return Promise.resolve({ kind: 'tooLarge' });
  return new Promise((resolve) => {
    const decoder = new TextDecoder();
    let text = '';
    let size = 0;
    const settle = (body: Body): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onGone);
      resolve(body);
    };
    const onData = (chunk: Uint8Array): void => {
      size += chunk.length;
      if (size <= max) {
        text += decoder.decode(chunk, { stream: true });
        return;
      }
      req.pause();
      settle({ kind: 'tooLarge' });
    };
    const onEnd = (): void => settle({ kind: 'read', text: text + decoder.decode() });
    const onGone = (): void => settle({ kind: 'gone' });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('close', onGone);
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
