import type { Env } from './env.ts';

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Parsed header lines plus how many lines were dropped as malformed (values are never reported). */
export interface HeaderLines {
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly dropped: number;
}

/**
 * Parses newline-separated `Name: value` lines (docs/design/reference-behaviour.md#http-sink-delivery): blank lines
 * dropped, split at the first `:`, both
 * sides trimmed. A line without `:`, with an invalid header name, an empty value or a control character is dropped
 * and counted. Pure.
 */
export function parseHeaderLines(text: string): HeaderLines {
  const headers: Array<readonly [string, string]> = [];
  let dropped = 0;
  for (const rawLine of text.split(/\r?\n/)) {
    if (rawLine.trim() === '') continue;
    const colon = rawLine.indexOf(':');
    const name = colon === -1 ? '' : rawLine.slice(0, colon).trim();
    const value = colon === -1 ? '' : rawLine.slice(colon + 1).trim();
    if (!TOKEN.test(name) || value === '' || /[\x00-\x08\x0a-\x1f\x7f]/.test(value)) {
      dropped += 1;
      continue;
    }
    headers.push([name, value]);
  }
  return { headers, dropped };
}

/** Header lines from the env var named `secretName`; an unset or empty variable gives no headers (never fatal). */
export function headersFromSecretEnv(env: Env, secretName: string | undefined): HeaderLines {
  if (!secretName) return { headers: [], dropped: 0 };
  // Strings only: a name like `constructor` or `toString` reads what the env object inherits, a function.
  const value: unknown = env[secretName];
  return parseHeaderLines(typeof value === 'string' ? value : '');
}
