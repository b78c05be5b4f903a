// The price table the controller estimates run costs with (issue 10 §2): the shipped prices, with the overrides of
// the ConfigMap agent-prices mounted at PRICES_FILE on top. Re-read when the file changes (the kubelet updates a
// mounted ConfigMap in place); a file that cannot be read or parsed keeps the last good table and is reported once
// per change.
import { readFileSync, statSync } from 'node:fs';
import * as v from 'valibot';
import {
  DEFAULT_PRICES,
  type ModelPrice,
  PRICES_KEY,
  type PriceTable,
  withOverrides,
} from '../reconcile/results/prices.ts';
import type { Logger } from '../shared/log.ts';
import { err, ok, type Result } from '../shared/result.ts';

const rate = v.pipe(v.number(), v.finite(), v.minValue(0), v.maxValue(1e6));
const PriceSchema = v.object({
  inputPerMTok: rate,
  outputPerMTok: rate,
  cacheReadPerMTok: v.optional(rate),
  cacheWritePerMTok: v.optional(rate),
});
const OverridesSchema = v.record(v.pipe(v.string(), v.minLength(1), v.maxLength(253)), PriceSchema);

/** Reads `prices.json` of the ConfigMap: `{"<model or glob>": {inputPerMTok, outputPerMTok, …}}`. */
export function parsePriceOverrides(text: string): Result<Map<string, ModelPrice>, string> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return err(`${PRICES_KEY} is not JSON: ${String(error)}`);
  }
  const parsed = v.safeParse(OverridesSchema, json);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const where = issue?.path?.map((p) => String(p.key)).join('.') ?? '';
    return err(`${PRICES_KEY}${where === '' ? '' : ` at ${where}`}: ${issue?.message ?? 'invalid'}`);
  }
  return ok(new Map(Object.entries(parsed.output)));
}

export interface PriceSource {
  /** The table to price runs with now. */
  current(): PriceTable;
  /** Re-reads the file when it changed (cheap when it did not). */
  refresh(): void;
}

export function createPriceSource(file: string | undefined, logger: Logger): PriceSource {
  let table: PriceTable = DEFAULT_PRICES;
  let seen = '';
  const refresh = (): void => {
    if (file === undefined) return;
    let stamp: string;
    try {
      const st = statSync(file);
      stamp = `${st.mtimeMs}:${st.size}`;
    } catch {
      // No file (the optional ConfigMap does not exist): the shipped prices.
      if (seen !== 'absent') logger.debug('No price overrides', { file });
      if (seen !== '' && seen !== 'absent')
        logger.info('Price overrides removed: using the shipped prices', { file });
      seen = 'absent';
      table = DEFAULT_PRICES;
      return;
    }
    if (stamp === seen) return;
    seen = stamp;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      logger.warn('Price overrides cannot be read; keeping the last prices', { file, error: String(error) });
      return;
    }
    const parsed = parsePriceOverrides(text);
    if (!parsed.ok) {
      logger.warn('Price overrides are invalid; keeping the last prices', { file, error: parsed.error });
      return;
    }
    table = withOverrides(DEFAULT_PRICES, parsed.value);
    logger.info('Loaded price overrides', { file, models: parsed.value.size });
  };
  refresh();
  return { current: () => table, refresh };
}
