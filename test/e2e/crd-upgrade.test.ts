// e2e: alone — it swaps the cluster-wide Agent CRD for the reference's schema
// Upgrading from the reference controller with its CRDs still installed (issue 11 §5), on the real API server: the
// Agent CRD is put back to the reference's schema (docs/design/reference-behaviour.md#custom-resources). The
// controller warns at start, with
// the missing fields, in one log line and in /readyz?verbose, and stays ready; a run still succeeds, but the API
// server drops what the old schema lacks (its conditions), which is why `kubectl wait --for=condition=Complete`
// would hang. With this version's CRDs applied again, a controller starts without the warning.
// Runs in the Node pass only: it swaps a cluster-wide CRD (the e2e files run one at a time) and restores it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import { referenceAgentSchema } from '../../src/api/crd/reference-fixtures.ts';
import {
  agentManifest,
  applyCrds,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  runScenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip =
  controllerSkipReason(cluster) ||
  (runtime === 'deno' ? 'it swaps a cluster-wide CRD; it runs in the node pass only' : false);
const AGENT_CRD = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/agents.agents.re-cinq.com';

const CrdSchema = v.looseObject({
  metadata: v.looseObject({ resourceVersion: v.string() }),
  spec: v.looseObject({ versions: v.array(v.looseObject({ name: v.string() })) }),
});

describe(`upgrade from the reference: its CRDs still installed (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(async () => {
    await applyCrds(cluster.client);
    cluster.client.close();
  });

  it(
    'warns at start with the missing fields (log and /readyz), stays ready; a run works but loses its conditions',
    { timeout: 180_000 },
    () =>
      runScenario(cluster, 'crd-upgrade', async (s) => {
        const current = await s.client.json('GET', AGENT_CRD, CrdSchema);
        const versions = current.spec.versions.map((ver) =>
          ver.name === 'v1alpha1' ? { ...ver, schema: { openAPIV3Schema: referenceAgentSchema() } } : ver,
        );
        s.defer(() => applyCrds(s.client));
        const put = await s.client.request('PUT', AGENT_CRD, {
          body: { ...current, spec: { ...current.spec, versions } },
        });
        assert.equal(put.status, 200, put.body);

        await s.create(
          execDefinition('echo', ['sh', '-c', 'echo upgraded']),
          stationManifest('echo', 'echo'),
        );
        const ctl = await s.startReplica();
        const warning = await ctl.waitForLog('Installed CRDs lack fields this version writes');
        const missing = (warning.missing as Record<string, string[]>)['agents.agents.re-cinq.com'] ?? [];
        for (const field of ['status.conditions', 'status.observedGeneration', 'spec.model'])
          assert.ok(missing.includes(field), `${field} in ${missing.join(', ')}`);
        assert.doesNotMatch(JSON.stringify(missing), /status\.phase/);
        const verbose = await ctl.http('/readyz?verbose');
        assert.equal(verbose.status, 200, 'still ready: runs work');
        assert.match(
          verbose.body,
          /\[\+\]crd-schema ok: installed CRDs lack fields .*agents\.agents\.re-cinq\.com: .*status\.conditions/,
        );

        await s.create(agentManifest('old-schema', 'echo'));
        const done = await s.waitTerminal('old-schema', 90_000);
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.deepEqual(
          done.status.conditions,
          [],
          'the old schema drops the conditions the controller writes',
        );
        await ctl.stop();

        // This version's CRDs first, as the upgrade how-to says: no warning, conditions kept.
        await applyCrds(s.client);
        const fresh = await s.startReplica();
        await fresh.waitForLog('The installed CRDs carry every field this version writes');
        const fine = await fresh.http('/readyz/crd-schema');
        assert.equal(fine.body, 'ok');
        await s.create(agentManifest('new-schema', 'echo'));
        const kept = await s.waitTerminal('new-schema', 90_000);
        assert.ok(
          kept.status.conditions.some((c) => c.type === 'Complete' && c.status === 'True'),
          JSON.stringify(kept.status.conditions),
        );
        assert.equal(fresh.logged('Installed CRDs lack fields this version writes').length, 0);
      }),
  );
});
