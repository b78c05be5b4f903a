import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as v from 'valibot';

/** What a container image's config says: entrypoint, default args, env, working dir, user. */
interface ImageConfig {
  entrypoint: string[];
  cmd: string[];
  env: Record<string, string>;
  workingDir: string | undefined;
  user: number | undefined;
  /**
   * The image's own files: container path → host path, bind-mounted read-only into every container of the image.
   * A real image's files are readable by any user; a host path under a private folder (a CI checkout in a 0700
   * temp dir) is not, but its bind mount is.
   */
  files: Record<string, string>;
  /**
   * The image cannot be pulled: the node reports this (a registry's answer, e.g. `manifest unknown`) in an
   * ErrImagePull / ImagePullBackOff waiting state and never starts a container of the image, whatever its command.
   */
  pullError?: string;
}

/**
 * One image the test node can "run": a bare entrypoint array or an image config object. (The check and the
 * conversion come after the union so that a failed check is reported as such, not as "Array | Object expected".)
 */
const ImageEntrySchema = v.pipe(
  v.union([
    v.array(v.string()),
    v.object({
      entrypoint: v.optional(v.array(v.string())),
      cmd: v.optional(v.array(v.string()), []),
      env: v.optional(v.record(v.string(), v.string()), {}),
      workingDir: v.optional(v.string()),
      user: v.optional(v.number()),
      files: v.optional(v.record(v.string(), v.string()), {}),
      pullError: v.optional(v.pipe(v.string(), v.minLength(1, 'pullError must not be empty'))),
    }),
  ]),
  // An image that cannot be pulled has nothing to run; any other entry names its entrypoint.
  v.check(
    (e) => Array.isArray(e) || e.entrypoint !== undefined || e.pullError !== undefined,
    'entrypoint is required (unless the entry has a pullError)',
  ),
  v.transform(
    (e): ImageConfig =>
      Array.isArray(e)
        ? { entrypoint: e, cmd: [], env: {}, workingDir: undefined, user: undefined, files: {} }
        : {
            entrypoint: e.entrypoint ?? [],
            cmd: e.cmd,
            env: e.env,
            workingDir: e.workingDir,
            user: e.user,
            files: e.files,
            ...(e.pullError !== undefined ? { pullError: e.pullError } : {}),
          },
  ),
);
export type ImageEntry = v.InferOutput<typeof ImageEntrySchema>;

/**
 * `{ "<image>": ["entrypoint", ...] | {entrypoint, cmd?, env?, workingDir?, user?, files?, pullError?} }`; an
 * entry with a pullError may leave out its entrypoint: `{ "<image>": { "pullError": "manifest unknown" } }`.
 */
export const ImageTableSchema = v.record(v.string(), ImageEntrySchema);
export type ImageTable = v.InferOutput<typeof ImageTableSchema>;

/** The table files a path names: the file itself, or a folder's `*.json` files in name order (none when absent). */
function tableFiles(path: string): string[] {
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    return [path]; // a missing file is reported by the reader below
  }
  if (!isDir) return [path];
  return readdirSync(path)
    .filter((n) => n.endsWith('.json'))
    .sort()
    .map((n) => join(path, n));
}

/**
 * Reads and merges image tables (later files win). A path may be a folder: its `*.json` files are read in name
 * order (tests add images there while the node runs). Files are read on every call so entries can be added while
 * the node runs. Throws with the file name when a file is missing or malformed.
 */
export function loadImageTables(paths: readonly string[]): ImageTable {
  const table: ImageTable = {};
  for (const file of paths.flatMap(tableFiles)) {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new Error(`image table ${file}: ${error instanceof Error ? error.message : String(error)}`);
    }
    const parsed = v.safeParse(ImageTableSchema, raw);
    if (!parsed.success) throw new Error(`image table ${file}: ${v.summarize(parsed.issues)}`);
    Object.assign(table, parsed.output);
  }
  return table;
}
