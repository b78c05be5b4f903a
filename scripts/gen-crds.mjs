// `npm run gen:crds`: regenerates deploy/crds/*.yaml from the valibot schemas in src/api/.
// `npm run gen:crds -- --check`: writes nothing; exits 1 and names each file that differs from the generated text.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.slice(2).includes('--check');

const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/api/crd/print.ts'], {
  cwd: root,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
  maxBuffer: 64 * 1024 * 1024,
});
if (r.error) throw r.error;
if (r.status !== 0) {
  console.error(`gen:crds: generator exited with ${r.status ?? r.signal}`);
  process.exit(2);
}
/** @type {Record<string, string>} */
const files = JSON.parse(r.stdout);

let drifted = 0;
for (const [rel, content] of Object.entries(files)) {
  const abs = join(root, rel);
  let current;
  try {
    current = readFileSync(abs, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === content) continue;
  if (check) {
    console.error(`gen:crds: ${rel} is ${current === undefined ? 'missing' : 'out of date'}`);
    drifted++;
    continue;
  }
  mkdirSync(dirname(abs), { recursive: true });
  writeFileSync(abs, content);
  console.log(`gen:crds: wrote ${rel}`);
}
if (check) {
  if (drifted > 0) {
    console.error(`gen:crds: ${drifted} file(s) drifted; run npm run gen:crds`);
    process.exit(1);
  }
  console.log('gen:crds: deploy/crds is up to date');
}
