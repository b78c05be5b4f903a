// The test node's instant pods (test/node-agent/instant.ts), through the controller: a Station whose pod template
// carries the instant annotations gets its runs' exit code and log from them, with no process started.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
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
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

describe(`test node: instant pods (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('exit code and log lines come from the pod annotations, after the delay', { timeout: 120_000 }, () =>
    runScenario(cluster, 'instant', async (s) => {
      await s.startReplica();
      const template = (annotations: Record<string, string>) => ({
        template: {
          metadata: { annotations: { 'testbed.agent-controller.dev/instant': 'true', ...annotations } },
          spec: { containers: [{ name: 'agent', image: 'debian:bookworm-slim' }] },
        },
      });
      await s.create(
        // The command would fail loudly if it ran: instant pods never start it.
        execDefinition('never-run', ['sh', '-c', 'echo ran-for-real; exit 42']),
        stationManifest('instant-ok', 'never-run', template({})),
        stationManifest(
          'instant-fail',
          'never-run',
          template({
            'testbed.agent-controller.dev/exit-code': '7',
            'testbed.agent-controller.dev/delay-ms': '1500',
            'testbed.agent-controller.dev/log': 'first line\nsecond line',
          }),
        ),
        agentManifest('fast', 'instant-ok'),
        agentManifest('slow', 'instant-fail'),
      );
      const fast = await s.waitTerminal('fast');
      assert.equal(fast.status.phase, 'Succeeded', JSON.stringify(fast.status));
      assert.equal(fast.status.exitCode, 0);
      assert.match(fast.status.output ?? '', /"status":"succeeded","exitCode":0/);
      assert.doesNotMatch(fast.status.output ?? '', /ran-for-real/);
      const slow = await s.waitTerminal('slow');
      assert.equal(slow.status.phase, 'Failed', JSON.stringify(slow.status));
      assert.equal(slow.status.exitCode, 7);
      assert.equal(slow.status.output, 'first line\nsecond line\n');
      const ran = Date.parse(slow.status.completedAt ?? '') - Date.parse(slow.status.startedAt ?? '');
      assert.ok(ran >= 1000, `the run took its delay: ${ran} ms`);
    }),
  );
});
