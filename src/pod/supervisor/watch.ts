import { lstat, open, realpath } from 'node:fs/promises';
import { posix } from 'node:path';
import * as v from 'valibot';
import { err, ok, type Result } from '../../shared/result.ts';

/** Largest watched file whose content is emitted (128 KiB); larger files get `reason: "too-large"`. */
export const MAX_WATCH_FILE_BYTES = 131072;
/** At most this many `output.watch` entries are honoured. */
export const MAX_WATCH_ENTRIES = 64;
/** The workspace root when `WORKSPACE_DIR` is unset. */
export const DEFAULT_WORKSPACE = '/workspace';

/** One `output.watch` entry: emit a file event named `event` for `path` after the agent exits. */
export interface WatchEntry {
  readonly event: string;
  readonly path: string;
}

/**
 * `{"kind":"file","event","path","content"}` or `{"kind":"file","event","path","reason"}`
 * (docs/design/reference-behaviour.md#file-events).
 */
export type FileEvent =
  | { readonly kind: 'file'; readonly event: string; readonly path: string; readonly content: string }
  | {
      readonly kind: 'file';
      readonly event: string;
      readonly path: string;
      readonly reason: 'missing' | 'too-large' | 'unreadable';
    };

const Entry = v.looseObject({ event: v.string(), path: v.string() });

/**
 * Parses `AGENT_WATCH`: entries need a non-empty string `event` and `path`; others are skipped with a warning.
 * Malformed JSON or a non-array gives no entries and a warning. Pure.
 */
export function parseWatch(text: string | undefined): { entries: WatchEntry[]; warnings: string[] } {
  const entries: WatchEntry[] = [];
  const warnings: string[] = [];
  const raw = (text ?? '').trim();
  if (raw === '') return { entries, warnings };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { entries, warnings: ['[supervisor] AGENT_WATCH is not valid JSON; no file events'] };
  }
  if (!Array.isArray(json))
    return { entries, warnings: ['[supervisor] AGENT_WATCH is not a JSON array; no file events'] };
  json.forEach((item, index) => {
    const parsed = v.safeParse(Entry, item);
    if (!parsed.success || parsed.output.event.trim() === '' || parsed.output.path.trim() === '') {
      warnings.push(`[supervisor] AGENT_WATCH[${index}] needs a non-empty event and path; skipping it`);
      return;
    }
    if (entries.length >= MAX_WATCH_ENTRIES) {
      warnings.push(
        `[supervisor] AGENT_WATCH[${index}] is over the limit of ${MAX_WATCH_ENTRIES} entries; skipping it`,
      );
      return;
    }
    entries.push({ event: parsed.output.event, path: parsed.output.path });
  });
  return { entries, warnings };
}

/** Normalizes a workspace root: absolute, no trailing slash (except `/` itself). Relative or empty → undefined. */
export function normalizeRoot(root: string): string | undefined {
  if (!posix.isAbsolute(root)) return undefined;
  const n = posix.normalize(root);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

/** True iff `path` (normalized, absolute) lies strictly below `root` (normalized, absolute). */
export function isStrictlyBelow(root: string, path: string): boolean {
  if (path === root) return false;
  return root === '/' ? path.startsWith('/') && path.length > 1 : path.startsWith(`${root}/`);
}

/**
 * Resolves a watch path against the workspace root (docs/design/reference-behaviour.md#file-events): relative paths
 * are joined to the root,
 * absolute ones taken as they are, both normalized; the result must lie strictly below the root, so `..` escapes,
 * absolute paths outside, NUL bytes and the root itself are refused. Pure (symlinks are checked by the reader).
 */
export function resolveWatchPath(root: string, path: string): Result<string, 'outside-workspace'> {
  if (path.includes('\0')) return err('outside-workspace');
  const resolved = posix.isAbsolute(path) ? posix.normalize(path) : posix.normalize(posix.join(root, path));
  const trimmed = resolved.length > 1 && resolved.endsWith('/') ? resolved.slice(0, -1) : resolved;
  return isStrictlyBelow(root, trimmed) ? ok(trimmed) : err('outside-workspace');
}

/** A watch entry that produced no event, and why (for the log). */
export interface RefusedWatch {
  readonly entry: WatchEntry;
  readonly why: string;
}

/**
 * Reads the watched files and builds their events, in entry order. Refused entries (outside the workspace,
 * lexically or through a symlink) produce no event and are returned in `refused`. Content is read from the
 * symlink-resolved file, at most `MAX_WATCH_FILE_BYTES`, decoded as UTF-8. Never throws.
 */
export async function collectFileEvents(
  root: string,
  entries: readonly WatchEntry[],
): Promise<{ events: FileEvent[]; refused: RefusedWatch[] }> {
  const events: FileEvent[] = [];
  const refused: RefusedWatch[] = [];
  let realRoot: string | undefined;
  try {
    realRoot = await realpath(root);
  } catch {
    realRoot = undefined;
  }
  for (const entry of entries) {
    const resolved = resolveWatchPath(root, entry.path);
    if (!resolved.ok) {
      refused.push({ entry, why: 'outside the workspace' });
      continue;
    }
    const path = resolved.value;
    const base = { kind: 'file' as const, event: entry.event, path };
    if (realRoot === undefined) {
      events.push({ ...base, reason: 'missing' });
      continue;
    }
    let real: string;
    try {
      real = await realpath(path);
    } catch (error) {
      const code = (error as { code?: string }).code;
      events.push({ ...base, reason: code === 'ENOENT' || code === 'ENOTDIR' ? 'missing' : 'unreadable' });
      continue;
    }
    if (!isStrictlyBelow(realRoot, real)) {
      refused.push({ entry, why: 'resolves outside the workspace through a symlink' });
      continue;
    }
    events.push({ ...base, ...(await readBounded(real)) });
  }
  return { events, refused };
}

async function readBounded(
  path: string,
): Promise<{ content: string } | { reason: 'missing' | 'too-large' | 'unreadable' }> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    // Checked before opening: opening a FIFO for reading would block until a writer appears.
    const pre = await lstat(path);
    if (!pre.isFile()) return { reason: 'missing' };
    if (pre.size > MAX_WATCH_FILE_BYTES) return { reason: 'too-large' };
    handle = await open(path, 'r');
    const st = await handle.stat();
    if (!st.isFile()) return { reason: 'missing' };
    if (st.size > MAX_WATCH_FILE_BYTES) return { reason: 'too-large' };
    const buffer = new Uint8Array(MAX_WATCH_FILE_BYTES + 1);
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    if (filled > MAX_WATCH_FILE_BYTES) return { reason: 'too-large' };
    return { content: new TextDecoder().decode(buffer.subarray(0, filled)) };
  } catch (error) {
    const code = (error as { code?: string }).code;
    return { reason: code === 'ENOENT' || code === 'EISDIR' ? 'missing' : 'unreadable' };
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
