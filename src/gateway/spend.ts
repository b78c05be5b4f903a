// What a run has used so far, as this replica can know it when a new call of the run arrives (the run's cap,
// budget.ts): the Agent's usage annotation as the informer has it, or as this replica itself wrote it when that is
// newer; what this replica measured and has not written; and what the run's calls in flight here have carried so far
// (an Anthropic stream states its input in its first event). What another replica measured and has not written yet
// (at most its last second of calls) is not known here: docs/design/gateway.md, the overshoot bound.

import { type GatewayUsage, parseGatewayUsage } from '../api/gateway.ts';
import type { PriceTable } from '../reconcile/results/prices.ts';
import { EMPTY_USAGE, mergeUsage } from './accumulator.ts';
import { newerOf, type RunSpend, spendOf } from './budget.ts';
import type { UsageFlusher } from './flusher.ts';
import type { Tokens } from './usage.ts';

interface LiveCall {
  readonly model: string;
  /** The tokens the answer has carried so far (undefined: none read yet). */
  readonly soFar: () => Tokens | undefined;
}

/** The metered calls being forwarded now, per run (Agent uid). */
export class LiveCalls {
  readonly #runs = new Map<string, Set<LiveCall>>();

  /** Registers a call of run `uid`; the function returned takes it off (call it when its usage is recorded). */
  begin(uid: string, model: string, soFar: () => Tokens | undefined): () => void {
    const call: LiveCall = { model, soFar };
    const calls = this.#runs.get(uid) ?? new Set<LiveCall>();
    calls.add(call);
    this.#runs.set(uid, calls);
    return () => {
      calls.delete(call);
      if (calls.size === 0 && this.#runs.get(uid) === calls) this.#runs.delete(uid);
    };
  }

  /** The run's calls in flight, each with its model and the tokens it has carried so far. */
  of(uid: string): { readonly model: string; readonly tokens: Tokens }[] {
    const out: { model: string; tokens: Tokens }[] = [];
    for (const call of this.#runs.get(uid) ?? []) {
      const tokens = call.soFar();
      if (tokens !== undefined) out.push({ model: call.model, tokens });
    }
    return out;
  }

  /** How many calls of the run are in flight. */
  count(uid: string): number {
    return this.#runs.get(uid)?.size ?? 0;
  }
}

/** The annotation's text read as usage; absent or not the gateway's JSON: none (the flusher starts it again). */
function readAnnotation(text: string | undefined): GatewayUsage {
  if (text === undefined || text === '') return EMPTY_USAGE;
  const parsed = parseGatewayUsage(text);
  return parsed.ok ? parsed.usage : EMPTY_USAGE;
}

/** The run's spend now: `annotation` is the usage annotation of its Agent as read (from the informer). */
export function currentSpend(
  o: { readonly flusher: UsageFlusher; readonly live: LiveCalls; readonly prices: () => PriceTable },
  uid: string,
  annotation: string | undefined,
): RunSpend {
  const read = readAnnotation(annotation);
  const { pending, view } = o.flusher.unwritten(uid);
  const written = view === undefined ? read : newerOf(read, view);
  return spendOf(mergeUsage(written, pending), o.live.of(uid), o.prices());
}
