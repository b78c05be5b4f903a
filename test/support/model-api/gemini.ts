// A fake Gemini API (Generative Language) on 127.0.0.1 that plays a script (./script.ts), as Gemini CLI and
// @google/genai use it: `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`,
// `:countTokens`, `GET /v1beta/models`, and the same under `/v1/` (@google/genai 3.6.1's default API version). Protocol facts from @google/genai 3.6.1's types (`GenerateContentResponse`,
// `Candidate`, `Part`, `GenerateContentResponseUsageMetadata`) and its SSE reader; proven by gemini.test.ts.
//
// Keys as the real API answers them: `x-goog-api-key: <key>` or `?key=<key>`; none → 403 PERMISSION_DENIED, a wrong
// one → 400 INVALID_ARGUMENT with an ErrorInfo `reason: API_KEY_INVALID` (Google's API has no 401 for API keys).
// Errors: `{error: {code, message, status, details?}}`. A streamed answer is one SSE `data:` chunk per piece: the
// thought part (`thought: true`), the text in three chunks, the functionCall part whole (with `id` and a
// `thoughtSignature`), the last chunk carrying `finishReason: STOP` and `usageMetadata` (total = input + output +
// reasoning). Tool results are recorded as `{id: functionResponse.id ?? name, content: JSON of its response}`. An
// error turn with `inStream` sends one text chunk then an `error` payload.

import type { ServerResponse } from 'node:http';
import {
  type AnswerTurn,
  asArray,
  callId,
  chunks,
  countModelTurns,
  DEFAULT_USAGE,
  type ErrorTurn,
  type Incoming,
  isObject,
  type ModelApiFake,
  type ModelApiOptions,
  playFor,
  type RequestFacts,
  type ScriptUsage,
  SseWriter,
  scriptsOf,
  sendJson,
  serveLoopback,
} from './script.ts';

const STATUS: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

export interface GeminiFakeOptions extends ModelApiOptions {
  /** What `countTokens` answers as `totalTokens` (default 100). */
  readonly countTokens?: number;
}

/** Google's error envelope. */
export function googleError(code: number, message: string, details?: unknown[]): unknown {
  return {
    error: {
      code,
      message,
      status: STATUS[code] ?? 'UNKNOWN',
      ...(details === undefined ? {} : { details }),
    },
  };
}

/** Facts of a generateContent body (the model comes from the path). */
export function geminiFacts(
  body: unknown,
  model: string,
  stream: boolean,
): RequestFacts & { modelTurns: number } {
  const b = isObject(body) ? body : {};
  const contents = asArray(b.contents);
  const toolResults: { id: string; content: string }[] = [];
  for (const c of contents) {
    for (const part of isObject(c) ? asArray(c.parts) : []) {
      if (isObject(part) && isObject(part.functionResponse)) {
        const fr = part.functionResponse;
        toolResults.push({ id: String(fr.id ?? fr.name), content: JSON.stringify(fr.response ?? null) });
      }
    }
  }
  return {
    model,
    stream,
    tools: asArray(b.tools).flatMap((t) =>
      isObject(t)
        ? asArray(t.functionDeclarations).flatMap((f) => (isObject(f) ? [String(f.name)] : []))
        : [],
    ),
    toolResults,
    modelTurns: countModelTurns(contents.map((c) => (isObject(c) && c.role === 'model' ? 'model' : 'other'))),
  };
}

const usageOf = (u: ScriptUsage) => ({
  promptTokenCount: u.input,
  candidatesTokenCount: u.output,
  totalTokenCount: u.input + u.output + (u.reasoning ?? 0),
  ...(u.cacheRead === undefined ? {} : { cachedContentTokenCount: u.cacheRead }),
  ...(u.reasoning === undefined ? {} : { thoughtsTokenCount: u.reasoning }),
});

/** The parts of an answer, one array per streamed chunk. */
function partChunks(turn: AnswerTurn, step: number): Record<string, unknown>[][] {
  const out: Record<string, unknown>[][] = [];
  if (turn.thinking !== undefined) out.push([{ text: turn.thinking, thought: true }]);
  if (turn.text !== undefined) for (const text of chunks(turn.text, 3)) out.push([{ text }]);
  if (turn.toolCall !== undefined) {
    const functionCall = {
      id: callId(turn, step, 'call_fake'),
      name: turn.toolCall.name,
      args: turn.toolCall.input,
    };
    out.push([{ functionCall, thoughtSignature: Buffer.from(`sig-step-${step}`).toString('base64') }]);
  }
  return out;
}

function responseOf(step: number, model: string, parts: unknown[], last: AnswerTurn | undefined) {
  return {
    candidates: [
      {
        content: { role: 'model', parts },
        index: 0,
        ...(last === undefined ? {} : { finishReason: 'STOP' }),
      },
    ],
    ...(last === undefined ? {} : { usageMetadata: usageOf(last.usage ?? DEFAULT_USAGE) }),
    modelVersion: model,
    responseId: `resp-fake-step${step}`,
  };
}

function answerError(
  res: ServerResponse,
  turn: ErrorTurn,
  stream: boolean,
  model: string,
  step: number,
): void {
  const { status, retryAfter, inStream } = turn.error;
  const message = turn.error.message ?? `scripted error ${status}`;
  if (inStream === true && stream) {
    const sse = new SseWriter(res);
    sse.send(undefined, responseOf(step, model, [{ text: '…' }], undefined));
    sse.send(undefined, googleError(status, message));
    sse.end();
    return;
  }
  const details =
    status === 429 && retryAfter !== undefined
      ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfter}s` }]
      : undefined;
  sendJson(res, status, googleError(status, message, details), {
    ...(retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) }),
  });
}

const MODEL_PATH = /^\/(?:v1|v1beta)\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;

/** Starts the fake; its `baseUrl` is what `httpOptions.baseUrl` and `GOOGLE_GEMINI_BASE_URL` take. */
export async function startGeminiModel(options: GeminiFakeOptions = {}): Promise<ModelApiFake> {
  const apiKey = options.apiKey ?? 'test-key-gemini';
  const models = options.models ?? ['gemini-3.5-pro'];
  const scripts = scriptsOf(options);
  const keyOf = (i: Incoming): string | undefined => i.headers['x-goog-api-key'] ?? i.query.key;
  const refuse = (i: Incoming, facts: RequestFacts): boolean => {
    const key = keyOf(i);
    if (key === apiKey) return false;
    i.record(key, facts);
    if (key === undefined) {
      sendJson(
        i.res,
        403,
        googleError(403, "Method doesn't allow unregistered callers. Please use an API key."),
      );
      return true;
    }
    const reason = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID' };
    sendJson(i.res, 400, googleError(400, 'API key not valid. Please pass a valid API key.', [reason]));
    return true;
  };

  const server = await serveLoopback(
    (i) => {
      const m = MODEL_PATH.exec(i.path);
      if (i.method === 'POST' && m !== null) {
        const model = decodeURIComponent(m[1] ?? '');
        const stream = m[2] === 'streamGenerateContent';
        const facts = geminiFacts(i.body, model, stream);
        if (refuse(i, facts)) return true;
        if (m[2] === 'countTokens') {
          i.record(keyOf(i), facts);
          sendJson(i.res, 200, { totalTokens: options.countTokens ?? 100 });
          return true;
        }
        const play = playFor(scripts, i.body, facts.modelTurns);
        i.record(keyOf(i), facts, play.step);
        if (play.kind === 'exhausted') {
          sendJson(i.res, 400, googleError(400, `script exhausted at step ${play.step}`));
        } else if (play.kind === 'error') {
          answerError(i.res, play.turn, stream, model, play.step);
        } else if (stream && i.query.alt === 'sse') {
          const sse = new SseWriter(i.res);
          const parts = partChunks(play.turn, play.step);
          parts.forEach((p, n) => {
            sse.send(
              undefined,
              responseOf(play.step, model, p, n === parts.length - 1 ? play.turn : undefined),
            );
          });
          sse.end();
        } else if (stream) {
          // Without alt=sse the real API streams a JSON array; no client of ours asks for it.
          sendJson(i.res, 400, googleError(400, 'fake: streamGenerateContent is served with alt=sse only'));
        } else {
          const parts = partChunks(play.turn, play.step).flat();
          const joined: unknown[] = [];
          for (const p of parts) {
            const prev = joined.at(-1);
            // One text part for the whole text, as the non-streamed API answers.
            if (
              isObject(prev) &&
              typeof prev.text === 'string' &&
              prev.thought === undefined &&
              typeof p.text === 'string' &&
              p.thought === undefined
            ) {
              prev.text += p.text;
            } else joined.push({ ...p });
          }
          sendJson(i.res, 200, responseOf(play.step, model, joined, play.turn));
        }
        return true;
      }
      if (i.method === 'GET' && (i.path === '/v1beta/models' || i.path === '/v1/models')) {
        if (refuse(i, {})) return true;
        i.record(keyOf(i), {});
        const list = models.map((id) => ({
          name: `models/${id}`,
          version: '001',
          displayName: id,
          inputTokenLimit: 1_048_576,
          outputTokenLimit: 65_536,
          supportedGenerationMethods: ['generateContent', 'countTokens'],
        }));
        sendJson(i.res, 200, { models: list });
        return true;
      }
      return false;
    },
    (i) => {
      i.record(keyOf(i), {});
      sendJson(i.res, 404, googleError(404, `fake: no endpoint ${i.method} ${i.path}`));
    },
    options.host,
  );
  return {
    baseUrl: `http://${server.host}:${server.port}`,
    apiKey,
    requests: server.requests,
    close: server.close,
  };
}
