// "The executor is the only writer of Agent status" (src/reconcile/actions.ts, issue 27 §2), checked: no code of
// src/ outside the executor's handlers (src/effects/execute/) writes the status subresource, or a status through a
// patch of an Agent. The Kubernetes client (src/kube/) defines the calls; everything else reports observations to
// decide() instead (docs/design/one-writer.md). Tests and test support are not product code.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where status may be written: the client that defines the calls, and the executor's handlers. */
const ALLOWED = ['src/kube/', 'src/effects/execute/'];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`;
    if (statSync(join(ROOT, rel)).isDirectory()) return sources(rel);
    return /\.ts$/.test(name) && !/\.test\.ts$|test-fixtures\.ts$|test-support\.ts$/.test(name) ? [rel] : [];
  });
}

/** The ways code writes an Agent's status, each with the rule it breaks. */
const RULES: readonly { readonly rule: string; readonly pattern: RegExp }[] = [
  // The client's status patch, imported (under any alias) or called.
  {
    rule: 'imports patchStatus from the client',
    pattern: /import\s*\{[^}]*\bpatchStatus\b[^}]*\}\s*from\s*'[^']*kube\//,
  },
  { rule: 'calls patchStatus', pattern: /(^|[^\w.'"])patchStatus\s*\(/m },
  // The status subresource named directly (a merge, JSON or apply patch, or a PUT of it).
  { rule: 'names the status subresource', pattern: /subresource:\s*'status'|['"`][^'"`\n]*\/status['"`]/ },
  // A patch of an Agent whose body carries a status (the main resource ignores it, but it says what was meant).
  {
    rule: 'patches an Agent with a status',
    pattern: /(mergePatch|jsonPatch|applyPatch)\([^;]*\bAGENTS\b[^;]*(\{\s*status\s*[,:}]|path:\s*'\/status)/,
  },
];

/** The rules `text` breaks. */
export function statusWrites(text: string): string[] {
  return RULES.filter((r) => r.pattern.test(text)).map((r) => r.rule);
}

describe('one writer of Agent status (issue 27 §2)', () => {
  it('catches the ways status was written outside the executor before (fixtures of the old code)', () => {
    // The prompt API's session id (src/effects/realtime/prompt-ports.ts before issue 27 §2).
    const session = `import {\n  getObject,\n  patchStatus,\n  type Transport,\n} from '../../kube/index.ts';
    const patched = await patchStatus(o.transport, AGENTS, ref, { sessionId }, v.unknown(), {});`;
    assert.deepEqual(statusWrites(session), ['imports patchStatus from the client', 'calls patchStatus']);
    // Through the generic patch of the subresource, or an ad-hoc path.
    assert.deepEqual(
      statusWrites(`await mergePatch(t, AGENTS, ref, { status }, s, { subresource: 'status' });`),
      ['names the status subresource', 'patches an Agent with a status'],
    );
    assert.deepEqual(statusWrites("t.request('PATCH', `/apis/x/agents/a/status`, { body })"), [
      'names the status subresource',
    ]);
    // What is not a status write: the action, its handler's key, a case.
    assert.deepEqual(
      statusWrites("{ kind: 'patchStatus', ref }\n  patchStatus: agent.patchStatus,\n  case 'patchStatus':"),
      [],
    );
  });

  it('no code outside src/effects/execute/ (and the client, src/kube/) writes an Agent status', () => {
    const files = sources('src');
    assert.ok(files.length > 100, 'the sources are found');
    const offenders = files
      .filter((f) => !ALLOWED.some((a) => f.startsWith(a)))
      .flatMap((f) => statusWrites(readFileSync(join(ROOT, f), 'utf8')).map((rule) => `${f}: ${rule}`));
    assert.deepEqual(offenders, []);
  });

  it('the executor writes it through the patchStatus action only (its handler in execute/agent.ts)', () => {
    const writers = sources('src/effects/execute').filter(
      (f) => statusWrites(readFileSync(join(ROOT, f), 'utf8')).length > 0,
    );
    assert.deepEqual(writers, ['src/effects/execute/agent.ts']);
  });
});
