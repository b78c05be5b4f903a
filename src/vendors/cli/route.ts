// Vendor routing from the model (docs/design/reference-behaviour.md#vendor-routing-and-argv, plus an explicit Gemini
// branch; docs/reference/vendor-apis.md#models-and-prices).

/** Default model everywhere (defined once in the API layer). */
export { DEFAULT_MODEL } from '../../api/model.ts';

/** The agent CLIs a run pod can drive. */
export const VENDORS = ['claude', 'codex', 'opencode', 'gemini', 'exec'] as const;
export type Vendor = (typeof VENDORS)[number];

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
