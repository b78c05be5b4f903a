import { constants } from 'node:fs';
import {
  access,
  chmod,
  copyFile,
  lchown,
  lstat,
  mkdir,
  readdir,
  realpath,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isStrictlyBelow } from './config.ts';

/**
 * Where `path` really points once every existing ancestor's symlinks are resolved; the not-yet-existing tail is
 * appended as is. The last component itself is not followed (removing a symlink removes the link).
 */
export async function resolveParentReal(path: string): Promise<string> {
  const tail: string[] = [basename(path)];
  let dir = dirname(path);
  for (;;) {
    try {
      const real = await realpath(dir);
      return join(real, ...tail.reverse());
    } catch {
      if (dir === '/' || dir === dirname(dir)) return join('/', ...tail.reverse());
      tail.push(basename(dir));
      dir = dirname(dir);
    }
  }
}

/**
 * True iff `path`, with its ancestors' symlinks resolved, stays strictly below the real location of `root`.
 * A missing root counts as its lexical self.
 */
export async function isConfinedBelow(path: string, root: string): Promise<boolean> {
  let realRoot = root;
  try {
    realRoot = await realpath(root);
  } catch {
    // not created yet: nothing can be a symlink inside it either
  }
  return isStrictlyBelow(await resolveParentReal(path), realRoot);
}

/** `rm -rf path` after checking confinement; throws when `path` escapes `root`. */
export async function removeConfined(path: string, root: string): Promise<void> {
  if (!(await isConfinedBelow(path, root))) throw new Error(`${path} resolves outside ${root}`);
  await rm(path, { recursive: true, force: true });
}

/** Writes `dest` atomically from `src` (copy to a temp name beside it, chmod, rename). */
export async function atomicCopy(src: string, dest: string, mode: number): Promise<void> {
  const tmp = `${dest}.tmp-${process.pid}`;
  try {
    await copyFile(src, tmp);
    await chmod(tmp, mode);
    await rename(tmp, dest);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}

/** Writes `dest` atomically with `content` (temp file beside it, chmod, rename). */
export async function atomicWrite(dest: string, content: string, mode: number): Promise<void> {
  const tmp = `${dest}.tmp-${process.pid}`;
  try {
    await writeFile(tmp, content);
    await chmod(tmp, mode);
    await rename(tmp, dest);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}

async function isRealDir(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Copies the directory tree `src` into `dest` (merging, files overwritten). Symlinks and special files are
 * skipped, so a cloned repository cannot make the root-run init read outside of it. Returns files copied.
 */
export async function copyTree(src: string, dest: string): Promise<number> {
  let copied = 0;
  await mkdir(dest, { recursive: true });
  for (const entry of await readdir(src, { withFileTypes: true })) {
    const from = join(src, entry.name);
    const to = join(dest, entry.name);
    if (entry.isDirectory()) copied += await copyTree(from, to);
    else if (entry.isFile()) {
      await rm(to, { recursive: true, force: true });
      await copyFile(from, to);
      copied += 1;
    }
  }
  return copied;
}

/**
 * Copies `<workspace>/*\/.claude/skills` and `<workspace>/.claude/skills` into `dest`
 * (docs/design/reference-behaviour.md#skills).
 * Only real directories are followed (no symlinks at any level). Returns the number of files copied.
 */
export async function collectSkills(workspace: string, dest: string): Promise<number> {
  const sources: string[] = [];
  let entries: string[] = [];
  try {
    entries = (await readdir(workspace, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return 0;
  }
  for (const name of entries.sort()) sources.push(join(workspace, name));
  sources.push(workspace);
  let copied = 0;
  for (const base of sources) {
    const claude = join(base, '.claude');
    const skills = join(claude, 'skills');
    if ((await isRealDir(claude)) && (await isRealDir(skills))) copied += await copyTree(skills, dest);
  }
  return copied;
}

/** Creates `link` → `target` when the target exists and nothing is at `link` yet; true iff it created one. */
export async function linkIfMissing(target: string, link: string): Promise<boolean> {
  try {
    await stat(target);
  } catch {
    return false;
  }
  try {
    await lstat(link);
    return false;
  } catch {
    await mkdir(dirname(link), { recursive: true });
    await symlink(target, link);
    return true;
  }
}

/** True iff `dir` exists (created if missing) and the process may write into it. */
export async function ensureWritableDir(dir: string): Promise<boolean> {
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Gives `root` and everything below it to uid:gid with `lchown` (symlinks themselves, never their targets;
 * never descends through a symlink). A missing root is fine. Returns the number of entries changed.
 */
export async function lchownTree(root: string, uid: number, gid: number): Promise<number> {
  let count = 0;
  const stack = [root];
  while (stack.length > 0) {
    const path = stack.pop()!;
    let info: Awaited<ReturnType<typeof lstat>>;
    try {
      info = await lstat(path);
    } catch (error) {
      if (path === root && (error as NodeJS.ErrnoException).code === 'ENOENT') return count;
      throw error;
    }
    await lchown(path, uid, gid);
    count += 1;
    if (info.isDirectory()) {
      for (const name of await readdir(path)) stack.push(join(path, name));
    }
  }
  return count;
}

/** Finds `name` on `pathVar` (colon-separated) as an executable regular file; names with `/` are checked as is. */
export async function findExecutable(name: string, pathVar: string): Promise<string | undefined> {
  const candidates = name.includes('/')
    ? [name]
    : pathVar
        .split(':')
        .filter((d) => d !== '')
        .map((d) => join(d, name));
  for (const candidate of candidates) {
    try {
      const info = await stat(candidate);
      if (!info.isFile()) continue;
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  return undefined;
}
