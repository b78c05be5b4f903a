// Parsing the kube-apiserver audit log: lines shaped like kube-apiserver v1.36's `--audit-log-format=json` output.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { parseAuditLog, readAuditLog } from './audit.ts';

const AGENT_UID = '025f9712-053b-41f3-b428-e42ebfcccd00';

/** A Job create: objectRef has no name (generateName), the response names the Job. */
const JOB_CREATE = JSON.stringify({
  kind: 'Event',
  apiVersion: 'audit.k8s.io/v1',
  level: 'RequestResponse',
  auditID: '8a16787a-dd5e-4b96-9efc-f15dd7e0ee63',
  stage: 'ResponseComplete',
  requestURI: '/apis/batch/v1/namespaces/chaos/jobs?fieldManager=agent-controller',
  verb: 'create',
  user: {
    username: 'system:serviceaccount:agents:agent-controller',
    uid: '7c1e5f3a-0000-4000-8000-000000000001',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:agents', 'system:authenticated'],
  },
  sourceIPs: ['127.0.0.1'],
  userAgent: 'agent-controller/0.1.0 (agent-controller-7d9f-abc)',
  objectRef: { resource: 'jobs', namespace: 'chaos', apiGroup: 'batch', apiVersion: 'v1' },
  responseStatus: { metadata: {}, code: 201 },
  requestObject: {
    kind: 'Job',
    apiVersion: 'batch/v1',
    metadata: {
      generateName: 'a-1-',
      namespace: 'chaos',
      ownerReferences: [
        {
          apiVersion: 'agents.re-cinq.com/v1alpha1',
          kind: 'Agent',
          name: 'a-1',
          uid: AGENT_UID,
          controller: true,
        },
      ],
    },
  },
  responseObject: {
    kind: 'Job',
    apiVersion: 'batch/v1',
    metadata: {
      name: 'a-1-l62lx',
      generateName: 'a-1-',
      namespace: 'chaos',
      uid: '641552f0-8808-47e8-96d3-450d4cef515b',
      resourceVersion: '221',
      ownerReferences: [
        {
          apiVersion: 'agents.re-cinq.com/v1alpha1',
          kind: 'Agent',
          name: 'a-1',
          uid: AGENT_UID,
          controller: true,
        },
      ],
    },
    spec: { parallelism: 1, completions: 1, backoffLimit: 0 },
    status: {},
  },
  requestReceivedTimestamp: '2026-12-02T05:47:46.800123Z',
  stageTimestamp: '2026-12-02T05:47:46.810204Z',
  annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' },
});

/** A status patch of an Agent (subresource status), by kubectl. */
const STATUS_PATCH = JSON.stringify({
  kind: 'Event',
  apiVersion: 'audit.k8s.io/v1',
  level: 'RequestResponse',
  auditID: '0d665c52-27e7-479b-9f06-a27227d2fff3',
  stage: 'ResponseComplete',
  requestURI:
    '/apis/agents.re-cinq.com/v1alpha1/namespaces/chaos/agents/a-1/status?fieldManager=kubectl-patch',
  verb: 'patch',
  user: { username: 'admin', groups: ['system:masters', 'system:authenticated'] },
  sourceIPs: ['127.0.0.1'],
  userAgent: 'kubectl/v0.0.0 (linux/amd64) kubernetes/$Format',
  objectRef: {
    resource: 'agents',
    namespace: 'chaos',
    name: 'a-1',
    apiGroup: 'agents.re-cinq.com',
    apiVersion: 'v1alpha1',
    subresource: 'status',
  },
  responseStatus: { metadata: {}, code: 200 },
  requestObject: { status: { phase: 'Running' } },
  responseObject: {
    apiVersion: 'agents.re-cinq.com/v1alpha1',
    kind: 'Agent',
    metadata: { name: 'a-1', namespace: 'chaos', resourceVersion: '219', uid: AGENT_UID },
    spec: { stationRef: 's1' },
    status: { phase: 'Running' },
  },
  requestReceivedTimestamp: '2026-12-02T05:47:46.320005Z',
  stageTimestamp: '2026-12-02T05:47:46.327532Z',
  annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' },
});

/** A failed write to a core resource (no apiGroup, no userAgent): a 404 delete of a Lease-like object. */
const CORE_DELETE_404 = JSON.stringify({
  kind: 'Event',
  apiVersion: 'audit.k8s.io/v1',
  level: 'RequestResponse',
  auditID: '74edf41c-acd4-467b-9e88-97142d3a99f9',
  stage: 'ResponseComplete',
  requestURI: '/api/v1/namespaces/chaos/configmaps/gone',
  verb: 'delete',
  user: { username: 'system:apiserver', groups: ['system:authenticated', 'system:masters'] },
  sourceIPs: ['127.0.0.1'],
  objectRef: { resource: 'configmaps', namespace: 'chaos', name: 'gone', apiVersion: 'v1' },
  responseStatus: { metadata: {}, status: 'Failure', reason: 'NotFound', code: 404 },
  requestObject: { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/__internal' },
  responseObject: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', code: 404 },
  requestReceivedTimestamp: '2026-12-02T05:47:31.380000Z',
  stageTimestamp: '2026-12-02T05:47:31.387012Z',
});

/** The same request as STATUS_PATCH at stage RequestReceived (no responseStatus, no stageTimestamp response). */
const REQUEST_RECEIVED = JSON.stringify({
  kind: 'Event',
  apiVersion: 'audit.k8s.io/v1',
  level: 'RequestResponse',
  auditID: '0d665c52-27e7-479b-9f06-a27227d2fff3',
  stage: 'RequestReceived',
  requestURI: '/apis/agents.re-cinq.com/v1alpha1/namespaces/chaos/agents/a-1/status',
  verb: 'patch',
  user: { username: 'admin', groups: ['system:masters'] },
  userAgent: 'kubectl/v0.0.0',
  objectRef: { resource: 'agents', namespace: 'chaos', name: 'a-1', apiGroup: 'agents.re-cinq.com' },
  requestReceivedTimestamp: '2026-12-02T05:47:46.320005Z',
  stageTimestamp: '2026-12-02T05:47:46.320005Z',
});

/** An audit line as if written at `received`/`completed` (ISO times) with another auditID. */
function variant(line: string, auditID: string, received: string, completed: string): string {
  return JSON.stringify({
    ...JSON.parse(line),
    auditID,
    requestReceivedTimestamp: received,
    stageTimestamp: completed,
  });
}

describe('parseAuditLog', () => {
  it('reads ResponseComplete events and skips other stages and garbage', () => {
    const text = [
      REQUEST_RECEIVED,
      STATUS_PATCH,
      '{"kind":"Event","auditID":"x"', // cut off mid-line
      'not json at all',
      '{"hello":"world"}',
      '',
      JOB_CREATE,
      CORE_DELETE_404,
    ].join('\n');
    const { records, skipped } = parseAuditLog(`${text}\n`);
    assert.equal(skipped, 4);
    assert.equal(records.length, 3);
    const [patch, job, core] = records;
    assert.ok(patch && job && core);

    assert.equal(patch.auditID, '0d665c52-27e7-479b-9f06-a27227d2fff3');
    assert.equal(patch.verb, 'patch');
    assert.equal(patch.user, 'admin');
    assert.equal(patch.userAgent, 'kubectl/v0.0.0 (linux/amd64) kubernetes/$Format');
    assert.equal(patch.apiGroup, 'agents.re-cinq.com');
    assert.equal(patch.resource, 'agents');
    assert.equal(patch.subresource, 'status');
    assert.equal(patch.namespace, 'chaos');
    assert.equal(patch.name, 'a-1');
    assert.equal(patch.code, 200);
    assert.deepEqual(patch.requestObject, { status: { phase: 'Running' } });
    assert.equal((patch.responseObject as { status: { phase: string } }).status.phase, 'Running');

    // The create has no objectRef.name: the name comes from the response.
    assert.equal(job.name, 'a-1-l62lx');
    assert.equal(job.resource, 'jobs');
    assert.equal(job.apiGroup, 'batch');
    assert.equal(job.subresource, undefined);
    assert.equal(job.code, 201);
    assert.equal(job.user, 'system:serviceaccount:agents:agent-controller');

    // Core group: apiGroup ''; no userAgent: ''.
    assert.equal(core.apiGroup, '');
    assert.equal(core.userAgent, '');
    assert.equal(core.code, 404);
    assert.equal(core.name, 'gone');
  });

  it('keeps the microseconds of audit times', () => {
    const { records } = parseAuditLog(STATUS_PATCH);
    const r = records[0];
    assert.ok(r);
    const second = Date.parse('2026-12-02T05:47:46Z');
    assert.ok(Math.abs(r.received - (second + 320.005)) < 1e-3, `received ${r.received}`);
    assert.ok(Math.abs(r.completed - (second + 327.532)) < 1e-3, `completed ${r.completed}`);
    // One microsecond apart still orders.
    const a = parseAuditLog(
      variant(STATUS_PATCH, 'a', '2026-12-02T05:47:46.320005Z', '2026-12-02T05:47:46.320006Z'),
    ).records[0];
    assert.ok(a && a.completed > a.received);
    // Whole seconds and offsets parse too; a malformed time makes the line unparsable.
    const whole = parseAuditLog(
      variant(STATUS_PATCH, 'w', '2026-12-02T05:47:46Z', '2026-12-02T07:47:46+02:00'),
    );
    assert.equal(whole.records[0]?.received, second);
    assert.equal(whole.records[0]?.completed, second);
    assert.equal(parseAuditLog(variant(STATUS_PATCH, 'b', 'yesterday', '2026-12-02T05:47:46Z')).skipped, 1);
  });
});

describe('readAuditLog', () => {
  const dir = mkdtempSync(join(tmpdir(), 'audit-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the rotated backups and the live log, filters by completion and sorts by reception', () => {
    const path = join(dir, 'audit.log');
    // Oldest backup (compressed), then a plain one, then the live file (its last line still being written).
    writeFileSync(
      join(dir, 'audit-2026-12-02T05-00-00.000.log.gz'),
      gzipSync(
        `${variant(STATUS_PATCH, 'old', '2026-12-02T04:59:00.000000Z', '2026-12-02T04:59:00.000100Z')}\n`,
      ),
    );
    writeFileSync(
      join(dir, 'audit-2026-12-02T05-30-00.000.log'),
      `${variant(STATUS_PATCH, 'mid', '2026-12-02T05:10:00.000000Z', '2026-12-02T05:10:00.000100Z')}\n`,
    );
    writeFileSync(
      path,
      [
        variant(JOB_CREATE, 'late-received', '2026-12-02T05:40:00.000500Z', '2026-12-02T05:40:00.001000Z'),
        variant(JOB_CREATE, 'early-received', '2026-12-02T05:40:00.000100Z', '2026-12-02T05:40:00.002000Z'),
        '{"kind":"Event","auditID":"partial',
      ].join('\n'),
    );
    // Not backups of audit.log.
    writeFileSync(
      join(dir, 'audit-notes.log'),
      `${variant(STATUS_PATCH, 'x', '2026-12-02T05:00:00Z', '2026-12-02T05:00:00Z')}\n`,
    );
    writeFileSync(join(dir, 'kube-apiserver.log'), 'I1202 05:47:31 started\n');

    const all = readAuditLog(path);
    assert.deepEqual(
      all.map((r) => r.auditID),
      ['old', 'mid', 'early-received', 'late-received'],
    );
    const since = all[1]?.completed ?? Number.NaN;
    assert.ok(Math.abs(since - (Date.parse('2026-12-02T05:10:00Z') + 0.1)) < 1e-6);
    assert.deepEqual(
      readAuditLog(path, since).map((r) => r.auditID),
      ['mid', 'early-received', 'late-received'],
    );
    assert.deepEqual(
      readAuditLog(path, since + 0.001).map((r) => r.auditID),
      ['early-received', 'late-received'],
    );
  });

  it('throws when there is no audit log', () => {
    assert.throws(() => readAuditLog(join(dir, 'missing', 'audit.log')), /no audit log/);
  });
});
