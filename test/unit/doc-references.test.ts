// The design lives in the repository: no file a reader of this repository has (src/, scripts/, test/, bench/,
// deploy/, docs/, README.md, CHANGELOG.md) may point at a document outside it (a `../shared/…` path, the bare names
// of the old spec files, "decision (k)" letters or "reference §8.4" section numbers), and every `docs/….md#anchor`
// citation and every relative Markdown link must name a file that exists and a heading that produces the anchor
// (GitHub's slugs). CHANGELOG.md is history: its entries keep the decision letters and issue sections they were
// written with (the letters stay resolvable as docs/design/reference-behaviour.md#differences, D-a … D-r), but it
// too may not point outside the repository, and its links must resolve.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SELF = relative(ROOT, fileURLToPath(import.meta.url));
const TREES = ['src', 'scripts', 'test', 'bench', 'deploy', 'docs'];
const TOP_FILES = ['README.md', 'ARCHITECTURE.md', 'CHANGELOG.md'];
const HISTORY = new Set(['CHANGELOG.md']);

/** Every text file under the scanned trees, repository-relative, `/`-separated. */
function scannedFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(ROOT, dir))) {
      if (name === 'node_modules' || name.startsWith('.')) continue;
      const rel = `${dir}/${name}`;
      if (statSync(join(ROOT, rel)).isDirectory()) walk(rel);
      else out.push(rel);
    }
  };
  for (const tree of TREES) if (existsSync(join(ROOT, tree))) walk(tree);
  for (const f of TOP_FILES) if (existsSync(join(ROOT, f))) out.push(f);
  return out.filter((f) => f !== SELF.split(sep).join('/'));
}

function readText(rel: string): string | undefined {
  const bytes = readFileSync(join(ROOT, rel));
  if (bytes.includes(0)) return undefined; // binary
  return bytes.toString('utf8');
}

/** GitHub's heading anchors of a Markdown file (lower case, punctuation dropped, spaces → `-`, repeats numbered). */
export function headingSlugs(markdown: string): Set<string> {
  const slugs = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m?.[1]) continue;
    const text = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    slugs.add(n === 0 ? base : `${base}-${n}`);
  }
  return slugs;
}

/** A problem found in one file, as `path:line: what`. */
type Finding = string;

/** References to documents outside the repository, and old-spec citation styles. */
const OUTSIDE: readonly { readonly re: RegExp; readonly what: string; readonly history: boolean }[] = [
  { re: /shared\/spec\b|\/work\/shared\b/, what: 'the out-of-repo spec folder', history: true },
  {
    // A bare old spec file name (a path into the repository, `docs/…/kubernetes.md`, is checked below instead).
    re: /(?<![/\w-]|\]\()(vendors|reference-system|sympozium-lifecycle|kubernetes|architecture)\.md\b/,
    what: 'an old spec document by its bare name',
    history: true,
  },
  {
    re: /\breference(-system)?(\.md)? §?\d+(\.\d+)*\b/i,
    what: 'a section of the reference spec',
    history: true,
  },
  { re: /\bdecisions? \([a-r]\)/, what: 'a decision letter', history: false },
  { re: /\bdecisions? [a-r](?=[),.;:]|\s*$| and [a-r]\b)/m, what: 'a decision letter', history: false },
  { re: /\bdecisions [a-r], [a-r]\b/, what: 'decision letters', history: false },
  { re: /\bchecklist \d/, what: 'the spec checklist', history: false },
  { re: /cross-team contract/, what: 'an out-of-repo contract', history: false },
];

/** `§` is allowed only as part of an issue reference (`issue 13 §2`, `issue 9 §2, §6`). */
const ISSUE_SECTIONS = /\bissues? \d+ §\d+(\.\d+)*((, | and |–|-)§?\d+(\.\d+)*)*/gi;

/** Relative paths (`../…`) that climb out of the repository. */
const RELATIVE_PATH = /(?<![\w./-])((?:\.\.\/)+)([\w.-]+(?:\/[\w.-]+)*)/g;

function outsideFindings(rel: string, text: string): Finding[] {
  const found: Finding[] = [];
  const history = HISTORY.has(rel);
  const lines = text.split('\n');
  let fenced = false;
  lines.forEach((line, i) => {
    const at = `${rel}:${i + 1}`;
    if (rel.endsWith('.md') && /^\s*(```|~~~)/.test(line)) fenced = !fenced;
    for (const rule of OUTSIDE) {
      if (history && !rule.history) continue;
      const m = rule.re.exec(line);
      if (m) found.push(`${at}: ${rule.what}: "${m[0]}"`);
    }
    if (!history && line.replace(ISSUE_SECTIONS, '').includes('§'))
      found.push(`${at}: a section number that is not an issue's: "${line.trim()}"`);
    // A relative path in a Markdown code block is an example (`../deploy/components/batch` from an overlay).
    if (fenced) return;
    for (const m of line.matchAll(RELATIVE_PATH)) {
      const target = normalize(join(dirname(join(ROOT, rel)), `${m[1]}${m[2]}`));
      if (relative(ROOT, target).startsWith('..'))
        found.push(`${at}: a path outside the repository: "${m[0]}"`);
    }
  });
  return found;
}

const slugCache = new Map<string, Set<string>>();
function slugsOf(rel: string): Set<string> {
  let s = slugCache.get(rel);
  if (!s) {
    s = headingSlugs(readFileSync(join(ROOT, rel), 'utf8'));
    slugCache.set(rel, s);
  }
  return s;
}

/** Whether repository file `target` exists and, when `anchor` is given, has a heading producing it. */
function checkTarget(target: string, anchor: string | undefined): string | undefined {
  if (!existsSync(join(ROOT, target))) return `no such file ${target}`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!target.endsWith('.md')) return undefined;
  return slugsOf(target).has(anchor) ? undefined : `no heading in ${target} makes #${anchor}`;
}

/** `docs/….md#anchor` citations anywhere, and relative Markdown links in Markdown files. */
function linkFindings(rel: string, text: string): Finding[] {
  const found: Finding[] = [];
  text.split('\n').forEach((line, i) => {
    const at = `${rel}:${i + 1}`;
    for (const m of line.matchAll(/(?<![\w/.-])docs\/[\w./-]+\.md(?:#([\w-]+))?/g)) {
      const [path] = m[0].split('#');
      const problem = checkTarget(path ?? '', m[1]);
      if (problem) found.push(`${at}: "${m[0]}": ${problem}`);
    }
    if (!rel.endsWith('.md')) return;
    // Links outside inline code spans (a regular expression in backticks may look like one).
    for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = m[1] ?? '';
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto:
      const [path = '', anchor] = link.split('#');
      const target =
        path === ''
          ? rel
          : relative(ROOT, join(dirname(join(ROOT, rel)), path))
              .split(sep)
              .join('/');
      if (target.startsWith('..')) continue; // reported by the outside rules
      const problem = checkTarget(target, anchor);
      if (problem) found.push(`${at}: link "${link}": ${problem}`);
    }
  });
  return found;
}

function findings(check: (rel: string, text: string) => Finding[]): Finding[] {
  const out: Finding[] = [];
  for (const rel of scannedFiles()) {
    const text = readText(rel);
    if (text !== undefined) out.push(...check(rel, text));
  }
  return out;
}

describe('doc references: the design lives in the repository', () => {
  it('GitHub slugs: punctuation dropped, case folded, repeats numbered', () => {
    const slugs = headingSlugs(
      '# Vendor batch APIs\n## D-a: a vanished Job fails\n```\n# not a heading\n```\n## `spec.parameters`\n## Notes\n## Notes\n',
    );
    assert.deepEqual(
      [...slugs],
      ['vendor-batch-apis', 'd-a-a-vanished-job-fails', 'specparameters', 'notes', 'notes-1'],
    );
  });

  it('the rules catch what they are for (planted references)', () => {
    const planted = [
      '// see ../shared/spec/vendors.md',
      '// (vendors.md 6.1)',
      '// (reference-system.md 2.5)',
      '// (reference §7.3)',
      '// decision (k)',
      '// (decisions d and l)',
      '// decision l;',
      '// (§5.5, more)',
      '// kubernetes.md 1.2',
    ];
    for (const line of planted)
      assert.notDeepEqual(outsideFindings('src/x.ts', line), [], `not caught: ${line}`);
    const fine = [
      "import { ok } from '../shared/result.ts';",
      '// docs/design/kubernetes.md#watch (issue 9 §2, §6)',
      '// the decision a reconcile makes',
    ];
    for (const line of fine) assert.deepEqual(outsideFindings('src/effects/x.ts', line), [], line);
    assert.notDeepEqual(linkFindings('src/x.ts', '// docs/design/kubernetes.md#no-such-heading'), []);
    assert.notDeepEqual(linkFindings('src/x.ts', '// docs/design/no-such-file.md'), []);
    assert.deepEqual(linkFindings('src/x.ts', '// docs/design/kubernetes.md#watch'), []);
  });

  it('no file refers to a document outside the repository', () => {
    const found = findings(outsideFindings);
    assert.deepEqual(found, [], found.join('\n'));
  });

  it('every docs/….md#anchor citation and relative Markdown link resolves', () => {
    const found = findings(linkFindings);
    assert.deepEqual(found, [], found.join('\n'));
  });
});
