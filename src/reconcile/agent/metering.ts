// A run behind the model gateway (issue 28): its usage is what the gateway measured (the Agent's usage annotation),
// recorded on status while it runs and when it ends; the CLI's own figure is a cross-check.

import { type Agent, isTerminalPhase } from '../../api/index.ts';
import type { TokenUsage } from '../../vendors/cli/run-report.ts';
import type { Action, Decision } from '../actions.ts';
import { REASON } from '../reasons.ts';
import {
  type GatewayTotals,
  gatewayTotals,
  readGatewayUsage,
  sameUsage,
  usageMismatch,
} from '../results/gateway-usage.ts';
import { DEFAULT_PRICES, type PriceTable } from '../results/prices.ts';
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

/** What the gateway measured for this run, priced, when its status does not hold it yet; else undefined. */
function aheadOfStatus(agent: Agent, prices: PriceTable): GatewayTotals | undefined {
  if (agent.status.gateway === undefined) return undefined;
  const read = readGatewayUsage(agent);
  if (read.kind !== 'usage') return undefined;
  const totals = gatewayTotals(read.usage, prices);
  return sameUsage(agent.status.tokenUsage, totals.tokenUsage) ? undefined : totals;
}

/**
 * True when the gateway measured more for this run than its status holds: a finished run whose last calls were
 * written by the gateway after its result was recorded (the gateway writes at most once a second) is reconciled
 * once more for them. Pure; read by the shell before it decides whether a finished Agent needs a reconcile.
 */
export function meteringBehind(agent: Agent, prices: PriceTable = DEFAULT_PRICES): boolean {
  return aheadOfStatus(agent, prices) !== undefined;
}

/**
 * A run's usage as the gateway measured it so far, when status does not hold it yet: recorded on its own (a patch of
 * tokenUsage and costEstimate only, never the phase), while it runs and, for calls written late, after it ended.
 * Undefined when there is nothing new.
 */
export function recordMeteredUsage(s: CommonSnapshot, now: Date): Decision | undefined {
  const totals = aheadOfStatus(s.agent, s.prices ?? DEFAULT_PRICES);
  if (totals === undefined) return undefined;
  const terminal = isTerminalPhase(s.agent.status.phase);
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
    ...(terminal ? {} : { requeueAfterMs: s.options.requeueMs }),
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
