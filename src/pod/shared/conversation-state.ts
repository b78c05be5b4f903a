/**
 * Where a vendor CLI keeps its conversation state, relative to `$HOME` (reference §7.8, plus our Gemini vendor).
 * Undefined for vendors without resumable local state (opencode, exec, unknown names): no restore, no save.
 */
export function conversationStateDir(vendor: string): string | undefined {
  switch (vendor) {
    case 'claude':
      return '.claude/projects';
    case 'codex':
      return '.codex/sessions';
    case 'gemini':
      return '.gemini/tmp';
    default:
      return undefined;
  }
}
