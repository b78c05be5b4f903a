import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, type AgentDefinition, parseAgent, parseAgentPolicy } from '../../api/index.ts';
import { jobNameFor } from '../../jobs/index.ts';
import { traceIdFromUid } from '../../shared/trace-context.ts';
import type { BatchProvider } from '../../vendors/batch/port.ts';
import type {
  Action,
  AgentRef,
  AgentStatusPatch,
  Decision,
  MetricObservation,
  SinkEvent,
  SinkSource,
  SinkTarget,
} from '../actions.ts';
import { BATCH_FINALIZER } from '../batch/plan.ts';
import { findCondition } from '../conditions.ts';
import { decide, type JobBuilder } from '../index.ts';
import {
  FAILURE_BATCH_DISABLED,
  FAILURE_BATCH_TIMEOUT,
  failureBatchRejected,
  failureInput,
  preemptedMessage,
  REASON,
} from '../reasons.ts';
import type { ReconcileOptions, Snapshot } from '../snapshot.ts';
import {
  at,
  complete,
  definition,
  finished,
  iso,
  job,
  NS,
  pod,
  queueOf,
  recordingBuilder,
  running,
  station,
} from '../test-fixtures.ts';
import { CLEANUP_PENDING_RETRY_MS, cleanupBackoffMs } from './batch.ts';

// ------------------------------------------------------------------------------------------------ fixtures

const OPTIONS: ReconcileOptions = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: true, pollMs: 60000 },
  realtime: { enabled: true },
};
const NOW = at(60);
const BATCH_ID = 'msgbatch_01';

interface BatchAgentOpts {
  readonly rv?: string;
  readonly uid?: string;
  readonly created?: number;
  readonly finalizers?: readonly string[];
  readonly deleting?: boolean;
  readonly model?: string;
  readonly taskId?: string;
  readonly parameters?: Readonly<Record<string, string>>;
  readonly status?: Record<string, unknown>;
}

/** An Agent of Station `stn` in NS, with finalizers, spec fields and status as given. */
function bagent(name: string, o: BatchAgentOpts = {}): Agent {
  const r = parseAgent({
    apiVersion: 'agents.re-cinq.com/v1alpha1',
    kind: 'Agent',
    metadata: {
      name,
      namespace: NS,
      uid: o.uid ?? `uid-${name}`,
      resourceVersion: o.rv ?? `rv-${name}`,
      generation: 1,
      creationTimestamp: iso(o.created ?? 0),
      ...(o.deleting === true ? { deletionTimestamp: iso(50) } : {}),
      ...(o.finalizers !== undefined ? { finalizers: o.finalizers } : {}),
    },
    spec: {
      stationRef: 'stn',
      ...(o.model !== undefined ? { model: o.model } : {}),
      ...(o.taskId !== undefined ? { taskId: o.taskId } : {}),
      parameters: o.parameters ?? { thing: 'the thing' },
    },
    ...(o.status !== undefined ? { status: o.status } : {}),
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** A Running batch run whose submission record is written (finalizer held, batchProvider, startedAt). */
function recorded(
  name: string,
  o: BatchAgentOpts & {
    readonly provider?: BatchProvider;
    readonly batchId?: string;
    readonly started?: number;
  } = {},
): Agent {
  return bagent(name, {
    finalizers: [BATCH_FINALIZER],
    ...o,
    status: {
      phase: 'Running',
      batchProvider: o.provider ?? 'anthropic',
      startedAt: iso(o.started ?? 10),
      ...(o.batchId !== undefined ? { batchId: o.batchId } : {}),
      ...o.status,
    },
  });
}

/** A finished batch run (phase, batchProvider, batchId, completedAt at 40) still holding the finalizer. */
function done(
  name: string,
  o: BatchAgentOpts & { readonly phase?: 'Succeeded' | 'Failed'; readonly batchId?: string } = {},
): Agent {
  return bagent(name, {
    finalizers: [BATCH_FINALIZER],
    ...o,
    status: {
      phase: o.phase ?? 'Succeeded',
      batchProvider: 'anthropic',
      startedAt: iso(10),
      completedAt: iso(40),
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Succeeded',
          message: 'done',
          lastTransitionTime: iso(40),
          observedGeneration: 1,
        },
      ],
      ...(o.batchId !== undefined ? { batchId: o.batchId } : {}),
      ...o.status,
    },
  });
}

/** A batch recipe (prompt `Do {thing}`). */
const recipe = (spec: Record<string, unknown> = {}): AgentDefinition =>
  definition('def', { execution: 'batch', ...spec });

const SINK_URL = 'http://sink.example:9000/events';
const withSinks = (spec: Record<string, unknown> = {}): AgentDefinition =>
  recipe({
    ...spec,
    output: {
      ...((spec.output as Record<string, unknown> | undefined) ?? {}),
      sinks: [{ type: 'http', url: SINK_URL, headers_secret: 'sink-headers' }, { type: 'stdout' }],
    },
  });
const SINKS: readonly SinkTarget[] = [{ url: SINK_URL, headersSecret: 'sink-headers' }];

function snap(
  a: Agent,
  over: Partial<Omit<Snapshot, 'options'>> & {
    readonly siblings?: readonly Agent[];
    readonly options?: Partial<ReconcileOptions>;
  } = {},
): Snapshot {
  const { siblings, options, ...rest } = over;
  return {
    agent: a,
    station: station(),
    definition: recipe(),
    job: { kind: 'unknown' },
    queue: queueOf(a, siblings ?? [a]),
    credentials: { kind: 'present' },
    options: { ...OPTIONS, ...options },
    ...rest,
  };
}

// ------------------------------------------------------------------------------------------------ inspection

type Of<K extends Action['kind']> = Extract<Action, { kind: K }>;
const kinds = (d: Decision) => d.actions.map((a) => a.kind);
const patches = (d: Decision) => d.actions.filter((a): a is Of<'patchStatus'> => a.kind === 'patchStatus');
const onlyPatch = (d: Decision): AgentStatusPatch => {
  const p = patches(d);
  assert.equal(p.length, 1, `expected one status patch, got ${kinds(d).join(',')}`);
  return p[0]!.status;
};
const events = (d: Decision) => d.actions.filter((a): a is Of<'recordEvent'> => a.kind === 'recordEvent');
const metrics = (d: Decision): MetricObservation[] =>
  d.actions.flatMap((a) => (a.kind === 'observeMetric' ? [a.observation] : []));
const failureKinds = (d: Decision) => metrics(d).flatMap((m) => (m.metric === 'runFailure' ? [m.kind] : []));
const sinkActions = (d: Decision) =>
  d.actions.filter((a): a is Of<'notifySinks'> => a.kind === 'notifySinks');
const refOf = (a: Agent): AgentRef => ({
  namespace: a.metadata.namespace,
  name: a.metadata.name,
  uid: a.metadata.uid,
});
const sourceOf = (a: Agent): SinkSource => ({
  agent: a.metadata.name,
  station: a.spec.stationRef,
  namespace: a.metadata.namespace,
  ...(a.spec.taskId !== undefined ? { task: a.spec.taskId } : {}),
});
const lifecycle = (
  phase: 'agent' | 'batch',
  status: 'started' | 'running' | 'succeeded' | 'failed',
  extra: { reason?: string; exitCode?: number } = {},
): SinkEvent => ({ kind: 'lifecycle', phase, status, ...extra });

/** The condition `type` of a patch, as {status, reason, message}. */
function cond(st: AgentStatusPatch, type: string) {
  const c = findCondition(st.conditions, type);
  return c === undefined ? undefined : { status: c.status, reason: c.reason, message: c.message };
}

/** Keys of a status patch other than conditions and observedGeneration. */
const fields = (st: AgentStatusPatch) =>
  Object.keys(st)
    .filter((k) => k !== 'conditions' && k !== 'observedGeneration')
    .sort();

/** Invariants every batch decision must satisfy. */
function checkInvariants(s: Snapshot, d: Decision): void {
  const ps = patches(d);
  assert.ok(ps.length <= 1, `two status patches in one decision: ${kinds(d).join(',')}`);
  for (const p of ps) {
    assert.equal(p.resourceVersion, s.agent.metadata.resourceVersion, 'every patch carries the Agent rv');
    assert.deepEqual(p.ref, refOf(s.agent));
    assert.equal(p.status.observedGeneration, s.agent.metadata.generation);
    if (p.status.phase === 'Failed') {
      assert.equal(findCondition(p.status.conditions, 'Failed')?.status, 'True');
      assert.equal(findCondition(p.status.conditions, 'Ready')?.status, 'False');
      assert.ok(p.status.completedAt, 'terminal patches set completedAt');
      if (p.status.exitCode !== undefined) assert.notEqual(p.status.exitCode, 0);
    }
    if (p.status.phase === 'Succeeded') {
      assert.equal(p.status.exitCode, 0);
      assert.equal(findCondition(p.status.conditions, 'Complete')?.status, 'True');
    }
  }
  // Sinks hear of a transition only once its patch succeeded: every notifySinks follows the patch at once.
  d.actions.forEach((a, i) => {
    if (a.kind === 'notifySinks') assert.equal(d.actions[i - 1]?.kind, 'patchStatus', 'sinks right after');
  });
  if (d.needs !== undefined) assert.equal(d.actions.length, 0, 'an incomplete decision has no actions');
  // A fallback Job comes with its input ConfigMap right before it (issue 10 §1), and never one without the other.
  const k = kinds(d);
  assert.equal(
    k.filter((x) => x === 'createRunInput').length,
    k.filter((x) => x === 'createJob').length,
    'one input ConfigMap per Job',
  );
  d.actions.forEach((a, i) => {
    if (a.kind !== 'createJob') return;
    const input = d.actions[i - 1];
    assert.ok(input?.kind === 'createRunInput', `the input ConfigMap right before its Job: ${k.join(',')}`);
    assert.equal(input.configMap.metadata.name, `${a.job.metadata.name}-input`);
    assert.deepEqual(input.configMap.metadata.ownerReferences, a.job.metadata.ownerReferences);
  });
  for (const a of d.actions) {
    if (a.kind === 'addFinalizer') assert.equal(a.resourceVersion, s.agent.metadata.resourceVersion);
    if (a.kind === 'addFinalizer' || a.kind === 'removeFinalizer') {
      assert.equal(a.finalizer, BATCH_FINALIZER);
      assert.deepEqual(a.ref, refOf(s.agent));
    }
  }
}

function run(s: Snapshot, now: Date = NOW, build: JobBuilder = recordingBuilder()): Decision {
  const d = decide(s, now, build);
  checkInvariants(s, d);
  return d;
}

// ------------------------------------------------------------------------------------------------ Pending

describe('batch Pending: refusals before admission', () => {
  it('BATCH disabled → Failed `batch execution is disabled on this controller`, BatchDisabled, build_error', () => {
    const a = bagent('a');
    const s = snap(a, { options: { batch: { enabled: false, pollMs: 60000 } } });
    const d = run(s);
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent', 'observeMetric', 'observeMetric']);
    const st = onlyPatch(d);
    assert.deepEqual(fields(st), ['completedAt', 'failureReason', 'phase']);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, 'batch execution is disabled on this controller');
    assert.equal(st.failureReason, FAILURE_BATCH_DISABLED);
    assert.equal(st.completedAt, NOW.toISOString());
    const message =
      'batch execution is disabled on this controller: set BATCH_ENABLED=true (kustomize component deploy/components/batch)';
    assert.deepEqual(cond(st, 'Failed'), { status: 'True', reason: 'BatchDisabled', message });
    assert.deepEqual(cond(st, 'Ready'), { status: 'False', reason: 'BatchDisabled', message });
    assert.deepEqual(events(d), [
      { kind: 'recordEvent', ref: refOf(a), type: 'Warning', reason: REASON.batchDisabled, message },
    ]);
    assert.deepEqual(metrics(d), [
      { metric: 'runCompleted', phase: 'Failed' },
      { metric: 'runFailure', kind: 'build_error' },
    ]);
    assert.ok(!kinds(d).includes('addFinalizer'), 'no finalizer');
    assert.equal(d.admits, undefined);
    assert.equal(d.submissionRecord, undefined);
  });

  it('BATCH disabled is decided before the recipe, the credentials and admission', () => {
    const a = bagent('a');
    const d = run(
      snap(a, {
        options: { batch: { enabled: false, pollMs: 60000 } },
        definition: recipe({ resources: { repos: [{ name: 'r', url: 'https://x/r' }] } }),
        credentials: undefined,
        station: station('stn', { maxConcurrentRuns: 1 }),
        siblings: [running('busy'), a],
      }),
    );
    assert.equal(onlyPatch(d).failureReason, FAILURE_BATCH_DISABLED);
  });

  const unsupported: readonly (readonly [string, Record<string, unknown>, string | undefined, string])[] = [
    [
      'resources.repos',
      { resources: { repos: [{ name: 'r', url: 'https://github.com/o/r' }] } },
      undefined,
      'batch execution cannot use resources.repos',
    ],
    [
      'resources.skills',
      { resources: { skills: ['pdf'] } },
      undefined,
      'batch execution cannot use resources.skills',
    ],
    [
      'resources.mcp_servers',
      { resources: { mcp_servers: [{ name: 'm', transport: 'http', url: 'http://m/' }] } },
      undefined,
      'batch execution cannot use resources.mcp_servers',
    ],
    [
      'resources.conversation',
      { resources: { conversation: { id: 'c' } } },
      undefined,
      'batch execution cannot use resources.conversation',
    ],
    ['tool_config', { tool_config: { command: 'x' } }, undefined, 'batch execution cannot use tool_config'],
    [
      'output.watch',
      { output: { watch: [{ event: 'report', path: 'r.md' }] } },
      undefined,
      'batch execution cannot use output.watch',
    ],
    ['the exec model (recipe)', { model: 'exec' }, undefined, 'batch execution cannot use the exec model'],
    ['the exec model (Agent)', {}, 'exec', 'batch execution cannot use the exec model'],
    [
      'an opencode model (recipe)',
      { model: 'opencode/openai/gpt-5' },
      undefined,
      'batch execution cannot use model opencode/openai/gpt-5: its vendor has no batch API',
    ],
    [
      'an opencode model (Agent overrides a valid recipe model)',
      { model: 'claude-opus-5-5' },
      'opencode/x',
      'batch execution cannot use model opencode/x: its vendor has no batch API',
    ],
  ];
  for (const [name, spec, model, reason] of unsupported) {
    it(`unsupported ${name} → Failed naming it (BatchUnsupported, build_error), before the credentials`, () => {
      const a = bagent('a', model !== undefined ? { model } : {});
      const d = run(snap(a, { definition: recipe(spec), credentials: undefined }));
      assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent', 'observeMetric', 'observeMetric']);
      const st = onlyPatch(d);
      assert.equal(st.phase, 'Failed');
      assert.equal(st.failureReason, reason);
      assert.deepEqual(cond(st, 'Failed'), { status: 'True', reason: 'BatchUnsupported', message: reason });
      assert.deepEqual(events(d), [
        { kind: 'recordEvent', ref: refOf(a), type: 'Warning', reason: 'BatchUnsupported', message: reason },
      ]);
      assert.deepEqual(failureKinds(d), ['build_error']);
      assert.equal(d.needs, undefined);
      assert.equal(d.admits, undefined);
    });
  }

  it('credentials unknown (absent or explicit) → needs credentials, no actions', () => {
    for (const credentials of [undefined, { kind: 'unknown' as const }]) {
      const d = run(snap(bagent('a'), { credentials }));
      assert.deepEqual(d, { actions: [], needs: 'credentials' });
    }
  });

  it('credentials missing → Failed with the message (BatchCredentialsMissing, build_error), no finalizer', () => {
    const a = bagent('a');
    const message = 'Secret agent-secrets has no key ANTHROPIC_API_KEY';
    const d = run(snap(a, { credentials: { kind: 'missing', message } }));
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent', 'observeMetric', 'observeMetric']);
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, message);
    assert.equal(st.exitCode, undefined);
    assert.deepEqual(cond(st, 'Failed'), { status: 'True', reason: 'BatchCredentialsMissing', message });
    assert.deepEqual(events(d), [
      { kind: 'recordEvent', ref: refOf(a), type: 'Warning', reason: 'BatchCredentialsMissing', message },
    ]);
    assert.deepEqual(failureKinds(d), ['build_error']);
    assert.equal(d.admits, undefined);
  });

  it('credentials are checked before admission: missing fails even at the Station limit', () => {
    const a = bagent('a');
    const d = run(
      snap(a, {
        credentials: { kind: 'missing', message: 'm' },
        station: station('stn', { maxConcurrentRuns: 1 }),
        siblings: [running('busy'), a],
      }),
    );
    assert.equal(onlyPatch(d).phase, 'Failed');
  });
});

describe('batch Pending: admission, finalizer, submission record', () => {
  it('at the Station limit → Queued exactly as a Job run would be, no finalizer', () => {
    const a = bagent('a', { created: 20 });
    const over = { station: station('stn', { maxConcurrentRuns: 1 }), siblings: [running('busy'), a] };
    const d = run(snap(a, over));
    const message = 'Waiting for a free run slot: Station stn allows 1 run at once (concurrencyPolicy Allow)';
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
    const st = onlyPatch(d);
    assert.deepEqual(fields(st), ['phase']);
    assert.equal(st.phase, 'Pending');
    assert.deepEqual(cond(st, 'Ready'), { status: 'False', reason: 'Queued', message });
    assert.deepEqual(events(d), [
      { kind: 'recordEvent', ref: refOf(a), type: 'Normal', reason: 'Queued', message },
    ]);
    assert.equal(d.admits, undefined);
    assert.equal(d.submissionRecord, undefined);
    // The same decision as the Job recipe gets.
    const asJob = decide(snap(a, { ...over, definition: definition() }), NOW, recordingBuilder());
    assert.deepEqual(d, asJob);
  });

  it('at the Station limit and already announced as queued → nothing', () => {
    const first = run(
      snap(bagent('a'), { station: station('stn', { maxConcurrentRuns: 1 }), siblings: [running('busy')] }),
    );
    const conditions = onlyPatch(first).conditions;
    const a = bagent('a', { status: { phase: 'Pending', conditions } });
    const d = run(
      snap(a, { station: station('stn', { maxConcurrentRuns: 1 }), siblings: [running('busy'), a] }),
    );
    assert.deepEqual(d, { actions: [] });
  });

  it('admitted without the finalizer → exactly one addFinalizer (first: true), admits', () => {
    const a = bagent('a', { rv: '42' });
    const d = run(snap(a));
    assert.deepEqual(d.actions, [
      { kind: 'addFinalizer', ref: refOf(a), resourceVersion: '42', finalizer: BATCH_FINALIZER, first: true },
    ]);
    assert.equal(d.admits, true);
    assert.equal(d.submissionRecord, undefined);
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
  });

  it('admitted with other finalizers → addFinalizer with first: false', () => {
    const a = bagent('a', { finalizers: ['example.com/keep'] });
    const d = run(snap(a));
    assert.deepEqual(d.actions, [
      {
        kind: 'addFinalizer',
        ref: refOf(a),
        resourceVersion: 'rv-a',
        finalizer: BATCH_FINALIZER,
        first: false,
      },
    ]);
    assert.equal(d.admits, true);
  });

  const records: readonly (readonly [string, BatchProvider])[] = [
    ['claude-opus-5-5', 'anthropic'],
    ['gpt-5', 'openai'],
    ['o3', 'openai'],
    ['gemini-2.5-pro', 'gemini'],
  ];
  for (const [model, provider] of records) {
    it(`admitted with the finalizer → the submission record (Running, batchProvider ${provider}, startedAt)`, () => {
      const a = bagent('a', { finalizers: [BATCH_FINALIZER], model });
      const d = run(snap(a));
      assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
      assert.deepEqual(d.actions[1], {
        kind: 'recordEvent',
        ref: { namespace: a.metadata.namespace, name: a.metadata.name, uid: a.metadata.uid },
        type: 'Normal',
        reason: 'Submitting',
        message: `Submitting the prompt to the ${provider} batch API`,
      });
      const st = onlyPatch(d);
      assert.deepEqual(fields(st), ['batchProvider', 'phase', 'startedAt']);
      assert.equal(st.phase, 'Running');
      assert.equal(st.batchProvider, provider);
      assert.equal(st.startedAt, NOW.toISOString());
      assert.equal(st.batchId, undefined, 'no batchId in the record');
      assert.deepEqual(cond(st, 'Ready'), {
        status: 'False',
        reason: 'Submitting',
        message: `Submitting the prompt to the ${provider} batch API`,
      });
      assert.equal(d.submissionRecord, true);
      assert.equal(d.admits, true);
      assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
    });
  }

  it('the recipe model decides the provider when the Agent names none', () => {
    const a = bagent('a', { finalizers: [BATCH_FINALIZER] });
    const d = run(snap(a, { definition: recipe({ model: 'gemini-2.5-flash' }) }));
    assert.equal(onlyPatch(d).batchProvider, 'gemini');
  });

  it('Replace at the limit → deletes the oldest Running holder first, even a batch run, then the finalizer', () => {
    const a = bagent('a', { created: 30 });
    const oldBatch = recorded('old', { rv: '5', batchId: 'msgbatch_old', started: 2, created: 1 });
    const young = running('young', { rv: '20', started: 20, created: 19 });
    const d = run(
      snap(a, {
        station: station('stn', { concurrencyPolicy: 'Replace' }),
        siblings: [young, oldBatch, a],
      }),
    );
    // Replace allows one run: both holders go, oldest first.
    const reason = preemptedMessage('a', 'stn');
    const victimRows = (v: Agent): Action[] => [
      {
        kind: 'deleteAgent',
        ref: refOf(v),
        resourceVersion: v.metadata.resourceVersion,
        purpose: 'preempt',
        reason,
      },
      { kind: 'recordEvent', ref: refOf(v), type: 'Warning', reason: 'Preempted', message: reason },
      { kind: 'observeMetric', observation: { metric: 'runFailure', kind: 'preempted' } },
      {
        kind: 'recordEvent',
        ref: refOf(a),
        type: 'Normal',
        reason: 'Preempting',
        message: `Deleted Agent ${v.metadata.name} to make room (Station stn, concurrencyPolicy Replace)`,
      },
    ];
    assert.deepEqual(d.actions, [
      ...victimRows(oldBatch),
      ...victimRows(young),
      {
        kind: 'addFinalizer',
        ref: refOf(a),
        resourceVersion: 'rv-a',
        finalizer: BATCH_FINALIZER,
        first: true,
      },
    ]);
    assert.equal(d.admits, true);
  });

  it('Replace at the limit with one batch holder → it is deleted (rv precondition) before the finalizer', () => {
    const a = bagent('a', { created: 30 });
    const holder = recorded('holder', { rv: '77', batchId: 'msgbatch_h' });
    const d = run(
      snap(a, { station: station('stn', { concurrencyPolicy: 'Replace' }), siblings: [holder, a] }),
    );
    assert.deepEqual(kinds(d), [
      'deleteAgent',
      'recordEvent',
      'observeMetric',
      'recordEvent',
      'addFinalizer',
    ]);
    const del = d.actions[0] as Of<'deleteAgent'>;
    assert.deepEqual(del.ref, refOf(holder));
    assert.equal(del.resourceVersion, '77');
    assert.equal(del.purpose, 'preempt');
    assert.equal(d.admits, true);
  });

  it('Replace at the limit with the finalizer held → victims first, then the submission record', () => {
    const a = bagent('a', { created: 30, finalizers: [BATCH_FINALIZER] });
    const holder = running('holder', { rv: '9' });
    const d = run(
      snap(a, { station: station('stn', { concurrencyPolicy: 'Replace' }), siblings: [holder, a] }),
    );
    assert.deepEqual(kinds(d), [
      'deleteAgent',
      'recordEvent',
      'observeMetric',
      'recordEvent',
      'patchStatus',
      'recordEvent',
    ]);
    assert.equal(onlyPatch(d).phase, 'Running');
    assert.equal(d.submissionRecord, true);
    assert.equal(d.admits, true);
  });
});

// ------------------------------------------------------------------------------------------------ Running, no batchId

describe('batch Running without a batchId: submission', () => {
  it('submission unknown (absent or explicit) → needs batchLookup', () => {
    for (const submission of [undefined, { kind: 'unknown' as const }]) {
      assert.deepEqual(run(snap(recorded('a'), { submission })), { actions: [], needs: 'batchLookup' });
    }
  });

  it('none → exactly one submitBatch with the provider, the Secret key and the request', () => {
    const a = recorded('a', { parameters: { thing: 'the review' } });
    const d = run(snap(a, { submission: { kind: 'none' } }));
    assert.deepEqual(d.actions, [
      {
        kind: 'submitBatch',
        ref: refOf(a),
        provider: 'anthropic',
        secretKey: 'ANTHROPIC_API_KEY',
        request: {
          customId: 'run-uid-a',
          label: 'team/a',
          model: 'claude-opus-5-5',
          prompt: 'Do the review',
          maxTokens: 16000,
        },
      },
    ]);
    assert.equal(d.needs, undefined);
  });

  it('none, OpenAI with a mapped key, maxTokens and a schema → the request carries them', () => {
    const a = recorded('a', { provider: 'openai', model: 'gpt-5', parameters: { thing: 'X' } });
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } } };
    const def = recipe({
      resources: { secrets: [{ name: 'OPENAI_API_KEY', ref: 'team-openai' }] },
      output: { schema },
      batch: { maxTokens: 777 },
    });
    const d = run(snap(a, { definition: def, submission: { kind: 'none' } }));
    assert.deepEqual(d.actions, [
      {
        kind: 'submitBatch',
        ref: refOf(a),
        provider: 'openai',
        secretKey: 'team-openai',
        request: {
          customId: 'run-uid-a',
          label: 'team/a',
          model: 'gpt-5',
          prompt: 'Do X',
          maxTokens: 777,
          schema,
        },
      },
    ]);
  });

  it('none, Gemini → submitBatch to gemini with GEMINI_API_KEY', () => {
    const a = recorded('a', { provider: 'gemini' });
    const d = run(snap(a, { definition: recipe({ model: 'gemini-2.5-pro' }), submission: { kind: 'none' } }));
    const submit = d.actions[0] as Of<'submitBatch'>;
    assert.deepEqual(kinds(d), ['submitBatch']);
    assert.equal(submit.provider, 'gemini');
    assert.equal(submit.secretKey, 'GEMINI_API_KEY');
    assert.equal(submit.request.model, 'gemini-2.5-pro');
  });

  it('lookedUp absent → submitBatch (as none)', () => {
    const a = recorded('a');
    const absent = run(snap(a, { submission: { kind: 'lookedUp', result: { kind: 'absent' } } }));
    const none = run(snap(a, { submission: { kind: 'none' } }));
    assert.deepEqual(kinds(absent), ['submitBatch']);
    assert.deepEqual(absent, none);
  });

  it('lookedUp undecided → no actions, re-check after the poll period, never a submit', () => {
    const d = run(
      snap(recorded('a'), {
        submission: { kind: 'lookedUp', result: { kind: 'undecided', candidates: ['msgbatch_x'] } },
        options: { batch: { enabled: true, pollMs: 45000 } },
      }),
    );
    assert.deepEqual(d, { actions: [], requeueAfterMs: 45000 });
  });

  it('submitted id → batchId patch, Started, runQueue; no sinks without an http sink', () => {
    // Record written and create answered in the same instant, as in the normal path.
    const a = recorded('a', { created: 5, started: 60 });
    const d = run(snap(a, { submission: { kind: 'submitted', id: BATCH_ID } }));
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent', 'observeMetric']);
    const st = onlyPatch(d);
    assert.deepEqual(fields(st), ['batchId', 'batchProvider', 'phase']);
    assert.equal(st.phase, 'Running');
    assert.equal(st.batchId, BATCH_ID);
    assert.equal(st.batchProvider, 'anthropic');
    assert.deepEqual(cond(st, 'Ready'), {
      status: 'False',
      reason: 'Running',
      message: `Batch ${BATCH_ID} is in progress at anthropic`,
    });
    assert.deepEqual(events(d), [
      {
        kind: 'recordEvent',
        ref: refOf(a),
        type: 'Normal',
        reason: 'Started',
        message: `Submitted batch ${BATCH_ID} to anthropic`,
      },
    ]);
    assert.deepEqual(metrics(d), [{ metric: 'runQueue', seconds: 55 }]);
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
  });

  it('submitted id with an http sink → notifySinks `lifecycle agent started` right after the patch', () => {
    const a = recorded('a', { taskId: 'T-7' });
    const d = run(snap(a, { definition: withSinks(), submission: { kind: 'submitted', id: BATCH_ID } }));
    assert.deepEqual(kinds(d), ['patchStatus', 'notifySinks', 'recordEvent', 'observeMetric']);
    assert.deepEqual(d.actions[1], {
      kind: 'notifySinks',
      ref: refOf(a),
      sinks: SINKS,
      source: { agent: 'a', station: 'stn', namespace: NS, task: 'T-7' },
      events: [lifecycle('agent', 'started')],
    });
  });

  it('sinks: stdout/file sinks and http sinks without a url are not notified; several http sinks are', () => {
    const a = recorded('a');
    const noHttp = recipe({
      output: {
        sinks: [
          { type: 'stdout' },
          { type: 'file', path: '/tmp/e' },
          { type: 'http' },
          { type: 'http', url: '' },
        ],
      },
    });
    const d = run(snap(a, { definition: noHttp, submission: { kind: 'submitted', id: BATCH_ID } }));
    assert.deepEqual(sinkActions(d), []);
    const two = recipe({
      output: {
        sinks: [
          { type: 'http', url: 'http://one/' },
          { type: 'http', url: 'http://two/', headers_secret: '' },
        ],
      },
    });
    const d2 = run(snap(a, { definition: two, submission: { kind: 'submitted', id: BATCH_ID } }));
    assert.deepEqual(sinkActions(d2), [
      {
        kind: 'notifySinks',
        ref: refOf(a),
        sinks: [{ url: 'http://one/' }, { url: 'http://two/' }],
        source: sourceOf(a),
        events: [lifecycle('agent', 'started')],
      },
    ]);
  });

  it('rejected → Failed `batch rejected by <provider>: …`, exitCode 1, batch_failed', () => {
    const a = recorded('a', { provider: 'openai', model: 'gpt-5', started: 10 });
    const message = 'invalid_request_error: model not found';
    const d = run(snap(a, { definition: withSinks(), submission: { kind: 'rejected', message } }));
    assert.deepEqual(kinds(d), [
      'patchStatus',
      'notifySinks',
      'recordEvent',
      'observeMetric',
      'observeMetric',
      'observeMetric',
    ]);
    const st = onlyPatch(d);
    const failureReason = `batch rejected by openai: ${message}`;
    assert.equal(failureReason, failureBatchRejected('openai', message));
    assert.deepEqual(fields(st), ['completedAt', 'exitCode', 'failureReason', 'output', 'phase']);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.exitCode, 1);
    assert.equal(st.output, '');
    assert.equal(st.failureReason, failureReason);
    assert.equal(st.completedAt, NOW.toISOString());
    assert.deepEqual(cond(st, 'Failed'), { status: 'True', reason: 'BatchRejected', message: failureReason });
    assert.deepEqual(d.actions[1], {
      kind: 'notifySinks',
      ref: refOf(a),
      sinks: SINKS,
      source: sourceOf(a),
      events: [lifecycle('agent', 'failed', { exitCode: 1 })],
    });
    assert.deepEqual(events(d), [
      {
        kind: 'recordEvent',
        ref: refOf(a),
        type: 'Warning',
        reason: 'BatchRejected',
        message: failureReason,
      },
    ]);
    assert.deepEqual(metrics(d), [
      { metric: 'runCompleted', phase: 'Failed', exitCode: 1 },
      { metric: 'runDuration', phase: 'Failed', seconds: 50 },
      { metric: 'runFailure', kind: 'batch_failed' },
    ]);
  });

  it('lookedUp found with duplicates → batchId patch, Started, then a DuplicateBatch Warning + cleanupBatch each', () => {
    const a = recorded('a', { created: 0, started: 10 });
    const def = recipe({ resources: { secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'team-key' }] } });
    const d = run(
      snap(a, {
        definition: def,
        submission: {
          kind: 'lookedUp',
          result: { kind: 'found', id: BATCH_ID, duplicates: ['msgbatch_02', 'msgbatch_03'] },
        },
      }),
    );
    const ref = refOf(a);
    const st = onlyPatch(d);
    assert.equal(st.batchId, BATCH_ID);
    assert.equal(st.phase, 'Running');
    const dup = (id: string): Action[] => [
      {
        kind: 'recordEvent',
        ref,
        type: 'Warning',
        reason: 'DuplicateBatch',
        message: `Batch ${id} at anthropic was submitted for this run too; deleting it`,
      },
      { kind: 'cleanupBatch', ref, provider: 'anthropic', secretKey: 'team-key', batchId: id },
    ];
    // The queue-time value of an adopted batch is not pinned here (see the report: creation → adoption).
    const queue = d.actions[2];
    assert.ok(queue?.kind === 'observeMetric' && queue.observation.metric === 'runQueue');
    assert.deepEqual(
      [d.actions[1], ...d.actions.slice(3)],
      [
        {
          kind: 'recordEvent',
          ref,
          type: 'Normal',
          reason: 'Started',
          message: `Found batch ${BATCH_ID} at anthropic submitted before a restart; adopted it`,
        },
        ...dup('msgbatch_02'),
        ...dup('msgbatch_03'),
      ],
    );
    assert.deepEqual(kinds(d), [
      'patchStatus',
      'recordEvent',
      'observeMetric',
      'recordEvent',
      'cleanupBatch',
      'recordEvent',
      'cleanupBatch',
    ]);
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
  });

  it('lookedUp found without duplicates → adopted, no cleanup', () => {
    const d = run(
      snap(recorded('a'), {
        submission: { kind: 'lookedUp', result: { kind: 'found', id: BATCH_ID, duplicates: [] } },
      }),
    );
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent', 'observeMetric']);
    assert.equal(onlyPatch(d).batchId, BATCH_ID);
  });

  it('no batchId past the deadline → the timeout, naming the submission', () => {
    const a = recorded('a', { started: 0 });
    const d = run(
      snap(a, { definition: recipe({ batch: { timeoutMinutes: 1 } }), submission: { kind: 'none' } }),
    );
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, FAILURE_BATCH_TIMEOUT);
    assert.equal(
      cond(st, 'Failed')?.message,
      'The submission to anthropic did not finish within 1 minute; the batch is cancelled',
    );
    assert.ok(!kinds(d).includes('submitBatch'));
  });
});

// ------------------------------------------------------------------------------------------------ Running with batchId

describe('batch Running with a batchId: poll, complete, time out', () => {
  const lines = [
    JSON.stringify({ type: 'system', subtype: 'init', session_id: 'uid-a' }),
    JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: 'the answer' }] } }),
    JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: 'the answer' }),
  ];
  const ended = (id = BATCH_ID) => ({ kind: 'ended', id, outcome: { kind: 'succeeded', lines } }) as const;

  it('not polled yet or in progress → no actions, requeue at most requeueMs and at most the time to the deadline', () => {
    const a = recorded('a', { batchId: BATCH_ID });
    for (const batchState of [undefined, { kind: 'inProgress' as const, id: BATCH_ID }]) {
      const d = run(snap(a, { batchState }));
      assert.deepEqual(d, { actions: [], requeueAfterMs: OPTIONS.requeueMs });
    }
    // startedAt 10 s, timeout 1 minute: the deadline is at 70 s, 10 s from now.
    const near = run(snap(a, { definition: recipe({ batch: { timeoutMinutes: 1 } }) }));
    assert.deepEqual(near, { actions: [], requeueAfterMs: 10_000 });
  });

  it('in progress with less than a second to the deadline → requeue no later than the deadline', () => {
    const a = recorded('a', { batchId: BATCH_ID, started: 10 });
    const d = decide(snap(a, { definition: recipe({ batch: { timeoutMinutes: 1 } }) }), at(69.5));
    assert.deepEqual(d.actions, []);
    assert.ok((d.requeueAfterMs ?? Infinity) <= 500, `requeue ${d.requeueAfterMs} > 500 ms to the deadline`);
  });

  it('an ended state of a different batch id is ignored', () => {
    const a = recorded('a', { batchId: BATCH_ID });
    const d = run(snap(a, { batchState: ended('msgbatch_other') }));
    assert.deepEqual(d, { actions: [], requeueAfterMs: OPTIONS.requeueMs });
  });

  it('ended succeeded → Succeeded, exitCode 0, output = the lines joined by \\n, then the history sweep', () => {
    const a = recorded('a', { batchId: BATCH_ID, started: 10 });
    const st0 = station('stn', { successfulRunsHistoryLimit: 1 });
    const older = finished('s-older', 'Succeeded', 20);
    const old = finished('s-old', 'Succeeded', 30);
    const d = run(snap(a, { station: st0, siblings: [old, older, a], batchState: ended() }));
    assert.deepEqual(kinds(d), [
      'patchStatus',
      'recordEvent',
      'observeMetric',
      'observeMetric',
      'deleteAgent',
      'deleteAgent',
    ]);
    const st = onlyPatch(d);
    assert.deepEqual(fields(st), ['completedAt', 'exitCode', 'output', 'phase', 'result']);
    assert.equal(st.phase, 'Succeeded');
    assert.equal(st.exitCode, 0);
    assert.equal(st.output, lines.join('\n'));
    assert.equal(st.result, 'the answer', "the result line's text");
    assert.equal(st.completedAt, NOW.toISOString());
    const message = `Batch ${BATCH_ID} at anthropic completed`;
    assert.deepEqual(cond(st, 'Ready'), { status: 'True', reason: 'Succeeded', message });
    assert.deepEqual(cond(st, 'Complete'), { status: 'True', reason: 'Succeeded', message });
    assert.deepEqual(events(d), [
      { kind: 'recordEvent', ref: refOf(a), type: 'Normal', reason: 'Succeeded', message },
    ]);
    assert.deepEqual(metrics(d), [
      { metric: 'runCompleted', phase: 'Succeeded', exitCode: 0 },
      { metric: 'runDuration', phase: 'Succeeded', seconds: 50 },
    ]);
    const prunes = d.actions.slice(4) as Of<'deleteAgent'>[];
    assert.deepEqual(
      prunes.map((p) => [p.ref.name, p.resourceVersion, p.purpose]),
      [
        ['s-old', 'rv-s-old', 'prune'],
        ['s-older', 'rv-s-older', 'prune'],
      ],
    );
  });

  it('ended succeeded with an http sink → the selected lines then `agent succeeded exitCode 0`, right after the patch, before pruning', () => {
    const a = recorded('a', { batchId: BATCH_ID });
    const st0 = station('stn', { successfulRunsHistoryLimit: 0 });
    const old = finished('s-old', 'Succeeded', 30);
    const d = run(
      snap(a, {
        definition: withSinks(),
        station: st0,
        siblings: [old, a],
        batchState: ended(),
      }),
    );
    assert.deepEqual(kinds(d), [
      'patchStatus',
      'notifySinks',
      'recordEvent',
      'observeMetric',
      'observeMetric',
      'deleteAgent',
    ]);
    assert.deepEqual(d.actions[1], {
      kind: 'notifySinks',
      ref: refOf(a),
      sinks: SINKS,
      source: sourceOf(a),
      events: [
        ...lines.map((line): SinkEvent => ({ kind: 'line', line })),
        lifecycle('agent', 'succeeded', { exitCode: 0 }),
      ],
    });
  });

  it('output.select filters what the sinks get, never status.output', () => {
    const a = recorded('a', { batchId: BATCH_ID });
    const def = withSinks({ output: { select: [{ event: 'result' }] } });
    const d = run(snap(a, { definition: def, batchState: ended() }));
    assert.equal(onlyPatch(d).output, lines.join('\n'));
    assert.deepEqual(sinkActions(d)[0]?.events, [
      { kind: 'line', line: lines[2] },
      lifecycle('agent', 'succeeded', { exitCode: 0 }),
    ]);
  });

  it('status.output is capped by maxOutputBytes (the sinks still get every line)', () => {
    const a = recorded('a', { batchId: BATCH_ID });
    const small = ['aaaa', 'bbbb', 'cccc'];
    const d = run(
      snap(a, {
        definition: withSinks(),
        options: { maxOutputBytes: 9 },
        batchState: { kind: 'ended', id: BATCH_ID, outcome: { kind: 'succeeded', lines: small } },
      }),
    );
    // 'aaaa\nbbbb\ncccc' is 14 bytes: the first 5 are cut and named in the marker.
    assert.equal(onlyPatch(d).output, '...[truncated 5 bytes]...\nbbbb\ncccc');
    assert.deepEqual(sinkActions(d)[0]?.events, [
      ...small.map((line): SinkEvent => ({ kind: 'line', line })),
      lifecycle('agent', 'succeeded', { exitCode: 0 }),
    ]);
  });

  it('ended failed → Failed, failureReason = the outcome message, exitCode 1, batch_failed', () => {
    const a = recorded('a', { batchId: BATCH_ID, provider: 'gemini' });
    const message = 'safety: finishReason SAFETY';
    const failLines = [JSON.stringify({ type: 'result', status: 'error' })];
    const d = run(
      snap(a, {
        definition: withSinks({ model: 'gemini-2.5-pro' }),
        batchState: { kind: 'ended', id: BATCH_ID, outcome: { kind: 'failed', lines: failLines, message } },
      }),
    );
    assert.deepEqual(kinds(d), [
      'patchStatus',
      'notifySinks',
      'recordEvent',
      'observeMetric',
      'observeMetric',
      'observeMetric',
    ]);
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.exitCode, 1);
    assert.equal(st.failureReason, message);
    assert.equal(st.output, failLines[0]);
    const text = `Batch ${BATCH_ID} at gemini failed: ${message}`;
    assert.deepEqual(cond(st, 'Failed'), { status: 'True', reason: 'BatchFailed', message: text });
    assert.deepEqual(events(d), [
      { kind: 'recordEvent', ref: refOf(a), type: 'Warning', reason: 'BatchFailed', message: text },
    ]);
    assert.deepEqual(sinkActions(d)[0]?.events, [
      { kind: 'line', line: failLines[0] },
      lifecycle('agent', 'failed', { exitCode: 1 }),
    ]);
    assert.deepEqual(failureKinds(d), ['batch_failed']);
  });

  it('timeout (now = startedAt + timeoutMinutes) with onTimeout fail → Failed `batch timed out`, batch_timeout', () => {
    const a = recorded('a', { batchId: BATCH_ID, started: 0 });
    const def = withSinks({ batch: { timeoutMinutes: 1, onTimeout: 'fail' } });
    const d = run(snap(a, { definition: def, batchState: { kind: 'inProgress', id: BATCH_ID } }), at(60));
    assert.deepEqual(kinds(d), [
      'patchStatus',
      'notifySinks',
      'recordEvent',
      'observeMetric',
      'observeMetric',
      'observeMetric',
    ]);
    const st = onlyPatch(d);
    assert.deepEqual(fields(st), ['completedAt', 'exitCode', 'failureReason', 'output', 'phase']);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, 'batch timed out');
    assert.equal(st.exitCode, 1);
    assert.equal(st.output, '');
    const message = `Batch ${BATCH_ID} at anthropic did not finish within 1 minute; the batch is cancelled`;
    assert.deepEqual(cond(st, 'Failed'), { status: 'True', reason: 'BatchTimedOut', message });
    assert.deepEqual(d.actions[1], {
      kind: 'notifySinks',
      ref: refOf(a),
      sinks: SINKS,
      source: sourceOf(a),
      events: [
        lifecycle('batch', 'failed', { reason: 'batch_timeout' }),
        lifecycle('agent', 'failed', { exitCode: 1 }),
      ],
    });
    assert.deepEqual(events(d), [
      { kind: 'recordEvent', ref: refOf(a), type: 'Warning', reason: 'BatchTimedOut', message },
    ]);
    assert.deepEqual(metrics(d), [
      { metric: 'runCompleted', phase: 'Failed', exitCode: 1 },
      { metric: 'runDuration', phase: 'Failed', seconds: 60 },
      { metric: 'runFailure', kind: 'batch_timeout' },
    ]);
  });

  it('one millisecond before the deadline → no timeout yet', () => {
    const a = recorded('a', { batchId: BATCH_ID, started: 0 });
    const d = run(
      snap(a, { definition: recipe({ batch: { timeoutMinutes: 1 } }) }),
      new Date(at(60).getTime() - 1),
    );
    assert.deepEqual(d.actions, []);
  });

  it('the default timeout is 1440 minutes (an unknown onTimeout reads as fail)', () => {
    const a = recorded('a', { batchId: BATCH_ID, started: 0 });
    const def = recipe({ batch: { onTimeout: 'explode' } });
    assert.deepEqual(run(snap(a, { definition: def }), at(1440 * 60 - 1)).actions, []);
    const d = run(snap(a, { definition: def }), at(1440 * 60));
    const st = onlyPatch(d);
    assert.equal(st.failureReason, FAILURE_BATCH_TIMEOUT);
    assert.equal(
      cond(st, 'Failed')?.message,
      `Batch ${BATCH_ID} at anthropic did not finish within 1440 minutes; the batch is cancelled`,
    );
  });

  it('an ended state of a different batch id past the deadline → the timeout, not a completion', () => {
    const a = recorded('a', { batchId: BATCH_ID, started: 0 });
    const d = run(
      snap(a, { definition: recipe({ batch: { timeoutMinutes: 1 } }), batchState: ended('msgbatch_other') }),
      at(61),
    );
    assert.equal(onlyPatch(d).failureReason, FAILURE_BATCH_TIMEOUT);
  });

  it('timeout with onTimeout fallback → batchFallback patch (no phase change), sinks batch/running, BatchTimedOut, batch_timeout', () => {
    const a = recorded('a', { batchId: BATCH_ID, started: 0 });
    const def = withSinks({ batch: { timeoutMinutes: 1, onTimeout: 'fallback' } });
    const d = run(snap(a, { definition: def, batchState: { kind: 'inProgress', id: BATCH_ID } }), at(90));
    const message = `Batch ${BATCH_ID} at anthropic did not finish within 1 minute; running the recipe as a Job instead`;
    assert.deepEqual(kinds(d), ['patchStatus', 'notifySinks', 'recordEvent', 'observeMetric']);
    const st = onlyPatch(d);
    assert.deepEqual(fields(st), ['batchFallback']);
    assert.equal(st.batchFallback, true);
    assert.equal(st.phase, undefined, 'no phase change');
    assert.deepEqual(cond(st, 'Ready'), { status: 'False', reason: 'FallingBack', message });
    assert.deepEqual(d.actions.slice(1), [
      {
        kind: 'notifySinks',
        ref: refOf(a),
        sinks: SINKS,
        source: sourceOf(a),
        events: [lifecycle('batch', 'running', { reason: 'batch_timeout' })],
      },
      { kind: 'recordEvent', ref: refOf(a), type: 'Warning', reason: 'BatchTimedOut', message },
      { kind: 'observeMetric', observation: { metric: 'runFailure', kind: 'batch_timeout' } },
    ]);
  });

  it('timeout with fallback and no http sink → the same without notifySinks', () => {
    const a = recorded('a', { batchId: BATCH_ID, started: 0 });
    const def = recipe({ batch: { timeoutMinutes: 1, onTimeout: 'fallback' } });
    const d = run(snap(a, { definition: def }), at(90));
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent', 'observeMetric']);
    assert.equal(onlyPatch(d).batchFallback, true);
  });

  it('a result arriving in the same pass as the timeout wins: ended + past deadline → completes, no fallback', () => {
    const a = recorded('a', { batchId: BATCH_ID, started: 0 });
    for (const onTimeout of ['fallback', 'fail']) {
      const def = recipe({ batch: { timeoutMinutes: 1, onTimeout } });
      const d = run(snap(a, { definition: def, batchState: ended() }), at(600));
      const st = onlyPatch(d);
      assert.equal(st.phase, 'Succeeded', onTimeout);
      assert.equal(st.batchFallback, undefined);
      assert.equal(st.output, lines.join('\n'));
      assert.deepEqual(failureKinds(d), []);
      assert.ok(!events(d).some((e) => e.reason === 'BatchTimedOut'));
    }
  });
});

// ------------------------------------------------------------------------------------------------ fallback

describe('batch fallback to a Job (Running, batchFallback)', () => {
  const fallen = (o: BatchAgentOpts & { readonly jobName?: string } = {}): Agent =>
    recorded('a', {
      batchId: BATCH_ID,
      started: 0,
      ...o,
      status: {
        batchFallback: true,
        ...(o.jobName !== undefined ? { jobName: o.jobName } : {}),
        ...o.status,
      },
    });
  const fallbackDef = (spec: Record<string, unknown> = {}) =>
    recipe({ batch: { timeoutMinutes: 1, onTimeout: 'fallback' }, ...spec });
  const cleanupRows = (a: Agent, index = 0): Action[] => [
    {
      kind: 'cleanupBatch',
      ref: refOf(a),
      provider: 'anthropic',
      secretKey: 'ANTHROPIC_API_KEY',
      batchId: BATCH_ID,
    },
    {
      kind: 'recordEvent',
      ref: refOf(a),
      type: 'Normal',
      reason: 'BatchCleanedUp',
      message: `Deleted batch ${BATCH_ID} at anthropic`,
    },
    { kind: 'removeFinalizer', ref: refOf(a), finalizer: BATCH_FINALIZER, index },
  ];

  it('no jobName and the Job not read → needs job', () => {
    const d = run(snap(fallen(), { definition: fallbackDef() }));
    assert.deepEqual(d, { actions: [], needs: 'job' });
  });

  it('Job absent and admitted → the run NetworkPolicy, createJob, then a jobName patch and Started, admits', () => {
    const a = fallen();
    const build = recordingBuilder();
    const d = run(snap(a, { definition: fallbackDef(), job: { kind: 'absent' } }), NOW, build);
    const name = jobNameFor('a');
    assert.deepEqual(kinds(d), [
      'createServiceAccount',
      'createNetworkPolicy',
      'createRunInput',
      'createJob',
      'patchStatus',
      'recordEvent',
    ]);
    const create = d.actions[3] as Of<'createJob'>;
    assert.equal(create.job.metadata.name, name);
    assert.equal(create.job.metadata.ownerReferences[0]?.uid, 'uid-a');
    assert.equal(build.calls.length, 1);
    const st = onlyPatch(d);
    assert.deepEqual(fields(st), ['jobName']);
    assert.equal(st.jobName, name);
    assert.deepEqual(cond(st, 'Ready'), {
      status: 'False',
      reason: 'Running',
      message: `Job ${name} is running (fallback after the batch timed out)`,
    });
    assert.deepEqual(events(d), [
      {
        kind: 'recordEvent',
        ref: refOf(a),
        type: 'Normal',
        reason: 'Started',
        message: `Created Job ${name} (fallback after the batch timed out)`,
      },
    ]);
    assert.equal(d.admits, true);
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
  });

  it('a recipe edited to ask for RBAC after the submission: the fallback Job gets no binding and no token', () => {
    const a = fallen();
    const build = recordingBuilder();
    const d = run(
      snap(a, {
        definition: fallbackDef({ execution: 'job', rbac: { roles: ['r'], clusterRoles: ['c'] } }),
        job: { kind: 'absent' },
      }),
      NOW,
      build,
    );
    assert.deepEqual(kinds(d).slice(0, 4), [
      'createServiceAccount',
      'createNetworkPolicy',
      'createRunInput',
      'createJob',
    ]);
    assert.equal(build.calls[0]?.definition.spec.rbac, undefined, 'built from the RBAC-free copy');
    assert.equal(build.calls[0]?.definition.spec.execution, 'job');
  });

  it('the Station policy applies to the fallback Job: a violation fails the run (kind policy), tools are handed on', () => {
    const tight = parseAgentPolicy({
      metadata: { name: 'tight', uid: 'u', resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { images: { allowedPrefixes: ['ghcr.io/acme/'] } },
    });
    assert.ok(tight.ok);
    const d = run(
      snap(fallen(), {
        definition: fallbackDef(),
        job: { kind: 'absent' },
        policy: { kind: 'found', policy: tight.value },
      }),
    );
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.match(st.failureReason ?? '', /^AgentPolicy tight: image .* of container agent is not allowed/);
    assert.ok(!kinds(d).includes('createJob'));
    const tools = parseAgentPolicy({
      metadata: { name: 'tools', uid: 'u', resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { tools: { deny: ['Bash'] } },
    });
    assert.ok(tools.ok);
    const build = recordingBuilder();
    const ok = run(
      snap(fallen(), {
        definition: fallbackDef(),
        job: { kind: 'absent' },
        policy: { kind: 'found', policy: tools.value },
      }),
      NOW,
      build,
    );
    assert.ok(kinds(ok).includes('createJob'));
    assert.deepEqual(
      build.calls[0]?.definition.spec.disallowed_tools,
      ['Bash'],
      'the policy deny list reaches the CLI',
    );
  });

  it('a refused ServiceAccount fails the fallback run instead of retrying forever', () => {
    const d = run(
      snap(fallen(), {
        definition: fallbackDef(),
        job: { kind: 'absent' },
        serviceAccountRefused: { message: 'api 403' },
      }),
    );
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.match(st.failureReason ?? '', /^the run's ServiceAccount could not be created \(api 403\)/);
  });

  it('the fallback Job gets its input ConfigMap right before it: named like it, owned, immutable, the prompt and ids', () => {
    const d = run(snap(fallen({ taskId: 'T-9' }), { definition: fallbackDef(), job: { kind: 'absent' } }));
    const input = d.actions[2];
    assert.ok(input?.kind === 'createRunInput', kinds(d).join(','));
    assert.equal(d.actions[3]?.kind, 'createJob');
    const cm = input.configMap;
    assert.equal(cm.metadata.name, 'agent-job-a-input');
    assert.equal(cm.metadata.namespace, NS);
    assert.deepEqual(cm.metadata.ownerReferences, [
      {
        apiVersion: 'agents.re-cinq.com/v1alpha1',
        kind: 'Agent',
        name: 'a',
        uid: 'uid-a',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.equal(cm.immutable, true);
    assert.equal(cm.data.prompt, 'Do the thing');
    assert.deepEqual(JSON.parse(cm.data['run.json'] ?? ''), {
      namespace: NS,
      agent: 'a',
      uid: 'uid-a',
      station: 'stn',
      definition: 'def',
      job: jobNameFor('a'),
      model: 'claude-opus-5-5',
      taskId: 'T-9',
    });
  });

  it('a refused input ConfigMap fails the fallback run (BuildFailed, build_error) instead of retrying forever', () => {
    const message = 'ConfigMap team/agent-job-a-input: api 403 Forbidden: configmaps is forbidden';
    const build = recordingBuilder();
    const d = run(
      snap(fallen(), {
        definition: fallbackDef(),
        job: { kind: 'absent' },
        inputRefused: { message },
      }),
      NOW,
      build,
    );
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, failureInput(message));
    assert.equal(cond(st, 'Failed')?.reason, REASON.buildFailed);
    assert.ok(events(d).some((e) => e.type === 'Warning' && e.reason === REASON.buildFailed));
    assert.deepEqual(failureKinds(d), ['build_error']);
    assert.ok(!kinds(d).includes('createRunInput') && !kinds(d).includes('createJob'), kinds(d).join(','));
    assert.equal(build.calls.length, 0, 'no Job is even built');
  });

  it('Job absent and admitted with http sinks → the run NetworkPolicy (admitting them) right before the Job', () => {
    const d = run(
      snap(fallen(), {
        definition: withSinks({ batch: { onTimeout: 'fallback' } }),
        job: { kind: 'absent' },
      }),
    );
    assert.deepEqual(kinds(d), [
      'createServiceAccount',
      'createNetworkPolicy',
      'createRunInput',
      'createJob',
      'patchStatus',
      'recordEvent',
    ]);
    assert.equal(d.admits, true);
  });

  it('at the Station limit → no Job; the batch is cleaned up while the finalizer is held', () => {
    const a = fallen();
    const over = {
      definition: fallbackDef(),
      job: { kind: 'absent' as const },
      station: station('stn', { maxConcurrentRuns: 1 }),
      siblings: [running('busy'), a],
    };
    const d = run(snap(a, over));
    assert.deepEqual(d.actions, cleanupRows(a));
    assert.equal(d.admits, undefined);
    // Without the finalizer: nothing, no Job.
    const freed = fallen({ finalizers: [] });
    assert.deepEqual(run(snap(freed, { ...over, siblings: [running('busy'), freed] })), { actions: [] });
  });

  it('at the Station limit with a pending cleanup → re-checked after min(CLEANUP_PENDING_RETRY_MS, pollMs)', () => {
    const a = fallen();
    const d = decide(
      snap(a, {
        definition: fallbackDef(),
        job: { kind: 'absent' },
        station: station('stn', { maxConcurrentRuns: 1 }),
        siblings: [running('busy'), a],
        cleanup: { kind: 'pending', detail: 'cancel sent' },
      }),
      NOW,
    );
    assert.deepEqual(d, { actions: [], requeueAfterMs: CLEANUP_PENDING_RETRY_MS });
  });

  it('at the Station limit with the cleanup backing off → re-checked when cleanupNotBefore passes', () => {
    const a = fallen({ status: { batchCleanupAttempts: 1 } });
    const d = decide(
      snap(a, {
        definition: fallbackDef(),
        job: { kind: 'absent' },
        station: station('stn', { maxConcurrentRuns: 1 }),
        siblings: [running('busy'), a],
        cleanupNotBefore: at(63),
      }),
      NOW,
    );
    assert.deepEqual(d, { actions: [], requeueAfterMs: 3000 });
  });

  it('jobName set, Job running, finalizer held → the cleanup rows (cleanupBatch, BatchCleanedUp, removeFinalizer)', () => {
    const a = fallen({ jobName: jobNameFor('a'), finalizers: ['example.com/x', BATCH_FINALIZER] });
    const d = run(
      snap(a, {
        definition: fallbackDef(),
        job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } },
      }),
    );
    assert.deepEqual(d.actions, cleanupRows(a, 1));
  });

  it('jobName set, Job running, finalizer gone → just waits for the Job', () => {
    const a = fallen({ jobName: jobNameFor('a'), finalizers: [] });
    const d = run(
      snap(a, {
        definition: fallbackDef(),
        job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } },
      }),
    );
    assert.deepEqual(d, { actions: [], requeueAfterMs: OPTIONS.requeueMs });
  });

  it('jobName set, Job running, cleanup failed → counted like any cleanup failure', () => {
    const a = fallen({ jobName: jobNameFor('a') });
    const d = run(
      snap(a, {
        definition: fallbackDef(),
        job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } },
        cleanup: { kind: 'failed', message: 'HTTP 503' },
      }),
    );
    assert.deepEqual(kinds(d), ['patchStatus', 'observeMetric', 'recordEvent']);
    assert.equal(onlyPatch(d).batchCleanupAttempts, 1);
  });

  it('jobName set, Job not read → needs job', () => {
    const a = fallen({ jobName: jobNameFor('a') });
    assert.deepEqual(run(snap(a, { definition: fallbackDef() })), { actions: [], needs: 'job' });
  });

  it('jobName set, Job finished → the normal Job completion (before any cleanup)', () => {
    const a = fallen({ jobName: jobNameFor('a') });
    const name = jobNameFor('a');
    const notGathered = run(
      snap(a, {
        definition: fallbackDef(),
        job: {
          kind: 'present',
          job: job('a', { conditions: complete, succeeded: 1 }),
          evidence: { kind: 'notGathered' },
        },
      }),
    );
    assert.deepEqual(notGathered, { actions: [], needs: 'runEvidence' });
    const d = run(
      snap(a, {
        definition: fallbackDef(),
        job: {
          kind: 'present',
          job: job('a', { conditions: complete, succeeded: 1 }),
          evidence: { kind: 'pod', pod: pod('a', 0), log: { kind: 'read', text: 'job output\n' } },
        },
      }),
    );
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent', 'observeMetric', 'observeMetric']);
    const st = onlyPatch(d);
    assert.deepEqual(fields(st), ['completedAt', 'exitCode', 'jobName', 'output', 'phase']);
    assert.equal(st.phase, 'Succeeded');
    assert.equal(st.jobName, name);
    assert.equal(st.exitCode, 0);
    assert.equal(st.output, 'job output\n');
    assert.deepEqual(events(d), [
      {
        kind: 'recordEvent',
        ref: refOf(a),
        type: 'Normal',
        reason: 'Succeeded',
        message: `Job ${name} completed`,
      },
    ]);
    assert.ok(!kinds(d).includes('cleanupBatch'));
    assert.ok(!kinds(d).includes('removeFinalizer'));
  });

  it('the Job exists (jobName patch lost) and is owned → adopted: jobName patch, Started', () => {
    const a = fallen();
    const d = run(
      snap(a, {
        definition: fallbackDef(),
        job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } },
      }),
    );
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
    assert.equal(onlyPatch(d).jobName, jobNameFor('a'));
    assert.equal(
      events(d)[0]?.message,
      `Adopted existing Job ${jobNameFor('a')} (fallback after the batch timed out)`,
    );
  });

  it('a timed-out run never falls back twice: the fallback row never patches batchFallback again', () => {
    const a = fallen();
    const d = run(snap(a, { definition: fallbackDef(), job: { kind: 'absent' } }), at(10_000));
    assert.equal(onlyPatch(d).batchFallback, undefined);
  });
});

// ------------------------------------------------------------------------------------------------ cleanup

describe('batch cleanup (finished or deleted, finalizer held)', () => {
  const ref = (a: Agent) => refOf(a);
  const cleaned = (
    a: Agent,
    id: string,
    index: number,
    verb = 'Deleted',
    secretKey = 'ANTHROPIC_API_KEY',
  ): Action[] => [
    { kind: 'cleanupBatch', ref: ref(a), provider: 'anthropic', secretKey, batchId: id },
    {
      kind: 'recordEvent',
      ref: ref(a),
      type: 'Normal',
      reason: 'BatchCleanedUp',
      message: `${verb} batch ${id} at anthropic`,
    },
    { kind: 'removeFinalizer', ref: ref(a), finalizer: BATCH_FINALIZER, index },
  ];

  it('Succeeded or Failed with a batchId → cleanupBatch, BatchCleanedUp, removeFinalizer at its index', () => {
    for (const phase of ['Succeeded', 'Failed'] as const) {
      const a = done('a', { phase, batchId: BATCH_ID, finalizers: ['example.com/x', BATCH_FINALIZER] });
      const d = run(snap(a));
      assert.deepEqual(d, { actions: cleaned(a, BATCH_ID, 1) }, phase);
    }
  });

  it('uses the recipe key mapping; without a recipe the env name', () => {
    const a = done('a', { batchId: BATCH_ID });
    const mapped = recipe({ resources: { secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'team-key' }] } });
    assert.deepEqual(
      run(snap(a, { definition: mapped })).actions,
      cleaned(a, BATCH_ID, 0, 'Deleted', 'team-key'),
    );
    assert.deepEqual(run(snap(a, { definition: null })).actions, cleaned(a, BATCH_ID, 0));
  });

  it('the openai and gemini providers clean up at their vendor', () => {
    for (const provider of ['openai', 'gemini'] as const) {
      const a = done('a', { batchId: 'batch_9', status: { batchProvider: provider } });
      const d = run(snap(a));
      assert.deepEqual(d.actions[0], {
        kind: 'cleanupBatch',
        ref: ref(a),
        provider,
        secretKey: provider === 'openai' ? 'OPENAI_API_KEY' : 'GEMINI_API_KEY',
        batchId: 'batch_9',
      });
      assert.deepEqual(kinds(d), ['cleanupBatch', 'recordEvent', 'removeFinalizer']);
    }
  });

  it('a Running batch run being deleted → cancelled and deleted, no completion', () => {
    const a = recorded('a', { batchId: BATCH_ID, deleting: true });
    const d = run(
      snap(a, { batchState: { kind: 'ended', id: BATCH_ID, outcome: { kind: 'succeeded', lines: ['x'] } } }),
    );
    assert.deepEqual(d, { actions: cleaned(a, BATCH_ID, 0, 'Cancelled and deleted') });
  });

  it('no finalizer → no actions (terminal or deleting)', () => {
    for (const a of [
      done('a', { batchId: BATCH_ID, finalizers: [] }),
      done('a', { batchId: BATCH_ID, finalizers: ['example.com/x'] }),
      recorded('a', { batchId: BATCH_ID, deleting: true, finalizers: [] }),
    ]) {
      assert.deepEqual(run(snap(a, { cleanup: { kind: 'failed', message: 'x' } })), { actions: [] });
    }
  });

  it('no batchProvider (failed before the record) → only removeFinalizer', () => {
    const failedEarly = bagent('a', {
      finalizers: [BATCH_FINALIZER],
      status: {
        phase: 'Failed',
        failureReason: 'batch execution cannot use tool_config',
        completedAt: iso(5),
      },
    });
    assert.deepEqual(run(snap(failedEarly, { submission: { kind: 'unknown' } })), {
      actions: [{ kind: 'removeFinalizer', ref: ref(failedEarly), finalizer: BATCH_FINALIZER, index: 0 }],
    });
    const deletedPending = bagent('p', { finalizers: ['example.com/x', BATCH_FINALIZER], deleting: true });
    assert.deepEqual(run(snap(deletedPending)), {
      actions: [{ kind: 'removeFinalizer', ref: ref(deletedPending), finalizer: BATCH_FINALIZER, index: 1 }],
    });
    const unknownProvider = done('u', { batchId: BATCH_ID, status: { batchProvider: 'mistral' } });
    assert.deepEqual(run(snap(unknownProvider)), {
      actions: [{ kind: 'removeFinalizer', ref: ref(unknownProvider), finalizer: BATCH_FINALIZER, index: 0 }],
    });
  });

  it('no batchId and the submission unknown → needs batchLookup', () => {
    for (const submission of [undefined, { kind: 'unknown' as const }]) {
      assert.deepEqual(run(snap(done('a'), { submission })), { actions: [], needs: 'batchLookup' });
      assert.deepEqual(run(snap(recorded('a', { deleting: true }), { submission })), {
        actions: [],
        needs: 'batchLookup',
      });
    }
  });

  it('no batchId, lookedUp found → its cleanup (duplicates first, each named in a Warning)', () => {
    const a = done('a');
    const d = run(
      snap(a, {
        submission: {
          kind: 'lookedUp',
          result: { kind: 'found', id: BATCH_ID, duplicates: ['msgbatch_dup'] },
        },
      }),
    );
    assert.deepEqual(d.actions, [
      {
        kind: 'recordEvent',
        ref: ref(a),
        type: 'Warning',
        reason: 'DuplicateBatch',
        message: 'Batch msgbatch_dup at anthropic was submitted for this run too; deleting it',
      },
      {
        kind: 'cleanupBatch',
        ref: ref(a),
        provider: 'anthropic',
        secretKey: 'ANTHROPIC_API_KEY',
        batchId: 'msgbatch_dup',
      },
      ...cleaned(a, BATCH_ID, 0),
    ]);
    const plain = run(
      snap(a, { submission: { kind: 'lookedUp', result: { kind: 'found', id: BATCH_ID, duplicates: [] } } }),
    );
    assert.deepEqual(plain.actions, cleaned(a, BATCH_ID, 0));
  });

  it('no batchId, submitted id → its cleanup', () => {
    const a = recorded('a', { deleting: true });
    const d = run(snap(a, { submission: { kind: 'submitted', id: 'msgbatch_new' } }));
    assert.deepEqual(d.actions, cleaned(a, 'msgbatch_new', 0, 'Cancelled and deleted'));
  });

  it('no batchId, lookedUp absent, none or rejected → removeFinalizer only', () => {
    const a = done('a');
    const remove = { kind: 'removeFinalizer', ref: ref(a), finalizer: BATCH_FINALIZER, index: 0 };
    for (const submission of [
      { kind: 'lookedUp' as const, result: { kind: 'absent' as const } },
      { kind: 'none' as const },
      { kind: 'rejected' as const, message: 'bad' },
    ]) {
      assert.deepEqual(run(snap(a, { submission })), { actions: [remove] }, submission.kind);
    }
  });

  it('no batchId, lookedUp undecided → BatchOrphaned Warning naming the candidates, batchOrphan, removeFinalizer', () => {
    const a = done('a', { finalizers: ['example.com/x', BATCH_FINALIZER] });
    const d = run(
      snap(a, {
        submission: {
          kind: 'lookedUp',
          result: { kind: 'undecided', candidates: ['msgbatch_a', 'msgbatch_b'] },
        },
      }),
    );
    assert.deepEqual(d, {
      actions: [
        {
          kind: 'recordEvent',
          ref: ref(a),
          type: 'Warning',
          reason: 'BatchOrphaned',
          message:
            'Could not tell whether anthropic batch msgbatch_a, msgbatch_b belongs to this run (its results are not out yet); it is left at anthropic',
        },
        { kind: 'observeMetric', observation: { metric: 'batchOrphan', provider: 'anthropic' } },
        { kind: 'removeFinalizer', ref: ref(a), finalizer: BATCH_FINALIZER, index: 1 },
      ],
    });
  });

  it('cleanup pending → no actions, re-check after min(CLEANUP_PENDING_RETRY_MS, pollMs)', () => {
    const a = done('a', { batchId: BATCH_ID });
    const pending = { kind: 'pending' as const, detail: 'cancel sent' };
    assert.equal(CLEANUP_PENDING_RETRY_MS, 10_000);
    assert.deepEqual(run(snap(a, { cleanup: pending })), { actions: [], requeueAfterMs: 10_000 });
    assert.deepEqual(
      run(snap(a, { cleanup: pending, options: { batch: { enabled: true, pollMs: 4000 } } })),
      {
        actions: [],
        requeueAfterMs: 4000,
      },
    );
  });

  it('cleanup failed with attempts 0 → batchCleanupAttempts 1, batchCleanupFailure, BatchCleanupFailed, backoff', () => {
    const a = done('a', { batchId: BATCH_ID });
    const d = run(snap(a, { cleanup: { kind: 'failed', message: 'HTTP 500 internal error' } }));
    assert.deepEqual(kinds(d), ['patchStatus', 'observeMetric', 'recordEvent']);
    const st = onlyPatch(d);
    assert.deepEqual(fields(st), ['batchCleanupAttempts']);
    assert.equal(st.batchCleanupAttempts, 1);
    assert.deepEqual(
      st.conditions.map((c) => [c.type, c.status, c.reason]),
      a.status.conditions.map((c) => [c.type, c.status, c.reason]),
      'conditions unchanged',
    );
    assert.deepEqual(d.actions.slice(1), [
      { kind: 'observeMetric', observation: { metric: 'batchCleanupFailure' } },
      {
        kind: 'recordEvent',
        ref: ref(a),
        type: 'Warning',
        reason: 'BatchCleanupFailed',
        message: `Cleaning up anthropic batch ${BATCH_ID} failed (attempt 1 of 5): HTTP 500 internal error`,
      },
    ]);
    assert.equal(d.requeueAfterMs, cleanupBackoffMs(1));
    assert.equal(d.requeueAfterMs, 2000);
  });

  it('cleanup failed at attempts 2 → 3, backoff cleanupBackoffMs(3)', () => {
    const a = done('a', { batchId: BATCH_ID, status: { batchCleanupAttempts: 2 } });
    const d = run(snap(a, { cleanup: { kind: 'failed', message: 'x' } }));
    assert.equal(onlyPatch(d).batchCleanupAttempts, 3);
    assert.equal(d.requeueAfterMs, 8000);
    assert.ok(!kinds(d).includes('removeFinalizer'));
  });

  it('cleanup failed at attempts 4 → 5, BatchOrphaned Warning, batchOrphan, removeFinalizer', () => {
    const a = done('a', { batchId: BATCH_ID, status: { batchCleanupAttempts: 4 } });
    const d = run(snap(a, { cleanup: { kind: 'failed', message: 'HTTP 503' } }));
    assert.deepEqual(kinds(d), [
      'patchStatus',
      'observeMetric',
      'recordEvent',
      'observeMetric',
      'removeFinalizer',
    ]);
    assert.equal(onlyPatch(d).batchCleanupAttempts, 5);
    assert.deepEqual(d.actions.slice(1), [
      { kind: 'observeMetric', observation: { metric: 'batchCleanupFailure' } },
      {
        kind: 'recordEvent',
        ref: ref(a),
        type: 'Warning',
        reason: 'BatchOrphaned',
        message: `Gave up cleaning up anthropic batch ${BATCH_ID} after 5 failed attempts (HTTP 503); delete it at anthropic by hand`,
      },
      { kind: 'observeMetric', observation: { metric: 'batchOrphan', provider: 'anthropic' } },
      { kind: 'removeFinalizer', ref: ref(a), finalizer: BATCH_FINALIZER, index: 0 },
    ]);
    assert.equal(d.requeueAfterMs, undefined);
  });

  it('cleanupNotBefore in the future with attempts > 0 → no actions, requeue until then', () => {
    const a = done('a', { batchId: BATCH_ID, status: { batchCleanupAttempts: 2 } });
    const d = run(snap(a, { cleanupNotBefore: at(64.5) }));
    assert.deepEqual(d, { actions: [], requeueAfterMs: 4500 });
  });

  it('cleanupNotBefore passed, or no attempts yet → the cleanup runs', () => {
    const retried = done('a', { batchId: BATCH_ID, status: { batchCleanupAttempts: 2 } });
    assert.deepEqual(run(snap(retried, { cleanupNotBefore: at(60) })).actions, cleaned(retried, BATCH_ID, 0));
    const fresh = done('a', { batchId: BATCH_ID });
    assert.deepEqual(run(snap(fresh, { cleanupNotBefore: at(120) })).actions, cleaned(fresh, BATCH_ID, 0));
  });

  it('cleanupBackoffMs: 2^n s, at most 5 minutes', () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4, 8, 9, 20].map(cleanupBackoffMs),
      [2000, 2000, 4000, 8000, 16000, 256000, 300000, 300000],
    );
  });
});

// ------------------------------------------------------------------------------------------------ invariants

describe('batch decisions: invariants over every row', () => {
  it('every patch carries the Agent rv; no decision has two status patches', () => {
    const lines = ['{"type":"result","result":"ok"}'];
    const a = (o: Parameters<typeof recorded>[1] = {}) => recorded('a', { rv: '314', ...o });
    const snapshots: Snapshot[] = [
      snap(bagent('a', { rv: '314' })),
      snap(bagent('a', { rv: '314', finalizers: [BATCH_FINALIZER] })),
      snap(bagent('a', { rv: '314' }), { options: { batch: { enabled: false, pollMs: 1 } } }),
      snap(a(), { submission: { kind: 'none' } }),
      snap(a(), { definition: withSinks(), submission: { kind: 'submitted', id: BATCH_ID } }),
      snap(a(), { submission: { kind: 'rejected', message: 'no' } }),
      snap(a(), {
        submission: { kind: 'lookedUp', result: { kind: 'found', id: BATCH_ID, duplicates: ['d1', 'd2'] } },
      }),
      snap(a({ batchId: BATCH_ID }), {
        definition: withSinks(),
        batchState: { kind: 'ended', id: BATCH_ID, outcome: { kind: 'succeeded', lines } },
      }),
      snap(a({ batchId: BATCH_ID, started: -100_000 }), { definition: withSinks() }),
      snap(a({ batchId: BATCH_ID, started: -100_000 }), {
        definition: withSinks({ batch: { onTimeout: 'fallback' } }),
      }),
      snap(done('a', { rv: '314', batchId: BATCH_ID }), { cleanup: { kind: 'failed', message: 'x' } }),
      snap(done('a', { rv: '314', batchId: BATCH_ID, status: { batchCleanupAttempts: 4 } }), {
        cleanup: { kind: 'failed', message: 'x' },
      }),
    ];
    for (const s of snapshots) {
      const d = run(s);
      for (const p of patches(d)) assert.equal(p.resourceVersion, '314');
      assert.ok(patches(d).length <= 1);
    }
  });
});

describe('batch runs and tracing (issue 10 §5)', () => {
  it('the submission record carries status.traceID when the controller traces; not otherwise', () => {
    const a = bagent('a', { finalizers: [BATCH_FINALIZER] });
    const traced = run({
      ...snap(a),
      options: { ...OPTIONS, tracing: { runTracesUrl: 'http://c:4318/v1/traces' } },
    });
    assert.equal(onlyPatch(traced).traceID, traceIdFromUid(a.metadata.uid));
    assert.equal(onlyPatch(run(snap(a))).traceID, undefined);
  });
});
