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

/** One image: a reference, the files of its single layer and how it starts. */
export interface ImageSpec {
  readonly ref: string;
  /** Path inside the image (no leading slash) → bytes; written with mode 0755. */
  readonly files: Readonly<Record<string, Uint8Array>>;
  readonly entrypoint: readonly string[];
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

/** A docker-archive tar of `image` (one layer), as `docker save` writes it. */
export function dockerArchive(image: ImageSpec): Uint8Array {
  const mtimeSec = 0;
  const layer = buildTar([
    ...SKELETON.map(
      (name): TarEntry => ({ type: 'dir', name, mode: name === 'tmp' ? 0o1777 : 0o755, mtimeSec }),
    ),
    ...Object.entries(image.files).map(
      ([name, data]): TarEntry => ({ type: 'file', name, mode: 0o755, mtimeSec, data }),
    ),
  ]);
  const diffId = sha256(layer);
  const config = JSON.stringify({
    architecture: ociArch(),
    os: 'linux',
    created: '1970-01-01T00:00:00Z',
    config: { Entrypoint: image.entrypoint, Env: ['PATH=/'], WorkingDir: '/' },
    rootfs: { type: 'layers', diff_ids: [`sha256:${diffId}`] },
    history: [
      { created: '1970-01-01T00:00:00Z', created_by: 'agent-controller test/support/real-node/images.ts' },
    ],
  });
  const configName = `${sha256(config)}.json`;
  const layerName = `${diffId}/layer.tar`;
  const manifest = JSON.stringify([{ Config: configName, RepoTags: [image.ref], Layers: [layerName] }]);
  const text = (s: string): Uint8Array => new TextEncoder().encode(s);
  return buildTar([
    { type: 'dir', name: diffId, mode: 0o755, mtimeSec },
    { type: 'file', name: layerName, mode: 0o644, mtimeSec, data: layer },
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
