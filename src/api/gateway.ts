// What the controller and the model gateway tell each other about a run (docs/design/gateway.md): the grant the
// controller records on the Agent's status when a run starts behind the gateway (which key of `agent-secrets` holds
// each vendor's key, which models the policy allows), and the usage the gateway measured, which it writes as an
// annotation on the Agent (the controller, the one writer of status, copies it to `status.tokenUsage`).

import * as v from 'valibot';

/** The vendors whose model APIs the gateway forwards. */
export const GATEWAY_VENDORS = ['anthropic', 'openai', 'gemini'] as const;
export type GatewayVendor = (typeof GATEWAY_VENDORS)[number];

/**
 * The environment variables the vendor CLIs read a key from, and the vendor each names. With the gateway on, a run
 * pod gets the run's gateway credential under these names instead of a key.
 */
export const VENDOR_KEY_ENV: Readonly<Record<string, GatewayVendor>> = {
  ANTHROPIC_API_KEY: 'anthropic',
  ANTHROPIC_AUTH_TOKEN: 'anthropic',
  OPENAI_API_KEY: 'openai',
  CODEX_API_KEY: 'openai',
  GEMINI_API_KEY: 'gemini',
  GOOGLE_API_KEY: 'gemini',
  // OpenCode's Google provider (@ai-sdk/google) reads this one.
  GOOGLE_GENERATIVE_AI_API_KEY: 'gemini',
};

/** The base-URL variables the CLIs read, per vendor, and the path under the gateway's URL each is set to. */
export const VENDOR_BASE_URL_ENV: Readonly<
  Record<GatewayVendor, { readonly name: string; readonly path: string }>
> = {
  anthropic: { name: 'ANTHROPIC_BASE_URL', path: '/anthropic' },
  openai: { name: 'OPENAI_BASE_URL', path: '/openai/v1' },
  gemini: { name: 'GOOGLE_GEMINI_BASE_URL', path: '/gemini' },
};

/** The Secret (in the controller's namespace) holding the key run credentials are minted with, and its field. */
export const GATEWAY_KEY_SECRET = 'agent-controller-gateway';
export const GATEWAY_KEY_FIELD = 'hmac-key';

/** The annotation the gateway keeps a run's measured usage in (JSON, {@link GatewayUsageSchema}). */
export const ANNOTATION_GATEWAY_USAGE = 'agents.re-cinq.com/gateway-usage';

const tokens = v.pipe(v.number(), v.integer(), v.minValue(0));

/** Tokens of one model, normalised across vendors: `input` excludes cache reads and writes. */
export const ModelUsageSchema = v.object({
  calls: tokens,
  input: tokens,
  output: tokens,
  cacheRead: tokens,
  cacheWrite: tokens,
});
export type ModelUsage = v.InferOutput<typeof ModelUsageSchema>;

/** The annotation's value: per model, what the gateway measured for the run so far. */
export const GatewayUsageSchema = v.object({
  models: v.record(v.string(), ModelUsageSchema),
});
export type GatewayUsage = v.InferOutput<typeof GatewayUsageSchema>;

/** `status.gateway`: what the gateway lets this run do, recorded by the controller when the run starts. */
export const GatewayGrantSchema = v.pipe(
  v.object({
    keys: v.pipe(
      v.object({
        anthropic: v.optional(
          v.pipe(v.string(), v.description('Key of agent-secrets holding the Anthropic key.')),
        ),
        openai: v.optional(v.pipe(v.string(), v.description('Key of agent-secrets holding the OpenAI key.'))),
        gemini: v.optional(v.pipe(v.string(), v.description('Key of agent-secrets holding the Gemini key.'))),
      }),
      v.description(
        'Per vendor, the key of the Secret agent-secrets whose value the gateway sends for this run.',
      ),
    ),
    models: v.optional(
      v.pipe(
        v.array(v.string()),
        v.description('Model globs the gateway forwards for this run (from the AgentPolicy); absent: any.'),
      ),
    ),
    budget: v.optional(
      v.pipe(
        v.object({
          usd: v.optional(
            v.pipe(
              v.string(),
              v.regex(/^\d+(\.\d+)?$/),
              v.description(
                'Most US dollars (a decimal string) the run may spend, priced as status.costEstimate is.',
              ),
            ),
          ),
          tokens: v.optional(
            v.pipe(
              v.number(),
              v.integer(),
              v.minValue(0),
              v.description('Most tokens (all kinds) the run may use.'),
            ),
          ),
        }),
        v.description(
          "The run's cap (the stricter of its AgentPolicy's and its Station's per-run budgets): once the usage measured for the run reaches it, the gateway refuses the run's calls.",
        ),
      ),
    ),
  }),
  v.description(
    'The run calls its models through the model gateway: it holds no vendor key, and the gateway measures its usage.',
  ),
);
export type GatewayGrant = v.InferOutput<typeof GatewayGrantSchema>;

/** The usage annotation's value read: its JSON parsed and checked, or why it is not the gateway's usage. */
export function parseGatewayUsage(
  raw: string,
): { readonly ok: true; readonly usage: GatewayUsage } | { readonly ok: false; readonly message: string } {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { ok: false, message: `annotation ${ANNOTATION_GATEWAY_USAGE} is not JSON` };
  }
  const parsed = v.safeParse(GatewayUsageSchema, value);
  if (!parsed.success) {
    return { ok: false, message: `annotation ${ANNOTATION_GATEWAY_USAGE} is not the gateway's usage` };
  }
  return { ok: true, usage: parsed.output };
}
