import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, parseAgentPolicy } from '../../api/index.ts';
import { RUN_CLEANUP_FINALIZER } from '../../jobs/index.ts';
import type { Action, Decision } from '../actions.ts';
import type { FoundObject, Snapshot } from '../snapshot.ts';
import { agent, at, definition, iso, NS, queueOf, station } from '../test-fixtures.ts';
import { decide } from './decide.ts';
import { foundKey, STALE_RUN_OBJECT_RETRY_MS } from './found.ts';

const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: false, pollMs: 60000 },
  realtime: { enabled: false },
};
const NOW = at(60);
const grants = (() => {
  const p = parseAgentPolicy({
    metadata: { name: 'grants', uid: 'u', resourceVersion: '1', creationTimestamp: iso(0) },
    spec: { rbac: { roles: ['pod-reader'], clusterRoles: [] } },
  });
  assert.ok(p.ok);
  return { kind: 'found', policy: p.value } as const;
})();
const rbacDef = definition('def', { rbac: { roles: ['pod-reader'], clusterRoles: [] } });

/** A Pending run that holds the cleanup finalizer: its start creates a binding, its input and its Job. */
const a: Agent = (() => {
  const x = agent('a');
  return { ...x, metadata: { ...x.metadata, finalizers: [RUN_CLEANUP_FINALIZER] } };
})();

function snap(over: Partial<Snapshot> = {}): Snapshot {
  return {
    agent: a,
    station: station(),
    definition: rbacDef,
    job: { kind: 'unknown' },
    queue: queueOf(a, [a]),
    options: OPTIONS,
    policy: grants,
    ...over,
  };
}

/** The start decided without anything found. */
const base: Decision = decide(snap(), NOW);
const input = base.actions.find((x) => x.kind === 'createRunInput');
const binding = base.actions.find((x) => x.kind === 'createRunBinding');
assert.ok(input?.kind === 'createRunInput' && binding?.kind === 'createRunBinding', 'the start creates both');
const without = (kind: Action['kind']): Decision => ({
  ...base,
  actions: base.actions.filter((x) => x.kind !== kind),
});

const foundInput = (o: Partial<FoundObject> = {}): FoundObject => ({
  key: foundKey(input),
  uid: 'uid-cm',
  deleting: false,
  controller: { uid: 'uid-a', kind: 'Agent', apiVersion: 'agents.re-cinq.com/v1alpha1', name: 'a' },
  labels: input.configMap.metadata.labels,
  annotations: input.configMap.metadata.annotations,
  data: input.configMap.data,
  ...o,
});
const foundBinding = (labels: Record<string, string>, deleting = false): FoundObject => ({
  key: foundKey(binding),
  uid: 'uid-rb',
  deleting,
  labels,
  annotations: {},
});

describe('decide: objects found under the names of the run objects (issue 27 §2)', () => {
  it("adopts this run's input with the same data: the same start without its create", () => {
    assert.deepEqual(decide(snap({ found: [foundInput()] }), NOW), without('createRunInput'));
  });

  it("makes this run's input with other data, or an orphaned one, again: deleted (uid precondition) right before its create", () => {
    const deleteInput: Action = {
      kind: 'deleteRunInput',
      ref: { namespace: NS, name: 'a', uid: 'uid-a' },
      namespace: NS,
      name: input.configMap.metadata.name,
      uid: 'uid-cm',
    };
    const at = base.actions.indexOf(input);
    const expected = {
      ...base,
      actions: [...base.actions.slice(0, at), deleteInput, ...base.actions.slice(at)],
    };
    assert.deepEqual(decide(snap({ found: [foundInput({ data: { prompt: 'older' } })] }), NOW), expected);
    const orphan = foundInput({
      controller: undefined,
      annotations: { 'agents.re-cinq.com/agent-uid': 'uid-gone' },
    });
    assert.deepEqual(decide(snap({ found: [orphan] }), NOW), expected);
  });

  it('waits when one to make again is found again (it keeps changing), or another Agent owns it, or it is being deleted', () => {
    const wait: Decision = { actions: [], requeueAfterMs: STALE_RUN_OBJECT_RETRY_MS };
    const older = foundInput({ data: { prompt: 'older' } });
    assert.deepEqual(decide(snap({ found: [older, older] }), NOW), wait);
    const earlier = foundInput({
      controller: { uid: 'uid-old', kind: 'Agent', apiVersion: 'agents.re-cinq.com/v1alpha1', name: 'a' },
    });
    assert.deepEqual(decide(snap({ found: [earlier] }), NOW), wait);
    assert.deepEqual(
      decide(snap({ found: [foundInput({ deleting: true, controller: undefined })] }), NOW),
      wait,
    );
  });

  it("fails the run on someone else's input, as a refused one", () => {
    const message = `ConfigMap ${NS}/${input.configMap.metadata.name} already exists and is not this run's`;
    const refused = decide(snap({ inputRefused: { message } }), NOW);
    assert.equal(refused.actions[0]?.kind, 'patchStatus');
    for (const other of [
      foundInput({ controller: undefined, annotations: {} }),
      foundInput({ controller: { uid: 'u', kind: 'Deployment', apiVersion: 'apps/v1', name: 'x' } }),
    ])
      assert.deepEqual(decide(snap({ found: [other] }), NOW), refused);
  });

  it("bindings: this run's (its uid label) adopted; an earlier Agent's (same run labels) or one being deleted waited out; else refused", () => {
    const ours = binding.binding.metadata.labels;
    assert.deepEqual(decide(snap({ found: [foundBinding(ours)] }), NOW), without('createRunBinding'));
    const wait: Decision = { actions: [], requeueAfterMs: STALE_RUN_OBJECT_RETRY_MS };
    const earlier = { ...ours, 'agents.re-cinq.com/run-uid': 'uid-old' };
    assert.deepEqual(decide(snap({ found: [foundBinding(earlier)] }), NOW), wait);
    assert.deepEqual(decide(snap({ found: [foundBinding({}, true)] }), NOW), wait);
    const message = `RoleBinding ${NS}/${binding.binding.metadata.name} (ClusterRole pod-reader) already exists and is not this run's`;
    const refused = decide(snap({ bindingRefused: { message } }), NOW);
    assert.equal(refused.actions[0]?.kind, 'patchStatus');
    assert.deepEqual(decide(snap({ found: [foundBinding({ team: 'x' })] }), NOW), refused);
  });
});
