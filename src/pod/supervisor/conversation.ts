import { lstat, readdir, readFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Logger } from '../../shared/log.ts';
import {
  type Env,
  headersFromSecretEnv,
  postWithRetry,
  type RetryConfig,
  redactUrl,
  scrubUrl,
} from '../shared/index.ts';
import type { ConversationSave } from './config.ts';
import { buildTar, type TarEntry } from './tar.ts';

/** The archive of a conversation may hold at most this many bytes of file content (64 MiB). */
export const MAX_CONVERSATION_BYTES = 64 * 1024 * 1024;
/** At most this many members are archived. */
export const MAX_CONVERSATION_ENTRIES = 100_000;

/** Why a tree could not be archived. */
export type CollectError = 'missing' | 'too-large';

/** What a walk may still take: content bytes and members, shared by the trees of one archive. */
export interface WalkBudget {
  bytes: number;
  entries: number;
  /** Symlinks (and other non-regular files) seen and left out. */
  skipped: number;
}

/** A budget of the conversation caps ({@link MAX_CONVERSATION_BYTES}, {@link MAX_CONVERSATION_ENTRIES}). */
export function conversationBudget(): WalkBudget {
  return { bytes: MAX_CONVERSATION_BYTES, entries: MAX_CONVERSATION_ENTRIES, skipped: 0 };
}

/**
 * Adds the tree at `top` (a directory) to `entries`: directories and regular files only (symlinks and others are
 * counted in `budget.skipped` and never followed), each named `nameOf(relative path from top)` (`''` for top itself).
 * `too-large` once the budget is spent.
 */
export async function walkTree(
  top: string,
  nameOf: (relative: string) => string,
  entries: TarEntry[],
  budget: WalkBudget,
): Promise<'too-large' | undefined> {
  const walk = async (abs: string): Promise<'too-large' | undefined> => {
    const st = await lstat(abs);
    const name = nameOf(posix.relative(top, abs));
    const mtimeSec = Math.floor(st.mtimeMs / 1000);
    if (st.isDirectory()) {
      if (--budget.entries < 0) return 'too-large';
      entries.push({
        type: 'dir',
        name: name.endsWith('/') ? name : `${name}/`,
        mode: st.mode & 0o7777,
        mtimeSec,
      });
      const children = await readdir(abs);
      for (const child of children) {
        const r = await walk(posix.join(abs, child));
        if (r) return r;
      }
    } else if (st.isFile()) {
      budget.bytes -= st.size;
      if (budget.bytes < 0 || --budget.entries < 0) return 'too-large';
      const data = new Uint8Array(await readFile(abs));
      entries.push({ type: 'file', name, mode: st.mode & 0o7777, mtimeSec, data });
    } else budget.skipped++;
    return undefined;
  };
  return walk(top);
}

/** Whether `path` is a directory (not a symlink to one). */
export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** Sorts archive members by name. */
export function byName(entries: TarEntry[]): TarEntry[] {
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Collects `home/stateDir` for archiving: directories and regular files only (symlinks and others skipped, never
 * followed), names relative to `home`, sorted by name. Fails with `missing` when the state dir is not a directory
 * and `too-large` past the size or count caps.
 */
export async function collectTree(home: string, stateDir: string): Promise<TarEntry[] | CollectError> {
  const top = posix.join(home, stateDir);
  if (!(await isDirectory(top))) return 'missing';
  const entries: TarEntry[] = [];
  const failure = await walkTree(top, (rel) => posix.join(stateDir, rel), entries, conversationBudget());
  if (failure) return failure;
  return byName(entries);
}

export interface SaveOptions {
  readonly env: Env;
  readonly log: Logger;
  readonly retry: RetryConfig;
  /** Hard bound for the whole upload, all retries included. */
  readonly timeoutMs: number;
}

/**
 * Saves the CLI conversation (docs/design/reference-behaviour.md#conversation-continuity): gzip of a ustar archive of
 * `$HOME/<stateDir>`, POSTed to
 * `<source>/<pin>` as `application/gzip` with the header lines from the env var named by `AGENT_CONVERSATION_AUTH`.
 * Best effort: every failure is logged with a `[conversation]` prefix and never thrown.
 */
export async function saveConversation(save: ConversationSave, options: SaveOptions): Promise<void> {
  const { log } = options;
  try {
    const tree = await collectTree(save.home, save.stateDir);
    if (tree === 'missing') {
      log.info(`[conversation] nothing to save: $HOME/${save.stateDir} does not exist`);
      return;
    }
    if (tree === 'too-large') {
      log.error(`[conversation] not saved: $HOME/${save.stateDir} is over ${MAX_CONVERSATION_BYTES} bytes`);
      return;
    }
    const body = new Uint8Array(gzipSync(buildTar(tree)));
    const url = `${save.source.replace(/\/+$/, '')}/${encodeURIComponent(save.pin)}`;
    const { headers } = headersFromSecretEnv(options.env, save.authEnvName || undefined);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), Math.max(1, options.timeoutMs));
    try {
      const outcome = await postWithRetry(
        { url, body, contentType: 'application/gzip', headers },
        options.retry,
        {
          signal: controller.signal,
          timeoutMs: Math.max(1, options.timeoutMs),
        },
      );
      if (outcome.ok) {
        log.info('[conversation] saved', { url: redactUrl(url), bytes: body.length, members: tree.length });
      } else if (outcome.status !== undefined) {
        log.error(`[conversation] save rejected: ${outcome.status}`, { url: redactUrl(url) });
      } else {
        log.error('[conversation] save failed', {
          url: redactUrl(url),
          error: scrubUrl(outcome.error ?? 'aborted', url),
        });
      }
    } finally {
      clearTimeout(timer);
    }
  } catch (error) {
    log.error('[conversation] save failed', {
      error: error instanceof Error ? error.message : String(error),
    });
  }
}
