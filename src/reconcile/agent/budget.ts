// Budgets of one run (issue 28 §4; docs/design/gateway.md "Budgets"): the admission gate of the windowed budgets
// (wait with BudgetExhausted, or fail), the per-run cap (a run whose usage reached it ends Failed, `budget
// exceeded`), and the spend finalizer that puts a run's spend in the namespace's ledger before its Agent goes.

import type { Agent, Station } from '../../api/index.ts';
import type { Action, Decision } from '../actions.ts';
import { ledgerItems, SPEND_FINALIZER } from '../budget/ledger.ts';
import { type Amounts, exhaustedAction, perRunCap, windowLimits } from '../budget/rules.ts';
import { runEntry, spentByRun } from '../budget/spend.ts';
import { exhaustedLimits, exhaustedMessage, readings, type SpendItem } from '../budget/window.ts';
import { conditionsSatisfied } from '../conditions.ts';
import { REASON } from '../reasons.ts';
import { DEFAULT_PRICES } from '../results/prices.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { capExceeded } from './cap.ts';
import { failBeforeStart } from './fail.ts';
import { finish } from './finish.ts';
import { parseJobOutcome } from './outcome.ts';
import { jobOwnership } from './start.ts';
import { agentRef, event, statusPatch } from './status.ts';

export { SPEND_FINALIZER };

/** One budget hour (ms) unless the controller is told otherwise. */
export const DEFAULT_BUDGET_HOUR_MS = 3_600_000;

/** The shortest re-check of a run waiting on a budget. */
export const BUDGET_RETRY_MIN_MS = 1000;

export function budgetHourMs(s: CommonSnapshot): number {
  return s.options.budgetHourMs ?? DEFAULT_BUDGET_HOUR_MS;
}

export function holdsSpendFinalizer(agent: Agent): boolean {
  return agent.metadata.finalizers.includes(SPEND_FINALIZER);
}

const policyOf = (s: CommonSnapshot) => (s.policy?.kind === 'found' ? s.policy.policy : undefined);

/** The per-run cap of a run of `station` (the stricter of its policy's and the Station's). */
export function runCap(s: CommonSnapshot, station: Station): Amounts | undefined {
  return perRunCap(policyOf(s)?.spec.budgets, station.spec.budgets);
}

/**
 * The admission gate of the windowed budgets, for a Pending run about to take a slot (every mode: Job, batch,
 * server). Undefined: no budget holds it (no windowed limit, or none spent). Otherwise, in order: the spend finalizer
 * (its spend must reach the ledger before it can go), the namespace's spend (`needs: 'spend'`), then the verdict:
 * a spent limit → `Wait` (Ready=False/BudgetExhausted naming the budget, its window, spent/limit and when it frees;
 * patched and announced once; re-checked when it frees) or `Fail` (Failed, BudgetExhausted, failure kind budget).
 * Every Pending run of the scope meets the same verdict, so no later run starts ahead of an earlier one.
 * `held` carries that decision; `pass` the budget metrics of this admission (the spend and limit of each windowed
 * budget), to go with the run's start. Undefined: no windowed budget applies.
 */
export function budgetVerdict(
  s: CommonSnapshot,
  now: Date,
  station: Station,
): { kind: 'held'; decision: Decision } | { kind: 'pass'; metrics: Action[] } | undefined {
  const { agent } = s;
  const policy = policyOf(s);
  const limits = windowLimits(
    policy !== undefined ? { name: policy.metadata.name, budgets: policy.spec.budgets } : undefined,
    { name: station.metadata.name, budgets: station.spec.budgets },
  );
  if (limits.length === 0) return undefined;
  if (!holdsSpendFinalizer(agent)) {
    return held({
      actions: [
        {
          kind: 'addFinalizer',
          ref: agentRef(agent),
          resourceVersion: agent.metadata.resourceVersion,
          finalizer: SPEND_FINALIZER,
          first: agent.metadata.finalizers.length === 0,
        },
      ],
    });
  }
  if (s.spend === undefined) return held({ actions: [], needs: 'spend' });
  const hourMs = budgetHourMs(s);
  const items: SpendItem[] = [...ledgerItems(s.spend.ledger, s.spend.live, hourMs)];
  for (const [uid, item] of s.spend.runs) if (uid !== agent.metadata.uid) items.push(item);
  const spent = exhaustedLimits(limits, items, station.metadata.name, now.getTime(), hourMs);
  const metrics = readings(limits, items, station.metadata.name, now.getTime(), hourMs).map(
    (r): Action => ({
      kind: 'observeMetric',
      observation: {
        metric: 'budget',
        namespace: agent.metadata.namespace,
        station: r.limit.scope === 'Namespace' ? '' : station.metadata.name,
        window: r.limit.window,
        ...(r.limit.usdMicros !== undefined
          ? { spentUsd: r.usdMicros / 1e6, limitUsd: r.limit.usdMicros / 1e6 }
          : {}),
        ...(r.limit.tokens !== undefined ? { spentTokens: r.tokens, limitTokens: r.limit.tokens } : {}),
      },
    }),
  );
  const first = spent[0];
  if (first === undefined) return { kind: 'pass', metrics };
  const message = exhaustedMessage(first, agent.metadata.namespace, station.metadata.name);
  if (exhaustedAction(policy?.spec.budgets, station.spec.budgets) === 'Fail') {
    const failed = failBeforeStart(s, now, {
      kind: 'budget',
      reason: REASON.budgetExhausted,
      failureReason: message,
      message,
    });
    return held({ ...failed, actions: [...failed.actions, ...metrics] });
  }
  const requeueAfterMs = Math.max(BUDGET_RETRY_MIN_MS, first.freesAtMs - now.getTime() + 50);
  const updates = [{ type: 'Ready', status: 'False' as const, reason: REASON.budgetExhausted, message }];
  const stamped = updates.map((u) => ({ ...u, observedGeneration: agent.metadata.generation }));
  if (conditionsSatisfied(agent.status.conditions, stamped))
    return held({ actions: metrics, requeueAfterMs });
  return held({
    actions: [
      statusPatch(agent, { phase: 'Pending' }, updates, now),
      event(agentRef(agent), 'Normal', REASON.budgetExhausted, message),
      ...metrics,
    ],
    requeueAfterMs,
  });
}

const held = (decision: Decision) => ({ kind: 'held' as const, decision });

/** A decision with the budget metrics of its admission added (not to one that asks for an observation). */
export function withBudgetMetrics(d: Decision, metrics: readonly Action[]): Decision {
  if (metrics.length === 0 || d.needs !== undefined) return d;
  return { ...d, actions: [...d.actions, ...metrics] };
}

/**
 * A Running Job run whose usage (what the gateway measured, or what status holds) reached its cap while its Job still
 * runs: Failed, reason BudgetExceeded, failure kind budget, `budget exceeded: …`, its Job deleted after the patch (as
 * a run that cannot start). A Job that already ended is finished as usual (finish.ts turns it into the same failure).
 */
export function capExceededDecision(s: CommonSnapshot, now: Date): Decision | undefined {
  if (s.job.kind !== 'present') return undefined;
  const job = s.job.job;
  if (parseJobOutcome(job).kind !== 'running' || jobOwnership(job, s.agent) !== 'owned') return undefined;
  const why = capExceeded(s, spentByRun(s.agent, s.prices ?? DEFAULT_PRICES));
  if (why === undefined) return undefined;
  return finish(s, now, {
    phase: 'Failed',
    jobName: job.metadata.name,
    exitCode: 1,
    output: '',
    failureReason: why,
    reason: REASON.budgetExceeded,
    message: why,
    failureKinds: ['budget'],
    extraEvents: [],
    afterPatch: [
      {
        kind: 'deleteJob',
        namespace: job.metadata.namespace,
        name: job.metadata.name,
        uid: job.metadata.uid,
      },
    ],
  });
}

/**
 * A deleted Agent that holds the spend finalizer: its spend SET in the ledger (with the entries of runs whose Agents
 * are gone folded into their buckets), then the finalizer removed. The spend is the larger of its status and what
 * the gateway measured, so usage written after the result is not lost.
 */
export function spendFinalizerWork(s: CommonSnapshot, now: Date): Decision | undefined {
  const { agent } = s;
  if (agent.metadata.deletionTimestamp === undefined) return undefined;
  const index = agent.metadata.finalizers.indexOf(SPEND_FINALIZER);
  if (index < 0) return undefined;
  if (s.spend === undefined) return { actions: [], needs: 'spend' };
  const entry = runEntry(agent, s.prices ?? DEFAULT_PRICES);
  const gone = Object.keys(s.spend.ledger.runs).filter((uid) => !s.spend?.live.has(uid));
  const actions: Action[] = [
    {
      kind: 'recordSpend',
      namespace: agent.metadata.namespace,
      set: entry !== undefined ? [{ uid: agent.metadata.uid, entry }] : [],
      gone,
      hourMs: budgetHourMs(s),
      nowMs: now.getTime(),
    },
    { kind: 'removeFinalizer', ref: agentRef(agent), finalizer: SPEND_FINALIZER, index },
  ];
  return { actions };
}
