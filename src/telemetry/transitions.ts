// Which of a decision's actions are transitions of a run worth a span (issue 10 §5), and what the span says. Pure:
// no SDK, no I/O.

import type { Action } from '../reconcile/actions.ts';

/** Span attribute values. */
export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

/** A span to record for one executed action. */
export interface TransitionSpan {
  readonly name: string;
  readonly attributes: SpanAttributes;
  readonly failed: boolean;
  readonly message?: string;
}

/** The longest failure message put on a span. */
const MAX_MESSAGE = 512;

const TERMINAL = new Set(['Succeeded', 'Failed']);

/** The `AGENT_MODEL` of a Job's agent container, if it has one. */
function jobModel(action: Extract<Action, { kind: 'createJob' }>): string | undefined {
  const spec = (action.job.spec.template as { spec?: { containers?: unknown } }).spec;
  const containers = Array.isArray(spec?.containers) ? (spec.containers as unknown[]) : [];
  for (const c of containers) {
    const env = (c as { name?: unknown; env?: unknown }).env;
    if ((c as { name?: unknown }).name !== 'agent' || !Array.isArray(env)) continue;
    for (const e of env as { name?: unknown; value?: unknown }[]) {
      if (e.name === 'AGENT_MODEL' && typeof e.value === 'string') return e.value;
    }
  }
  return undefined;
}

/**
 * The span of an executed action: `agent.create_job` (a run's Job), `agent.batch.submit` (a batch run's vendor
 * submission), `agent.admit` (the status patch that makes a run Running), `agent.complete` (the one that ends it,
 * with its phase, exit code and failure reason). Undefined for every other action.
 */
export function transitionSpan(action: Action): TransitionSpan | undefined {
  switch (action.kind) {
    case 'createJob': {
      const model = jobModel(action);
      return {
        name: 'agent.create_job',
        attributes: {
          'k8s.job.name': action.job.metadata.name,
          ...(model !== undefined ? { 'agent.model': model } : {}),
        },
        failed: false,
      };
    }
    case 'submitBatch':
      return {
        name: 'agent.batch.submit',
        attributes: { 'agent.batch.provider': action.provider, 'agent.model': action.request.model },
        failed: false,
      };
    case 'patchStatus': {
      const { phase } = action.status;
      if (phase === 'Running') {
        return {
          name: 'agent.admit',
          attributes: {
            'agent.phase': phase,
            ...(action.status.jobName !== undefined ? { 'k8s.job.name': action.status.jobName } : {}),
            ...(action.status.batchProvider !== undefined
              ? { 'agent.batch.provider': action.status.batchProvider }
              : {}),
          },
          failed: false,
        };
      }
      if (phase === undefined || !TERMINAL.has(phase)) return undefined;
      const reason = action.status.failureReason;
      return {
        name: 'agent.complete',
        attributes: {
          'agent.phase': phase,
          ...(action.status.exitCode !== undefined ? { 'agent.exit_code': action.status.exitCode } : {}),
          ...(action.status.tokenUsage !== undefined
            ? { 'agent.tokens.total': action.status.tokenUsage.total }
            : {}),
          ...(action.status.costEstimate !== undefined
            ? { 'agent.cost_usd': action.status.costEstimate.usd }
            : {}),
        },
        failed: phase === 'Failed',
        ...(phase === 'Failed' && reason !== undefined ? { message: reason.slice(0, MAX_MESSAGE) } : {}),
      };
    }
    default:
      return undefined;
  }
}
