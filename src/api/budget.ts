// Spend budgets (issue 28 §4): a cap per run, and limits over rolling windows per Station and per namespace, on the
// AgentPolicy (platform admins) and on the Station (its team). The stricter of the two applies
// (src/reconcile/budget/rules.ts); docs/design/gateway.md "Budgets".

import * as v from 'valibot';

/** The rolling windows a budget may be counted over: an hour, a day (24 hours), a month (30 days). */
export const BUDGET_WINDOWS = ['hour', 'day', 'month'] as const;
export type BudgetWindow = (typeof BUDGET_WINDOWS)[number];

/** Whose spend a policy's windowed budget counts: each Station's own, or the whole namespace's. */
export const BUDGET_SCOPES = ['Station', 'Namespace'] as const;
export type BudgetScope = (typeof BUDGET_SCOPES)[number];

/** What a run does at admission when a windowed budget is spent: wait for the window to free spend, or fail. */
export const BUDGET_EXHAUSTED_ACTIONS = ['Wait', 'Fail'] as const;
export type BudgetExhaustedAction = (typeof BUDGET_EXHAUSTED_ACTIONS)[number];

/** A USD amount as a decimal string (as status.costEstimate.usd is written). */
const usd = (description: string) =>
  v.optional(v.pipe(v.string(), v.regex(/^\d+(\.\d+)?$/), v.description(description)));
const tokens = (description: string) =>
  v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.description(description)));

const perRun = v.optional(
  v.pipe(
    v.object({
      usd: usd(
        'Most US dollars (a decimal string, e.g. "2.50") one run may spend, priced as status.costEstimate.',
      ),
      tokens: tokens('Most tokens (all kinds) one run may use.'),
    }),
    v.description(
      'The cap of each run: behind the model gateway its calls are refused once it is reached; the run ends Failed with "budget exceeded".',
    ),
  ),
);

const windowFields = {
  window: v.pipe(
    v.picklist(BUDGET_WINDOWS),
    v.description('The rolling window: hour, day (24 hours) or month (30 days).'),
  ),
  usd: usd('Most US dollars (a decimal string) spent over the window.'),
  tokens: tokens('Most tokens (all kinds) used over the window.'),
};

const whenExhausted = v.optional(
  v.pipe(
    v.picklist(BUDGET_EXHAUSTED_ACTIONS),
    v.description(
      'What a new run does while a windowed budget is spent: Wait (default; Ready=False, reason BudgetExhausted, started once the window frees spend) or Fail (reason BudgetExhausted).',
    ),
  ),
);

/** `AgentPolicy.spec.budgets`: windowed budgets per Station or per namespace. */
export const PolicyBudgetsSchema = v.pipe(
  v.object({
    perRun,
    windows: v.optional(
      v.pipe(
        v.array(
          v.object({
            scope: v.optional(
              v.pipe(
                v.picklist(BUDGET_SCOPES),
                v.description(
                  "Whose spend counts: Station (default; each Station's own) or Namespace (all the runs of a namespace the policy serves).",
                ),
              ),
            ),
            ...windowFields,
          }),
        ),
        v.description('Limits over rolling windows; a new run is held while any of them is spent.'),
      ),
    ),
    whenExhausted,
  }),
  v.description(
    "Spend budgets of the runs of the Stations this policy serves; with a Station's own, the stricter applies.",
  ),
);
export type PolicyBudgets = v.InferOutput<typeof PolicyBudgetsSchema>;

/** `Station.spec.budgets`: the Station's own budgets. */
export const StationBudgetsSchema = v.pipe(
  v.object({
    perRun,
    windows: v.optional(
      v.pipe(
        v.array(v.object(windowFields)),
        v.description(
          "Limits of this Station's spend over rolling windows; a new run is held while any of them is spent.",
        ),
      ),
    ),
    whenExhausted,
  }),
  v.description("Spend budgets of this Station's runs; with its AgentPolicy's, the stricter applies."),
);
export type StationBudgets = v.InferOutput<typeof StationBudgetsSchema>;

/** The ConfigMap of a namespace that holds its spend ledger (written only by the controller), and its key. */
export const SPEND_CONFIGMAP = 'agent-spend';
export const SPEND_KEY = 'spend.json';

const usdAmount = v.pipe(v.string(), v.regex(/^\d+(\.\d+)?$/));
const tokenCount = v.pipe(v.number(), v.integer(), v.minValue(0));

/** One run's spend in the ledger: set (never added to) by its uid, so writing it again changes nothing. */
export const SpendEntrySchema = v.object({
  station: v.string(),
  /** When the spend counts (RFC 3339): the run's start. */
  at: v.string(),
  usd: usdAmount,
  tokens: tokenCount,
});
export type SpendEntry = v.InferOutput<typeof SpendEntrySchema>;

/** An hour's spend of one Station, folded from the entries of runs whose Agents are gone. */
export const SpendBucketSchema = v.object({ usd: usdAmount, tokens: tokenCount });
export type SpendBucket = v.InferOutput<typeof SpendBucketSchema>;

/** The ledger (`spend.json` of the ConfigMap `agent-spend`): per-run entries, and per-Station hourly buckets. */
export const SpendLedgerSchema = v.object({
  runs: v.record(v.string(), SpendEntrySchema),
  /** Station → the start of the hour (RFC 3339) → what its gone runs spent in it. */
  hours: v.record(v.string(), v.record(v.string(), SpendBucketSchema)),
});
export type SpendLedger = v.InferOutput<typeof SpendLedgerSchema>;

/** The ledger read from the ConfigMap's text, or why it is not one. */
export function parseSpendLedger(
  text: string,
): { readonly ok: true; readonly ledger: SpendLedger } | { readonly ok: false; readonly message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, message: `${SPEND_CONFIGMAP} ${SPEND_KEY} is not JSON` };
  }
  const parsed = v.safeParse(SpendLedgerSchema, value);
  if (!parsed.success) return { ok: false, message: `${SPEND_CONFIGMAP} ${SPEND_KEY} is not a spend ledger` };
  return { ok: true, ledger: parsed.output };
}
