// The short chaos profile (issue 13 §1), part of `npm test` (its own tier, after the e2e tiers: it restarts the API
// server and compacts etcd, which other tests must not see): two replicas (Node and Deno) through a fault-injecting
// proxy, every kind of fault at least once, and every invariant — checked from the audit log — holds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { e2eCluster } from '../../support/index.ts';
import { formatReport, PROFILES, runChaos } from '../driver.ts';
import { FAULT_KINDS } from '../schedule.ts';

const cluster = e2eCluster();
const skip =
  typeof cluster === 'string'
    ? cluster
    : cluster.testbed === undefined
      ? 'needs the local testbed (scripts/testbed up)'
      : false;
// A fixed seed by default, so `npm test` is reproducible; CHAOS_SEED tries another (`npm run chaos` draws one).
const seed = Number(process.env.CHAOS_SEED ?? 20261202);

describe('chaos: short profile', { skip }, () => {
  it(`every invariant holds under every kind of fault (seed ${seed})`, { timeout: 15 * 60_000 }, async () => {
    if (typeof cluster === 'string') return;
    assert.ok(
      cluster.testbed?.auditLog !== undefined,
      'the testbed has no audit log: it was started before audit logging; run `scripts/testbed down && scripts/testbed up`',
    );
    const report = await runChaos(cluster, { ...PROFILES.short, seed }, (line) =>
      process.stdout.write(`# chaos: ${line}\n`),
    );
    cluster.client.close();
    const text = formatReport(report);
    process.stdout.write(`${text.replace(/^/gm, '# ')}\n`);
    assert.deepEqual(
      [...new Set(report.faults.filter((f) => !f.skipped).map((f) => f.kind))].sort(),
      [...(PROFILES.short.kinds ?? FAULT_KINDS)].sort(),
      'every kind of fault of the profile was injected',
    );
    assert.ok(report.created >= 30, `a steady workload (${report.created} Agents)`);
    assert.ok(
      (report.invariants.find((i) => i.id === 8)?.checked ?? 0) > 0,
      'batch runs were part of the workload',
    );
    assert.equal(report.invariants.length, 8);
    assert.equal(report.violations, 0, `replay with CHAOS_SEED=${seed}\n${text}`);
  });
});
