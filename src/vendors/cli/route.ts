// Vendor routing from the model (reference-system.md 9, plus an explicit Gemini branch; vendors.md 5).

/** Default model everywhere: used when neither the Agent nor its AgentDefinition names one. */
export const DEFAULT_MODEL = 'claude-opus-5-5';

/** The agent CLIs a run pod can drive. */
export const VENDORS = ['claude', 'codex', 'opencode', 'gemini', 'exec'] as const;
export type Vendor = (typeof VENDORS)[number];

/**
 * The model a run uses: the Agent's `spec.model`, else the AgentDefinition's, else {@link DEFAULT_MODEL}.
 * Empty and whitespace-only strings count as unset. Never returns an empty string.
 */
export function resolveModel(agentModel: string | undefined, definitionModel: string | undefined): string {
  for (const m of [agentModel, definitionModel]) if (m !== undefined && m.trim() !== '') return m;
  return DEFAULT_MODEL;
}

/**
 * The vendor CLI for a model, decided on the lowercased model in this order: `exec` exactly → exec; contains
 * `opencode` → opencode; contains `codex` or starts with `gpt`, `o1`, `o3`, `o4` → codex; contains `gemini` →
 * gemini; anything else (the empty string included) → claude.
 */
export function vendorForModel(model: string): Vendor {
  const m = model.trim().toLowerCase();
  if (m === 'exec') return 'exec';
  if (m.includes('opencode')) return 'opencode';
  if (m.includes('codex') || ['gpt', 'o1', 'o3', 'o4'].some((p) => m.startsWith(p))) return 'codex';
  if (m.includes('gemini')) return 'gemini';
  return 'claude';
}
