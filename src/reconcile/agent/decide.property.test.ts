// Property tests of the pure reconcile core `decide` (issue 13 §2): for random snapshots (Agent phase, status
// fields, finalizers and deletion; Station concurrency settings and queue siblings; Job observations with random
// conditions and pod evidence; definitions of every execution mode; option flags and executor feedback), `decide`
// never throws and returns a well-formed Decision; a run is only started when the Station's limit allows it given
// the queue view, first come first served (what `decideAdmission` guarantees); and deciding again on the state a
// decision produced writes nothing more (the decision applied by a simulator of the API server, the vendor and the
// shell's caches: apply-actions.test-support.ts), paths that take several decisions by design coming to rest.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  type Agent,
  type AgentDefinition,
  type AgentPolicy,
  parseAgent,
  parseAgentPolicy,
  type Station,
} from '../../api/index.ts';
import { jobNameFor, RUN_CLEANUP_FINALIZER } from '../../jobs/index.ts';
import type { Action, AgentStatusPatch, Decision } from '../actions.ts';
import { BATCH_FINALIZER } from '../batch/plan.ts';
import type {
  JobObservation,
  MemorySaveObservation,
  ReconcileOptions,
  RunEvidence,
  Snapshot,
} from '../snapshot.ts';
import type { StationQueueView } from '../station/book.ts';
import {
  complete,
  deadlineExceeded,
  definition as definitionFixture,
  failedBackoff,
  failureTarget,
  iso,
  job as jobFixture,
  NS,
  pod as podFixture,
  station as stationFixture,
  successCriteriaMet,
  T0,
} from '../test-fixtures.ts';
import {
  applyDecision,
  canonical,
  queueView,
  type SiblingState,
  type SimWorld,
  sameState,
} from './apply-actions.test-support.ts';
import { decide } from './decide.ts';

// ------------------------------------------------------------------------------------------------ building blocks

/** Every action kind (a Record, so the compiler insists on each new kind being listed). */
const KNOWN_KINDS: Record<Action['kind'], true> = {
  recordSpend: true,
  createNetworkPolicy: true,
  createServiceAccount: true,
  createRunBinding: true,
  deleteRunBindings: true,
  deleteJob: true,
  createRunInput: true,
  deleteRunInput: true,
  createJob: true,
  createPromptToken: true,
  createGatewayCredential: true,
  createServerApiKey: true,
  deleteServerObject: true,
  applyServerObject: true,
  patchStatus: true,
  deleteAgent: true,
  recordEvent: true,
  observeMetric: true,
  addFinalizer: true,
  removeFinalizer: true,
  submitBatch: true,
  cleanupBatch: true,
  saveMemory: true,
  deleteSession: true,
  notifySinks: true,
};
const ACTION_KINDS: ReadonlySet<string> = new Set(Object.keys(KNOWN_KINDS));
const NEEDS: ReadonlySet<string> = new Set([
  'job',
  'runEvidence',
  'credentials',
  'batchLookup',
  'memory',
  'memorySave',
]);

function unwrap<T>(r: { ok: true; value: T } | { ok: false; error: string }): T {
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

interface AgentShape {
  readonly name: string;
  readonly uid: string;
  readonly rv: string;
  readonly generation: number | undefined;
  readonly created: number;
  readonly deleting: boolean;
  readonly finalizers: readonly string[];
  readonly station: string;
  readonly spec: Record<string, unknown>;
  readonly annotations: Record<string, string> | undefined;
  readonly status: Record<string, unknown> | undefined;
}

function makeAgent(a: AgentShape): Agent {
  return unwrap(
    parseAgent({
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'Agent',
      metadata: {
        name: a.name,
        namespace: NS,
        uid: a.uid,
        resourceVersion: a.rv,
        ...(a.generation !== undefined ? { generation: a.generation } : {}),
        creationTimestamp: iso(a.created),
        ...(a.deleting ? { deletionTimestamp: iso(500) } : {}),
        ...(a.finalizers.length > 0 ? { finalizers: a.finalizers } : {}),
        ...(a.annotations !== undefined ? { annotations: a.annotations } : {}),
      },
      spec: { stationRef: a.station, ...a.spec },
      ...(a.status !== undefined ? { status: a.status } : {}),
    }),
  );
}

/** `undefined`-valued keys dropped (the wire has no undefined). */
function defined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** True about once in `n` cases. */
const oneIn = (n: number): fc.Arbitrary<boolean> => fc.integer({ min: 1, max: n }).map((x) => x === 1);
/** `arb` about once in `n` cases, else undefined. */
/** The memory ConfigMap `notes` at `rv` holding `content` (labelled as a memory unless `labelled` is false). */
const notesConfigMap = (rv: string, content: string, labelled = true) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'notes',
    namespace: NS,
    resourceVersion: rv,
    labels: labelled ? { 'agents.re-cinq.com/memory': 'true' } : {},
  },
  data: { 'MEMORY.md': content },
});

const rarely = <T>(arb: fc.Arbitrary<T>, n = 8): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: n - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });

const seconds = fc.integer({ min: 0, max: 120 });
const condition = (type: string, status: string, reason: string, generation: number) => ({
  type,
  status,
  reason,
  message: `${type} ${reason}`,
  lastTransitionTime: iso(5),
  observedGeneration: generation,
});

const statusArb: fc.Arbitrary<Record<string, unknown> | undefined> = fc.option(
  fc
    .record({
      phase: fc.constantFrom(
        undefined,
        'Pending',
        'Pending',
        'Running',
        'Running',
        'Running',
        'Succeeded',
        'Failed',
        'Bogus',
      ),
      jobName: fc.constantFrom(undefined, '', jobNameFor('a'), 'agent-job-elsewhere'),
      startedAt: fc.option(seconds, { nil: undefined }),
      completedAt: fc.option(seconds, { nil: undefined }),
      batchProvider: fc.constantFrom(undefined, undefined, 'anthropic', 'openai', 'gemini', 'bogus'),
      batchId: fc.constantFrom(undefined, 'batch-1'),
      batchFallback: fc.constantFrom(undefined, undefined, true, false),
      batchCleanupAttempts: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
      sessionId: fc.constantFrom(undefined, 'sess-1'),
      conditions: fc.constantFrom<readonly (readonly [string, string, string])[]>(
        [],
        [['Ready', 'False', 'Queued']],
        [['Ready', 'False', 'Running']],
        [
          ['Ready', 'True', 'Succeeded'],
          ['Complete', 'True', 'Succeeded'],
        ],
      ),
      conditionGeneration: fc.integer({ min: 1, max: 3 }),
    })
    .map((s) =>
      defined({
        phase: s.phase,
        jobName: s.jobName,
        startedAt: s.startedAt === undefined ? undefined : iso(s.startedAt),
        completedAt: s.completedAt === undefined ? undefined : iso(s.completedAt),
        batchProvider: s.batchProvider,
        batchId: s.batchId,
        batchFallback: s.batchFallback,
        batchCleanupAttempts: s.batchCleanupAttempts,
        sessionId: s.sessionId,
        conditions: s.conditions.map(([t, st, r]) => condition(t, st, r, s.conditionGeneration)),
      }),
    ),
  { nil: undefined, freq: 4 },
);

/** The candidate Agent: always `a` in Station `stn`, everything else random. */
const candidateArb: fc.Arbitrary<Agent> = fc
  .record({
    uid: fc.constantFrom('uid-a', 'uid-a', 'uid-a2'),
    rv: fc.constantFrom('rv-a', '17', '9999'),
    generation: fc.constantFrom(undefined, 1, 2),
    created: fc.integer({ min: 0, max: 5 }),
    deleting: oneIn(6),
    finalizers: fc.subarray([RUN_CLEANUP_FINALIZER, BATCH_FINALIZER, 'example.com/keep']),
    model: fc.constantFrom(undefined, undefined, 'claude-sonnet-5', 'gpt-5', 'gemini-3-pro', 'exec'),
    parameters: fc.constantFrom(undefined, { thing: 'the thing' }, { thing: '{thing}', other: 'x' }),
    resumeSession: rarely(fc.constant('sess-0')),
    taskId: fc.constantFrom(undefined, 'task-7'),
    traceparent: fc.constantFrom(
      undefined,
      undefined,
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      'garbage',
    ),
    status: statusArb,
  })
  .map((r) =>
    makeAgent({
      name: 'a',
      uid: r.uid,
      rv: r.rv,
      generation: r.generation,
      created: r.created,
      deleting: r.deleting,
      finalizers: r.finalizers,
      station: 'stn',
      spec: defined({
        model: r.model,
        parameters: r.parameters,
        resumeSession: r.resumeSession,
        taskId: r.taskId,
      }),
      annotations: r.traceparent === undefined ? undefined : { traceparent: r.traceparent },
      status: r.status,
    }),
  );

type SiblingShape = SiblingState;

const siblingArb = (i: number): fc.Arbitrary<SiblingShape> =>
  fc
    .record({
      created: fc.integer({ min: 0, max: 5 }),
      phase: fc.constantFrom(undefined, 'Pending', 'Running', 'Running', 'Succeeded', 'Failed'),
      started: fc.option(fc.integer({ min: 0, max: 30 }), { nil: undefined }),
      completed: fc.integer({ min: 0, max: 100 }),
      fallbackWaiting: oneIn(6),
      deleting: oneIn(5),
      otherStation: oneIn(8),
      rv: fc.constantFrom(`rv-s${i}`, `rv-s${i}`, `rv-s${i}`, ''),
      admitted: oneIn(6),
      hasJob: oneIn(4),
    })
    .map((r) => ({
      agent: makeAgent({
        name: `s${i}`,
        uid: `uid-s${i}`,
        rv: r.rv,
        generation: 1,
        created: r.created,
        deleting: r.deleting,
        finalizers: [],
        station: r.otherStation ? 'other' : 'stn',
        spec: {},
        annotations: undefined,
        status:
          r.phase === undefined
            ? undefined
            : defined({
                phase: r.phase,
                startedAt: r.started === undefined ? undefined : iso(r.started),
                completedAt: r.phase === 'Succeeded' || r.phase === 'Failed' ? iso(r.completed) : undefined,
                ...(r.phase === 'Running' && r.fallbackWaiting
                  ? { batchFallback: true, batchProvider: 'anthropic' }
                  : {}),
              }),
      }),
      admitted: r.admitted,
      hasJob: r.hasJob,
    }));

const siblingsArb: fc.Arbitrary<SiblingShape[]> = fc
  .integer({ min: 0, max: 6 })
  .chain((n) =>
    n === 0 ? fc.constant([]) : fc.tuple(...Array.from({ length: n }, (_, i) => siblingArb(i))),
  );

/** The Station picture the candidate sees, from a book fed the way the shell feeds it. */
function viewOf(
  candidate: Agent,
  siblings: readonly SiblingShape[],
  self: { readonly admitted: boolean; readonly hasJob: boolean },
): StationQueueView<Agent> {
  return queueView(candidate, siblings, self);
}

const stationSpecArb = fc.record({
  concurrencyPolicy: fc.constantFrom(undefined, 'Allow', 'Forbid', 'Replace', 'Sometimes'),
  maxConcurrentRuns: fc.constantFrom(undefined, 0, 1, 1, 2, 3),
  historyLimit: fc.constantFrom(undefined, 1, 3),
});

function makeStation(spec: {
  concurrencyPolicy: string | undefined;
  maxConcurrentRuns: number | undefined;
  historyLimit: number | undefined;
}): Station {
  return stationFixture(
    'stn',
    defined({
      concurrencyPolicy: spec.concurrencyPolicy,
      maxConcurrentRuns: spec.maxConcurrentRuns,
      successfulRunsHistoryLimit: spec.historyLimit,
      failedRunsHistoryLimit: spec.historyLimit,
    }),
  );
}

/**
 * The limit the Station sets, derived here from the reference rules (docs/design/reference-behaviour.md#concurrency),
 * not from the code under test.
 */
function expectedLimit(station: Station): number {
  const policy = station.spec.concurrencyPolicy;
  if (policy === 'Forbid' || policy === 'Replace') return 1;
  const max = station.spec.maxConcurrentRuns ?? 0;
  return max > 0 ? Math.floor(max) : 0;
}

const definitionArb: fc.Arbitrary<AgentDefinition> = fc
  .record({
    execution: fc.constantFrom(undefined, 'job', 'job', 'job', 'batch', 'batch', 'realtime', 'bogus'),
    model: fc.constantFrom(undefined, undefined, 'claude-sonnet-5', 'gpt-5', 'gemini-3-pro', 'exec'),
    onTimeout: fc.constantFrom(undefined, 'fail', 'fallback'),
    timeoutMinutes: fc.constantFrom(undefined, 1, 30),
    rbac: oneIn(4),
    memory: oneIn(6),
    dependencies: oneIn(4),
    json: fc.boolean(),
    sinks: fc.boolean(),
    conversation: oneIn(8),
  })
  .map((r) =>
    definitionFixture(
      'def',
      defined({
        execution: r.execution,
        model: r.model,
        batch: defined({ onTimeout: r.onTimeout, timeoutMinutes: r.timeoutMinutes }),
        rbac: r.rbac ? { roles: ['pod-reader'], clusterRoles: [] } : undefined,
        memory: r.memory ? { configMap: 'notes' } : undefined,
        dependencies: r.dependencies ? [{ service: 'db', port: 5432, timeoutSeconds: 60 }] : undefined,
        output: defined({
          format: r.json ? 'json' : undefined,
          schema: r.json ? { type: 'object', required: ['ok'] } : undefined,
          sinks: r.sinks
            ? [{ type: 'http', url: 'http://sink.example:9000/e', headers_secret: 'h' }]
            : undefined,
        }),
        resources: r.conversation ? { conversation: { source: 'pvc:conv' } } : undefined,
      }),
    ),
  );

const grantPolicy: AgentPolicy = unwrap(
  parseAgentPolicy({
    metadata: { name: 'grants', uid: 'u', resourceVersion: '1', creationTimestamp: iso(0) },
    spec: { rbac: { roles: ['pod-reader'], clusterRoles: [] } },
  }),
);
const tightPolicy: AgentPolicy = unwrap(
  parseAgentPolicy({
    metadata: { name: 'tight', uid: 'u2', resourceVersion: '1', creationTimestamp: iso(0) },
    spec: { executions: ['job'] },
  }),
);

const CLAUDE_RESULT = JSON.stringify({
  type: 'result',
  subtype: 'success',
  is_error: false,
  result: 'Done.\n<memory>\n- remember this\n</memory>',
  session_id: 'sess-2',
  total_cost_usd: 0.01,
  usage: { input_tokens: 10, output_tokens: 5 },
});
const logArb = fc.oneof(
  fc.constantFrom('', 'hello from the agent\n', `${CLAUDE_RESULT}\n`, '{"ok":true}\n'),
  fc.string({ maxLength: 40 }),
);

const evidenceArb: fc.Arbitrary<RunEvidence> = fc.oneof(
  fc.constant<RunEvidence>({ kind: 'notGathered' }),
  fc.constant<RunEvidence>({ kind: 'podGone' }),
  fc.constant<RunEvidence>({ kind: 'unavailable', detail: 'pods is forbidden' }),
  fc
    .record({
      exitCode: fc.constantFrom(undefined, 0, 0, 1, 137),
      message: fc.constantFrom(undefined, '{"v":1}', 'oops'),
      log: fc.oneof(
        logArb.map((text) => ({ kind: 'read' as const, text })),
        fc.constant({ kind: 'unavailable' as const, detail: 'container not found' }),
      ),
    })
    .map((r): RunEvidence => ({ kind: 'pod', pod: podFixture('a', r.exitCode, r.message), log: r.log })),
);

const jobConditionsArb = fc.constantFrom<readonly Record<string, unknown>[] | undefined>(
  undefined,
  [],
  complete,
  successCriteriaMet,
  [...successCriteriaMet, ...complete],
  failedBackoff,
  failureTarget,
  [...failureTarget, ...failedBackoff],
  deadlineExceeded,
  [{ type: 'Complete', status: 'False' }],
  [{ type: 'Suspended', status: 'True', reason: 'JobSuspended' }],
);

/** A Job that started with memory records it (its ConfigMap, cap and the version read) in annotations. */
const withJobMemory = <J extends { metadata: { annotations?: Record<string, string> | undefined } }>(
  memory: boolean,
  job: J,
): J =>
  memory
    ? {
        ...job,
        metadata: {
          ...job.metadata,
          annotations: {
            ...job.metadata.annotations,
            'agents.re-cinq.com/memory-configmap': 'notes',
            'agents.re-cinq.com/memory-max-size-kb': '64',
            'agents.re-cinq.com/memory-version': '41',
          },
        },
      }
    : job;

const jobArb = (agentUid: string): fc.Arbitrary<JobObservation> =>
  fc.oneof(
    fc.constant<JobObservation>({ kind: 'unknown' }),
    fc.constant<JobObservation>({ kind: 'absent' }),
    fc
      .record({
        owner: fc.constantFrom<'self' | 'earlier' | 'foreign' | 'none'>(
          'self',
          'self',
          'earlier',
          'foreign',
          'none',
        ),
        conditions: jobConditionsArb,
        created: fc.integer({ min: 0, max: 30 }),
        deleting: oneIn(5),
        evidence: evidenceArb,
        memory: oneIn(3),
      })
      .map(
        (r): JobObservation => ({
          kind: 'present',
          job: withJobMemory(
            r.memory,
            jobFixture('a', {
              owner:
                r.owner === 'self'
                  ? { name: 'a', uid: agentUid }
                  : r.owner === 'earlier'
                    ? { name: 'a', uid: 'uid-a-earlier' }
                    : r.owner === 'foreign'
                      ? { name: 'someone', uid: 'uid-foreign', kind: 'CronJob' }
                      : null,
              created: r.created,
              deleting: r.deleting,
              ...(r.conditions !== undefined ? { conditions: r.conditions } : {}),
            }),
          ),
          evidence: r.evidence,
        }),
      ),
  );

const optionsArb: fc.Arbitrary<ReconcileOptions> = fc
  .record({
    maxOutputBytes: fc.constantFrom(16, 4096, 262144),
    requeueMs: fc.constantFrom(1000, 15000),
    batchEnabled: oneIn(5).map((off) => !off),
    realtimeEnabled: oneIn(5).map((off) => !off),
    controllerNamespace: fc.constantFrom(undefined, 'agent-system'),
    tracing: fc.boolean(),
  })
  .map((r) => ({
    agentImage: 'agent-controller:test',
    maxOutputBytes: r.maxOutputBytes,
    requeueMs: r.requeueMs,
    batch: { enabled: r.batchEnabled, pollMs: 60000 },
    realtime: { enabled: r.realtimeEnabled },
    ...(r.controllerNamespace !== undefined ? { controllerNamespace: r.controllerNamespace } : {}),
    ...(r.tracing ? { tracing: { runTracesUrl: 'http://otel.agent-system:4318/v1/traces' } } : {}),
  }));

/** Executor feedback and other optional observations, each usually absent. */
const extrasArb = fc.record({
  jobRejected: rarely(fc.constant({ message: 'spec.template: Invalid value' }), 20),
  serviceAccountRefused: rarely(fc.constant({ message: 'forbidden' }), 20),
  inputRefused: rarely(fc.constant({ message: 'configmaps is forbidden' }), 20),
  bindingRefused: rarely(fc.constant({ message: 'rolebindings is forbidden' }), 20),
  invalidReference: rarely(fc.constant({ kind: 'Station' as const, name: 'stn', message: 'bad spec' }), 20),
  credentials: rarely(
    fc.constantFrom(
      { kind: 'unknown' as const },
      { kind: 'present' as const },
      { kind: 'missing' as const, message: 'agent-secrets has no ANTHROPIC_API_KEY' },
    ),
  ),
  submission: rarely(
    fc.constantFrom(
      { kind: 'unknown' as const },
      { kind: 'none' as const },
      { kind: 'submitted' as const, id: 'batch-2' },
      { kind: 'rejected' as const, message: '400 bad request' },
      { kind: 'lookedUp' as const, result: { kind: 'absent' as const } },
      {
        kind: 'lookedUp' as const,
        result: { kind: 'found' as const, id: 'batch-3', duplicates: ['batch-4'] },
      },
      { kind: 'lookedUp' as const, result: { kind: 'undecided' as const, candidates: ['batch-5'] } },
    ),
  ),
  batchState: rarely(
    fc.constantFrom(
      { kind: 'inProgress' as const, id: 'batch-1' },
      {
        kind: 'ended' as const,
        id: 'batch-1',
        outcome: { kind: 'succeeded' as const, lines: [CLAUDE_RESULT] },
      },
      {
        kind: 'ended' as const,
        id: 'batch-1',
        outcome: { kind: 'failed' as const, lines: [], message: 'expired' },
      },
    ),
  ),
  cleanup: rarely(
    fc.constantFrom(
      { kind: 'pending' as const, detail: 'cancelling' },
      { kind: 'failed' as const, message: '500' },
    ),
  ),
  cleanupNotBefore: rarely(fc.integer({ min: 0, max: 200 }).map((s) => new Date(T0 + s * 1000))),
  apiServer: rarely(fc.constant({ addresses: ['10.0.0.1'], ports: [6443] })),
  endpoints: rarely(
    fc.constantFrom(
      { kind: 'unsynced' as const },
      { kind: 'unavailable' as const, message: 'endpointslices is forbidden' },
      { kind: 'observed' as const, byService: new Map() },
      {
        kind: 'observed' as const,
        byService: new Map([['db', [{ readyAddresses: ['10.0.0.5'], ports: [5432] }]]]),
      },
    ),
  ),
  memory: rarely(
    fc.constantFrom(
      { kind: 'read' as const, content: '' },
      { kind: 'read' as const, content: '- old note\n', resourceVersion: '41' },
      { kind: 'forbidden' as const, message: 'configmaps "notes" is forbidden' },
      { kind: 'notMemory' as const },
    ),
  ),
  // The memory ConfigMap a Succeeded run saves to: absent, as read, already holding the block, someone else's, refused,
  // or changed under every write.
  memorySave: rarely(
    fc.constantFrom<MemorySaveObservation>(
      { configMap: { kind: 'absent' }, changed: 0 },
      { configMap: { kind: 'present', configMap: notesConfigMap('41', '- old note\n') }, changed: 0 },
      { configMap: { kind: 'present', configMap: notesConfigMap('57', '- remember this') }, changed: 0 },
      { configMap: { kind: 'present', configMap: notesConfigMap('58', 'x', false) }, changed: 0 },
      {
        configMap: { kind: 'failed', message: 'configmaps "notes" is forbidden', forbidden: true },
        changed: 0,
      },
      { configMap: { kind: 'present', configMap: notesConfigMap('63', 'theirs') }, changed: 5 },
    ),
    3,
  ),
  policy: rarely(
    fc.constantFrom(
      { kind: 'none' as const },
      { kind: 'found' as const, policy: grantPolicy },
      { kind: 'found' as const, policy: tightPolicy },
      { kind: 'missing' as const, name: 'gone' },
    ),
    3,
  ),
});

interface Case {
  readonly snapshot: Snapshot;
  readonly now: Date;
}

/** A random snapshot with the world behind its queue view (the siblings and the book's marks), for simulation. */
interface WorldCase {
  readonly world: SimWorld;
  readonly now: Date;
}

const worldCaseArb: fc.Arbitrary<WorldCase> = fc
  .record({
    agent: candidateArb,
    siblings: siblingsArb,
    selfAdmitted: oneIn(4),
    selfJobSeen: oneIn(4),
    station: fc.option(stationSpecArb, { nil: null, freq: 20 }),
    definition: fc.option(definitionArb, { nil: null, freq: 20 }),
    options: optionsArb,
    extras: extrasArb,
    nowSeconds: fc.constantFrom(60, 61, 1900, 100_000),
  })
  .chain((r) =>
    jobArb(r.agent.metadata.uid).map((job): WorldCase => {
      const self = { admitted: r.selfAdmitted, hasJob: r.selfJobSeen };
      const snapshot: Snapshot = {
        agent: r.agent,
        station: r.station === null ? null : makeStation(r.station),
        definition: r.definition,
        job,
        queue: viewOf(r.agent, r.siblings, self),
        options: r.options,
        ...r.extras,
      };
      const world: SimWorld = { snapshot, gone: false, siblings: r.siblings, self, objects: [], serial: 0 };
      return { world, now: new Date(T0 + r.nowSeconds * 1000) };
    }),
  );

const caseArb: fc.Arbitrary<Case> = worldCaseArb.map(({ world, now }) => ({ snapshot: world.snapshot, now }));

// ------------------------------------------------------------------------------------------------ checks

type Patch = Extract<Action, { kind: 'patchStatus' }>;
const patchesOf = (d: Decision): Patch[] => d.actions.filter((a): a is Patch => a.kind === 'patchStatus');
const kindsOf = (d: Decision): string => d.actions.map((a) => a.kind).join(',');

interface OwnerRef {
  readonly uid: string;
  readonly controller?: boolean | undefined;
}

const PHASE_RANK: Record<string, number> = { Pending: 0, Running: 1, Succeeded: 2, Failed: 2 };

function ownedBy(meta: { readonly ownerReferences: readonly OwnerRef[] }, agent: Agent): boolean {
  return meta.ownerReferences.some((r) => r.uid === agent.metadata.uid && r.controller === true);
}

/** Every structural promise a Decision makes (see src/reconcile/actions.ts). */
function checkWellFormed(s: Snapshot, d: Decision): void {
  const { agent } = s;
  const k = kindsOf(d);
  assert.ok(Array.isArray(d.actions));
  for (const a of d.actions) assert.ok(ACTION_KINDS.has(a.kind), `unknown action kind ${a.kind}`);
  if (d.needs !== undefined) {
    assert.ok(NEEDS.has(d.needs), `unknown needs ${d.needs}`);
    assert.equal(d.actions.length, 0, `a decision that needs ${d.needs} has actions: ${k}`);
  }
  if (d.requeueAfterMs !== undefined) {
    assert.ok(
      Number.isFinite(d.requeueAfterMs) && d.requeueAfterMs > 0,
      `requeueAfterMs ${d.requeueAfterMs}`,
    );
  }
  const holders = new Map(s.queue.holders.map((h) => [h.metadata.uid, h]));
  const finished = new Map(s.queue.finished.map((f) => [f.metadata.uid, f]));
  for (const a of d.actions) {
    switch (a.kind) {
      case 'patchStatus':
        assert.equal(
          a.resourceVersion,
          agent.metadata.resourceVersion,
          'a status patch carries the Agent rv',
        );
        assert.equal(a.ref.uid, agent.metadata.uid);
        assert.equal(a.ref.namespace, agent.metadata.namespace);
        assert.equal(a.ref.name, agent.metadata.name);
        assert.equal(a.status.observedGeneration, agent.metadata.generation);
        if (a.status.phase !== undefined) {
          const from = PHASE_RANK[agent.status.phase] ?? 0;
          const to = PHASE_RANK[a.status.phase] ?? 0;
          assert.ok(to >= from, `phase goes back: ${agent.status.phase} → ${a.status.phase}`);
          if (from === 2) assert.equal(a.status.phase, agent.status.phase, 'a finished run changes phase');
        }
        break;
      case 'addFinalizer':
        assert.equal(a.resourceVersion, agent.metadata.resourceVersion);
        assert.equal(a.ref.uid, agent.metadata.uid);
        assert.ok(!agent.metadata.finalizers.includes(a.finalizer), 'adds a finalizer it already holds');
        assert.equal(a.first, agent.metadata.finalizers.length === 0);
        break;
      case 'removeFinalizer':
        assert.equal(a.ref.uid, agent.metadata.uid);
        assert.equal(agent.metadata.finalizers[a.index], a.finalizer, 'removeFinalizer index names it');
        break;
      case 'createJob':
        assert.equal(a.job.metadata.namespace, agent.metadata.namespace);
        assert.ok(ownedBy(a.job.metadata, agent), 'the Job is controlled by the Agent');
        break;
      case 'createRunInput':
        assert.equal(a.configMap.metadata.namespace, agent.metadata.namespace);
        assert.ok(ownedBy(a.configMap.metadata, agent), 'the run input is controlled by the Agent');
        break;
      case 'createNetworkPolicy':
        assert.equal(a.policy.metadata.namespace, agent.metadata.namespace);
        assert.ok(ownedBy(a.policy.metadata, agent), 'the NetworkPolicy is controlled by the Agent');
        break;
      case 'deleteJob':
        assert.equal(a.namespace, agent.metadata.namespace);
        assert.ok(
          s.job.kind === 'present' && s.job.job.metadata.uid === a.uid,
          'deletes only the Job it saw',
        );
        assert.ok(ownedBy(s.job.job.metadata, agent), 'deletes only its own Job');
        break;
      case 'deleteAgent': {
        assert.notEqual(a.ref.uid, agent.metadata.uid, 'an Agent never deletes itself');
        const pool = a.purpose === 'preempt' ? holders : finished;
        const victim = pool.get(a.ref.uid);
        assert.ok(victim !== undefined, `${a.purpose} of ${a.ref.name}, not in the view`);
        assert.equal(a.resourceVersion, victim.metadata.resourceVersion);
        assert.notEqual(a.resourceVersion, '', 'deletes carry a resourceVersion precondition');
        if (a.purpose === 'preempt')
          assert.equal(victim.status.phase, 'Running', 'only Running runs are preempted');
        break;
      }
      case 'recordEvent':
        assert.match(a.reason, /^[A-Z][A-Za-z]*$/);
        assert.ok(a.message.length <= 1000, 'event messages are clipped');
        break;
      default:
        if ('ref' in a) assert.equal(a.ref.uid, agent.metadata.uid);
    }
  }
  // At most one Job, its input ConfigMap right before it.
  const creates = d.actions.flatMap((a, i) => (a.kind === 'createJob' ? [i] : []));
  assert.ok(creates.length <= 1, `more than one createJob: ${k}`);
  const inputs = d.actions.flatMap((a, i) => (a.kind === 'createRunInput' ? [i] : []));
  assert.deepEqual(
    inputs.map((i) => i + 1),
    creates,
    `every createRunInput immediately precedes a createJob: ${k}`,
  );
  assert.ok(patchesOf(d).length <= 2, `too many status patches: ${k}`);
  const starts = d.admits === true || creates.length > 0;
  if (starts) {
    assert.equal(agent.metadata.deletionTimestamp, undefined, `starts a run of an Agent being deleted: ${k}`);
    assert.ok(
      agent.status.phase !== 'Succeeded' && agent.status.phase !== 'Failed',
      `starts a run of a finished Agent: ${k}`,
    );
    checkAdmission(s, d);
  }
}

/**
 * A decision that starts a run respects what `decideAdmission` guarantees: a candidate holding a slot, or an
 * unlimited Station, starts; otherwise first come, first served — it starts only if every other holder plus every
 * queued Agent ahead of it still fits (`holders + ahead < limit`), or under Replace, at the head of the queue, after
 * deleting exactly enough Running holders.
 */
function checkAdmission(s: Snapshot, d: Decision): void {
  assert.ok(s.station !== null, 'a run starts without a Station');
  const view = s.queue;
  const limit = expectedLimit(s.station);
  const victims = d.actions.filter((a) => a.kind === 'deleteAgent' && a.purpose === 'preempt');
  if (view.holdsSlot || limit === 0) {
    assert.equal(victims.length, 0, 'preempts although it needs no slot');
    return;
  }
  const holders = view.holders.length;
  if (victims.length === 0) {
    assert.ok(
      holders + view.ahead < limit,
      `admitted past the limit: ${holders} holders, ${view.ahead} ahead, limit ${limit}`,
    );
    return;
  }
  assert.equal(s.station.spec.concurrencyPolicy, 'Replace', 'preempts outside Replace');
  assert.equal(view.ahead, 0, 'preempts while older Agents wait ahead');
  assert.equal(new Set(victims.map((v) => v.kind === 'deleteAgent' && v.ref.uid)).size, victims.length);
  assert.equal(holders - victims.length + 1, limit, 'preempts exactly enough to make room');
  // The preemption comes before the new run's first write.
  const lastVictim = d.actions.findLastIndex((a) => a.kind === 'deleteAgent' && a.purpose === 'preempt');
  const firstStart = d.actions.findIndex(
    (a) =>
      a.kind === 'createJob' ||
      a.kind === 'createServiceAccount' ||
      a.kind === 'addFinalizer' ||
      (a.kind === 'patchStatus' && a.status.phase === 'Running'),
  );
  assert.ok(firstStart < 0 || lastVictim < firstStart, 'preemption after the start');
}

/** The Agent as the API server holds it after the merge patch `patch` of its status (resourceVersion bumped). */
function applyPatch(agent: Agent, patch: AgentStatusPatch, rv: string): Agent {
  const wire = JSON.parse(JSON.stringify(agent)) as { metadata: Record<string, unknown>; status: object };
  return unwrap(
    parseAgent({
      ...wire,
      metadata: { ...wire.metadata, resourceVersion: rv },
      status: { ...wire.status, ...JSON.parse(JSON.stringify(patch)) },
    }),
  );
}

// ------------------------------------------------------------------------------------------------ convergence

/**
 * Kinds that change nothing `decide` reads: an Event, a metric, a sink notification. Every other kind is a write
 * (a status patch, a finalizer patch, a create, a delete, a server object written, a vendor submission or cleanup, a
 * memory save). A decision at rest has no action at all: not even these, which would be recorded again on every
 * reconcile (the Agent is woken by every poll and every change of its Station).
 */
const SIDE_NOTES: ReadonlySet<Action['kind']> = new Set(['recordEvent', 'observeMetric', 'notifySinks']);

/** The writes of a decision, without the resourceVersion preconditions (which change with every write). */
function writesOf(d: Decision): unknown[] {
  return d.actions
    .filter((a) => !SIDE_NOTES.has(a.kind))
    .map((a) => ('resourceVersion' in a ? { ...a, resourceVersion: '' } : a));
}

/**
 * The most decisions with actions a path may take before it comes to rest (a loop never does). The longest seen take
 * 6: a Pending Agent holding the cleanup finalizer, whose status says it fell back from a batch (a leftover the
 * arbitrary makes), takes the batch finalizer, writes its submission record, adopts its Job, ends with the Job's
 * verdict, then does the batch cleanup and the run cleanup. A timed-out batch run that falls back takes 5
 * (batchFallback, its Job, its verdict, the two cleanups); a batch run's start takes 4 (finalizer, record, submission,
 * batch id).
 */
const MAX_ROUNDS = 8;

/**
 * Why deciding again on the state `d` produced (from `before`) may legitimately write more: the paths that take
 * more than one decision by design, each one step per reconcile. Undefined when none applies: a write that should
 * have been made at once, or a loop.
 *
 * - `finalizer added`: a run that will hold bindings takes the cleanup finalizer first and is admitted afresh when
 *   the patch wakes it, before its ServiceAccount, bindings and Job (issue 9 §6); a batch run takes the batch
 *   finalizer before its submission record (crash-safety protocol, steps 1 → 2). A finalizer patch cannot carry
 *   anything else, and it must land before the objects it guards exist.
 * - `finalizer removed, another held`: a finished or deleted Agent does the batch cleanup, then the run cleanup, one
 *   finalizer per decision (each removal is a JSON patch testing its own entry).
 * - `phase changed`: each phase has its own rows, decided on the Agent as the API server now holds it. Pending →
 *   Running adopts a Job that may already have its verdict (then Succeeded / Failed), or writes a batch submission
 *   record (then the vendor is asked, step 3); Pending / Running → Succeeded / Failed leaves the finalizers' cleanup
 *   to the terminal rows.
 * - `batch submitted`: the vendor's answer to `submitBatch` (a new batch id) is recorded by the next decision
 *   (step 4); it is not known before the call returns.
 * - `fell back to a Job`: a timed-out batch run with `onTimeout: fallback` records `batchFallback` first; the next
 *   decision creates its Job once admitted like any Job run (or adopts the one an earlier attempt created), or does
 *   the batch cleanup while it waits.
 * - `fallback Job recorded`: once the fallback Job's name is recorded, its Job rows (a verdict it already has) and
 *   the batch cleanup follow, each in its own decision.
 */
function anotherRound(before: SimWorld, d: Decision, after: SimWorld): string | undefined {
  const was = before.snapshot.agent;
  const now = after.snapshot.agent;
  if (d.actions.some((a) => a.kind === 'addFinalizer')) return 'finalizer added';
  if (
    d.actions.some((a) => a.kind === 'removeFinalizer') &&
    (now.metadata.finalizers.includes(BATCH_FINALIZER) ||
      now.metadata.finalizers.includes(RUN_CLEANUP_FINALIZER))
  )
    return 'finalizer removed, another held';
  if (was.status.phase !== now.status.phase) return 'phase changed';
  // The dependencies gate records that the wait is over (DependenciesReady=True) before admission decides.
  const depsReady = (a: typeof was) =>
    a.status.conditions.find((c) => c.type === 'DependenciesReady')?.status === 'True';
  if (!depsReady(was) && depsReady(now)) return 'dependencies ready recorded';
  if (d.actions.some((a) => a.kind === 'submitBatch')) return 'batch submitted';
  if (was.status.batchFallback !== true && now.status.batchFallback === true) return 'fell back to a Job';
  if (now.status.batchFallback === true && !was.status.jobName && now.status.jobName)
    return 'fallback Job recorded';
  return undefined;
}

/** One line per decision of a path, for failure messages. */
function describeRound(w: SimWorld, d: Decision): string {
  const a = w.snapshot.agent;
  const flags = [
    a.status.phase,
    a.metadata.deletionTimestamp !== undefined ? 'deleting' : '',
    a.metadata.finalizers.join('+'),
    a.status.batchProvider ?? '',
    a.status.batchFallback === true ? 'fallback' : '',
  ]
    .filter((x) => x !== '')
    .join(' ');
  const acts = d.actions.map((x) =>
    x.kind === 'patchStatus' ? `patchStatus(${Object.keys(x.status).join(' ')})` : x.kind,
  );
  const what = acts.join(', ') || `nothing${d.needs !== undefined ? ` (needs ${d.needs})` : ''}`;
  return `[${flags}] job=${w.snapshot.job.kind} → ${what}`;
}

/**
 * Decides on `world`, applies the decision (apply-actions.test-support.ts: as the API server, the vendor and the
 * shell's caches would), and decides again on the result, at the same instant `now` (so that nothing is due to time
 * passing), until decide has nothing to do or the Agent is gone. Returns the path, one line per decision; fails at the
 * first broken promise:
 * - every decision is well-formed (`checkWellFormed`);
 * - no decision is superseded by its own writes (its preconditions hold on the snapshot it was made from);
 * - every applied decision changes the world (else the same decision would be made on every reconcile);
 * - no two consecutive decisions make the same writes;
 * - a decision with actions after the first one is due to a documented multi-step path (`anotherRound`): otherwise
 *   deciding again on the state a decision produced should have found nothing more to do;
 * - the path comes to rest within MAX_ROUNDS decisions with actions.
 */
function settle(world: SimWorld, now: Date): string[] {
  let w = world;
  let previous: { readonly world: SimWorld; readonly decision: Decision } | undefined;
  const path: string[] = [];
  const fail = (why: string): never => assert.fail(`${why}\n  ${path.join('\n  ')}`);
  for (let round = 1; ; round++) {
    const d = decide(w.snapshot, now);
    path.push(describeRound(w, d));
    checkWellFormed(w.snapshot, d);
    if (d.actions.length === 0) return path;
    if (round > MAX_ROUNDS) fail(`no rest after ${MAX_ROUNDS} decisions`);
    if (previous !== undefined) {
      if (anotherRound(previous.world, previous.decision, w) === undefined)
        fail(`decision ${round} writes again after a decision that should have settled it`);
      const writes = writesOf(d);
      if (writes.length > 0 && canonical(writes) === canonical(writesOf(previous.decision)))
        fail(`decision ${round} repeats the writes of the one before`);
    }
    const applied = applyDecision(w, d, now);
    if (applied.outcome.kind === 'superseded')
      fail(`decision ${round} is superseded by its own writes: ${applied.outcome.what}`);
    if (sameState(w, applied.world)) fail(`decision ${round} changes nothing: it would be made forever`);
    previous = { world: w, decision: d };
    w = applied.world;
    // Deleted for good: nothing is decided about it any more.
    if (w.gone) return path;
  }
}

// ------------------------------------------------------------------------------------------------ properties

describe('decide (properties)', () => {
  it('never throws and returns a well-formed decision that respects admission, for random snapshots', () => {
    fc.assert(
      fc.property(caseArb, ({ snapshot, now }) => {
        const d = decide(snapshot, now);
        checkWellFormed(snapshot, d);
        // Pure: the same snapshot decides the same way.
        assert.deepEqual(decide(snapshot, now), d);
      }),
      { numRuns: 600 },
    );
  });

  it('a startable run (job, batch, batch fallback) starts exactly when admission has room for it (FIFO), else is queued once', () => {
    const startable = fc.record({
      mode: fc.constantFrom('job', 'job', 'batch', 'batchRecord', 'fallback'),
      created: fc.integer({ min: 0, max: 5 }),
      siblings: siblingsArb,
      selfAdmitted: oneIn(5),
      station: stationSpecArb,
      staleQueued: fc.boolean(),
    });
    fc.assert(
      fc.property(startable, (r) => {
        const fallback = r.mode === 'fallback';
        const agent = makeAgent({
          name: 'a',
          uid: 'uid-a',
          rv: 'rv-a',
          generation: 1,
          created: r.created,
          deleting: false,
          finalizers: r.mode === 'batchRecord' ? [BATCH_FINALIZER] : [],
          station: 'stn',
          spec: { parameters: { thing: 'x' } },
          annotations: undefined,
          status: fallback
            ? { phase: 'Running', batchProvider: 'anthropic', batchFallback: true, startedAt: iso(1) }
            : // An older Queued condition whose message is out of date is rewritten once.
              r.staleQueued
              ? { conditions: [condition('Ready', 'False', 'Queued', 1)] }
              : undefined,
        });
        const station = makeStation(r.station);
        const queue = viewOf(agent, r.siblings, { admitted: r.selfAdmitted, hasJob: false });
        const s: Snapshot = {
          agent,
          station,
          definition: definitionFixture('def', r.mode === 'job' ? {} : { execution: 'batch' }),
          job: { kind: 'absent' },
          queue,
          credentials: { kind: 'present' },
          options: {
            agentImage: 'agent-controller:test',
            maxOutputBytes: 4096,
            requeueMs: 15000,
            batch: { enabled: true, pollMs: 60000 },
            realtime: { enabled: true },
          },
        };
        const now = new Date(T0 + 60_000);
        const d = decide(s, now);
        checkWellFormed(s, d);
        const limit = expectedLimit(station);
        const runningHolders = queue.holders.filter(
          (h) => h.status.phase === 'Running' && h.metadata.resourceVersion !== '',
        ).length;
        const room = queue.holdsSlot || limit === 0 || queue.holders.length + queue.ahead < limit;
        const canReplace =
          station.spec.concurrencyPolicy === 'Replace' &&
          queue.ahead === 0 &&
          runningHolders >= queue.holders.length - limit + 1;
        const started = d.admits === true || d.actions.some((a) => a.kind === 'createJob');
        assert.equal(started, room || canReplace, `started=${started}: ${kindsOf(d)}`);
        if (started) {
          if (r.mode === 'job' || fallback) assert.ok(d.actions.some((a) => a.kind === 'createJob'));
          if (r.mode === 'batch') assert.ok(d.actions.some((a) => a.kind === 'addFinalizer'));
          return;
        }
        if (fallback) {
          // A fallback waits in Running: nothing is written while it waits.
          assert.deepEqual(d.actions, [], kindsOf(d));
          return;
        }
        // Queued: Ready=False/Queued written once, with its Event.
        const p = patchesOf(d);
        assert.equal(p.length, 1, kindsOf(d));
        assert.equal(p[0]!.status.conditions.find((c) => c.type === 'Ready')?.reason, 'Queued');
        assert.ok(d.actions.some((a) => a.kind === 'recordEvent' && a.reason === 'Queued'));
        // Idempotent: deciding again on the status just patched writes nothing more.
        const after = applyPatch(agent, p[0]!.status, 'rv-a-1');
        const again: Snapshot = {
          ...s,
          agent: after,
          queue: viewOf(after, r.siblings, { admitted: r.selfAdmitted, hasJob: false }),
        };
        const d2 = decide(again, new Date(now.getTime() + 1000));
        checkWellFormed(again, d2);
        assert.deepEqual(d2.actions, [], `decides again: ${kindsOf(d2)}`);
      }),
      { numRuns: 500 },
    );
  });

  it('a finished Job: deciding again on the status just patched writes nothing more', () => {
    const finishing = fc.record({
      agent: candidateArb,
      conditions: fc.constantFrom(
        complete,
        successCriteriaMet,
        [...successCriteriaMet, ...complete],
        failedBackoff,
      ),
      exitCode: fc.constantFrom(0, 0, 1, 137),
      log: logArb,
      definition: definitionArb,
      siblings: siblingsArb,
      station: stationSpecArb,
      options: optionsArb,
    });
    fc.assert(
      fc.property(finishing, (r) => {
        // A Running job run (not batch, not being deleted), whatever else its status says.
        const agent = applyPatch(
          {
            ...r.agent,
            metadata: {
              ...r.agent.metadata,
              finalizers: r.agent.metadata.finalizers.filter((f) => f !== BATCH_FINALIZER),
            },
          },
          {
            phase: 'Running',
            jobName: jobNameFor('a'),
            startedAt: iso(2),
            conditions: r.agent.status.conditions,
          },
          r.agent.metadata.resourceVersion,
        );
        const running: Agent = {
          ...agent,
          metadata: (({ deletionTimestamp: _d, ...m }) => m)(agent.metadata),
          status: (({ batchProvider: _p, batchFallback: _f, ...st }) => st)(agent.status),
        };
        const base: Omit<Snapshot, 'agent' | 'queue'> = {
          station: makeStation(r.station),
          definition: r.definition,
          job: {
            kind: 'present',
            job: jobFixture('a', {
              owner: { name: 'a', uid: running.metadata.uid },
              conditions: r.conditions,
            }),
            evidence: { kind: 'pod', pod: podFixture('a', r.exitCode), log: { kind: 'read', text: r.log } },
          },
          options: r.options,
        };
        const now = new Date(T0 + 90_000);
        const first: Snapshot = {
          ...base,
          agent: running,
          queue: viewOf(running, r.siblings, { admitted: false, hasJob: true }),
        };
        const d1 = decide(first, now);
        checkWellFormed(first, d1);
        const p1 = patchesOf(d1);
        assert.equal(p1.length, 1, `one terminal patch expected: ${kindsOf(d1)}`);
        const patch = p1[0]!.status;
        assert.ok(patch.phase === 'Succeeded' || patch.phase === 'Failed');
        const after = applyPatch(running, patch, `${running.metadata.resourceVersion}-1`);
        const second: Snapshot = {
          ...base,
          agent: after,
          queue: viewOf(after, r.siblings, { admitted: false, hasJob: true }),
        };
        const d2 = decide(second, new Date(now.getTime() + 1000));
        checkWellFormed(second, d2);
        const writes = d2.actions.filter((a) => a.kind === 'patchStatus' || a.kind === 'createJob');
        assert.deepEqual(writes, [], `writes again after its own patch: ${kindsOf(d2)}`);
        // Only the finalizer's cleanup may remain (its work is idempotent).
        for (const a of d2.actions) {
          assert.ok(
            a.kind === 'deleteRunBindings' || a.kind === 'removeFinalizer',
            `unexpected ${a.kind} after the terminal patch`,
          );
        }
      }),
      { numRuns: 300 },
    );
  });

  it('deciding again on the state a decision produced writes nothing more: random snapshots come to rest, without loops', () => {
    // Issue 13 §2: "the decision is idempotent (applying it and deciding again yields no further writes)", for the
    // random snapshots above; a path that takes several decisions by design is followed to its end (see `settle`).
    fc.assert(
      fc.property(worldCaseArb, ({ world, now }) => {
        settle(world, now);
      }),
      { numRuns: 6000, includeErrorInReport: true },
    );
  });
});

describe('decide (idempotency counterexamples)', () => {
  // Found by the property above (`fc.assert` reported seed -902264580, path "80083" with the arbitraries as written
  // here), then cut down to what matters. It fails until the core is fixed: do not weaken it.
  it('a queued run whose dependency goes unready is told it waits, and deciding again on that patch waits on (regression)', () => {
    // Queued since T0+5 s (Ready=False/Queued: its Station was full while its dependency was ready); at T0+600 s the
    // dependency has no ready endpoint. The gate (dependencies.ts) says: wait, re-checked in 60 s (the timeout). It
    // once took the wait's start from Ready's lastTransitionTime, which the patch kept (Ready stayed False), so
    // deciding again at the same instant failed the run ("not ready after 60s") without a second of waiting. The
    // start is now DependenciesReady=False's own lastTransitionTime.
    const agent = makeAgent({
      name: 'a',
      uid: 'uid-a',
      rv: 'rv-a',
      generation: 1,
      created: 0,
      deleting: false,
      finalizers: [],
      station: 'stn',
      spec: { parameters: { thing: 'x' } },
      annotations: undefined,
      status: { conditions: [condition('Ready', 'False', 'Queued', 1)] },
    });
    const self = { admitted: false, hasJob: false };
    const snapshot: Snapshot = {
      agent,
      station: makeStation({ concurrencyPolicy: undefined, maxConcurrentRuns: 1, historyLimit: undefined }),
      definition: definitionFixture('def', {
        dependencies: [{ service: 'db', port: 5432, timeoutSeconds: 60 }],
      }),
      job: { kind: 'absent' },
      queue: viewOf(agent, [], self),
      endpoints: { kind: 'observed', byService: new Map() },
      options: {
        agentImage: 'agent-controller:test',
        maxOutputBytes: 4096,
        requeueMs: 15000,
        batch: { enabled: true, pollMs: 60000 },
        realtime: { enabled: true },
      },
    };
    const now = new Date(T0 + 600_000);
    const first = decide(snapshot, now);
    assert.equal(kindsOf(first), 'patchStatus,recordEvent');
    assert.equal(
      patchesOf(first)[0]?.status.conditions.find((c) => c.type === 'Ready')?.reason,
      'WaitingForDependencies',
    );
    assert.equal(first.requeueAfterMs, 60_000, 'it says the dependency has 60 s left');
    const world: SimWorld = { snapshot, gone: false, siblings: [], self, objects: [], serial: 0 };
    const { world: after } = applyDecision(world, first, now);
    const again = decide(after.snapshot, now);
    assert.equal(
      kindsOf(again),
      '',
      `deciding again at the same instant writes ${kindsOf(again)}: ${patchesOf(again)[0]?.status.failureReason}`,
    );
  });
});
