// Reading the usage of a model call from its answer (docs/design/gateway.md#metering), pure: per wire protocol, from
// a whole JSON body or from the events of a stream fed one by one, normalised to input (neither read from nor written
// to the cache), output (reasoning included), cache reads and cache writes. Field names from the vendors' SDK types:
// @anthropic-ai/sdk `Usage` and `MessageDeltaUsage` (the stream's counts are cumulative), openai `ResponseUsage` and
// `CompletionUsage` (cached and cache-write tokens are a part of the input count), @google/genai
// `GenerateContentResponseUsageMetadata` (cached tokens are a part of the prompt count; tool-use prompt tokens and
// thoughts are billed as input and output).

import * as v from 'valibot';
import type { UsageApi } from './routes.ts';
import type { SseEvent } from './sse.ts';

/** Tokens of one call, normalised. */
export interface Tokens {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
}

export const NO_TOKENS: Tokens = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

/** A count as a vendor sends it: a number, null or absent; anything else reads as absent. */
const count = v.fallback(v.optional(v.nullable(v.number())), undefined);
const n = (x: number | null | undefined): number =>
  typeof x === 'number' && Number.isFinite(x) && x > 0 ? Math.floor(x) : 0;

const AnthropicUsage = v.object({
  input_tokens: count,
  output_tokens: count,
  cache_read_input_tokens: count,
  cache_creation_input_tokens: count,
});
type AnthropicUsage = v.InferOutput<typeof AnthropicUsage>;

const ResponsesUsage = v.object({
  input_tokens: count,
  output_tokens: count,
  input_tokens_details: v.fallback(
    v.optional(v.nullable(v.object({ cached_tokens: count, cache_write_tokens: count }))),
    undefined,
  ),
});

const ChatUsage = v.object({
  prompt_tokens: count,
  completion_tokens: count,
  prompt_tokens_details: v.fallback(
    v.optional(v.nullable(v.object({ cached_tokens: count, cache_write_tokens: count }))),
    undefined,
  ),
});

const GeminiUsage = v.object({
  promptTokenCount: count,
  candidatesTokenCount: count,
  cachedContentTokenCount: count,
  thoughtsTokenCount: count,
  toolUsePromptTokenCount: count,
});

const parsed = <T>(schema: v.GenericSchema<unknown, T>, u: unknown): T | undefined => {
  const r = v.safeParse(schema, u);
  return r.success ? r.output : undefined;
};

const field = (u: unknown, key: string): unknown =>
  typeof u === 'object' && u !== null && !Array.isArray(u) ? (u as Record<string, unknown>)[key] : undefined;

function fromAnthropic(u: AnthropicUsage): Tokens {
  return {
    input: n(u.input_tokens),
    output: n(u.output_tokens),
    cacheRead: n(u.cache_read_input_tokens),
    cacheWrite: n(u.cache_creation_input_tokens),
  };
}

/** `input` less the cached and cache-written parts it includes (never below 0). */
function inputLess(input: number, cacheRead: number, cacheWrite: number): number {
  return Math.max(0, input - cacheRead - cacheWrite);
}

/** OpenAI's counts (Responses and Chat Completions name them differently): cached and cache-written are in input. */
function openaiTokens(
  input: number | null | undefined,
  output: number | null | undefined,
  details:
    | { cached_tokens?: number | null | undefined; cache_write_tokens?: number | null | undefined }
    | null
    | undefined,
): Tokens {
  const cacheRead = n(details?.cached_tokens);
  const cacheWrite = n(details?.cache_write_tokens);
  return { input: inputLess(n(input), cacheRead, cacheWrite), output: n(output), cacheRead, cacheWrite };
}

function fromResponses(u: unknown): Tokens | undefined {
  const x = parsed(ResponsesUsage, u);
  return x && openaiTokens(x.input_tokens, x.output_tokens, x.input_tokens_details);
}

function fromChat(u: unknown): Tokens | undefined {
  const x = parsed(ChatUsage, u);
  return x && openaiTokens(x.prompt_tokens, x.completion_tokens, x.prompt_tokens_details);
}

function fromGemini(u: unknown): Tokens | undefined {
  const x = parsed(GeminiUsage, u);
  if (x === undefined) return undefined;
  const cacheRead = n(x.cachedContentTokenCount);
  return {
    input: inputLess(n(x.promptTokenCount) + n(x.toolUsePromptTokenCount), cacheRead, 0),
    output: n(x.candidatesTokenCount) + n(x.thoughtsTokenCount),
    cacheRead,
    cacheWrite: 0,
  };
}

/**
 * The usage of a whole JSON answer of `api`; undefined when it carries none. A Gemini `streamGenerateContent`
 * answered without `alt=sse` is a JSON array of chunks: its last chunk with `usageMetadata` counts.
 */
export function usageFromBody(api: UsageApi, body: unknown): Tokens | undefined {
  switch (api) {
    case 'anthropic-messages': {
      const u = parsed(AnthropicUsage, field(body, 'usage'));
      return u === undefined ? undefined : fromAnthropic(u);
    }
    case 'openai-responses':
      return fromResponses(field(body, 'usage'));
    case 'openai-chat':
      return fromChat(field(body, 'usage'));
    case 'gemini': {
      const chunks = Array.isArray(body) ? body : [body];
      const last = chunks.findLast((c) => field(c, 'usageMetadata') !== undefined);
      return last === undefined ? undefined : fromGemini(field(last, 'usageMetadata'));
    }
  }
}

/** Reads a stream's usage from its events, one at a time; `tokens()` is what was seen so far. */
export interface StreamMeter {
  event(e: SseEvent): void;
  tokens(): Tokens | undefined;
}

const jsonOf = (data: string): unknown => {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
};

/** Anthropic: `message_start.message.usage`, then every `message_delta.usage` (cumulative; null keeps the last). */
function anthropicMeter(): StreamMeter {
  let usage: AnthropicUsage | undefined;
  return {
    event(e) {
      const body = jsonOf(e.data);
      const type = field(body, 'type');
      const raw =
        type === 'message_start'
          ? field(field(body, 'message'), 'usage')
          : type === 'message_delta'
            ? field(body, 'usage')
            : undefined;
      const next = raw === undefined ? undefined : parsed(AnthropicUsage, raw);
      if (next === undefined) return;
      const merged: Record<string, number | null | undefined> = { ...usage };
      for (const [k, value] of Object.entries(next)) if (typeof value === 'number') merged[k] = value;
      usage = merged as AnthropicUsage;
    },
    tokens: () => (usage === undefined ? undefined : fromAnthropic(usage)),
  };
}

/** A meter that keeps the last usage `pick` finds in an event's JSON. */
function lastUsageMeter(pick: (body: unknown) => Tokens | undefined): StreamMeter {
  let last: Tokens | undefined;
  return {
    event(e) {
      if (e.data === '[DONE]') return;
      const found = pick(jsonOf(e.data));
      if (found !== undefined) last = found;
    },
    tokens: () => last,
  };
}

/** OpenAI Responses' terminal events (completed, incomplete, failed) carry `response.usage`. */
const RESPONSES_FINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** The meter of a stream of `api`. */
export function streamMeter(api: UsageApi): StreamMeter {
  switch (api) {
    case 'anthropic-messages':
      return anthropicMeter();
    case 'openai-responses':
      return lastUsageMeter((body) => {
        const type = field(body, 'type');
        if (typeof type !== 'string' || !RESPONSES_FINAL.has(type)) return undefined;
        const usage = field(field(body, 'response'), 'usage');
        return usage === undefined || usage === null ? undefined : fromResponses(usage);
      });
    case 'openai-chat':
      return lastUsageMeter((body) => {
        const usage = field(body, 'usage');
        return usage === undefined || usage === null ? undefined : fromChat(usage);
      });
    case 'gemini':
      return lastUsageMeter((body) => {
        const usage = field(body, 'usageMetadata');
        return usage === undefined || usage === null ? undefined : fromGemini(usage);
      });
  }
}
