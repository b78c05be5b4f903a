import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildCrd, CRD_KINDS } from './build-crd.ts';
import type { JsonSchemaProps } from './openapi.ts';

function schemaOf(kind: (typeof CRD_KINDS)[number]): JsonSchemaProps {
  const version = buildCrd(kind).spec.versions[0];
  assert.ok(version);
  return version.schema.openAPIV3Schema;
}

function at(s: JsonSchemaProps, path: string): JsonSchemaProps {
  let cur: JsonSchemaProps | undefined = s;
  for (const part of path.split('.')) {
    cur = part === '[]' ? cur?.items : cur?.properties?.[part];
    assert.ok(cur, `no schema at ${path} (${part})`);
  }
  return cur;
}

describe('buildCrd', () => {
  it('declares names, short names, scope and the one version', () => {
    const expected = {
      Agent: ['agents', 'agent', 'AgentList', ['agt']],
      Station: ['stations', 'station', 'StationList', ['stn']],
      AgentDefinition: ['agentdefinitions', 'agentdefinition', 'AgentDefinitionList', ['agentdef', 'ad']],
      AgentPolicy: ['agentpolicies', 'agentpolicy', 'AgentPolicyList', ['agentpol']],
    } as const;
    for (const kind of CRD_KINDS) {
      const crd = buildCrd(kind);
      const [plural, singular, listKind, shortNames] = expected[kind];
      assert.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
      assert.equal(crd.kind, 'CustomResourceDefinition');
      assert.equal(crd.metadata.name, `${plural}.agents.re-cinq.com`);
      assert.equal(crd.spec.group, 'agents.re-cinq.com');
      assert.equal(crd.spec.scope, kind === 'AgentPolicy' ? 'Cluster' : 'Namespaced');
      assert.deepEqual(crd.spec.names, { kind, listKind, plural, singular, shortNames: [...shortNames] });
      assert.equal(crd.spec.versions.length, 1);
      assert.equal(crd.spec.versions[0]?.name, 'v1alpha1');
      assert.equal(crd.spec.versions[0]?.served, true);
      assert.equal(crd.spec.versions[0]?.storage, true);
      assert.deepEqual(schemaOf(kind).required, ['spec']);
      assert.equal(schemaOf(kind).type, 'object');
    }
  });

  it('declares the status subresource on Agent only', () => {
    assert.deepEqual(buildCrd('Agent').spec.versions[0]?.subresources, { status: {} });
    assert.equal(buildCrd('Station').spec.versions[0]?.subresources, undefined);
    assert.equal(buildCrd('AgentDefinition').spec.versions[0]?.subresources, undefined);
    assert.ok(schemaOf('Agent').properties?.status);
    assert.equal(schemaOf('Station').properties?.status, undefined);
  });

  it('declares the reference printer columns in order', () => {
    const cols = (k: (typeof CRD_KINDS)[number]) =>
      buildCrd(k).spec.versions[0]?.additionalPrinterColumns.map((c) => [c.name, c.type, c.jsonPath]);
    const age = ['Age', 'date', '.metadata.creationTimestamp'];
    assert.deepEqual(cols('Agent'), [
      ['Phase', 'string', '.status.phase'],
      ['Station', 'string', '.spec.stationRef'],
      ['Job', 'string', '.status.jobName'],
      age,
      ['Session', 'string', '.status.sessionId'],
      ['Batch', 'string', '.status.batchId'],
      ['Tokens', 'integer', '.status.tokenUsage.total'],
      ['Cost', 'string', '.status.costEstimate.usd'],
      ['URL', 'string', '.status.url'],
    ]);
    const wide = buildCrd('Agent').spec.versions[0]?.additionalPrinterColumns.filter((c) => c.priority === 1);
    assert.deepEqual(
      wide?.map((c) => c.name),
      ['Session', 'Batch', 'Tokens', 'Cost', 'URL'],
      'our columns only with -o wide',
    );
    assert.deepEqual(cols('Station'), [
      ['Recipe', 'string', '.spec.agentDefRef'],
      ['Deadline', 'integer', '.spec.deadlineMinutes'],
      age,
    ]);
    assert.deepEqual(cols('AgentDefinition'), [['Model', 'string', '.spec.model'], age]);
    assert.deepEqual(cols('AgentPolicy'), [
      ['Default', 'string', '.metadata.labels.agents\\.re-cinq\\.com/default-policy'],
      age,
    ]);
  });

  it('Agent: spec fields, validation and the new fields', () => {
    const s = schemaOf('Agent');
    assert.deepEqual(at(s, 'spec').required, ['stationRef']);
    assert.equal(at(s, 'spec.stationRef').maxLength, 253);
    assert.ok(at(s, 'spec.stationRef').pattern?.startsWith('^[a-z0-9]'));
    assert.deepEqual(at(s, 'spec.parameters').additionalProperties, { type: 'string' });
    for (const f of ['taskId', 'targetRepo', 'branch', 'model', 'resumeSession'])
      assert.equal(at(s, `spec.${f}`).type, 'string', f);
  });

  it('Agent: every status field, no phase default, conditions as a map list', () => {
    const s = schemaOf('Agent');
    const status = at(s, 'status');
    assert.equal(status.required, undefined);
    assert.deepEqual(Object.keys(status.properties ?? {}), [
      'apiKeySecretUID',
      'batchCleanupAttempts',
      'batchFallback',
      'batchId',
      'batchProvider',
      'completedAt',
      'conditions',
      'costEstimate',
      'exitCode',
      'failureReason',
      'gateway',
      'jobName',
      'observedGeneration',
      'output',
      'phase',
      'prUrl',
      'result',
      'serviceName',
      'session',
      'sessionId',
      'startedAt',
      'tokenUsage',
      'traceID',
      'url',
    ]);
    // Any JSON value: a text answer or a structured one.
    assert.deepEqual(at(s, 'status.result').type, undefined);
    assert.equal(at(s, 'status.result')['x-kubernetes-preserve-unknown-fields'], true);
    assert.deepEqual(at(s, 'status.phase').enum, [
      'Pending',
      'Running',
      'Succeeded',
      'Failed',
      'Serving',
      'Suspended',
    ]);
    assert.equal(at(s, 'status.phase').default, undefined);
    assert.equal(at(s, 'status.startedAt').format, 'date-time');
    assert.equal(at(s, 'status.exitCode').type, 'integer');
    assert.equal(at(s, 'status.batchFallback').type, 'boolean');
    const conditions = at(s, 'status.conditions');
    assert.equal(conditions['x-kubernetes-list-type'], 'map');
    assert.deepEqual(conditions['x-kubernetes-list-map-keys'], ['type']);
    assert.deepEqual(at(s, 'status.conditions.[]').required, [
      'type',
      'status',
      'lastTransitionTime',
      'reason',
      'message',
    ]);
    assert.deepEqual(at(s, 'status.conditions.[].status').enum, ['True', 'False', 'Unknown']);
  });

  it('Station: defaults as the reference CRD declares them', () => {
    const s = schemaOf('Station');
    assert.deepEqual(at(s, 'spec').required, ['agentDefRef', 'template']);
    assert.deepEqual([at(s, 'spec.deadlineMinutes').default, at(s, 'spec.deadlineMinutes').minimum], [30, 1]);
    assert.equal(at(s, 'spec.successfulRunsHistoryLimit').default, 3);
    assert.equal(at(s, 'spec.failedRunsHistoryLimit').default, 3);
    assert.equal(at(s, 'spec.failedRunsHistoryLimit').minimum, 0);
    assert.equal(at(s, 'spec.maxConcurrentRuns').default, undefined);
    assert.equal(at(s, 'spec.maxConcurrentRuns').minimum, 0);
    assert.deepEqual(at(s, 'spec.concurrencyPolicy').enum, ['Allow', 'Forbid', 'Replace']);
    assert.equal(at(s, 'spec.concurrencyPolicy').default, undefined);
    assert.equal(at(s, 'spec.template')['x-kubernetes-preserve-unknown-fields'], true);
    assert.equal(at(s, 'spec.template').type, 'object');
  });

  it('AgentDefinition: wire names, enums, free-form parts and the new fields', () => {
    const s = schemaOf('AgentDefinition');
    assert.deepEqual(at(s, 'spec').required, ['prompt']);
    assert.deepEqual(at(s, 'spec.permission_mode').enum, ['auto', 'bypass']);
    assert.equal(at(s, 'spec.permission_mode').default, undefined);
    assert.equal(at(s, 'spec.max_turns').minimum, 1);
    assert.equal(at(s, 'spec.allowed_tools.[]').type, 'string');
    assert.equal(at(s, 'spec.tool_config')['x-kubernetes-preserve-unknown-fields'], true);
    assert.equal(at(s, 'spec.output.schema')['x-kubernetes-preserve-unknown-fields'], true);
    assert.deepEqual(at(s, 'spec.output.select.[]').required, ['event']);
    assert.deepEqual(at(s, 'spec.output.select.[].event').enum, [
      'tool_call',
      'message',
      'tool_result',
      'result',
      'usage',
    ]);
    assert.deepEqual(at(s, 'spec.output.sinks.[].type').enum, ['stdout', 'http', 'file']);
    assert.deepEqual(at(s, 'spec.output.watch.[]').required, ['event', 'path']);
    assert.deepEqual(at(s, 'spec.resources.mcp_servers.[]').required, ['name', 'transport']);
    assert.deepEqual(at(s, 'spec.resources.mcp_servers.[].transport').enum, ['stdio', 'http', 'sse']);
    assert.deepEqual(at(s, 'spec.resources.repos.[]').required, ['name', 'url']);
    assert.deepEqual(at(s, 'spec.resources.env.[]').required, ['name', 'value']);
    assert.deepEqual(at(s, 'spec.resources.secrets.[]').required, ['name', 'ref']);
    assert.equal(at(s, 'spec.resources.conversation.headers_secret').type, 'string');
    assert.deepEqual(at(s, 'spec.execution').enum, ['job', 'batch', 'realtime', 'server']);
    assert.equal(at(s, 'spec.execution').default, 'job');
    assert.deepEqual(at(s, 'spec.batch.onTimeout').enum, ['fail', 'fallback']);
    assert.equal(at(s, 'spec.batch.onTimeout').default, 'fail');
    assert.equal(at(s, 'spec.batch.maxTokens').type, 'integer');
    assert.equal(at(s, 'spec.batch.timeoutMinutes').type, 'integer');
  });

  it('returns a fresh object each call: whatever is done to one result never shows in the next', () => {
    // Scribbles over every object and array of a result (a new member, a pushed item, every string replaced); a
    // later build must show none of it: no module state is shared with or kept from an earlier call.
    const MARK = 'scribbled';
    const scribble = (x: unknown): void => {
      if (Array.isArray(x)) {
        for (const [i, item] of x.entries()) {
          if (typeof item === 'string') x[i] = MARK;
          else scribble(item);
        }
        x.push(MARK);
      } else if (typeof x === 'object' && x !== null) {
        const o = x as Record<string, unknown>;
        for (const [k, v] of Object.entries(o)) {
          if (typeof v === 'string') o[k] = MARK;
          else scribble(v);
        }
        o[MARK] = MARK;
      }
    };
    for (const kind of CRD_KINDS) scribble(buildCrd(kind));
    for (const kind of CRD_KINDS) {
      const text = JSON.stringify(buildCrd(kind));
      assert.ok(!text.includes(MARK), `${kind}: an earlier result's change shows in a new one`);
    }
    // And the same literal values as above.
    assert.deepEqual(buildCrd('Agent').spec.names.shortNames, ['agt']);
    assert.deepEqual(buildCrd('AgentDefinition').spec.names.shortNames, ['agentdef', 'ad']);
    assert.deepEqual(
      buildCrd('Station').spec.versions[0]?.additionalPrinterColumns.map((c) => c.name),
      ['Recipe', 'Deadline', 'Age'],
    );
    assert.deepEqual(at(schemaOf('AgentDefinition'), 'spec.execution').enum, [
      'job',
      'batch',
      'realtime',
      'server',
    ]);
    assert.deepEqual(schemaOf('Agent').required, ['spec']);
  });
});
