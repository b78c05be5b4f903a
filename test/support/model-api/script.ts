// The scripted model shared by the three model-API fakes (anthropic.ts, openai.ts, gemini.ts), their recorder, their
// SSE writer and their loopback server. A test states a conversation's turns; each fake renders a turn in its
// vendor's wire format and records every request it gets.
//
// How a request finds its place in the script (stateless, as the real APIs are): the fake counts the model's turns
// already present in the request's history (runs of assistant / model items: Anthropic `assistant` messages, OpenAI
// `assistant` messages, `function_call` and `reasoning` items, Chat `assistant` messages, Gemini `model` contents).
// With k of them the request is at step k. A step is the script's next answer (a turn with text, thinking or a tool
// call) together with the error turns stated right before it: each of those errors is served once (the first
// request at that step gets the first error, a retry the next one, …) and then the answer, to every request at that
// step (a CLI that retries a lost answer gets it again). A global counter would instead drift on the first retry or
// side request. A request past the script's end is answered 400 `script exhausted` (not retried by SDKs or CLIs).

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Token counts of one answer, written as is into the vendor's usage fields (state them as that vendor counts). */
export interface ScriptUsage {
  readonly input: number;
  readonly output: number;
  readonly cacheRead?: number;
  /** Anthropic `cache_creation_input_tokens`, OpenAI Responses `cache_write_tokens`; Gemini has no such field. */
  readonly cacheWrite?: number;
  /** Reasoning / thinking tokens (Anthropic `thinking_tokens`, OpenAI `reasoning_tokens`, `thoughtsTokenCount`). */
  readonly reasoning?: number;
}

export interface ScriptToolCall {
  readonly name: string;
  readonly input: Readonly<Record<string, unknown>>;
  /** The call id (default `call_<step>`; Anthropic ids get the `toolu_` prefix). */
  readonly id?: string;
  /**
   * OpenAI Responses only: the tool namespace of a `function_call` item (Codex offers an MCP server's tools as a
   * namespace `mcp__<server>`, docs/reference/vendor-clis.md#mcp-1).
   */
  readonly namespace?: string;
}

/** An answer: at least one of thinking, text and a tool call (rendered in that order). */
export interface AnswerTurn {
  readonly thinking?: string;
  readonly text?: string;
  readonly toolCall?: ScriptToolCall;
  /** Default `{input: 10, output: 5}`. */
  readonly usage?: ScriptUsage;
  /** Anthropic only: the stop reason (default `tool_use` with a tool call, else `end_turn`). */
  readonly stopReason?: string;
}

export interface ErrorTurn {
  readonly error: {
    /** 429, 500, 503, 529 (Anthropic overloaded), 401, 400, … */
    readonly status: number;
    /** `retry-after` header, in seconds. */
    readonly retryAfter?: number;
    readonly message?: string;
    /** Answer 200 and start streaming, then fail inside the stream (a streaming request only). */
    readonly inStream?: boolean;
  };
}

export type Turn = AnswerTurn | ErrorTurn;

export const isErrorTurn = (t: Turn): t is ErrorTurn => 'error' in t;

export const DEFAULT_USAGE: ScriptUsage = { input: 10, output: 5 };

/** One request a fake received. */
export interface ModelRequest {
  readonly method: string;
  /** Path without the query. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** Lower-cased names; the key headers included (test keys only). */
  readonly headers: Readonly<Record<string, string>>;
  /** The key the request carried (`x-api-key`, `Authorization: Bearer`, `x-goog-api-key` or `?key=`), if any. */
  readonly apiKey: string | undefined;
  readonly body: unknown;
  readonly model: string | undefined;
  readonly stream: boolean;
  /** Names of the tools offered. */
  readonly tools: readonly string[];
  /** The tool results sent back in this request's history, in order. */
  readonly toolResults: readonly { readonly id: string; readonly content: string }[];
  /** The script step it was matched to (undefined: not a model call, or refused before). */
  readonly step: number | undefined;
  /** When it arrived (ms since the epoch). */
  readonly at: number;
  /** The HTTP status the fake answered (200 until it answers). */
  readonly status: number;
}

/** What a fake does with a model call: the turn to play, or why not. */
export type Play =
  | { readonly kind: 'answer'; readonly turn: AnswerTurn; readonly step: number }
  | { readonly kind: 'error'; readonly turn: ErrorTurn; readonly step: number }
  | { readonly kind: 'exhausted'; readonly step: number };

interface Step {
  readonly errors: readonly ErrorTurn[];
  readonly answer: AnswerTurn | undefined;
  served: number;
}

/** One conversation's script; see the header for how requests are matched to steps. */
export class Script {
  readonly #steps: Step[] = [];

  constructor(turns: readonly Turn[]) {
    let errors: ErrorTurn[] = [];
    for (const turn of turns) {
      if (isErrorTurn(turn)) {
        errors.push(turn);
        continue;
      }
      if (turn.text === undefined && turn.thinking === undefined && turn.toolCall === undefined) {
        throw new Error('script: an answer turn needs text, thinking or a toolCall');
      }
      this.#steps.push({ errors, answer: turn, served: 0 });
      errors = [];
    }
    if (errors.length > 0) this.#steps.push({ errors, answer: undefined, served: 0 });
  }

  /** The turn for a request whose history holds `modelTurns` model turns. */
  play(modelTurns: number): Play {
    const step = this.#steps[modelTurns];
    if (step === undefined) return { kind: 'exhausted', step: modelTurns };
    const error = step.errors[step.served];
    if (error !== undefined) {
      step.served++;
      return { kind: 'error', turn: error, step: modelTurns };
    }
    if (step.answer === undefined) return { kind: 'exhausted', step: modelTurns };
    return { kind: 'answer', turn: step.answer, step: modelTurns };
  }
}

/** Counts runs of model items in a history given as one role per item. */
export function countModelTurns(roles: readonly ('model' | 'other')[]): number {
  let runs = 0;
  let previous: 'model' | 'other' = 'other';
  for (const role of roles) {
    if (role === 'model' && previous !== 'model') runs++;
    previous = role;
  }
  return runs;
}

export const isObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === 'object' && u !== null && !Array.isArray(u);

export const asArray = (u: unknown): readonly unknown[] => (Array.isArray(u) ? u : []);

/** A tool call's id as the fakes number them. */
export const callId = (turn: AnswerTurn, step: number, prefix: string): string =>
  turn.toolCall?.id ?? `${prefix}${step}`;

/** Splits `s` into `n` roughly equal pieces (at least one; every piece non-empty when `s` is long enough). */
export function chunks(s: string, n: number): string[] {
  if (s.length <= 1) return [s];
  const size = Math.ceil(s.length / Math.min(n, s.length));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

/** Writes server-sent events: `event:` lines when a name is given, one JSON `data:` line each. */
export class SseWriter {
  readonly #res: ServerResponse;

  constructor(res: ServerResponse, headers: Readonly<Record<string, string>> = {}) {
    this.#res = res;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...headers,
    });
  }

  send(event: string | undefined, data: unknown): void {
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    this.#res.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${payload}\n\n`);
  }

  end(): void {
    this.#res.end();
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** The per-request facts a vendor file extracts from a parsed body. */
export interface RequestFacts {
  readonly model?: string | undefined;
  readonly stream?: boolean;
  readonly tools?: readonly string[];
  readonly toolResults?: readonly { readonly id: string; readonly content: string }[];
}

/** What every fake returns. */
export interface ModelApiFake {
  /** The base URL as the vendor's SDK takes it (OpenAI's ends in `/v1`). */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Every request, in order, unknown endpoints and refused ones included. */
  readonly requests: readonly ModelRequest[];
  close(): Promise<void>;
}

/**
 * One conversation of a script: the requests `match` accepts, or whose JSON body contains `bodyIncludes` (the same
 * as a `match`, but it can cross a pipe: test/support/real-node/model-fake.ts), or all of them when neither is set.
 */
export interface Conversation {
  readonly match?: (body: unknown) => boolean;
  readonly bodyIncludes?: string;
  readonly turns: readonly Turn[];
}

export interface ModelApiOptions {
  /** The turns of the one conversation. */
  readonly turns?: readonly Turn[];
  /**
   * More than one conversation: the first whose `match` accepts the request's body plays it (a CLI's side requests,
   * e.g. a title or a quota probe, get a conversation of their own). `turns` is the same as `[{turns}]`.
   */
  readonly conversations?: readonly Conversation[];
  /** The key the fake accepts (default `test-key-<vendor>`). */
  readonly apiKey?: string;
  /** The model ids `GET …/models` lists (default: a vendor-specific one). */
  readonly models?: readonly string[];
  /**
   * The address to listen on (default 127.0.0.1). Another address only for a fake started inside a network
   * namespace the test bed made (the real node's bridge: test/support/real-node/model-fake.ts).
   */
  readonly host?: string;
}

/** The conversations of `options`, each with its own script state. */
export function scriptsOf(options: ModelApiOptions): { match: (body: unknown) => boolean; script: Script }[] {
  const conversations = options.conversations ?? [{ turns: options.turns ?? [] }];
  return conversations.map((c) => {
    const { bodyIncludes } = c;
    const includes = (body: unknown) =>
      bodyIncludes === undefined || JSON.stringify(body ?? '').includes(bodyIncludes);
    return { match: c.match ?? includes, script: new Script(c.turns) };
  });
}

/** Picks the conversation for `body` and plays its step. */
export function playFor(
  scripts: readonly { match: (body: unknown) => boolean; script: Script }[],
  body: unknown,
  modelTurns: number,
): Play {
  const found = scripts.find((s) => s.match(body));
  return found === undefined ? { kind: 'exhausted', step: modelTurns } : found.script.play(modelTurns);
}

/**
 * A request as a vendor file sees it: method, path, query, headers and the parsed JSON body (undefined when empty or
 * not JSON). `record` appends it to the log and returns the entry, whose `status` the answer sets.
 */
export interface Incoming {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
  record(apiKey: string | undefined, facts: RequestFacts, step?: number): ModelRequest;
}

/**
 * Starts a loopback HTTP server on 127.0.0.1 (or `host`) and a free port. `handle` answers each request; a request
 * it leaves unanswered is recorded and answered 404 by `notFound`, so a call no fake knows shows up in the record.
 */
export async function serveLoopback(
  handle: (incoming: Incoming) => Promise<boolean> | boolean,
  notFound: (incoming: Incoming) => void,
  host = '127.0.0.1',
): Promise<{ port: number; host: string; requests: ModelRequest[]; close(): Promise<void> }> {
  const requests: ModelRequest[] = [];
  const server = createServer((req, res) => {
    res.on('error', () => {});
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const text = Buffer.concat(parts).toString('utf8');
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        body = text;
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const incoming: Incoming = {
        req,
        res,
        method: (req.method ?? 'GET').toUpperCase(),
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers,
        body,
        record(apiKey, facts, step) {
          const entry = {
            method: incoming.method,
            path: incoming.path,
            query: incoming.query,
            headers,
            apiKey,
            body,
            model: facts.model,
            stream: facts.stream ?? false,
            tools: facts.tools ?? [],
            toolResults: facts.toolResults ?? [],
            step,
            at: Date.now(),
            get status() {
              return res.statusCode;
            },
          } satisfies ModelRequest;
          requests.push(entry);
          return entry;
        },
      };
      Promise.resolve(handle(incoming))
        .then((handled) => {
          if (!handled) notFound(incoming);
        })
        .catch((err: unknown) => {
          if (!res.headersSent) sendJson(res, 500, { error: { message: String(err) } });
          else res.end();
        });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    host,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
