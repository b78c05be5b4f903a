// `npm run gen:monitoring`: regenerates deploy/monitoring/{rules.yaml,prometheus-rule.yaml,dashboard.json} from
// src/metrics/monitoring/ (alerts.ts, dashboard.ts). deploy/monitoring/rules.test.yaml is written by hand.
// `npm run gen:monitoring -- --check`: writes nothing; exits 1 and names each file that differs from the generated text.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.slice(2).includes('--check');

const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/metrics/monitoring/print.ts'], {
  cwd: root,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
  maxBuffer: 64 * 1024 * 1024,
});
if (r.error) throw r.error;
if (r.status !== 0) {
  console.error(`gen:monitoring: generator exited with ${r.status ?? r.signal}`);
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
    console.error(`gen:monitoring: ${rel} is ${current === undefined ? 'missing' : 'out of date'}`);
    drifted++;
    continue;
  }
  mkdirSync(dirname(abs), { recursive: true });
  writeFileSync(abs, content);
  console.log(`gen:monitoring: wrote ${rel}`);
}
if (check) {
  if (drifted > 0) {
    console.error(`gen:monitoring: ${drifted} file(s) drifted; run npm run gen:monitoring`);
    process.exit(1);
  }
  console.log('gen:monitoring: deploy/monitoring is up to date');
}
