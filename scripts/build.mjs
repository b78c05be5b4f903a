// Bundles src/main.ts into ONE ESM file, dist/agent-controller.mjs, that runs on Node >= 20 and Deno 2.
// Runs on Node (`npm run build`) and Deno (`deno task build`).
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const outfile = join(root, 'dist', 'agent-controller.mjs');
/** Size budget for the bundle; raise it deliberately, never silently. */
const MAX_BUNDLE_BYTES = 6 * 1024 * 1024;

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: ['src/main.ts'],
  outfile,
  bundle: true,
  platform: 'node',
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

const bytes = statSync(outfile).size;
if (bytes > MAX_BUNDLE_BYTES) {
  console.error(`build: ${outfile} is ${bytes} bytes, over the ${MAX_BUNDLE_BYTES}-byte budget`);
  process.exit(1);
}
const inputs = Object.keys(result.metafile.inputs).length;
console.log(`build: ${outfile} (${(bytes / 1024).toFixed(0)} KiB from ${inputs} inputs)`);
