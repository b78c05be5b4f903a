// Handlers of what reports a decision rather than decides anything: Events, sink notifications, metrics. Best effort:
// a failure is logged and never stops the decision (the executor contract: src/reconcile/executor-contract.ts).
import type { ControllerMetrics } from '../../metrics/index.ts';
import type { MetricObservation } from '../../reconcile/index.ts';
import { assertNever } from '../../shared/result.ts';
import { type Handler, recordNote } from './deps.ts';

export const recordEvent: Handler<'recordEvent'> = async (action, deps) => {
  await recordNote(deps, action.ref, { type: action.type, reason: action.reason, message: action.message });
  return undefined;
};

export const notifySinks: Handler<'notifySinks'> = async (action, deps) => {
  deps.sinks?.deliver(action);
  return undefined;
};

export const observeMetric: Handler<'observeMetric'> = async (action, deps) => {
  try {
    observe(deps.metrics, action.observation);
  } catch (error) {
    deps.logger.warn('Metric not observed', { metric: action.observation.metric, error: String(error) });
  }
  return undefined;
};

/** Maps one metric observation of the core onto its Prometheus series. */
export function observe(metrics: ControllerMetrics, o: MetricObservation): void {
  switch (o.metric) {
    case 'runCompleted':
      metrics.runsCompleted.inc({
        phase: o.phase,
        exit_code: o.exitCode === undefined ? '' : String(o.exitCode),
      });
      return;
    case 'runDuration':
      metrics.runDuration.observe({ phase: o.phase }, Math.max(0, o.seconds));
      return;
    case 'runQueue':
      metrics.runQueue.observe(Math.max(0, o.seconds));
      return;
    case 'runFailure':
      metrics.runFailures.inc({ kind: o.kind });
      return;
    case 'runTokens':
      for (const [kind, count] of [
        ['input', o.usage.input],
        ['output', o.usage.output],
        ['cache_read', o.usage.cacheRead],
        ['cache_write', o.usage.cacheWrite],
      ] as const) {
        if (count > 0) metrics.runTokens.inc({ model: o.model, kind }, count);
      }
      return;
    case 'runCost':
      if (o.usd > 0) metrics.runCost.inc({ model: o.model }, o.usd);
      return;
    case 'budget': {
      const labels = { namespace: o.namespace, station: o.station, window: o.window };
      if (o.spentUsd !== undefined) metrics.budgetSpentUsd.set(labels, o.spentUsd);
      if (o.limitUsd !== undefined) metrics.budgetLimitUsd.set(labels, o.limitUsd);
      if (o.spentTokens !== undefined) metrics.budgetSpentTokens.set(labels, o.spentTokens);
      if (o.limitTokens !== undefined) metrics.budgetLimitTokens.set(labels, o.limitTokens);
      return;
    }
    case 'batchCleanupFailure':
      metrics.batchCleanupFailures.inc();
      return;
    case 'batchOrphan':
      metrics.batchOrphans.inc({ provider: o.provider });
      return;
    case 'sessionSuspended':
      metrics.sessionSuspends.inc({ trigger: o.trigger });
      return;
    case 'sessionWoken':
      metrics.sessionWakes.inc({ trigger: o.trigger });
      if (o.seconds !== undefined) metrics.sessionWakeAdmission.observe(o.seconds);
      return;
    case 'sessionCleanupFailure':
      metrics.sessionCleanupFailures.inc();
      return;
    default:
      assertNever(o, 'metric observation');
  }
}
