import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DEFAULT_PRICES, priceFor } from '../reconcile/results/prices.ts';
import { createLogger } from '../shared/log.ts';
import { createPriceSource, parsePriceOverrides } from './prices.ts';

const dir = mkdtempSync(join(tmpdir(), 'prices-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('price overrides (ConfigMap agent-prices, prices.json)', () => {
  it('parses model → price, and names what is wrong otherwise', () => {
    const ok = parsePriceOverrides('{"gpt-6*":{"inputPerMTok":1.5,"outputPerMTok":6}}');
    assert.ok(ok.ok);
    assert.deepEqual(ok.value.get('gpt-6*'), { inputPerMTok: 1.5, outputPerMTok: 6 });
    const bad = parsePriceOverrides('{"gpt-6":{"inputPerMTok":-1,"outputPerMTok":6}}');
    assert.ok(!bad.ok);
    assert.match(bad.error, /^prices\.json at gpt-6\.inputPerMTok: /);
    const notJson = parsePriceOverrides('{');
    assert.ok(!notJson.ok);
    assert.match(notJson.error, /^prices\.json is not JSON: /);
  });

  it('a source re-reads the file when it changes, keeps the last good table, and falls back when it goes', () => {
    const lines: string[] = [];
    const file = join(dir, 'prices.json');
    const source = createPriceSource(
      file,
      createLogger('debug', (l) => void lines.push(l)),
    );
    assert.equal(source.current(), DEFAULT_PRICES, 'no file: the shipped prices');
    writeFileSync(file, '{"gpt-6-luna":{"inputPerMTok":0.5,"outputPerMTok":2}}');
    source.refresh();
    assert.equal(priceFor(source.current(), 'gpt-6-luna')?.price.outputPerMTok, 2);
    assert.equal(priceFor(source.current(), 'claude-opus-5-5')?.price.inputPerMTok, 4, 'shipped prices stay');
    writeFileSync(file, 'not json at all');
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    source.refresh();
    assert.equal(priceFor(source.current(), 'gpt-6-luna')?.price.outputPerMTok, 2, 'the last good table');
    assert.ok(lines.some((l) => l.includes('Price overrides are invalid')));
    rmSync(file);
    source.refresh();
    assert.equal(source.current(), DEFAULT_PRICES);
    assert.equal(
      createPriceSource(
        undefined,
        createLogger('error', () => undefined),
      ).current(),
      DEFAULT_PRICES,
    );
  });
});
