// The run's cap, enforced at the gateway (issue 28 §4, docs/design/gateway.md#the-runs-cap), pure: what a
// run has used so far as this replica can know it (the Agent's usage annotation, what this replica measured and has
// not written yet, and what the calls in flight have carried so far), priced with the price table the controller
// prices runs with, and whether a new call of the run may go on.

import type { GatewayGrant, GatewayUsage, ModelUsage } from '../api/gateway.ts';
import { costOf, formatUsd, type PriceTable, priceFor } from '../reconcile/results/prices.ts';
import type { Tokens } from './usage.ts';

/** A run's cap as numbers: USD and tokens (all kinds), each absent when not capped. */
export interface RunCap {
  readonly usd?: number | undefined;
  readonly tokens?: number | undefined;
}

/** The cap of `status.gateway.budget` (its USD a decimal string), or undefined when the run is not capped. */
export function runCap(grant: GatewayGrant | undefined): RunCap | undefined {
  const budget = grant?.budget;
  if (budget === undefined) return undefined;
  const usd = budget.usd === undefined ? undefined : Number(budget.usd);
  const cap: RunCap = {
    ...(usd !== undefined && Number.isFinite(usd) ? { usd } : {}),
    ...(budget.tokens !== undefined ? { tokens: budget.tokens } : {}),
  };
  return cap.usd === undefined && cap.tokens === undefined ? undefined : cap;
}

const fieldMax = (a: ModelUsage, b: ModelUsage): ModelUsage => ({
  calls: Math.max(a.calls, b.calls),
  input: Math.max(a.input, b.input),
  output: Math.max(a.output, b.output),
  cacheRead: Math.max(a.cacheRead, b.cacheRead),
  cacheWrite: Math.max(a.cacheWrite, b.cacheWrite),
});

/**
 * The larger of two readings of the same annotation, model by model and field by field. The annotation only grows
 * (every writer adds), so of two readings the larger is the newer: the informer's copy, and what this replica
 * itself wrote (or is writing) before the informer has seen it.
 */
export function newerOf(a: GatewayUsage, b: GatewayUsage): GatewayUsage {
  const models: Record<string, ModelUsage> = { ...a.models };
  for (const [model, u] of Object.entries(b.models)) {
    const other = models[model];
    models[model] = other === undefined ? u : fieldMax(other, u);
  }
  return { models };
}

/** What a run has used: tokens of every kind, and the USD of the models the table prices. */
export interface RunSpend {
  readonly tokens: number;
  /** The priced models' cost: a lower bound of the run's cost when `unpriced` names any model. */
  readonly usd: number;
  /** Models of the run the table has no price for (their tokens count against a tokens cap only). */
  readonly unpriced: readonly string[];
}

const sumTokens = (t: Tokens): number => t.input + t.output + t.cacheRead + t.cacheWrite;

/**
 * The spend of `usage` (per model, as written and unwritten) plus `live`: per call in flight, its model and the
 * tokens it has carried so far.
 */
export function spendOf(
  usage: GatewayUsage,
  live: readonly { readonly model: string; readonly tokens: Tokens }[],
  prices: PriceTable,
): RunSpend {
  let tokens = 0;
  let usd = 0;
  const unpriced = new Set<string>();
  const add = (model: string, t: Tokens) => {
    tokens += sumTokens(t);
    const priced = priceFor(prices, model);
    if (priced === undefined) {
      if (sumTokens(t) > 0) unpriced.add(model);
      return;
    }
    usd += costOf(priced.price, { ...t, total: sumTokens(t) }, false);
  };
  for (const [model, u] of Object.entries(usage.models)) add(model, u);
  for (const call of live) add(call.model, call.tokens);
  return { tokens, usd, unpriced: [...unpriced].sort() };
}

/** The decision for a new call of a capped run: go on, or refuse with a message that names the cap. */
export type BudgetDecision =
  | { readonly ok: true }
  | { readonly ok: false; readonly which: 'usd' | 'tokens'; readonly message: string };

/**
 * Whether a run that has used `spend` may make another call under `cap`: refused once it has reached either cap
 * (`>=`: a cap of 0 refuses every call). A call admitted under the cap goes on to its end and counts in full, so a
 * run can end above its cap by what its calls in flight used (docs/design/gateway.md, the overshoot bound).
 */
export function budgetDecision(cap: RunCap | undefined, spend: RunSpend): BudgetDecision {
  if (cap === undefined) return { ok: true };
  if (cap.tokens !== undefined && spend.tokens >= cap.tokens)
    return {
      ok: false,
      which: 'tokens',
      message: `budget exceeded: the run has used ${spend.tokens} tokens of its cap of ${cap.tokens} tokens`,
    };
  if (cap.usd !== undefined && spend.usd >= cap.usd)
    return {
      ok: false,
      which: 'usd',
      message: `budget exceeded: the run has spent ${formatUsd(spend.usd)} USD of its cap of ${formatUsd(cap.usd)} USD`,
    };
  return { ok: true };
}
