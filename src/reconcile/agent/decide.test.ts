import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, parseAgent, parseAgentPolicy } from '../../api/index.ts';
import { DNS_RULE, jobNameFor, PUBLIC_HTTPS_RULE, RUN_CLEANUP_FINALIZER } from '../../jobs/index.ts';
import { traceIdFromUid } from '../../shared/trace-context.ts';
import type { Action, AgentStatusPatch, Decision, MetricObservation } from '../actions.ts';
import { findCondition, formatConditionTime } from '../conditions.ts';
import {
  FAILURE_JOB_GONE,
  FAILURE_MISSING_REF,
  FAILURE_POD_GONE,
  failureBuild,
  failureInit,
  failureInput,
  failureInvalidReference,
  failureNotOwned,
  failureOutputUnavailable,
  failureRejected,
  REASON,
} from '../reasons.ts';
import type { JobObservation, MemorySaveObservation, RunEvidence, Snapshot } from '../snapshot.ts';
import {
  agent,
  at,
  complete,
  deadlineExceeded,
  definition,
  failedBackoff,
  failingBuilder,
  failureTarget,
  finished,
  iso,
  job,
  NS,
  pod,
  queueOf,
  recordingBuilder,
  running,
  station,
  successCriteriaMet,
} from '../test-fixtures.ts';
import { decide, EARLY_VERDICT_RETRY_MS, type JobBuilder, STALE_JOB_RETRY_MS } from './decide.ts';
import { EVIDENCE_RETRY_MS, EVIDENCE_RETRY_WINDOW_MS } from './running.ts';

const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: true, pollMs: 60000 },
  realtime: { enabled: true },
};
const NOW = at(60);

function snap(a: Agent, over: Partial<Snapshot> & { readonly siblings?: readonly Agent[] } = {}): Snapshot {
  const { siblings, ...rest } = over;
  return {
    agent: a,
    station: station(),
    definition: definition(),
    job: { kind: 'unknown' },
    queue: queueOf(a, siblings ?? [a]),
    options: OPTIONS,
    ...rest,
  };
}

const present = (
  j: ReturnType<typeof job>,
  evidence: RunEvidence = { kind: 'notGathered' },
): JobObservation => ({
  kind: 'present',
  job: j,
  evidence,
});
const withPod = (
  name: string,
  exitCode: number | undefined,
  log = 'hello from the agent\n',
): RunEvidence => ({
  kind: 'pod',
  pod: pod(name, exitCode),
  log: { kind: 'read', text: log },
});

// ------------------------------------------------------------------------------------------------ inspection

const kinds = (d: Decision) => d.actions.map((a) => a.kind);
const patches = (d: Decision) =>
  d.actions.filter((a): a is Extract<Action, { kind: 'patchStatus' }> => a.kind === 'patchStatus');
const onlyPatch = (d: Decision): AgentStatusPatch => {
  const p = patches(d);
  assert.equal(p.length, 1, `expected one status patch, got ${kinds(d).join(',')}`);
  return p[0]!.status;
};
const events = (d: Decision) =>
  d.actions.filter((a): a is Extract<Action, { kind: 'recordEvent' }> => a.kind === 'recordEvent');
const metrics = (d: Decision): MetricObservation[] =>
  d.actions.flatMap((a) => (a.kind === 'observeMetric' ? [a.observation] : []));
const deletes = (d: Decision) =>
  d.actions.filter((a): a is Extract<Action, { kind: 'deleteAgent' }> => a.kind === 'deleteAgent');
const failureKinds = (d: Decision) => metrics(d).flatMap((m) => (m.metric === 'runFailure' ? [m.kind] : []));

/** Invariants every decision must satisfy, checked on every row. */
function checkInvariants(s: Snapshot, d: Decision): void {
  for (const p of patches(d)) {
    assert.equal(p.resourceVersion, s.agent.metadata.resourceVersion, 'every patch carries the Agent rv');
    assert.equal(p.ref.uid, s.agent.metadata.uid);
    assert.equal(
      p.status.observedGeneration,
      s.agent.metadata.generation,
      'observedGeneration on the status',
    );
    assert.ok(p.status.conditions.length > 0, 'every patch sets conditions');
    for (const c of p.status.conditions) {
      assert.match(c.reason, /^[A-Z][A-Za-z]*$/, 'condition reasons are CamelCase');
      assert.equal(c.observedGeneration, s.agent.metadata.generation, 'observedGeneration on conditions');
    }
    // Every transition is announced with an Event on the Agent.
    assert.ok(
      events(d).some((e) => e.ref.uid === s.agent.metadata.uid),
      `a status patch without an Event: ${kinds(d).join(',')}`,
    );
    if (p.status.phase === 'Failed') {
      assert.ok(
        events(d).some((e) => e.type === 'Warning' && e.ref.uid === s.agent.metadata.uid),
        'failures are Warning events',
      );
      assert.equal(findCondition(p.status.conditions, 'Failed')?.status, 'True');
      assert.equal(findCondition(p.status.conditions, 'Ready')?.status, 'False');
      assert.equal(findCondition(p.status.conditions, 'Complete'), undefined);
      if (p.status.exitCode !== undefined) assert.notEqual(p.status.exitCode, 0, 'Failed never reports 0');
      assert.ok(p.status.completedAt, 'terminal patches set completedAt');
    }
    if (p.status.phase === 'Succeeded') {
      assert.equal(p.status.exitCode, 0);
      assert.equal(findCondition(p.status.conditions, 'Complete')?.status, 'True');
      assert.equal(findCondition(p.status.conditions, 'Ready')?.status, 'True');
      assert.equal(findCondition(p.status.conditions, 'Failed'), undefined);
    }
  }
  for (const e of events(d)) assert.match(e.reason, /^[A-Z][A-Za-z]*$/, 'event reasons are CamelCase');
  for (const del of deletes(d)) assert.ok(del.resourceVersion !== '', 'deletes carry a resourceVersion');
  // Order: the Job exists before the Agent says Running; victims are gone before the new Job.
  const k = kinds(d);
  // Every Job comes with the run's NetworkPolicy, right before it (only the run's input ConfigMap in between),
  // named like it and owned by the Agent.
  if (k.includes('createJob')) assert.ok(k.includes('createNetworkPolicy'), 'a Job never without its policy');
  const policyAt = k.indexOf('createNetworkPolicy');
  if (policyAt >= 0) {
    assert.equal(k.lastIndexOf('createNetworkPolicy'), policyAt, 'at most one NetworkPolicy per decision');
    const policy = d.actions[policyAt];
    assert.equal(k[policyAt + 1], 'createRunInput', 'the run input right after the policy');
    const create = d.actions[policyAt + 2];
    // The ServiceAccount, then the run's bindings (if any), then the policy.
    let accountAt = policyAt - 1;
    while (d.actions[accountAt]?.kind === 'createRunBinding') accountAt--;
    const account = d.actions[accountAt];
    assert.ok(
      account?.kind === 'createServiceAccount',
      'the ServiceAccount right before the bindings and policy',
    );
    assert.equal(
      account.serviceAccount.metadata.name,
      (create as { job?: { metadata: { name: string } } }).job?.metadata.name,
    );
    assert.equal(account.serviceAccount.automountServiceAccountToken, false);
    assert.ok(
      policy?.kind === 'createNetworkPolicy' && create?.kind === 'createJob',
      'policy right before Job',
    );
    assert.equal(policy.policy.metadata.name, create.job.metadata.name);
    assert.equal(policy.policy.metadata.namespace, s.agent.metadata.namespace);
    assert.equal(policy.policy.metadata.ownerReferences[0].uid, s.agent.metadata.uid);
  }
  // Every Job comes with its input ConfigMap right before it (issue 10 §1): `<job>-input`, owned like the Job.
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
    assert.equal(input.configMap.metadata.namespace, a.job.metadata.namespace);
    assert.deepEqual(input.configMap.metadata.ownerReferences, a.job.metadata.ownerReferences);
    assert.equal(input.configMap.immutable, true);
  });
  if (k.includes('createJob')) {
    assert.ok(k.indexOf('createJob') < k.indexOf('patchStatus'), 'createJob before the Running patch');
    const lastPreempt = d.actions.findLastIndex((a) => a.kind === 'deleteAgent' && a.purpose === 'preempt');
    assert.ok(lastPreempt < k.indexOf('createJob'), 'preemption before createJob');
  }
  const firstPrune = d.actions.findIndex((a) => a.kind === 'deleteAgent' && a.purpose === 'prune');
  if (firstPrune >= 0) assert.ok(k.indexOf('patchStatus') < firstPrune, 'prune after the terminal patch');
  if (d.needs !== undefined) assert.equal(d.actions.length, 0, 'an incomplete decision has no actions');
}

function run(s: Snapshot, build: JobBuilder = recordingBuilder(), now = NOW): Decision {
  const d = decide(s, now, build);
  checkInvariants(s, d);
  return d;
}

// ------------------------------------------------------------------------------------------------ the table

describe('decide: terminal and deleted Agents', () => {
  const rows: [string, Snapshot][] = [
    ['Succeeded', snap(finished('a', 'Succeeded', 10))],
    ['Failed', snap(finished('a', 'Failed', 10))],
    ['Succeeded with its Job gone', snap(finished('a', 'Succeeded', 10), { job: { kind: 'absent' } })],
    ['Failed with a missing Station', snap(finished('a', 'Failed', 10), { station: null, definition: null })],
    [
      'Succeeded over a history limit of 0',
      snap(finished('a', 'Succeeded', 10), {
        station: station('stn', { successfulRunsHistoryLimit: 0 }),
        siblings: [finished('old', 'Succeeded', 1)],
      }),
    ],
    ['a Pending Agent being deleted', snap(agent('a', { deleting: true }))],
    ['a Running Agent being deleted', snap(running('a', { deleting: true }), { job: { kind: 'absent' } })],
  ];
  for (const [name, s] of rows) {
    it(`does nothing at all for ${name}`, () => {
      const build = recordingBuilder();
      assert.deepEqual(run(s, build), { actions: [] });
      assert.equal(build.calls.length, 0, 'no Job is even built');
    });
  }
});

describe('decide: Pending with missing references', () => {
  it('fails without retry when the Station is missing', () => {
    const d = run(snap(agent('a'), { station: null, definition: null }));
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, FAILURE_MISSING_REF);
    assert.equal(st.failureReason, 'Station or AgentDefinition not found');
    assert.equal(st.completedAt, NOW.toISOString());
    assert.equal(st.jobName, undefined);
    assert.equal(st.exitCode, undefined);
    assert.equal(st.startedAt, undefined);
    assert.equal(d.requeueAfterMs, undefined, 'no retry');
    assert.equal(findCondition(st.conditions, 'Failed')?.reason, REASON.missingReference);
    assert.deepEqual(
      events(d).map((e) => [e.type, e.reason, e.message]),
      [['Warning', 'MissingReference', 'Station stn not found']],
    );
    assert.deepEqual(metrics(d), [
      { metric: 'runCompleted', phase: 'Failed' },
      { metric: 'runFailure', kind: 'missing_ref' },
    ]);
    assert.ok(!kinds(d).includes('createJob'));
  });

  it('fails the same way when the AgentDefinition is missing, naming it, and sweeps the Station history', () => {
    const s = snap(agent('a', { created: 50 }), {
      definition: null,
      station: station('stn', { failedRunsHistoryLimit: 1 }),
      siblings: [finished('f-old', 'Failed', 1), finished('f-new', 'Failed', 2)],
    });
    const d = run(s);
    const st = onlyPatch(d);
    assert.equal(st.failureReason, FAILURE_MISSING_REF);
    assert.equal(events(d)[0]?.message, 'AgentDefinition def of Station stn not found');
    assert.deepEqual(failureKinds(d), ['missing_ref']);
    // The new failure is the newest Failed run and is kept; with limit 1 both older ones go.
    assert.deepEqual(
      deletes(d).map((x) => x.ref.name),
      ['f-new', 'f-old'],
    );
  });

  it('fails with the parse error when the Station or AgentDefinition exists but is invalid', () => {
    const d = run(
      snap(agent('a'), {
        station: null,
        definition: null,
        invalidReference: {
          kind: 'Station',
          name: 'stn',
          message: 'spec.maxConcurrentRuns: expected a number',
        },
      }),
    );
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.equal(
      st.failureReason,
      failureInvalidReference('Station', 'stn', 'spec.maxConcurrentRuns: expected a number'),
    );
    assert.equal(st.failureReason, 'Station stn is invalid: spec.maxConcurrentRuns: expected a number');
    assert.equal(findCondition(st.conditions, 'Failed')?.reason, 'InvalidReference');
    assert.deepEqual(failureKinds(d), ['build_error']);
    assert.ok(!kinds(d).includes('createJob'));
  });

  it('is not timed (no duration or queue metric)', () => {
    const d = run(snap(agent('a'), { station: null, definition: null }));
    assert.ok(!metrics(d).some((m) => m.metric === 'runDuration' || m.metric === 'runQueue'));
  });
});

describe('decide: Pending start', () => {
  it('creates the run NetworkPolicy and the Job, then patches Running with jobName and startedAt', () => {
    const build = recordingBuilder();
    const a = agent('a', { created: 20 });
    const d = run(snap(a), build);
    assert.deepEqual(kinds(d), [
      'createServiceAccount',
      'createNetworkPolicy',
      'createRunInput',
      'createJob',
      'patchStatus',
      'recordEvent',
      'observeMetric',
    ]);
    const create = d.actions[3];
    assert.equal(create?.kind === 'createJob' && create.job.metadata.name, jobNameFor('a'));
    const st = onlyPatch(d);
    assert.deepEqual(
      { phase: st.phase, jobName: st.jobName, startedAt: st.startedAt },
      { phase: 'Running', jobName: jobNameFor('a'), startedAt: NOW.toISOString() },
    );
    assert.equal(findCondition(st.conditions, 'Ready')?.reason, REASON.running);
    assert.equal(findCondition(st.conditions, 'Ready')?.status, 'False');
    assert.deepEqual(
      events(d).map((e) => [e.type, e.reason]),
      [['Normal', 'Started']],
    );
    assert.deepEqual(metrics(d), [{ metric: 'runQueue', seconds: 40 }]);
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
    // The builder got the run's objects, the image and the Job creation time.
    assert.equal(build.calls.length, 1);
    assert.equal(build.calls[0]?.agentImage, OPTIONS.agentImage);
    assert.equal(build.calls[0]?.now, NOW);
    assert.equal(build.calls[0]?.station.metadata.name, 'stn');
    assert.equal(build.calls[0]?.definition.metadata.name, 'def');
  });

  it('the run NetworkPolicy right before the Job admits the http sinks the definition names (D-i)', () => {
    const sinks = definition('def', {
      output: {
        sinks: [
          { type: 'stdout' },
          { type: 'http', url: 'http://10.1.2.3:8080/x' },
          { type: 'http', url: 'https://hooks.example.com/y' },
        ],
      },
    });
    const d = run(snap(agent('a', { created: 20 }), { definition: sinks }));
    assert.deepEqual(kinds(d), [
      'createServiceAccount',
      'createNetworkPolicy',
      'createRunInput',
      'createJob',
      'patchStatus',
      'recordEvent',
      'observeMetric',
    ]);
    const create = d.actions[1];
    assert.ok(create?.kind === 'createNetworkPolicy');
    const p = create.policy;
    assert.equal(p.metadata.name, jobNameFor('a'));
    assert.equal(p.metadata.namespace, NS);
    assert.deepEqual(p.metadata.ownerReferences, [
      {
        apiVersion: 'agents.re-cinq.com/v1alpha1',
        kind: 'Agent',
        name: 'a',
        uid: 'uid-a',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.deepEqual(p.spec.podSelector.matchLabels, {
      'agents.re-cinq.com/component': 'job',
      'agents.re-cinq.com/agent': 'a',
    });
    assert.deepEqual(p.spec.egress, [
      DNS_RULE,
      PUBLIC_HTTPS_RULE,
      { to: [{ ipBlock: { cidr: '10.1.2.3/32' } }], ports: [{ protocol: 'TCP', port: 8080 }] },
      {
        to: [
          { ipBlock: { cidr: '0.0.0.0/0', except: ['169.254.0.0/16'] } },
          { ipBlock: { cidr: '::/0', except: ['fe80::/10', 'fd00:ec2::254/128'] } },
        ],
        ports: [{ protocol: 'TCP', port: 443 }],
      },
    ]);
    assert.equal(onlyPatch(d).phase, 'Running');
  });

  const baseOnly: [string, Record<string, unknown>][] = [
    ['no output at all', {}],
    [
      'stdout and file sinks only',
      { output: { sinks: [{ type: 'stdout' }, { type: 'file', path: '/tmp/e' }] } },
    ],
    [
      'only http sinks whose url is unusable',
      { output: { sinks: [{ type: 'http', url: 'ftp://x/' }, { type: 'http' }] } },
    ],
  ];
  for (const [name, spec] of baseOnly) {
    it(`a definition with ${name}: the run NetworkPolicy admits DNS and public 443 only`, () => {
      const d = run(snap(agent('a', { created: 20 }), { definition: definition('def', spec) }));
      assert.deepEqual(kinds(d), [
        'createServiceAccount',
        'createNetworkPolicy',
        'createRunInput',
        'createJob',
        'patchStatus',
        'recordEvent',
        'observeMetric',
      ]);
      const p = d.actions[1];
      assert.ok(p?.kind === 'createNetworkPolicy');
      assert.deepEqual(p.policy.spec.egress, [DNS_RULE, PUBLIC_HTTPS_RULE]);
      assert.deepEqual(p.policy.spec.ingress, []);
    });
  }

  const httpSinks = definition('def', {
    output: { sinks: [{ type: 'http', url: 'http://10.0.0.9:9000/' }] },
  });

  it('creates no NetworkPolicy when adopting an existing Job, waiting, queueing or failing to build', () => {
    const a = agent('a', { created: 9 });
    const cases: [string, Snapshot, JobBuilder?][] = [
      ['adopt', snap(a, { definition: httpSinks, job: present(job('a')) })],
      [
        'stale Job',
        snap(a, { definition: httpSinks, job: present(job('a', { owner: { name: 'a', uid: 'old' } })) }),
      ],
      [
        'queued',
        snap(a, {
          definition: httpSinks,
          siblings: [running('r'), a],
          station: station('stn', { concurrencyPolicy: 'Forbid' }),
        }),
      ],
      ['build error', snap(a, { definition: httpSinks }), failingBuilder('broken')],
      ['rejected Job', snap(a, { definition: httpSinks, jobRejected: { message: 'no' } })],
    ];
    for (const [name, s, build] of cases) {
      const d = run(s, build ?? recordingBuilder());
      assert.ok(!kinds(d).includes('createNetworkPolicy'), `${name}: ${kinds(d).join(',')}`);
    }
  });

  it('under Replace: victims are deleted first, then the NetworkPolicy, then the Job', () => {
    const a = agent('a', { created: 100 });
    const d = run(
      snap(a, {
        definition: httpSinks,
        siblings: [running('only', { rv: '5' }), a],
        station: station('stn', { concurrencyPolicy: 'Replace' }),
      }),
    );
    assert.deepEqual(kinds(d), [
      'deleteAgent',
      'recordEvent',
      'observeMetric',
      'recordEvent',
      'createServiceAccount',
      'createNetworkPolicy',
      'createRunInput',
      'createJob',
      'patchStatus',
      'recordEvent',
      'observeMetric',
    ]);
  });

  it('a policy violation never fails a run whose Job exists (its Running patch was lost): it is adopted', () => {
    const tight = parseAgentPolicy({
      metadata: { name: 'tight', uid: 'u', resourceVersion: '1', creationTimestamp: iso(0) },
      spec: { images: { allowedPrefixes: ['nothing/'] } },
    });
    assert.ok(tight.ok);
    const policy = { kind: 'found', policy: tight.value } as const;
    const a = agent('a', { created: 5 });
    assert.deepEqual(run(snap(a, { policy })), { actions: [], needs: 'job' }, 'the Job is read first');
    const adopted = run(snap(a, { policy, job: present(job('a')) }));
    assert.equal(onlyPatch(adopted).phase, 'Running');
    const refused = run(snap(a, { policy, job: { kind: 'absent' } }));
    assert.equal(onlyPatch(refused).phase, 'Failed');
    assert.match(
      onlyPatch(refused).failureReason ?? '',
      /^AgentPolicy tight: image busybox of container agent/,
    );
  });

  it('fails with the builder reason when the Job cannot be built (D-b), before admission', () => {
    const full = [running('r'), agent('a', { created: 5 })];
    const s = snap(full[1]!, { siblings: full, station: station('stn', { concurrencyPolicy: 'Forbid' }) });
    const d = run(s, failingBuilder("Station template has no container named 'agent'"));
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, failureBuild("Station template has no container named 'agent'"));
    assert.equal(st.failureReason, "Job build failed: Station template has no container named 'agent'");
    assert.equal(st.exitCode, undefined);
    assert.ok(!kinds(d).includes('createJob'));
    assert.equal(events(d)[0]?.reason, 'BuildFailed');
    assert.deepEqual(failureKinds(d), ['build_error']);
  });

  it('builds the Job with src/jobs by default: owned by the Agent, in its namespace', () => {
    const d = decide(snap(agent('a')), NOW);
    const create = d.actions.find((x) => x.kind === 'createJob');
    assert.ok(create?.kind === 'createJob');
    assert.equal(create.job.metadata.name, jobNameFor('a'));
    assert.equal(create.job.metadata.namespace, NS);
    assert.deepEqual(
      create.job.metadata.ownerReferences.map((r) => [
        r.kind,
        r.name,
        r.uid,
        r.controller,
        r.blockOwnerDeletion,
      ]),
      [['Agent', 'a', 'uid-a', true, true]],
    );
  });

  it('fails with the real builder reason for a Station template without an agent container', () => {
    const s = snap(agent('a'), {
      station: station('stn', { template: { spec: { containers: [{ name: 'main', image: 'busybox' }] } } }),
    });
    const st = onlyPatch(run(s));
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, "Job build failed: Station template has no container named 'agent'");
  });

  it('fails when the API server rejected the Job (422)', () => {
    const build = recordingBuilder();
    const d = run(snap(agent('a'), { jobRejected: { message: 'spec.template: Invalid value' } }), build);
    const st = onlyPatch(d);
    assert.equal(st.failureReason, failureRejected('spec.template: Invalid value'));
    assert.equal(st.failureReason, 'Job rejected by the API server: spec.template: Invalid value');
    assert.deepEqual(failureKinds(d), ['build_error']);
    assert.equal(build.calls.length, 0);
  });

  it('adopts an existing Job owned by this Agent (createJob 409 follow-up) without creating another', () => {
    const a = agent('a', { created: 0 });
    const d = run(snap(a, { job: present(job('a', { created: 3 })) }));
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent', 'observeMetric']);
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Running');
    assert.equal(st.jobName, jobNameFor('a'));
    assert.equal(st.startedAt, iso(3), 'startedAt is the Job creation');
    assert.equal(events(d)[0]?.message, `Adopted existing Job ${jobNameFor('a')}`);
    assert.deepEqual(metrics(d), [{ metric: 'runQueue', seconds: 3 }]);
  });

  it('adopts regardless of capacity (the run already exists)', () => {
    const a = agent('a', { created: 9 });
    const s = snap(a, {
      job: present(job('a')),
      siblings: [running('r'), a],
      station: station('stn', { concurrencyPolicy: 'Forbid' }),
    });
    assert.equal(onlyPatch(run(s)).phase, 'Running');
  });

  it('fails when the Job of its name belongs to another owner', () => {
    const foreign = job('a', { owner: { name: 'someone', uid: 'uid-x', kind: 'CronJob' } });
    const d = run(snap(agent('a'), { job: present(foreign) }));
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, failureNotOwned(jobNameFor('a')));
    assert.equal(st.failureReason, `Job ${jobNameFor('a')} already exists and is not owned by this Agent`);
    assert.equal(findCondition(st.conditions, 'Failed')?.reason, REASON.jobNotOwned);
    assert.deepEqual(failureKinds(d), ['build_error']);
    const orphan = run(snap(agent('a'), { job: present(job('a', { owner: null })) }));
    assert.equal(onlyPatch(orphan).failureReason, failureNotOwned(jobNameFor('a')));
  });

  it('waits for garbage collection of a Job left by an earlier Agent of the same name', () => {
    const stale = job('a', { owner: { name: 'a', uid: 'uid-previous' } });
    assert.deepEqual(run(snap(agent('a'), { job: present(stale) })), {
      actions: [],
      requeueAfterMs: STALE_JOB_RETRY_MS,
    });
    const deleting = job('a', { owner: { name: 'x', uid: 'uid-x', kind: 'Thing' }, deleting: true });
    assert.deepEqual(run(snap(agent('a'), { job: present(deleting) })), {
      actions: [],
      requeueAfterMs: STALE_JOB_RETRY_MS,
    });
  });
});

describe('decide: Pending admission', () => {
  const limited = (spec: Record<string, unknown>) => station('stn', spec);

  it('queues under Allow at the limit: Pending + Ready=False/Queued + Event, then sleeps (no re-check timer: woken when a slot frees)', () => {
    const a = agent('a', { created: 10 });
    const s = snap(a, {
      siblings: [running('r1'), running('r2'), a],
      station: limited({ maxConcurrentRuns: 2 }),
    });
    const d = run(s);
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Pending');
    const ready = findCondition(st.conditions, 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'Queued');
    assert.equal(
      ready?.message,
      'Waiting for a free run slot: Station stn allows 2 runs at once (concurrencyPolicy Allow)',
    );
    assert.deepEqual(
      events(d).map((e) => [e.type, e.reason]),
      [['Normal', 'Queued']],
    );
    assert.equal(d.requeueAfterMs, undefined);
    // Once the condition is recorded, waiting again writes nothing.
    const queued = agent('a', { created: 10, status: { phase: 'Pending', conditions: st.conditions } });
    const again = run(
      { ...s, agent: queued, queue: queueOf(queued, [running('r1'), running('r2'), queued]) },
      recordingBuilder(),
      at(90),
    );
    assert.deepEqual(again, { actions: [] });
  });

  it('queues under Forbid behind one Running run even with maxConcurrentRuns 0', () => {
    const a = agent('a', { created: 10 });
    const d = run(
      snap(a, { siblings: [running('r'), a], station: limited({ concurrencyPolicy: 'Forbid' }) }),
    );
    assert.equal(onlyPatch(d).phase, 'Pending');
    assert.ok(!kinds(d).includes('createJob'));
    assert.ok(!kinds(d).includes('deleteAgent'));
  });

  it('starts once a slot frees, keeping the Ready lastTransitionTime (status unchanged)', () => {
    const a = agent('a', { created: 10 });
    const s = snap(a, { siblings: [running('r'), a], station: limited({ maxConcurrentRuns: 1 }) });
    const queuedAt = at(20);
    const q = decide(s, queuedAt, recordingBuilder());
    const queued = agent('a', {
      created: 10,
      status: { phase: 'Pending', conditions: onlyPatch(q).conditions },
    });
    const d = run(
      { ...s, agent: queued, queue: queueOf(queued, [finished('r', 'Succeeded', 30), queued]) },
      recordingBuilder(),
      at(40),
    );
    const ready = findCondition(onlyPatch(d).conditions, 'Ready');
    assert.equal(ready?.reason, 'Running');
    assert.equal(ready?.lastTransitionTime, '2025-03-01T12:00:20Z', 'Ready stayed False: time unchanged');
    assert.deepEqual(kinds(d).slice(0, 4), [
      'createServiceAccount',
      'createNetworkPolicy',
      'createRunInput',
      'createJob',
    ]);
  });

  it('preempts the oldest Running run under Replace, with its resourceVersion, before creating the Job', () => {
    const a = agent('a', { created: 100 });
    const old = running('old', { started: 5, rv: '111' });
    const young = running('young', { started: 50, rv: '222' });
    const s = snap(a, {
      siblings: [young, old, a],
      station: limited({ concurrencyPolicy: 'Replace', maxConcurrentRuns: 0 }),
    });
    const d = run(s);
    const del = deletes(d);
    // Two Running under the forced limit of one: both go, oldest first.
    assert.deepEqual(
      del.map((x) => [x.ref.name, x.resourceVersion, x.purpose]),
      [
        ['old', '111', 'preempt'],
        ['young', '222', 'preempt'],
      ],
    );
    assert.equal(
      del[0]?.reason,
      'preempted by Agent a: Station stn is at its concurrency limit (concurrencyPolicy Replace)',
    );
    const victimEvents = events(d).filter((e) => e.ref.name === 'old');
    assert.deepEqual(
      victimEvents.map((e) => [e.type, e.reason]),
      [['Warning', 'Preempted']],
    );
    assert.deepEqual(failureKinds(d), ['preempted', 'preempted']);
    assert.ok(events(d).some((e) => e.ref.name === 'a' && e.reason === 'Preempting'));
    assert.equal(onlyPatch(d).phase, 'Running');
  });

  it('preempts exactly one run when the Replace Station is at its limit', () => {
    const a = agent('a', { created: 100 });
    const d = run(
      snap(a, {
        siblings: [running('only', { rv: '5' }), a],
        station: limited({ concurrencyPolicy: 'Replace' }),
      }),
    );
    assert.deepEqual(
      deletes(d).map((x) => x.ref.name),
      ['only'],
    );
    assert.deepEqual(failureKinds(d), ['preempted']);
  });

  it('admits a burst of N Pending with limit K: exactly the K oldest get a Job, counted identically each time', () => {
    const n = 12;
    const k = 4;
    // Creation order differs from name and list order.
    const burst = Array.from({ length: n }, (_, i) => agent(`a${i}`, { created: (i * 5) % n }));
    const s = (a: Agent): Snapshot =>
      snap(a, { siblings: burst, station: limited({ maxConcurrentRuns: k }) });
    const started = burst.filter((a) => kinds(run(s(a))).includes('createJob')).map((a) => a.metadata.name);
    const oldest = [...burst]
      .sort((x, y) => Date.parse(x.metadata.creationTimestamp) - Date.parse(y.metadata.creationTimestamp))
      .slice(0, k)
      .map((a) => a.metadata.name);
    assert.deepEqual(started.sort(), oldest.sort());
  });
});

describe('decide: Running', () => {
  const jobName = jobNameFor('a');

  it('asks for the Job when it was not read', () => {
    assert.deepEqual(run(snap(running('a'))), { actions: [], needs: 'job' });
  });

  it('does nothing while the Job runs, and requeues at the poll interval', () => {
    assert.deepEqual(run(snap(running('a'), { job: present(job('a')) })), {
      actions: [],
      requeueAfterMs: OPTIONS.requeueMs,
    });
    const suspended = job('a', { conditions: [{ type: 'Suspended', status: 'True' }] });
    assert.equal(run(snap(running('a'), { job: present(suspended) })).actions.length, 0);
  });

  it('asks for the pod and log once the Job has finished', () => {
    for (const conditions of [complete, successCriteriaMet, failedBackoff, failureTarget]) {
      assert.deepEqual(run(snap(running('a'), { job: present(job('a', { conditions })) })), {
        actions: [],
        needs: 'runEvidence',
      });
    }
  });

  const succeededRows: [string, JobObservation][] = [
    ['Complete', present(job('a', { conditions: complete }), withPod('a', 0))],
    [
      'SuccessCriteriaMet (Kubernetes >= 1.31)',
      present(job('a', { conditions: successCriteriaMet }), withPod('a', 0)),
    ],
    ['succeeded count only', present(job('a', { succeeded: 1 }), withPod('a', 0))],
    ['Complete while the pod reports 9', present(job('a', { conditions: complete }), withPod('a', 9))],
  ];
  for (const [name, observation] of succeededRows) {
    it(`ends Succeeded with exitCode 0 on ${name}`, () => {
      const d = run(snap(running('a', { started: 10 }), { job: observation }));
      const st = onlyPatch(d);
      assert.deepEqual(
        {
          phase: st.phase,
          jobName: st.jobName,
          exitCode: st.exitCode,
          output: st.output,
          completedAt: st.completedAt,
          failureReason: st.failureReason,
        },
        {
          phase: 'Succeeded',
          jobName,
          exitCode: 0,
          output: 'hello from the agent\n',
          completedAt: NOW.toISOString(),
          failureReason: undefined,
        },
      );
      assert.equal(findCondition(st.conditions, 'Ready')?.reason, 'Succeeded');
      assert.deepEqual(
        events(d).map((e) => [e.type, e.reason, e.message]),
        [['Normal', 'Succeeded', `Job ${jobName} completed`]],
      );
      assert.deepEqual(metrics(d), [
        { metric: 'runCompleted', phase: 'Succeeded', exitCode: 0 },
        { metric: 'runDuration', phase: 'Succeeded', seconds: 50 },
      ]);
      assert.equal(d.requeueAfterMs, undefined);
    });
  }

  const failedRows: [string, JobObservation, number, string][] = [
    [
      'Failed, pod exit 7',
      present(job('a', { conditions: failedBackoff }), withPod('a', 7)),
      7,
      'BackoffLimitExceeded: Job has reached the specified backoff limit',
    ],
    [
      'FailureTarget (Kubernetes >= 1.31), pod exit 3',
      present(job('a', { conditions: failureTarget }), withPod('a', 3)),
      3,
      'BackoffLimitExceeded: Job has reached the specified backoff limit',
    ],
    [
      'DeadlineExceeded, pod exit 0',
      present(job('a', { conditions: deadlineExceeded }), withPod('a', 0)),
      1,
      'DeadlineExceeded: Job was active longer than specified deadline',
    ],
    [
      'DeadlineExceeded, agent container never terminated',
      present(job('a', { conditions: deadlineExceeded }), withPod('a', undefined)),
      1,
      'DeadlineExceeded: Job was active longer than specified deadline',
    ],
    [
      'failed count only, pod exit 137',
      present(job('a', { failed: 1 }), withPod('a', 137)),
      137,
      'Job failed',
    ],
  ];
  for (const [name, observation, exitCode, reason] of failedRows) {
    it(`ends Failed with exitCode ${exitCode} on ${name}`, () => {
      const d = run(snap(running('a', { started: 10 }), { job: observation }));
      const st = onlyPatch(d);
      assert.equal(st.phase, 'Failed');
      assert.equal(st.exitCode, exitCode);
      assert.equal(st.failureReason, reason);
      assert.equal(st.output, 'hello from the agent\n');
      assert.equal(st.jobName, jobName);
      assert.equal(findCondition(st.conditions, 'Failed')?.reason, 'JobFailed');
      assert.equal(
        findCondition(st.conditions, 'Failed')?.message,
        `Job ${jobName} failed with exit code ${exitCode}: ${reason}`,
      );
      assert.deepEqual(
        events(d).map((e) => [e.type, e.reason]),
        [['Warning', 'JobFailed']],
      );
      assert.deepEqual(metrics(d), [
        { metric: 'runCompleted', phase: 'Failed', exitCode },
        { metric: 'runDuration', phase: 'Failed', seconds: 50 },
        { metric: 'runFailure', kind: 'job_failed' },
      ]);
    });
  }

  it('waits after an early verdict while the agent container is still stopping, then accepts the final one', () => {
    const stopping = present(job('a', { conditions: failureTarget }), withPod('a', undefined));
    assert.deepEqual(run(snap(running('a'), { job: stopping })), {
      actions: [],
      requeueAfterMs: EARLY_VERDICT_RETRY_MS,
    });
    const early = present(job('a', { conditions: successCriteriaMet }), withPod('a', undefined));
    assert.equal(run(snap(running('a'), { job: early })).actions.length, 0);
    // A short poll interval caps the wait.
    const fast = run(snap(running('a'), { job: stopping, options: { ...OPTIONS, requeueMs: 500 } }));
    assert.equal(fast.requeueAfterMs, 500);
    // The early verdict with the pod gone ends the run at once.
    const gone = present(job('a', { conditions: failureTarget }), { kind: 'podGone' });
    assert.equal(onlyPatch(run(snap(running('a'), { job: gone }))).phase, 'Failed');
    // The final verdict is accepted even though the container never reported an exit code.
    const final = present(
      job('a', { conditions: [...failureTarget, ...deadlineExceeded] }),
      withPod('a', undefined),
    );
    const st = onlyPatch(run(snap(running('a'), { job: final })));
    assert.equal(st.exitCode, 1);
    assert.equal(st.failureReason, 'DeadlineExceeded: Job was active longer than specified deadline');
  });

  it('caps the output to maxOutputBytes with the truncation marker', () => {
    const log = `${'x'.repeat(100)}TAIL`;
    const s = snap(running('a'), {
      job: present(job('a', { conditions: complete }), withPod('a', 0, log)),
      options: { ...OPTIONS, maxOutputBytes: 4 },
    });
    assert.equal(onlyPatch(run(s)).output, '...[truncated 100 bytes]...\nTAIL');
  });

  it('ends Succeeded with "run output unavailable: pod garbage-collected" when the pod is gone', () => {
    const d = run(
      snap(running('a'), { job: present(job('a', { conditions: complete }), { kind: 'podGone' }) }),
    );
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Succeeded');
    assert.equal(st.exitCode, 0);
    assert.equal(st.output, '');
    assert.equal(st.failureReason, FAILURE_POD_GONE);
    assert.equal(st.failureReason, 'run output unavailable: pod garbage-collected');
    assert.deepEqual(
      events(d).map((e) => [e.type, e.reason]),
      [
        ['Normal', 'Succeeded'],
        ['Warning', 'OutputUnavailable'],
      ],
    );
    assert.deepEqual(failureKinds(d), ['output_unavailable']);
  });

  it('ends Failed keeping the Job reason when the pod is gone', () => {
    const d = run(
      snap(running('a'), { job: present(job('a', { conditions: deadlineExceeded }), { kind: 'podGone' }) }),
    );
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.exitCode, 1);
    assert.equal(st.failureReason, 'DeadlineExceeded: Job was active longer than specified deadline');
    assert.deepEqual(failureKinds(d), ['job_failed', 'output_unavailable']);
  });

  it('ends the run even when the pod lookup or the log read failed', () => {
    const lookup = run(
      snap(running('a'), {
        job: present(job('a', { conditions: complete }), {
          kind: 'unavailable',
          detail: 'pod list timed out',
        }),
      }),
    );
    assert.equal(onlyPatch(lookup).failureReason, failureOutputUnavailable('pod list timed out'));
    assert.equal(onlyPatch(lookup).failureReason, 'run output unavailable: pod list timed out');
    const logGone = run(
      snap(running('a'), {
        job: present(job('a', { conditions: failedBackoff }), {
          kind: 'pod',
          pod: pod('a', 5),
          log: { kind: 'unavailable', detail: 'container agent is waiting to start' },
        }),
      }),
    );
    const st = onlyPatch(logGone);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.exitCode, 5, 'the exit code still comes from the pod');
    assert.equal(st.output, '');
    assert.equal(st.failureReason, 'BackoffLimitExceeded: Job has reached the specified backoff limit');
    assert.deepEqual(failureKinds(logGone), ['job_failed', 'output_unavailable']);
    const okLogGone = run(
      snap(running('a'), {
        job: present(job('a', { conditions: complete }), {
          kind: 'pod',
          pod: pod('a', 0),
          log: { kind: 'unavailable', detail: 'log read failed' },
        }),
      }),
    );
    assert.equal(onlyPatch(okLogGone).failureReason, 'run output unavailable: log read failed');
  });

  it('a failed init container gives its own reason (termination message, else exit code), not the Job’s', () => {
    const initFailed = (terminated: Record<string, unknown>) => {
      const p = pod('a', undefined);
      return run(
        snap(running('a'), {
          job: present(job('a', { conditions: failedBackoff }), {
            kind: 'pod',
            pod: {
              ...p,
              status: {
                ...p.status,
                phase: 'Failed',
                containerStatuses: [{ ...p.status.containerStatuses[0], name: 'agent', state: {} }],
                initContainerStatuses: [
                  { name: 'init', state: { terminated }, lastState: {}, ready: false, restartCount: 0 },
                ],
              },
            } as typeof p,
            log: { kind: 'unavailable', detail: 'container agent is waiting to start' },
          }),
        }),
      );
    };
    const withMessage = onlyPatch(initFailed({ exitCode: 2, message: 'installing git needs git\n' }));
    assert.equal(withMessage.phase, 'Failed');
    assert.equal(withMessage.exitCode, 1, 'the agent never ran');
    assert.equal(withMessage.failureReason, 'init container failed (exit code 2): installing git needs git');
    const bare = onlyPatch(initFailed({ exitCode: 7 }));
    assert.equal(bare.failureReason, 'init container failed with exit code 7');
    assert.equal(
      failureInit(3, 'x'.repeat(5000)).length,
      'init container failed (exit code 3): '.length + 1024,
    );
    // A successful init leaves the Job's reason.
    const ok = onlyPatch(initFailed({ exitCode: 0 }));
    assert.equal(ok.failureReason, 'BackoffLimitExceeded: Job has reached the specified backoff limit');
  });

  it("a CLI that ended on a failure event gives its own message (from the run report), not the Job's", () => {
    const failedWith = (message: string) => {
      const p = pod('a', 1);
      const agent = p.status.containerStatuses[0];
      const terminated = { ...(agent?.state.terminated ?? {}), exitCode: 1, message };
      return onlyPatch(
        run(
          snap(running('a'), {
            job: present(job('a', { conditions: failedBackoff }), {
              kind: 'pod',
              pod: {
                ...p,
                status: {
                  ...p.status,
                  containerStatuses: [{ ...agent, name: 'agent', state: { terminated } }],
                },
              } as typeof p,
              log: { kind: 'read', text: '' },
            }),
          }),
        ),
      );
    };
    const cli = failedWith(
      '{"v":1,"result":"API Error: 529 Overloaded","error":"API Error: 529 Overloaded"}',
    );
    assert.equal(cli.phase, 'Failed');
    assert.equal(cli.exitCode, 1);
    assert.equal(cli.failureReason, 'API Error: 529 Overloaded');
    // A report without an error (the CLI printed no failure event) leaves the Job's reason.
    const plain = failedWith('{"v":1,"result":"partial answer"}');
    assert.equal(plain.failureReason, 'BackoffLimitExceeded: Job has reached the specified backoff limit');
  });

  it('ends Failed with exitCode 1 when the Job is gone (D-a)', () => {
    const d = run(snap(running('a', { started: 30 }), { job: { kind: 'absent' } }));
    const st = onlyPatch(d);
    assert.deepEqual(
      {
        phase: st.phase,
        jobName: st.jobName,
        exitCode: st.exitCode,
        output: st.output,
        failureReason: st.failureReason,
      },
      { phase: 'Failed', jobName, exitCode: 1, output: '', failureReason: FAILURE_JOB_GONE },
    );
    assert.equal(
      st.failureReason,
      'run record unavailable: Job garbage-collected before its result was observed',
    );
    assert.equal(findCondition(st.conditions, 'Failed')?.reason, 'JobGarbageCollected');
    assert.deepEqual(metrics(d), [
      { metric: 'runCompleted', phase: 'Failed', exitCode: 1 },
      { metric: 'runDuration', phase: 'Failed', seconds: 30 },
      { metric: 'runFailure', kind: 'output_unavailable' },
    ]);
  });

  it('derives the Job name from the Agent name when status.jobName is empty', () => {
    const a = running('a', { status: { jobName: '' } });
    assert.equal(onlyPatch(run(snap(a, { job: { kind: 'absent' } }))).jobName, jobName);
  });

  it('treats a Job of its name owned by someone else as its own Job gone', () => {
    const other = job('a', { owner: { name: 'a', uid: 'uid-previous' }, conditions: complete });
    const st = onlyPatch(run(snap(running('a'), { job: present(other, withPod('a', 0)) })));
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, FAILURE_JOB_GONE);
  });

  it('leaves duration out when startedAt is missing', () => {
    const a = agent('a', { status: { phase: 'Running', jobName } });
    const d = run(snap(a, { job: present(job('a', { conditions: complete }), withPod('a', 0)) }));
    assert.ok(!metrics(d).some((m) => m.metric === 'runDuration'));
  });
});

describe('decide: history pruning after a terminal transition', () => {
  it('prunes the Station history as it will be after the transition, never the Agent itself', () => {
    const a = running('a', { started: 10 });
    const siblings = [
      finished('s1', 'Succeeded', 5, { rv: '51' }),
      finished('s2', 'Succeeded', 6, { rv: '52' }),
      finished('f1', 'Failed', 7, { rv: '71' }),
      finished('elsewhere', 'Succeeded', 1, { station: 'other' }),
      running('busy'),
      a,
    ];
    const s = snap(a, {
      siblings,
      station: station('stn', { successfulRunsHistoryLimit: 2, failedRunsHistoryLimit: 0 }),
      job: present(job('a', { conditions: complete }), withPod('a', 0)),
    });
    const d = run(s);
    // a becomes the newest Succeeded: keep a and s2, drop s1; Failed limit 0 drops f1.
    assert.deepEqual(
      deletes(d).map((x) => [x.ref.name, x.resourceVersion, x.purpose]),
      [
        ['s1', '51', 'prune'],
        ['f1', '71', 'prune'],
      ],
    );
    assert.equal(deletes(d)[0]?.reason, 'history limit: Station stn keeps 2 Succeeded runs');
    assert.equal(deletes(d)[1]?.reason, 'history limit: Station stn keeps 0 Failed runs');
  });

  it('keeps the Agent itself even with a limit of 0 (the next sweep deletes it)', () => {
    const a = running('a');
    const d = run(
      snap(a, {
        siblings: [a],
        station: station('stn', { failedRunsHistoryLimit: 0 }),
        job: { kind: 'absent' },
      }),
    );
    assert.deepEqual(deletes(d), []);
  });

  it('skips pruning when the Station no longer exists', () => {
    const a = running('a');
    const d = run(
      snap(a, {
        station: null,
        definition: null,
        siblings: [
          finished('s1', 'Succeeded', 1),
          finished('s2', 'Succeeded', 2),
          finished('s3', 'Succeeded', 3),
          finished('s4', 'Succeeded', 4),
          a,
        ],
        job: { kind: 'absent' },
      }),
    );
    assert.equal(onlyPatch(d).phase, 'Failed');
    assert.deepEqual(deletes(d), []);
  });
});

describe('decide: conditions across the lifecycle', () => {
  it('walks Queued → Running → Succeeded with lastTransitionTime moving only on status changes', () => {
    let a = agent('a', { created: 0, generation: 3 });
    const st = station('stn', { maxConcurrentRuns: 1 });
    const blocker = running('r');
    const q = run(snap(a, { station: st, siblings: [blocker, a] }), recordingBuilder(), at(10));
    a = agent('a', {
      created: 0,
      generation: 3,
      status: { phase: 'Pending', conditions: onlyPatch(q).conditions },
    });
    const r = run(snap(a, { station: st, siblings: [a] }), recordingBuilder(), at(20));
    const rs = onlyPatch(r);
    a = agent('a', {
      created: 0,
      generation: 3,
      status: { phase: 'Running', jobName: rs.jobName, startedAt: rs.startedAt, conditions: rs.conditions },
    });
    const done = run(
      snap(a, {
        station: st,
        siblings: [a],
        job: present(job('a', { conditions: complete }), withPod('a', 0)),
      }),
      recordingBuilder(),
      at(30),
    );
    const conds = onlyPatch(done).conditions;
    assert.deepEqual(
      conds.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime, c.observedGeneration]),
      [
        ['Ready', 'True', 'Succeeded', '2025-03-01T12:00:30Z', 3],
        ['Complete', 'True', 'Succeeded', '2025-03-01T12:00:30Z', 3],
      ],
    );
    assert.equal(onlyPatch(r).conditions[0]?.lastTransitionTime, '2025-03-01T12:00:10Z');
  });

  it('omits observedGeneration when the Agent has no generation', () => {
    const raw = agent('a');
    const a: Agent = { ...raw, metadata: { ...raw.metadata, generation: undefined } };
    const d = decide(snap(a, { station: null, definition: null }), NOW, recordingBuilder());
    const st = onlyPatch(d);
    assert.equal('observedGeneration' in st, false);
  });
});

describe('decide: namespaces', () => {
  it('addresses every action to the Agent namespace', () => {
    const d = run(snap(agent('a'), { station: null, definition: null }));
    for (const act of d.actions) if ('ref' in act) assert.equal(act.ref.namespace, NS);
  });
});

// ------------------------------------------------------------------------------------------------ RBAC runs

describe('decide: runs that hold Kubernetes access (issue 9 §2, §6)', () => {
  const grantRoles = (roles: readonly string[], clusterRoles: readonly string[] = []) => {
    const p = parseAgentPolicy({
      metadata: { name: 'grants', uid: 'u', resourceVersion: '1', creationTimestamp: iso(0) },
      spec: { rbac: { roles, clusterRoles } },
    });
    assert.ok(p.ok);
    return { kind: 'found', policy: p.value } as const;
  };
  const rbacDef = definition('def', { rbac: { roles: ['pod-reader'], clusterRoles: ['node-reader'] } });
  const withFinalizer = (a: Agent, ...finalizers: string[]): Agent => ({
    ...a,
    metadata: { ...a.metadata, finalizers: finalizers.length > 0 ? finalizers : [RUN_CLEANUP_FINALIZER] },
  });
  const API = { addresses: ['10.0.0.1'], ports: [6443] };

  it('holds the cleanup finalizer first, before any binding or Job, and creates nothing else in that step', () => {
    const a = agent('a');
    const d = run(snap(a, { definition: rbacDef, policy: grantRoles(['pod-reader'], ['node-reader']) }));
    assert.deepEqual(d.actions, [
      {
        kind: 'addFinalizer',
        ref: { namespace: NS, name: 'a', uid: 'uid-a' },
        resourceVersion: 'rv-a',
        finalizer: RUN_CLEANUP_FINALIZER,
        first: true,
      },
    ]);
    assert.equal(d.admits, undefined, 'no slot is taken by the finalizer step');
  });

  it('then creates the ServiceAccount, one binding per role, the policy (with the API server) and the Job', () => {
    const a = withFinalizer(agent('a'));
    const d = run(
      snap(a, { definition: rbacDef, policy: grantRoles(['pod-reader'], ['node-reader']), apiServer: API }),
    );
    assert.deepEqual(kinds(d).slice(0, 6), [
      'createServiceAccount',
      'createRunBinding',
      'createRunBinding',
      'createNetworkPolicy',
      'createRunInput',
      'createJob',
    ]);
    const bindings = d.actions.flatMap((x) => (x.kind === 'createRunBinding' ? [x.binding] : []));
    assert.deepEqual(
      bindings.map((b) => [b.kind, b.roleRef.name, b.subjects[0].name]),
      [
        ['RoleBinding', 'pod-reader', jobNameFor('a')],
        ['ClusterRoleBinding', 'node-reader', jobNameFor('a')],
      ],
    );
    const np = d.actions.find((x) => x.kind === 'createNetworkPolicy');
    assert.ok(np?.kind === 'createNetworkPolicy');
    assert.deepEqual(np.policy.spec.egress.at(-1), {
      to: [{ ipBlock: { cidr: '10.0.0.1/32' } }],
      ports: [{ protocol: 'TCP', port: 6443 }],
    });
    assert.equal(onlyPatch(d).phase, 'Running');
    assert.ok(!events(d).some((e) => e.reason === REASON.apiServerUnknown));
  });

  it('warns after the start when the API server address is unknown (the run still starts)', () => {
    const a = withFinalizer(agent('a'));
    const d = run(snap(a, { definition: rbacDef, policy: grantRoles(['pod-reader'], ['node-reader']) }));
    assert.equal(onlyPatch(d).phase, 'Running');
    const warning = events(d).find((e) => e.reason === REASON.apiServerUnknown);
    assert.equal(warning?.type, 'Warning');
    assert.ok(kinds(d).lastIndexOf('recordEvent') > kinds(d).indexOf('patchStatus'));
  });

  it('a run without spec.rbac gets no finalizer, no binding and no API server rule', () => {
    const d = run(snap(agent('a'), { apiServer: API }));
    assert.ok(!kinds(d).includes('addFinalizer'));
    assert.ok(!kinds(d).includes('createRunBinding'));
    const np = d.actions.find((x) => x.kind === 'createNetworkPolicy');
    assert.ok(np?.kind === 'createNetworkPolicy');
    assert.deepEqual(np.policy.spec.egress, [DNS_RULE, PUBLIC_HTTPS_RULE]);
  });

  it('fails a run whose binding is refused, with the reason and RBACRefused; its finalizer stays for the cleanup', () => {
    const a = withFinalizer(agent('a'));
    const d = run(
      snap(a, {
        definition: rbacDef,
        policy: grantRoles(['pod-reader'], ['node-reader']),
        bindingRefused: { message: 'RoleBinding x (ClusterRole pod-reader): 403 Forbidden' },
      }),
    );
    const p = onlyPatch(d);
    assert.equal(p.phase, 'Failed');
    assert.match(p.failureReason ?? '', /^the run's Kubernetes access could not be granted: RoleBinding x/);
    assert.match(p.failureReason ?? '', /bind on each grantable ClusterRole/);
    assert.ok(events(d).some((e) => e.type === 'Warning' && e.reason === REASON.rbacRefused));
    assert.ok(!kinds(d).includes('removeFinalizer'));
  });

  it('refuses RBAC without a policy, outside the policy, and on batch runs: Failed PolicyViolation', () => {
    const rows: [string, Snapshot, RegExp][] = [
      [
        'no policy',
        snap(agent('a'), {
          job: { kind: 'absent' },
          definition: rbacDef,
        }),
        /requests Kubernetes access \(spec\.rbac\), but no AgentPolicy applies/,
      ],
      [
        'a role the policy does not list',
        snap(agent('a'), {
          job: { kind: 'absent' },
          definition: rbacDef,
          policy: grantRoles([], ['node-reader']),
        }),
        /^AgentPolicy grants: role pod-reader is not grantable \(spec\.rbac\.roles: \(none\)\)$/,
      ],
      [
        'a cluster role listed only for namespaces',
        snap(agent('a'), {
          job: { kind: 'absent' },
          definition: rbacDef,
          policy: grantRoles(['pod-reader', 'node-reader']),
        }),
        /^AgentPolicy grants: cluster role node-reader is not grantable cluster-wide/,
      ],
      [
        'a batch recipe',
        snap(agent('a'), {
          job: { kind: 'absent' },
          definition: definition('def', { execution: 'batch', rbac: { roles: ['pod-reader'] } }),
          policy: grantRoles(['pod-reader']),
        }),
        /requests spec\.rbac, but a batch run has no pod to hold a token/,
      ],
    ];
    for (const [name, s, reason] of rows) {
      const d = run(s);
      const p = onlyPatch(d);
      assert.equal(p.phase, 'Failed', name);
      assert.match(p.failureReason ?? '', reason, name);
      assert.deepEqual(failureKinds(d), ['policy'], name);
      assert.ok(!kinds(d).includes('addFinalizer'), `${name}: no finalizer for a refused run`);
    }
  });

  it('a finished run holding the finalizer deletes its bindings, then the finalizer; the Job stays', () => {
    for (const phase of ['Succeeded', 'Failed'] as const) {
      const a = withFinalizer(finished('a', phase, 10), 'other/keep', RUN_CLEANUP_FINALIZER);
      const d = run(snap(a));
      assert.deepEqual(d.actions, [
        { kind: 'deleteRunBindings', ref: { namespace: NS, name: 'a', uid: 'uid-a' } },
        {
          kind: 'removeFinalizer',
          ref: { namespace: NS, name: 'a', uid: 'uid-a' },
          finalizer: RUN_CLEANUP_FINALIZER,
          index: 1,
        },
      ]);
    }
  });

  it('deleting a Running or Pending run stops its own Job (Foreground, by uid), removes its bindings, then the finalizer', () => {
    for (const a of [
      withFinalizer(running('a', { deleting: true, jobName: 'agent-job-a' })),
      withFinalizer(agent('a', { deleting: true })),
    ]) {
      assert.deepEqual(run(snap(a)), { actions: [], needs: 'job' }, 'the Job is read first');
      const own = job('a');
      const d = run(snap(a, { job: present(own) }));
      assert.deepEqual(kinds(d), ['deleteJob', 'recordEvent', 'deleteRunBindings', 'removeFinalizer']);
      assert.deepEqual(d.actions[0], {
        kind: 'deleteJob',
        namespace: NS,
        name: jobNameFor('a'),
        uid: own.metadata.uid,
      });
      assert.equal(events(d)[0]?.reason, REASON.cleanedUp);
      const foreign = run(snap(a, { job: present(job('a', { owner: { name: 'x', uid: 'other' } })) }));
      assert.deepEqual(
        kinds(foreign),
        ['deleteRunBindings', 'removeFinalizer'],
        'never a Job it does not own',
      );
      const none = run(snap(a, { job: { kind: 'absent' } }));
      assert.deepEqual(kinds(none), ['deleteRunBindings', 'removeFinalizer']);
    }
    const done = run(snap(withFinalizer(finished('a', 'Succeeded', 10, { deleting: true }))));
    assert.deepEqual(
      kinds(done),
      ['deleteRunBindings', 'removeFinalizer'],
      'a finished run has no Job to stop',
    );
  });

  it('without the finalizer a deleted or finished Agent still gets nothing to do', () => {
    assert.deepEqual(run(snap(running('a', { deleting: true }))).actions, []);
    assert.deepEqual(run(snap(finished('a', 'Succeeded', 10))).actions, []);
  });
});

// ------------------------------------------------------------------------------------------------ results

describe('decide: what a finished run produced (issue 10 §2)', () => {
  const report = JSON.stringify({
    v: 1,
    result: '{"verdict":"pass"}',
    usage: { input: 1000, output: 500, cacheRead: 0, cacheWrite: 0, total: 1500 },
    model: 'claude-opus-5-5',
  });
  const finishedWith = (def = definition(), message = report) =>
    run(
      snap(running('a'), {
        definition: def,
        job: present(job('a', { conditions: complete, succeeded: 1 }), {
          kind: 'pod',
          pod: pod('a', 0, message),
          log: { kind: 'read', text: 'hello\n' },
        }),
      }),
    );

  it('the run report of the termination message: result, tokenUsage, costEstimate, token and cost metrics', () => {
    const d = finishedWith();
    const p = onlyPatch(d);
    assert.equal(p.phase, 'Succeeded');
    assert.equal(p.result, '{"verdict":"pass"}');
    assert.deepEqual(p.tokenUsage, { input: 1000, output: 500, cacheRead: 0, cacheWrite: 0, total: 1500 });
    assert.deepEqual(p.costEstimate, { usd: '0.014', source: 'priceTable', model: 'claude-opus-5-5' });
    const m = metrics(d);
    assert.ok(
      m.some((o) => o.metric === 'runTokens' && o.model === 'claude-opus-5-5' && o.usage.total === 1500),
    );
    assert.ok(m.some((o) => o.metric === 'runCost' && Math.abs(o.usd - 0.014) < 1e-12));
  });

  it('a result that does not match output.schema fails a Job that completed: ResultInvalid, result_invalid', () => {
    const def = definition('def', {
      output: { format: 'json', schema: { type: 'object', required: ['files'] } },
    });
    const d = finishedWith(def);
    const p = onlyPatch(d);
    assert.equal(p.phase, 'Failed');
    assert.equal(p.exitCode, 1);
    assert.equal(
      p.failureReason,
      'result does not match output.schema: $: missing required property "files"',
    );
    assert.ok(events(d).some((e) => e.type === 'Warning' && e.reason === REASON.resultInvalid));
    assert.deepEqual(failureKinds(d), ['result_invalid']);
    const ok = finishedWith(definition('def', { output: { format: 'json', schema: { type: 'object' } } }));
    assert.deepEqual(onlyPatch(ok).result, { verdict: 'pass' }, 'a valid result is the parsed value');
  });

  it('an init line or garbage in the termination message is not a report: the log tail is read instead', () => {
    const p = onlyPatch(finishedWith(definition(), 'git not found'));
    assert.equal(p.phase, 'Succeeded');
    assert.equal(p.result, undefined);
    assert.equal(p.tokenUsage, undefined);
  });
});

// ------------------------------------------------------------------------------------------------ dependencies

describe('decide: the dependencies gate (issue 10 §4)', () => {
  const withDeps = definition('def', {
    dependencies: [{ service: 'db', port: 5432, timeoutSeconds: 120 }, { service: 'cache' }],
  });
  const ready = (addresses: string[], ports: number[]) => ({ readyAddresses: addresses, ports });
  const observed = (entries: [string, ReturnType<typeof ready>[]][]) =>
    ({ kind: 'observed', byService: new Map(entries) }) as const;
  const both = observed([
    ['db', [ready(['10.0.0.5'], [5432])]],
    ['cache', [ready(['10.0.0.6', '10.0.0.7'], [6379, 6380])]],
  ]);

  it('waits before admission while a Service has no ready endpoint: Ready=False once, re-checked at the deadline', () => {
    const a = agent('a', { created: 30 });
    const s = snap(a, { definition: withDeps, endpoints: observed([['db', [ready([], [5432])]]]) });
    const d = run(s);
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
    const ready0 = onlyPatch(d).conditions.find((c) => c.type === 'Ready');
    assert.equal(ready0?.reason, REASON.waitingForDependencies);
    assert.equal(
      ready0?.message,
      'Waiting for Service db (port 5432), Service cache to have ready endpoints',
    );
    // The wait starts now (time spent queued does not count): db times out in 120 s, cache in 300 s.
    assert.equal(d.requeueAfterMs, 120_000);
    const told = { ...a, status: { ...a.status, conditions: [...onlyPatch(d).conditions] } };
    assert.deepEqual(run(snap(told, { definition: withDeps, endpoints: observed([]) }), undefined, at(90)), {
      actions: [],
      requeueAfterMs: 90_000,
    });
    assert.deepEqual(run(snap(a, { definition: withDeps, endpoints: { kind: 'unsynced' } })), {
      actions: [],
      requeueAfterMs: 1000,
    });
  });

  it('a wrong port is not ready; once every Service is ready the run starts and its egress admits them', () => {
    const wrongPort = observed([
      ['db', [ready(['10.0.0.5'], [5433])]],
      ['cache', [ready(['10.0.0.6'], [6379])]],
    ]);
    assert.deepEqual(kinds(run(snap(agent('a'), { definition: withDeps, endpoints: wrongPort }))), [
      'patchStatus',
      'recordEvent',
    ]);
    const d = run(snap(agent('a'), { definition: withDeps, endpoints: both }));
    assert.equal(onlyPatch(d).phase, 'Running');
    const np = d.actions.find((x) => x.kind === 'createNetworkPolicy');
    assert.ok(np?.kind === 'createNetworkPolicy');
    assert.deepEqual(np.policy.spec.egress.slice(2), [
      { to: [{ ipBlock: { cidr: '10.0.0.5/32' } }], ports: [{ protocol: 'TCP', port: 5432 }] },
      {
        to: [{ ipBlock: { cidr: '10.0.0.6/32' } }, { ipBlock: { cidr: '10.0.0.7/32' } }],
        ports: [
          { protocol: 'TCP', port: 6379 },
          { protocol: 'TCP', port: 6380 },
        ],
      },
    ]);
  });

  it('counts the wait from DependenciesReady=False, not from a Ready=False that came before (queued for a slot)', () => {
    // Queued since -500 s (Ready=False/Queued); now the dependency has no ready endpoint: the wait starts now.
    const queued = agent('a', {
      created: -600,
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'Queued',
            message: 'Waiting',
            lastTransitionTime: iso(-500),
          },
        ],
      },
    });
    const told = run(snap(queued, { definition: withDeps, endpoints: observed([]) }));
    assert.deepEqual(kinds(told), ['patchStatus', 'recordEvent']);
    const conditions = onlyPatch(told).conditions;
    assert.equal(conditions.find((c) => c.type === 'DependenciesReady')?.status, 'False');
    assert.equal(
      conditions.find((c) => c.type === 'DependenciesReady')?.lastTransitionTime,
      formatConditionTime(NOW),
    );
    assert.equal(told.requeueAfterMs, 120_000);
    // Decided again on its own patch, at the same instant: nothing more (it waits; it does not fail).
    const after = { ...queued, status: { ...queued.status, conditions: [...conditions] } };
    assert.deepEqual(run(snap(after, { definition: withDeps, endpoints: observed([]) })), {
      actions: [],
      requeueAfterMs: 120_000,
    });
  });

  it('says DependenciesReady=True once they are ready after a wait, then admits; a later wait starts afresh', () => {
    const waited = agent('a', {
      created: -500,
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: REASON.waitingForDependencies,
            message: 'Waiting',
            lastTransitionTime: iso(-400),
            observedGeneration: 1,
          },
          {
            type: 'DependenciesReady',
            status: 'False',
            reason: REASON.waitingForDependencies,
            message: 'Waiting',
            lastTransitionTime: iso(-100),
            observedGeneration: 1,
          },
        ],
      },
    });
    const d = run(snap(waited, { definition: withDeps, endpoints: both }));
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
    const deps = onlyPatch(d).conditions.find((c) => c.type === 'DependenciesReady');
    assert.equal(deps?.status, 'True');
    assert.equal(deps?.reason, REASON.dependenciesReady);
    const readyNow = { ...waited, status: { ...waited.status, conditions: [...onlyPatch(d).conditions] } };
    assert.equal(onlyPatch(run(snap(readyNow, { definition: withDeps, endpoints: both }))).phase, 'Running');
    // Gone again: a new wait, from now.
    const again = run(snap(readyNow, { definition: withDeps, endpoints: observed([]) }));
    const restarted = onlyPatch(again).conditions.find((c) => c.type === 'DependenciesReady');
    assert.equal(restarted?.status, 'False');
    assert.equal(restarted?.lastTransitionTime, formatConditionTime(NOW));
    assert.equal(again.requeueAfterMs, 120_000);
  });

  it('fails past the timeout, and when EndpointSlices cannot be watched', () => {
    const waitingSince = agent('a', {
      created: -500,
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: REASON.waitingForDependencies,
            message: 'Waiting',
            lastTransitionTime: iso(-60),
            observedGeneration: 1,
          },
          {
            type: 'DependenciesReady',
            status: 'False',
            reason: REASON.waitingForDependencies,
            message: 'Waiting',
            lastTransitionTime: iso(-60),
            observedGeneration: 1,
          },
        ],
      },
    });
    // Waiting since -60 s; at 60 s db (120 s) is due.
    const late = run(snap(waitingSince, { definition: withDeps, endpoints: observed([]) }));
    const p = onlyPatch(late);
    assert.equal(p.phase, 'Failed');
    assert.equal(p.failureReason, 'dependency db not ready after 120s');
    assert.deepEqual(failureKinds(late), ['dependency']);
    assert.ok(events(late).some((e) => e.type === 'Warning' && e.reason === REASON.dependencyNotReady));
    const blind = run(
      snap(agent('a'), {
        definition: withDeps,
        endpoints: { kind: 'unavailable', message: 'the controller may not watch EndpointSlices (403)' },
      }),
    );
    assert.equal(
      onlyPatch(blind).failureReason,
      'dependencies cannot be checked: the controller may not watch EndpointSlices (403)',
    );
  });
});

// ------------------------------------------------------------------------------------------------ memory

describe('decide: agent memory (issue 10 §3)', () => {
  const withMemory = (memory: Record<string, unknown> = { configMap: 'notes' }, spec = {}) =>
    definition('def', { memory, ...spec });
  const read = (content: string, resourceVersion?: string) =>
    ({ kind: 'read', content, ...(resourceVersion !== undefined ? { resourceVersion } : {}) }) as const;
  const createJobOf = (d: Decision) => {
    const c = d.actions.find((a) => a.kind === 'createJob');
    assert.ok(c?.kind === 'createJob', kinds(d).join(','));
    return c.job;
  };
  const commandOf = (d: Decision): string[] => {
    const spec = (
      createJobOf(d).spec.template as { spec: { containers: { name: string; command: string[] }[] } }
    ).spec;
    return spec.containers.find((c) => c.name === 'agent')?.command ?? [];
  };
  /** The prompt the run's input ConfigMap hands its Job (issue 10 §1). */
  const promptOf = (d: Decision): string => {
    const c = d.actions.find((a) => a.kind === 'createRunInput');
    assert.ok(c?.kind === 'createRunInput', kinds(d).join(','));
    return c.configMap.data.prompt ?? '';
  };

  it('Pending: reads the memory once admitted, then starts with it in the prompt and on the Job', () => {
    const a = agent('a');
    const first = run(snap(a, { definition: withMemory() }));
    assert.deepEqual(first, { actions: [], needs: 'memory' });
    const d = run(snap(a, { definition: withMemory(), memory: read('- flaky login\n', '41') }));
    assert.equal(onlyPatch(d).phase, 'Running');
    assert.ok(
      promptOf(d).startsWith('Do {thing}\n\n<memory>\n- flaky login\n</memory>\n'),
      JSON.stringify(promptOf(d)),
    );
    // The prompt, memory and all, is in the input ConfigMap only: never in the Job's argv.
    assert.ok(!commandOf(d).some((arg) => arg.includes('flaky login')), JSON.stringify(commandOf(d)));
    const annotations = createJobOf(d).metadata.annotations;
    assert.equal(annotations['agents.re-cinq.com/memory-configmap'], 'notes');
    assert.equal(annotations['agents.re-cinq.com/memory-max-size-kb'], '64');
    assert.equal(annotations['agents.re-cinq.com/memory-version'], '41');
    // A missing ConfigMap is an empty memory: the instruction only, recorded as not existing.
    const empty = run(snap(a, { definition: withMemory(), memory: read('') }));
    assert.ok(!promptOf(empty).includes('<memory>\n'), JSON.stringify(promptOf(empty)));
    assert.ok(promptOf(empty).startsWith('Do {thing}'), JSON.stringify(promptOf(empty)));
    assert.equal(createJobOf(empty).metadata.annotations['agents.re-cinq.com/memory-version'], '');
  });

  it('Pending: a queued run does not read its memory; a run without memory never asks', () => {
    const busy = station('stn', { maxConcurrentRuns: 1 });
    const a = agent('a', { created: 5 });
    const queued = run(snap(a, { station: busy, definition: withMemory(), siblings: [running('b'), a] }));
    assert.equal(queued.needs, undefined);
    assert.equal(findCondition(onlyPatch(queued).conditions, 'Ready')?.reason, REASON.queued);
    assert.equal(run(snap(agent('a'))).needs, undefined);
  });

  it('Pending: a memory the controller may not read fails the run, naming the grant', () => {
    const d = run(
      snap(agent('a'), {
        definition: withMemory(),
        memory: { kind: 'forbidden', message: 'configmaps "notes" is forbidden' },
      }),
    );
    const p = onlyPatch(d);
    assert.equal(p.phase, 'Failed');
    assert.equal(
      p.failureReason,
      'memory ConfigMap notes cannot be read (configmaps "notes" is forbidden); the controller needs configmaps get, create and update in this namespace (deploy/components/memory)',
    );
    assert.ok(events(d).some((e) => e.type === 'Warning' && e.reason === REASON.memoryUnreadable));
    assert.deepEqual(failureKinds(d), ['build_error']);
    assert.ok(!kinds(d).includes('createJob'));
  });

  it('Pending: a batch recipe with memory is refused (no pod to mount it)', () => {
    const d = run(
      snap(agent('a'), { definition: withMemory({ configMap: 'notes' }, { execution: 'batch' }) }),
    );
    const p = onlyPatch(d);
    assert.equal(p.phase, 'Failed');
    assert.equal(p.failureReason, 'batch execution cannot use memory: a batch run has no pod to mount it');
    assert.ok(events(d).some((e) => e.reason === REASON.batchUnsupported));
  });

  /** The finished Job of run `a`, recording the memory it started with. */
  const memoryJob = (
    conditions: readonly Record<string, unknown>[],
    annotations: Record<string, string> = {
      'agents.re-cinq.com/memory-configmap': 'notes',
      'agents.re-cinq.com/memory-max-size-kb': '1',
      'agents.re-cinq.com/memory-version': '41',
    },
  ) => {
    const j = job('a', { conditions, ...(conditions === complete ? { succeeded: 1 } : { failed: 1 }) });
    return { ...j, metadata: { ...j.metadata, annotations: { ...j.metadata.annotations, ...annotations } } };
  };
  const report = (result: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ v: 1, result, ...extra });
  /** The memory ConfigMap as the run read it (resourceVersion 41), observed again at its end. */
  const notes = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'notes',
      namespace: NS,
      resourceVersion: '41',
      labels: { 'agents.re-cinq.com/memory': 'true' },
    },
    data: { 'MEMORY.md': 'old' },
  };
  const memoryRead: MemorySaveObservation = { configMap: { kind: 'present', configMap: notes }, changed: 0 };
  const finishedRun = (
    o: {
      conditions?: readonly Record<string, unknown>[];
      message?: string;
      log?: string;
      exitCode?: number;
      def?: ReturnType<typeof definition>;
      annotations?: Record<string, string>;
      memorySave?: MemorySaveObservation | null;
    } = {},
  ) => {
    const conditions = o.conditions ?? complete;
    return run(
      snap(running('a'), {
        ...(o.memorySave === null ? {} : { memorySave: o.memorySave ?? memoryRead }),
        definition: o.def ?? withMemory({ configMap: 'notes', maxSizeKB: 1 }),
        job: present(memoryJob(conditions, o.annotations), {
          kind: 'pod',
          pod: pod('a', o.exitCode ?? 0, o.message),
          log: { kind: 'read', text: o.log ?? 'hello\n' },
        }),
      }),
    );
  };
  const saves = (d: Decision) =>
    d.actions.filter((a): a is Extract<Action, { kind: 'saveMemory' }> => a.kind === 'saveMemory');

  it('Succeeded with a memory block: the memory ConfigMap is observed first (needs), nothing written before', () => {
    const d = finishedRun({ message: report('<memory>\n- x\n</memory>'), memorySave: null });
    assert.deepEqual(d, { actions: [], needs: 'memorySave' });
  });

  it('Succeeded with a memory block: saveMemory (the last block) right before the terminal patch, its Event after the run’s', () => {
    const d = finishedRun({
      message: report('Fixed.\n<memory>\nold\n</memory>\nAnd:\n<memory>\n- login needs a retry\n</memory>\n'),
    });
    assert.equal(onlyPatch(d).phase, 'Succeeded');
    assert.deepEqual(kinds(d).slice(0, 4), ['saveMemory', 'patchStatus', 'recordEvent', 'recordEvent']);
    assert.deepEqual(saves(d), [
      {
        kind: 'saveMemory',
        ref: { namespace: NS, name: 'a', uid: 'uid-a' },
        namespace: NS,
        configMap: { ...notes, data: { 'MEMORY.md': '- login needs a retry' } },
        replace: { resourceVersion: '41' },
      },
    ]);
    assert.deepEqual(
      events(d).map((e) => `${e.reason}: ${e.message}`),
      [
        `${REASON.succeeded}: ${events(d)[0]?.message}`,
        'MemorySaved: Memory saved to ConfigMap notes (21 bytes)',
      ],
    );
  });

  it('a memory block over the run’s maxSizeKB is not saved: a Warning with the size and the cap', () => {
    const d = finishedRun({ message: report(`<memory>${'x'.repeat(1025)}</memory>`) });
    assert.equal(onlyPatch(d).phase, 'Succeeded');
    assert.deepEqual(saves(d), []);
    const warning = events(d).find((e) => e.reason === REASON.memoryTooLarge);
    assert.equal(warning?.type, 'Warning');
    assert.equal(
      warning?.message,
      'Memory not saved: the memory block is 1025 bytes, over memory.maxSizeKB 1 (1024 bytes); ConfigMap notes is unchanged',
    );
    assert.equal(saves(finishedRun({ message: report(`<memory>${'x'.repeat(1024)}</memory>`) })).length, 1);
  });

  it('nothing for a Failed run, an answer without a block, or a Job that started without memory', () => {
    const failed = finishedRun({
      conditions: failedBackoff,
      exitCode: 2,
      message: report('<memory>\nx\n</memory>'),
    });
    assert.equal(onlyPatch(failed).phase, 'Failed');
    assert.deepEqual(saves(failed), []);
    assert.ok(!events(failed).some((e) => e.reason.startsWith('Memory')));
    const silent = finishedRun({ message: report('all done') });
    assert.deepEqual(saves(silent), []);
    assert.ok(!events(silent).some((e) => e.reason.startsWith('Memory')));
    // The definition has memory now, but the run did not start with it: its Job says so.
    const before = finishedRun({ message: report('<memory>x</memory>'), annotations: {} });
    assert.deepEqual(saves(before), []);
  });

  it('an answer cut short that may hold a block is not trusted: Warning MemoryNotSaved', () => {
    const d = finishedRun({ message: report('Done.\n<memory>\nhalf a memo', { resultTruncated: true }) });
    assert.deepEqual(saves(d), []);
    assert.equal(events(d).find((e) => e.reason === REASON.memoryNotSaved)?.type, 'Warning');
  });

  it('an exec run (no answer format) saves the last block of its output', () => {
    const exec = withMemory({ configMap: 'notes' }, { model: 'exec', tool_config: { command: ['sh'] } });
    const d = finishedRun({
      def: exec,
      log: 'file: old\nprompt: <memory>\nold\n</memory>\n<memory>\nnew\n</memory>\n',
    });
    assert.deepEqual(
      saves(d).map((s) => s.configMap.data?.['MEMORY.md']),
      ['new'],
    );
  });
});

// ------------------------------------------------------------------------------------------------ run input

describe('decide: the run input ConfigMap (issue 10 §1)', () => {
  /** Agent `a` of Station stn with parameters (the prompt `Do {thing}` renders to `Do the dishes`) and a taskId. */
  const withParameters = (): Agent => {
    const base = agent('a', { created: 20 });
    const r = parseAgent({
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'Agent',
      metadata: base.metadata,
      spec: { stationRef: 'stn', taskId: 'task-7', parameters: { thing: 'the dishes' } },
    });
    assert.ok(r.ok);
    return r.value;
  };
  const inputOf = (d: Decision) => {
    const c = d.actions.find((a) => a.kind === 'createRunInput');
    assert.ok(c?.kind === 'createRunInput', kinds(d).join(','));
    return c.configMap;
  };
  const jobOf = (d: Decision) => {
    const c = d.actions.find((a) => a.kind === 'createJob');
    assert.ok(c?.kind === 'createJob', kinds(d).join(','));
    return c.job;
  };

  it('right before the Job: agent-job-<agent>-input, owned by the Agent, immutable, the rendered prompt and the ids', () => {
    const d = run(snap(withParameters()));
    assert.deepEqual(kinds(d).slice(2, 4), ['createRunInput', 'createJob']);
    const cm = inputOf(d);
    assert.equal(cm.apiVersion, 'v1');
    assert.equal(cm.kind, 'ConfigMap');
    assert.equal(cm.metadata.name, 'agent-job-a-input');
    assert.equal(cm.metadata.name, `${jobNameFor('a')}-input`);
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
    assert.deepEqual(cm.metadata.labels, jobOf(d).metadata.labels, 'labelled like its Job');
    assert.equal(cm.immutable, true);
    // Small parameters travel in the env (AGENT_PARAMETERS): the ConfigMap holds the prompt and the ids only.
    assert.deepEqual(Object.keys(cm.data).sort(), ['prompt', 'run.json']);
    assert.equal(cm.data.prompt, 'Do the dishes');
    assert.deepEqual(JSON.parse(cm.data['run.json'] ?? ''), {
      namespace: NS,
      agent: 'a',
      uid: 'uid-a',
      station: 'stn',
      definition: 'def',
      job: jobNameFor('a'),
      model: 'claude-opus-5-5',
      taskId: 'task-7',
    });
  });

  it('the Job mounts that ConfigMap and reads the prompt from it; its argv never holds the prompt', () => {
    const d = run(snap(withParameters()));
    const cm = inputOf(d);
    const spec = jobOf(d).spec.template.spec as {
      containers: { name: string; command: string[]; env: { name: string; value?: string }[] }[];
      volumes: { name: string; configMap?: { name: string } }[];
    };
    const container = spec.containers.find((c) => c.name === 'agent');
    assert.ok(container);
    assert.ok(
      !container.command.some((arg) => arg.includes('the dishes')),
      JSON.stringify(container.command),
    );
    assert.equal(container.env.find((e) => e.name === 'AGENT_PROMPT_FILE')?.value, '/agent/input/prompt');
    assert.equal(spec.volumes.find((v) => v.name === 'run-input')?.configMap?.name, cm.metadata.name);
  });

  it('a run without a taskId has none in run.json', () => {
    const ids = JSON.parse(inputOf(run(snap(agent('a')))).data['run.json'] ?? '') as Record<string, unknown>;
    assert.equal('taskId' in ids, false);
    assert.equal(ids.agent, 'a');
  });

  it('no input ConfigMap when adopting an existing Job, queueing, or failing to build', () => {
    const a = agent('a', { created: 9 });
    const cases: [string, Snapshot, JobBuilder?][] = [
      ['adopt', snap(a, { job: present(job('a')) })],
      [
        'queued',
        snap(a, { siblings: [running('r'), a], station: station('stn', { concurrencyPolicy: 'Forbid' }) }),
      ],
      ['build error', snap(a), failingBuilder('broken')],
    ];
    for (const [name, s, build] of cases) {
      const d = run(s, build ?? recordingBuilder());
      assert.ok(!kinds(d).includes('createRunInput'), `${name}: ${kinds(d).join(',')}`);
    }
  });

  it('a refused input ConfigMap fails the Pending Agent with failureInput (BuildFailed), creating nothing', () => {
    const message = 'ConfigMap team/agent-job-a-input: api 403 Forbidden: configmaps is forbidden';
    const build = recordingBuilder();
    const d = run(snap(agent('a'), { inputRefused: { message } }), build);
    const st = onlyPatch(d);
    assert.equal(st.phase, 'Failed');
    assert.equal(st.failureReason, failureInput(message));
    assert.equal(
      st.failureReason,
      "the run's input ConfigMap could not be created (ConfigMap team/agent-job-a-input: api 403 Forbidden: configmaps is forbidden); the controller needs configmaps create, get and delete in this namespace (deploy/rbac/controller-rbac.yaml)",
    );
    assert.equal(st.jobName, undefined);
    assert.equal(st.exitCode, undefined);
    assert.equal(findCondition(st.conditions, 'Failed')?.reason, REASON.buildFailed);
    assert.deepEqual(
      events(d).map((e) => [e.type, e.reason, e.message]),
      [['Warning', REASON.buildFailed, failureInput(message)]],
    );
    assert.deepEqual(failureKinds(d), ['build_error']);
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent', 'observeMetric', 'observeMetric']);
    assert.equal(d.requeueAfterMs, undefined, 'no retry');
    assert.equal(build.calls.length, 0, 'no Job is even built');
  });
});

describe('decide: tracing (issue 10 §5)', () => {
  const traced = { ...OPTIONS, tracing: { runTracesUrl: 'http://10.0.0.7:4318/v1/traces' } };
  const runningPatch = (d: Decision) => {
    const p = d.actions.find((a) => a.kind === 'patchStatus');
    assert.ok(p?.kind === 'patchStatus', kinds(d).join(','));
    return p.status;
  };

  it('a traced run starts with status.traceID, and its Job and NetworkPolicy carry the trace context and endpoint', () => {
    const d = run(snap(agent('a', { created: 20 }), { options: traced }));
    assert.equal(runningPatch(d).phase, 'Running');
    assert.equal(runningPatch(d).traceID, traceIdFromUid('uid-a'));
    const jobAction = d.actions.find((a) => a.kind === 'createJob');
    assert.ok(jobAction?.kind === 'createJob');
    const text = JSON.stringify(jobAction.job);
    assert.ok(
      text.includes(`"TRACEPARENT","value":"00-${traceIdFromUid('uid-a')}-`),
      'the pod continues the trace',
    );
    const np = d.actions.find((a) => a.kind === 'createNetworkPolicy');
    assert.ok(np?.kind === 'createNetworkPolicy');
    assert.ok(JSON.stringify(np.policy.spec.egress).includes('10.0.0.7/32'));
  });

  it('untraced: no traceID and no trace context', () => {
    const d = run(snap(agent('a', { created: 20 })));
    assert.equal(runningPatch(d).traceID, undefined);
    assert.ok(!JSON.stringify(d.actions).includes('TRACEPARENT'));
  });
});

describe('decide: Running, evidence that failed transiently (found by the chaos run)', () => {
  const a = running('a', { started: 1 });
  const completeAt = (s: number) => [
    { type: 'Complete', status: 'True', reason: 'CompletionsReached', lastTransitionTime: iso(s) },
  ];
  const outage: RunEvidence = { kind: 'unavailable', detail: 'HTTP 503', transient: true };
  const logOutage: RunEvidence = {
    kind: 'pod',
    pod: pod('a', 0),
    log: { kind: 'unavailable', detail: 'timeout', transient: true },
  };

  it('asks again soon while the verdict is younger than the retry window, instead of losing the result', () => {
    for (const evidence of [outage, logOutage]) {
      const d = decide(snap(a, { job: present(job('a', { conditions: completeAt(50) }), evidence) }), at(60));
      assert.deepEqual(d, { actions: [], requeueAfterMs: EVIDENCE_RETRY_MS });
    }
  });

  it('gives up after the window: Succeeded without output, saying why', () => {
    const late = at(50 + EVIDENCE_RETRY_WINDOW_MS / 1000);
    const d = decide(snap(a, { job: present(job('a', { conditions: completeAt(50) }), outage) }), late);
    const p = d.actions.find((x) => x.kind === 'patchStatus');
    assert.ok(p?.kind === 'patchStatus');
    assert.equal(p.status.phase, 'Succeeded');
    assert.equal(p.status.output, '');
    assert.match(p.status.failureReason ?? '', /HTTP 503/);
  });

  it('a permanent failure (404, 400) or a verdict without a time ends the run at once', () => {
    const permanent: RunEvidence = { kind: 'unavailable', detail: 'HTTP 404', transient: false };
    for (const [conditions, evidence] of [
      [completeAt(50), permanent],
      [complete, outage],
    ] as const) {
      const d = decide(snap(a, { job: present(job('a', { conditions }), evidence) }), at(60));
      assert.ok(d.actions.some((x) => x.kind === 'patchStatus'));
    }
  });
});
