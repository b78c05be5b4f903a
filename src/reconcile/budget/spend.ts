// What one run has spent, as its Agent shows it (issue 28 §4): the larger of its recorded status (tokenUsage,
// costEstimate) and what the model gateway measured so far (its usage annotation, which may be ahead of status). Pure.

import type { Agent, SpendEntry } from '../../api/index.ts';
import { gatewayTotals, readGatewayUsage } from '../results/gateway-usage.ts';
import type { PriceTable } from '../results/prices.ts';
import { microsToUsd, usdToMicros } from './rules.ts';
import type { SpendItem } from './window.ts';

/** A run's spend so far: micro-dollars and tokens. */
export interface Spent {
  readonly usdMicros: number;
  readonly tokens: number;
}

/** What the run has spent so far (0 and 0 for a run that never started). */
export function spentByRun(agent: Agent, prices: PriceTable): Spent {
  const recordedUsd = agent.status.costEstimate?.usd;
  let usdMicros = recordedUsd !== undefined ? usdToMicros(recordedUsd) : 0;
  if (Number.isNaN(usdMicros)) usdMicros = 0;
  let tokens = agent.status.tokenUsage?.total ?? 0;
  if (agent.status.gateway !== undefined) {
    const read = readGatewayUsage(agent);
    if (read.kind === 'usage') {
      const totals = gatewayTotals(read.usage, prices);
      tokens = Math.max(tokens, totals.tokenUsage.total);
      if (totals.costUsd !== undefined) usdMicros = Math.max(usdMicros, Math.round(totals.costUsd * 1e6));
    }
  }
  return { usdMicros, tokens };
}

/** When a run's spend counts in a window: its start (the Agent's creation when it has none). */
export function spendTime(agent: Agent): number {
  const started = Date.parse(agent.status.startedAt ?? '');
  return Number.isNaN(started) ? Date.parse(agent.metadata.creationTimestamp) : started;
}

/** A run's spend as a window item; undefined when it spent nothing. */
export function runItem(agent: Agent, prices: PriceTable): SpendItem | undefined {
  const spent = spentByRun(agent, prices);
  if (spent.usdMicros === 0 && spent.tokens === 0) return undefined;
  const atMs = spendTime(agent);
  if (Number.isNaN(atMs)) return undefined;
  return { station: agent.spec.stationRef, atMs, ...spent };
}

/** A run's ledger entry (what is SET under its uid). */
export function runEntry(agent: Agent, prices: PriceTable): SpendEntry | undefined {
  const item = runItem(agent, prices);
  if (item === undefined) return undefined;
  return {
    station: item.station,
    at: new Date(item.atMs).toISOString(),
    usd: microsToUsd(item.usdMicros),
    tokens: item.tokens,
  };
}
