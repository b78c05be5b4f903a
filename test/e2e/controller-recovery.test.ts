// The controller recovers from losing the API server. It talks to the API server through a TCP relay the test
// can cut: (1) cut off while an Agent is created and etcd is compacted past the controller's last
// resourceVersion, then reconnected: the Agent still runs and the controller re-listed; (2) an API-server
// outage long enough to lose leadership (the testbed cannot restart kube-apiserver alone, so the outage is
// made at the relay: every connection reset, new ones refused): readiness drops, leadership is lost and
// regained, and a new Agent still succeeds.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  agentManifest,
  applyCrds,
  BUNDLE_PATH,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  kubeconfigWithServer,
  pollUntil,
  runScenario,
  type Scenario,
  startApiRelay,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip =
  typeof cluster === 'string'
    ? cluster
    : !existsSync(BUNDLE_PATH)
      ? `${BUNDLE_PATH} is missing: run \`npm run build\``
      : cluster.testbed === undefined
        ? 'needs the local testbed (etcd URL in testbed.json)'
        : false;
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

const EtcdStatusSchema = v.looseObject({ header: v.looseObject({ revision: v.string() }) });

/** Compacts etcd (physically) at its current revision and returns that revision. */
async function compactEtcd(etcdUrl: string): Promise<number> {
  const status = await fetch(`${etcdUrl}/v3/maintenance/status`, { method: 'POST', body: '{}' });
  assert.equal(status.status, 200, 'etcd status');
  const revision = v.parse(EtcdStatusSchema, await status.json()).header.revision;
  const compacted = await fetch(`${etcdUrl}/v3/kv/compaction`, {
    method: 'POST',
    body: JSON.stringify({ revision, physical: true }),
  });
  assert.equal(compacted.status, 200, `etcd compaction: ${await compacted.text()}`);
  return Number(revision);
}

/** A recipe and Station whose runs echo one line. */
async function createRecipe(s: Scenario): Promise<void> {
  await s.create(execDefinition('echo', ['sh', '-c', 'echo "ran $0"']), stationManifest('echo', 'echo'));
}

async function expectSuccess(s: Scenario, name: string): Promise<void> {
  const done = await s.waitTerminal(name);
  assert.equal(done.status.phase, 'Succeeded', `${name}: ${JSON.stringify(done.status)}`);
  assert.match(done.status.output ?? '', new RegExp(`^ran run ${name}$`, 'm'));
}

describe(`controller: recovery from API-server trouble (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string' || cluster.testbed === undefined) return;
  const testbed = cluster.testbed;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'cut off while an Agent is created and etcd is compacted: the controller reconnects, re-lists and runs it',
    {
      timeout: 240_000,
    },
    (t) =>
      runScenario(cluster, 'ctl-compact', async (s) => {
        const relay = await startApiRelay(s.client.server);
        s.defer(() => relay.close());
        const ctl = await s.startReplica({
          kubeconfig: kubeconfigWithServer(s.cluster.kubeconfig, relay.url, s.tempDir()),
        });
        await createRecipe(s);
        await s.create(agentManifest('before', 'echo'));
        await expectSuccess(s, 'before');
        const resyncs = await ctl.metric('controller_resyncs_total');
        const reconnects = await ctl.metric('controller_watch_reconnects_total');

        relay.block();
        const pollFailuresBefore = ctl.logged('Poll failed').length;
        await pollUntil(
          () =>
            relay.refused() >= 2 && ctl.logged('Poll failed').length > pollFailuresBefore ? true : undefined,
          {
            timeoutMs: 20_000,
            description: 'the controller to notice it is cut off (refused reconnects, a failed poll)',
          },
        );
        await s.create(agentManifest('during', 'echo'));
        const revision = await compactEtcd(testbed.etcd);
        t.diagnostic(`compacted etcd at revision ${revision} while the controller was cut off`);
        relay.open();

        await expectSuccess(s, 'during');
        await s.create(agentManifest('after', 'echo'));
        await expectSuccess(s, 'after');
        await ctl.waitForMetric('controller_resyncs_total', {}, (n) => n > resyncs);
        await ctl.waitForMetric('controller_watch_reconnects_total', {}, (n) => n > reconnects);
        const expired = ctl.logged('Watch expired, re-listing').length;
        t.diagnostic(
          `${runtime}: ${expired} watch(es) answered 410 after the compaction (the API server's watch cache may still serve the old resourceVersion)`,
        );
        await ctl.waitReady(20_000);
      }),
  );

  it(
    'an API-server outage: readiness drops, leadership is lost and regained, and new Agents still run',
    {
      timeout: 240_000,
    },
    (t) =>
      runScenario(cluster, 'ctl-outage', async (s) => {
        const relay = await startApiRelay(s.client.server);
        s.defer(() => relay.close());
        const ctl = await s.startReplica({
          kubeconfig: kubeconfigWithServer(s.cluster.kubeconfig, relay.url, s.tempDir()),
        });
        await createRecipe(s);
        await s.create(agentManifest('before', 'echo'));
        await expectSuccess(s, 'before');
        const reconnects = await ctl.metric('controller_watch_reconnects_total');

        const downAt = Date.now();
        relay.block();
        await pollUntil(
          async (observe) => {
            const r = await ctl.http('/readyz');
            observe(r);
            return r.status === 503 ? true : undefined;
          },
          { timeoutMs: 20_000, description: '/readyz to report the API server unreachable' },
        );
        await ctl.waitForMetric('controller_is_leader', {}, 0, 30_000);
        t.diagnostic(`${runtime}: stepped down ${Date.now() - downAt} ms into the outage`);
        relay.open();

        const upAt = Date.now();
        await ctl.waitForMetric('controller_is_leader', {}, 1, 30_000);
        await ctl.waitReady(30_000);
        t.diagnostic(
          `${runtime}: leading and ready again ${Date.now() - upAt} ms after the API server came back`,
        );
        await s.create(agentManifest('after', 'echo'));
        await expectSuccess(s, 'after');
        await ctl.waitForMetric('controller_watch_reconnects_total', {}, (n) => n > reconnects);
        assert.ok(ctl.running, 'the controller survived the outage');
      }),
  );
});
