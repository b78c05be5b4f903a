// Whose is an object found under the name of a run object (issue 27 §2): the executor creates a run's bindings and its
// input ConfigMap; on a 409 the shell reads the object of that name back and reports it (`Snapshot.found`); this
// judges it and changes the decision accordingly: this run's is adopted (its create dropped), an earlier Agent's (or
// one being deleted) is waited out, a run input of this run with other data or orphaned is replaced (deleted with a
// uid precondition, then created again, once), anything else fails the run with the reason.

import { API_VERSION } from '../../api/index.ts';
import { ANNOTATION_AGENT_UID, LABEL_AGENT, LABEL_RUN_NAMESPACE, LABEL_RUN_UID } from '../../jobs/index.ts';
import type { Action, Decision, RunBindingManifest } from '../actions.ts';
import type { CommonSnapshot, FoundObject } from '../snapshot/common.ts';
import { agentRef } from './status.ts';

/** Re-check period while an object of an earlier Agent of the same name waits for garbage collection. */
export const STALE_RUN_OBJECT_RETRY_MS = 2000;

type JudgedCreate = Extract<Action, { kind: 'createRunBinding' | 'createRunInput' }>;

/** The key of a create whose name may be taken: `Kind namespace/name`. */
export function foundKey(action: JudgedCreate): string {
  if (action.kind === 'createRunInput') {
    const m = action.configMap.metadata;
    return `ConfigMap ${m.namespace}/${m.name}`;
  }
  const b = action.binding;
  return `${b.kind} ${b.kind === 'RoleBinding' ? b.metadata.namespace : ''}/${b.metadata.name}`;
}

/** `RoleBinding ns/name (ClusterRole x)` or `ClusterRoleBinding name (ClusterRole x)`, for messages. */
export function describeBinding(b: RunBindingManifest): string {
  return b.kind === 'RoleBinding'
    ? `RoleBinding ${b.metadata.namespace}/${b.metadata.name} (ClusterRole ${b.roleRef.name})`
    : `ClusterRoleBinding ${b.metadata.name} (ClusterRole ${b.roleRef.name})`;
}

const describeCreate = (a: JudgedCreate): string =>
  a.kind === 'createRunBinding' ? describeBinding(a.binding) : foundKey(a);

/** What a found object is to the run: its own, an earlier Agent's, this run's to make again, or someone else's. */
export type Verdict = 'ours' | 'stale' | 'replace' | 'other';

function sameData(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/**
 * Whose `found` is. A binding: this run's when labelled with its uid; stale when it carries the same run labels with
 * another uid, or is being deleted (garbage collection removes it). A run input: being deleted → stale; controlled by
 * this Agent → ours with the same data, else replace (a retried start whose memory changed: no pod mounted it, its
 * Job does not exist yet); controlled by another Agent → stale; no owner and our Agent-uid annotation (orphaned by a
 * `--cascade=orphan` delete) → replace. Anything else: someone else's.
 */
export function judge(found: FoundObject, create: JudgedCreate, agentUid: string): Verdict {
  if (create.kind === 'createRunBinding') {
    const ours = create.binding.metadata.labels;
    if (found.labels[LABEL_RUN_UID] === ours[LABEL_RUN_UID]) return 'ours';
    const sameRun =
      found.labels[LABEL_RUN_NAMESPACE] === ours[LABEL_RUN_NAMESPACE] &&
      found.labels[LABEL_AGENT] === ours[LABEL_AGENT];
    return sameRun || found.deleting ? 'stale' : 'other';
  }
  if (found.deleting) return 'stale';
  const owner = found.controller;
  if (owner?.uid === agentUid) return sameData(found.data ?? {}, create.configMap.data) ? 'ours' : 'replace';
  if (owner !== undefined)
    return owner.kind === 'Agent' && owner.apiVersion === API_VERSION ? 'stale' : 'other';
  return found.annotations[ANNOTATION_AGENT_UID] !== undefined ? 'replace' : 'other';
}

/** The verdict on the last object found for one create, and how often one was found for it. */
interface Judged {
  readonly found: FoundObject;
  readonly verdict: Verdict;
  readonly times: number;
}

function judgedFor(s: CommonSnapshot, create: JudgedCreate): Judged | undefined {
  const key = foundKey(create);
  const all = (s.found ?? []).filter((f) => f.key === key);
  const found = all.at(-1);
  return found === undefined
    ? undefined
    : { found, verdict: judge(found, create, s.agent.metadata.uid), times: all.length };
}

/**
 * What the objects found mean for a decision made without regard to them (`decideOn` decides on a snapshot): a
 * found object that is someone else's fails the run through the refusal of its kind (`bindingRefused`,
 * `inputRefused`: the reason names it); an earlier Agent's waits (nothing written, looked at again shortly); this
 * run's is adopted (its create dropped); a run input to make again is deleted (uid precondition) right before its
 * create, once: found again after that, it is waited out as one that keeps changing.
 */
export function withFound<S extends CommonSnapshot>(s: S, decideOn: (s: S) => Decision): Decision {
  if (s.found === undefined || s.found.length === 0) return decideOn(s);
  const decision = decideOn(s);
  const actions: Action[] = [];
  for (const action of decision.actions) {
    if (action.kind !== 'createRunBinding' && action.kind !== 'createRunInput') {
      actions.push(action);
      continue;
    }
    const judged = judgedFor(s, action);
    if (judged === undefined) {
      actions.push(action);
      continue;
    }
    const what = describeCreate(action);
    switch (judged.verdict) {
      case 'ours':
        continue;
      case 'other': {
        const refusal = { message: `${what} already exists and is not this run's` };
        return decideOn(
          action.kind === 'createRunBinding'
            ? { ...s, bindingRefused: refusal }
            : { ...s, inputRefused: refusal },
        );
      }
      case 'stale':
        return { actions: [], requeueAfterMs: STALE_RUN_OBJECT_RETRY_MS };
      case 'replace': {
        if (judged.times > 1 || action.kind !== 'createRunInput')
          return { actions: [], requeueAfterMs: STALE_RUN_OBJECT_RETRY_MS };
        const m = action.configMap.metadata;
        actions.push(
          {
            kind: 'deleteRunInput',
            ref: agentRef(s.agent),
            namespace: m.namespace,
            name: m.name,
            uid: judged.found.uid,
          },
          action,
        );
      }
    }
  }
  return { ...decision, actions };
}
