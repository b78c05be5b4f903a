// The product's image for the real node, assembled from files like the test bed's other images (images.ts): the
// bundle and this machine's Node with the shared libraries `ldd` names, in the layout, user, entrypoint and
// no-shell shape of Dockerfile.distroless's last stage (`controller`), which test/unit/product-image.test.ts reads
// and compares. Plus a test image: the same layers and the mock agent CLI (test/mock-agent) on PATH as `mock-agent`
// and under each vendor CLI's name, which a run pod uses as its init image (the init finds the routed CLI and
// installs nothing; a real CLI's run has the real one in its agent container's image, ./cli-images.ts) and as its
// agent container's image (the copied Node finds its libraries there). How the assembled image differs from one
// `docker build` makes: docs/design/real-node.md#the-products-image.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dockerArchive, type ImageSpec, type Layer } from './images.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The product image: what `AGENT_IMAGE` names for run pods on the real node. */
export const PRODUCT_IMAGE = 'acrn.invalid/agent-controller:1';
/** The product image plus the mock agent CLI: init image and agent container image of the real node's test runs. */
export const MOCK_CLI_IMAGE = 'acrn.invalid/agent-controller-mock-cli:1';

/** The last stage of Dockerfile.distroless, as the assembler reproduces it (checked against the file by a unit test). */
export const DISTROLESS = {
  node: '/nodejs/bin/node',
  bundle: '/app/agent-controller.mjs',
  workingDir: '/app',
  user: '65532:65532',
  exposedPorts: ['8081/tcp'],
  entrypoint: ['/nodejs/bin/node', '--max-semi-space-size=4', '/app/agent-controller.mjs'],
  cmd: ['controller'],
  /** The distroless base's PATH (the usual Debian one; the image has no shell to use it). */
  env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
} as const;

/** The users and groups of a distroless `nonroot` image (root, nonroot 65532, nobody). */
const PASSWD =
  'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n';
const GROUP = 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n';

/**
 * The shared objects `ldd` says `binary` loads, as absolute paths the dynamic loader looks up (the loader itself
 * included; the vDSO, which the kernel provides, left out). Throws when one is not found.
 */
export function parseLdd(output: string): string[] {
  const paths: string[] = [];
  for (const raw of output.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (/=>\s*not found/.test(line)) throw new Error(`ldd: a library is missing: ${line}`);
    const arrow = /^\S+\s+=>\s+(\/\S+)\s+\(0x[0-9a-f]+\)$/.exec(line);
    const bare = /^(\/\S+)\s+\(0x[0-9a-f]+\)$/.exec(line);
    const path = arrow?.[1] ?? bare?.[1];
    if (path !== undefined) paths.push(path);
    else if (!/^\S+\s+\(0x[0-9a-f]+\)$/.test(line) && !/=>\s+\(0x/.test(line))
      throw new Error(`ldd: a line this parser does not know: ${line}`);
  }
  return paths;
}

/** The files of `path` for a layer: the bytes of what it resolves to, at the path itself, with that file's mode. */
export function hostFile(path: string): { data: Uint8Array; mode: number } {
  const real = realpathSync(path);
  return { data: readFileSync(real), mode: statSync(real).mode & 0o777 };
}

/**
 * The runtime layer: this machine's Node at /nodejs/bin/node, the libraries it loads (at the paths `ldd` prints,
 * copied from what they resolve to), and /etc/passwd and /etc/group of a distroless nonroot image.
 */
export function runtimeLayer(nodeBinary: string): Layer {
  const ldd = spawnSync('ldd', [nodeBinary], { encoding: 'utf8' });
  if (ldd.error || ldd.status !== 0)
    throw new Error(`ldd ${nodeBinary} failed: ${ldd.error?.message ?? ldd.stderr.trim()}`);
  const text = (s: string) => ({ data: new TextEncoder().encode(s), mode: 0o644 });
  const layer: Record<string, { data: Uint8Array; mode: number }> = {
    [DISTROLESS.node.slice(1)]: hostFile(nodeBinary),
    'etc/passwd': text(PASSWD),
    'etc/group': text(GROUP),
  };
  for (const lib of parseLdd(ldd.stdout)) layer[lib.slice(1)] = hostFile(lib);
  return layer;
}

/** The app layer: the bundle at /app/agent-controller.mjs (0644, as COPY leaves a 0644 file). */
export function appLayer(bundlePath: string): Layer {
  return { [DISTROLESS.bundle.slice(1)]: { data: readFileSync(bundlePath), mode: 0o644 } };
}

/** The vendor CLIs' names (src/vendors/cli: the executable each run looks for), beside `mock-agent`. */
export const MOCK_CLI_NAMES = ['claude', 'codex', 'gemini', 'opencode', 'mock-agent'] as const;

/** The mock agent CLI under each of MOCK_CLI_NAMES: the script with its `#!` line naming the image's Node. */
export function mockCliLayer(): Layer {
  const source = readFileSync(join(ROOT, 'test', 'mock-agent', 'mock-agent.mjs'), 'utf8');
  const body = source.replace(/^#!.*\n/, '');
  const data = new TextEncoder().encode(`#!${DISTROLESS.node}\n${body}`);
  return Object.fromEntries(MOCK_CLI_NAMES.map((name) => [`usr/local/bin/${name}`, { data, mode: 0o755 }]));
}

/** The product image and the mock-CLI test image over the same bottom layers. */
export function productImageSpecs(nodeBinary: string, bundlePath: string): ImageSpec[] {
  const base = [runtimeLayer(nodeBinary), appLayer(bundlePath)];
  const config = {
    cmd: DISTROLESS.cmd,
    env: DISTROLESS.env,
    workingDir: DISTROLESS.workingDir,
    user: DISTROLESS.user,
    exposedPorts: DISTROLESS.exposedPorts,
  };
  return [
    { ref: PRODUCT_IMAGE, layers: base, entrypoint: DISTROLESS.entrypoint, config },
    { ref: MOCK_CLI_IMAGE, layers: [...base, mockCliLayer()], entrypoint: DISTROLESS.entrypoint, config },
  ];
}

/** This machine's Node (the one running this code; Deno has none to give). */
export function hostNodeBinary(): string {
  if ('Deno' in globalThis) throw new Error('the product image takes its Node from a Node process');
  return realpathSync(process.execPath);
}

/** Writes the two images' docker archives to `outDir`; returns their paths. */
export function buildProductImages(outDir: string, bundlePath: string): string[] {
  mkdirSync(outDir, { recursive: true });
  return productImageSpecs(hostNodeBinary(), bundlePath).map((spec) => {
    const file = join(outDir, `${spec.ref.replace(/[^a-z0-9.-]+/g, '_')}.tar`);
    writeFileSync(file, dockerArchive(spec));
    return file;
  });
}

/** Imports docker archives into the real node's containerd (namespace k8s.io, where the kubelet's images are). */
export function importImages(containerdSocket: string, archives: readonly string[]): void {
  for (const archive of archives) {
    const r = spawnSync(
      'ctr',
      ['--address', containerdSocket, '--namespace', 'k8s.io', 'images', 'import', archive],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    if (r.error || r.status !== 0)
      throw new Error(`ctr images import ${archive}: ${r.error?.message ?? r.stderr.trim()}`);
  }
}
