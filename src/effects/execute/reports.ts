// Handlers of what reports a decision rather than decides anything: Events, sink notifications, the run's memory,
// metrics. Best effort: a failure is logged and never stops the decision (the executor contract:
// src/reconcile/executor-contract.ts).
import type { EventNote } from '../../kube/index.ts';
import type { ControllerMetrics } from '../../metrics/index.ts';
import { type MetricObservation, REASON } from '../../reconcile/index.ts';
import { assertNever } from '../../shared/result.ts';
import { saveMemory as saveMemoryTo } from '../memory.ts';
import { FIELD_MANAGER, type Handler, recordNote } from './deps.ts';

export const recordEvent: Handler<'recordEvent'> = async (action, deps) => {
  await recordNote(deps, action.ref, { type: action.type, reason: action.reason, message: action.message });
  return undefined;
};

export const notifySinks: Handler<'notifySinks'> = async (action, deps) => {
  deps.sinks?.deliver(action);
  return undefined;
};

export const saveMemory: Handler<'saveMemory'> = async (action, deps) => {
  // Best effort, but awaited: the run is recorded as Succeeded already; what happened is told in Events.
  const notes = await saveMemoryTo(action, {
    transport: deps.transport,
    logger: deps.logger,
    timeoutMs: deps.timeoutMs,
    fieldManager: FIELD_MANAGER,
  }).catch((error: unknown): EventNote[] => [
    {
      type: 'Warning',
      reason: REASON.memoryNotSaved,
      message: `Memory not saved to ConfigMap ${action.configMap}: ${String(error)}`,
    },
  ]);
  for (const note of notes) await recordNote(deps, action.ref, note);
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
    case 'batchCleanupFailure':
      metrics.batchCleanupFailures.inc();
      return;
    case 'batchOrphan':
      metrics.batchOrphans.inc({ provider: o.provider });
      return;
    default:
      assertNever(o, 'metric observation');
  }
}
