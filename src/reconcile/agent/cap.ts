// The per-run cap of a run (issue 28 §4): whether what it used has reached it. Pure.

import { type Amounts, formatDollars, perRunCap, usdToMicros } from '../budget/rules.ts';
import type { Spent } from '../budget/spend.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';

/**
 * Why a run's usage has reached its cap (`budget exceeded: …`), or undefined. The cap is the grant's
 * (`status.gateway.budget`, behind the gateway), else the Station's own per-run budget.
 */
export function capExceeded(s: CommonSnapshot, spent: Spent): string | undefined {
  const grant = s.agent.status.gateway?.budget;
  const cap: Amounts | undefined =
    grant !== undefined
      ? {
          ...(grant.usd !== undefined ? { usdMicros: usdToMicros(grant.usd) } : {}),
          ...(grant.tokens !== undefined ? { tokens: grant.tokens } : {}),
        }
      : s.station !== null
        ? perRunCap(undefined, s.station.spec.budgets)
        : undefined;
  if (cap === undefined) return undefined;
  if (cap.usdMicros !== undefined && spent.usdMicros >= cap.usdMicros) {
    return `budget exceeded: the run spent ${formatDollars(spent.usdMicros)} of its ${formatDollars(cap.usdMicros)} cap`;
  }
  if (cap.tokens !== undefined && spent.tokens >= cap.tokens) {
    return `budget exceeded: the run used ${spent.tokens} of its ${cap.tokens} tokens`;
  }
  return undefined;
}
