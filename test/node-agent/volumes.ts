// What the kubelet writes into API data volumes (secret, configMap, downwardAPI, projected with
// serviceAccountToken/configMap/secret/downwardAPI sources), and how: the kubelet's atomic writer layout, so a
// rewrite (a refreshed token, a changed Secret or ConfigMap) never shows a reader a half-written file. The pod's
// objects and tokens come from injected sources; only writeVolume touches the file system.
import {
  chmodSync,
  chownSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, posix } from 'node:path';
import { err, ok, type Result } from '../../src/shared/result.ts';
import { type EnvSources, fieldValue, type PodFacts, resourceValue } from './env.ts';
import type { DownwardItem, NodePod, Projection, Volume } from './pod-spec.ts';

/** One file of a volume (the kubelet's FileProjection): content, mode, and its owner when not root. */
export interface FileProjection {
  readonly data: string;
  readonly mode: number;
  /** The uid owning the file (a projected token, when every container of the pod runs as this user). */
  readonly fsUser?: number | undefined;
}

/** A volume's files by path relative to the volume. */
export type Payload = ReadonlyMap<string, FileProjection>;

/** `spec` of an authentication.k8s.io/v1 TokenRequest, as the kubelet sends it for a projected token. */
export interface TokenRequestSpec {
  /** Empty: the API server's own audiences. */
  readonly audiences: readonly string[];
  readonly expirationSeconds: number;
  readonly boundObjectRef: {
    readonly apiVersion: 'v1';
    readonly kind: 'Pod';
    readonly name: string;
    readonly uid: string;
  };
}

/** A token the API server issued (a TokenRequest's answer). */
export interface IssuedToken {
  readonly token: string;
  /** status.expirationTimestamp, epoch ms. */
  readonly expiresAt: number;
  /** The lifetime granted: the answer's spec.expirationSeconds. */
  readonly expirationSeconds: number;
}

/** Secrets and ConfigMaps (as for env) and ServiceAccount tokens. */
export interface VolumeSources extends EnvSources {
  /**
   * Requests a token of ServiceAccount `serviceAccount` (TokenRequest API: POST …/serviceaccounts/<name>/token);
   * rejects with the API server's message when it refuses.
   */
  serviceAccountToken(
    namespace: string,
    serviceAccount: string,
    spec: TokenRequestSpec,
  ): Promise<IssuedToken>;
}

/** What building a volume's files needs to know about the pod. */
export interface VolumeContext {
  readonly pod: NodePod;
  readonly facts: PodFacts;
  readonly sources: VolumeSources;
  /** The uid every container runs as (see fsUserOf); undefined when they differ or one does not say. */
  readonly fsUser: number | undefined;
  readonly fsGroup: number | undefined;
}

/** A volume's files, and when they are to be rebuilt because a token in them is due for a refresh. */
export interface VolumeContent {
  readonly payload: Payload;
  /** Epoch ms at which the earliest token of the volume is to be refreshed; undefined without tokens. */
  readonly refreshAt: number | undefined;
}

/** The default mode of the files of secret, configMap, downwardAPI and projected volumes (the API's 0644). */
const DEFAULT_MODE = 0o644;
/** The kubelet refreshes a token once it is older than this, whatever its lifetime. */
const MAX_TOKEN_AGE_MS = 24 * 60 * 60 * 1000;

/**
 * When the kubelet refreshes a token: once 80% of its lifetime has passed, or once it is 24 hours old,
 * whichever comes first (the kubelet also subtracts a random jitter of up to 10 s; the test node does not).
 */
export function tokenRefreshAt(token: IssuedToken): number {
  const lifetimeMs = token.expirationSeconds * 1000;
  const issuedAt = token.expiresAt - lifetimeMs;
  return Math.min(issuedAt + MAX_TOKEN_AGE_MS, token.expiresAt - lifetimeMs / 5);
}

/**
 * The uid the kubelet gives projected token files to (its FsUser): the effective runAsUser of the pod's
 * containers (init included) when they all have one and it is the same; undefined otherwise. The image's user
 * does not count.
 */
export function fsUserOf(pod: NodePod): number | undefined {
  const spec = pod.spec;
  let user: number | undefined;
  for (const c of [...spec.initContainers, ...spec.containers]) {
    const uid = c.securityContext?.runAsUser ?? spec.securityContext.runAsUser;
    if (uid === undefined || (user !== undefined && user !== uid)) return undefined;
    user = uid;
  }
  return user;
}

/** A map as the downward API writes `metadata.labels` / `metadata.annotations`: sorted `key="value"` lines. */
export function formatMap(map: Readonly<Record<string, string>>): string {
  return Object.keys(map)
    .sort()
    .map((k) => `${k}=${JSON.stringify(map[k])}`)
    .join('\n');
}

function downwardValue(item: DownwardItem, ctx: VolumeContext): Result<string, string> {
  if (item.fieldRef) {
    const path = item.fieldRef.fieldPath;
    const value =
      path === 'metadata.labels'
        ? formatMap(ctx.facts.labels)
        : path === 'metadata.annotations'
          ? formatMap(ctx.facts.annotations)
          : fieldValue(path, ctx.facts);
    return value === undefined ? err(`unsupported fieldPath: ${path}`) : ok(value);
  }
  if (item.resourceFieldRef) {
    const all = [...ctx.pod.spec.initContainers, ...ctx.pod.spec.containers];
    const value = resourceValue(item.resourceFieldRef, undefined, all);
    return value === undefined
      ? err(`unsupported resourceFieldRef: ${item.resourceFieldRef.resource}`)
      : ok(value);
  }
  return err(`downward API item "${item.path}" has neither fieldRef nor resourceFieldRef`);
}

/** The files of downward API items; every item or an error per failing one. */
function downwardFiles(
  items: readonly DownwardItem[],
  defaultMode: number,
  ctx: VolumeContext,
): Result<[string, FileProjection][], string[]> {
  const files: [string, FileProjection][] = [];
  const errors: string[] = [];
  for (const item of items) {
    const value = downwardValue(item, ctx);
    if (value.ok) files.push([item.path, { data: value.value, mode: item.mode ?? defaultMode }]);
    else errors.push(value.error);
  }
  return errors.length > 0 ? err(errors) : ok(files);
}

type ObjectKind = 'secret' | 'configmap';

/**
 * The files of a Secret or ConfigMap (a volume or a projection): every key, or the listed items. A missing
 * object or key fails unless `optional` (then it is left out).
 */
async function objectFiles(
  kind: ObjectKind,
  ref: {
    readonly name: string;
    readonly items?: readonly { key: string; path: string; mode?: number | undefined }[] | undefined;
    readonly optional?: boolean | undefined;
  },
  defaultMode: number,
  ctx: VolumeContext,
): Promise<Result<[string, FileProjection][], string>> {
  const ns = ctx.pod.metadata.namespace;
  let data: Readonly<Record<string, string>> | undefined;
  try {
    data =
      kind === 'secret' ? await ctx.sources.secret(ns, ref.name) : await ctx.sources.configMap(ns, ref.name);
  } catch (error) {
    return err(`couldn't get ${kind} ${ns}/${ref.name}: ${message(error)}`);
  }
  if (!data && ref.optional !== true) return err(`${kind} "${ref.name}" not found`);
  const items = ref.items ?? Object.keys(data ?? {}).map((key) => ({ key, path: key, mode: undefined }));
  const files: [string, FileProjection][] = [];
  for (const item of items) {
    const value = data?.[item.key];
    if (value === undefined) {
      if (ref.optional === true) continue;
      return err(`key "${item.key}" not found in ${kind} "${ref.name}"`);
    }
    files.push([item.path, { data: value, mode: item.mode ?? defaultMode }]);
  }
  return ok(files);
}

/** A projected token: a TokenRequest bound to the pod, for its ServiceAccount. */
async function tokenFile(
  source: NonNullable<Projection['serviceAccountToken']>,
  defaultMode: number,
  ctx: VolumeContext,
): Promise<Result<{ file: [string, FileProjection]; refreshAt: number }, string>> {
  const { metadata, spec } = ctx.pod;
  // Without the ServiceAccount admission plugin (the testbed disables it) nothing defaults the name.
  const account = spec.serviceAccountName || 'default';
  let issued: IssuedToken;
  try {
    issued = await ctx.sources.serviceAccountToken(metadata.namespace, account, {
      audiences: source.audience ? [source.audience] : [],
      expirationSeconds: source.expirationSeconds,
      boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: metadata.name, uid: metadata.uid },
    });
  } catch (error) {
    return err(`failed to fetch token: ${message(error)}`);
  }
  // With an owner user or group the token is private to it (0600; 0640 once the fsGroup is applied).
  const mode = ctx.fsUser !== undefined || ctx.fsGroup !== undefined ? 0o600 : defaultMode;
  return ok({
    file: [source.path, { data: issued.token, mode, fsUser: ctx.fsUser }],
    refreshAt: tokenRefreshAt(issued),
  });
}

/**
 * Builds the files of an API data volume, or the kubelet's MountVolume.SetUp error (without its
 * `MountVolume.SetUp failed for volume "…" :` prefix). A projected volume collects every source and reports
 * all that failed (`[first, second]` when several). Undefined for volumes without contents (emptyDir).
 */
export async function volumeContent(
  vol: Volume,
  ctx: VolumeContext,
): Promise<Result<VolumeContent, string> | undefined> {
  const done = (
    files: readonly [string, FileProjection][],
    refreshAt?: number,
  ): Result<VolumeContent, string> => ok({ payload: new Map(files), refreshAt });
  if (vol.secret) {
    const files = await objectFiles(
      'secret',
      { ...vol.secret, name: vol.secret.secretName },
      vol.secret.defaultMode ?? DEFAULT_MODE,
      ctx,
    );
    return files.ok ? done(files.value) : files;
  }
  if (vol.configMap) {
    const files = await objectFiles(
      'configmap',
      vol.configMap,
      vol.configMap.defaultMode ?? DEFAULT_MODE,
      ctx,
    );
    return files.ok ? done(files.value) : files;
  }
  if (vol.downwardAPI) {
    const files = downwardFiles(vol.downwardAPI.items, vol.downwardAPI.defaultMode ?? DEFAULT_MODE, ctx);
    return files.ok ? done(files.value) : err(aggregate(files.error));
  }
  if (!vol.projected) return undefined;
  const mode = vol.projected.defaultMode ?? DEFAULT_MODE;
  const files: [string, FileProjection][] = [];
  const errors: string[] = [];
  let refreshAt: number | undefined;
  for (const source of vol.projected.sources) {
    if (source.serviceAccountToken) {
      const token = await tokenFile(source.serviceAccountToken, mode, ctx);
      if (!token.ok) {
        errors.push(token.error);
        continue;
      }
      files.push(token.value.file);
      refreshAt = Math.min(refreshAt ?? Number.POSITIVE_INFINITY, token.value.refreshAt);
    } else if (source.secret || source.configMap) {
      const kind: ObjectKind = source.secret ? 'secret' : 'configmap';
      const ref = source.secret ?? source.configMap;
      if (!ref) continue;
      const got = await objectFiles(kind, ref, mode, ctx);
      if (got.ok) files.push(...got.value);
      else errors.push(got.error);
    } else if (source.downwardAPI) {
      const got = downwardFiles(source.downwardAPI.items, mode, ctx);
      if (got.ok) files.push(...got.value);
      else errors.push(...got.error);
    } else {
      errors.push(`unsupported projection source: ${Object.keys(source)[0] ?? 'empty'}`);
    }
  }
  if (errors.length > 0) return err(aggregate(errors));
  return done(files, refreshAt);
}

/**
 * Whether the kubelet keeps a volume in step with API objects while the pod runs: secret and configMap volumes,
 * and projected volumes with a secret or configMap source (downwardAPI files are written once here; tokens are
 * refreshed on their own schedule, see tokenRefreshAt).
 */
export function syncsWithObjects(vol: Volume): boolean {
  if (vol.secret !== undefined || vol.configMap !== undefined) return true;
  return (vol.projected?.sources ?? []).some((s) => s.secret !== undefined || s.configMap !== undefined);
}

/** Whether two payloads hold the same files (paths, contents, modes, owners): an unchanged one is not rewritten. */
export function samePayload(a: Payload, b: Payload): boolean {
  if (a.size !== b.size) return false;
  for (const [path, f] of a) {
    const g = b.get(path);
    if (g === undefined || g.data !== f.data || g.mode !== f.mode || g.fsUser !== f.fsUser) return false;
  }
  return true;
}

/** Several errors as Kubernetes aggregates them: the one message alone, else `[a, b]`. */
function aggregate(errors: readonly string[]): string {
  return errors.length === 1 ? (errors[0] ?? '') : `[${errors.join(', ')}]`;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The data folder's link, swapped by one rename. */
const DATA_LINK = '..data';

/** A payload path made canonical; throws when it is absolute, empty, or leaves the volume (as the kubelet refuses). */
function checkedPath(path: string): string {
  const clean = posix.normalize(path).replace(/\/+$/, '');
  if (
    path === '' ||
    posix.isAbsolute(path) ||
    clean.split('/').includes('..') ||
    clean.startsWith('..') ||
    clean === '.'
  ) {
    throw new Error(`invalid path "${path}" in the volume's payload`);
  }
  return clean;
}

/** `..2025_01_31_12_00_00.` (UTC), the prefix of the kubelet's timestamped data folders. */
function timestampPrefix(now: number): string {
  const iso = new Date(now).toISOString();
  return `..${iso.slice(0, 19).replace(/[-T:]/g, '_')}.`;
}

function linkTarget(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Applies the pod's fsGroup as the kubelet does on a read-only volume: group fsGroup on everything, group read
 * added to files (0600 → 0640), setgid on folders; symlinks only change group.
 */
function applyFsGroup(path: string, fsGroup: number): void {
  const st = lstatSync(path);
  lchownSync(path, -1, fsGroup);
  if (st.isSymbolicLink()) return;
  if (st.isDirectory()) {
    chmodSync(path, (st.mode & 0o7777) | 0o2440);
    for (const entry of readdirSync(path)) applyFsGroup(join(path, entry), fsGroup);
  } else {
    chmodSync(path, (st.mode & 0o7777) | 0o440);
  }
}

/**
 * Writes a volume's files into `dir` with the kubelet's atomic writer layout: the files in a fresh
 * `..<timestamp>.<random>` folder, the `..data` link switched to it with one rename, a `<name> -> ..data/<name>`
 * link per top-level entry; then the previous data folder and entries no longer in the payload are removed.
 * Readers (containers bind-mount `dir`) see either the old or the new files, never a mix. Throws on a bad path.
 */
export function writeVolume(dir: string, payload: Payload, fsGroup: number | undefined, now: number): void {
  const files = [...payload].map(([path, file]) => [checkedPath(path), file] as const);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const previous = linkTarget(join(dir, DATA_LINK));
  const data = mkdtempSync(join(dir, timestampPrefix(now)));
  chmodSync(data, 0o755);
  for (const [path, f] of files) {
    const file = join(data, path);
    mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
    writeFileSync(file, f.data, { mode: f.mode });
    chmodSync(file, f.mode);
    if (f.fsUser !== undefined) chownSync(file, f.fsUser, -1);
  }
  if (fsGroup !== undefined) applyFsGroup(data, fsGroup);
  const staged = join(dir, '..data_tmp');
  rmSync(staged, { force: true });
  symlinkSync(basename(data), staged);
  renameSync(staged, join(dir, DATA_LINK));
  const top = new Set(files.map(([path]) => path.split('/')[0] ?? path));
  for (const name of top) {
    const link = join(dir, name);
    if (isSymlink(link) && linkTarget(link) === `${DATA_LINK}/${name}`) continue;
    rmSync(link, { recursive: true, force: true });
    symlinkSync(`${DATA_LINK}/${name}`, link);
  }
  for (const entry of readdirSync(dir)) {
    const stale = entry.startsWith('..')
      ? entry !== DATA_LINK && entry !== basename(data) && (entry === previous || /^\.\.\d{4}_/.test(entry))
      : !top.has(entry);
    if (stale) rmSync(join(dir, entry), { recursive: true, force: true });
  }
  if (fsGroup !== undefined) {
    lchownSync(dir, -1, fsGroup);
    chmodSync(dir, 0o2755);
    for (const entry of readdirSync(dir))
      if (entry !== basename(data)) lchownSync(join(dir, entry), -1, fsGroup);
  }
}
