/** The agent CLI families the supervisor knows how to read. */
export type CliVendor = 'claude' | 'codex' | 'opencode' | 'gemini' | 'exec';

/**
 * Routes a model name to the CLI that runs it (reference §9, plus an explicit Gemini branch): on the lowercased
 * name, `exec` → exec; contains `opencode` → opencode; contains `codex` or starts with `gpt`, `o1`, `o3`, `o4` →
 * codex; starts with `gemini` → gemini; anything else, empty included, → claude. Pure.
 */
export function vendorForModel(model: string): CliVendor {
  const m = model.trim().toLowerCase();
  if (m === 'exec') return 'exec';
  if (m.includes('opencode')) return 'opencode';
  if (m.includes('codex') || /^(gpt|o1|o3|o4)/.test(m)) return 'codex';
  if (m.startsWith('gemini')) return 'gemini';
  return 'claude';
}
