import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeTransport } from '../kube/fake-transport.ts';
import { createLogger } from '../shared/log.ts';
import { probePolicies } from './run-controller.ts';

const statusBody = (code: number, reason: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  reason,
  message: reason,
  code,
});

/** What probePolicies makes of one answer to `GET .../agentpolicies?limit=1`, and the warnings it logged. */
async function probe(status: number, body: unknown): Promise<[unknown, string[]]> {
  const transport = createFakeTransport({ request: () => ({ status, body }) });
  const warnings: string[] = [];
  const log = createLogger('warn', (line) => void warnings.push(line));
  const r = await probePolicies(transport, log);
  assert.deepEqual(
    transport.requests.map((q) => `${q.method} ${q.path}`),
    ['GET /apis/agents.re-cinq.com/v1alpha1/agentpolicies'],
  );
  return [r, warnings];
}

describe('probePolicies: can AgentPolicies be read?', () => {
  it('a list answer: readable, nothing logged', async () => {
    const [r, warnings] = await probe(200, { kind: 'AgentPolicyList', metadata: {}, items: [] });
    assert.deepEqual(r, { kind: 'readable' });
    assert.deepEqual(warnings, []);
  });

  it('404 (no CRD) and 403 (no grant): unreadable with why, one warning', async () => {
    const [missing, w1] = await probe(404, statusBody(404, 'NotFound'));
    assert.deepEqual(missing, { kind: 'unreadable', why: 'the AgentPolicy CRD is not installed' });
    assert.equal(w1.length, 1);
    const [forbidden] = await probe(403, statusBody(403, 'Forbidden'));
    assert.deepEqual(forbidden, { kind: 'unreadable', why: 'the controller may not list agentpolicies' });
  });

  it('any other answer says nothing: unknown (asked again; the informer is not started on it)', async () => {
    const [r, warnings] = await probe(500, statusBody(500, 'InternalError'));
    assert.deepEqual(r, { kind: 'unknown' });
    assert.deepEqual(warnings, []);
  });
});
