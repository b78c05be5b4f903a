// A namespace's configured rate limits (docs/design/gateway.md#rate-limits): the annotation
// `agents.re-cinq.com/rate-limits` of its Secret agent-secrets, JSON keyed by the Secret's key names:
// `{"ANTHROPIC_API_KEY": {"requestsPerMinute": 50, "tokensPerMinute": 40000}}`. Read with the keys (the gateway
// reads that Secret anyway). Pure; a value that does not parse is reported and ignored as a whole, an entry that
// does not is reported and left out.
import * as v from 'valibot';
import type { KeyLimits } from './buckets.ts';

export const RATE_LIMITS_ANNOTATION = 'agents.re-cinq.com/rate-limits';

const perMinute = v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)));
const LimitsSchema = v.strictObject({ requestsPerMinute: perMinute, tokensPerMinute: perMinute });

/** The limits per key name, and what was wrong with the annotation (empty when nothing). */
export interface ParsedLimits {
  readonly byKey: ReadonlyMap<string, KeyLimits>;
  readonly problems: readonly string[];
}

export function parseRateLimits(text: string | undefined): ParsedLimits {
  const byKey = new Map<string, KeyLimits>();
  if (text === undefined || text.trim() === '') return { byKey, problems: [] };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { byKey, problems: [`${RATE_LIMITS_ANNOTATION} is not JSON`] };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return { byKey, problems: [`${RATE_LIMITS_ANNOTATION} is not a JSON object keyed by key names`] };
  const problems: string[] = [];
  for (const [name, value] of Object.entries(json)) {
    const p = v.safeParse(LimitsSchema, value);
    if (p.success) byKey.set(name, p.output);
    else
      problems.push(
        `${RATE_LIMITS_ANNOTATION}[${JSON.stringify(name)}]: ${p.issues[0]?.message ?? 'invalid'} (want {requestsPerMinute, tokensPerMinute}, whole numbers >= 1)`,
      );
  }
  return { byKey, problems };
}
