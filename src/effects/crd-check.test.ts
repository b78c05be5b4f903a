import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, it } from 'node:test';
import { buildCrd, CRD_KINDS } from '../api/crd/index.ts';
import { RESOURCE_NAMES } from '../api/group.ts';
import { createFakeTransport, type FakeReply } from '../kube/fake-transport.ts';
import { ManualClock } from '../runtime/index.ts';
import { createLogger } from '../shared/log.ts';
import { checkInstalledCrds, watchInstalledCrds } from './crd-check.ts';

const PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/';

/** Our four CRDs as the fake API server's answers; `agents` swapped for `agent` when given. */
function crdServer(agent?: () => FakeReply): (path: string) => FakeReply {
  return (path) => {
    const kind = CRD_KINDS.find((k) => path === `${PATH}${RESOURCE_NAMES[k].plural}.agents.re-cinq.com`);
    if (kind === undefined) return { status: 404, body: { kind: 'Status', code: 404 } };
    if (kind === 'Agent' && agent !== undefined) return agent();
    return { status: 200, body: buildCrd(kind) };
  };
}

/** The Agent CRD without status.conditions. */
function agentWithoutConditions(): FakeReply {
  const crd = structuredClone(buildCrd('Agent'));
  const status = crd.spec.versions[0]?.schema.openAPIV3Schema.properties?.status;
  delete status?.properties?.conditions;
  return { status: 200, body: crd };
}

function logs(): {
  readonly lines: Record<string, unknown>[];
  readonly log: ReturnType<typeof createLogger>;
} {
  const lines: Record<string, unknown>[] = [];
  return { lines, log: createLogger('debug', (l) => void lines.push(JSON.parse(l))) };
}

describe('installed CRD check', () => {
  it('reads the four CRDs by name: ours lack nothing; a missing field or CRD is named', async () => {
    const fine = createFakeTransport({ request: (r) => crdServer()(r.path) });
    assert.deepEqual(await checkInstalledCrds(fine), { kind: 'ok' });
    assert.deepEqual(
      fine.requests.map((r) => `${r.method} ${r.path}`),
      CRD_KINDS.map((k) => `GET ${PATH}${RESOURCE_NAMES[k].plural}.agents.re-cinq.com`),
    );
    const lacking = createFakeTransport({ request: (r) => crdServer(agentWithoutConditions)(r.path) });
    assert.deepEqual(await checkInstalledCrds(lacking), {
      kind: 'lacking',
      missing: { 'agents.agents.re-cinq.com': ['status.conditions'] },
    });
    const absent = createFakeTransport({
      request: (r) => crdServer(() => ({ status: 404, body: { kind: 'Status', code: 404 } }))(r.path),
    });
    assert.deepEqual(await checkInstalledCrds(absent), {
      kind: 'lacking',
      missing: { 'agents.agents.re-cinq.com': ['(not installed)'] },
    });
    const refused = createFakeTransport({
      request: () => ({ status: 403, body: { kind: 'Status', code: 403, reason: 'Forbidden' } }),
    });
    assert.equal((await checkInstalledCrds(refused)).kind, 'unknown');
  });

  it('warns once, rechecks with one timer at a time until the CRDs are right, then stops', async () => {
    let agent: () => FakeReply = agentWithoutConditions;
    const transport = createFakeTransport({ request: (r) => crdServer(() => agent())(r.path) });
    const clock = new ManualClock();
    const { lines, log } = logs();
    const ctl = new AbortController();
    const { check } = watchInstalledCrds({ transport, log, signal: ctl.signal, clock, recheckMs: 1000 });
    await clock.advance(0);
    assert.equal(check.ready(), true, 'always ready: runs still work');
    assert.match(check.detail?.() ?? '', /agents\.agents\.re-cinq\.com: status\.conditions/);
    for (let i = 0; i < 15; i++) await clock.advance(1000);
    assert.equal(transport.requests.length, 16 * CRD_KINDS.length, 'checked at start and once a second');
    assert.equal(clock.pending(), 1, 'one timer at a time');
    assert.equal(getEventListeners(ctl.signal, 'abort').length, 1, 'one abort listener, not one per recheck');
    assert.equal(lines.filter((l) => l.level === 'warn').length, 1, 'the warning is logged once');

    agent = () => ({ status: 200, body: buildCrd('Agent') });
    await clock.advance(1000);
    assert.equal(check.detail?.(), undefined);
    assert.equal(clock.pending(), 0, 'no more checks once the CRDs are right');
    assert.deepEqual(
      lines.map((l) => l.msg),
      [
        'Installed CRDs lack fields this version writes',
        'The installed CRDs carry every field this version writes',
      ],
    );
  });

  it('stops rechecking on shutdown, and a check that throws counts as unknown', async () => {
    const transport = createFakeTransport({
      request: () => {
        throw new Error('boom');
      },
    });
    const clock = new ManualClock();
    const { lines, log } = logs();
    const ctl = new AbortController();
    const { check } = watchInstalledCrds({ transport, log, signal: ctl.signal, clock, recheckMs: 1000 });
    await clock.advance(0);
    assert.match(check.detail?.() ?? '', /could not be checked: Error: boom/);
    assert.equal(clock.pending(), 1);
    ctl.abort();
    assert.equal(clock.pending(), 0, 'the pending recheck is cancelled');
    await clock.advance(5000);
    assert.equal(transport.requests.length, 1);
    assert.equal(lines.length, 1);
  });
});
