import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { parseAgentPolicy } from './agent-policy.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const meta = { name: 'p', uid: 'u', resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z' };

describe('parseAgentPolicy', () => {
  it('reads a cluster-scoped policy (no namespace); every field optional', () => {
    const r = parseAgentPolicy({ metadata: meta, spec: {} });
    assert.ok(r.ok, r.ok ? '' : r.error);
    assert.deepEqual(r.value.spec, {});
    assert.equal(r.value.metadata.namespace, undefined);
  });

  it('refuses a type mismatch with the path', () => {
    const r = parseAgentPolicy({ metadata: meta, spec: { images: { allowedPrefixes: 'ghcr.io/' } } });
    assert.ok(!r.ok);
    assert.match(r.error, /invalid AgentPolicy: .*images\.allowedPrefixes/);
  });

  it('parses the shipped example deploy/examples/agent-policy.yaml', () => {
    const doc = load(readFileSync(join(ROOT, 'deploy', 'examples', 'agent-policy.yaml'), 'utf8')) as {
      metadata: Record<string, unknown>;
    };
    const r = parseAgentPolicy({ ...doc, metadata: { ...meta, ...doc.metadata } });
    assert.ok(r.ok, r.ok ? '' : r.error);
    assert.deepEqual(r.value.spec.vendors?.allowed, ['claude']);
    assert.equal(r.value.spec.sandbox?.requireRuntimeClass, true);
  });
});
