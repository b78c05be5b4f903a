import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { AGENT_PHASES } from '../api/agent.ts';
import { RUN_FAILURE_KINDS } from '../reconcile/actions.ts';
import { BATCH_PROVIDERS } from '../vendors/batch/port.ts';

/** Agent phases, in lifecycle order; every gauge series is pre-initialised for each (Serving: servers, issue 12). */
export const PHASES = AGENT_PHASES;

/** Seconds buckets spanning a fast admission (ms) to a long agent run (hours). */
const DURATION_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 14400];

/**
 * The controller's metrics, all on one registry (no global default registry, so tests can make several).
 * Names follow the reference (`controller_*`) plus Prometheus conventions (`_total`, `_seconds`).
 */
export interface ControllerMetrics {
  readonly registry: Registry;
  readonly resyncs: Counter;
  readonly watchReconnects: Counter<'resource'>;
  readonly agents: Gauge<'phase'>;
  readonly runsCompleted: Counter<'phase' | 'exit_code'>;
  readonly runDuration: Histogram<'phase'>;
  readonly runQueue: Histogram;
  readonly runFailures: Counter<'kind'>;
  readonly runEvidence: Counter<'source'>;
  readonly runTokens: Counter<'model' | 'kind'>;
  readonly runCost: Counter<'model'>;
  readonly batchCleanupFailures: Counter;
  readonly batchOrphans: Counter<'provider'>;
  readonly batchPolls: Counter<'provider' | 'result'>;
  readonly batchListPages: Counter<'provider' | 'result'>;
  readonly promptsServed: Counter<'action' | 'result'>;
  readonly promptFirstLine: Histogram;
  readonly realtimeSessions: Gauge;
  readonly sessionsSuspended: Gauge;
  readonly sessionSuspends: Counter<'trigger'>;
  readonly sessionWakes: Counter<'trigger'>;
  readonly sessionWakeAdmission: Histogram;
  readonly sessionWakeSeconds: Histogram<'result'>;
  readonly sessionSaves: Counter<'result'>;
  readonly sessionCleanupFailures: Counter;
  readonly batchesInFlight: Gauge;
  readonly readAheadLogs: Gauge;
  readonly readAheadLogBytes: Gauge;
  readonly isLeader: Gauge;
  readonly reconciles: Counter<'result'>;
  readonly reconcileDuration: Histogram;
  readonly jobsCreated: Counter;
  readonly statusPatches: Counter;
  readonly apiRequestDuration: Histogram<'verb' | 'code'>;
  readonly eventLoopLag: Histogram;
  readonly eventLoopMaxLag: Gauge;
  readonly budgetSpentUsd: Gauge<'namespace' | 'station' | 'window'>;
  readonly budgetLimitUsd: Gauge<'namespace' | 'station' | 'window'>;
  readonly budgetSpentTokens: Gauge<'namespace' | 'station' | 'window'>;
  readonly budgetLimitTokens: Gauge<'namespace' | 'station' | 'window'>;
  readonly budgetWaitingRuns: Gauge<'namespace'>;
}

/** Creates the registry and every metric; `withProcessMetrics` adds prom-client's default process metrics. */
export function createControllerMetrics(withProcessMetrics = true): ControllerMetrics {
  const registry = new Registry();
  const m: ControllerMetrics = { registry, ...defineMetrics([registry]) };
  zeroSeries(m);
  if (withProcessMetrics) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
  return m;
}

/** Every metric of the controller, registered with `registers`: declarations only (names, help, labels, buckets). */
function defineMetrics(registers: Registry[]): Omit<ControllerMetrics, 'registry'> {
  return {
    resyncs: new Counter({
      name: 'controller_resyncs_total',
      help: 'Full LIST resyncs (startup, poll, 410)',
      registers,
    }),
    watchReconnects: new Counter({
      name: 'controller_watch_reconnects_total',
      help: 'Watches opened again after one was lost (it failed or went silent, or a LIST failed), per watched resource; the routine restart after the API server ends a watch is not counted',
      labelNames: ['resource'],
      registers,
    }),
    agents: new Gauge({
      name: 'controller_agents',
      help: 'Agents per phase at the last poll',
      labelNames: ['phase'],
      registers,
    }),
    runsCompleted: new Counter({
      name: 'controller_runs_completed_total',
      help: 'Runs that reached a terminal phase',
      labelNames: ['phase', 'exit_code'],
      registers,
    }),
    runDuration: new Histogram({
      name: 'controller_run_duration_seconds',
      help: 'Run duration from startedAt to the terminal status patch',
      labelNames: ['phase'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    runQueue: new Histogram({
      name: 'controller_run_queue_seconds',
      help: 'Time from Agent creation to its Job being created',
      buckets: DURATION_BUCKETS,
      registers,
    }),
    runEvidence: new Counter({
      name: 'controller_run_evidence_reads_total',
      help: "How finished runs' pod and log were read: read_ahead (both at hand when the Job finished), cached_pod (the pod cached, its log read then), live (the pods listed and the log read then)",
      labelNames: ['source'],
      registers,
    }),
    runFailures: new Counter({
      name: 'controller_run_failures_total',
      help: 'Failed runs by kind',
      labelNames: ['kind'],
      registers,
    }),
    runTokens: new Counter({
      name: 'controller_run_tokens_total',
      help: 'Tokens used by finished runs, by model (the price table key, else other) and kind (input, output, cache_read, cache_write)',
      labelNames: ['model', 'kind'],
      registers,
    }),
    runCost: new Counter({
      name: 'controller_run_cost_usd_total',
      help: 'Estimated cost of finished runs in US dollars, by model (the price table key, else other)',
      labelNames: ['model'],
      registers,
    }),
    batchCleanupFailures: new Counter({
      name: 'controller_batch_cleanup_failures_total',
      help: 'Failed attempts to delete vendor batch resources after a batch run',
      registers,
    }),
    batchOrphans: new Counter({
      name: 'controller_batch_orphans_total',
      help: 'Vendor batch objects left behind: cleanup gave up, or a submission could not be tied to its run',
      labelNames: ['provider'],
      registers,
    }),
    batchPolls: new Counter({
      name: 'controller_batch_polls_total',
      help: 'Polls of in-flight vendor batches, by provider and result (pending, ended, error); a batch seen in a list sweep counts as one',
      labelNames: ['provider', 'result'],
      registers,
    }),
    promptsServed: new Counter({
      name: 'controller_prompts_total',
      help: 'Realtime prompt API requests by action (prompt, close) and result (ok, unauthorized, forbidden, not_found, conflict, unavailable, too_large, bad_request, interrupted, error)',
      labelNames: ['action', 'result'],
      registers,
    }),
    realtimeSessions: new Gauge({
      name: 'controller_realtime_sessions',
      help: 'Realtime sessions open (realtime run Jobs not finished) at the last poll',
      registers,
    }),
    // Durable sessions (issue 29).
    sessionsSuspended: new Gauge({
      name: 'controller_sessions_suspended',
      help: 'Realtime sessions Suspended (state in the session store, no pod, no run slot) at the last poll',
      registers,
    }),
    sessionSuspends: new Counter({
      name: 'controller_session_suspends_total',
      help: 'Realtime sessions suspended, by trigger (idle: idleTimeoutSeconds passed; requested: agent-controller suspend)',
      labelNames: ['trigger'],
      registers,
    }),
    sessionWakes: new Counter({
      name: 'controller_session_wakes_total',
      help: 'Realtime sessions given a new pod restoring their saved state, by trigger (wake: a prompt or resume; restore: the pod was lost)',
      labelNames: ['trigger'],
      registers,
    }),
    sessionWakeAdmission: new Histogram({
      name: 'controller_session_wake_admission_seconds',
      help: "Time from a session's wake or restore request to its new Job's creation (the wait for a run slot)",
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
      registers,
    }),
    sessionWakeSeconds: new Histogram({
      name: 'controller_session_wake_seconds',
      help: 'Time a prompt to a Suspended session was held until its new pod had the saved state (result: ok, timeout, error)',
      labelNames: ['result'],
      buckets: [0.5, 1, 2.5, 5, 10, 20, 30, 60, 120],
      registers,
    }),
    sessionSaves: new Counter({
      name: 'controller_session_saves_total',
      help: "Turns of realtime sessions written to the session store, by result (ok, error: the pod's state or the store failed)",
      labelNames: ['result'],
      registers,
    }),
    sessionCleanupFailures: new Counter({
      name: 'controller_session_cleanup_failures_total',
      help: 'Failed attempts to delete a stored session (its Agent deleted, or beyond the Station sessionHistoryLimit)',
      registers,
    }),
    promptFirstLine: new Histogram({
      name: 'controller_prompt_first_line_seconds',
      help: 'Realtime prompt latency from the request to the first line streamed back',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    batchListPages: new Counter({
      name: 'controller_batch_list_pages_total',
      help: 'Batch list pages requested by the poller sweeps, by provider and result (ok, error)',
      labelNames: ['provider', 'result'],
      registers,
    }),
    // Spend budgets (issue 28 §4): a windowed budget's spend and limit as the last admission decision counted them
    // (station empty: a namespace budget).
    budgetSpentUsd: new Gauge({
      name: 'agent_budget_spent_usd',
      help: 'US dollars spent in a budget window (namespace, station, window: hour, day, month), as the last admission counted',
      labelNames: ['namespace', 'station', 'window'],
      registers,
    }),
    budgetLimitUsd: new Gauge({
      name: 'agent_budget_limit_usd',
      help: 'The US dollar limit of a budget window (the stricter of the AgentPolicy and the Station)',
      labelNames: ['namespace', 'station', 'window'],
      registers,
    }),
    budgetSpentTokens: new Gauge({
      name: 'agent_budget_spent_tokens',
      help: 'Tokens used in a budget window, as the last admission counted',
      labelNames: ['namespace', 'station', 'window'],
      registers,
    }),
    budgetLimitTokens: new Gauge({
      name: 'agent_budget_limit_tokens',
      help: 'The token limit of a budget window (the stricter of the AgentPolicy and the Station)',
      labelNames: ['namespace', 'station', 'window'],
      registers,
    }),
    budgetWaitingRuns: new Gauge({
      name: 'agent_budget_waiting_runs',
      help: 'Pending Agents held by a spent budget (Ready=False, reason BudgetExhausted) at the last poll',
      labelNames: ['namespace'],
      registers,
    }),
    batchesInFlight: new Gauge({
      name: 'controller_batches_in_flight',
      help: 'Vendor batches this replica polls',
      registers,
    }),
    readAheadLogs: new Gauge({
      name: 'controller_read_ahead_logs',
      help: 'Agent logs of finished run pods read ahead (or being read) and not yet taken by the run verdict',
      registers,
    }),
    readAheadLogBytes: new Gauge({
      name: 'controller_read_ahead_log_bytes',
      help: 'Memory held by the agent logs read ahead and not yet taken (bounded by the read-ahead budget)',
      registers,
    }),
    isLeader: new Gauge({
      name: 'controller_is_leader',
      help: '1 while this replica holds the Lease',
      registers,
    }),
    reconciles: new Counter({
      name: 'controller_reconciles_total',
      help: 'Reconciles by result',
      labelNames: ['result'],
      registers,
    }),
    reconcileDuration: new Histogram({
      name: 'controller_reconcile_duration_seconds',
      help: 'Duration of one Agent reconcile',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    jobsCreated: new Counter({
      name: 'controller_jobs_created_total',
      help: 'Jobs created (201)',
      registers,
    }),
    statusPatches: new Counter({
      name: 'controller_status_patches_total',
      help: 'Agent status patches accepted',
      registers,
    }),
    apiRequestDuration: new Histogram({
      name: 'controller_apiserver_request_duration_seconds',
      help: 'Duration of non-watch API server requests',
      labelNames: ['verb', 'code'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    eventLoopLag: new Histogram({
      name: 'controller_event_loop_lag_seconds',
      help: 'How late a 100 ms timer fired: time the event loop was busy with something else',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    eventLoopMaxLag: new Gauge({
      name: 'controller_event_loop_max_lag_seconds',
      help: 'Largest event-loop lag in the last 10 s',
      registers,
    }),
  };
}

/**
 * The series that exist from the start at 0, so `increase()` and the alerts count a series' first event (a counter
 * that appears at 1 has no earlier sample to increase from).
 */
function zeroSeries(m: ControllerMetrics): void {
  for (const phase of PHASES) m.agents.set({ phase }, 0);
  for (const kind of RUN_FAILURE_KINDS) m.runFailures.inc({ kind }, 0);
  for (const provider of BATCH_PROVIDERS) m.batchOrphans.inc({ provider }, 0);
  for (const result of ['success', 'error', 'requeue', 'conflict']) m.reconciles.inc({ result }, 0);
  // The usual endings exist from the start, so `increase()` and the failure-ratio alert count a series' first run
  // (a counter that appears at 1 has no earlier sample to increase from). Other exit codes appear when they happen.
  for (const [phase, exitCode] of [
    ['Succeeded', '0'],
    ['Succeeded', ''],
    ['Failed', '1'],
    ['Failed', ''],
  ] as const) {
    m.runsCompleted.inc({ phase, exit_code: exitCode }, 0);
  }
  for (const phase of ['Succeeded', 'Failed'] as const) m.runDuration.zero({ phase });
  for (const trigger of ['idle', 'requested']) m.sessionSuspends.inc({ trigger }, 0);
  for (const trigger of ['wake', 'restore']) m.sessionWakes.inc({ trigger }, 0);
  for (const result of ['ok', 'error']) m.sessionSaves.inc({ result }, 0);
  m.sessionCleanupFailures.inc(0);
  m.sessionsSuspended.set(0);
  m.isLeader.set(0);
  m.readAheadLogs.set(0);
  m.readAheadLogBytes.set(0);
}
