// `npm run gen:helm`: regenerates the Helm chart deploy/helm/agent-controller from the kustomize base deploy/ (its
// kustomization, the files it lists, deploy/components/*, deploy/crds) and package.json's version; files of the
// chart directory that the generator no longer writes are removed.
// `npm run gen:helm -- --check`: writes nothing; exits 1 and names each file that differs, is missing or is extra.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const CHART_DIR = join('deploy', 'helm', 'agent-controller');
const check = process.argv.slice(2).includes('--check');

const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/helm/print.ts'], {
  cwd: root,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
  maxBuffer: 64 * 1024 * 1024,
});
if (r.error) throw r.error;
if (r.status !== 0) {
  console.error(`gen:helm: generator exited with ${r.status ?? r.signal}`);
  process.exit(2);
}
/** @type {Record<string, string>} */
const files = JSON.parse(r.stdout);

/** Files under `dir` (relative to the repository root); none when it does not exist. */
function listFiles(dir) {
  let names;
  try {
    names = readdirSync(join(root, dir));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const rel = join(dir, name);
    return statSync(join(root, rel)).isDirectory() ? listFiles(rel) : [rel];
  });
}

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
    console.error(`gen:helm: ${rel} is ${current === undefined ? 'missing' : 'out of date'}`);
    drifted++;
    continue;
  }
  mkdirSync(dirname(abs), { recursive: true });
  writeFileSync(abs, content);
  console.log(`gen:helm: wrote ${rel}`);
}
for (const rel of listFiles(CHART_DIR)) {
  const key = relative(root, join(root, rel)).split('\\').join('/');
  if (key in files) continue;
  if (check) {
    console.error(`gen:helm: ${key} is not generated (remove it, or change the generator)`);
    drifted++;
    continue;
  }
  rmSync(join(root, rel));
  console.log(`gen:helm: removed ${key}`);
}
if (check) {
  if (drifted > 0) {
    console.error(`gen:helm: ${drifted} file(s) drifted; run npm run gen:helm`);
    process.exit(1);
  }
  console.log(`gen:helm: ${CHART_DIR} is up to date`);
}
