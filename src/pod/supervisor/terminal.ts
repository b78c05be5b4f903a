import type { CliVendor } from './vendor.ts';

/** A terminal event was seen; `ok` tells whether the CLI reported success. */
export interface Terminal {
  readonly ok: boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Terminal-event detection (reference §7.4, plus Gemini): Codex ends with `{"type":"turn.completed"}` (always ok);
 * Gemini with `{"type":"result"}`, ok iff `status` is `"success"`; every other vendor with `{"type":"result"}`, ok
 * unless `is_error` is `true`. Non-objects and anything else are never terminal. Pure.
 */
export function terminalOf(vendor: CliVendor, value: unknown): Terminal | undefined {
  if (!isObject(value)) return undefined;
  switch (vendor) {
    case 'codex':
      return value.type === 'turn.completed' ? { ok: true } : undefined;
    case 'gemini':
      return value.type === 'result' ? { ok: value.status === 'success' } : undefined;
    case 'claude':
    case 'opencode':
    case 'exec':
      return value.type === 'result' ? { ok: value.is_error !== true } : undefined;
  }
}
