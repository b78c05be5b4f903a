// The layers of ARCHITECTURE.md, enforced: every import between folders of src/ (type-only imports included) must be
// one the "may import" column of its Layers table allows, every folder of src/ must have a row, and no file of src/
// may take part in an import cycle. The table is read from ARCHITECTURE.md itself, so the map and the check cannot
// drift apart.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SRC = join(ROOT, 'src');
const ROOT_FOLDER = '(root)';

/** Source files of the product: tests and their fixtures are not part of the layering. */
function productFiles(dir = SRC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return productFiles(path);
    const isTest = /\.test(-support)?\.ts$/.test(name) || name === 'test-fixtures.ts';
    return name.endsWith('.ts') && !isTest ? [relative(SRC, path).split('\\').join('/')] : [];
  });
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** The relative imports of one source text, resolved against its own path (both `src/`-relative). */
export function importsOf(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? '';
    out.push(join(dirname(file), spec).split('\\').join('/'));
  }
  return out;
}

const folderOf = (file: string): string => (file.includes('/') ? (file.split('/')[0] ?? '') : ROOT_FOLDER);

/** Reads the Layers table: folder → the targets it may import (a target with `/` names one sub-folder). */
export function parseLayers(markdown: string): Map<string, string[]> {
  const start = markdown.indexOf('\n## Layers');
  assert.ok(start >= 0, 'ARCHITECTURE.md has a "## Layers" section');
  const end = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  const rows = new Map<string, string[]>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    // | `folder` | what it is | may import |
    const folder = /^`([^`]+)`$/.exec(cells[1] ?? '')?.[1];
    if (folder === undefined || cells.length < 5) continue;
    const targets = [...(cells[3] ?? '').matchAll(/`([^`]+)`/g)].map((t) => t[1] ?? '');
    rows.set(folder, targets);
  }
  return rows;
}

/** Imports between folders that the table does not allow, as `from -> to` lines. */
export function forbiddenImports(
  graph: ReadonlyMap<string, readonly string[]>,
  layers: ReadonlyMap<string, string[]>,
) {
  const bad: string[] = [];
  for (const [from, targets] of graph) {
    const own = folderOf(from);
    const allowed = layers.get(own) ?? [];
    for (const to of targets) {
      const theirs = folderOf(to);
      if (theirs === own) continue;
      const ok = allowed.some((a) => (a.includes('/') ? to.startsWith(`${a}/`) : a === theirs));
      if (!ok) bad.push(`${from} -> ${to}`);
    }
  }
  return bad.sort();
}

/** Strongly connected components of more than one file (Tarjan), each sorted, as the cycles of the graph. */
export function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (;;) {
      const w = stack.pop() ?? v;
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    const selfLoop = (graph.get(v) ?? []).includes(v);
    if (component.length > 1 || selfLoop) cycles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

/** The section of `markdown` under `heading` (up to the next `## `). */
function sectionOf(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `ARCHITECTURE.md has a "${heading}" section`);
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

/** One row of the snapshot readers table: the modules (a path ending in `/` is a folder) and the parts they read. */
export interface SnapshotReader {
  readonly reader: string;
  readonly modules: readonly string[];
  readonly reads: readonly string[];
}

/** Reads the "which modules read which parts" table of ARCHITECTURE.md's "## The snapshot" section. */
export function parseSnapshotReaders(markdown: string): SnapshotReader[] {
  const rows: SnapshotReader[] = [];
  for (const line of sectionOf(markdown, '## The snapshot').split('\n')) {
    // | reader | `module`, `module/` | `snapshot module` |
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length !== 5) continue;
    const code = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');
    const modules = code(cells[2] ?? '');
    const reads = code(cells[3] ?? '');
    const isRow =
      modules.length > 0 &&
      reads.length > 0 &&
      modules.every((m) => m.startsWith('reconcile/')) &&
      reads.every((r) => r.startsWith('reconcile/snapshot'));
    if (!isRow) continue;
    rows.push({ reader: cells[1] ?? '', modules, reads });
  }
  return rows;
}

const isSnapshotModule = (file: string): boolean =>
  file === 'reconcile/snapshot.ts' || file.startsWith('reconcile/snapshot/');

/** The decision modules whose snapshot imports the table governs. */
const DECISION_FOLDERS = [
  'reconcile/agent/',
  'reconcile/batch/',
  'reconcile/realtime/',
  'reconcile/serving/',
];

/**
 * Decision modules that are in no row or in several, and imports of snapshot modules their row does not list (a
 * mode reading another mode's observations, or the whole snapshot), as lines.
 */
export function snapshotReadViolations(
  graph: ReadonlyMap<string, readonly string[]>,
  readers: readonly SnapshotReader[],
): string[] {
  const bad: string[] = [];
  for (const [file, targets] of graph) {
    if (!DECISION_FOLDERS.some((f) => file.startsWith(f))) continue;
    const rows = readers.filter((r) =>
      r.modules.some((m) => (m.endsWith('/') ? file.startsWith(m) : m === file)),
    );
    if (rows.length !== 1) {
      bad.push(`${file} is in ${rows.length} rows of the snapshot readers table`);
      continue;
    }
    const row = rows[0] as SnapshotReader;
    for (const to of targets) {
      if (isSnapshotModule(to) && !row.reads.includes(to)) bad.push(`${file} (${row.reader}) -> ${to}`);
    }
  }
  return bad.sort();
}

function sourceGraph(): Map<string, string[]> {
  return new Map(productFiles().map((f) => [f, importsOf(f, readFileSync(join(SRC, f), 'utf8'))]));
}

describe('the checks themselves', () => {
  it('resolve imports, static, dynamic, type-only and re-exports', () => {
    const text = [
      "import { a } from '../kube/x.ts';",
      "import type { B } from './b.ts';",
      "export { c } from '../../shared/c.ts';",
      "const d = await import('../pod/shared/d.ts');",
      "import './side-effect.ts';",
      "import * as v from 'valibot';",
    ].join('\n');
    assert.deepEqual(importsOf('effects/batch/y.ts', text), [
      'effects/kube/x.ts',
      'effects/batch/b.ts',
      'shared/c.ts',
      'effects/pod/shared/d.ts',
      'effects/batch/side-effect.ts',
    ]);
  });

  it('find a forbidden folder, allow a listed sub-folder, refuse its siblings', () => {
    const layers = new Map([
      ['a', ['b', 'c/shared']],
      ['b', []],
    ]);
    const graph = new Map([
      ['a/x.ts', ['b/y.ts', 'c/shared/z.ts', 'c/other/w.ts', 'a/v.ts']],
      ['b/y.ts', ['a/x.ts']],
    ]);
    assert.deepEqual(forbiddenImports(graph, layers), ['a/x.ts -> c/other/w.ts', 'b/y.ts -> a/x.ts']);
  });

  it('find every cycle, type-only edges included, and nothing in a tree', () => {
    const graph = new Map([
      ['p.ts', ['q.ts']],
      ['q.ts', ['r.ts']],
      ['r.ts', ['p.ts']],
      ['s.ts', ['s.ts']],
      ['t.ts', ['p.ts', 'u.ts']],
      ['u.ts', []],
    ]);
    assert.deepEqual(importCycles(graph), [['p.ts', 'q.ts', 'r.ts'], ['s.ts']]);
    assert.deepEqual(
      importCycles(
        new Map([
          ['t.ts', ['u.ts']],
          ['u.ts', []],
        ]),
      ),
      [],
    );
  });

  it('read the Layers table', () => {
    const md = [
      '# X',
      '## Layers',
      '| folder | what | may import |',
      '|---|---|---|',
      '| `a` | first | `b`, `c/shared` |',
      '| `b` | second | (nothing) |',
      '## Next',
      '| `z` | not a layer | `a` |',
    ].join('\n');
    assert.deepEqual(
      [...parseLayers(md)],
      [
        ['a', ['b', 'c/shared']],
        ['b', []],
      ],
    );
  });

  it("find a mode reading another mode's observations, the whole snapshot, or a module in no row", () => {
    const readers: SnapshotReader[] = [
      {
        reader: 'job',
        modules: ['reconcile/agent/job.ts'],
        reads: ['reconcile/snapshot/common.ts', 'reconcile/snapshot/job.ts'],
      },
      {
        reader: 'batch',
        modules: ['reconcile/batch/'],
        reads: ['reconcile/snapshot/common.ts', 'reconcile/snapshot/batch.ts'],
      },
    ];
    const graph = new Map([
      [
        'reconcile/agent/job.ts',
        ['reconcile/snapshot/job.ts', 'reconcile/snapshot/batch.ts', 'api/index.ts'],
      ],
      ['reconcile/batch/plan.ts', ['reconcile/snapshot/common.ts', 'reconcile/snapshot.ts']],
      ['reconcile/serving/decide.ts', ['reconcile/snapshot/common.ts']],
      ['effects/x.ts', ['reconcile/snapshot.ts']],
    ]);
    assert.deepEqual(snapshotReadViolations(graph, readers), [
      'reconcile/agent/job.ts (job) -> reconcile/snapshot/batch.ts',
      'reconcile/batch/plan.ts (batch) -> reconcile/snapshot.ts',
      'reconcile/serving/decide.ts is in 0 rows of the snapshot readers table',
    ]);
  });

  it('read the snapshot readers table', () => {
    const md = [
      '# X',
      '## The snapshot',
      '| part | type | what |',
      '|---|---|---|',
      '| job | `JobObservations` (`snapshot/job.ts`) | pods |',
      '| reader | modules | snapshot modules |',
      '|---|---|---|',
      '| job | `reconcile/agent/job.ts`, `reconcile/agent/running.ts` | `reconcile/snapshot/common.ts`, `reconcile/snapshot/job.ts` |',
      '| realtime | `reconcile/realtime/` | `reconcile/snapshot/common.ts` |',
      '## Next',
      '| x | `reconcile/agent/x.ts` | `reconcile/snapshot.ts` |',
    ].join('\n');
    assert.deepEqual(parseSnapshotReaders(md), [
      {
        reader: 'job',
        modules: ['reconcile/agent/job.ts', 'reconcile/agent/running.ts'],
        reads: ['reconcile/snapshot/common.ts', 'reconcile/snapshot/job.ts'],
      },
      { reader: 'realtime', modules: ['reconcile/realtime/'], reads: ['reconcile/snapshot/common.ts'] },
    ]);
  });
});

describe('src/ against ARCHITECTURE.md', () => {
  const layers = parseLayers(readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8'));
  const graph = sourceGraph();

  it('has a row for every folder of src/, and no row for a folder that does not exist', () => {
    const folders = new Set([...graph.keys()].map(folderOf));
    assert.deepEqual([...folders].sort(), [...layers.keys()].sort());
  });

  it('imports across folders only as the table allows', () => {
    assert.deepEqual(forbiddenImports(graph, layers), []);
  });

  it('has no import cycle between files', () => {
    assert.deepEqual(importCycles(graph), []);
  });

  it('lets a mode read only the common part of the snapshot and its own observations', () => {
    const markdown = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
    const readers = parseSnapshotReaders(markdown);
    assert.deepEqual(
      readers.map((r) => r.reader),
      ['shared', 'job', 'batch', 'realtime', 'server', 'whole'],
    );
    assert.deepEqual(snapshotReadViolations(graph, readers), []);
  });
});
