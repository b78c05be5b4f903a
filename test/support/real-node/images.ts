// The real node's images, assembled from files: nothing is pulled. Each image is one layer holding a static C
// program (built here with gcc) and the empty folders a container runtime mounts over; it is written as a
// docker-archive tar (`docker save` layout: manifest.json, the config JSON, the layer tar), which
// `ctr -n k8s.io images import` reads. See docs/design/real-node.md.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildTar, type TarEntry } from '../../../src/pod/supervisor/tar.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

/** The sandbox image containerd starts every pod with (`sandbox_image`). */
export const PAUSE_IMAGE = 'acrn.invalid/pause:1';
/** The test image: `/hello [MESSAGE]` prints its uid and MESSAGE and writes the termination message, or
 * `/hello --serve PORT` answers TCP connections (hello.c). */
export const HELLO_IMAGE = 'acrn.invalid/hello:1';

/** One file of a layer: its bytes, and its mode (default 0755). */
export interface LayerFile {
  readonly data: Uint8Array;
  readonly mode?: number;
}
/** One layer: path inside the image (no leading slash) → bytes (mode 0755) or a file with its mode. */
export type Layer = Readonly<Record<string, Uint8Array | LayerFile>>;

/** What an image's config says beyond its entrypoint (the fields `docker build` sets from USER, CMD, …). */
export interface ImageConfig {
  readonly cmd?: readonly string[];
  readonly env?: readonly string[];
  readonly workingDir?: string;
  readonly user?: string;
  readonly exposedPorts?: readonly string[];
}

/** One image: a reference, its layers (bottom first; the first also gets the runtime's folders) and how it starts. */
export interface ImageSpec {
  readonly ref: string;
  /** A one-layer image's files (used when `layers` is absent). */
  readonly files?: Layer;
  readonly layers?: readonly Layer[];
  readonly entrypoint: readonly string[];
  readonly config?: ImageConfig;
}

/** Folders every image carries: mount points (the runtime mounts /proc, /dev, /sys, /etc files) and /tmp. */
const SKELETON = ['dev', 'etc', 'proc', 'sys', 'tmp'];

function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The OCI architecture name of this machine (the node runs what this machine runs). */
function ociArch(): string {
  const map: Record<string, string> = {
    x64: 'amd64',
    arm64: 'arm64',
    arm: 'arm',
    s390x: 's390x',
    ppc64: 'ppc64le',
  };
  const arch = map[process.arch];
  if (arch === undefined) throw new Error(`no OCI architecture known for ${process.arch}`);
  return arch;
}

/** The layer tar of `files`: each parent folder once (0755, before its contents), then the files, in name order. */
export function layerTar(files: Layer, skeleton: boolean): Uint8Array {
  const mtimeSec = 0;
  const dirs = new Map<string, number>(
    skeleton ? SKELETON.map((name) => [name, name === 'tmp' ? 0o1777 : 0o755]) : [],
  );
  const names = Object.keys(files).sort();
  for (const name of names) {
    const parts = name.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (!dirs.has(dir)) dirs.set(dir, 0o755);
    }
  }
  return buildTar([
    ...[...dirs.keys()]
      .sort()
      .map((name): TarEntry => ({ type: 'dir', name, mode: dirs.get(name) ?? 0o755, mtimeSec })),
    ...names.map((name): TarEntry => {
      const f = files[name] as Uint8Array | LayerFile;
      const file =
        f instanceof Uint8Array ? { data: f, mode: 0o755 } : { data: f.data, mode: f.mode ?? 0o755 };
      return { type: 'file', name, mode: file.mode, mtimeSec, data: file.data };
    }),
  ]);
}

/** The image config JSON of `image` over layers with these diff ids, as `docker save` writes it. */
export function imageConfig(image: ImageSpec, diffIds: readonly string[]): Record<string, unknown> {
  const c = image.config ?? {};
  return {
    architecture: ociArch(),
    os: 'linux',
    created: '1970-01-01T00:00:00Z',
    config: {
      Entrypoint: image.entrypoint,
      ...(c.cmd !== undefined ? { Cmd: c.cmd } : {}),
      Env: c.env ?? ['PATH=/'],
      WorkingDir: c.workingDir ?? '/',
      ...(c.user !== undefined ? { User: c.user } : {}),
      ...(c.exposedPorts !== undefined
        ? { ExposedPorts: Object.fromEntries(c.exposedPorts.map((p) => [p, {}])) }
        : {}),
    },
    rootfs: { type: 'layers', diff_ids: diffIds.map((d) => `sha256:${d}`) },
    history: diffIds.map(() => ({
      created: '1970-01-01T00:00:00Z',
      created_by: 'agent-controller test/support/real-node/images.ts',
    })),
  };
}

/** A docker-archive tar of `image`, as `docker save` writes it. */
export function dockerArchive(image: ImageSpec): Uint8Array {
  const mtimeSec = 0;
  const layers = (image.layers ?? [image.files ?? {}]).map((files, i) => layerTar(files, i === 0));
  const diffIds = layers.map((l) => sha256(l));
  const config = JSON.stringify(imageConfig(image, diffIds));
  const configName = `${sha256(config)}.json`;
  const layerNames = diffIds.map((d) => `${d}/layer.tar`);
  const manifest = JSON.stringify([{ Config: configName, RepoTags: [image.ref], Layers: layerNames }]);
  const text = (s: string): Uint8Array => new TextEncoder().encode(s);
  const seen = new Set<string>();
  const layerEntries = layers.flatMap((layer, i): TarEntry[] => {
    const d = diffIds[i] as string;
    if (seen.has(d)) return [];
    seen.add(d);
    return [
      { type: 'dir', name: d, mode: 0o755, mtimeSec },
      { type: 'file', name: `${d}/layer.tar`, mode: 0o644, mtimeSec, data: layer },
    ];
  });
  return buildTar([
    ...layerEntries,
    { type: 'file', name: configName, mode: 0o644, mtimeSec, data: text(config) },
    { type: 'file', name: 'manifest.json', mode: 0o644, mtimeSec, data: text(manifest) },
  ]);
}

/** Builds `<name>.c` of this folder as a static, stripped executable in `outDir`; returns its bytes. */
function buildStatic(name: string, outDir: string): Uint8Array {
  const out = join(outDir, name);
  const r = spawnSync(
    'gcc',
    ['-static', '-Os', '-s', '-Wall', '-Wextra', '-Werror', '-o', out, join(HERE, `${name}.c`)],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (r.error) throw new Error(`gcc is required to build the real node's images: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`gcc ${name}.c failed (is libc6-dev installed?): ${r.stderr.trim()}`);
  return readFileSync(out);
}

/** Builds the pause and test images into `outDir`; returns the archive paths to import. */
export function buildRealNodeImages(outDir: string): string[] {
  mkdirSync(outDir, { recursive: true });
  const specs: ImageSpec[] = [
    { ref: PAUSE_IMAGE, files: { pause: buildStatic('pause', outDir) }, entrypoint: ['/pause'] },
    { ref: HELLO_IMAGE, files: { hello: buildStatic('hello', outDir) }, entrypoint: ['/hello'] },
  ];
  return specs.map((spec) => {
    const file = join(outDir, `${spec.ref.replace(/[^a-z0-9.-]+/g, '_')}.tar`);
    writeFileSync(file, dockerArchive(spec));
    return file;
  });
}
