// The real Codex, Gemini CLI and OpenCode (test/clis, installed by scripts/install-clis) as the agents of Job runs
// on the local control plane, each against the loopback fake of the model API it speaks (test/support/model-api):
// the model asks for one shell command that writes the workspace, the CLI runs it in the pod and sends its output
// back, then answers; the Agent gets the answer and the tokens the fake sent, and the key reached the model API
// (test/support/real-cli-checks.ts: the scripts, shared with the real node's test/e2e/real-node-clis.test.ts).
// What the product does for each CLI is in docs/reference/vendor-clis.md ("What the product does for …"). Node only:
// the Deno pass runs the same Job path with the mock CLI.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import { startVendorModel } from '../support/model-api/index.ts';
import { markerRunFailure, otherCliMarkerRuns, vendorKeys } from '../support/real-cli-checks.ts';
import {
  agentSecrets,
  agentTemplate,
  cliDefinition,
  realCliImages,
  realCliSkipReason,
} from '../support/real-clis.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

describe(`the real Codex, Gemini CLI and OpenCode in Job runs (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('each runs a shell command in the workspace, answers, and reports the tokens the model API sent', {
    timeout: 300_000,
  }, async () => {
    const marker = `marker-${randomBytes(6).toString('hex')}`;
    const keys = vendorKeys();
    const runs = otherCliMarkerRuns(marker);
    const fakes = await Promise.all(
      runs.map((r) =>
        startVendorModel(r.vendor, { apiKey: keys[r.secret.ref], conversations: r.conversations }),
      ),
    );
    try {
      await runScenario(cluster, 'real-others', async (s) => {
        const images = realCliImages(s, runtime);
        const template = agentTemplate(images.agent);
        await s.create(
          agentSecrets(keys),
          ...runs.flatMap((r, i) => [
            cliDefinition(r.name, r.model, { [r.baseUrlEnv]: fakes[i]?.baseUrl ?? '' }, r.secret, r.extra),
            stationManifest(r.name, r.name, { template }),
            agentManifest(`${r.name}-run`, r.name),
          ]),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init } });

        const failures: string[] = [];
        for (const [i, r] of runs.entries()) {
          const run = await s.waitTerminal(`${r.name}-run`, 180_000);
          const key = keys[r.secret.ref];
          const failure = markerRunFailure(r, run, fakes[i]?.requests ?? [], { marker, key });
          if (failure !== undefined) failures.push(failure);
        }
        assert.deepEqual(failures, []);
      });
    } finally {
      await Promise.all(fakes.map((f) => f.close()));
    }
  });
});
