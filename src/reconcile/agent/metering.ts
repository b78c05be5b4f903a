// A run behind the model gateway (issue 28): its usage is what the gateway measured (the Agent's usage annotation),
// recorded on status while it runs and when it ends; the CLI's own figure is a cross-check.

import type { TokenUsage } from '../../vendors/cli/run-report.ts';
import type { Action, Decision } from '../actions.ts';
import { REASON } from '../reasons.ts';
import { gatewayTotals, readGatewayUsage, sameUsage, usageMismatch } from '../results/gateway-usage.ts';
import { DEFAULT_PRICES } from '../results/prices.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { agentRef, event, statusPatch } from './status.ts';

/** What the gateway measured for this run, priced; undefined for a run not behind the gateway (or unreadable). */
export function meteredUsage(s: CommonSnapshot) {
  if (s.agent.status.gateway === undefined) return undefined;
  const read = readGatewayUsage(s.agent);
  if (read.kind === 'invalid') return undefined;
  const usage = read.kind === 'usage' ? read.usage : { models: {} };
  return gatewayTotals(usage, s.prices ?? DEFAULT_PRICES);
}

/**
 * A running run's usage as the gateway measured it so far, when status does not hold it yet: recorded on its own
 * (a patch of tokenUsage and costEstimate only). Undefined when there is nothing new.
 */
export function recordMeteredUsage(s: CommonSnapshot, now: Date): Decision | undefined {
  if (s.agent.status.gateway === undefined) return undefined;
  const read = readGatewayUsage(s.agent);
  if (read.kind !== 'usage') return undefined;
  const totals = gatewayTotals(read.usage, s.prices ?? DEFAULT_PRICES);
  if (sameUsage(s.agent.status.tokenUsage, totals.tokenUsage)) return undefined;
  return {
    actions: [
      statusPatch(
        s.agent,
        {
          tokenUsage: totals.tokenUsage,
          ...(totals.costEstimate !== undefined ? { costEstimate: totals.costEstimate } : {}),
        },
        [],
        now,
      ),
    ],
    requeueAfterMs: s.options.requeueMs,
  };
}

/** The Events of a finished run behind the gateway: an unreadable annotation, a CLI figure far from the gateway's. */
export function meteringEvents(
  s: CommonSnapshot,
  gateway: TokenUsage | undefined,
  cli: TokenUsage | undefined,
) {
  if (s.agent.status.gateway === undefined) return [];
  const read = readGatewayUsage(s.agent);
  const out: Action[] = [];
  if (read.kind === 'invalid') {
    out.push(
      event(
        agentRef(s.agent),
        'Warning',
        REASON.gatewayUsageInvalid,
        `${read.message}: the CLI's own figure is recorded instead`,
      ),
    );
  }
  const mismatch = gateway !== undefined ? usageMismatch(gateway, cli) : undefined;
  if (mismatch !== undefined) out.push(event(agentRef(s.agent), 'Warning', REASON.usageMismatch, mismatch));
  return out;
}
