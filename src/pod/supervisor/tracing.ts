// The supervisor's spans (issue 10 §5): with `TRACEPARENT` (the run's root span) and `AGENT_OTLP_TRACES_ENDPOINT`
// (both set by the controller) in its environment, one `agent.cli` span per CLI run (a Job run, or each realtime turn) and, under it,
// one `agent.tool` span per tool call the CLI reports on its stream (src/vendors/cli/tool-calls.ts). Without
// either, nothing is set up and nothing is recorded.

import type { Logger } from '../../shared/log.ts';
import { parseTraceParent, type TraceParent } from '../../shared/trace-context.ts';
import { tracingConfigFromEnv } from '../../telemetry/config.ts';
import { createTracing, type Span, setOutcome, type Tracing } from '../../telemetry/otel.ts';
import type { ResultAccumulator } from '../../vendors/cli/result.ts';
import type { Vendor } from '../../vendors/cli/route.ts';
import { toolCallEvents } from '../../vendors/cli/tool-calls.ts';
import type { Env } from '../shared/index.ts';

/** Tool spans open at once, at most (a CLI that never ends its calls cannot grow memory without bound). */
export const MAX_OPEN_TOOL_SPANS = 256;

/** The span of one CLI run. */
export interface CliSpan {
  /** Sees every parsed stdout JSON value of the CLI (tool calls become child spans). */
  line(value: unknown): void;
  /** The CLI ended with `code`; open tool spans end with it. */
  end(code: number): void;
}

/** The supervisor's tracer. */
export interface SupervisorTracer {
  readonly enabled: boolean;
  /** Starts the span of one CLI run of `vendor`. */
  cli(vendor: Vendor, attributes: Readonly<Record<string, string>>): CliSpan;
  /** Exports what is buffered, within `ms`. */
  flush(ms: number): Promise<void>;
}

const QUIET_SPAN: CliSpan = { line: () => undefined, end: () => undefined };

/** A tracer from the run environment (see the module comment); a quiet one when tracing is off or misconfigured. */
export function supervisorTracer(env: Env, log: Logger): SupervisorTracer {
  const parent = parseTraceParent(env.TRACEPARENT ?? '');
  // Only the controller's own variable: a recipe's OTEL_* settings are for its CLI, not for the run's spans.
  const config = tracingConfigFromEnv(
    { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: env.AGENT_OTLP_TRACES_ENDPOINT },
    'agent-supervisor',
  );
  if (!config.ok) log.warn(`[supervisor] no traces: ${config.error}`);
  if (parent === undefined || !config.ok || config.value === undefined) return quietTracer();
  return tracerOn(createTracing(config.value), parent);
}

function quietTracer(): SupervisorTracer {
  return { enabled: false, cli: () => QUIET_SPAN, flush: async () => undefined };
}

/** The supervisor's spans on `tracing`, under the remote `parent` (exported for tests). */
export function tracerOn(tracing: Tracing, parent: TraceParent): SupervisorTracer {
  if (!tracing.enabled) return quietTracer();
  return {
    enabled: true,
    cli(vendor, attributes) {
      const cli = tracing.startSpan('agent.cli', {
        parent: { kind: 'remote', traceId: parent.traceId, spanId: parent.spanId, sampled: parent.sampled },
        attributes: { ...attributes, 'agent.vendor': vendor },
      });
      const open = new Map<string, Span>();
      let tools = 0;
      return {
        line(value) {
          for (const e of toolCallEvents(vendor, value)) {
            if (e.kind === 'start') {
              if (open.has(e.id) || open.size >= MAX_OPEN_TOOL_SPANS) continue;
              tools++;
              open.set(
                e.id,
                tracing.startSpan('agent.tool', {
                  parent: { kind: 'local', span: cli },
                  attributes: { 'agent.tool.name': e.name, 'agent.tool.call_id': e.id },
                }),
              );
            } else {
              const span = open.get(e.id);
              if (span === undefined) continue;
              open.delete(e.id);
              setOutcome(span, e.failed, e.failed ? 'the tool call failed' : undefined);
              span.end();
            }
          }
        },
        end(code) {
          for (const span of open.values()) {
            span.setAttribute('agent.tool.unfinished', true);
            span.end();
          }
          open.clear();
          cli.setAttribute('agent.exit_code', code);
          cli.setAttribute('agent.tool_calls', tools);
          setOutcome(cli, code !== 0, code !== 0 ? `exit code ${code}` : undefined);
          cli.end();
        },
      };
    },
    flush: (ms) => tracing.flush(ms),
  };
}

/** `results` that also hands every line to `span`. */
export function tracedResults(results: ResultAccumulator, span: CliSpan): ResultAccumulator {
  return {
    add(line) {
      results.add(line);
      span.line(line);
    },
    result: () => results.result(),
  };
}
