// What issue 27 §4 asks to be defined once stays defined once: each test finds the one definition and fails when a
// second appears elsewhere in the product (src/, tests excluded) or the generators (scripts/). Behaviour is tested
// next to each definition; these tests pin where it lives.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`;
    if (statSync(join(ROOT, rel)).isDirectory()) return sources(rel);
    const code = /\.(ts|mjs)$/.test(name) && !/\.test\.ts$|test-fixtures\.ts$|test-support\.ts$/.test(name);
    return code ? [rel] : [];
  });
}

const FILES = [...sources('src'), ...sources('scripts')].map((path) => ({
  path,
  text: readFileSync(join(ROOT, path), 'utf8'),
}));

/** The files whose text matches `pattern`. */
function definedIn(pattern: RegExp): string[] {
  return FILES.filter((f) => pattern.test(f.text)).map((f) => f.path);
}

describe('defined once (issue 27 §4)', () => {
  it('has the sources to look through', () => {
    assert.ok(FILES.length > 100);
  });

  it('one YAML emitter: src/shared/yaml.ts, nothing else writes YAML text from values', () => {
    assert.deepEqual(definedIn(/\bfunction (toYaml|yamlString|literalBlock)\b/), ['src/shared/yaml.ts']);
    // js-yaml is in the bundle only as a kubeconfig reader of @kubernetes/client-node; its emitter is not ours.
    assert.deepEqual(definedIn(/\bdump\b[^;\n]*from 'js-yaml'|\byaml\.dump\(/), []);
  });

  it('one ObjectMeta: its fields and OwnerReference typed only in src/kube/meta.ts (api/meta.ts builds its view)', () => {
    assert.deepEqual(
      definedIn(/\b(creationTimestamp|deletionTimestamp|blockOwnerDeletion): v\.(string|boolean)\(/),
      ['src/kube/meta.ts'],
    );
    assert.deepEqual(definedIn(/\bObjectMetaSchema = /), ['src/api/meta.ts', 'src/kube/meta.ts']);
    assert.match(readFileSync(join(ROOT, 'src/api/meta.ts'), 'utf8'), /OBJECT_META_FIELDS/);
  });

  it('concurrencyPolicy interpreted once: src/reconcile/station/admission.ts (concurrencyOf, wakeableCount)', () => {
    assert.deepEqual(
      definedIn(/\b(effectiveMaxRuns|concurrencyPolicyOf)\(|[=!]== '(Allow|Forbid|Replace)'/),
      ['src/reconcile/station/admission.ts'],
    );
    assert.deepEqual(definedIn(/\bconcurrencyOf\(/).sort(), [
      'src/cli/status.ts',
      'src/reconcile/station/admission.ts',
      'src/reconcile/station/wake.ts',
    ]);
  });

  it("a run's prompt and system prompt rendered once: src/jobs/prompt.ts (runPromptText, runSystemPrompt)", () => {
    assert.deepEqual(definedIn(/\brenderPrompt\(|\.spec\.systemPrompt\b/), ['src/jobs/prompt.ts']);
  });

  it('the create → 409 → GET flow written once: src/effects/create-or-get.ts (createOrGet)', () => {
    assert.deepEqual(definedIn(/vanished after a name collision/), ['src/effects/create-or-get.ts']);
    assert.deepEqual(definedIn(/\bcreateOrGet(<T>)?\(/).sort(), [
      'src/effects/create-or-get.ts',
      'src/effects/run-bindings.ts',
      'src/effects/run-input.ts',
    ]);
  });
});
