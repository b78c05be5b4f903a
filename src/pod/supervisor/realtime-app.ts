// The routes of a realtime run's prompt server (realtime.ts runs the session behind them), as a Hono app over a port,
// so they are tested with `app.request()`:
//
//   GET  /healthz        (no auth)  {"ok":true,"sessionId":…|null,"busy":bool,"turns":n,"restoring":bool}
//   POST /prompt         {"prompt":"…"} → 200 application/x-ndjson: the turn's stdout lines, one per line, until
//                        it ends
//   POST /close          → 200 {"closed":true,"sessionId":…|null}; the session ends once the turn in flight is over
//   GET  /session/state  → 200 application/gzip: the session's state (session-state.ts), headers
//                        `x-agent-session-id` and `x-agent-turns`; 409 while a turn is in flight, before one ended
//                        or while the pod waits for its state; 413 past the size cap
//   PUT  /session/state  application/gzip, headers `x-agent-session-id` and `x-agent-turns` → 200
//                        {"restored":true,"sessionId":…,"turns":n,"members":n}: only in a pod started to restore
//                        (`AGENT_SESSION_RESTORE=true`), before its first turn (409 otherwise); 415 for another
//                        content type, 400 for bad headers or an archive refused by the reader, 413 past the caps
//
// Anything else is 404 `{"message":"not found"}`. All but /healthz need `Authorization: Bearer <the run's token>`
// (constant time; anything else → 401 `{"message":"unauthorized"}`, no detail). A prompt body over
// MAX_PROMPT_BODY_BYTES is 413 (reading stops at the limit), one that is no JSON `{"prompt": "<non-empty>"}` 400, a
// prompt while the session is ending or a turn is in flight 409, one the CLI cannot take 400. A client that leaves
// mid-turn does not stop the turn: its lines still go to stdout and the sinks.
// A slow client never holds up the CLI: its lines wait in the response stream's queue (`textStream`).

import { Hono } from 'hono';
import * as v from 'valibot';
import type { Logger } from '../../shared/log.ts';
import type { PromptDelivery } from '../../vendors/cli/index.ts';
import { bearerMatches, failedRequest, jsonResponse, readBody, readBytes, textStream } from './http.ts';
import { MAX_SESSION_ARCHIVE_BYTES } from './session-state.ts';

/** Largest prompt request body accepted (413 beyond). */
export const MAX_PROMPT_BODY_BYTES = 1024 * 1024;

const PromptBodySchema = v.object({ prompt: v.pipe(v.string(), v.minLength(1, 'prompt must not be empty')) });

/** A CLI session id as it may go into a CLI's argv: no flag, no space, at most 200 characters. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
/** The headers of `PUT /session/state`. */
const RestoreHeadersSchema = v.object({
  sessionId: v.pipe(
    v.string('x-agent-session-id is missing'),
    v.regex(SESSION_ID, 'x-agent-session-id must be a session id (letters, digits, . _ : -)'),
  ),
  turns: v.pipe(
    v.string('x-agent-turns is missing'),
    v.regex(/^(0|[1-9][0-9]{0,8})$/, 'x-agent-turns must be a whole number'),
    v.transform(Number),
  ),
});

/** The session's state for `GET /session/state`, or why it cannot be given now. */
export type StateAnswer =
  | { readonly ok: true; readonly archive: Uint8Array; readonly sessionId: string; readonly turns: number }
  | { readonly ok: false; readonly status: 409 | 413; readonly message: string };

/** What `PUT /session/state` did. */
export type RestoreAnswer =
  | { readonly ok: true; readonly members: number }
  | { readonly ok: false; readonly status: 400 | 409 | 413 | 500; readonly message: string };

/** Where a turn's lines go: the caller's NDJSON stream. */
export interface TurnOutput {
  /** One stdout line of the turn (a newline is added). */
  line(text: string): void;
  /** The turn is over; `last` is one more line to send first (already newline-terminated). */
  end(last?: string): void;
}

/** What the prompt server needs from the session. */
export interface PromptPort {
  /** The run's token (`AGENT_PROMPT_TOKEN`). */
  readonly token: string;
  readonly log: Logger;
  health(): {
    readonly sessionId: string | null;
    readonly busy: boolean;
    readonly turns: number;
    readonly restoring: boolean;
  };
  /** Why no prompt can start now (the session is ending, a turn is in flight), undefined when one can. */
  refusal(): string | undefined;
  /** The CLI invocation of a turn for `prompt`, or why the CLI cannot take it. */
  delivery(prompt: string): { ok: true; value: PromptDelivery } | { ok: false; error: string };
  /** Starts the turn (in flight from this call on, synchronously); its lines go to `out`. */
  startTurn(delivery: PromptDelivery, out: TurnOutput): void;
  /** Ends the session once the turn in flight is over; the session id so far. */
  close(): { readonly sessionId: string | null };
  /** The state archive of the session as it is between turns. */
  sessionState(): Promise<StateAnswer>;
  /** Why no state can be restored now (not a restoring pod, already restored, a restore running), undefined when it can. */
  restoreRefusal(): string | undefined;
  /** Unpacks `archive` and continues `sessionId` from `turns` turns on. */
  restoreState(archive: Uint8Array, sessionId: string, turns: number): Promise<RestoreAnswer>;
}

/** Builds the prompt server's app. */
export function createPromptApp(port: PromptPort): Hono {
  const app = new Hono();
  const notFound = (): Response => jsonResponse(404, { message: 'not found' });
  const unauthorized = (request: Request): Response | undefined =>
    bearerMatches(port.token, request.headers.get('authorization'))
      ? undefined
      : jsonResponse(401, { message: 'unauthorized' });

  // A GET route answers HEAD too in Hono; only GET is health.
  app.get('/healthz', (c) =>
    c.req.method === 'GET' ? jsonResponse(200, { ok: true, ...port.health() }) : notFound(),
  );
  app.post('/close', (c) => {
    const refused = unauthorized(c.req.raw);
    if (refused !== undefined) return refused;
    const { sessionId } = port.close();
    // The session ends after this answer: its connection is not kept for another request.
    return jsonResponse(200, { closed: true, sessionId }, { connection: 'close' });
  });
  app.post('/prompt', async (c) => {
    const refused = unauthorized(c.req.raw);
    if (refused !== undefined) return refused;
    const body = await readBody(c.req.raw, MAX_PROMPT_BODY_BYTES);
    if (body.kind === 'gone') return jsonResponse(400, { message: 'the request body was cut off' });
    if (body.kind === 'tooLarge')
      return jsonResponse(413, {
        message: `the prompt request is larger than ${MAX_PROMPT_BODY_BYTES} bytes`,
      });
    let raw: unknown;
    try {
      raw = JSON.parse(body.text);
    } catch {
      return jsonResponse(400, { message: 'the body must be JSON {"prompt": "..."}' });
    }
    const prompt = v.safeParse(PromptBodySchema, raw);
    if (!prompt.success) return jsonResponse(400, { message: v.summarize(prompt.issues) });
    const busy = port.refusal();
    if (busy !== undefined) return jsonResponse(409, { message: busy });
    const delivery = port.delivery(prompt.output.prompt);
    if (!delivery.ok) return jsonResponse(400, { message: delivery.error });
    const { stream, out } = ndjsonStream();
    port.startTurn(delivery.value, out);
    return new Response(stream, {
      status: 200,
      headers: { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' },
    });
  });
  app.get('/session/state', async (c) => {
    if (c.req.method !== 'GET') return notFound();
    const refused = unauthorized(c.req.raw);
    if (refused !== undefined) return refused;
    const state = await port.sessionState();
    if (!state.ok) return jsonResponse(state.status, { message: state.message });
    return new Response(state.archive, {
      status: 200,
      headers: {
        'content-type': 'application/gzip',
        'cache-control': 'no-store',
        'x-agent-session-id': state.sessionId,
        'x-agent-turns': String(state.turns),
      },
    });
  });
  app.put('/session/state', async (c) => {
    const refused = unauthorized(c.req.raw);
    if (refused !== undefined) return refused;
    const type = (c.req.header('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/gzip')
      return jsonResponse(415, { message: 'the session state must be sent as application/gzip' });
    const headers = v.safeParse(RestoreHeadersSchema, {
      sessionId: c.req.header('x-agent-session-id'),
      turns: c.req.header('x-agent-turns'),
    });
    if (!headers.success) return jsonResponse(400, { message: v.summarize(headers.issues) });
    const busy = port.restoreRefusal();
    // The body is never read: the connection closes after the answer.
    if (busy !== undefined) return jsonResponse(409, { message: busy }, { connection: 'close' });
    const body = await readBytes(c.req.raw, MAX_SESSION_ARCHIVE_BYTES);
    if (body.kind === 'gone') return jsonResponse(400, { message: 'the request body was cut off' });
    if (body.kind === 'tooLarge')
      return jsonResponse(
        413,
        { message: `the session state is larger than ${MAX_SESSION_ARCHIVE_BYTES} bytes` },
        { connection: 'close' },
      );
    const { sessionId, turns } = headers.output;
    const restored = await port.restoreState(body.bytes, sessionId, turns);
    if (!restored.ok) return jsonResponse(restored.status, { message: restored.message });
    return jsonResponse(200, { restored: true, sessionId, turns, members: restored.members });
  });
  app.notFound(notFound);
  app.onError(failedRequest(port.log, 'prompt', { message: 'internal error' }));
  return app;
}

/** The NDJSON stream of a turn: its lines go to the caller as they come (see `textStream`). */
export function ndjsonStream(): { stream: ReadableStream<Uint8Array>; out: TurnOutput } {
  const body = textStream();
  const out: TurnOutput = {
    line: (text) => body.write(`${text}\n`),
    end(last) {
      if (last !== undefined) body.write(last);
      body.close();
    },
  };
  return { stream: body.stream, out };
}
