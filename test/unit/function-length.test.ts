// No function body in src/ over 150 lines (ARCHITECTURE.md): a body that long does several things, and every
// capability ends up editing it. Declarative data (the dashboard's panel list, the metric declarations) is exempt.
// The 13 functions that were over the limit when the rule came in have all been split; none may cross it again.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const LIMIT = 150;

/** Declarative data, not logic: exempt (the dashboard's panels; the metric declarations: name, help, labels). */
const DATA = new Set(['src/metrics/monitoring/dashboard.ts panels', 'src/metrics/registry.ts defineMetrics']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !/\.test(-support)?\.ts$/.test(name) ? [path] : [];
  });
}

function nameOf(node: ts.Node): string {
  const named = node as { name?: ts.Node };
  if (named.name !== undefined) return named.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  return '(anonymous)';
}

/** Every function (declaration, expression, arrow, method) of `text` whose block body spans more than `limit` lines. */
export function longFunctions(file: string, text: string, limit = LIMIT): Map<string, number> {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out = new Map<string, number>();
  const visit = (node: ts.Node): void => {
    const fn =
      ts.isFunctionDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isArrowFunction(node) ||
      ts.isMethodDeclaration(node);
    if (fn && node.body !== undefined && ts.isBlock(node.body)) {
      const first = sf.getLineAndCharacterOfPosition(node.body.getStart()).line;
      const last = sf.getLineAndCharacterOfPosition(node.body.getEnd()).line;
      const lines = last - first + 1;
      if (lines > limit)
        out.set(`${file} ${nameOf(node)}`, Math.max(lines, out.get(`${file} ${nameOf(node)}`) ?? 0));
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

describe('function length', () => {
  it('measures a body in lines, by name, nested ones too', () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  const a${i} = ${i};`).join('\n');
    const text = `export function big() {\n${body(4)}\n  const inner = () => {\n${body(3)}\n  };\n}\nfunction small() {\n}\n`;
    // big: `{` line, 4 statements, 5 lines of `inner`, `}` line = 11; inner: `{`, 3, `}` = 5.
    assert.deepEqual(
      [...longFunctions('f.ts', text, 4)],
      [
        ['f.ts big', 11],
        ['f.ts inner', 5],
      ],
    );
  });

  it(`no function body in src/ over ${LIMIT} lines`, () => {
    const found = new Map<string, number>();
    for (const path of sources(join(ROOT, 'src'))) {
      const rel = relative(ROOT, path).split('\\').join('/');
      for (const [key, lines] of longFunctions(rel, readFileSync(path, 'utf8'))) {
        if (!DATA.has(key)) found.set(key, lines);
      }
    }
    const problems: string[] = [];
    for (const [key, lines] of found) problems.push(`${key}: ${lines} lines (limit ${LIMIT})`);
    assert.deepEqual(problems, []);
  });
});
