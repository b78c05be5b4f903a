import { classifyEvent, isTerminal, type Vendor } from '../../vendors/cli/index.ts';

/** A terminal event was seen; `ok` tells whether the CLI reported success. */
export interface Terminal {
  readonly ok: boolean;
}

/**
 * Terminal-event detection for the supervisor (docs/design/reference-behaviour.md#terminal-events, with the vendor
 * rules of `src/vendors/cli`):
 * undefined unless the parsed line ends the CLI's run; `ok` is false for a failure terminal (e.g. a Claude result
 * with `is_error: true`). Pure.
 */
export function terminalOf(vendor: Vendor, value: unknown): Terminal | undefined {
  const { kind } = classifyEvent(vendor, value);
  return isTerminal(kind) ? { ok: kind === 'terminal-success' } : undefined;
}
