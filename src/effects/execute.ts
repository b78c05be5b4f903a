// The executor: performs the actions of one decision in order, each by its handler (src/effects/execute/), under
// the executor contract (src/reconcile/executor-contract.ts).
import { describeKubeError } from '../kube/index.ts';
import { EXECUTOR_CONTRACT } from '../reconcile/executor-contract.ts';
import type { Action } from '../reconcile/index.ts';
import type { ActionResult, ExecuteDeps, ExecuteOutcome, Handler } from './execute/deps.ts';
import { HANDLERS } from './execute/table.ts';

export {
  type ActionResult,
  createServerKeys,
  createTombstones,
  type ExecuteDeps,
  type ExecuteOutcome,
  FIELD_MANAGER,
  type ServerKeys,
  serverKeyOf,
  type Tombstones,
} from './execute/deps.ts';
export { observe } from './execute/reports.ts';

/**
 * Whether `kind` asks first if this replica may still write. What reports a status change (fence `beforePatch`) runs
 * once the decision's status patch landed (under its resourceVersion precondition, so the transition is this
 * decision's) even if this replica may no longer write: nobody else would, another leader sees the Agent already
 * changed. Writes to Agents, Jobs and the rest stay fenced; whatever of them is dropped, the next reconcile or sweep
 * does again.
 */
function fenced(kind: Action['kind'], patched: boolean): boolean {
  const { fence } = EXECUTOR_CONTRACT[kind];
  return fence === 'always' || (fence === 'beforePatch' && !patched);
}

/** Performs the actions of one decision in order; the only code that writes on behalf of the reconcile core. */
export async function executeActions(actions: readonly Action[], deps: ExecuteDeps): Promise<ExecuteOutcome> {
  let patched = false;
  for (const action of actions) {
    if (fenced(action.kind, patched) && deps.mayWrite !== undefined && !deps.mayWrite())
      return { kind: 'notLeading', what: 'leadership (this replica may no longer write)' };
    const started = Date.now();
    const outcome = await executeAction(action, deps);
    if (outcome === undefined && EXECUTOR_CONTRACT[action.kind].landsPatch) patched = true;
    if (deps.onAction !== undefined) {
      const error = outcome === undefined ? undefined : outcomeError(outcome);
      const result: ActionResult =
        outcome === undefined
          ? { kind: 'applied' }
          : error !== undefined
            ? { kind: 'failed', error }
            : { kind: 'notApplied' };
      try {
        deps.onAction(action, started, Date.now(), result);
      } catch (e) {
        deps.logger.warn('Recording a span failed', { error: String(e) });
      }
    }
    if (outcome !== undefined) return outcome;
  }
  return { kind: 'done' };
}

/** Why an outcome that stops a decision is a failure of its action, or undefined when it is not one. */
function outcomeError(outcome: ExecuteOutcome): string | undefined {
  switch (outcome.kind) {
    case 'error':
      return describeKubeError(outcome.error);
    case 'bindingRefused':
    case 'serviceAccountRefused':
    case 'inputRefused':
    case 'jobRejected':
    case 'serverRejected':
    case 'batchRejected':
    case 'cleanupFailed':
    case 'sessionCleanupFailed':
    case 'memoryForbidden':
    case 'memoryFailed':
      return outcome.message;
    case 'retryLater':
      return outcome.reason;
    default:
      return undefined;
  }
}

/**
 * Performs one action by its handler: undefined to go on with the next, an outcome to stop the decision there. A
 * best-effort action never stops the decision: whatever its handler reports or throws is logged.
 */
async function executeAction(action: Action, deps: ExecuteDeps): Promise<ExecuteOutcome | undefined> {
  const handler = HANDLERS[action.kind] as Handler<Action['kind']>;
  if (!EXECUTOR_CONTRACT[action.kind].bestEffort) return handler(action, deps);
  try {
    const outcome = await handler(action, deps);
    if (outcome !== undefined)
      deps.logger.warn('Best-effort action not done', { action: action.kind, outcome: outcome.kind });
  } catch (error) {
    deps.logger.warn('Best-effort action failed', { action: action.kind, error: String(error) });
  }
  return undefined;
}
