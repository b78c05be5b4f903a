// A local npm registry on a loopback port serving the packages of test/clis/package-lock.json, so an init container
// can `npm install` a real pinned CLI with no network (docs/reference/vendor-clis.md#installing-in-the-init).
// Packuments are made from the lockfile (version, integrity, os/cpu/libc) and, for each package installed by
// `scripts/install-clis`, its published package.json; tarballs are the npm cache's own files, found by the
// lockfile's integrity (the cache `npm ci` in scripts/install-clis filled), so what is served is byte for byte what
// the npm registry served and npm's integrity check passes. A package the cache lacks is added with
// `npm cache add` first. OpenCode's launcher, which the lockfile cannot hold, is served beside them, pinned by its
// published integrity (BEYOND_LOCKFILE). Nothing is copied to disk, so nothing needs a cache key of its own: the CLI
// install is keyed by the lockfile's hash already.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { installRealClis } from './real-clis.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const LOCKFILE = join(ROOT, 'test', 'clis', 'package-lock.json');

const LockEntrySchema = v.looseObject({
  name: v.optional(v.string()),
  version: v.string(),
  integrity: v.pipe(v.string(), v.regex(/^sha(256|384|512)-[A-Za-z0-9+/]+=*$/, 'one SRI hash')),
  os: v.optional(v.array(v.string())),
  cpu: v.optional(v.array(v.string())),
  libc: v.optional(v.array(v.string())),
  engines: v.optional(v.record(v.string(), v.string())),
  bin: v.optional(v.union([v.string(), v.record(v.string(), v.string())])),
  dependencies: v.optional(v.record(v.string(), v.string())),
  optionalDependencies: v.optional(v.record(v.string(), v.string())),
  hasInstallScript: v.optional(v.boolean()),
});
const LockSchema = v.object({ packages: v.record(v.string(), v.unknown()) });
const PackageJsonSchema = v.looseObject({ name: v.string(), version: v.string() });

/** One package version the registry serves. */
interface Served {
  readonly name: string;
  readonly version: string;
  readonly manifest: Readonly<Record<string, unknown>>;
  readonly integrity: string;
  /** The tarball in the npm cache; undefined when the cache has none (a package for another platform). */
  readonly file: string | undefined;
}

export interface NpmRegistry {
  /** `http://127.0.0.1:<port>/`, the value for NPM_CONFIG_REGISTRY. */
  readonly url: string;
  /** Every request as `METHOD path status`, in order. */
  readonly requests: readonly string[];
  close(): Promise<void>;
}

/** Where cacache keeps the content of an SRI hash (`<cache>/_cacache/content-v2/<alg>/<2>/<2>/<rest>`). */
function cachePath(cache: string, integrity: string): string {
  const [alg = '', b64 = ''] = integrity.split('-', 2);
  const hex = Buffer.from(b64, 'base64').toString('hex');
  return join(cache, '_cacache', 'content-v2', alg, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
}

function matchesIntegrity(file: string, integrity: string): boolean {
  const [alg = '', b64 = ''] = integrity.split('-', 2);
  return createHash(alg).update(readFileSync(file)).digest('base64') === b64;
}

function npm(args: readonly string[]): string {
  const r = spawnSync('npm', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * Packages served beyond the lockfile, pinned by the integrity the npm registry publishes: OpenCode's launcher
 * `opencode-ai`, which the init installs (src/vendors/cli/info.ts) but npm cannot keep in test/clis/package-lock.json
 * (test/clis/package.json "//"); its version is the binary packages' there. Their tarball is put into the npm cache
 * with `npm cache add` when missing; the packument's manifest is the tarball's own package.json.
 */
const BEYOND_LOCKFILE = [
  {
    name: 'opencode-ai',
    versionOf: 'node_modules/opencode-linux-x64',
    integrity:
      'sha512-58P1ffLRXiAY4QeoABqUjqf6DEzm1ihpovvn9Ad+oOLbLiwK/rf88wruT9IATJ7AtNjmi8iA7pC8tN4o5y799Q==',
  },
] as const;

/** `package/package.json` of an npm tarball. */
function tarballManifest(file: string): Record<string, unknown> {
  const r = spawnSync('tar', ['-xzOf', file, 'package/package.json'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tar: no package/package.json in ${file}: ${r.stderr}`);
  return v.parse(PackageJsonSchema, JSON.parse(r.stdout));
}

/** The packages of {@link BEYOND_LOCKFILE}, their tarballs in the npm cache. */
function beyondLockfile(cache: string, lock: Readonly<Record<string, unknown>>): Served[] {
  return BEYOND_LOCKFILE.map(({ name, versionOf, integrity }) => {
    const { version } = v.parse(LockEntrySchema, lock[versionOf]);
    const file = cachePath(cache, integrity);
    if (!existsSync(file)) npm(['cache', 'add', `${name}@${version}`]);
    if (!existsSync(file) || !matchesIntegrity(file, integrity))
      throw new Error(`the npm cache has no ${name}@${version} matching its pinned integrity`);
    return { name, version, integrity, file, manifest: { ...tarballManifest(file), name, version } };
  });
}

/** The package versions of the lockfile, with the installed ones' package.json and tarballs from the npm cache. */
function servedPackages(): Served[] {
  const manifest = installRealClis();
  const installDir = manifest.clis.claude.path.slice(0, manifest.clis.claude.path.indexOf('/node_modules/'));
  const cache = npm(['config', 'get', 'cache']);
  const lock = v.parse(LockSchema, JSON.parse(readFileSync(LOCKFILE, 'utf8')));
  const served: Served[] = [];
  for (const [key, raw] of Object.entries(lock.packages)) {
    if (key === '') continue;
    const entry = v.parse(LockEntrySchema, raw);
    const name = entry.name ?? key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const pkgJson = join(installDir, key, 'package.json');
    const installed = existsSync(pkgJson);
    let file: string | undefined = cachePath(cache, entry.integrity);
    if (installed && !existsSync(file)) npm(['cache', 'add', `${name}@${entry.version}`]);
    if (!existsSync(file)) file = undefined;
    else if (!matchesIntegrity(file, entry.integrity))
      throw new Error(`the npm cache's ${name}@${entry.version} does not match the lockfile's integrity`);
    const { name: _n, version: _v, integrity: _i, ...lockFields } = entry;
    const published = installed ? v.parse(PackageJsonSchema, JSON.parse(readFileSync(pkgJson, 'utf8'))) : {};
    served.push({
      name,
      version: entry.version,
      integrity: entry.integrity,
      file,
      manifest: { ...lockFields, ...published, name, version: entry.version },
    });
  }
  return [...served, ...beyondLockfile(cache, lock.packages)];
}

/** The packument of `name`: every served version, `latest` the top-level entry's. */
function packument(name: string, versions: readonly Served[], base: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of versions)
    out[s.version] = {
      ...s.manifest,
      dist: { integrity: s.integrity, tarball: `${base}-/tarball/${encodeURIComponent(s.integrity)}.tgz` },
    };
  const latest = versions.find((s) => !s.version.includes('-')) ?? versions[0];
  return { name, 'dist-tags': { latest: latest?.version }, versions: out };
}

/** Starts the registry on 127.0.0.1 (an ephemeral port). */
export async function startNpmRegistry(): Promise<NpmRegistry> {
  const byName = new Map<string, Served[]>();
  const byIntegrity = new Map<string, Served>();
  for (const s of servedPackages()) {
    byName.set(s.name, [...(byName.get(s.name) ?? []), s]);
    byIntegrity.set(s.integrity, s);
  }
  const requests: string[] = [];
  let base = '';
  const server = createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/');
    const reply = (status: number, body: string, type = 'application/json'): void => {
      requests.push(`${req.method} ${path} ${status}`);
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    if (req.method !== 'GET') return reply(405, '{"error":"read-only"}');
    const tarball = /^\/-\/tarball\/(.+)\.tgz$/.exec(path);
    if (tarball) {
      const file = byIntegrity.get(tarball[1] ?? '')?.file;
      if (file === undefined) return reply(404, '{"error":"not in the local cache"}');
      requests.push(`GET ${path} 200`);
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      createReadStream(file).pipe(res);
      return;
    }
    const versions = byName.get(path.slice(1));
    if (versions === undefined) return reply(404, '{"error":"not found"}');
    return reply(200, JSON.stringify(packument(path.slice(1), versions, base)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url: base,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
