// Every handler of the executor's table, driven through the fake transport for each answer class the executor
// contract names for its kind (src/reconcile/executor-contract.ts): the outcome must be what the contract entry says.
// Besides, one expectation per kind is written out literally below, so that a wrong contract entry and a handler
// that follows it cannot agree silently.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildJob,
  buildRunBindings,
  buildRunInput,
  buildRunNetworkPolicy,
  buildRunServiceAccount,
  type InputConfigMapManifest,
} from '../../jobs/index.ts';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../../kube/fake-transport.ts';
import { createEventRecorder } from '../../kube/index.ts';
import { type ControllerMetrics, createControllerMetrics } from '../../metrics/index.ts';
import { batchRequestFor } from '../../reconcile/batch/plan.ts';
import {
  type Answer,
  EXECUTOR_CONTRACT,
  namedAnswers,
  type Outcome,
  outcomeOf,
} from '../../reconcile/executor-contract.ts';
import type { Action, AgentRef } from '../../reconcile/index.ts';
import { agent, at, definition, NS, station } from '../../reconcile/test-fixtures.ts';
import { createLogger } from '../../shared/log.ts';
import type { BatchError, BatchVendor, CleanupOutcome } from '../../vendors/batch/port.ts';
import { createBatchRuntime } from '../batch/runtime.ts';
import { createSecretReader } from '../batch/secrets.ts';
import { executeActions } from '../execute.ts';
import { memorySessionState } from '../sessions/port.ts';
import { type ExecuteDeps, outcomeClass } from './deps.ts';

type Kind = Action['kind'];
type Script = (req: FakeRequest) => FakeReply;

/** One scenario: the action, how the API server answers, and what else the handler is given. */
interface Case {
  readonly action: Action;
  readonly reply: Script;
  readonly deps?: Partial<ExecuteDeps>;
}

const ref: AgentRef = { namespace: NS, name: 'a1', uid: 'uid-a1' };

/** A Status body as the API server sends it with an error. */
const status = (code: number, reason: string): FakeReply => ({
  status: code,
  body: {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `${reason} (test)`,
    reason,
    code,
  },
});

/** The API server's answer for each API answer class. */
const API = {
  alreadyExists: status(409, 'AlreadyExists'),
  conflict: status(409, 'Conflict'),
  notFound: status(404, 'NotFound'),
  forbidden: status(403, 'Forbidden'),
  invalid: status(422, 'Invalid'),
  badRequest: status(400, 'BadRequest'),
  error: status(500, 'InternalError'),
} as const satisfies Readonly<Record<string, FakeReply>>;

/** A written object as the API server echoes it. */
function echo(req: FakeRequest): FakeReply {
  const body = (typeof req.body === 'object' && req.body !== null ? req.body : {}) as Record<string, unknown>;
  const metadata = (body.metadata ?? {}) as Record<string, unknown>;
  return {
    status: req.method === 'POST' ? 201 : 200,
    body: {
      ...(Array.isArray(req.body) ? {} : body),
      metadata: { name: 'echoed', namespace: NS, ...metadata, uid: 'uid-new', resourceVersion: '7' },
    },
  };
}

/** Every write answered with `answer` (an API answer class, or `ok`). */
const writes =
  (answer: Answer): Script =>
  (req) =>
    answer === 'ok'
      ? echo(req)
      : ((API as Readonly<Record<string, FakeReply | undefined>>)[answer] ??
        assert.fail(`no API answer ${answer}`));

/** A create answered 409 AlreadyExists, and the object of that name read back as `found` (undefined: gone). */
const taken =
  (found: unknown): Script =>
  (req) =>
    req.method === 'POST'
      ? API.alreadyExists
      : found === undefined
        ? API.notFound
        : { status: 200, body: found };

const judged = (answer: Answer, ours: unknown, other: unknown): Script | undefined => {
  if (answer === 'existsFound') return taken(ours ?? other);
  if (answer === 'existsGone') return taken(undefined);
  return writes(answer);
};

const built = agent('a1');
const job = (() => {
  const b = buildJob({
    agent: built,
    station: station(),
    definition: definition(),
    agentImage: 'img',
    now: at(5),
  });
  if (!b.ok) throw new Error(b.error);
  return b.value;
})();
const input: InputConfigMapManifest = buildRunInput({
  agent: built,
  station: station(),
  definition: definition(),
  agentImage: 'img',
  now: at(5),
});
const [binding] = buildRunBindings(built, 'stn', { roles: ['view'], clusterRoles: [] });
const serverObject = {
  resource: 'services',
  manifest: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: 'srv',
      namespace: NS,
      labels: {},
      annotations: {},
      ownerReferences: job.metadata.ownerReferences,
    },
    spec: { ports: [{ port: 80 }] },
  },
} as const;

/** A vendor whose every answer is `answer` (an answer class of the contract). */
function vendor(answer: Answer): BatchVendor {
  const failure: BatchError =
    answer === 'vendorRefused'
      ? { kind: 'rejected', status: 400, type: 'invalid_request', message: 'refused (test)' }
      : { kind: 'unavailable', status: 503, message: 'unavailable (test)' };
  const cleanup: CleanupOutcome =
    answer === 'pending' ? { kind: 'pending', detail: 'cancel sent' } : { kind: 'done' };
  return {
    submit: () =>
      Promise.resolve(
        answer === 'ok' ? { ok: true, value: { id: 'batch-1' } } : { ok: false, error: failure },
      ),
    cleanup: () =>
      Promise.resolve(
        answer === 'ok' || answer === 'pending'
          ? { ok: true, value: cleanup }
          : { ok: false, error: failure },
      ),
  } as unknown as BatchVendor;
}

/** The batch runtime: the key read through the fake transport (`keyMissing`: 404, `error`: 500), the vendor's answer. */
function batchCase(action: Action, answer: Answer): Case {
  const secret: Script = () =>
    answer === 'keyMissing'
      ? API.notFound
      : answer === 'error'
        ? API.error
        : { status: 200, body: { data: { ANTHROPIC_API_KEY: btoa('sk-test') } } };
  if (answer === 'notReady') return { action, reply: secret };
  const transport = createFakeTransport({ request: secret });
  const v = vendor(answer);
  const batch = createBatchRuntime({
    baseUrls: { anthropic: 'http://127.0.0.1:9', gemini: 'http://127.0.0.1:9', openai: 'http://127.0.0.1:9' },
    secrets: createSecretReader({ transport, now: () => 0 }),
    vendors: { anthropic: v, gemini: v, openai: v },
  });
  return { action, reply: secret, deps: { batch } };
}

const batchRequest = batchRequestFor(
  agent('a1', { status: { phase: 'Running' } }),
  definition(),
  'claude-sonnet-5',
);

/** Each kind's scenario for an answer class; undefined when the kind has none for it. */
const SCENARIOS: { readonly [K in Kind]: (answer: Answer, variant?: string) => Case | undefined } = {
  createServiceAccount: (answer) => ({
    action: { kind: 'createServiceAccount', serviceAccount: buildRunServiceAccount(built, 'stn') },
    reply: writes(answer),
  }),
  createRunBinding: (answer) => {
    if (binding === undefined) throw new Error('no binding built');
    const reply = judged(
      answer,
      { metadata: { name: binding.metadata.name, labels: binding.metadata.labels } },
      { metadata: { name: binding.metadata.name, labels: { someone: 'else' } } },
    );
    return reply && { action: { kind: 'createRunBinding', binding }, reply };
  },
  deleteRunBindings: (answer) => {
    // ok: nothing listed; notFound: one ClusterRoleBinding listed, already gone when deleted.
    const list = (items: unknown[]): FakeReply => ({
      status: 200,
      body: { kind: 'List', items, metadata: { resourceVersion: '5' } },
    });
    const crb = { metadata: { name: 'crb', labels: {} } };
    const reply: Script =
      answer === 'ok'
        ? (req) => (req.method === 'GET' ? list([]) : API.error)
        : answer === 'notFound'
          ? (req) =>
              req.method === 'DELETE'
                ? API.notFound
                : list(req.path.endsWith('/clusterrolebindings') ? [crb] : [])
          : writes(answer);
    return { action: { kind: 'deleteRunBindings', ref }, reply };
  },
  createNetworkPolicy: (answer) => ({
    action: {
      kind: 'createNetworkPolicy',
      policy: buildRunNetworkPolicy({ agent: built, station: station(), definition: definition() }),
    },
    reply: writes(answer),
  }),
  createRunInput: (answer) => {
    const reply = judged(
      answer,
      { metadata: input.metadata, data: input.data },
      { metadata: { name: input.metadata.name, namespace: NS, uid: 'uid-other' }, data: {} },
    );
    return reply && { action: { kind: 'createRunInput', configMap: input }, reply };
  },
  deleteRunInput: (answer) => ({
    action: { kind: 'deleteRunInput', ref, namespace: NS, name: input.metadata.name, uid: 'uid-input' },
    reply: writes(answer),
  }),
  createJob: (answer) => ({ action: { kind: 'createJob', job }, reply: writes(answer) }),
  deleteJob: (answer) => ({
    action: { kind: 'deleteJob', namespace: NS, name: job.metadata.name, uid: 'uid-job' },
    reply: writes(answer),
  }),
  patchStatus: (answer) => ({
    action: { kind: 'patchStatus', ref, resourceVersion: '5', status: { phase: 'Running', conditions: [] } },
    reply: writes(answer),
  }),
  deleteAgent: (answer, variant) => ({
    action: {
      kind: 'deleteAgent',
      ref,
      resourceVersion: '5',
      purpose: variant === 'prune' ? 'prune' : 'preempt',
      reason: 'test',
    },
    reply: writes(answer),
  }),
  addFinalizer: (answer) => ({
    action: { kind: 'addFinalizer', ref, resourceVersion: '5', finalizer: 'f', first: true },
    reply: writes(answer),
  }),
  removeFinalizer: (answer) => ({
    action: { kind: 'removeFinalizer', ref, finalizer: 'f', index: 0 },
    reply: writes(answer),
  }),
  recordEvent: (answer) => ({
    action: { kind: 'recordEvent', ref, type: 'Normal', reason: 'Tested', message: 'tested' },
    reply: writes(answer),
  }),
  notifySinks: (answer) => ({
    action: {
      kind: 'notifySinks',
      ref,
      sinks: [{ url: 'http://127.0.0.1:9/sink' }],
      source: { agent: 'a1', station: 'stn', namespace: NS },
      events: [{ kind: 'lifecycle', phase: 'agent', status: 'started' }],
    },
    reply: writes('ok'),
    deps: {
      sinks: {
        deliver: () => {
          if (answer !== 'ok') throw new Error('deliverer exploded (test)');
        },
        idle: () => Promise.resolve(),
      },
    },
  }),
  recordSpend: (answer) => ({
    action: {
      kind: 'recordSpend',
      namespace: NS,
      set: [{ uid: 'uid-a1', entry: { station: 'stn', at: '2026-01-01T00:00:00Z', usd: '1.5', tokens: 10 } }],
      gone: [],
      hourMs: 3_600_000,
      nowMs: Date.parse('2026-01-01T01:00:00Z'),
    },
    // No ledger yet: it is created.
    reply: (req) => (req.method === 'GET' ? API.notFound : writes(answer)(req)),
  }),
  saveMemory: (answer, variant) => ({
    action: {
      kind: 'saveMemory',
      ref,
      namespace: NS,
      configMap: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'mem', namespace: NS, labels: { 'agents.re-cinq.com/memory': 'true' } },
        data: { 'MEMORY.md': '# memory' },
      },
      ...(variant === 'replace' ? { replace: { resourceVersion: '41' } } : {}),
    },
    reply: writes(answer),
  }),
  observeMetric: (answer) => ({
    action: { kind: 'observeMetric', observation: { metric: 'runQueue', seconds: 3 } },
    reply: writes('ok'),
    deps:
      answer === 'ok'
        ? {}
        : {
            metrics: {
              ...createControllerMetrics(false),
              runQueue: {
                observe: () => {
                  throw new Error('series exploded (test)');
                },
              },
            } as unknown as ControllerMetrics,
          },
  }),
  submitBatch: (answer) =>
    batchCase(
      {
        kind: 'submitBatch',
        ref,
        provider: 'anthropic',
        secretKey: 'ANTHROPIC_API_KEY',
        request: batchRequest,
      },
      answer,
    ),
  cleanupBatch: (answer) =>
    batchCase(
      {
        kind: 'cleanupBatch',
        ref,
        provider: 'anthropic',
        secretKey: 'ANTHROPIC_API_KEY',
        batchId: 'batch-1',
      },
      answer,
    ),
  createPromptToken: (answer) => ({
    action: { kind: 'createPromptToken', ref, uid: ref.uid, secretName: 'tok' },
    reply: writes(answer === 'notReady' ? 'ok' : answer),
    deps: { promptTokens: answer === 'notReady' ? undefined : { tokenFor: () => 'token' } },
  }),
  createGatewayCredential: (answer) => ({
    action: { kind: 'createGatewayCredential', ref, uid: ref.uid, secretName: 'cred' },
    reply: writes(answer === 'notReady' ? 'ok' : answer),
    deps: { gatewayCredentials: answer === 'notReady' ? undefined : { credentialFor: () => 'credential' } },
  }),
  createServerApiKey: (answer) => ({
    action: { kind: 'createServerApiKey', ref, secretName: 'key', recorded: false },
    reply: writes(answer),
  }),
  applyServerObject: (answer) => ({
    action: { kind: 'applyServerObject', ref, object: serverObject },
    reply: writes(answer),
  }),
  deleteServerObject: (answer) => ({
    action: { kind: 'deleteServerObject', ref, resource: 'httproutes', name: 'route', uid: 'uid-route' },
    reply: writes(answer),
  }),
  deleteSession: (answer) => {
    // ok: the store deleted it; error: the store failed; notReady: no store on this controller.
    const store = memorySessionState();
    if (answer === 'error') store.failDeletes = 1;
    return {
      action: { kind: 'deleteSession', ref },
      reply: writes('ok'),
      deps: { sessions: answer === 'notReady' ? undefined : store },
    };
  },
};

/** Runs the scenario through the executor (one action, the handler the table holds) and names the outcome. */
async function run(c: Case): Promise<Outcome | 'notLeading'> {
  const transport = createFakeTransport({ request: c.reply });
  const logger = createLogger('error', () => {});
  const events = createEventRecorder({
    transport,
    component: 'agent-controller',
    instance: 'test',
    now: () => at(10).getTime(),
    random: () => 0.5,
    logger,
  });
  const deps: ExecuteDeps = {
    transport,
    events,
    metrics: createControllerMetrics(false),
    logger,
    promptTokens: { tokenFor: () => 'token' },
    ...c.deps,
  };
  const out = await executeActions([c.action], deps);
  return outcomeClass(out.kind === 'done' ? undefined : out);
}

const scenario = (kind: Kind, answer: Answer, variant?: string): Case => {
  const c = SCENARIOS[kind](answer, variant);
  assert.ok(c !== undefined, `no scenario for ${kind} answered ${answer}`);
  return c;
};

/**
 * One expectation per kind, written out (not read from the contract): kind → [answer, outcome, variant?]. A
 * change of the contract that changes one of these must change this table too.
 */
const LITERAL: { readonly [K in Kind]: readonly [Answer, Outcome, string?] } = {
  createServiceAccount: ['forbidden', 'decideAgain:serviceAccountRefused'],
  createRunBinding: ['existsGone', 'retryLater'],
  deleteRunBindings: ['forbidden', 'continue'],
  createNetworkPolicy: ['forbidden', 'continue'],
  createRunInput: ['existsFound', 'decideAgain:found'],
  deleteRunInput: ['conflict', 'retryLater'],
  createJob: ['alreadyExists', 'decideAgain:job'],
  deleteJob: ['conflict', 'continue'],
  patchStatus: ['conflict', 'superseded'],
  deleteAgent: ['conflict', 'continue', 'prune'],
  addFinalizer: ['invalid', 'superseded'],
  removeFinalizer: ['notFound', 'superseded'],
  recordEvent: ['error', 'continue'],
  notifySinks: ['error', 'continue'],
  saveMemory: ['conflict', 'decideAgain:memoryChanged', 'replace'],
  recordSpend: ['forbidden', 'continue'],
  observeMetric: ['error', 'continue'],
  submitBatch: ['ok', 'decideAgain:submission:submitted'],
  cleanupBatch: ['pending', 'decideAgain:cleanup:pending'],
  createPromptToken: ['notReady', 'retryLater'],
  createGatewayCredential: ['notReady', 'retryLater'],
  createServerApiKey: ['alreadyExists', 'continue'],
  applyServerObject: ['badRequest', 'decideAgain:serverRejected'],
  deleteServerObject: ['error', 'retry'],
  deleteSession: ['error', 'decideAgain:sessionCleanup:failed'],
};

const KINDS = Object.keys(EXECUTOR_CONTRACT) as Kind[];

describe('executor contract: every handler answers as its entry says', () => {
  for (const kind of KINDS) {
    it(`${kind}: every answer class the contract names`, async () => {
      for (const { answer, variant } of namedAnswers(kind)) {
        const got = await run(scenario(kind, answer, variant));
        assert.equal(
          got,
          outcomeOf(kind, answer, variant),
          `${kind} answered ${answer}${variant ? ` (${variant})` : ''}`,
        );
      }
    });
    it(`${kind}: the expectation written out`, async () => {
      const [answer, expected, variant] = LITERAL[kind];
      assert.equal(outcomeOf(kind, answer, variant), expected, 'the contract entry');
      assert.equal(await run(scenario(kind, answer, variant)), expected, 'the handler');
    });
  }
});

describe('executor contract: the entries', () => {
  it('best-effort kinds never stop a decision, whatever the answer', () => {
    for (const kind of KINDS) {
      const entry = EXECUTOR_CONTRACT[kind];
      if (!entry.bestEffort) continue;
      for (const { answer } of namedAnswers(kind)) assert.equal(outcomeOf(kind, answer), 'continue', kind);
    }
  });

  it('fences, last leader checks and the landed patch, written out', () => {
    const byFence = (fence: string) => KINDS.filter((k) => EXECUTOR_CONTRACT[k].fence === fence).sort();
    assert.deepEqual(byFence('never'), ['observeMetric']);
    assert.deepEqual(byFence('beforePatch'), ['notifySinks', 'recordEvent']);
    assert.deepEqual(KINDS.filter((k) => EXECUTOR_CONTRACT[k].bestEffort).sort(), [
      'notifySinks',
      'observeMetric',
      'recordEvent',
    ]);
    assert.deepEqual(KINDS.filter((k) => EXECUTOR_CONTRACT[k].lastLeaderCheck).sort(), [
      'createJob',
      'submitBatch',
    ]);
    assert.deepEqual(
      KINDS.filter((k) => EXECUTOR_CONTRACT[k].landsPatch),
      ['patchStatus'],
    );
  });

  it('an answer the entry does not name means what `error` does', () => {
    assert.equal(outcomeOf('deleteJob', 'forbidden'), 'retry');
    assert.equal(outcomeOf('submitBatch', 'forbidden'), 'retryLater');
    assert.equal(outcomeOf('deleteAgent', 'conflict'), 'superseded');
    assert.equal(outcomeOf('deleteAgent', 'conflict', 'prune'), 'continue');
    // A create of the memory ConfigMap answered 404 (its namespace went): a failure told, not a change to re-read.
    assert.equal(outcomeOf('saveMemory', 'notFound'), 'decideAgain:memoryFailed');
    assert.equal(outcomeOf('saveMemory', 'notFound', 'replace'), 'decideAgain:memoryChanged');
  });

  it('a last leader check stops a Job create before it is sent', async () => {
    const c = scenario('createJob', 'ok');
    const sent: string[] = [];
    const out = await run({
      ...c,
      reply: (req) => {
        sent.push(`${req.method} ${req.path}`);
        return c.reply(req);
      },
      deps: { beforeCreateJob: () => false },
    });
    assert.equal(out, 'notLeading');
    assert.deepEqual(sent, []);
    const submit = scenario('submitBatch', 'ok');
    assert.equal(
      await run({ ...submit, deps: { ...submit.deps, beforeCreateJob: () => false } }),
      'notLeading',
    );
  });
});
