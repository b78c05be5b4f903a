// The simulator the idempotency property of `decide` stands on (apply-actions.test-support.ts): what executing a
// decision does to the world, checked on hand-made cases against the executor contract (src/reconcile/executor-contract.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Agent } from '../../api/index.ts';
import { RUN_CLEANUP_FINALIZER } from '../../jobs/index.ts';
import type { Action, AgentRef, Decision } from '../actions.ts';
import { BATCH_FINALIZER, batchRequestFor } from '../batch/plan.ts';
import type { Snapshot } from '../snapshot.ts';
import {
  agent,
  at,
  complete,
  definition,
  finished,
  iso,
  job,
  pod,
  running,
  station,
} from '../test-fixtures.ts';
import {
  applyDecision,
  mergePatch,
  queueView,
  type SiblingState,
  type SimWorld,
  sameState,
} from './apply-actions.test-support.ts';
import { cleanupBackoffMs } from './batch.ts';
import { decide } from './decide.ts';
import { judge } from './found.ts';

const NOW = at(60);

function worldOf(
  a: Agent,
  o: { siblings?: readonly SiblingState[]; snapshot?: Partial<Snapshot> } = {},
): SimWorld {
  const siblings = o.siblings ?? [];
  const self = { admitted: false, hasJob: false };
  return {
    snapshot: {
      agent: a,
      station: station(),
      definition: definition(),
      job: { kind: 'absent' },
      queue: queueView(a, siblings, self),
      options: {
        agentImage: 'agent-controller:test',
        maxOutputBytes: 4096,
        requeueMs: 15000,
        batch: { enabled: true, pollMs: 60000 },
        realtime: { enabled: true },
      },
      ...o.snapshot,
    },
    gone: false,
    siblings,
    self,
    objects: [],
    serial: 0,
  };
}

const refOf = (a: Agent): AgentRef => ({
  namespace: a.metadata.namespace,
  name: a.metadata.name,
  uid: a.metadata.uid,
});

const withFinalizers = (a: Agent, finalizers: string[]): Agent => ({
  ...a,
  metadata: { ...a.metadata, finalizers },
});

const patch = (a: Agent, status: Record<string, unknown>, rv = a.metadata.resourceVersion): Action => ({
  kind: 'patchStatus',
  ref: refOf(a),
  resourceVersion: rv,
  status: { conditions: [], ...status },
});

const decision = (...actions: Action[]): Decision => ({ actions });

describe('apply-actions simulator', () => {
  it('merges JSON merge patches as RFC 7386 says: objects key by key, arrays whole, null deletes', () => {
    assert.deepEqual(
      mergePatch({ a: 1, b: { c: 2, d: 3 }, e: [1, 2] }, { a: null, b: { c: 4 }, e: [3], f: 'x' }),
      { b: { c: 4, d: 3 }, e: [3], f: 'x' },
    );
  });

  it('a status patch merges into the status and moves the resourceVersion; one that changes nothing does not', () => {
    const a = running('a', { status: { output: 'before' } });
    const { world, outcome } = applyDecision(
      worldOf(a),
      decision(patch(a, { phase: 'Succeeded', exitCode: 0, completedAt: iso(60) })),
      NOW,
    );
    assert.deepEqual(outcome, { kind: 'done' });
    const after = world.snapshot.agent;
    assert.equal(after.status.phase, 'Succeeded');
    assert.equal(after.status.output, 'before', 'fields the patch leaves out are kept');
    assert.equal(after.status.jobName, a.status.jobName);
    assert.notEqual(after.metadata.resourceVersion, a.metadata.resourceVersion);
    // The Station picture follows: the Agent is a finished run now.
    assert.equal(world.snapshot.queue.holdsSlot, false);
    const same = applyDecision(
      world,
      decision(patch(after, { phase: 'Succeeded', exitCode: 0, completedAt: iso(60) })),
      NOW,
    );
    assert.equal(same.world.snapshot.agent.metadata.resourceVersion, after.metadata.resourceVersion);
    assert.ok(sameState(world, same.world), 'an unchanged status is not written');
  });

  it('a write whose precondition fails supersedes the rest of the decision', () => {
    const a = agent('a');
    const { world, outcome } = applyDecision(
      worldOf(a),
      decision(patch(a, { phase: 'Running' }, 'stale'), {
        kind: 'addFinalizer',
        ref: refOf(a),
        resourceVersion: a.metadata.resourceVersion,
        finalizer: RUN_CLEANUP_FINALIZER,
        first: true,
      }),
      NOW,
    );
    assert.equal(outcome.kind, 'superseded');
    assert.deepEqual(world.snapshot.agent, a, 'nothing after it ran');
    // Two patches with one precondition: the second one meets the first one's resourceVersion.
    const twice = applyDecision(
      worldOf(a),
      decision(patch(a, { phase: 'Running' }), patch(a, { output: 'x' })),
      NOW,
    );
    assert.equal(twice.outcome.kind, 'superseded');
  });

  it('a started run: its objects exist, its Job is in the cache and the book holds its slot', () => {
    const a = agent('a', { created: 0 });
    const w = worldOf(a, { snapshot: { station: station('stn', { maxConcurrentRuns: 1 }) } });
    const d = decide(w.snapshot, NOW);
    const created = d.actions.find((x) => x.kind === 'createJob');
    assert.ok(created?.kind === 'createJob');
    const { world, outcome } = applyDecision(w, d, NOW);
    assert.deepEqual(outcome, { kind: 'done' });
    const job = world.snapshot.job;
    assert.ok(job.kind === 'present');
    assert.equal(job.job.metadata.name, created.job.metadata.name);
    assert.equal(job.job.metadata.creationTimestamp, NOW.toISOString());
    assert.deepEqual(job.evidence, { kind: 'notGathered' });
    assert.equal(world.snapshot.agent.status.phase, 'Running');
    assert.deepEqual(world.self, { admitted: true, hasJob: true });
    assert.equal(world.snapshot.queue.holdsSlot, true);
    assert.ok(world.objects.some((k) => k.startsWith('ServiceAccount/')));
    assert.ok(world.objects.some((k) => k.startsWith('NetworkPolicy/')));
    assert.ok(world.objects.some((k) => k.startsWith('ConfigMap/')));
    // Asked again, the same start first meets its own input ConfigMap: read back and reported, for decide to judge
    // (this run's, so adopted); without the input create, it meets its own Job: the shell reads it, decides again.
    const again = applyDecision(world, d, NOW);
    assert.deepEqual(again.outcome, { kind: 'found' });
    const input = d.actions.find((x) => x.kind === 'createRunInput');
    assert.ok(input?.kind === 'createRunInput');
    const found = again.world.snapshot.found ?? [];
    assert.deepEqual(
      found.map((f) => judge(f, input, a.metadata.uid)),
      ['ours'],
    );
    const rest = { ...d, actions: d.actions.filter((x) => x.kind !== 'createRunInput') };
    assert.deepEqual(applyDecision(world, rest, NOW).outcome, { kind: 'jobExists' });
  });

  it('finalizers: added with the resourceVersion, never to an Agent being deleted; the last one removed lets it go', () => {
    const a = agent('a');
    const add: Action = {
      kind: 'addFinalizer',
      ref: refOf(a),
      resourceVersion: a.metadata.resourceVersion,
      finalizer: BATCH_FINALIZER,
      first: true,
    };
    const added = applyDecision(worldOf(a), decision(add), NOW).world.snapshot.agent;
    assert.deepEqual(added.metadata.finalizers, [BATCH_FINALIZER]);
    const deleting = agent('a', { deleting: true });
    assert.equal(applyDecision(worldOf(deleting), decision(add), NOW).outcome.kind, 'superseded');

    const held = withFinalizers(agent('a', { deleting: true }), [RUN_CLEANUP_FINALIZER, BATCH_FINALIZER]);
    const remove = (index: number, finalizer: string): Action => ({
      kind: 'removeFinalizer',
      ref: refOf(held),
      finalizer,
      index,
    });
    const one = applyDecision(worldOf(held), decision(remove(1, BATCH_FINALIZER)), NOW).world;
    assert.equal(one.gone, false);
    assert.deepEqual(one.snapshot.agent.metadata.finalizers, [RUN_CLEANUP_FINALIZER]);
    assert.equal(applyDecision(one, decision(remove(0, RUN_CLEANUP_FINALIZER)), NOW).world.gone, true);
    assert.equal(
      applyDecision(worldOf(held), decision(remove(0, BATCH_FINALIZER)), NOW).outcome.kind,
      'superseded',
      'the entry at the index is tested',
    );
  });

  it('deletes: a pruned sibling leaves the picture; a preemption whose victim changed stops and gives the slot back', () => {
    const old = finished('old', 'Succeeded', 5);
    const a = agent('a');
    const w = worldOf(a, { siblings: [{ agent: old, admitted: false, hasJob: false }] });
    assert.equal(w.snapshot.queue.finished.length, 1);
    const prune: Action = {
      kind: 'deleteAgent',
      ref: refOf(old),
      resourceVersion: old.metadata.resourceVersion,
      purpose: 'prune',
      reason: 'history',
    };
    const pruned = applyDecision(w, decision(prune), NOW).world;
    assert.deepEqual(pruned.siblings, []);
    assert.deepEqual(pruned.snapshot.queue.finished, []);

    const victim = running('v');
    const busy = worldOf(a, { siblings: [{ agent: victim, admitted: false, hasJob: true }] });
    const preempt: Action = {
      kind: 'deleteAgent',
      ref: refOf(victim),
      resourceVersion: 'changed',
      purpose: 'preempt',
      reason: 'Replace',
    };
    const stopped = applyDecision(
      busy,
      { actions: [preempt, patch(a, { phase: 'Running' })], admits: true },
      NOW,
    );
    assert.equal(stopped.outcome.kind, 'superseded');
    assert.equal(stopped.world.siblings.length, 1);
    assert.equal(
      stopped.world.self.admitted,
      false,
      'a batch admission whose write was refused is given back',
    );
  });

  it('deleteJob removes only the Job it names (uid precondition) and the book forgets it', () => {
    const a = running('a');
    const w = applyDecision(worldOf(agent('a')), decide(worldOf(agent('a')).snapshot, NOW), NOW).world;
    const job = w.snapshot.job;
    assert.ok(job.kind === 'present');
    const del = (uid: string): Action => ({
      kind: 'deleteJob',
      namespace: a.metadata.namespace,
      name: job.job.metadata.name,
      uid,
    });
    assert.ok(sameState(w, applyDecision(w, decision(del('another')), NOW).world));
    const gone = applyDecision(w, decision(del(job.job.metadata.uid)), NOW).world;
    assert.deepEqual(gone.snapshot.job, { kind: 'absent' });
    assert.equal(gone.self.hasJob, false);
  });

  it("a new reconcile forgets the executor's feedback of the last one; a failed cleanup leaves the shell's backoff", () => {
    const a = withFinalizers(
      finished('a', 'Failed', 5, {
        status: { batchProvider: 'anthropic', batchId: 'b-1', batchCleanupAttempts: 2 },
      }),
      [BATCH_FINALIZER],
    );
    const w = worldOf(a, {
      snapshot: { cleanup: { kind: 'failed', message: '500' }, jobRejected: { message: 'no' } },
    });
    const d = decide(w.snapshot, NOW);
    const { world } = applyDecision(w, d, NOW);
    assert.equal(world.snapshot.agent.status.batchCleanupAttempts, 3);
    assert.equal(world.snapshot.cleanup, undefined);
    assert.equal(world.snapshot.jobRejected, undefined);
    assert.deepEqual(world.snapshot.cleanupNotBefore, new Date(NOW.getTime() + cleanupBackoffMs(3)));
    assert.deepEqual(decide(world.snapshot, NOW).actions, [], 'it waits for the backoff');
  });

  it('a batch submission is decided on in the same reconcile; a submission record means nothing is outstanding', () => {
    const a = running('a', { status: { batchProvider: 'anthropic', startedAt: iso(50) } });
    const ref = refOf(a);
    const submitted = applyDecision(
      worldOf(a),
      decision({
        kind: 'submitBatch',
        ref,
        provider: 'anthropic',
        secretKey: 'k',
        request: batchRequestFor(a, definition(), 'claude-sonnet-5'),
      }),
      NOW,
    );
    assert.equal(submitted.outcome.kind, 'batchSubmitted');
    assert.equal(submitted.world.snapshot.submission?.kind, 'submitted');
    const record = applyDecision(
      worldOf(agent('a')),
      {
        actions: [patch(agent('a'), { phase: 'Running', batchProvider: 'anthropic' })],
        submissionRecord: true,
      },
      NOW,
    );
    assert.deepEqual(record.world.snapshot.submission, { kind: 'none' });
  });

  it('Events, metrics and sink notifications change nothing', () => {
    const a = running('a');
    const w = worldOf(a);
    const { world } = applyDecision(
      w,
      decision(
        { kind: 'recordEvent', ref: refOf(a), type: 'Normal', reason: 'Started', message: 'm' },
        { kind: 'observeMetric', observation: { metric: 'runQueue', seconds: 1 } },
        {
          kind: 'notifySinks',
          ref: refOf(a),
          sinks: [{ url: 'http://sink' }],
          source: { agent: 'a', station: 'stn', namespace: a.metadata.namespace },
          events: [],
        },
      ),
      NOW,
    );
    assert.ok(sameState(w, world));
  });

  it('a memory save writes the ConfigMap observed, before the terminal patch; deciding again writes nothing more', () => {
    const a = running('a');
    const j = job('a', { conditions: complete, succeeded: 1 });
    const memoryJob = {
      ...j,
      metadata: {
        ...j.metadata,
        annotations: {
          ...j.metadata.annotations,
          'agents.re-cinq.com/memory-configmap': 'notes',
          'agents.re-cinq.com/memory-version': '41',
        },
      },
    };
    const notes = {
      metadata: { name: 'notes', resourceVersion: '41', labels: { 'agents.re-cinq.com/memory': 'true' } },
      data: { 'MEMORY.md': 'old' },
    };
    const w = worldOf(a, {
      snapshot: {
        definition: definition('def', { memory: { configMap: 'notes' } }),
        job: {
          kind: 'present',
          job: memoryJob,
          evidence: {
            kind: 'pod',
            pod: pod('a', 0, JSON.stringify({ v: 1, result: 'done\n<memory>\nnew\n</memory>' })),
            log: { kind: 'read', text: '' },
          },
        },
        memorySave: { configMap: { kind: 'present', configMap: notes }, changed: 0 },
      },
    });
    const first = decide(w.snapshot, NOW);
    assert.deepEqual(
      first.actions.slice(0, 2).map((x) => x.kind),
      ['saveMemory', 'patchStatus'],
    );
    const { world, outcome } = applyDecision(w, first, NOW);
    assert.deepEqual(outcome, { kind: 'done' });
    assert.equal(world.snapshot.agent.status.phase, 'Succeeded');
    const written = world.snapshot.memorySave?.configMap;
    assert.equal(written?.kind === 'present' && written.configMap.data?.['MEMORY.md'], 'new');
    assert.deepEqual(world.objects, ['ConfigMap/team/notes']);
    // The same terminal decision made again on the ConfigMap it wrote (its patch lost): no second write.
    const again = decide({ ...world.snapshot, agent: a }, NOW);
    assert.ok(!again.actions.some((x) => x.kind === 'saveMemory'));
  });
});
