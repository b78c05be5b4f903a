// The dependencies gate (issue 10 §4) on the local control plane, Node and Deno: a run whose AgentDefinition names a
// Service waits (Ready=False/WaitingForDependencies, no Job, no slot) until the Service has a ready endpoint on the
// port it names, then starts, its NetworkPolicy admitting that endpoint; a dependency that never becomes ready fails
// its run with `dependency <name> not ready after <n>s`. The testbed's API server keeps no EndpointSlices for
// Services (pod IPs are loopback addresses, which EndpointSlices refuse), so the test writes them, as the
// EndpointSlice controller would.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  agentCondition,
  agentManifest,
  apiPath,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  execDefinition,
  nodePassOnlySkipReason,
  runScenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/** An EndpointSlice of Service `service` with one endpoint (ready or not) on `port`. */
function slice(namespace: string, service: string, address: string, port: number, ready: boolean) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${service}-abc`, namespace, labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints: [{ addresses: [address], conditions: { ready } }],
    ports: [{ name: 'main', port, protocol: 'TCP' }],
  };
}

describe(`dependencies gate (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'a run waits for its Service to have a ready endpoint, then starts; one that never does times out',
    {
      timeout: 180_000,
    },
    () =>
      runScenario(cluster, 'deps', async (s) => {
        const slices = apiPath('discovery.k8s.io/v1', 'endpointslices', { namespace: s.ns });
        await s.client.create(slices, slice(s.ns, 'db', '192.0.2.20', 5432, false));
        await s.create(
          execDefinition('needs-db', ['sh', '-c', 'echo db is up'], {
            dependencies: [{ service: 'db', port: 5432, timeoutSeconds: 120 }],
          }),
          execDefinition('needs-ghost', ['sh', '-c', 'echo never'], {
            dependencies: [{ service: 'ghost', timeoutSeconds: 3 }],
          }),
          stationManifest('db-st', 'needs-db'),
          stationManifest('ghost-st', 'needs-ghost'),
          agentManifest('db-run', 'db-st'),
          agentManifest('ghost-run', 'ghost-st'),
        );
        await s.startReplica();

        const waiting = await s.waitForAgent(
          'db-run',
          (a) => agentCondition(a, 'Ready')?.reason === 'WaitingForDependencies',
          'waiting for its dependency',
        );
        assert.equal(waiting.status.phase, 'Pending');
        assert.equal(
          agentCondition(waiting, 'Ready')?.message,
          'Waiting for Service db (port 5432) to have ready endpoints',
        );
        assert.equal(await s.job('agent-job-db-run'), undefined, 'no Job while it waits');

        const ghost = await s.waitTerminal('ghost-run', 60_000);
        assert.equal(ghost.status.phase, 'Failed');
        assert.equal(ghost.status.failureReason, 'dependency ghost not ready after 3s');
        await s.waitForEvents('ghost-run', ghost.metadata.uid, [
          'Normal/WaitingForDependencies',
          'Warning/DependencyNotReady',
        ]);

        // The endpoint becomes ready: the watch wakes the run.
        await s.client.patch(`${slices}/db-abc`, {
          endpoints: [{ addresses: ['192.0.2.20'], conditions: { ready: true } }],
        });
        const done = await s.waitTerminal('db-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.match(done.status.output ?? '', /^db is up$/m);
        const netpol = (await s.client.get(
          apiPath('networking.k8s.io/v1', 'networkpolicies', { namespace: s.ns, name: 'agent-job-db-run' }),
        )) as unknown as { spec: { egress: unknown[] } };
        assert.deepEqual(netpol.spec.egress.at(-1), {
          to: [{ ipBlock: { cidr: '192.0.2.20/32' } }],
          ports: [{ protocol: 'TCP', port: 5432 }],
        });
      }),
  );
});
