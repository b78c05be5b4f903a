import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, ANNOTATION_GATEWAY_USAGE, parseAgentPolicy } from '../../api/index.ts';
import type { Action, Decision } from '../actions.ts';
import { REASON } from '../reasons.ts';
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
  queueOf,
  recordingBuilder,
  running,
  station,
} from '../test-fixtures.ts';
import { decide } from './decide.ts';
import { meteringBehind } from './metering.ts';

const GATEWAY = { url: 'http://agent-gateway.agents.svc:8080' };
const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: true, pollMs: 60000 },
  realtime: { enabled: true },
  controllerNamespace: 'agents',
};
const NOW = at(60);
const keyed = definition('def', {
  model: 'claude-opus-5-5',
  resources: { secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }] },
});
const policy = (() => {
  const r = parseAgentPolicy({
    metadata: { name: 'p', uid: 'u', resourceVersion: '1', creationTimestamp: iso(0) },
    spec: { models: { allowed: ['claude-*'] } },
  });
  if (!r.ok) throw new Error(r.error);
  return { kind: 'found', policy: r.value } as const;
})();

function snap(a: Agent, over: Partial<Snapshot> = {}, gateway = true): Snapshot {
  return {
    agent: a,
    station: station(),
    definition: keyed,
    job: { kind: 'unknown' },
    queue: queueOf(a, [a]),
    options: { ...OPTIONS, ...(gateway ? { gateway: GATEWAY } : {}) },
    ...over,
  };
}
const patches = (d: Decision) =>
  d.actions.filter((x): x is Extract<Action, { kind: 'patchStatus' }> => x.kind === 'patchStatus');
const events = (d: Decision) =>
  d.actions.filter((x): x is Extract<Action, { kind: 'recordEvent' }> => x.kind === 'recordEvent');
const withUsage = (a: Agent, usage: unknown): Agent => ({
  ...a,
  metadata: {
    ...a.metadata,
    annotations: { [ANNOTATION_GATEWAY_USAGE]: typeof usage === 'string' ? usage : JSON.stringify(usage) },
  },
});
const grant = { keys: { anthropic: 'anthropic' } };
const gated = (name: string, status: Record<string, unknown> = {}) =>
  running(name, { status: { gateway: grant, ...status } });
const opus = (input: number, output: number) => ({
  models: { 'claude-opus-5-5': { calls: 2, input, output, cacheRead: 0, cacheWrite: 0 } },
});

describe('decide: runs behind the model gateway (issue 28)', () => {
  it('a run starts with its credential Secret before its Job, its grant on status, the gateway in its build', () => {
    const build = recordingBuilder();
    const a = agent('a', { created: 5 });
    const d = decide(snap(a, { job: { kind: 'absent' }, policy }), NOW, build);
    const kinds = d.actions.map((x) => x.kind);
    const credential = kinds.indexOf('createGatewayCredential');
    assert.ok(credential !== -1, kinds.join(','));
    assert.ok(credential < kinds.indexOf('createJob'), 'the Secret before the Job');
    assert.deepEqual(d.actions[credential], {
      kind: 'createGatewayCredential',
      ref: { namespace: 'team', name: 'a', uid: 'uid-a' },
      uid: 'uid-a',
      secretName: 'agent-gateway-a',
    });
    const started = patches(d).find((p) => p.status.phase === 'Running');
    assert.deepEqual(started?.status.gateway, { keys: { anthropic: 'anthropic' }, models: ['claude-*'] });
    assert.deepEqual(build.calls.at(-1)?.gateway, GATEWAY);
    const netpol = d.actions.find((x) => x.kind === 'createNetworkPolicy');
    assert.ok(netpol?.kind === 'createNetworkPolicy');
    const egress = JSON.stringify(netpol.policy.spec.egress);
    assert.ok(egress.includes('"agents.re-cinq.com/component":"gateway"'), egress);
    assert.ok(!egress.includes('"port":443'), 'no public 443 rule behind the gateway');
  });

  it('without a gateway: no credential, no grant, keys as the recipe says', () => {
    const build = recordingBuilder();
    const d = decide(snap(agent('a', { created: 5 }), { job: { kind: 'absent' } }, false), NOW, build);
    assert.ok(!d.actions.some((x) => x.kind === 'createGatewayCredential'));
    assert.equal(patches(d).find((p) => p.status.phase === 'Running')?.status.gateway, undefined);
    assert.equal(build.calls.at(-1)?.gateway, undefined);
  });

  it('a Job adopted (its Running patch was lost) gets its grant too; no policy: any model', () => {
    const d = decide(
      snap(agent('a', { created: 5 }), {
        job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } },
      }),
      NOW,
      recordingBuilder(),
    );
    const p = patches(d);
    assert.equal(p.length, 1);
    assert.equal(p[0]?.status.phase, 'Running');
    assert.deepEqual(p[0]?.status.gateway, grant);
  });

  it('while it runs, what the gateway measured is recorded on its own patch, once', () => {
    const a = withUsage(gated('a'), opus(1000, 500));
    const d = decide(
      snap(a, { job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } } }),
      NOW,
      recordingBuilder(),
    );
    assert.equal(d.actions.length, 1);
    assert.deepEqual(patches(d)[0]?.status.tokenUsage, {
      input: 1000,
      output: 500,
      cacheRead: 0,
      cacheWrite: 0,
      total: 1500,
    });
    // 1000 × 4 + 500 × 20 $/MTok
    assert.deepEqual(patches(d)[0]?.status.costEstimate, {
      usd: '0.014',
      source: 'gateway',
      model: 'claude-opus-5-5',
    });
    const recorded = withUsage(
      gated('a', { tokenUsage: { input: 1000, output: 500, cacheRead: 0, cacheWrite: 0, total: 1500 } }),
      opus(1000, 500),
    );
    const again = decide(
      snap(recorded, { job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } } }),
      NOW,
      recordingBuilder(),
    );
    assert.ok(!patches(again).some((p) => p.status.tokenUsage !== undefined), 'nothing new: no patch');
  });

  it('a run not behind the gateway ignores the annotation', () => {
    const a = withUsage(running('a'), opus(1000, 500));
    const d = decide(
      snap(a, { job: { kind: 'present', job: job('a'), evidence: { kind: 'notGathered' } } }),
      NOW,
      recordingBuilder(),
    );
    assert.ok(!patches(d).some((p) => p.status.tokenUsage !== undefined));
  });

  const report = (total: number) =>
    JSON.stringify({
      v: 1,
      result: 'done',
      usage: { input: total, output: 0, cacheRead: 0, cacheWrite: 0, total },
      model: 'claude-opus-5-5',
    });
  const ended = (a: Agent, cliTotal: number) =>
    decide(
      snap(a, {
        job: {
          kind: 'present',
          job: job('a', { conditions: complete, succeeded: 1 }),
          evidence: { kind: 'pod', pod: pod('a', 0, report(cliTotal)), log: { kind: 'read', text: 'x\n' } },
        },
      }),
      NOW,
      recordingBuilder(),
    );

  it('when it ends: the gateway’s usage and cost, not the CLI’s; the CLI close to it: no Warning', () => {
    const d = ended(withUsage(gated('a'), opus(10_000, 2_000)), 11_500);
    const p = patches(d).find((x) => x.status.phase === 'Succeeded');
    assert.deepEqual(p?.status.tokenUsage, {
      input: 10_000,
      output: 2_000,
      cacheRead: 0,
      cacheWrite: 0,
      total: 12_000,
    });
    assert.deepEqual(p?.status.costEstimate, { usd: '0.08', source: 'gateway', model: 'claude-opus-5-5' });
    assert.ok(!events(d).some((e) => e.reason === REASON.usageMismatch));
    const tokens = d.actions.find((x) => x.kind === 'observeMetric' && x.observation.metric === 'runTokens');
    assert.ok(tokens?.kind === 'observeMetric' && tokens.observation.metric === 'runTokens');
    assert.equal(tokens.observation.usage.total, 12_000);
  });

  it('when it ends with a CLI figure far from the gateway’s: a UsageMismatch Warning with both', () => {
    const d = ended(withUsage(gated('a'), opus(10_000, 2_000)), 3_000);
    const e = events(d).find((x) => x.reason === REASON.usageMismatch);
    assert.equal(e?.type, 'Warning');
    assert.equal(e?.message, 'the CLI reported 3000 tokens, the gateway measured 12000');
  });

  it('when it ends having called nothing through the gateway: zero usage', () => {
    const d = ended(gated('a'), 0);
    const p = patches(d).find((x) => x.status.phase === 'Succeeded');
    assert.deepEqual(p?.status.tokenUsage, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 });
  });

  it('an unreadable annotation: the CLI’s figure, and a Warning that says why', () => {
    const d = ended(withUsage(gated('a'), '{"models":'), 1500);
    const p = patches(d).find((x) => x.status.phase === 'Succeeded');
    assert.equal(p?.status.tokenUsage?.total, 1500);
    assert.equal(p?.status.costEstimate?.source, 'priceTable');
    const e = events(d).find((x) => x.reason === REASON.gatewayUsageInvalid);
    assert.equal(
      e?.message,
      `annotation ${ANNOTATION_GATEWAY_USAGE} is not JSON: the CLI's own figure is recorded instead`,
    );
  });

  it('a finished run whose last calls the gateway wrote after its result: recorded, phase untouched, no requeue', () => {
    const done = (status: Record<string, unknown>) =>
      withUsage(
        finished('a', 'Succeeded', 50, {
          status: {
            gateway: grant,
            tokenUsage: { input: 1000, output: 0, cacheRead: 0, cacheWrite: 0, total: 1000 },
            ...status,
          },
        }),
        opus(1000, 500),
      );
    assert.ok(meteringBehind(done({})));
    const d = decide(snap(done({})), NOW, recordingBuilder());
    assert.equal(d.actions.length, 1);
    const p = patches(d)[0]?.status;
    assert.deepEqual(p?.tokenUsage, { input: 1000, output: 500, cacheRead: 0, cacheWrite: 0, total: 1500 });
    assert.equal(p?.phase, undefined, 'the phase is not written again');
    assert.equal(d.requeueAfterMs, undefined);
    const caughtUp = done({
      tokenUsage: { input: 1000, output: 500, cacheRead: 0, cacheWrite: 0, total: 1500 },
    });
    assert.ok(!meteringBehind(caughtUp));
    assert.deepEqual(decide(snap(caughtUp), NOW, recordingBuilder()).actions, []);
    assert.ok(
      !meteringBehind(withUsage(finished('a', 'Succeeded', 50), opus(1, 1))),
      'not behind the gateway',
    );
  });

  it('a server behind the gateway: what it has used so far, recorded as it serves', () => {
    const a = withUsage(
      agent('a', { status: { phase: 'Serving', startedAt: iso(1), gateway: grant } }),
      opus(10, 5),
    );
    const d = decide(snap(a), NOW, recordingBuilder());
    assert.equal(d.actions.length, 1);
    assert.deepEqual(patches(d)[0]?.status.tokenUsage, {
      input: 10,
      output: 5,
      cacheRead: 0,
      cacheWrite: 0,
      total: 15,
    });
    assert.equal(patches(d)[0]?.status.phase, undefined);
  });
});
