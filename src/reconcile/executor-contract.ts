// The executor contract as data (issue 27 §2): what the core may rely on when the executor (src/effects/execute.ts)
// performs the actions of a decision. The handlers of src/effects/execute/ map the answers they get through it, and
// the decision simulator (agent/apply-actions.test-support.ts) reads it for the answers it simulates. Pure: no I/O.
import type { Action } from './actions.ts';

/**
 * The classes of answer one action can get. For API writes the HTTP answer: `ok` (2xx), `alreadyExists` (409
 * AlreadyExists on a create), `conflict` (409 Conflict: a precondition failed), `notFound` (404), `forbidden` (403),
 * `invalid` (422, also a failed JSON-patch `test`), `badRequest` (400), `error` (anything else: 5xx, 429, network,
 * timeout, an answer that cannot be read). After a 409 on a create whose name may be taken, the object of that name
 * is read: `existsFound` (read: reported to decide, which judges it), `existsGone` (it went meanwhile). Vendor calls: `pending` (a cleanup step must finish at the vendor first),
 * `vendorRefused` (a definite refusal, 4xx), `vendorUnavailable` (429, 5xx, network), `keyMissing` (the vendor key is
 * not in `agent-secrets`, or may not be read). `notReady`: the shell lacks what the action needs (the batch runtime,
 * the realtime key), so nothing was sent.
 */
export type Answer =
  | 'ok'
  | 'alreadyExists'
  | 'conflict'
  | 'notFound'
  | 'forbidden'
  | 'invalid'
  | 'badRequest'
  | 'error'
  | 'existsFound'
  | 'existsGone'
  | 'pending'
  | 'vendorRefused'
  | 'vendorUnavailable'
  | 'keyMissing'
  | 'notReady';

/** What `decide` is called again with, in the same reconcile, after an action stopped the decision. */
export type Observation =
  /** `job: {kind: 'present', …}` (the shell GETs the Job first). */
  | 'job'
  | 'serviceAccountRefused'
  | 'bindingRefused'
  | 'inputRefused'
  /** `found: [..., {the object read back}]` (src/reconcile/agent/found.ts judges it). */
  | 'found'
  | 'jobRejected'
  | 'serverRejected'
  /** `submission: {kind: 'submitted', id}`. */
  | 'submission:submitted'
  /** `submission: {kind: 'rejected', message}`. */
  | 'submission:rejected'
  /** `cleanup: {kind: 'pending'}`. */
  | 'cleanup:pending'
  /** `cleanup: {kind: 'failed', message}`. */
  | 'cleanup:failed'
  /** `sessionCleanup: {kind: 'failed', message}` (issue 29 §5). */
  | 'sessionCleanup:failed'
  /** `memorySave: {configMap: (read again), changed: +1}`. */
  | 'memoryChanged'
  /** `memorySave: {configMap: {kind: 'failed', message, forbidden: true}}`. */
  | 'memoryForbidden'
  /** `memorySave: {configMap: {kind: 'failed', message, forbidden: false}}`. */
  | 'memoryFailed';

/**
 * What an answer means for the decision: `continue` with the next action; `superseded` (stop, drop the rest, no retry:
 * the change that beat this decision wakes the next reconcile, which recomputes from fresh state); `retry` (stop, the
 * reconcile errors and is retried with backoff); `retryLater` (stop without an error, the key is looked at again
 * later); `decideAgain:<observation>` (stop, decide again at once with that observation).
 */
export type Outcome = 'continue' | 'superseded' | 'retry' | 'retryLater' | `decideAgain:${Observation}`;

/** What each answer class means; an answer not listed means what `error` does. */
export type Answers = Readonly<Partial<Record<Answer, Outcome>>> & {
  readonly ok: Outcome;
  readonly error: Outcome;
};

/** The executor's contract for one action kind. */
export interface ContractEntry {
  /** Which handler module of src/effects/execute/ performs it. */
  readonly family: 'run' | 'agent' | 'reports' | 'memory' | 'batch' | 'server' | 'session';
  /**
   * Whether the executor first asks if this replica may still write (it leads and its Lease renewal is confirmed),
   * stopping the decision as `notLeading` when not: `always`; `beforePatch` (only until the decision's status patch
   * landed: the action reports that transition, which is this decision's, and nobody else would report it); `never`.
   */
  readonly fence: 'always' | 'beforePatch' | 'never';
  /**
   * Asked again right before the request is sent, with no await in between (`beforeCreateJob`): a create another
   * leader may make too (a second Job, a second vendor batch) is never sent once this replica stopped leading.
   */
  readonly lastLeaderCheck: boolean;
  /** A failure is logged and never stops the decision. */
  readonly bestEffort: boolean;
  /** Its success is the decision's status patch landing: from then on `beforePatch` actions are not fenced. */
  readonly landsPatch: boolean;
  readonly answers: Answers;
  /** Answers that differ for one variant of the action (`deleteAgent` by `purpose`), over `answers`. */
  readonly variants?: Readonly<Record<string, Readonly<Partial<Record<Answer, Outcome>>>>>;
  /** What the data cannot say. */
  readonly note?: string;
}

const write = { fence: 'always', lastLeaderCheck: false, bestEffort: false, landsPatch: false } as const;
const report = { fence: 'beforePatch', lastLeaderCheck: false, bestEffort: true, landsPatch: false } as const;

/** Creates of run objects that count an existing one of that name as done (idempotent retried starts). */
const createKept = { ok: 'continue', alreadyExists: 'continue', error: 'retry' } as const;

/** A name taken on a create: the object found is reported, and decide judges it (src/reconcile/agent/found.ts). */
const judged = (refused: Outcome): Answers => ({
  ok: 'continue',
  existsFound: 'decideAgain:found',
  existsGone: 'retryLater',
  forbidden: refused,
  invalid: refused,
  badRequest: refused,
  error: 'retry',
});

/**
 * The executor contract. Actions run in array order, one at a time: a decision is one transition, its later actions
 * (status, Events, metrics) assume the earlier writes happened. `Record` over `Action['kind']`: a new kind does not
 * compile until its contract is written here.
 */
export const EXECUTOR_CONTRACT: { readonly [K in Action['kind']]: ContractEntry } = {
  createServiceAccount: {
    family: 'run',
    ...write,
    answers: { ...createKept, forbidden: 'decideAgain:serviceAccountRefused' },
    note: 'First of the run objects: without its ServiceAccount no pod of the run could be created (issue 9 §2).',
  },
  createRunBinding: {
    family: 'run',
    ...write,
    answers: judged('decideAgain:bindingRefused'),
    note: 'After the ServiceAccount, before the Job. A binding found under its name is read back and reported; decide judges it (ours when labelled with this Agent uid: adopted; stale when it carries the same run labels with another uid or is being deleted: waited out; else the run fails). The executor decides nothing about it.',
  },
  deleteRunBindings: {
    family: 'run',
    ...write,
    answers: { ok: 'continue', notFound: 'continue', forbidden: 'continue', error: 'retry' },
    note: 'Lists the ClusterRoleBindings and RoleBindings labelled with the uid and deletes each (404: already deleted). A kind it may not list or delete (403) is skipped, logged and told in a Warning Event RunBindingsUnverified: an Agent must never be held by its finalizer for good.',
  },
  createNetworkPolicy: {
    family: 'run',
    ...write,
    answers: { ...createKept, forbidden: 'continue' },
    note: 'Before the Job of the run (docs/design/reference-behaviour.md#d-i-networkpolicy-per-run). A 403 is warned about once per controller: a cluster without that grant still runs agents, under whatever other policies select their pods.',
  },
  createRunInput: {
    family: 'run',
    ...write,
    answers: judged('decideAgain:inputRefused'),
    note: "Right before the Job (issue 10 §1). Found under its name: read back (owner, annotations, data) and reported; decide judges it: this Agent's with the same data is adopted; this Agent's with other data, or orphaned, is deleted (deleteRunInput) and created again, once; another Agent's is waited out; anything else fails the run.",
  },
  deleteRunInput: {
    family: 'run',
    ...write,
    answers: {
      ok: 'continue',
      notFound: 'continue',
      conflict: 'retryLater',
      forbidden: 'decideAgain:inputRefused',
      error: 'retry',
    },
    note: 'uid precondition: 404 is done; 409 means another object holds the name now (looked at again later); 403 fails the run naming the grant.',
  },
  createJob: {
    family: 'run',
    ...write,
    lastLeaderCheck: true,
    answers: {
      ok: 'continue',
      alreadyExists: 'decideAgain:job',
      invalid: 'decideAgain:jobRejected',
      badRequest: 'decideAgain:jobRejected',
      error: 'retry',
    },
    note: 'After a 409 decide adopts a Job whose controller ownerReference is this Agent and fails the Agent otherwise (a few rounds at most per reconcile). 422/400 fail the Agent (docs/design/reference-behaviour.md#d-b-unbuildable-job-fails).',
  },
  deleteJob: {
    family: 'run',
    ...write,
    answers: { ok: 'continue', notFound: 'continue', conflict: 'continue', error: 'retry' },
    note: 'Foreground propagation, uid precondition: a 409 means another Job of that name exists now.',
  },
  patchStatus: {
    family: 'agent',
    ...write,
    landsPatch: true,
    answers: { ok: 'continue', conflict: 'superseded', notFound: 'superseded', error: 'retry' },
    note: 'A merge patch of /status with the resourceVersion as precondition; the Agent returned is handed to the cache (read your writes). Superseded: Events and metrics after it are therefore recorded once.',
  },
  deleteAgent: {
    family: 'agent',
    ...write,
    answers: { ok: 'continue', notFound: 'continue', conflict: 'superseded', error: 'retry' },
    variants: { prune: { conflict: 'continue' } },
    note: 'resourceVersion precondition. `preempt`: a 409 means the victim changed (perhaps it finished). `prune`: a changed Agent is skipped; an Agent already tombstoned is not deleted again; with backgroundPrunes the delete runs beside the decision and a failure waits for the next sweep.',
  },
  addFinalizer: {
    family: 'agent',
    ...write,
    answers: {
      ok: 'continue',
      conflict: 'superseded',
      notFound: 'superseded',
      invalid: 'superseded',
      error: 'retry',
    },
    note: 'A JSON patch testing the resourceVersion and touching only the one entry.',
  },
  removeFinalizer: {
    family: 'agent',
    ...write,
    answers: {
      ok: 'continue',
      conflict: 'superseded',
      notFound: 'superseded',
      invalid: 'superseded',
      error: 'retry',
    },
    note: 'A JSON patch testing the entry at `index` and removing it.',
  },
  recordEvent: {
    family: 'reports',
    ...report,
    answers: { ok: 'continue', error: 'continue' },
    note: 'In the background when the shell says so (backgroundEvents).',
  },
  notifySinks: {
    family: 'reports',
    ...report,
    answers: { ok: 'continue', error: 'continue' },
    note: 'Handed to a background deliverer, never awaited; placed right after the status patch it reports.',
  },
  saveMemory: {
    family: 'memory',
    ...write,
    answers: {
      ok: 'continue',
      alreadyExists: 'decideAgain:memoryChanged',
      forbidden: 'decideAgain:memoryForbidden',
      error: 'decideAgain:memoryFailed',
    },
    variants: { replace: { conflict: 'decideAgain:memoryChanged', notFound: 'decideAgain:memoryChanged' } },
    note: "Issue 10 §3, decided in agent/memory.ts: right before the terminal patch of a Succeeded run, its Events after the run's own. POST the ConfigMap, or (`replace`) PUT it with the resourceVersion read as precondition. Changed since it was read (409 AlreadyExists on the create; 409 Conflict or 404 on the replace): the shell reads the ConfigMap again and decide decides again (at most 5 writes, then MemoryNotSaved). 403 and every other failure: decided again with the answer, which decide tells in MemoryNotSaved (403 naming the grant); the run is recorded Succeeded all the same.",
  },
  recordSpend: {
    family: 'memory',
    ...write,
    answers: { ok: 'continue', forbidden: 'continue', error: 'retry' },
    note: "Issue 28 §4, decided in agent/budget.ts: before the spend finalizer of a deleted Agent is removed. GET the namespace's ConfigMap agent-spend, change it with the pure writeLedger, then POST it (absent) or PUT it at the resourceVersion read; 409 or 404 on the write reads it again (five tries, then `error`). 403 is logged and lets the Agent go (a ledger the controller may not write must not hold Agents for good; its spend is then not kept).",
  },
  deleteSession: {
    family: 'session',
    ...write,
    answers: { ok: 'continue', notReady: 'retryLater', error: 'decideAgain:sessionCleanup:failed' },
    note: "Issue 29 §5, decided in realtime/suspend.ts: every object under the Agent's prefix of the session store is deleted (none there: done). A failure is decided again: counted, a Warning, retried with backoff, given up after 5 with a Warning naming the prefix. notReady: the store is not configured on this replica.",
  },
  observeMetric: {
    family: 'reports',
    fence: 'never',
    lastLeaderCheck: false,
    bestEffort: true,
    landsPatch: false,
    answers: { ok: 'continue', error: 'continue' },
  },
  submitBatch: {
    family: 'batch',
    ...write,
    lastLeaderCheck: true,
    answers: {
      ok: 'decideAgain:submission:submitted',
      vendorRefused: 'decideAgain:submission:rejected',
      keyMissing: 'decideAgain:submission:rejected',
      vendorUnavailable: 'retryLater',
      notReady: 'retryLater',
      error: 'retryLater',
    },
    note: 'The vendor create. Unless refused for good it may have landed, so the next attempt searches the vendor first (needs: batchLookup); a 401/403 forgets the cached key, a 429 waits Retry-After.',
  },
  cleanupBatch: {
    family: 'batch',
    ...write,
    answers: {
      ok: 'continue',
      pending: 'decideAgain:cleanup:pending',
      vendorRefused: 'decideAgain:cleanup:failed',
      vendorUnavailable: 'decideAgain:cleanup:failed',
      keyMissing: 'decideAgain:cleanup:failed',
      notReady: 'retryLater',
      error: 'retryLater',
    },
    note: 'Pending: Anthropic cancels first and deletes once the batch ended.',
  },
  createPromptToken: {
    family: 'server',
    ...write,
    answers: { ...createKept, notReady: 'retryLater' },
    note: 'The token Secret of a realtime run, derived from the Agent uid with the controller key; right before its Job.',
  },
  createGatewayCredential: {
    family: 'server',
    ...write,
    answers: { ...createKept, notReady: 'retryLater' },
    note: "Issue 28: the run's gateway credential Secret, minted from the Agent's identity with the gateway key; right before its Job.",
  },
  createServerApiKey: {
    family: 'server',
    ...write,
    answers: { ...createKept },
    note: "Issue 12: a random key (24 bytes hex, sk- prefix). Created: the Secret's uid is reported to the shell's observation store (`Snapshot.serverKey`), and decide records it in status.apiKeySecretUID (only a Secret the controller created is used). 409: someone else's; with `recorded` that is reported too, and decide clears the recorded uid. The executor writes no status here: a record that fails is decided again by the next reconcile.",
  },
  applyServerObject: {
    family: 'server',
    ...write,
    answers: {
      ok: 'continue',
      alreadyExists: 'superseded',
      conflict: 'superseded',
      notFound: 'superseded',
      invalid: 'decideAgain:serverRejected',
      badRequest: 'decideAgain:serverRejected',
      error: 'retry',
    },
    note: 'POST, or PUT with the resourceVersion precondition (issue 12). Superseded: the shell looks again shortly (nothing watched would wake the Agent).',
  },
  deleteServerObject: {
    family: 'server',
    ...write,
    answers: { ok: 'continue', notFound: 'continue', conflict: 'continue', error: 'retry' },
    note: 'uid precondition (issue 12).',
  },
};

/** What `answer` means for `kind` (in `variant`, when the action has one). */
export function outcomeOf(kind: Action['kind'], answer: Answer, variant?: string): Outcome {
  const entry: ContractEntry = EXECUTOR_CONTRACT[kind];
  const special = variant === undefined ? undefined : entry.variants?.[variant]?.[answer];
  return special ?? entry.answers[answer] ?? entry.answers.error;
}

/** The answer classes the contract names for `kind` (its own and its variants'), each with its variant. */
export function namedAnswers(kind: Action['kind']): { readonly answer: Answer; readonly variant?: string }[] {
  const entry: ContractEntry = EXECUTOR_CONTRACT[kind];
  const own = (Object.keys(entry.answers) as Answer[]).map((answer) => ({ answer }));
  const variants = Object.entries(entry.variants ?? {}).flatMap(([variant, answers]) =>
    (Object.keys(answers) as Answer[]).map((answer) => ({ answer, variant })),
  );
  return [...own, ...variants];
}
