// The tokens a call is charged when it is let go, before its usage is known (docs/design/gateway.md#rate-limits),
// pure: its input guessed from the body's size (4 bytes a token), plus the most output it asks for (Anthropic
// `max_tokens`; OpenAI Responses `max_output_tokens`, Chat Completions `max_completion_tokens` or `max_tokens`;
// Gemini `generationConfig.maxOutputTokens`), else `DEFAULT_OUTPUT_TOKENS`. Calls without usage (token counts,
// model lists) are charged none. The measured usage corrects it when the call ends (`measuredTokens`).
import type { UsageApi } from '../routes.ts';
import type { Tokens } from '../usage.ts';

export const BYTES_PER_TOKEN = 4;
/** The output charged for a call that states no maximum. */
export const DEFAULT_OUTPUT_TOKENS = 1024;

const count = (x: unknown): number | undefined =>
  typeof x === 'number' && Number.isFinite(x) && x >= 0 ? Math.floor(x) : undefined;

const field = (o: unknown, name: string): unknown =>
  typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[name] : undefined;

function maxOutput(api: UsageApi, body: unknown): number | undefined {
  switch (api) {
    case 'anthropic-messages':
      return count(field(body, 'max_tokens'));
    case 'openai-responses':
      return count(field(body, 'max_output_tokens'));
    case 'openai-chat':
      return count(field(body, 'max_completion_tokens')) ?? count(field(body, 'max_tokens'));
    case 'gemini':
      return count(field(field(body, 'generationConfig'), 'maxOutputTokens'));
  }
}

/** The estimate for a call on a route with usage `api` (none: 0), whose body is `bytes` long and parses to `json`. */
export function estimateTokens(api: UsageApi | undefined, bytes: number, json: unknown): number {
  if (api === undefined) return 0;
  return Math.ceil(bytes / BYTES_PER_TOKEN) + (maxOutput(api, json) ?? DEFAULT_OUTPUT_TOKENS);
}

/** What a call's measured usage counts against tokens per minute: everything but cache reads. */
export function measuredTokens(t: Tokens): number {
  return t.input + t.output + t.cacheWrite;
}
