// More test images for the real node, assembled like the product image (./product-image.ts) over its runtime layer
// (the same bytes, so containerd stores that layer once): a tool sidecar serving MCP (../mcp-tool-server.mjs), and
// the real Claude Code as scripts/install-clis installed it (its native executable) with the bash and cat its Bash
// tool runs. Nothing is pulled; docs/design/real-node.md says what each is for.
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
 * The agent container image of real Claude Code runs: Node's runtime layer, the CLI at /usr/local/bin/claude, bash
 * (also as /bin/sh) and cat. Named by the CLI's version: it holds nothing of the bundle under test, so one import
 * serves every run of a test bed (its containerd goes with `testbed down`).
 */
export function claudeImageRef(version: string): string {
  return `acrn.invalid/claude-code:${version}`;
}

/**
 * Programs of this machine (image path → host path) with the shared libraries `ldd` names for each, at the paths
 * it prints. A library the runtime layer already holds is written again with the same bytes (layers overlay).
 */
export function hostProgramsLayer(programs: Readonly<Record<string, string>>): Layer {
  const layer: Record<string, { data: Uint8Array; mode: number }> = {};
  for (const [at, path] of Object.entries(programs)) {
    layer[at.replace(/^\//, '')] = hostFile(path);
    const ldd = spawnSync('ldd', [path], { encoding: 'utf8' });
    if (ldd.error || ldd.status !== 0)
      throw new Error(`ldd ${path} failed: ${ldd.error?.message ?? ldd.stderr.trim()}`);
    for (const lib of parseLdd(ldd.stdout)) layer[lib.slice(1)] = hostFile(lib);
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

/**
 * The real Claude Code's image: the runtime layer (the supervisor the init copies runs on it), a shell layer
 * (Claude Code's Bash tool runs `bash`; the product image has no shell) and the CLI's native executable.
 */
export function claudeImageSpec(ref: string, nodeBinary: string, claudeExecutable: string): ImageSpec {
  const shell = hostProgramsLayer({ '/bin/bash': '/bin/bash', '/bin/cat': '/bin/cat' });
  const sh = shell['bin/bash'] as { data: Uint8Array; mode: number };
  return {
    ref,
    layers: [
      runtimeLayer(nodeBinary),
      { ...shell, 'bin/sh': sh },
      hostProgramsLayer({ '/usr/local/bin/claude': claudeExecutable }),
    ],
    entrypoint: ['/usr/local/bin/claude'],
    config: { env: DISTROLESS.env, user: DISTROLESS.user },
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
