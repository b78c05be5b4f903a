import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildCrd, CRD_KINDS } from './build-crd.ts';
import { referenceAgentSchema } from './reference-fixtures.ts';
import { crdDrift, missingFields } from './schema-drift.ts';

/** The reference system's Agent CRD as its users have it installed, as JSON. */
function referenceAgentCrd(): unknown {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'agents.agents.re-cinq.com' },
    spec: {
      group: 'agents.re-cinq.com',
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: referenceAgentSchema() },
        },
      ],
    },
  };
}

describe('installed CRD drift', () => {
  it('our own CRDs, as the API server returns them, lack nothing', () => {
    for (const kind of CRD_KINDS)
      assert.deepEqual(crdDrift(kind, JSON.parse(JSON.stringify(buildCrd(kind)))), [], kind);
  });

  it("the reference's Agent CRD lacks conditions, observedGeneration and this version's other fields", () => {
    const missing = crdDrift('Agent', referenceAgentCrd()) ?? [];
    for (const path of ['status.conditions', 'status.observedGeneration', 'status.tokenUsage', 'spec.model'])
      assert.ok(missing.includes(path), `${path} in ${missing.join(', ')}`);
    for (const path of ['status.phase', 'spec.parameters', 'spec.parameters.*', 'status.conditions[].type'])
      assert.ok(!missing.includes(path), `${path} is not reported`);
  });

  it('a subtree kept whole (x-kubernetes-preserve-unknown-fields) lacks nothing', () => {
    const crd = referenceAgentCrd() as { spec: { versions: { schema: { openAPIV3Schema: unknown } }[] } };
    const root = crd.spec.versions[0]?.schema.openAPIV3Schema as { properties: Record<string, unknown> };
    root.properties.status = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    const missing = crdDrift('Agent', crd) ?? [];
    assert.ok(
      missing.every((p) => !p.startsWith('status')),
      missing.join(', '),
    );
  });

  it('lists, maps and missing versions', () => {
    assert.deepEqual(
      missingFields(
        {
          type: 'object',
          properties: { list: { type: 'array', items: { type: 'object', properties: { a: {} } } } },
        },
        {
          type: 'object',
          properties: { list: { type: 'array', items: { type: 'object', properties: {} } } },
        },
      ),
      ['list[].a'],
    );
    assert.deepEqual(
      missingFields(
        { type: 'object', properties: { m: { type: 'object', additionalProperties: { type: 'string' } } } },
        { type: 'object', properties: { m: { type: 'object' } } },
      ),
      ['m.*'],
    );
    assert.deepEqual(
      crdDrift('Station', { spec: { versions: [{ name: 'v1beta1', schema: { openAPIV3Schema: {} } }] } }),
      ['version v1alpha1'],
    );
    assert.equal(crdDrift('Station', { kind: 'ConfigMap' }), undefined);
  });
});
