import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { createLogger } from '../../shared/log.ts';
import { createTracing } from '../../telemetry/otel.ts';
import { resultAccumulator } from '../../vendors/cli/result.ts';
import { MAX_OPEN_TOOL_SPANS, supervisorTracer, tracedResults, tracerOn } from './tracing.ts';

const PARENT = { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), sampled: true };

function setup() {
  const exporter = new InMemorySpanExporter();
  const tracing = createTracing({ tracesUrl: 'http://127.0.0.1:1/v1/traces', serviceName: 't' }, exporter);
  return {
    tracer: tracerOn(tracing, PARENT),
    spans: async () => {
      await tracing.flush(5000);
      return exporter.getFinishedSpans();
    },
  };
}

const toolUse = (id: string, name: string) => ({
  type: 'assistant',
  message: { content: [{ type: 'tool_use', id, name, input: {} }] },
});
const toolResult = (id: string, isError = false) => ({
  type: 'user',
  message: { content: [{ type: 'tool_result', tool_use_id: id, content: 'ok', is_error: isError }] },
});

describe('supervisor tracing', () => {
  it('one agent.cli span under TRACEPARENT, one agent.tool span per call under it', async () => {
    const { tracer, spans } = setup();
    const cli = tracer.cli('claude', { 'agent.name': 'a', 'agent.model': 'claude-opus-5-5' });
    const results = tracedResults(resultAccumulator('claude'), cli);
    results.add(toolUse('t1', 'Bash'));
    results.add(toolUse('t2', 'Read'));
    results.add(toolResult('t1'));
    results.add(toolResult('t2', true));
    results.add(toolUse('t3', 'Edit')); // never ends: closed with the CLI
    results.add({ type: 'result', subtype: 'success', result: 'done', is_error: false });
    cli.end(0);
    assert.equal(results.result().result, 'done', 'the results still see every line');
    const got = await spans();
    const cliSpan = got.find((s) => s.name === 'agent.cli');
    assert.ok(cliSpan);
    assert.equal(cliSpan.spanContext().traceId, PARENT.traceId);
    assert.equal(cliSpan.parentSpanContext?.spanId, PARENT.spanId);
    assert.deepEqual(
      [
        cliSpan.attributes['agent.vendor'],
        cliSpan.attributes['agent.exit_code'],
        cliSpan.attributes['agent.tool_calls'],
      ],
      ['claude', 0, 3],
    );
    const tools = got.filter((s) => s.name === 'agent.tool');
    assert.deepEqual(
      tools.map((s) => [
        s.attributes['agent.tool.name'],
        s.parentSpanContext?.spanId === cliSpan.spanContext().spanId,
        s.status.code,
        s.attributes['agent.tool.unfinished'] ?? false,
      ]),
      [
        ['Bash', true, 1, false],
        ['Read', true, 2, false],
        ['Edit', true, 0, true],
      ],
    );
  });

  it('a failing CLI marks its span failed; open tool spans are bounded', async () => {
    const { tracer, spans } = setup();
    const cli = tracer.cli('gemini', {});
    for (let i = 0; i < MAX_OPEN_TOOL_SPANS + 50; i++) {
      cli.line({ type: 'tool_use', tool_id: `g${i}`, tool_name: 'read_file' });
    }
    cli.end(53);
    const got = await spans();
    assert.equal(got.filter((s) => s.name === 'agent.tool').length, MAX_OPEN_TOOL_SPANS);
    const cliSpan = got.find((s) => s.name === 'agent.cli');
    assert.deepEqual(cliSpan?.status, { code: 2, message: 'exit code 53' });
  });

  it('without TRACEPARENT or an endpoint, or with a bad endpoint, nothing is traced', async () => {
    const lines: string[] = [];
    const log = createLogger('info', (l) => lines.push(l));
    const valid = `00-${PARENT.traceId}-${PARENT.spanId}-01`;
    assert.equal(supervisorTracer({ AGENT_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:1' }, log).enabled, false);
    assert.equal(supervisorTracer({ TRACEPARENT: valid }, log).enabled, false);
    assert.equal(
      supervisorTracer({ TRACEPARENT: 'bad', AGENT_OTLP_TRACES_ENDPOINT: 'http://x:1' }, log).enabled,
      false,
    );
    assert.equal(
      supervisorTracer({ TRACEPARENT: valid, AGENT_OTLP_TRACES_ENDPOINT: 'nope' }, log).enabled,
      false,
    );
    assert.match(lines.join('\n'), /no traces: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL/);
    const quiet = supervisorTracer({}, log).cli('claude', {});
    quiet.line(toolUse('t', 'Bash'));
    quiet.end(0);
    assert.equal(
      supervisorTracer({ TRACEPARENT: valid, AGENT_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:1' }, log).enabled,
      true,
    );
  });
});
