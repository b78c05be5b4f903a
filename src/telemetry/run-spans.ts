// The controller's spans of a run (issue 10 §5): one `agent.reconcile` span per reconcile of an Agent, with a child
// span for each transition it carried out (src/telemetry/transitions.ts), all in the run's trace under its root
// span `agent.run` (src/shared/trace-context.ts). The root span itself is recorded when the run ends, from the
// Agent's creation to its completion, with the id every replica and the run pod already use as parent.

import type { Agent } from '../api/index.ts';
import type { Action } from '../reconcile/actions.ts';
import { runTrace } from '../shared/trace-context.ts';
import { type Span, setOutcome, type Tracing } from './otel.ts';
import { transitionSpan } from './transitions.ts';

/** One reconcile's span: actions are reported as they are executed, then the reconcile ends. */
export interface ReconcileSpan {
  /** An action ran from `startMs` to `endMs` (epoch ms); `error` when it failed. */
  action(action: Action, startMs: number, endMs: number, error?: string): void;
  /** The reconcile ended with `result` (`done`, `retry`, `requeueAfter`). */
  end(result: string, error?: string): void;
}

const NOTHING: ReconcileSpan = { action: () => undefined, end: () => undefined };

const agentAttributes = (agent: Agent) => ({
  'agent.name': agent.metadata.name,
  'agent.namespace': agent.metadata.namespace,
  'agent.uid': agent.metadata.uid,
  'agent.station': agent.spec.stationRef,
});

/** The controller's run spans on `tracing` (a no-op when it is disabled). */
export class RunSpans {
  readonly #tracing: Tracing;
  readonly #now: () => number;

  constructor(tracing: Tracing, now: () => number = Date.now) {
    this.#tracing = tracing;
    this.#now = now;
  }

  /** Starts the span of one reconcile of `agent`. */
  reconcile(agent: Agent): ReconcileSpan {
    if (!this.#tracing.enabled) return NOTHING;
    const trace = runTrace(agent.metadata.uid, agent.metadata.annotations);
    const span = this.#tracing.startSpan('agent.reconcile', {
      parent: { kind: 'remote', traceId: trace.traceId, spanId: trace.rootSpanId, sampled: trace.sampled },
      attributes: { ...agentAttributes(agent), 'agent.phase': agent.status.phase },
    });
    return {
      action: (action, startMs, endMs, error) => {
        const t = transitionSpan(action);
        if (t === undefined) return;
        const child = this.#tracing.startSpan(t.name, {
          parent: { kind: 'local', span },
          attributes: { ...agentAttributes(agent), ...t.attributes },
          startTime: startMs,
        });
        setOutcome(child, error !== undefined || t.failed, error ?? t.message);
        child.end(endMs);
        if (t.name === 'agent.complete' && error === undefined)
          this.#root(agent, t.attributes, t.failed, t.message);
      },
      end: (result, error) => {
        span.setAttribute('agent.reconcile.result', result);
        setOutcome(span, error !== undefined, error);
        span.end(this.#now());
      },
    };
  }

  /** One poll of a batch run's vendor batch (`agent.batch.poll`), under the run's root span. */
  batchPoll(
    agent: Agent,
    poll: { readonly provider: string; readonly batchId: string },
    startMs: number,
    endMs: number,
    result: string,
    error?: string,
  ): void {
    if (!this.#tracing.enabled) return;
    const trace = runTrace(agent.metadata.uid, agent.metadata.annotations);
    const span = this.#tracing.startSpan('agent.batch.poll', {
      parent: { kind: 'remote', traceId: trace.traceId, spanId: trace.rootSpanId, sampled: trace.sampled },
      attributes: {
        ...agentAttributes(agent),
        'agent.batch.provider': poll.provider,
        'agent.batch.id': poll.batchId,
        'agent.batch.poll_result': result,
      },
      startTime: startMs,
      kind: 'client',
    });
    setOutcome(span, error !== undefined, error);
    span.end(endMs);
  }

  /** The root span `agent.run` of a run that just ended: from the Agent's creation to now. */
  #root(
    agent: Agent,
    attributes: Readonly<Record<string, string | number | boolean>>,
    failed: boolean,
    message?: string,
  ) {
    const trace = runTrace(agent.metadata.uid, agent.metadata.annotations);
    const created = Date.parse(agent.metadata.creationTimestamp);
    const span: Span = this.#tracing.startSpan('agent.run', {
      ...(trace.parentSpanId !== undefined
        ? {
            parent: {
              kind: 'remote',
              traceId: trace.traceId,
              spanId: trace.parentSpanId,
              sampled: trace.sampled,
            },
          }
        : {}),
      traceId: trace.traceId,
      spanId: trace.rootSpanId,
      attributes: { ...agentAttributes(agent), ...attributes },
      ...(Number.isFinite(created) ? { startTime: created } : {}),
    });
    setOutcome(span, failed, message);
    span.end(this.#now());
  }
}
