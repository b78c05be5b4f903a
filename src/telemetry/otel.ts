// OpenTelemetry tracing (issue 10 §5), the one place that touches the OpenTelemetry SDK: a tracer provider with a
// batching OTLP/HTTP (JSON) exporter when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is
// set, nothing at all otherwise. No global provider or context manager is installed: spans name their parent
// explicitly (a run's spans hang from ids derived from the Agent, src/shared/trace-context.ts), which works the same
// on Node and Deno and across controller replicas.

import {
  type Attributes,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type IdGenerator,
  RandomIdGenerator,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { VERSION } from '../shared/version.ts';
import type { TracingConfig } from './config.ts';

export type { Span } from '@opentelemetry/api';
export type { TracingConfig } from './config.ts';

/** A span's parent: a span of this process, or a remote one named by ids. */
export type SpanParent =
  | { readonly kind: 'local'; readonly span: Span }
  | { readonly kind: 'remote'; readonly traceId: string; readonly spanId: string; readonly sampled: boolean };

export interface StartSpan {
  readonly parent?: SpanParent;
  readonly attributes?: Attributes;
  /** Epoch ms; default now. */
  readonly startTime?: number;
  /** Ids to give the span instead of random ones (the trace id only counts for a span without a parent). */
  readonly spanId?: string;
  readonly traceId?: string;
  readonly kind?: 'internal' | 'client';
}

const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;

/** Random ids, except for the next span when the caller presets them (single-threaded: set, start, clear). */
class PresetIds implements IdGenerator {
  readonly #random = new RandomIdGenerator();
  traceId: string | undefined;
  spanId: string | undefined;
  generateTraceId(): string {
    return this.traceId ?? this.#random.generateTraceId();
  }
  generateSpanId(): string {
    return this.spanId ?? this.#random.generateSpanId();
  }
}

/** A tracer that exports, or does nothing (no endpoint configured). */
export interface Tracing {
  readonly enabled: boolean;
  /** Starts a span (a no-op span when disabled). */
  startSpan(name: string, opts?: StartSpan): Span;
  /** Exports what is buffered, within `timeoutMs`; never rejects. */
  flush(timeoutMs: number): Promise<void>;
  /** Flushes and stops exporting, within `timeoutMs`; never rejects. */
  shutdown(timeoutMs: number): Promise<void>;
}

const NOOP_SPAN: Span = trace.wrapSpanContext({
  traceId: '0'.repeat(32),
  spanId: '0'.repeat(16),
  traceFlags: TraceFlags.NONE,
});

/** Tracing that records nothing and costs nothing. */
export const NO_TRACING: Tracing = {
  enabled: false,
  startSpan: () => NOOP_SPAN,
  flush: async () => undefined,
  shutdown: async () => undefined,
};

async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    p.catch(() => undefined),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * A tracer exporting to `config` (batched: every second, 512 spans a request, up to 16,384 waiting, so a burst of
 * thousands of runs loses none) with the OTLP/HTTP exporter, or with `exporter` (tests).
 */
export function createTracing(config: TracingConfig, exporter?: SpanExporter): Tracing {
  const ids = new PresetIds();
  const spanExporter = exporter ?? new OTLPTraceExporter({ url: config.tracesUrl, timeoutMillis: 10_000 });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': config.serviceName,
      'service.version': VERSION,
    }),
    idGenerator: ids,
    spanProcessors: [
      new BatchSpanProcessor(spanExporter, {
        scheduledDelayMillis: 1000,
        maxExportBatchSize: 512,
        maxQueueSize: 16_384,
      }),
    ],
  });
  const tracer = provider.getTracer('agent-controller', VERSION);
  return {
    enabled: true,
    startSpan(name, opts = {}) {
      const parent = opts.parent;
      const ctx =
        parent === undefined
          ? ROOT_CONTEXT
          : parent.kind === 'local'
            ? trace.setSpan(ROOT_CONTEXT, parent.span)
            : trace.setSpanContext(ROOT_CONTEXT, {
                traceId: parent.traceId,
                spanId: parent.spanId,
                traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
                isRemote: true,
              });
      ids.traceId = opts.traceId !== undefined && HEX32.test(opts.traceId) ? opts.traceId : undefined;
      ids.spanId = opts.spanId !== undefined && HEX16.test(opts.spanId) ? opts.spanId : undefined;
      try {
        return tracer.startSpan(
          name,
          {
            kind: opts.kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL,
            ...(opts.attributes !== undefined ? { attributes: opts.attributes } : {}),
            ...(opts.startTime !== undefined ? { startTime: opts.startTime } : {}),
          },
          ctx,
        );
      } finally {
        ids.traceId = undefined;
        ids.spanId = undefined;
      }
    },
    flush: (timeoutMs) => within(provider.forceFlush(), timeoutMs),
    shutdown: (timeoutMs) => within(provider.shutdown(), timeoutMs),
  };
}

/** Marks `span` failed with `message` (status ERROR), or OK. */
export function setOutcome(span: Span, failed: boolean, message?: string): void {
  span.setStatus(
    failed
      ? { code: SpanStatusCode.ERROR, ...(message !== undefined ? { message } : {}) }
      : { code: SpanStatusCode.OK },
  );
}
