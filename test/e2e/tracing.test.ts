// Traces (issue 10 §5), on the local control plane, Node and Deno, into a real OpenTelemetry Collector (built from
// its Go modules by scripts/build-otelcol, OTLP/HTTP on loopback, the file exporter writing what it receives): one
// trace per run, from the controller's reconciles and transitions down to the supervisor's CLI and tool spans, with
// `status.traceID` naming it. An Agent annotated `traceparent` joins that trace under the span it names.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  type CollectedSpan,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  fakeClaudeImages,
  GROUP_VERSION,
  type Manifest,
  pollUntil,
  runScenario,
  startOtelCollector,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

const parentOf = (s: CollectedSpan) => String(s.raw.parentSpanId ?? '');

describe(`tracing: one trace per run, controller to tool calls (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'spans of the reconciles, transitions, the CLI run and its tool call share the trace status.traceID names',
    { timeout: 600_000 },
    () =>
      runScenario(cluster, 'trace', async (s) => {
        const collector = await startOtelCollector(s.tempDir());
        s.defer(() => collector.stop());
        const images = fakeClaudeImages(s, runtime, { MOCK_TOOL: 'Bash' });
        await s.create(
          {
            apiVersion: GROUP_VERSION,
            kind: 'AgentDefinition',
            metadata: { name: 'traced' },
            spec: { model: 'claude-opus-5-5', prompt: 'do it' },
          },
          stationManifest('traced', 'traced', {
            template: {
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [{ name: 'agent', image: images.agent }],
              },
            },
          }),
        );
        const joined = { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') };
        await s.create(agentManifest('own', 'traced'));
        await s.create({
          apiVersion: GROUP_VERSION,
          kind: 'Agent',
          metadata: {
            name: 'joined',
            annotations: { traceparent: `00-${joined.traceId}-${joined.spanId}-01` },
          },
          spec: { stationRef: 'traced' },
        } as Manifest);
        await s.startReplica({
          env: { AGENT_IMAGE: images.init, OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint },
        });

        const own = await s.waitTerminal('own');
        assert.equal(own.status.phase, 'Succeeded', JSON.stringify(own.status));
        const status = own.status as { traceID?: string };
        assert.equal(status.traceID, (own.metadata.uid ?? '').replace(/-/g, ''), 'the uid is the trace id');
        const other = await s.waitTerminal('joined');
        assert.equal(other.status.phase, 'Succeeded', JSON.stringify(other.status));
        assert.equal((other.status as { traceID?: string }).traceID, joined.traceId);

        const WANTED = ['agent.run', 'agent.reconcile', 'agent.admit', 'agent.create_job', 'agent.complete'];
        const spansOf = async (traceId: string) =>
          pollUntil(
            async (observe) => {
              const spans = (await collector.readSpans()).filter((x) => x.traceId === traceId);
              const names = new Set(spans.map((x) => x.name));
              observe([...names].sort());
              return [...WANTED, 'agent.cli', 'agent.tool'].every((n) => names.has(n)) ? spans : undefined;
            },
            { timeoutMs: 60_000, description: `the spans of trace ${traceId}` },
          );

        const spans = await spansOf(status.traceID ?? '');
        const one = (name: string) => {
          const found = spans.filter((x) => x.name === name);
          assert.ok(found.length >= 1, name);
          return found[0] as CollectedSpan;
        };
        const root = one('agent.run');
        assert.equal(parentOf(root), '', 'the root span of a run that joins no trace has no parent');
        assert.equal(root.resource['service.name'], 'agent-controller');
        assert.deepEqual(
          [root.attrs['agent.name'], root.attrs['agent.namespace'], root.attrs['agent.phase']],
          ['own', s.ns, 'Succeeded'],
        );
        assert.equal(root.attrs['agent.exit_code'], '0', 'OTLP JSON carries integers as strings');
        for (const name of ['agent.reconcile']) {
          for (const x of spans.filter((y) => y.name === name)) assert.equal(parentOf(x), root.spanId, name);
        }
        const reconciles = new Set(spans.filter((x) => x.name === 'agent.reconcile').map((x) => x.spanId));
        for (const name of ['agent.admit', 'agent.create_job', 'agent.complete']) {
          assert.ok(reconciles.has(parentOf(one(name))), `${name} is a child of a reconcile`);
        }
        assert.equal(one('agent.create_job').attrs['k8s.job.name'], 'agent-job-own');
        assert.equal(one('agent.create_job').attrs['agent.model'], 'claude-opus-5-5');
        // The pod's spans: the CLI run under the root span, its tool call under it.
        const cli = one('agent.cli');
        assert.equal(cli.resource['service.name'], 'agent-supervisor');
        assert.equal(parentOf(cli), root.spanId);
        assert.deepEqual(
          [cli.attrs['agent.name'], cli.attrs['agent.vendor'], cli.attrs['agent.exit_code']],
          ['own', 'claude', '0'],
        );
        const tool = one('agent.tool');
        assert.equal(parentOf(tool), cli.spanId);
        assert.deepEqual(
          [tool.attrs['agent.tool.name'], tool.attrs['agent.tool.call_id']],
          ['Bash', 'toolu_mock_1'],
        );

        // The annotated Agent: its root span is a child of the span its traceparent names.
        const joinedSpans = await spansOf(joined.traceId);
        const joinedRoot = joinedSpans.find((x) => x.name === 'agent.run');
        assert.equal(joinedRoot === undefined ? undefined : parentOf(joinedRoot), joined.spanId);
        assert.equal(joinedSpans.find((x) => x.name === 'agent.cli')?.raw.parentSpanId, joinedRoot?.spanId);
      }),
  );
});
