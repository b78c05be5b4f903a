// The per-run usage the gateway has measured and not yet written (docs/design/gateway.md#metering), pure: deltas
// kept per run and model, taken for a write, dropped only once the write succeeded (put back otherwise), and merged
// into the value of the Agent's usage annotation.

import * as v from 'valibot';
import { type GatewayUsage, GatewayUsageSchema, type ModelUsage } from '../api/gateway.ts';
import type { Tokens } from './usage.ts';

export const EMPTY_USAGE: GatewayUsage = { models: {} };
const ZERO: ModelUsage = { calls: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

const plus = (a: ModelUsage, b: ModelUsage): ModelUsage => ({
  calls: a.calls + b.calls,
  input: a.input + b.input,
  output: a.output + b.output,
  cacheRead: a.cacheRead + b.cacheRead,
  cacheWrite: a.cacheWrite + b.cacheWrite,
});

/** `a` + `b`, model by model. */
export function mergeUsage(a: GatewayUsage, b: GatewayUsage): GatewayUsage {
  const models: Record<string, ModelUsage> = { ...a.models };
  for (const [model, u] of Object.entries(b.models)) models[model] = plus(models[model] ?? ZERO, u);
  return { models };
}

/** One call of `model` with `tokens` (undefined: its answer carried no usage), as a usage. */
export function oneCall(model: string, tokens: Tokens | undefined): GatewayUsage {
  const t = tokens ?? ZERO;
  return {
    models: {
      [model]: {
        calls: 1,
        input: t.input,
        output: t.output,
        cacheRead: t.cacheRead,
        cacheWrite: t.cacheWrite,
      },
    },
  };
}

export const isEmptyUsage = (u: GatewayUsage): boolean => Object.keys(u.models).length === 0;

/**
 * The annotation's new value: what it holds now plus `delta`. A value that is not valid JSON of the schema (hand
 * edited) is replaced by the delta alone; `reset` says so, so the shell can log it.
 */
export function annotationWith(
  current: string | undefined,
  delta: GatewayUsage,
): { readonly text: string; readonly usage: GatewayUsage; readonly reset: boolean } {
  let base: GatewayUsage = EMPTY_USAGE;
  let reset = false;
  if (current !== undefined && current !== '') {
    let raw: unknown;
    try {
      raw = JSON.parse(current);
    } catch {
      raw = undefined;
    }
    const parsed = v.safeParse(GatewayUsageSchema, raw);
    if (parsed.success) base = parsed.output;
    else reset = true;
  }
  const usage = mergeUsage(base, delta);
  return { text: JSON.stringify(usage), usage, reset };
}

/** Which Agent a run's usage is written to. */
export interface RunRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

interface Entry {
  readonly run: RunRef;
  /** Measured, not yet taken for a write. */
  pending: GatewayUsage;
  /** Taken for the write in flight, if any. */
  inFlight: GatewayUsage | undefined;
}

/** The deltas of every run, keyed by Agent uid. */
export class UsageBook {
  readonly #entries = new Map<string, Entry>();

  /** Adds `usage` to the run's pending delta. */
  add(run: RunRef, usage: GatewayUsage): void {
    const entry = this.#entries.get(run.uid) ?? { run, pending: EMPTY_USAGE, inFlight: undefined };
    entry.pending = mergeUsage(entry.pending, usage);
    this.#entries.set(run.uid, entry);
  }

  /**
   * Takes the run's pending delta for a write (undefined when there is none, or a write of it is in flight). Until
   * `settle`, what is added meanwhile stays pending for the next write.
   */
  take(uid: string): { readonly run: RunRef; readonly delta: GatewayUsage } | undefined {
    const entry = this.#entries.get(uid);
    if (entry === undefined || entry.inFlight !== undefined || isEmptyUsage(entry.pending)) return undefined;
    entry.inFlight = entry.pending;
    entry.pending = EMPTY_USAGE;
    return { run: entry.run, delta: entry.inFlight };
  }

  /**
   * Ends the write of `uid`'s delta: `written` drops it; `kept` puts it back in front of what came meanwhile;
   * `dropped` (its Agent is gone) forgets the run altogether.
   */
  settle(uid: string, outcome: 'written' | 'kept' | 'dropped'): void {
    const entry = this.#entries.get(uid);
    if (entry === undefined) return;
    if (outcome === 'dropped') {
      this.#entries.delete(uid);
      return;
    }
    if (outcome === 'kept' && entry.inFlight !== undefined)
      entry.pending = mergeUsage(entry.inFlight, entry.pending);
    entry.inFlight = undefined;
    if (isEmptyUsage(entry.pending)) this.#entries.delete(uid);
  }

  /** What the run has measured and not yet taken for a write (what a write in flight carries is not in it). */
  pendingOf(uid: string): GatewayUsage {
    return this.#entries.get(uid)?.pending ?? EMPTY_USAGE;
  }

  /** What the write in flight of the run carries (empty when none is). */
  inFlightOf(uid: string): GatewayUsage {
    return this.#entries.get(uid)?.inFlight ?? EMPTY_USAGE;
  }

  /** Uids with a delta waiting and no write in flight. */
  waiting(): string[] {
    return [...this.#entries]
      .filter(([, e]) => e.inFlight === undefined && !isEmptyUsage(e.pending))
      .map(([uid]) => uid);
  }

  /** Runs with anything not yet written (pending or in flight). */
  get size(): number {
    return this.#entries.size;
  }
}
