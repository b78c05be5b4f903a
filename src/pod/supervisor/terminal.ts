import { classifyEvent, isTerminal, type Vendor } from '../../vendors/cli/index.ts';

/** A terminal event was seen; `ok` tells whether the CLI reported success, `message` why it did not. */
export interface Terminal {
  readonly ok: boolean;
  /** The CLI's own error message on a failure terminal, when its event carries one. */
  readonly message?: string;
}

/** The longest CLI error message kept (it goes into the run report and `status.failureReason`). */
export const MAX_FAILURE_MESSAGE_CHARS = 512;

const obj = (u: unknown): Record<string, unknown> | undefined =>
  typeof u === 'object' && u !== null && !Array.isArray(u) ? (u as Record<string, unknown>) : undefined;
const text = (u: unknown): string | undefined =>
  typeof u === 'string' && u.trim() !== '' ? u.trim() : undefined;

/**
 * The error message a failure terminal event of `vendor` carries (docs/reference/vendor-clis.md): Claude Code's
 * `result` text of an `is_error` result, Codex's `turn.failed` `error.message`, Gemini CLI's `result` `error.message`,
 * OpenCode's `error` line `error.data.message` (else `error.message`). Agent output is untrusted: a string only, cut
 * to {@link MAX_FAILURE_MESSAGE_CHARS} characters.
 */
export function failureMessageOf(vendor: Vendor, value: unknown): string | undefined {
  const e = obj(value);
  if (e === undefined) return undefined;
  let message: string | undefined;
  switch (vendor) {
    case 'claude':
    case 'exec':
      message = text(e.result);
      break;
    case 'codex':
    case 'gemini':
      message = text(obj(e.error)?.message);
      break;
    case 'opencode': {
      const error = obj(e.error);
      message = text(obj(error?.data)?.message) ?? text(error?.message);
      break;
    }
  }
  return message === undefined ? undefined : Array.from(message).slice(0, MAX_FAILURE_MESSAGE_CHARS).join('');
}

/**
 * Terminal-event detection for the supervisor (docs/design/reference-behaviour.md#terminal-events, with the vendor
 * rules of `src/vendors/cli`):
 * undefined unless the parsed line ends the CLI's run; `ok` is false for a failure terminal (e.g. a Claude result
 * with `is_error: true`). Pure.
 */
export function terminalOf(vendor: Vendor, value: unknown): Terminal | undefined {
  const { kind } = classifyEvent(vendor, value);
  if (!isTerminal(kind)) return undefined;
  if (kind === 'terminal-success') return { ok: true };
  const message = failureMessageOf(vendor, value);
  return message === undefined ? { ok: false } : { ok: false, message };
}
