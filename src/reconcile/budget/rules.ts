// Which budgets apply to a run (issue 28 §4): the AgentPolicy's and the Station's, the stricter of the two. Amounts
// are counted in micro-dollars (integers), so sums never drift.

import type {
  BudgetExhaustedAction,
  BudgetScope,
  BudgetWindow,
  PolicyBudgets,
  StationBudgets,
} from '../../api/index.ts';

/** A decimal USD string ("2.5", "0.000125") in micro-dollars, rounded to the nearest; NaN when not a decimal. */
export function usdToMicros(usd: string): number {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(usd.trim());
  if (m === null) return Number.NaN;
  const whole = Number(m[1]);
  const frac = (m[2] ?? '').padEnd(7, '0');
  const micros = Number(frac.slice(0, 6)) + (Number(frac[6]) >= 5 ? 1 : 0);
  return whole * 1_000_000 + micros;
}

/** Micro-dollars as a decimal USD string, at most 6 decimals, no trailing zeros ("0" for none). */
export function microsToUsd(micros: number): string {
  if (!Number.isFinite(micros) || micros <= 0) return '0';
  const whole = Math.floor(micros / 1_000_000);
  const frac = String(Math.round(micros % 1_000_000))
    .padStart(6, '0')
    .replace(/0+$/, '');
  return frac === '' ? String(whole) : `${whole}.${frac}`;
}

/** Micro-dollars as a dollar figure for messages: `$12.30`, `$0.000125`. */
export function formatDollars(micros: number): string {
  const s = microsToUsd(micros);
  const [whole, frac = ''] = s.split('.');
  return `$${whole}.${frac.padEnd(2, '0')}`;
}

/** A cap or a limit: micro-dollars and/or tokens (absent: no limit of that kind). */
export interface Amounts {
  readonly usdMicros?: number | undefined;
  readonly tokens?: number | undefined;
}

const min = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

const micros = (usd: string | undefined): number | undefined => {
  if (usd === undefined) return undefined;
  const m = usdToMicros(usd);
  return Number.isNaN(m) ? undefined : m;
};

/** The per-run cap: per kind, the smaller of the policy's and the Station's; undefined when neither sets one. */
export function perRunCap(
  policy: PolicyBudgets | undefined,
  station: StationBudgets | undefined,
): Amounts | undefined {
  const usdMicros = min(micros(policy?.perRun?.usd), micros(station?.perRun?.usd));
  const tokens = min(policy?.perRun?.tokens, station?.perRun?.tokens);
  if (usdMicros === undefined && tokens === undefined) return undefined;
  return { ...(usdMicros !== undefined ? { usdMicros } : {}), ...(tokens !== undefined ? { tokens } : {}) };
}

/** A per-run cap as `status.gateway.budget` carries it. */
export function capForGrant(cap: Amounts | undefined): { usd?: string; tokens?: number } | undefined {
  if (cap === undefined) return undefined;
  return {
    ...(cap.usdMicros !== undefined ? { usd: microsToUsd(cap.usdMicros) } : {}),
    ...(cap.tokens !== undefined ? { tokens: cap.tokens } : {}),
  };
}

/** One windowed limit that applies to a run, and where it is set (for messages). */
export interface WindowLimit extends Amounts {
  readonly scope: BudgetScope;
  readonly window: BudgetWindow;
  /** `AgentPolicy <name>` or `Station <name>`. */
  readonly source: string;
}

/**
 * Every windowed limit that applies to a run of `station`: the policy's (each Station's own spend, or the
 * namespace's) and the Station's own (its spend). All of them are checked, so the stricter always holds. A limit
 * with neither a USD amount nor tokens is no limit.
 */
export function windowLimits(
  policy: { readonly name: string; readonly budgets?: PolicyBudgets | undefined } | undefined,
  station: { readonly name: string; readonly budgets?: StationBudgets | undefined },
): WindowLimit[] {
  const out: WindowLimit[] = [];
  const push = (
    scope: BudgetScope,
    w: { window: BudgetWindow; usd?: string | undefined; tokens?: number | undefined },
    source: string,
  ) => {
    const usdMicros = micros(w.usd);
    if (usdMicros === undefined && w.tokens === undefined) return;
    out.push({
      scope,
      window: w.window,
      source,
      ...(usdMicros !== undefined ? { usdMicros } : {}),
      ...(w.tokens !== undefined ? { tokens: w.tokens } : {}),
    });
  };
  for (const w of policy?.budgets?.windows ?? [])
    push(w.scope ?? 'Station', w, `AgentPolicy ${policy?.name}`);
  for (const w of station.budgets?.windows ?? []) push('Station', w, `Station ${station.name}`);
  return out;
}

/** `Fail` when either the policy or the Station says so (the stricter), else `Wait`. */
export function exhaustedAction(
  policy: PolicyBudgets | undefined,
  station: StationBudgets | undefined,
): BudgetExhaustedAction {
  return policy?.whenExhausted === 'Fail' || station?.whenExhausted === 'Fail' ? 'Fail' : 'Wait';
}

/** Hours of each window: an hour, a day of 24, a month of 30 days. */
export const WINDOW_HOURS: Readonly<Record<BudgetWindow, number>> = { hour: 1, day: 24, month: 720 };

/** The length of a window in ms, given the length of an hour (the controller's `AGENT_BUDGET_HOUR_SECONDS`). */
export function windowMs(window: BudgetWindow, hourMs: number): number {
  return WINDOW_HOURS[window] * hourMs;
}
