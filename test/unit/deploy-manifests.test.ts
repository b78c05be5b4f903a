// deploy/ holds Kubernetes objects only, so whatever reads it recursively (`kubectl apply -R -f deploy/`, policy
// scanners, a YAML glob) can: every *.yaml under it parses as YAML into objects that have an apiVersion and a kind
// (kustomizations and components included), with no exception. The Helm chart, whose Go templates are not YAML,
// lives in charts/agent-controller, and the plain Prometheus rules file and its promtool tests in charts/monitoring;
// a template or a rules file that slips back into deploy/ fails here.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function yamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir)).sort()) {
    const rel = `${dir}/${name}`;
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...yamlFiles(rel));
    else if (name.endsWith('.yaml') || name.endsWith('.yml')) out.push(rel);
  }
  return out;
}

/** What is wrong with one YAML file as a set of Kubernetes objects, or undefined. */
export function manifestProblem(text: string): string | undefined {
  let docs: unknown[];
  try {
    docs = loadAll(text).filter((d) => d !== null && d !== undefined);
  } catch (e) {
    return `not YAML: ${(e as Error).message.split('\n')[0]}`;
  }
  if (docs.length === 0) return 'no object';
  for (const [i, d] of docs.entries()) {
    const o = d as Record<string, unknown> | undefined;
    if (typeof o !== 'object' || o === null || Array.isArray(o)) return `document ${i + 1} is not an object`;
    if (typeof o.apiVersion !== 'string' || o.apiVersion === '') return `document ${i + 1} has no apiVersion`;
    if (typeof o.kind !== 'string' || o.kind === '') return `document ${i + 1} has no kind`;
  }
  return undefined;
}

describe('deploy/: Kubernetes objects only', () => {
  it('tells a template or a non-object from a manifest', () => {
    assert.equal(manifestProblem('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n'), undefined);
    assert.equal(
      manifestProblem('apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n'),
      undefined,
    );
    assert.match(manifestProblem('{{- if .Values.x }}\napiVersion: v1\n{{- end }}\n') ?? '', /not YAML/);
    assert.match(manifestProblem('groups: []\n') ?? '', /no apiVersion/);
    assert.match(manifestProblem('apiVersion: v1\nkind: ConfigMap\n---\n- a\n') ?? '', /not an object/);
  });

  it('every *.yaml under deploy/ parses into objects with apiVersion and kind', () => {
    const files = yamlFiles('deploy');
    assert.ok(files.length > 10, 'deploy/ is read');
    const problems = files
      .map((f) => [f, manifestProblem(readFileSync(join(ROOT, f), 'utf8'))] as const)
      .filter(([, p]) => p !== undefined)
      .map(([f, p]) => `${f}: ${p}`);
    assert.deepEqual(problems, []);
  });

  it('the Helm chart is not under deploy/', () => {
    assert.ok(!yamlFiles('deploy').some((f) => f.includes('/templates/') || f.endsWith('Chart.yaml')));
    assert.ok(yamlFiles('charts/agent-controller').some((f) => f.endsWith('/Chart.yaml')));
  });
});
