// A realtime session's state as one archive (docs/design/sessions.md, "The run pod"): the CLI's state folder under
// $HOME (VENDOR_INFO[vendor].stateDir, members named as under $HOME) and the workspace (members under `workspace/`),
// as ustar + gzip. `packSessionState` makes it for `GET /session/state`, `unpackSessionState` writes one back for
// `PUT /session/state`.
//
// Caps: 64 MiB of file content and 100 000 members in all (those of the conversation store), the compressed body and
// the unpacked tar at most twice that. Symlinks (and FIFOs, sockets, devices) in either tree are left out, never
// followed: a workspace link may point anywhere in the pod, and the archive holds files, not pointers into a pod that
// will be gone; how many were left out is logged. Unpacking accepts only what `readTar` accepts (relative names, no
// `..`, regular files and folders), and only members inside the CLI's state folder or `workspace/`; a symlink already
// on the path of a member in the new pod (a repository clone's, say) is replaced, never followed.

import { chmod, lstat, mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { gzipSync } from 'node:zlib';
import {
  byName,
  conversationBudget,
  isDirectory,
  MAX_CONVERSATION_BYTES,
  MAX_CONVERSATION_ENTRIES,
  walkTree,
} from './conversation.ts';
import { buildTar, readTar, type TarEntry } from './tar.ts';

/** The folder of the workspace's members in the archive. */
export const WORKSPACE_MEMBER = 'workspace';
/** The largest compressed archive a PUT may send, and the largest tar it may unpack to. */
export const MAX_SESSION_ARCHIVE_BYTES = 2 * MAX_CONVERSATION_BYTES;

/** Where a session's state lives in this pod. */
export interface StatePlaces {
  /** `$HOME`, absolute. */
  readonly home: string;
  /** The CLI's state folder relative to `$HOME` (e.g. `.claude/projects`); undefined for a CLI without one. */
  readonly stateDir: string | undefined;
  /** The workspace root, absolute. */
  readonly workspace: string;
}

/** The state as an archive, or why there is none. */
export type PackedState =
  | { readonly ok: true; readonly archive: Uint8Array; readonly members: number; readonly skipped: number }
  | { readonly ok: false; readonly reason: 'too-large' };

/** Collects the state folder and the workspace (either may be missing) into one sorted member list. */
export async function collectSessionState(
  places: StatePlaces,
): Promise<{ ok: true; entries: TarEntry[]; skipped: number } | { ok: false; reason: 'too-large' }> {
  const entries: TarEntry[] = [];
  const budget = conversationBudget();
  const { stateDir } = places;
  if (stateDir !== undefined) {
    const top = posix.join(places.home, stateDir);
    if (await isDirectory(top)) {
      if (await walkTree(top, (rel) => posix.join(stateDir, rel), entries, budget))
        return { ok: false, reason: 'too-large' };
    }
  }
  if (await isDirectory(places.workspace)) {
    if (await walkTree(places.workspace, (rel) => posix.join(WORKSPACE_MEMBER, rel), entries, budget))
      return { ok: false, reason: 'too-large' };
  }
  return { ok: true, entries: byName(entries), skipped: budget.skipped };
}

/** The state as ustar + gzip (see the header). */
export async function packSessionState(places: StatePlaces): Promise<PackedState> {
  const collected = await collectSessionState(places);
  if (!collected.ok) return collected;
  return {
    ok: true,
    archive: new Uint8Array(gzipSync(buildTar(collected.entries))),
    members: collected.entries.length,
    skipped: collected.skipped,
  };
}

/** Why an archive was not unpacked: `too-large` (413), `invalid` (400), `io` (500, the pod's files). */
export type UnpackError = { readonly kind: 'too-large' | 'invalid' | 'io'; readonly message: string };

/** Gunzips `data`, stopping past `max` bytes of output. */
export async function gunzipCapped(
  data: Uint8Array,
  max: number,
): Promise<{ ok: true; tar: Uint8Array } | { ok: false; error: UnpackError }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream('gzip'));
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > max) {
        await reader.cancel().catch(() => undefined);
        return {
          ok: false,
          error: { kind: 'too-large', message: `the archive unpacks to more than ${max} bytes` },
        };
      }
      chunks.push(value);
    }
  } catch {
    return { ok: false, error: { kind: 'invalid', message: 'the body is not gzip' } };
  }
  const tar = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    tar.set(c, at);
    at += c.length;
  }
  return { ok: true, tar };
}

/** Where a member goes in this pod, or undefined when it belongs to neither the state folder nor the workspace. */
export function memberTarget(
  name: string,
  places: StatePlaces,
): { root: string; relative: string } | undefined {
  const bare = name.endsWith('/') ? name.slice(0, -1) : name;
  if (bare === WORKSPACE_MEMBER) return { root: places.workspace, relative: '' };
  if (bare.startsWith(`${WORKSPACE_MEMBER}/`))
    return { root: places.workspace, relative: bare.slice(WORKSPACE_MEMBER.length + 1) };
  const { stateDir } = places;
  if (stateDir === undefined) return undefined;
  if (bare === stateDir || bare.startsWith(`${stateDir}/`)) return { root: places.home, relative: bare };
  return undefined;
}

/**
 * Makes the folders of `relative` under `root` (which exists or is made), replacing a symlink or file found on the
 * way (the archive wins; nothing is followed). Returns the absolute path.
 */
async function prepareParents(root: string, relative: string): Promise<string> {
  await mkdir(root, { recursive: true });
  const parts = relative === '' ? [] : relative.split('/');
  let at = root;
  for (const part of parts.slice(0, -1)) {
    at = posix.join(at, part);
    const st = await lstat(at).catch(() => undefined);
    if (st?.isDirectory()) continue;
    if (st !== undefined) await rm(at, { force: true });
    await mkdir(at, { mode: 0o755 });
  }
  return parts.length === 0 ? root : posix.join(at, parts.at(-1) ?? '');
}

/**
 * Unpacks a session archive (ustar + gzip) into this pod (see the header): members of the CLI's state folder under
 * `$HOME`, `workspace/` members into the workspace. Everything is checked before anything is written; a write that
 * fails is `io`. Returns the number of members written.
 */
export async function unpackSessionState(
  body: Uint8Array,
  places: StatePlaces,
): Promise<{ ok: true; members: number } | { ok: false; error: UnpackError }> {
  const tar = await gunzipCapped(body, MAX_SESSION_ARCHIVE_BYTES);
  if (!tar.ok) return tar;
  const read = readTar(tar.tar, {
    maxContentBytes: MAX_CONVERSATION_BYTES,
    maxEntries: MAX_CONVERSATION_ENTRIES,
  });
  if (!read.ok) return read;
  const placed: { entry: TarEntry; root: string; relative: string }[] = [];
  for (const entry of read.entries) {
    const target = memberTarget(entry.name, places);
    if (target === undefined)
      return {
        ok: false,
        error: {
          kind: 'invalid',
          message: `the member ${JSON.stringify(entry.name)} is neither in ${places.stateDir === undefined ? 'the state folder' : `${places.stateDir}/`} nor in ${WORKSPACE_MEMBER}/`,
        },
      };
    placed.push({ entry, ...target });
  }
  try {
    for (const { entry, root, relative } of placed) {
      const path = await prepareParents(root, relative);
      const st = await lstat(path).catch(() => undefined);
      if (entry.type === 'dir') {
        if (st !== undefined && !st.isDirectory()) await rm(path, { force: true });
        if (st === undefined || !st.isDirectory()) await mkdir(path, { mode: entry.mode | 0o700 });
      } else {
        // A symlink or folder in the way is removed first, so the write never goes through a link.
        if (st !== undefined && !st.isFile()) await rm(path, { recursive: true, force: true });
        else if (st?.isFile() && st.nlink > 1) await rm(path, { force: true });
        await writeFile(path, entry.data, { mode: entry.mode | 0o600 });
        await chmod(path, entry.mode | 0o600);
        const when = new Date(entry.mtimeSec * 1000);
        await utimes(path, when, when).catch(() => undefined);
      }
    }
  } catch (error) {
    return {
      ok: false,
      error: { kind: 'io', message: error instanceof Error ? error.message : String(error) },
    };
  }
  return { ok: true, members: placed.length };
}
