// The spend ledger of a namespace (issue 28 §4; docs/design/gateway.md "Budgets"): the ConfigMap `agent-spend`,
// written by the controller alone. A run's spend is SET under its uid (a replay writes the same value again, never
// adds); once its Agent is gone its entry is folded into its Station's hourly bucket, in the same write that removes
// the entry (so it is counted once); what is older than the longest window is dropped. Pure.

import type { SpendBucket, SpendEntry, SpendLedger } from '../../api/index.ts';
import { microsToUsd, usdToMicros, WINDOW_HOURS } from './rules.ts';
import type { SpendItem } from './window.ts';

export const EMPTY_LEDGER: SpendLedger = { runs: {}, hours: {} };

/** The finalizer of a run whose spend counts toward a windowed budget: removed once its spend is in the ledger. */
export const SPEND_FINALIZER = 'agents.re-cinq.com/spend';

/** A run's spend to set in the ledger. */
export interface RunSpend {
  readonly uid: string;
  readonly entry: SpendEntry;
}

/** The start of the hour (of length `hourMs`) holding `atMs`, as the bucket key (RFC 3339). */
export function hourKey(atMs: number, hourMs: number): string {
  return new Date(Math.floor(atMs / hourMs) * hourMs).toISOString();
}

const add = (a: SpendBucket | undefined, usdMicros: number, tokens: number): SpendBucket => ({
  usd: microsToUsd(usdToMicros(a?.usd ?? '0') + usdMicros),
  tokens: (a?.tokens ?? 0) + tokens,
});

/**
 * One write of the ledger: `set` entries replace those of their uids (idempotent); the entries of runs in `gone`
 * (their Agents no longer exist) are moved into their hourly bucket; entries and buckets older than a month (plus an
 * hour) are dropped. Entries of runs that are not in `gone` are never folded: a replay of their SET could then count
 * them twice.
 */
export function writeLedger(
  ledger: SpendLedger,
  change: { readonly set: readonly RunSpend[]; readonly gone: readonly string[] },
  nowMs: number,
  hourMs: number,
): SpendLedger {
  const runs: Record<string, SpendEntry> = { ...ledger.runs };
  const hours: Record<string, Record<string, SpendBucket>> = {};
  for (const [station, buckets] of Object.entries(ledger.hours)) hours[station] = { ...buckets };
  for (const s of change.set) runs[s.uid] = s.entry;
  for (const uid of change.gone) {
    const entry = runs[uid];
    if (entry === undefined) continue;
    delete runs[uid];
    const at = Date.parse(entry.at);
    if (Number.isNaN(at)) continue;
    const station = hours[entry.station] ?? {};
    const key = hourKey(at, hourMs);
    station[key] = add(station[key], usdToMicros(entry.usd), entry.tokens);
    hours[entry.station] = station;
  }
  const oldest = nowMs - (WINDOW_HOURS.month + 1) * hourMs;
  for (const [uid, entry] of Object.entries(runs)) {
    const at = Date.parse(entry.at);
    if (Number.isNaN(at) || at < oldest) delete runs[uid];
  }
  for (const [station, buckets] of Object.entries(hours)) {
    for (const key of Object.keys(buckets)) {
      const at = Date.parse(key);
      if (Number.isNaN(at) || at + hourMs < oldest) delete buckets[key];
    }
    if (Object.keys(buckets).length === 0) delete hours[station];
  }
  return { runs, hours };
}

/** Two ledgers hold the same: a write that changes nothing is not made. */
export function sameLedger(a: SpendLedger, b: SpendLedger): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/**
 * The ledger's spend as window items: every entry whose run is not in `live` (runs whose Agents exist are counted
 * from their own status, which is never behind the ledger), and every bucket, placed at the last moment of its hour
 * (a bucket leaves a window no earlier than its last spend did).
 */
export function ledgerItems(ledger: SpendLedger, live: ReadonlySet<string>, hourMs: number): SpendItem[] {
  const items: SpendItem[] = [];
  for (const [uid, e] of Object.entries(ledger.runs)) {
    if (live.has(uid)) continue;
    const at = Date.parse(e.at);
    if (Number.isNaN(at)) continue;
    items.push({ station: e.station, atMs: at, usdMicros: usdToMicros(e.usd), tokens: e.tokens });
  }
  for (const [station, buckets] of Object.entries(ledger.hours)) {
    for (const [key, b] of Object.entries(buckets)) {
      const at = Date.parse(key);
      if (Number.isNaN(at)) continue;
      items.push({ station, atMs: at + hourMs - 1, usdMicros: usdToMicros(b.usd), tokens: b.tokens });
    }
  }
  return items;
}
