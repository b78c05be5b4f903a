// The controller's spans of a run (issue 10 §5): one `agent.reconcile` span per reconcile of an Agent that did
// something, with a child span for each transition it carried out (src/telemetry/transitions.ts), all in the run's
// trace under its root span `agent.run` (src/shared/trace-context.ts). The root span itself is recorded once, when
// the status patch that ends the run is written, from the Agent's creation to then, with the id every replica and
// the run pod already use as parent.

import type { Agent } from '../api/index.ts';
import type { Action } from '../reconcile/actions.ts';
import { type RunTrace, runTrace } from '../shared/trace-context.ts';
import { type Span, setOutcome, type Tracing } from './otel.ts';
import { transitionSpan } from './transitions.ts';

/** What became of an executed action (the executor's `ActionResult`). */
export type ActionOutcome =
  | { readonly kind: 'applied' }
  | { readonly kind: 'notApplied' }
  | { readonly kind: 'failed'; readonly error: string };

/**
 * One reconcile's span: actions are reported as they are executed, then the reconcile ends. The span is made at
 * the first action (starting when the reconcile did): a reconcile that decided to do nothing records nothing.
 */
export interface ReconcileSpan {
  /** An action ran from `startMs` to `endMs` (epoch ms) with `outcome`. */
  action(action: Action, startMs: number, endMs: number, outcome: ActionOutcome): void;
  /** The reconcile ended with `result` (`done`, `retry`, `requeueAfter`). */
  end(result: string, error?: string): void;
}

const NOTHING: ReconcileSpan = { action: () => undefined, end: () => undefined };

type Attributes = Readonly<Record<string, string | number | boolean>>;

const agentAttributes = (agent: Agent) => ({
  'agent.name': agent.metadata.name,
  'agent.namespace': agent.metadata.namespace,
  'agent.uid': agent.metadata.uid,
  'agent.station': agent.spec.stationRef,
});

/**
 * The trace of an Agent's run: as its start recorded it (`status.traceID`, which its pod's `TRACEPARENT` names too)
 * once it has one, so editing the `traceparent` annotation mid-run never splits a run's spans.
 */
export function traceOf(agent: Agent): RunTrace {
  const trace = runTrace(agent.metadata.uid, agent.metadata.annotations);
  const recorded = agent.status.traceID;
  if (recorded === undefined || !/^[0-9a-f]{32}$/.test(recorded) || recorded === trace.traceId) return trace;
  return { traceId: recorded, rootSpanId: trace.rootSpanId, sampled: true };
}

const rootParent = (trace: RunTrace) =>
  ({ kind: 'remote', traceId: trace.traceId, spanId: trace.rootSpanId, sampled: trace.sampled }) as const;

/** The controller's run spans on `tracing` (a no-op when it is disabled). */
export class RunSpans {
  readonly #tracing: Tracing;
  readonly #now: () => number;

  constructor(tracing: Tracing, now: () => number = Date.now) {
    this.#tracing = tracing;
    this.#now = now;
  }

  /** Starts the span of one reconcile of `agent` (see {@link ReconcileSpan}). */
  reconcile(agent: Agent): ReconcileSpan {
    if (!this.#tracing.enabled) return NOTHING;
    const trace = traceOf(agent);
    const startedAt = this.#now();
    let span: Span | undefined;
    const reconcileSpan = (): Span => {
      span ??= this.#tracing.startSpan('agent.reconcile', {
        parent: rootParent(trace),
        attributes: { ...agentAttributes(agent), 'agent.phase': agent.status.phase },
        startTime: startedAt,
      });
      return span;
    };
    return {
      action: (action, startMs, endMs, outcome) => {
        const parent = reconcileSpan();
        const t = transitionSpan(action);
        // A transition that did not happen (a precondition failed, the Job was there already) has no span.
        if (t === undefined || outcome.kind === 'notApplied') return;
        const error = outcome.kind === 'failed' ? outcome.error : undefined;
        const child = this.#tracing.startSpan(t.name, {
          parent: { kind: 'local', span: parent },
          attributes: { ...agentAttributes(agent), ...t.attributes },
          startTime: startMs,
        });
        setOutcome(child, error !== undefined || t.failed, error ?? t.message);
        child.end(endMs);
        if (t.name === 'agent.complete' && outcome.kind === 'applied') {
          this.#root(agent, trace, t.attributes, t.failed, t.message);
        }
      },
      end: (result, error) => {
        if (span === undefined) return;
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
    const span = this.#tracing.startSpan('agent.batch.poll', {
      parent: rootParent(traceOf(agent)),
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
  #root(agent: Agent, trace: RunTrace, attributes: Attributes, failed: boolean, message?: string) {
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
