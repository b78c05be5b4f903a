import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Action, AgentStatusPatch } from '../reconcile/actions.ts';
import { agent, NS, T0 } from '../reconcile/test-fixtures.ts';
import { rootSpanIdFromUid, traceIdFromUid } from '../shared/trace-context.ts';
import { runTracesUrlFromEnv, tracingConfigFromEnv } from './config.ts';
import { createTracing, NO_TRACING } from './otel.ts';
import { RunSpans, traceOf } from './run-spans.ts';
import { transitionSpan } from './transitions.ts';

const CONFIG = { tracesUrl: 'http://127.0.0.1:1/v1/traces', serviceName: 'test' };

/** A tracer writing into memory, and what it wrote after a flush. */
function inMemory() {
  const exporter = new InMemorySpanExporter();
  const tracing = createTracing(CONFIG, exporter);
  return {
    tracing,
    spans: async (): Promise<ReadableSpan[]> => {
      await tracing.flush(5000);
      return exporter.getFinishedSpans();
    },
  };
}

const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const APPLIED = { kind: 'applied' } as const;

const patch = (status: Partial<AgentStatusPatch>): Action => ({
  kind: 'patchStatus',
  ref: { namespace: NS, name: 'a', uid: 'uid-a' },
  resourceVersion: '1',
  status: { conditions: [], ...status },
});

describe('tracingConfigFromEnv', () => {
  it('nothing set: no tracing', () => {
    assert.deepEqual(tracingConfigFromEnv({}, 'svc'), { ok: true, value: undefined });
    assert.deepEqual(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, 'svc'), {
      ok: true,
      value: undefined,
    });
  });

  it('the base endpoint gets /v1/traces; the traces endpoint is used as it is and wins', () => {
    for (const base of ['http://c:4318', 'http://c:4318/']) {
      assert.deepEqual(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: base }, 'svc'), {
        ok: true,
        value: { tracesUrl: 'http://c:4318/v1/traces', serviceName: 'svc' },
      });
    }
    assert.deepEqual(
      tracingConfigFromEnv(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://t.example/otlp/spans',
          OTEL_SERVICE_NAME: 'mine',
        },
        'svc',
      ),
      { ok: true, value: { tracesUrl: 'https://t.example/otlp/spans', serviceName: 'mine' } },
    );
  });

  it('refuses what is not an http(s) URL, naming the variable', () => {
    assert.deepEqual(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, 's'), {
      ok: false,
      error: 'OTEL_EXPORTER_OTLP_ENDPOINT is not a URL: "not a url"',
    });
    assert.deepEqual(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'grpc://c:4317' }, 's'), {
      ok: false,
      error: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http or https URL (OTLP/HTTP), got grpc:',
    });
  });

  it('refuses credentials in the URL (it is logged and given to run pods)', () => {
    assert.deepEqual(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://u:p@c:4318' }, 's'), {
      ok: false,
      error: 'OTEL_EXPORTER_OTLP_ENDPOINT must not hold credentials (user:password@)',
    });
    assert.equal(
      runTracesUrlFromEnv({ RUN_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tok@c:4318/v1/traces' }, CONFIG)
        .ok,
      false,
    );
  });

  it('run pods export where RUN_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT says, else where the controller does', () => {
    assert.deepEqual(runTracesUrlFromEnv({}, CONFIG), { ok: true, value: CONFIG.tracesUrl });
    assert.deepEqual(
      runTracesUrlFromEnv(
        { RUN_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://10.0.0.9:4318/v1/traces' },
        CONFIG,
      ),
      { ok: true, value: 'http://10.0.0.9:4318/v1/traces' },
    );
    assert.equal(runTracesUrlFromEnv({ RUN_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'x' }, CONFIG).ok, false);
  });
});

describe('transitionSpan', () => {
  it('names the transitions and only those', () => {
    assert.deepEqual(transitionSpan(patch({ phase: 'Running', jobName: 'agent-job-a' })), {
      name: 'agent.admit',
      attributes: { 'agent.phase': 'Running', 'k8s.job.name': 'agent-job-a' },
      failed: false,
    });
    assert.deepEqual(
      transitionSpan(patch({ phase: 'Failed', exitCode: 3, failureReason: 'x'.repeat(600) })),
      {
        name: 'agent.complete',
        attributes: { 'agent.phase': 'Failed', 'agent.exit_code': 3 },
        failed: true,
        message: 'x'.repeat(512),
      },
    );
    assert.deepEqual(
      transitionSpan(
        patch({
          phase: 'Succeeded',
          exitCode: 0,
          tokenUsage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, total: 3 },
          costEstimate: { usd: '0.01', source: 'cli' },
        }),
      ),
      {
        name: 'agent.complete',
        attributes: {
          'agent.phase': 'Succeeded',
          'agent.exit_code': 0,
          'agent.tokens.total': 3,
          'agent.cost_usd': '0.01',
        },
        failed: false,
      },
    );
    assert.equal(transitionSpan(patch({ output: 'progress' })), undefined);
    assert.equal(transitionSpan(patch({ phase: 'Pending' })), undefined);
    assert.equal(
      transitionSpan({
        kind: 'recordEvent',
        ref: { namespace: NS, name: 'a', uid: 'u' },
        type: 'Normal',
        reason: 'R',
        message: 'm',
      }),
      undefined,
    );
  });

  it('a Job: its name and the model of its agent container', () => {
    const job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'agent-job-a' },
      spec: {
        template: {
          spec: {
            containers: [
              { name: 'proxy', env: [{ name: 'AGENT_MODEL', value: 'no' }] },
              { name: 'agent', env: [{ name: 'AGENT_MODEL', value: 'claude-opus-5-5' }] },
            ],
          },
        },
      },
    } as unknown as Extract<Action, { kind: 'createJob' }>['job'];
    assert.deepEqual(transitionSpan({ kind: 'createJob', job }), {
      name: 'agent.create_job',
      attributes: { 'k8s.job.name': 'agent-job-a', 'agent.model': 'claude-opus-5-5' },
      failed: false,
    });
  });
});

describe('RunSpans', () => {
  const uid = '3f1e8a52-6c0d-4b7e-9a41-2d5c7e9b0a11';
  const a = agent('a', { uid, created: 5 });

  it('a reconcile span under the run root, transition spans under it, and the root span when the run ends', async () => {
    const t = inMemory();
    const spans = new RunSpans(t.tracing, () => T0 + 60_000);
    const r = spans.reconcile(a);
    r.action(patch({ phase: 'Running', jobName: 'agent-job-a' }), T0 + 10_000, T0 + 10_050, APPLIED);
    r.action(patch({ output: 'x' }), T0 + 10_050, T0 + 10_060, APPLIED); // not a transition
    r.end('requeueAfter');
    // A reconcile that did nothing records nothing.
    spans.reconcile(a).end('done');
    const done = spans.reconcile(a);
    done.action(patch({ phase: 'Succeeded', exitCode: 0 }), T0 + 50_000, T0 + 50_010, APPLIED);
    done.end('done');
    const got = await t.spans();
    const by = (name: string) => got.filter((s) => s.name === name);
    assert.deepEqual(got.map((s) => s.name).sort(), [
      'agent.admit',
      'agent.complete',
      'agent.reconcile',
      'agent.reconcile',
      'agent.run',
    ]);
    const traceId = traceIdFromUid(uid);
    for (const s of got) assert.equal(s.spanContext().traceId, traceId, s.name);
    const root = by('agent.run')[0];
    assert.equal(root?.spanContext().spanId, rootSpanIdFromUid(uid), 'the id every replica and the pod use');
    assert.equal(root === undefined ? 'none' : parentId(root), undefined);
    assert.deepEqual(root?.startTime, [Math.floor((T0 + 5000) / 1000), ((T0 + 5000) % 1000) * 1e6]);
    assert.equal(root?.attributes['agent.phase'], 'Succeeded');
    const reconcileIds = new Set(by('agent.reconcile').map((s) => s.spanContext().spanId));
    for (const s of by('agent.reconcile')) assert.equal(parentId(s), rootSpanIdFromUid(uid));
    for (const s of [...by('agent.admit'), ...by('agent.complete')]) {
      assert.ok(reconcileIds.has(parentId(s) ?? ''), s.name);
      assert.equal(s.attributes['agent.name'], 'a');
      assert.equal(s.attributes['agent.namespace'], NS);
    }
    assert.equal(by('agent.reconcile')[0]?.attributes['agent.reconcile.result'], 'requeueAfter');
  });

  it('a failed action marks its span failed; a completion not written (409) has no span and no root', async () => {
    const t = inMemory();
    const r = new RunSpans(t.tracing).reconcile(a);
    r.action(patch({ phase: 'Failed', exitCode: 1 }), T0, T0 + 1, { kind: 'failed', error: 'HTTP 500' });
    r.end('retry', 'HTTP 500');
    const superseded = new RunSpans(t.tracing).reconcile(a);
    superseded.action(patch({ phase: 'Failed', exitCode: 1 }), T0, T0 + 1, { kind: 'notApplied' });
    superseded.end('done');
    const got = await t.spans();
    assert.deepEqual(
      got.map((s) => [s.name, s.status.code, s.status.message]),
      [
        ['agent.complete', 2, 'HTTP 500'],
        ['agent.reconcile', 2, 'HTTP 500'],
        ['agent.reconcile', 1, undefined],
      ],
    );
  });

  it('spans follow status.traceID once the run has one (an annotation edited later changes nothing)', async () => {
    const t = inMemory();
    const started = agent('a', { uid, status: { phase: 'Running', traceID: 'ef'.repeat(16) } });
    const edited = {
      ...started,
      metadata: {
        ...started.metadata,
        annotations: { traceparent: `00-${'12'.repeat(16)}-${'34'.repeat(8)}-01` },
      },
    };
    assert.equal(traceOf(edited).traceId, 'ef'.repeat(16));
    assert.equal(traceOf(agent('a', { uid })).traceId, traceIdFromUid(uid));
    const r = new RunSpans(t.tracing).reconcile(edited);
    r.action(patch({ phase: 'Succeeded', exitCode: 0 }), T0, T0 + 1, APPLIED);
    r.end('done');
    for (const s of await t.spans()) assert.equal(s.spanContext().traceId, 'ef'.repeat(16), s.name);
  });

  it('an Agent annotated traceparent: its root span is a child of that span, in that trace', async () => {
    const t = inMemory();
    const joined = {
      ...a,
      metadata: { ...a.metadata, annotations: { traceparent: `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01` } },
    };
    const r = new RunSpans(t.tracing).reconcile(joined);
    r.action(patch({ phase: 'Succeeded', exitCode: 0 }), T0, T0 + 1, APPLIED);
    r.end('done');
    const got = await t.spans();
    const root = got.find((s) => s.name === 'agent.run');
    assert.equal(root?.spanContext().traceId, 'ab'.repeat(16));
    assert.equal(root === undefined ? undefined : parentId(root), 'cd'.repeat(8));
    assert.equal(root?.spanContext().spanId, rootSpanIdFromUid(uid));
  });

  it('a batch poll: a client span under the run root with the provider, batch and result', async () => {
    const t = inMemory();
    new RunSpans(t.tracing).batchPoll(
      a,
      { provider: 'anthropic', batchId: 'msgbatch_1' },
      T0,
      T0 + 20,
      'pending',
    );
    new RunSpans(t.tracing).batchPoll(
      a,
      { provider: 'openai', batchId: 'b2' },
      T0,
      T0 + 20,
      'error',
      'HTTP 500',
    );
    const got = await t.spans();
    assert.deepEqual(
      got.map((s) => [
        s.name,
        s.kind,
        parentId(s),
        s.attributes['agent.batch.provider'],
        s.attributes['agent.batch.poll_result'],
        s.status.code,
      ]),
      [
        ['agent.batch.poll', 2, rootSpanIdFromUid(uid), 'anthropic', 'pending', 1],
        ['agent.batch.poll', 2, rootSpanIdFromUid(uid), 'openai', 'error', 2],
      ],
    );
  });

  it('without tracing nothing is recorded', async () => {
    const r = new RunSpans(NO_TRACING).reconcile(a);
    r.action(patch({ phase: 'Succeeded', exitCode: 0 }), T0, T0 + 1, APPLIED);
    r.end('done');
    new RunSpans(NO_TRACING).batchPoll(a, { provider: 'openai', batchId: 'b' }, T0, T0, 'pending');
    assert.equal(NO_TRACING.enabled, false);
    assert.equal(NO_TRACING.startSpan('x').isRecording(), false);
  });
});
