// The decision rows of `execution: batch` runs (see `decide`): submission with a crash-safe protocol, completion
// from the poller's observation, timeout (fail or fall back to a Job), and the cleanup that the finalizer
// `agents.re-cinq.com/batch-cleanup` guards.
//
// Crash-safety protocol (each step is one decision; the controller may die between any two):
//   1. admitted → add the finalizer (JSON patch testing the resourceVersion).
//   2. finalizer held → write the submission record: phase Running, batchProvider, startedAt, no batchId.
//      From here the Agent holds its slot as any Running run.
//   3. record written, no batchId → submit, unless a create may be outstanding: after a restart, a leader change
//      or a create whose answer was lost, the vendor is searched first (`needs: 'batchLookup'`) for the request's
//      deterministic id (`run-<uid>`). Found → adopted (extra ones are cancelled and deleted, named in a Warning
//      Event); absent → submitted; undecided (Anthropic, while a batch created in the window has not ended) →
//      wait, never submit.
//   4. created → patch batchId (a lost patch is repaired by step 3's search).
//   5. the poller's observation ends the run (Succeeded / Failed, output = the CLI lines); the timeout fails it
//      or falls back to a Job.
//   6. finished, fallen back or deleted → cancel and delete at the vendor, then remove the finalizer; after
//      MAX_CLEANUP_ATTEMPTS failures the finalizer is removed anyway and a Warning Event names what was left.
// A terminal status patch carries the resourceVersion precondition, so no Agent ever records two results.

import type { Agent, AgentDefinition, Station } from '../../api/index.ts';
import { capOutput } from '../../jobs/output-cap.ts';
import type { BatchProvider, BatchState } from '../../vendors/batch/port.ts';
import type { Action, Decision, SinkEvent, SinkSource, SinkTarget } from '../actions.ts';
import {
  apiKeySecretKey,
  BATCH_FINALIZER,
  batchFinalizerIndex,
  batchModel,
  batchProviderFor,
  batchRequestFor,
  batchUnsupported,
  holdsBatchFinalizer,
  isBatchProvider,
  MAX_CLEANUP_ATTEMPTS,
  selectLines,
} from '../batch/plan.ts';
import type { ConditionUpdate } from '../conditions.ts';
import {
  CONDITION_READY,
  FAILURE_BATCH_DISABLED,
  FAILURE_BATCH_TIMEOUT,
  failureBatchRejected,
  REASON,
} from '../reasons.ts';
import type { BatchSnapshot } from '../snapshot/batch.ts';
import { decideAdmission } from '../station/admission.ts';
import { failBeforeStart } from './fail.ts';
import { finish } from './finish.ts';
import { preemptActions, queuedDecision, stationConcurrency, traceIdOf } from './start.ts';
import { agentRef, clip, event, formatStatusTime, MAX_CONDITION_MESSAGE, statusPatch } from './status.ts';
import { secondsBetween } from './transition.ts';

/** Re-check period while an Anthropic cleanup waits for a cancelled batch to end. */
export const CLEANUP_PENDING_RETRY_MS = 10_000;
/** Backoff of the n-th failed cleanup (1-based): 2^n seconds, at most 5 minutes. */
export function cleanupBackoffMs(attempt: number): number {
  return Math.min(1000 * 2 ** Math.max(1, attempt), 300_000);
}

const NOTHING: Decision = { actions: [] };

/** True when the Agent's run is (or was) a batch run: its submission record names a provider. */
export function isBatchRun(agent: Agent): boolean {
  return isBatchProvider(agent.status.batchProvider);
}

export function batchConditions(reason: string, message: string): ConditionUpdate[] {
  return [{ type: CONDITION_READY, status: 'False', reason, message: clip(message, MAX_CONDITION_MESSAGE) }];
}

// ---------------------------------------------------------------------------------------------------------------
// Pending

/** The Pending rows of a batch recipe, after the Station and AgentDefinition were found valid. */
export function decideBatchPending(
  s: BatchSnapshot,
  now: Date,
  station: Station,
  definition: AgentDefinition,
): Decision {
  const { agent } = s;
  if (!s.options.batch.enabled) {
    return failBeforeStart(s, now, {
      kind: 'build_error',
      reason: REASON.batchDisabled,
      failureReason: FAILURE_BATCH_DISABLED,
      message: `${FAILURE_BATCH_DISABLED}: set BATCH_ENABLED=true (kustomize component deploy/components/batch)`,
    });
  }
  const model = batchModel(agent, definition);
  const unsupported = batchUnsupported(definition, model);
  if (unsupported !== undefined) {
    return failBeforeStart(s, now, {
      kind: 'build_error',
      reason: REASON.batchUnsupported,
      failureReason: unsupported,
      message: unsupported,
    });
  }
  const provider = batchProviderFor(model) as BatchProvider;
  const credentials = s.credentials ?? { kind: 'unknown' };
  if (credentials.kind === 'unknown') return { actions: [], needs: 'credentials' };
  if (credentials.kind === 'missing') {
    return failBeforeStart(s, now, {
      kind: 'build_error',
      reason: REASON.batchCredentialsMissing,
      failureReason: credentials.message,
      message: credentials.message,
    });
  }
  const verdict = decideAdmission(s.queue, stationConcurrency(station));
  if (verdict.kind === 'wait') return queuedDecision(s, station, verdict, now);
  const actions: Action[] = verdict.kind === 'replace' ? preemptActions(agent, station, verdict.victims) : [];
  if (!holdsBatchFinalizer(agent)) {
    actions.push({
      kind: 'addFinalizer',
      ref: agentRef(agent),
      resourceVersion: agent.metadata.resourceVersion,
      finalizer: BATCH_FINALIZER,
      first: agent.metadata.finalizers.length === 0,
    });
    return { actions, admits: true, requeueAfterMs: s.options.requeueMs };
  }
  actions.push(
    statusPatch(
      agent,
      { phase: 'Running', batchProvider: provider, startedAt: formatStatusTime(now), ...traceIdOf(s) },
      batchConditions(REASON.submitting, `Submitting the prompt to the ${provider} batch API`),
      now,
    ),
    event(agentRef(agent), 'Normal', REASON.submitting, `Submitting the prompt to the ${provider} batch API`),
  );
  return { actions, admits: true, submissionRecord: true, requeueAfterMs: s.options.requeueMs };
}

// ---------------------------------------------------------------------------------------------------------------
// Running

/** The Running rows of a batch run (record written, not fallen back). */
export function decideBatchRunning(s: BatchSnapshot, now: Date): Decision {
  const { agent } = s;
  const provider = agent.status.batchProvider as BatchProvider;
  const batchId = agent.status.batchId ?? '';
  const timeoutMinutes = s.definition?.spec.batch.timeoutMinutes ?? 1440;
  const started = Date.parse(agent.status.startedAt ?? agent.metadata.creationTimestamp);
  const deadline = (Number.isNaN(started) ? now.getTime() : started) + timeoutMinutes * 60_000;
  const state = s.batchState;
  if (batchId !== '' && state?.kind === 'ended' && state.id === batchId)
    return complete(s, now, provider, state);
  if (now.getTime() >= deadline) return timeout(s, now, provider, timeoutMinutes);
  if (batchId === '') return submission(s, now, provider);
  return {
    actions: [],
    requeueAfterMs: Math.max(1, Math.min(deadline - now.getTime(), s.options.requeueMs)),
  };
}

/** Record written, no batchId: submit, adopt a found submission, or wait for the vendor to tell. */
function submission(s: BatchSnapshot, now: Date, provider: BatchProvider): Decision {
  const { agent, definition } = s;
  const sub = s.submission ?? { kind: 'unknown' };
  switch (sub.kind) {
    case 'unknown':
      return { actions: [], needs: 'batchLookup' };
    case 'submitted':
      return adopt(s, now, provider, sub.id, [], `Submitted batch ${sub.id} to ${provider}`);
    case 'rejected': {
      const failureReason = failureBatchRejected(provider, sub.message);
      return finish(s, now, {
        phase: 'Failed',
        exitCode: 1,
        output: '',
        failureReason,
        reason: REASON.batchRejected,
        message: failureReason,
        failureKinds: ['batch_failed'],
        extraEvents: [],
        afterPatch: sinkActions(s, [lifecycle('agent', 'failed', { exitCode: 1 })]),
      });
    }
    case 'lookedUp':
      switch (sub.result.kind) {
        case 'found':
          return adopt(
            s,
            now,
            provider,
            sub.result.id,
            sub.result.duplicates,
            `Found batch ${sub.result.id} at ${provider} submitted before a restart; adopted it`,
          );
        case 'undecided':
          // Anthropic cannot tell yet whether a batch created in the window is this run's: never submit meanwhile.
          return { actions: [], requeueAfterMs: s.options.batch.pollMs };
        case 'absent':
          break;
      }
      break;
    case 'none':
      break;
  }
  if (definition === null) return { actions: [], requeueAfterMs: s.options.requeueMs };
  return {
    actions: [
      {
        kind: 'submitBatch',
        ref: agentRef(agent),
        provider,
        secretKey: apiKeySecretKey(definition, provider),
        request: batchRequestFor(agent, definition, batchModel(agent, definition)),
      },
    ],
  };
}

/** Records the batch id: Started, the queue-time metric, `agent/started` to the sinks; extra batches discarded. */
function adopt(
  s: BatchSnapshot,
  now: Date,
  provider: BatchProvider,
  id: string,
  duplicates: readonly string[],
  message: string,
): Decision {
  const { agent } = s;
  const ref = agentRef(agent);
  const queued = secondsBetween(agent.metadata.creationTimestamp, now);
  const actions: Action[] = [
    statusPatch(
      agent,
      { phase: 'Running', batchId: id, batchProvider: provider },
      batchConditions(REASON.running, `Batch ${id} is in progress at ${provider}`),
      now,
    ),
    ...sinkActions(s, [lifecycle('agent', 'started')]),
    event(ref, 'Normal', REASON.started, message),
    ...(queued !== undefined
      ? [{ kind: 'observeMetric' as const, observation: { metric: 'runQueue' as const, seconds: queued } }]
      : []),
  ];
  for (const extra of duplicates) {
    actions.push(
      event(
        ref,
        'Warning',
        REASON.duplicateBatch,
        `Batch ${extra} at ${provider} was submitted for this run too; deleting it`,
      ),
      {
        kind: 'cleanupBatch',
        ref,
        provider,
        secretKey: apiKeySecretKey(s.definition, provider),
        batchId: extra,
      },
    );
  }
  return { actions, requeueAfterMs: s.options.requeueMs };
}

/** The batch ended: Succeeded or Failed with the CLI lines as output; then the history sweep. */
function complete(
  s: BatchSnapshot,
  now: Date,
  provider: BatchProvider,
  state: BatchState & { kind: 'ended' },
): Decision {
  const outcome = state.outcome;
  const output = capOutput(outcome.lines.join('\n'), s.options.maxOutputBytes);
  const select = s.definition?.spec.output.select ?? [];
  const lines = selectLines(provider, select, outcome.lines).map(
    (line): SinkEvent => ({ kind: 'line', line }),
  );
  if (outcome.kind === 'succeeded') {
    return finish(s, now, {
      phase: 'Succeeded',
      exitCode: 0,
      output,
      batch: true,
      reason: REASON.succeeded,
      message: `Batch ${state.id} at ${provider} completed`,
      failureKinds: [],
      extraEvents: [],
      afterPatch: sinkActions(s, [...lines, lifecycle('agent', 'succeeded', { exitCode: 0 })]),
    });
  }
  return finish(s, now, {
    phase: 'Failed',
    exitCode: 1,
    output,
    batch: true,
    failureReason: outcome.message,
    reason: REASON.batchFailed,
    message: `Batch ${state.id} at ${provider} failed: ${outcome.message}`,
    failureKinds: ['batch_failed'],
    extraEvents: [],
    afterPatch: sinkActions(s, [...lines, lifecycle('agent', 'failed', { exitCode: 1 })]),
  });
}

/** Past batch.timeoutMinutes: fail, or fall back to a Job run of the same recipe. The cleanup cancels the batch. */
function timeout(s: BatchSnapshot, now: Date, provider: BatchProvider, minutes: number): Decision {
  const { agent } = s;
  const batchId = agent.status.batchId ?? '';
  const what = batchId === '' ? `The submission to ${provider}` : `Batch ${batchId} at ${provider}`;
  const ran = `${what} did not finish within ${minutes} minute${minutes === 1 ? '' : 's'}`;
  if (s.definition?.spec.batch.onTimeout === 'fallback') {
    const message = `${ran}; running the recipe as a Job instead`;
    return {
      actions: [
        statusPatch(agent, { batchFallback: true }, batchConditions(REASON.fallingBack, message), now),
        ...sinkActions(s, [lifecycle('batch', 'running', { reason: 'batch_timeout' })]),
        event(agentRef(agent), 'Warning', REASON.batchTimedOut, message),
        { kind: 'observeMetric', observation: { metric: 'runFailure', kind: 'batch_timeout' } },
      ],
    };
  }
  return finish(s, now, {
    phase: 'Failed',
    exitCode: 1,
    output: '',
    failureReason: FAILURE_BATCH_TIMEOUT,
    reason: REASON.batchTimedOut,
    message: `${ran}; the batch is cancelled`,
    failureKinds: ['batch_timeout'],
    extraEvents: [],
    afterPatch: sinkActions(s, [
      lifecycle('batch', 'failed', { reason: 'batch_timeout' }),
      lifecycle('agent', 'failed', { exitCode: 1 }),
    ]),
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Cleanup

/**
 * The cleanup rows: the run is finished, fell back to a Job, or is being deleted, and still holds the finalizer.
 * Cancels and deletes the vendor batch (and, without a batchId, first finds out whether one exists), then removes
 * the finalizer. Failures count in `status.batchCleanupAttempts` with backoff; after MAX_CLEANUP_ATTEMPTS the
 * finalizer is removed anyway with a Warning Event naming the object left behind.
 */
export function decideBatchCleanup(s: BatchSnapshot, now: Date): Decision {
  const { agent } = s;
  const index = batchFinalizerIndex(agent);
  if (index < 0) return NOTHING;
  const ref = agentRef(agent);
  const remove: Action = { kind: 'removeFinalizer', ref, finalizer: BATCH_FINALIZER, index };
  const providerName = agent.status.batchProvider;
  if (!isBatchProvider(providerName)) return { actions: [remove] };
  const provider: BatchProvider = providerName;
  const secretKey = apiKeySecretKey(s.definition, provider);
  const deleting = agent.metadata.deletionTimestamp !== undefined;
  const attempts = agent.status.batchCleanupAttempts ?? 0;
  let batchId = agent.status.batchId ?? '';
  const extra: string[] = [];

  if (batchId === '') {
    const sub = s.submission ?? { kind: 'unknown' };
    if (sub.kind === 'unknown') return { actions: [], needs: 'batchLookup' };
    if (sub.kind === 'submitted') batchId = sub.id;
    if (sub.kind === 'lookedUp') {
      if (sub.result.kind === 'found') {
        batchId = sub.result.id;
        extra.push(...sub.result.duplicates);
      } else if (sub.result.kind === 'undecided') {
        const names = sub.result.candidates.join(', ');
        return {
          actions: [
            event(
              ref,
              'Warning',
              REASON.batchOrphaned,
              `Could not tell whether ${provider} batch ${names} belongs to this run (its results are not out yet); it is left at ${provider}`,
            ),
            { kind: 'observeMetric', observation: { metric: 'batchOrphan', provider } },
            remove,
          ],
        };
      }
    }
    if (batchId === '') return { actions: [remove] };
  }

  const cleanup = s.cleanup;
  if (cleanup?.kind === 'pending') {
    return { actions: [], requeueAfterMs: Math.min(CLEANUP_PENDING_RETRY_MS, s.options.batch.pollMs) };
  }
  if (cleanup?.kind === 'failed') {
    const n = attempts + 1;
    const counted: Action[] = [
      statusPatch(agent, { batchCleanupAttempts: n }, [], now),
      { kind: 'observeMetric', observation: { metric: 'batchCleanupFailure' } },
    ];
    if (n >= MAX_CLEANUP_ATTEMPTS) {
      return {
        actions: [
          ...counted,
          event(
            ref,
            'Warning',
            REASON.batchOrphaned,
            `Gave up cleaning up ${provider} batch ${batchId} after ${n} failed attempts (${cleanup.message}); delete it at ${provider} by hand`,
          ),
          { kind: 'observeMetric', observation: { metric: 'batchOrphan', provider } },
          remove,
        ],
      };
    }
    return {
      actions: [
        ...counted,
        event(
          ref,
          'Warning',
          REASON.batchCleanupFailed,
          `Cleaning up ${provider} batch ${batchId} failed (attempt ${n} of ${MAX_CLEANUP_ATTEMPTS}): ${cleanup.message}`,
        ),
      ],
      requeueAfterMs: cleanupBackoffMs(n),
    };
  }
  if (attempts > 0 && s.cleanupNotBefore !== undefined && now.getTime() < s.cleanupNotBefore.getTime()) {
    return { actions: [], requeueAfterMs: s.cleanupNotBefore.getTime() - now.getTime() };
  }
  const actions: Action[] = [];
  for (const id of extra) {
    actions.push(
      event(
        ref,
        'Warning',
        REASON.duplicateBatch,
        `Batch ${id} at ${provider} was submitted for this run too; deleting it`,
      ),
      { kind: 'cleanupBatch', ref, provider, secretKey, batchId: id },
    );
  }
  actions.push(
    { kind: 'cleanupBatch', ref, provider, secretKey, batchId },
    event(
      ref,
      'Normal',
      REASON.batchCleanedUp,
      `${deleting ? 'Cancelled and deleted' : 'Deleted'} batch ${batchId} at ${provider}`,
    ),
    remove,
  );
  return { actions };
}

// ---------------------------------------------------------------------------------------------------------------
// Sinks

function lifecycle(
  phase: 'agent' | 'batch',
  status: 'started' | 'running' | 'succeeded' | 'failed',
  extra: { reason?: string; exitCode?: number } = {},
): SinkEvent {
  return { kind: 'lifecycle', phase, status, ...extra };
}

/** The `notifySinks` action for the definition's http sinks, or nothing when it has none. */
function sinkActions(s: BatchSnapshot, events: readonly SinkEvent[]): Action[] {
  const definition = s.definition;
  if (definition === null || events.length === 0) return [];
  const sinks: SinkTarget[] = [];
  for (const sink of definition.spec.output.sinks) {
    if (sink.type !== 'http' || sink.url === undefined || sink.url === '') continue;
    sinks.push({
      url: sink.url,
      ...(sink.headers_secret !== undefined && sink.headers_secret !== ''
        ? { headersSecret: sink.headers_secret }
        : {}),
    });
  }
  if (sinks.length === 0) return [];
  const { agent } = s;
  const source: SinkSource = {
    agent: agent.metadata.name,
    station: agent.spec.stationRef,
    namespace: agent.metadata.namespace,
    ...(agent.spec.taskId !== undefined && agent.spec.taskId !== '' ? { task: agent.spec.taskId } : {}),
  };
  return [{ kind: 'notifySinks', ref: agentRef(agent), sinks, source, events }];
}
