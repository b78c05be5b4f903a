// The real vendor CLIs as agent container images for the real node (docs/design/real-node.md#the-real-vendor-clis),
// assembled like the product image (./product-image.ts) from what scripts/install-clis installed (the npm cache the
// test bed fills: nothing is downloaded here or at run time). Each image is three layers, the first two the same
// bytes in all four (containerd stores them once):
//   1. the runtime layer: Node and its libraries (the supervisor the init copies into the pod runs on them);
//   2. a shell layer: bash (also as /bin/sh) and cat, which the CLIs' shell tools run (the product image has none);
//   3. the CLI: what it runs, and nothing it does not (per CLI below).
// Named by the CLI's version: an image holds nothing of the bundle under test, so one import serves every run of a
// test bed (its containerd goes with `testbed down`).
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { CliManifest, RealCli } from '../real-clis.ts';
import { packageRoot } from '../real-clis.ts';
import { hasImage, hostProgramsLayer, writeImages } from './extra-images.ts';
import type { ImageSpec, Layer, LayerFile } from './images.ts';
import { DISTROLESS, importImages, runtimeLayer } from './product-image.ts';

/** The image of each CLI, by the name its vendor gives it. */
const IMAGE_NAMES: Readonly<Record<RealCli, string>> = {
  claude: 'claude-code',
  codex: 'codex',
  gemini: 'gemini-cli',
  opencode: 'opencode',
};

/** `acrn.invalid/<name>:<version>`: the agent container image of a real CLI's runs on the real node. */
export function cliImageRef(cli: RealCli, version: string): string {
  return `acrn.invalid/${IMAGE_NAMES[cli]}:${version}`;
}

/** The files under `hostDir` (none left out unless `leaveOut` says so), at `imageDir`, with their modes. */
export function treeLayer(
  hostDir: string,
  imageDir: string,
  leaveOut: (rel: string) => boolean = () => false,
): Record<string, LayerFile> {
  const layer: Record<string, LayerFile> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const rel = relative(hostDir, path);
      if (leaveOut(rel)) continue;
      const st = statSync(path);
      if (st.isDirectory()) walk(path);
      else if (st.isFile())
        layer[`${imageDir.replace(/^\//, '')}/${rel}`] = { data: readFileSync(path), mode: st.mode & 0o777 };
      else throw new Error(`${path}: neither a file nor a folder`);
    }
  };
  walk(hostDir);
  return layer;
}

/** A `/bin/sh` script at `at` that runs `argv` with the script's arguments (an npm `bin` link, as a file). */
function launcher(at: string, argv: readonly string[]): Record<string, LayerFile> {
  const data = new TextEncoder().encode(`#!/bin/sh\nexec ${argv.join(' ')} "$@"\n`);
  return { [at.replace(/^\//, '')]: { data, mode: 0o755 } };
}

/**
 * Codex: its platform package's layout (`codex-package.json` names `bin/codex`, `codex-resources`, `codex-path`),
 * found by the binary beside itself, at /opt/codex, and `codex` on PATH. Left out: `bin/codex-code-mode-host` (70
 * MB; it runs the JavaScript of the `exec` tool of models Codex runs in code mode; a model it does not know, as the
 * scripted one, gets the classic `exec_command`) and `codex-resources/voice` (51 MB of GStreamer libraries for the
 * interactive voice mode). Kept: `codex-resources/bwrap` (Codex's own sandboxes, `read-only` and `workspace-write`,
 * which the product does not use: docs/reference/vendor-clis.md#sandbox-and-approvals) and `codex-path/rg` (on the
 * PATH of the commands it runs). The binary is static (musl): no library to add.
 */
function codexLayer(executable: string): Layer {
  const root = dirname(dirname(executable));
  const left = new Set(['bin/codex-code-mode-host', 'codex-resources/voice']);
  return {
    ...treeLayer(root, '/opt/codex', (rel) => left.has(rel)),
    ...launcher('/usr/local/bin/codex', ['/opt/codex/bin/codex']),
  };
}

/**
 * Gemini CLI: its npm package as installed (a bundled Node program that loads its chunks as it needs them, so all of
 * them) at /opt/gemini-cli, and `gemini` on PATH running it with the image's Node.
 */
function geminiLayer(script: string): Layer {
  const root = packageRoot(script);
  return {
    ...treeLayer(root, '/opt/gemini-cli'),
    ...launcher('/usr/local/bin/gemini', [DISTROLESS.node, `/opt/gemini-cli${script.slice(root.length)}`]),
  };
}

/** The image of `cli`, as scripts/install-clis installed it (`manifest`), with this machine's Node. */
export function cliImageSpec(cli: RealCli, manifest: CliManifest, nodeBinary: string): ImageSpec {
  const entry = manifest.clis[cli];
  const runtime = runtimeLayer(nodeBinary);
  const shell = hostProgramsLayer({ '/bin/bash': '/bin/bash', '/bin/cat': '/bin/cat' }, runtime);
  const sh = shell['bin/bash'] as LayerFile;
  const own: Layer =
    cli === 'codex'
      ? codexLayer(entry.path)
      : cli === 'gemini'
        ? geminiLayer(entry.path)
        : // Claude Code and OpenCode: one native executable each (OpenCode's with the glibc libraries it loads).
          hostProgramsLayer({ [`/usr/local/bin/${cli}`]: entry.path }, runtime);
  return {
    ref: cliImageRef(cli, entry.version),
    layers: [runtime, { ...shell, 'bin/sh': sh }, own],
    entrypoint: [`/usr/local/bin/${cli}`],
    config: { env: DISTROLESS.env, user: DISTROLESS.user },
  };
}

/**
 * The images of `clis` in the node's containerd: each one it lacks assembled into `dir`, imported, and its archive
 * (up to 430 MB) removed again. Returns the references, in the order of `clis`.
 */
export function importCliImages(
  containerdSocket: string,
  dir: string,
  manifest: CliManifest,
  nodeBinary: string,
  clis: readonly RealCli[],
): string[] {
  const refs = clis.map((cli) => cliImageRef(cli, manifest.clis[cli].version));
  for (const [i, cli] of clis.entries()) {
    if (hasImage(containerdSocket, refs[i] as string)) continue;
    const archives = writeImages(dir, [cliImageSpec(cli, manifest, nodeBinary)]);
    importImages(containerdSocket, archives);
    for (const archive of archives) rmSync(archive);
  }
  return refs;
}
