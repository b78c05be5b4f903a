// The usage the model gateway measured for a run (issue 28, docs/design/gateway.md#metering): read from the Agent's
// annotation, summed over models, priced with the price table. For a run behind the gateway this is the run's
// usage; what the CLI reports about itself becomes a cross-check. Pure.

import {
  type Agent,
  ANNOTATION_GATEWAY_USAGE,
  type GatewayUsage,
  parseGatewayUsage,
} from '../../api/index.ts';
import type { TokenUsage } from '../../vendors/cli/run-report.ts';
import { costOf, formatUsd, type PriceTable, priceFor } from './prices.ts';
import type { CostEstimate } from './run-result.ts';

/** What the annotation says: nothing yet, the usage, or a value that is not the gateway's shape. */
export type GatewayUsageRead =
  | { readonly kind: 'none' }
  | { readonly kind: 'usage'; readonly usage: GatewayUsage }
  | { readonly kind: 'invalid'; readonly message: string };

export function readGatewayUsage(agent: Agent): GatewayUsageRead {
  const raw = agent.metadata.annotations?.[ANNOTATION_GATEWAY_USAGE];
  if (raw === undefined) return { kind: 'none' };
  const parsed = parseGatewayUsage(raw);
  return parsed.ok ? { kind: 'usage', usage: parsed.usage } : { kind: 'invalid', message: parsed.message };
}

/** The run's measured usage and its cost, as `status.tokenUsage` and `status.costEstimate` hold them. */
export interface GatewayTotals {
  readonly tokenUsage: TokenUsage;
  /** Undefined when a model the run called has no price. */
  readonly costUsd: number | undefined;
  readonly costEstimate: CostEstimate | undefined;
  /** The one model the run called, else undefined. */
  readonly model: string | undefined;
}

/** Sums `usage` over its models and prices each model's part (a model without a price: no cost at all). */
export function gatewayTotals(usage: GatewayUsage, prices: PriceTable): GatewayTotals {
  let input = 0;
  let output = 0;
  let cacheRead = 0;
  let cacheWrite = 0;
  let usd: number | undefined = 0;
  const models = Object.keys(usage.models).sort();
  for (const model of models) {
    const u = usage.models[model];
    if (u === undefined) continue;
    input += u.input;
    output += u.output;
    cacheRead += u.cacheRead;
    cacheWrite += u.cacheWrite;
    const priced = priceFor(prices, model);
    const part = { ...u, total: u.input + u.output + u.cacheRead + u.cacheWrite };
    usd = usd === undefined || priced === undefined ? undefined : usd + costOf(priced.price, part, false);
  }
  const model = models.length === 1 ? models[0] : undefined;
  return {
    tokenUsage: { input, output, cacheRead, cacheWrite, total: input + output + cacheRead + cacheWrite },
    costUsd: usd,
    costEstimate:
      usd === undefined
        ? undefined
        : { usd: formatUsd(usd), source: 'gateway', ...(model !== undefined ? { model } : {}) },
    model,
  };
}

/** Above this share of the gateway's total, and {@link MISMATCH_MIN_TOKENS} tokens, the CLI's report disagrees. */
export const MISMATCH_SHARE = 0.2;
export const MISMATCH_MIN_TOKENS = 1000;

/**
 * Why the CLI's own figure disagrees with the gateway's, or undefined when it does not (or reported none). The
 * gateway sees every call, the CLI's side requests included, so small differences are expected.
 */
export function usageMismatch(gateway: TokenUsage, cli: TokenUsage | undefined): string | undefined {
  if (cli === undefined) return undefined;
  const diff = Math.abs(gateway.total - cli.total);
  if (diff < MISMATCH_MIN_TOKENS || diff <= MISMATCH_SHARE * Math.max(gateway.total, 1)) return undefined;
  return `the CLI reported ${cli.total} tokens, the gateway measured ${gateway.total}`;
}

/** True when `status.tokenUsage` already holds `usage`. */
export function sameUsage(recorded: TokenUsage | undefined, usage: TokenUsage): boolean {
  return (
    recorded !== undefined &&
    recorded.input === usage.input &&
    recorded.output === usage.output &&
    recorded.cacheRead === usage.cacheRead &&
    recorded.cacheWrite === usage.cacheWrite &&
    recorded.total === usage.total
  );
}
