// More test images for the real node, assembled like the product image (./product-image.ts) over its runtime layer
// (the same bytes, so containerd stores that layer once): a tool sidecar serving MCP (../mcp-tool-server.mjs); the
// real vendor CLIs' images are in ./cli-images.ts. Nothing is pulled; docs/design/real-node.md says what each is for.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dockerArchive, type ImageSpec, type Layer } from './images.ts';
import { DISTROLESS, hostFile, parseLdd, runtimeLayer } from './product-image.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

/** A tool sidecar: Node and test/support/mcp-tool-server.mjs (MCP_PORT, MCP_ANSWER), run as its entrypoint. */
export const MCP_TOOL_IMAGE = 'acrn.invalid/mcp-tool:1';

/**
 * Programs of this machine (image path → host path) with the shared libraries `ldd` names for each, at the paths
 * it prints; a library that `below` (a lower layer of the image) holds with the same bytes is left to it.
 */
export function hostProgramsLayer(programs: Readonly<Record<string, string>>, below: Layer = {}): Layer {
  const layer: Record<string, { data: Uint8Array; mode: number }> = {};
  for (const [at, path] of Object.entries(programs)) {
    layer[at.replace(/^\//, '')] = hostFile(path);
    const ldd = spawnSync('ldd', [path], { encoding: 'utf8' });
    if (ldd.error || ldd.status !== 0)
      throw new Error(`ldd ${path} failed: ${ldd.error?.message ?? ldd.stderr.trim()}`);
    for (const lib of parseLdd(ldd.stdout)) {
      const file = hostFile(lib);
      const lower = below[lib.slice(1)];
      const lowerData = lower instanceof Uint8Array ? lower : lower?.data;
      if (lowerData === undefined || !Buffer.from(lowerData).equals(file.data)) layer[lib.slice(1)] = file;
    }
  }
  return layer;
}

/** The MCP tool sidecar image (its user is the pod's: the run pod sets uid 1000). */
export function mcpToolImageSpec(nodeBinary: string): ImageSpec {
  const server = readFileSync(join(HERE, '..', 'mcp-tool-server.mjs'));
  return {
    ref: MCP_TOOL_IMAGE,
    layers: [runtimeLayer(nodeBinary), { 'opt/mcp-tool-server.mjs': { data: server, mode: 0o644 } }],
    entrypoint: [DISTROLESS.node, '/opt/mcp-tool-server.mjs'],
    config: { env: DISTROLESS.env, workingDir: '/opt' },
  };
}

/** Writes each image's docker archive to `outDir`; returns their paths (for ./product-image.ts's importImages). */
export function writeImages(outDir: string, specs: readonly ImageSpec[]): string[] {
  mkdirSync(outDir, { recursive: true });
  return specs.map((spec) => {
    const file = join(outDir, `${spec.ref.replace(/[^a-z0-9.-]+/g, '_')}.tar`);
    writeFileSync(file, dockerArchive(spec));
    return file;
  });
}

/** Whether the node's containerd has an image of that name already. */
export function hasImage(containerdSocket: string, ref: string): boolean {
  const r = spawnSync(
    'ctr',
    ['--address', containerdSocket, '--namespace', 'k8s.io', 'images', 'ls', '--quiet', `name==${ref}`],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (r.error || r.status !== 0) throw new Error(`ctr images ls: ${r.error?.message ?? r.stderr.trim()}`);
  return r.stdout.split('\n').includes(ref);
}
