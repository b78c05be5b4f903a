// What a run produced, on the Agent (issue 10 §2), on the local control plane, Node and Deno: the fake Claude, Codex
// and Gemini CLIs (the mock agent in each style, docs/reference/vendor-cli-events.md) print their result lines with
// usage (and Claude its
// cost); the supervisor hands them to the controller in the agent container's termination message, and the Agent
// gets `status.result`, `status.tokenUsage` and `status.costEstimate` (the CLI's own cost, else the price table,
// here with an override file as the ConfigMap agent-prices would mount it). A definition that asks for JSON with
// a schema gets the parsed value, or fails with the first schema error. The token and cost metrics count them.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  fakeClaudeImages,
  GROUP_VERSION,
  type Manifest,
  nodePassOnlySkipReason,
  runScenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = nodePassOnlySkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/** A definition of `model` whose mock CLI knobs are literal env of the run. */
function definition(
  name: string,
  model: string,
  env: Readonly<Record<string, string>>,
  extra: Readonly<Record<string, unknown>> = {},
): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: {
      model,
      prompt: 'do it',
      resources: { env: Object.entries(env).map(([k, value]) => ({ name: k, value })) },
      ...extra,
    },
  };
}

const USAGE = { input: 1200, output: 340, cacheRead: 200, cacheWrite: 50 };

describe(`run results: result, usage and cost on the Agent (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'the final answer, tokens and cost of Claude, Codex and Gemini runs; a JSON result checked against its schema',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'results', async (s) => {
        const images = fakeClaudeImages(s, runtime);
        const prices = join(s.tempDir(), 'prices.json');
        writeFileSync(prices, JSON.stringify({ 'gpt-6*': { inputPerMTok: 1, outputPerMTok: 8 } }));
        const usage = JSON.stringify(USAGE);
        const schema = {
          type: 'object',
          required: ['verdict'],
          properties: { verdict: { enum: ['pass', 'fail'] } },
        };
        const recipes: [string, Manifest][] = [
          [
            'claude',
            definition('claude', 'claude-opus-5-5', {
              MOCK_TEXT: 'all tests pass',
              MOCK_USAGE: usage,
              MOCK_COST: '0.25',
            }),
          ],
          ['codex', definition('codex', 'gpt-6-astra', { MOCK_TEXT: 'patched it', MOCK_USAGE: usage })],
          [
            'gemini',
            definition('gemini', 'gemini-3.8-flash', { MOCK_TEXT: 'looks fine', MOCK_USAGE: usage }),
          ],
          [
            'json-ok',
            definition(
              'json-ok',
              'claude-sonnet-5-5',
              { MOCK_TEXT: '{"verdict":"pass"}', MOCK_USAGE: usage, MOCK_COST: '0.01' },
              { output: { format: 'json', schema } },
            ),
          ],
          [
            'json-bad',
            definition(
              'json-bad',
              'claude-sonnet-5-5',
              { MOCK_TEXT: '{"verdict":"maybe"}' },
              { output: { format: 'json', schema } },
            ),
          ],
        ];
        const template = {
          spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'agent', image: images.agent }] },
        };
        for (const [name, recipe] of recipes) {
          await s.create(
            recipe,
            stationManifest(name, name, { template }),
            agentManifest(`${name}-run`, name),
          );
        }
        const ctl = await s.startReplica({ env: { AGENT_IMAGE: images.init, PRICES_FILE: prices } });

        const claude = await s.waitTerminal('claude-run');
        assert.equal(claude.status.phase, 'Succeeded', JSON.stringify(claude.status));
        const st = (a: typeof claude) => a.status as Record<string, unknown>;
        assert.equal(st(claude).result, 'all tests pass');
        assert.deepEqual(st(claude).tokenUsage, {
          input: 1200,
          output: 340,
          cacheRead: 200,
          cacheWrite: 50,
          total: 1790,
        });
        assert.deepEqual(st(claude).costEstimate, { usd: '0.25', source: 'cli', model: 'claude-opus-5-5' });

        // Codex counts cached tokens inside input_tokens: the Agent shows the uncached part as input.
        const codex = await s.waitTerminal('codex-run');
        assert.equal(codex.status.phase, 'Succeeded', JSON.stringify(codex.status));
        assert.equal(st(codex).result, 'patched it');
        assert.deepEqual(st(codex).tokenUsage, {
          input: 1000,
          output: 340,
          cacheRead: 200,
          cacheWrite: 0,
          total: 1540,
        });
        // 1000 × $1 + 340 × $8 + 200 × $0.10 per million tokens, from the override file.
        assert.deepEqual(st(codex).costEstimate, {
          usd: '0.00374',
          source: 'priceTable',
          model: 'gpt-6-astra',
        });

        const gemini = await s.waitTerminal('gemini-run');
        assert.equal(gemini.status.phase, 'Succeeded', JSON.stringify(gemini.status));
        assert.equal(st(gemini).result, 'looks fine');
        assert.equal((st(gemini).tokenUsage as { output?: number }).output, 340);
        assert.equal(st(gemini).costEstimate, undefined, 'no price for gemini-3.8-flash: no estimate');

        const ok = await s.waitTerminal('json-ok-run');
        assert.equal(ok.status.phase, 'Succeeded', JSON.stringify(ok.status));
        assert.deepEqual(st(ok).result, { verdict: 'pass' }, 'the parsed value');

        const bad = await s.waitTerminal('json-bad-run');
        assert.equal(bad.status.phase, 'Failed');
        assert.equal(bad.status.exitCode, 1);
        assert.equal(
          bad.status.failureReason,
          'result does not match output.schema: $.verdict: "maybe" is not one of ["pass","fail"]',
        );
        await s.waitForEvents('json-bad-run', bad.metadata.uid, ['Warning/ResultInvalid']);

        assert.equal(
          await ctl.metric('controller_run_tokens_total', { model: 'claude-opus-5-5', kind: 'input' }),
          1200,
        );
        assert.equal(
          await ctl.metric('controller_run_tokens_total', { model: 'gpt-6*', kind: 'cache_read' }),
          200,
        );
        assert.equal(
          await ctl.metric('controller_run_tokens_total', { model: 'other', kind: 'output' }),
          340,
        );
        assert.equal(await ctl.metric('controller_run_cost_usd_total', { model: 'claude-opus-5-5' }), 0.25);
        assert.equal(await ctl.metric('controller_run_failures_total', { kind: 'result_invalid' }), 1);
      }),
  );
});
