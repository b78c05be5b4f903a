// The price table of run cost estimates (issue 10 §2): US dollars per million tokens by model, shipped for the
// models whose prices docs/reference/vendor-apis.md#models-and-prices records (Anthropic's), overridable and
// extendable by the ConfigMap
// `agent-prices` (key `prices.json`, parsed at the boundary: src/effects/prices.ts). Pure.
import { globMatch } from '../../shared/glob.ts';
import type { TokenUsage } from '../../vendors/cli/run-report.ts';

/** The ConfigMap (controller namespace) and key holding price overrides. */
export const PRICES_CONFIG_MAP = 'agent-prices';
export const PRICES_KEY = 'prices.json';
/** Batch APIs bill half the standard rate (docs/reference/vendor-apis.md#common-rules). */
export const BATCH_DISCOUNT = 0.5;
/** When a price names no cache rates: cache reads bill 10% of input, cache writes 125% (Anthropic's rule). */
export const CACHE_READ_FACTOR = 0.1;
export const CACHE_WRITE_FACTOR = 1.25;

/** USD per million tokens. */
export interface ModelPrice {
  readonly inputPerMTok: number;
  readonly outputPerMTok: number;
  readonly cacheReadPerMTok?: number | undefined;
  readonly cacheWritePerMTok?: number | undefined;
}

/** Model name (exact) or glob (`*` matches any run of characters) → price; exact names win, then globs in order. */
export type PriceTable = ReadonlyMap<string, ModelPrice>;

/**
 * The shipped prices (docs/reference/vendor-apis.md#models-and-prices; Claude Fable 5.1's two published prices
 * disagree: the higher is taken).
 */
export const DEFAULT_PRICES: PriceTable = new Map<string, ModelPrice>([
  ['claude-opus-5-5', { inputPerMTok: 4, outputPerMTok: 20 }],
  ['claude-sonnet-5-5', { inputPerMTok: 2, outputPerMTok: 10 }],
  ['claude-haiku-5-5', { inputPerMTok: 0.1, outputPerMTok: 0.5 }],
  ['claude-fable-5-1', { inputPerMTok: 10, outputPerMTok: 50 }],
  ['claude-fable-5-2', { inputPerMTok: 8, outputPerMTok: 40 }],
]);

/** The shipped table with the overrides on top (an override replaces a shipped entry of the same key). */
export function withOverrides(base: PriceTable, overrides: ReadonlyMap<string, ModelPrice>): PriceTable {
  return new Map([...base, ...overrides]);
}

/** The entry that prices `model`: its exact name, else the first glob that matches. */
export function priceFor(
  table: PriceTable,
  model: string,
): { readonly key: string; readonly price: ModelPrice } | undefined {
  const exact = table.get(model);
  if (exact !== undefined) return { key: model, price: exact };
  for (const [key, price] of table) if (key.includes('*') && globMatch(key, model)) return { key, price };
  return undefined;
}

/** USD for `usage` at `price` (batch runs at the batch discount). */
export function costOf(price: ModelPrice, usage: TokenUsage, batch: boolean): number {
  const cacheRead = price.cacheReadPerMTok ?? price.inputPerMTok * CACHE_READ_FACTOR;
  const cacheWrite = price.cacheWritePerMTok ?? price.inputPerMTok * CACHE_WRITE_FACTOR;
  const usd =
    (usage.input * price.inputPerMTok +
      usage.output * price.outputPerMTok +
      usage.cacheRead * cacheRead +
      usage.cacheWrite * cacheWrite) /
    1e6;
  return batch ? usd * BATCH_DISCOUNT : usd;
}

/** A USD amount as the decimal string of `status.costEstimate.usd`: at most 6 decimals, no exponent. */
export function formatUsd(usd: number): string {
  if (!Number.isFinite(usd) || usd <= 0) return '0';
  const fixed = usd.toFixed(6).replace(/0+$/, '').replace(/\.$/, '');
  return fixed === '' || fixed === '0' ? '0' : fixed;
}

/** The `model` label of the token and cost metrics: the price table key that prices it, else `other` (bounded). */
export function metricModel(table: PriceTable, model: string | undefined): string {
  if (model === undefined) return 'other';
  return priceFor(table, model)?.key ?? 'other';
}
