// The terminal transition of a run that started, shared by every mode whose run ends with a result (a Job run, its
// realtime flavour, a batch run and its fallback Job): status, Events, metrics, the memory save, the history sweep.

import { resolveModel } from '../../api/index.ts';
import { sessionIdInOutput, vendorForModel } from '../../vendors/cli/index.ts';
import type { Action, Decision, RunFailureKind } from '../actions.ts';
import { isRealtime } from '../realtime/plan.ts';
import { REASON } from '../reasons.ts';
import { DEFAULT_PRICES } from '../results/prices.ts';
import { runResultFields } from '../results/run-result.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { capExceeded } from './cap.ts';
import { memoryAfterRun } from './memory.ts';
import { meteredUsage, meteringEvents } from './metering.ts';
import type { Completion } from './outcome.ts';
import {
  agentRef,
  event,
  failedConditions,
  formatStatusTime,
  statusPatch,
  succeededConditions,
} from './status.ts';
import { pruneAfter, secondsBetween } from './transition.ts';

/** The terminal transition of a run that started: status, events, metrics, then the history sweep. */
export function finish(s: CommonSnapshot, now: Date, c: Completion): Decision {
  const { agent } = s;
  const completedAt = formatStatusTime(now);
  const ref = agentRef(agent);
  const model = s.definition !== null ? resolveModel(agent, s.definition) : agent.spec.model;
  const vendor = vendorForModel(model ?? '');
  const produced = runResultFields({
    definition: s.definition,
    model,
    vendor,
    report: c.report,
    output: c.output,
    batch: c.batch === true,
    prices: s.prices ?? DEFAULT_PRICES,
    maxResultBytes: s.options.maxOutputBytes,
  });
  // Behind the model gateway the run's usage is what the gateway measured (issue 28); the CLI's is a cross-check.
  const metered = meteredUsage(s);
  const usage = metered !== undefined ? metered.tokenUsage : produced.tokenUsage;
  // The gateway's tokens priced; a model the price table does not know: the CLI's own figure, if it gave one.
  const cost =
    metered?.costEstimate !== undefined
      ? { estimate: metered.costEstimate, usd: metered.costUsd }
      : { estimate: produced.costEstimate, usd: produced.costUsd };
  // A run that ended well but whose result does not match output.schema fails (issue 10 §2).
  const invalid = c.phase === 'Succeeded' && produced.schemaProblem !== undefined;
  // A run whose usage reached its per-run cap (the gateway refused its calls, so its CLI stopped; or, not behind the
  // gateway, what its CLI reported) ends Failed with `budget exceeded` (issue 28 §4).
  const over = c.failureKinds.includes('budget')
    ? undefined
    : capExceeded(s, {
        usdMicros: cost.usd !== undefined ? Math.round(cost.usd * 1e6) : 0,
        tokens: usage?.total ?? 0,
      });
  const phase = invalid || over !== undefined ? 'Failed' : c.phase;
  const exitCode = (invalid || over !== undefined) && c.exitCode === 0 ? 1 : c.exitCode;
  const failureReason = over ?? (invalid ? produced.schemaProblem : c.failureReason);
  const reason = over !== undefined ? REASON.budgetExceeded : invalid ? REASON.resultInvalid : c.reason;
  const message =
    over !== undefined ? over : invalid ? `${c.message}, but ${produced.schemaProblem ?? ''}` : c.message;
  const failureKinds: readonly RunFailureKind[] = [
    ...c.failureKinds,
    ...(invalid ? (['result_invalid'] as const) : []),
    ...(over !== undefined ? (['budget'] as const) : []),
  ];
  const conditions = phase === 'Succeeded' ? succeededConditions(message) : failedConditions(reason, message);
  const duration = secondsBetween(agent.status.startedAt, now);
  // A realtime run's session id, read from its output as the final check (the prompt API records it as it goes).
  const sessionId =
    s.definition !== null && isRealtime(s.definition) ? sessionIdInOutput(vendor, c.output) : undefined;
  // The run's memory block replaces its memory (issue 10 §3): written right before the terminal patch, so a write
  // that met a changed ConfigMap is decided again with the ConfigMap read again, before anything else landed; its
  // Events follow the run's own.
  const memory = memoryAfterRun(s, {
    phase,
    answer: produced.answer,
    answerTruncated: produced.answerTruncated === true,
    output: c.output,
    vendor,
  });
  if (memory.kind === 'needs') return { actions: [], needs: 'memorySave' };
  const actions: Action[] = [
    ...memory.write,
    statusPatch(
      agent,
      {
        phase,
        ...(sessionId !== undefined && sessionId !== agent.status.sessionId ? { sessionId } : {}),
        ...(c.jobName !== undefined ? { jobName: c.jobName } : {}),
        exitCode,
        output: c.output,
        ...(failureReason !== undefined ? { failureReason } : {}),
        ...(produced.result !== undefined ? { result: produced.result } : {}),
        ...(usage !== undefined ? { tokenUsage: usage } : {}),
        ...(cost.estimate !== undefined ? { costEstimate: cost.estimate } : {}),
        completedAt,
      },
      conditions,
      now,
    ),
    ...(c.afterPatch ?? []),
    event(ref, phase === 'Succeeded' ? 'Normal' : 'Warning', reason, message),
    ...c.extraEvents.map((e) => event(ref, e.type, e.reason, e.message)),
    ...memory.events,
    ...meteringEvents(s, metered?.tokenUsage, produced.tokenUsage),
    { kind: 'observeMetric', observation: { metric: 'runCompleted', phase, exitCode } },
    ...(duration !== undefined
      ? [
          {
            kind: 'observeMetric' as const,
            observation: { metric: 'runDuration' as const, phase, seconds: duration },
          },
        ]
      : []),
    ...failureKinds.map(
      (kind): Action => ({ kind: 'observeMetric', observation: { metric: 'runFailure', kind } }),
    ),
    ...(usage !== undefined
      ? [
          {
            kind: 'observeMetric' as const,
            observation: { metric: 'runTokens' as const, model: produced.metricModel, usage },
          },
        ]
      : []),
    ...(cost.usd !== undefined
      ? [
          {
            kind: 'observeMetric' as const,
            observation: { metric: 'runCost' as const, model: produced.metricModel, usd: cost.usd },
          },
        ]
      : []),
    ...pruneAfter(s, phase, completedAt),
  ];
  return { actions };
}
