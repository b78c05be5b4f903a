// Bundles src/main.ts into ONE ESM file, dist/agent-controller.mjs, that runs on Node >= 20 and Deno 2.
// Runs on Node (`npm run build`) and Deno (`deno task build`).
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const outfile = join(root, 'dist', 'agent-controller.mjs');
/**
 * Size budget for the bundle; raise it deliberately, never silently. 1.5 MiB until the model gateway (issue 28,
 * about 50 KiB: `agent-controller gateway`) took the bundle to 1,552 KiB; 1.625 MiB until durable sessions (issue 29:
 * the S3 client and session store the controller now calls, the supervisor's session state, suspend and wake,
 * about 50 KiB) took it to 1,716 KiB.
 */
const MAX_BUNDLE_BYTES = 1.75 * 1024 * 1024;

/**
 * We use `@kubernetes/client-node` only to load a kubeconfig and apply its auth (src/kube/config.ts); requests go
 * through our own transport. Its config module also imports the whole generated API client (for `makeApiClient`),
 * node-fetch (for `applyToFetchOptions`) and proxy agents (for `createAgent`): none of them is reached from the
 * calls we make, and together they are more than half of the bundle. Inside client-node only, they are replaced
 * by small stand-ins that fail loudly if anything ever does reach them.
 */
const KUBECONFIG_ONLY_STUBS = {
  './gen/index.js': [
    "const unbundled = () => { throw new Error('agent-controller bundles only the kubeconfig loader of @kubernetes/client-node'); };",
    'export const createConfiguration = unbundled;',
    'export class ServerConfiguration { constructor() { unbundled(); } }',
  ].join('\n'),
  'node-fetch': 'export const Headers = globalThis.Headers; export default globalThis.fetch;',
  // A kubeconfig proxy-url is ignored by our transport (documented); the agent object built for it is never used.
  'socks-proxy-agent': 'export class SocksProxyAgent {}',
  hpagent: 'export class HttpProxyAgent {} export class HttpsProxyAgent {}',
};
const kubeconfigOnly = {
  name: 'kubeconfig-only',
  setup(build) {
    const filter = /^(\.\/gen\/index\.js|node-fetch|socks-proxy-agent|hpagent)$/;
    build.onResolve({ filter }, (args) =>
      /[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]config\.js$/.test(args.importer)
        ? { path: args.path, namespace: 'kubeconfig-only' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'kubeconfig-only' }, (args) => ({
      contents: KUBECONFIG_ONLY_STUBS[args.path],
      loader: 'js',
    }));
  },
};

const result = await esbuild.build({
  plugins: [kubeconfigOnly],
  absWorkingDir: root,
  entryPoints: ['src/main.ts'],
  outfile,
  bundle: true,
  platform: 'node',
  // Prefer a package's ES module build where it has one: the OpenTelemetry packages ship both, and only the ESM
  // build tree-shakes (their CommonJS build costs 680 KiB instead of 128 KiB; issue 10 §5).
  mainFields: ['module', 'main'],
  format: 'esm',
  target: ['node20', 'deno2'],
  minifySyntax: true,
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
  define: { __VERSION__: JSON.stringify(pkg.version) },
  // CommonJS dependencies call require() for Node built-ins; give the ESM bundle one.
  banner: {
    js: [
      '#!/usr/bin/env node',
      "import { createRequire as __acCreateRequire } from 'node:module';",
      'const require = __acCreateRequire(import.meta.url);',
    ].join('\n'),
  },
});

// Executable, so a copy named kubectl-agent on PATH works as a kubectl plugin (kubectl runs only executable files).
chmodSync(outfile, 0o755);
const bytes = statSync(outfile).size;
if (bytes > MAX_BUNDLE_BYTES) {
  console.error(`build: ${outfile} is ${bytes} bytes, over the ${MAX_BUNDLE_BYTES}-byte budget`);
  process.exit(1);
}
const inputs = Object.keys(result.metafile.inputs).length;
console.log(`build: ${outfile} (${(bytes / 1024).toFixed(0)} KiB from ${inputs} inputs)`);
