// The one runner of the `npm run gen:*` scripts: runs a TypeScript printer that prints the generated files as one
// JSON object {path: content} on stdout, then writes the files that differ (or, with `--check`, writes nothing and
// exits 1 naming each file that is missing or out of date). With `prune`, files under the target directories that
// the printer no longer writes are removed (with `--check`: reported).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/**
 * @param {{ name: string, root: string, printer: string, target: string | string[], prune?: boolean }} o
 *   name: `gen:x` (messages); root: the repository; printer: the .ts entry; target: the directory, or directories,
 *   generated into (messages, and the directories pruned).
 */
export function generateFiles(o) {
  const check = process.argv.slice(2).includes('--check');
  const targets = typeof o.target === 'string' ? [o.target] : o.target;
  const r = spawnSync(process.execPath, ['--import', 'tsx', o.printer], {
    cwd: o.root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  if (r.status !== 0) {
    console.error(`${o.name}: generator exited with ${r.status ?? r.signal}`);
    process.exit(2);
  }
  /** @type {Record<string, string>} */
  const files = JSON.parse(r.stdout);
  let drifted = 0;
  for (const [rel, content] of Object.entries(files)) {
    const abs = join(o.root, rel);
    let current;
    try {
      current = readFileSync(abs, 'utf8');
    } catch {
      current = undefined;
    }
    if (current === content) continue;
    if (check) {
      console.error(`${o.name}: ${rel} is ${current === undefined ? 'missing' : 'out of date'}`);
      drifted++;
      continue;
    }
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, content);
    console.log(`${o.name}: wrote ${rel}`);
  }
  if (o.prune === true) {
    for (const rel of targets.flatMap((t) => listFiles(o.root, t))) {
      const key = relative(o.root, join(o.root, rel)).split('\\').join('/');
      if (key in files) continue;
      if (check) {
        console.error(`${o.name}: ${key} is not generated (remove it, or change the generator)`);
        drifted++;
        continue;
      }
      rmSync(join(o.root, rel));
      console.log(`${o.name}: removed ${key}`);
    }
  }
  if (check) {
    if (drifted > 0) {
      console.error(`${o.name}: ${drifted} file(s) drifted; run npm run ${o.name}`);
      process.exit(1);
    }
    console.log(`${o.name}: ${targets.join(' and ')} ${targets.length === 1 ? 'is' : 'are'} up to date`);
  }
}

/** Files under `dir` (relative to `root`); none when it does not exist. */
function listFiles(root, dir) {
  let names;
  try {
    names = readdirSync(join(root, dir));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const rel = join(dir, name);
    return statSync(join(root, rel)).isDirectory() ? listFiles(root, rel) : [rel];
  });
}
