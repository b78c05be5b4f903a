import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, type AgentDefinition, parseAgentPolicy } from '../../api/index.ts';
import { ANNOTATION_SPEC_HASH, type ServerObject } from '../../jobs/index.ts';
import type { Action, Decision } from '../actions.ts';
import { decide } from '../agent/decide.ts';
import type { ServerChildObservation, ServerObservation, Snapshot } from '../snapshot.ts';
import { agent, at, definition, iso, queueOf, station } from '../test-fixtures.ts';
import { desiredServerObjects, planChild } from './decide.ts';
import {
  FAILURE_SERVER_DISABLED,
  FAILURE_SERVER_NOT_ALLOWED,
  serverBuildTime,
  serverProblem,
} from './plan.ts';

type Present = Extract<ServerChildObservation, { kind: 'present' }>;

const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: false, pollMs: 60000 },
  realtime: { enabled: false },
  server: { enabled: true },
};
const NOW = at(60);

const allowing = (() => {
  const p = parseAgentPolicy({
    metadata: { name: 'serve', uid: 'u', resourceVersion: '1', creationTimestamp: iso(0) },
    spec: { executions: { allowed: ['job', 'server'] } },
  });
  assert.ok(p.ok);
  return { kind: 'found', policy: p.value } as const;
})();

const serverDef = (spec: Record<string, unknown> = {}): AgentDefinition =>
  definition('def', { execution: 'server', ...spec });

/** Nothing but the key (made first, see the key test). */
const ABSENT: ServerObservation = {
  deployment: { kind: 'absent' },
  service: { kind: 'absent' },
  route: { kind: 'unsupported' },
  apiKey: { kind: 'present' },
};

/** The Agent with the uid of the key Secret the controller made for it on its status (see the key tests). */
const keyRecorded = (a: Agent): Agent =>
  a.status.apiKeySecretUID === undefined ? { ...a, status: { ...a.status, apiKeySecretUID: 'uid-key' } } : a;

function snap(a: Agent, over: Partial<Snapshot> = {}): Snapshot {
  return {
    agent: keyRecorded(a),
    station: station(),
    definition: serverDef(),
    job: { kind: 'unknown' },
    queue: queueOf(a, [a]),
    options: OPTIONS,
    policy: allowing,
    ...over,
  };
}

const serving = (
  name = 'a',
  status: Record<string, unknown> = {},
  spec: Record<string, unknown> = {},
): Agent => {
  const a = agent(name, { status: { phase: 'Serving', startedAt: iso(1), ...status } });
  return { ...a, spec: { ...a.spec, ...spec } };
};

const KEY = { kind: 'present' } as const;

/** The objects the controller would write for `a` now. */
function objectsOf(a: Agent, s: Partial<Snapshot> = {}) {
  const objects = desiredServerObjects(snap(a, s));
  assert.ok(objects, 'the objects build');
  return objects;
}

/** An object as the API server would answer it after the controller's own write (owned; `matches` its verdict). */
function written(
  a: Agent,
  o: ServerObject,
  over: { generation?: number; matches?: boolean; available?: number; hash?: string } = {},
): Present {
  const generation = over.generation ?? 1;
  return {
    kind: 'present',
    uid: `uid-${o.resource}`,
    resourceVersion: '7',
    generation: o.resource === 'services' ? undefined : generation,
    annotations: {
      ...o.manifest.metadata.annotations,
      ...(over.hash !== undefined ? { [ANNOTATION_SPEC_HASH]: over.hash } : {}),
    },
    controllerUid: a.metadata.uid,
    controllerName: a.metadata.name,
    deleting: false,
    matches: over.matches ?? true,
    ...(o.resource === 'deployments'
      ? {
          progress: {
            observedGeneration: generation,
            replicas: 1,
            updatedReplicas: 1,
            availableReplicas: over.available ?? 1,
          },
        }
      : {}),
  };
}

function allWritten(a: Agent, over: Partial<Snapshot> = {}, available = 1): ServerObservation {
  const o = objectsOf(a, over);
  return {
    deployment: written(a, o.deployment, { available }),
    service: written(a, o.service),
    route: { kind: 'unsupported' },
    apiKey: KEY,
  };
}

const kinds = (d: Decision): string[] => d.actions.map((x) => x.kind);
const patchOf = (d: Decision) => {
  const p = d.actions.find((x): x is Extract<Action, { kind: 'patchStatus' }> => x.kind === 'patchStatus');
  assert.ok(p, 'a status patch');
  return p.status;
};
const applied = (d: Decision) =>
  d.actions.filter(
    (x): x is Extract<Action, { kind: 'applyServerObject' }> => x.kind === 'applyServerObject',
  );
const events = (d: Decision) =>
  d.actions
    .filter((x): x is Extract<Action, { kind: 'recordEvent' }> => x.kind === 'recordEvent')
    .map((e) => `${e.type} ${e.reason}: ${e.message}`);

describe('serverProblem: what keeps a server from being admitted', () => {
  const a = agent('a');
  const policy = allowing.policy;
  it('is silent for other modes and for an allowed server', () => {
    assert.equal(serverProblem(a, definition(), false, undefined), undefined);
    assert.equal(serverProblem(a, serverDef(), true, policy), undefined);
  });
  it('needs SERVER_ENABLED, then a policy that lists server', () => {
    assert.equal(serverProblem(a, serverDef(), false, policy), FAILURE_SERVER_DISABLED);
    assert.equal(serverProblem(a, serverDef(), true, undefined), FAILURE_SERVER_NOT_ALLOWED);
    const jobsOnly = parseAgentPolicy({
      metadata: { name: 'p', uid: 'u', resourceVersion: '1', creationTimestamp: iso(0) },
      spec: {},
    });
    assert.ok(jobsOnly.ok);
    assert.equal(serverProblem(a, serverDef(), true, jobsOnly.value), FAILURE_SERVER_NOT_ALLOWED);
  });
  it('refuses fields a server has no use for, naming them', () => {
    assert.match(
      serverProblem(a, serverDef({ memory: { configMap: 'm' } }), true, policy) ?? '',
      /spec\.memory/,
    );
    const resuming = { ...a, spec: { ...a.spec, resumeSession: 'abc' } };
    assert.match(serverProblem(resuming, serverDef(), true, policy) ?? '', /resumeSession/);
  });
});

describe('decide: a Pending server (issue 12)', () => {
  it('fails a server on a controller without SERVER_ENABLED, with the reason and no objects', () => {
    const d = decide(snap(agent('a'), { options: { ...OPTIONS, server: { enabled: false } } }), NOW);
    assert.equal(patchOf(d).phase, 'Failed');
    assert.equal(patchOf(d).failureReason, FAILURE_SERVER_DISABLED);
    assert.ok(!kinds(d).includes('applyServerObject'));
  });

  it('behind the model gateway (issue 28): its credential Secret before its objects, its grant on status', () => {
    const def = serverDef({ resources: { secrets: [{ name: 'OPENAI_API_KEY', ref: 'openai' }] } });
    const d = decide(
      snap(agent('a'), {
        definition: def,
        server: ABSENT,
        options: { ...OPTIONS, gateway: { url: 'http://gw:8080' } },
      }),
      NOW,
    );
    const k = kinds(d);
    assert.ok(k.indexOf('createGatewayCredential') !== -1, k.join(','));
    assert.ok(k.indexOf('createGatewayCredential') < k.indexOf('applyServerObject'), 'before the Deployment');
    assert.deepEqual(patchOf(d).gateway, { keys: { openai: 'openai' } });
    const deployment = applied(d).find((x) => x.object.resource === 'deployments');
    const text = JSON.stringify(deployment?.object);
    assert.ok(text.includes('"name":"agent-gateway-a"'), 'the pods read the credential Secret');
    assert.ok(text.includes('http://gw:8080/openai/v1'), 'and call the gateway');
    assert.ok(!text.includes('"key":"openai"'), 'never the key of agent-secrets');
  });

  it('behind the model gateway, a Serving server keeps the credential: its objects are the ones it started with', () => {
    const def = serverDef({ resources: { secrets: [{ name: 'OPENAI_API_KEY', ref: 'openai' }] } });
    const options = { ...OPTIONS, gateway: { url: 'http://gw:8080' } };
    const started = decide(snap(agent('a'), { definition: def, server: ABSENT, options }), NOW);
    const first = applied(started).find((x) => x.object.resource === 'deployments')?.object;
    assert.ok(first, 'the Deployment at its start');
    const a = serving('a', { gateway: { keys: { openai: 'openai' } } });
    const now = desiredServerObjects(snap(a, { definition: def, options }));
    const text = JSON.stringify(now?.deployment.manifest);
    assert.ok(text.includes('"name":"agent-gateway-a"'), 'the pods read the credential Secret');
    assert.ok(!text.includes('"key":"openai"'), 'never the key of agent-secrets');
    assert.deepEqual(now?.deployment.manifest, first.manifest, 'no rollout to a keyed pod');
  });

  it('fails a server whose Station has no policy allowing it', () => {
    const d = decide(snap(agent('a'), { policy: { kind: 'none' } }), NOW);
    assert.equal(patchOf(d).failureReason, FAILURE_SERVER_NOT_ALLOWED);
  });

  it('reads its objects first, then creates them and goes Serving: no Job, no run slot', () => {
    const a = agent('a');
    assert.deepEqual(decide(snap(a), NOW), { actions: [], needs: 'server' });
    const d = decide(snap(a, { server: ABSENT }), NOW);
    assert.deepEqual(kinds(d), [
      'createServiceAccount',
      'createNetworkPolicy',
      'createRunInput',
      'applyServerObject',
      'applyServerObject',
      'patchStatus',
      'recordEvent',
    ]);
    assert.deepEqual(
      applied(d).map((x) => [x.object.resource, x.replace]),
      [
        ['services', undefined],
        ['deployments', undefined],
      ],
    );
    const status = patchOf(d);
    assert.equal(status.phase, 'Serving');
    assert.equal(status.serviceName, 'a-server');
    assert.equal(status.url, 'http://a-server.team.svc:8080/v1');
    assert.equal(status.startedAt, NOW.toISOString());
    const ready = status.conditions.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'Progressing');
    assert.deepEqual(events(d), [
      'Normal ServerCreated: Serving at http://a-server.team.svc:8080/v1 (Deployment a-server, Service a-server)',
    ]);
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
  });

  it('makes a generated key first, alone, when its Secret is absent; the pods then mount it', () => {
    const fresh = agent('a');
    const d = decide(
      { ...snap(fresh, { server: { ...ABSENT, apiKey: { kind: 'absent' } } }), agent: fresh },
      NOW,
    );
    assert.deepEqual(d, {
      actions: [
        {
          kind: 'createServerApiKey',
          ref: { namespace: 'team', name: 'a', uid: 'uid-a' },
          secretName: 'a-server-api-key',
          recorded: false,
        },
      ],
      requeueAfterMs: 1,
    });
    const next = decide(snap(agent('a'), { server: ABSENT }), NOW);
    assert.ok(!kinds(next).includes('createServerApiKey'), 'present: no key is made');
    const deployment = applied(next).find((x) => x.object.resource === 'deployments');
    const template = deployment?.object.manifest.spec.template as {
      metadata: { annotations: Record<string, string> };
      spec: { volumes: { name: string; secret?: { secretName: string } }[] };
    };
    assert.equal(
      template.metadata.annotations['agents.re-cinq.com/api-key-version'],
      undefined,
      'no key version on the pods: a new key needs no rollout',
    );
    assert.equal(
      template.spec.volumes.find((x) => x.name === 'server-api-key')?.secret?.secretName,
      'a-server-api-key',
    );
  });

  it('never uses a Secret of the generated name it did not create for this Agent: Ready False, nothing written, looked at every poll', () => {
    const a = agent('a');
    const s = { ...snap(a, { server: ABSENT }), agent: a };
    assert.equal(s.agent.status.apiKeySecretUID, undefined, 'no key recorded');
    const d = decide(s, NOW);
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
    const ready = d.actions.find((x) => x.kind === 'patchStatus');
    assert.ok(ready?.kind === 'patchStatus');
    assert.equal(ready.status.phase, 'Pending', 'it stays Pending');
    const condition = ready.status.conditions?.find((c) => c.type === 'Ready');
    assert.equal(condition?.reason, 'ServerNameTaken');
    assert.match(
      condition?.message ?? '',
      /Secret a-server-api-key is not the key Secret this controller made for this Agent .*not started until it is gone; delete it and a new key is made/,
    );
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
    // Told once: decided again on its own patch, nothing more.
    const told = { ...a, status: { ...a.status, conditions: [...(ready.status.conditions ?? [])] } };
    assert.deepEqual(decide({ ...s, agent: told }, NOW), { actions: [], requeueAfterMs: OPTIONS.requeueMs });
    // A named Secret is the user's own: used as it is.
    const named = serverDef({ server: { apiKeySecret: 'my-key' } });
    const n = decide({ ...snap(a, { server: ABSENT, definition: named }), agent: a }, NOW);
    assert.ok(kinds(n).includes('applyServerObject'), kinds(n).join(','));
  });

  it('with its key Secret present makes no key, whatever else it writes', () => {
    const a = agent('a');
    const d = decide(snap(a, { server: ABSENT }), NOW);
    assert.equal(patchOf(d).phase, 'Serving');
    assert.ok(!kinds(d).includes('createServerApiKey'));
    const named = serverDef({ server: { apiKeySecret: 'my-key' } });
    const withNamed = decide(snap(a, { definition: named, server: ABSENT }), NOW);
    assert.ok(!kinds(withNamed).includes('createServerApiKey'));
    assert.notEqual(
      patchOf(withNamed).conditions.find((c) => c.type === 'Ready')?.reason,
      'ApiKeySecretMissing',
    );
  });

  it('waits out objects an earlier Agent of the same name left, staying Pending', () => {
    const a = agent('a');
    const earlier = { ...written(a, objectsOf(a).deployment), controllerUid: 'old', controllerName: 'a' };
    assert.deepEqual(decide(snap(a, { server: { ...ABSENT, deployment: earlier } }), NOW), {
      actions: [],
      requeueAfterMs: 2000,
    });
  });

  it('is admitted while the Station is full: a server takes no run slot', () => {
    const holder = agent('h', { status: { phase: 'Running', jobName: 'agent-job-h' } });
    const a = agent('a', { created: 5 });
    const full = station('stn', { maxConcurrentRuns: 1 });
    const d = decide(snap(a, { station: full, queue: queueOf(a, [holder, a]), server: ABSENT }), NOW);
    assert.equal(patchOf(d).phase, 'Serving');
  });

  it('with a named API-key Secret makes no key, and Ready says the Secret is missing', () => {
    const def = serverDef({ server: { apiKeySecret: 'my-key' } });
    const d = decide(
      snap(agent('a'), { definition: def, server: { ...ABSENT, apiKey: { kind: 'absent' } } }),
      NOW,
    );
    assert.ok(!kinds(d).includes('createServerApiKey'));
    const ready = patchOf(d).conditions.find((c) => c.type === 'Ready');
    assert.equal(ready?.reason, 'ApiKeySecretMissing');
    assert.match(ready?.message ?? '', /Secret my-key not found/);
  });

  it("routes through the Station's Gateway when the Gateway API is served, and says so when it is not", () => {
    const st = station('stn', {
      gateway: { name: 'public', namespace: 'infra', hostname: 'bot.example.com' },
    });
    const routed = decide(
      snap(agent('a'), { station: st, server: { ...ABSENT, route: { kind: 'absent' } } }),
      NOW,
    );
    assert.deepEqual(
      applied(routed).map((x) => x.object.resource),
      ['services', 'deployments', 'httproutes'],
    );
    const route = applied(routed)[2]?.object.manifest;
    assert.deepEqual(route?.spec, {
      parentRefs: [{ name: 'public', namespace: 'infra' }],
      hostnames: ['bot.example.com'],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/v1' } }],
          backendRefs: [{ name: 'a-server', port: 8080 }],
        },
      ],
    });
    assert.equal(patchOf(routed).url, 'https://bot.example.com/v1');
    const unrouted = decide(
      snap(agent('a'), { station: st, server: { ...ABSENT, route: { kind: 'unsupported' } } }),
      NOW,
    );
    assert.deepEqual(
      applied(unrouted).map((x) => x.object.resource),
      ['services', 'deployments'],
    );
    assert.equal(patchOf(unrouted).url, 'http://a-server.team.svc:8080/v1');
    assert.match(
      patchOf(unrouted).conditions.find((c) => c.type === 'Ready')?.message ?? '',
      /the Gateway API is not installed/,
    );
  });

  it('fails when an object of its name belongs to someone else', () => {
    const a = agent('a');
    const theirs: ServerChildObservation = {
      ...written(a, objectsOf(a).service),
      controllerUid: undefined,
      controllerName: undefined,
    };
    const d = decide(snap(a, { server: { ...ABSENT, service: theirs } }), NOW);
    assert.equal(patchOf(d).phase, 'Failed');
    assert.match(
      patchOf(d).failureReason ?? '',
      /Service a-server already exists and is not owned by this Agent/,
    );
  });

  it("fails with the API server's reason when it refuses an object", () => {
    const d = decide(
      snap(agent('a'), { server: ABSENT, serverRejected: { message: 'Deployment a-server rejected: bad' } }),
      NOW,
    );
    assert.equal(patchOf(d).phase, 'Failed');
  });
});

describe('decide: a Serving server (issue 12)', () => {
  it('reads its objects, then with everything in place and available only reports Ready once', () => {
    const a = serving('a');
    assert.deepEqual(decide(snap(a), NOW), { actions: [], needs: 'server' });
    const d = decide(snap(a, { server: allWritten(a) }), NOW);
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
    const ready = patchOf(d).conditions.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'True');
    assert.equal(ready?.reason, 'Available');
    assert.equal(ready?.message, '1 of 1 replica available');
    assert.deepEqual(events(d), ['Normal Available: 1 of 1 replica available']);
    // Patched: nothing more to write.
    const settled = serving('a', {
      url: patchOf(d).url,
      serviceName: patchOf(d).serviceName,
      conditions: patchOf(d).conditions,
      observedGeneration: 1,
    });
    assert.deepEqual(decide(snap(settled, { server: allWritten(settled) }), NOW), {
      actions: [],
      requeueAfterMs: OPTIONS.requeueMs,
    });
  });

  it('creates a deleted Service again, with a Warning', () => {
    const a = serving('a');
    const d = decide(snap(a, { server: { ...allWritten(a), service: { kind: 'absent' } } }), NOW);
    assert.deepEqual(
      applied(d).map((x) => [x.object.resource, x.replace]),
      [['services', undefined]],
    );
    assert.ok(events(d).includes('Warning ServerRepaired: Service a-server was missing: created again'));
  });

  it('writes back an edited Deployment (the API server says the desired spec differs from it)', () => {
    const a = serving('a');
    const o = objectsOf(a);
    const edited = written(a, o.deployment, { generation: 3, matches: false });
    const d = decide(snap(a, { server: { ...allWritten(a), deployment: edited } }), NOW);
    assert.deepEqual(
      applied(d).map((x) => [x.object.resource, x.replace]),
      [['deployments', { resourceVersion: '7' }]],
    );
    assert.ok(events(d).includes('Warning ServerRepaired: Deployment a-server was changed: written back'));
  });

  it('writes back an edited Service', () => {
    const a = serving('a');
    const o = objectsOf(a);
    const d = decide(
      snap(a, { server: { ...allWritten(a), service: written(a, o.service, { matches: false }) } }),
      NOW,
    );
    assert.deepEqual(
      applied(d).map((x) => [x.object.resource, x.replace]),
      [['services', { resourceVersion: '7' }]],
    );
  });

  it('leaves an object alone when its verdict is unknown (the dry run was refused)', () => {
    const a = serving('a');
    const o = objectsOf(a);
    const { matches: _, ...unknown } = written(a, o.deployment);
    const d = decide(snap(a, { server: { ...allWritten(a), deployment: unknown } }), NOW);
    assert.deepEqual(applied(d), []);
  });

  it('rolls the Deployment when the recipe changes (a new spec hash), with a Normal Event', () => {
    const a = serving('a');
    const changed = serverDef({ model: 'claude-sonnet-5' });
    const d = decide(snap(a, { definition: changed, server: allWritten(a) }), NOW);
    const writes = applied(d);
    assert.deepEqual(
      writes.map((x) => x.object.resource),
      ['deployments'],
    );
    assert.match(JSON.stringify(writes[0]?.object.manifest.spec), /claude-sonnet-5/);
    assert.ok(
      events(d).includes(
        'Normal ServerUpdated: Deployment a-server updated to the current recipe and Station',
      ),
    );
  });

  it('scales to zero while suspended, and Ready says so', () => {
    const a = serving('a', {}, { suspend: true });
    const before = allWritten(serving('a'));
    const d = decide(snap(a, { server: before }), NOW);
    const writes = applied(d);
    assert.equal(writes.length, 1);
    assert.equal((writes[0]?.object.manifest.spec as { replicas?: number } | undefined)?.replicas, 0);
    assert.equal(patchOf(d).conditions.find((c) => c.type === 'Ready')?.reason, 'Suspended');
  });

  it('scales to zero when its key Secret is not the one it made (the record cleared by a raced rotation)', () => {
    const a = serving('a');
    const before = allWritten(a);
    const d = decide({ ...snap(a, { server: before }), agent: a }, NOW);
    const writes = applied(d);
    assert.equal(writes.length, 1);
    assert.equal((writes[0]?.object.manifest.spec as { replicas?: number } | undefined)?.replicas, 0);
    const ready = patchOf(d).conditions.find((c) => c.type === 'Ready');
    assert.equal(ready?.reason, 'ServerNameTaken');
    assert.match(ready?.message ?? '', /scaled to zero until it is gone/);
    // With its own key recorded again, the replicas come back.
    const back = decide(snap(a, { server: before }), NOW);
    assert.equal(applied(back).length, 0, 'its objects as written: nothing to change');
  });

  it('reports a rollout and unavailable replicas as Progressing', () => {
    const a = serving('a');
    const d = decide(snap(a, { server: allWritten(a, {}, 0) }), NOW);
    const ready = patchOf(d).conditions.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'Progressing');
    assert.equal(ready?.message, '0 of 1 replica available');
  });

  it('keeps its objects and says why when the recipe can no longer be built or is gone', () => {
    const a = serving('a');
    const gone = decide(snap(a, { definition: null, server: allWritten(a) }), NOW);
    assert.deepEqual(kinds(gone), ['patchStatus', 'recordEvent']);
    assert.equal(patchOf(gone).conditions.find((c) => c.type === 'Ready')?.reason, 'ServerBuildFailed');
    assert.equal(patchOf(gone).phase, undefined, 'still Serving');
  });

  it('never touches an object of its name that belongs to someone else', () => {
    const a = serving('a');
    const theirs = {
      ...written(a, objectsOf(a).deployment),
      controllerUid: 'other',
      controllerName: 'other',
    };
    const d = decide(snap(a, { server: { ...allWritten(a), deployment: theirs } }), NOW);
    assert.deepEqual(applied(d), []);
    assert.equal(patchOf(d).conditions.find((c) => c.type === 'Ready')?.reason, 'ServerNameTaken');
  });

  it('deletes its route when the Station no longer names a Gateway', () => {
    const a = serving('a');
    const routedStation = station('stn', { gateway: { name: 'public' } });
    const route = written(a, objectsOf(a, { station: routedStation }).route ?? objectsOf(a).service);
    const d = decide(snap(a, { server: { ...allWritten(a), route } }), NOW);
    assert.deepEqual(
      d.actions.filter((x) => x.kind === 'deleteServerObject'),
      [
        {
          kind: 'deleteServerObject',
          ref: { namespace: 'team', name: 'a', uid: 'uid-a' },
          resource: 'httproutes',
          name: 'a-server',
          uid: 'uid-httproutes',
        },
      ],
    );
  });

  it('makes its input ConfigMap again when it was deleted, and replaces it when the system prompt changed', () => {
    const a = serving('a');
    const gone = decide(snap(a, { server: { ...allWritten(a), input: { kind: 'absent' } } }), NOW);
    assert.ok(kinds(gone).includes('createRunInput'));
    assert.ok(events(gone).some((e) => /ConfigMap agent-job-a-input was missing/.test(e)));
    const old = decide(
      snap(a, { server: { ...allWritten(a), input: { kind: 'present', data: { 'prompt.txt': 'old' } } } }),
      NOW,
    );
    assert.ok(kinds(old).includes('createRunInput'));
    const prompted = serverDef({ systemPrompt: 'Be brief.' });
    const rolled = decide(snap(a, { definition: prompted, server: allWritten(a) }), NOW);
    assert.deepEqual(
      applied(rolled).map((x) => x.object.resource),
      ['deployments'],
      'a new input hash rolls the pods',
    );
  });

  it("keeps up its own objects while one of its name is someone else's, and says so", () => {
    const a = serving('a', {}, { suspend: true });
    const theirs = { ...written(a, objectsOf(a).service), controllerUid: 'x', controllerName: 'x' };
    const d = decide(snap(a, { server: { ...allWritten(serving('a')), service: theirs } }), NOW);
    assert.deepEqual(
      applied(d).map((x) => x.object.resource),
      ['deployments'],
      'scaled to zero all the same',
    );
    assert.equal(patchOf(d).conditions.find((c) => c.type === 'Ready')?.reason, 'ServerNameTaken');
  });

  it('says why when its input ConfigMap is refused, instead of retrying the same write', () => {
    const a = serving('a');
    const d = decide(snap(a, { server: allWritten(a), inputRefused: { message: 'forbidden' } }), NOW);
    assert.deepEqual(kinds(d), ['patchStatus', 'recordEvent']);
    assert.equal(patchOf(d).conditions.find((c) => c.type === 'Ready')?.reason, 'ServerRejected');
  });

  it('does not delete again a route that is already going away', () => {
    const a = serving('a');
    const routed = objectsOf(a, { station: station('stn', { gateway: { name: 'public' } }) }).route;
    assert.ok(routed);
    const going = { ...written(a, routed), deleting: true };
    const d = decide(snap(a, { server: { ...allWritten(a), route: going } }), NOW);
    assert.deepEqual(
      d.actions.filter((x) => x.kind === 'deleteServerObject'),
      [],
    );
  });

  it('makes a new key when its generated API-key Secret was deleted', () => {
    const a = serving('a');
    const d = decide(snap(a, { server: { ...allWritten(a), apiKey: { kind: 'absent' } } }), NOW);
    assert.deepEqual(
      kinds(d),
      ['createServerApiKey', 'recordEvent'],
      'the key alone: the pods then roll once',
    );
    assert.equal(d.requeueAfterMs, 1);
    assert.ok(
      events(d).some((e) => /Warning ServerRepaired: API-key Secret a-server-api-key was missing/.test(e)),
    );
  });

  it('with a named API-key Secret gone makes no key: Ready False ApiKeySecretMissing, its objects kept up', () => {
    const a = serving('a');
    const named = serverDef({ server: { apiKeySecret: 'my-key' } });
    const observed = allWritten(a, { definition: named });
    const d = decide(
      snap(a, { definition: named, server: { ...observed, apiKey: { kind: 'absent' } } }),
      NOW,
    );
    assert.ok(!kinds(d).includes('createServerApiKey'));
    assert.deepEqual(applied(d), [], 'nothing to rewrite: the key is not part of the objects');
    const ready = patchOf(d).conditions.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'ApiKeySecretMissing');
    assert.equal(ready?.message, 'Secret my-key not found');
    const back = decide(snap(a, { definition: named, server: observed }), NOW);
    assert.equal(patchOf(back).conditions.find((c) => c.type === 'Ready')?.reason, 'Available');
  });

  it('writes nothing when only its key changed: the key is not part of the Deployment', () => {
    const a = serving('a');
    assert.deepEqual(desiredServerObjects(snap(a, { server: allWritten(a) })), objectsOf(a));
    const d = decide(snap(a, { server: allWritten(a) }), NOW);
    assert.deepEqual(applied(d), []);
  });
});

describe('server objects (src/jobs/server.ts)', () => {
  const a = agent('a', { created: 3 });
  const o = objectsOf(a);
  const deployment = o.deployment.manifest;
  const podSpec = (deployment.spec.template as { spec: Record<string, unknown> }).spec;
  const containers = podSpec.containers as {
    name: string;
    env: { name: string; value?: string; valueFrom?: unknown }[];
  }[];
  const agentContainer = containers.find((c) => c.name === 'agent');

  it('are owned by the Agent, named <agent>-server, labelled as a server', () => {
    for (const x of [o.deployment, o.service]) {
      assert.equal(x.manifest.metadata.name, 'a-server');
      assert.equal(x.manifest.metadata.labels['agents.re-cinq.com/component'], 'server');
      assert.deepEqual(x.manifest.metadata.ownerReferences[0]?.uid, 'uid-a');
      assert.equal(x.manifest.metadata.ownerReferences[0]?.controller, true);
    }
  });

  it('run the run pod restarted always, with no deadline, probed, the key from its Secret as a file', () => {
    assert.equal(podSpec.restartPolicy, 'Always');
    assert.equal(podSpec.automountServiceAccountToken, false);
    const env = new Map(agentContainer?.env.map((e) => [e.name, e]));
    assert.equal(env.has('AGENT_DEADLINE_AT'), false);
    assert.equal(env.get('AGENT_EXECUTION')?.value, 'server');
    assert.equal(env.get('AGENT_SERVER_PORT')?.value, '8080');
    assert.equal(env.has('AGENT_SERVER_API_KEY'), false, 'no env var carries the key');
    assert.deepEqual(env.get('AGENT_SERVER_API_KEY_FILE'), {
      name: 'AGENT_SERVER_API_KEY_FILE',
      value: '/var/run/agent-server/api-key',
    });
    assert.ok(
      !JSON.stringify(deployment.spec).includes('secretKeyRef":{"name":"a-server-api-key'),
      'the key Secret is never an env source',
    );
    const probed = agentContainer as unknown as { readinessProbe: unknown; livenessProbe: unknown };
    assert.deepEqual((probed.readinessProbe as { httpGet: unknown }).httpGet, {
      path: '/readyz',
      port: 8080,
    });
    assert.deepEqual((probed.livenessProbe as { httpGet: unknown }).httpGet, {
      path: '/healthz',
      port: 8080,
    });
    assert.equal(deployment.spec.replicas, 1);
  });

  it('mount the key Secret (its api-key only, 0440, not optional: running pods keep the last key through a rotation) read-only into the agent container only', () => {
    const volumes = podSpec.volumes as { name: string; secret?: unknown }[];
    assert.deepEqual(
      volumes.filter((x) => x.name === 'server-api-key'),
      [
        {
          name: 'server-api-key',
          secret: {
            secretName: 'a-server-api-key',
            defaultMode: 0o440,
            items: [{ key: 'api-key', path: 'api-key' }],
          },
        },
      ],
    );
    const mounts = (c: unknown) =>
      (
        (c as { volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] }).volumeMounts ?? []
      ).filter((m) => m.name === 'server-api-key' || m.mountPath === '/var/run/agent-server');
    assert.deepEqual(mounts(agentContainer), [
      { name: 'server-api-key', mountPath: '/var/run/agent-server', readOnly: true },
    ]);
    const others = [
      ...((podSpec.initContainers as unknown[] | undefined) ?? []),
      ...containers.filter((c) => c.name !== 'agent'),
    ];
    assert.ok(others.length > 0, 'the init container at least');
    for (const c of others) assert.deepEqual(mounts(c), [], 'no other container mounts the key');
  });

  it("mount the named Secret, replacing a Station's volume or mount of that name and path, and mounts of it elsewhere", () => {
    const st = station('stn', {
      template: {
        spec: {
          volumes: [
            { name: 'server-api-key', emptyDir: {} },
            { name: 'mine', emptyDir: {} },
          ],
          containers: [
            {
              name: 'agent',
              image: 'agent:1',
              volumeMounts: [
                { name: 'mine', mountPath: '/var/run/agent-server' },
                { name: 'mine', mountPath: '/data' },
              ],
            },
            {
              name: 'helper',
              image: 'helper:1',
              securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false },
              volumeMounts: [{ name: 'server-api-key', mountPath: '/steal' }],
            },
          ],
        },
      },
    });
    const named = serverDef({ server: { apiKeySecret: 'my-key' } });
    const built = desiredServerObjects(snap(a, { station: st, definition: named }));
    assert.ok(built, 'the objects build');
    const spec = (built.deployment.manifest.spec.template as { spec: Record<string, unknown> }).spec;
    const volumes = spec.volumes as { name: string; secret?: { secretName: string }; emptyDir?: unknown }[];
    assert.deepEqual(
      volumes.filter((x) => x.name === 'server-api-key').map((x) => x.secret?.secretName),
      ['my-key'],
    );
    assert.ok(volumes.some((x) => x.name === 'mine'));
    const byName = new Map(
      (spec.containers as { name: string; volumeMounts?: { name: string; mountPath: string }[] }[]).map(
        (c) => [c.name, c.volumeMounts ?? []],
      ),
    );
    assert.deepEqual(
      byName.get('agent')?.filter((m) => m.mountPath === '/var/run/agent-server'),
      [{ name: 'server-api-key', mountPath: '/var/run/agent-server', readOnly: true }],
    );
    assert.ok(byName.get('agent')?.some((m) => m.mountPath === '/data'));
    assert.deepEqual(byName.get('helper'), []);
  });

  it("are the same whenever they are built: the build time is the Agent's creation", () => {
    const again = objectsOf(a);
    assert.deepEqual(again, o);
    assert.equal(serverBuildTime(a).toISOString(), iso(3));
  });

  it('select the server pods on the Service port 8080', () => {
    assert.deepEqual(o.service.manifest.spec, {
      type: 'ClusterIP',
      selector: {
        'agents.re-cinq.com/component': 'job',
        'agents.re-cinq.com/agent': 'a',
        'agents.re-cinq.com/execution': 'server',
      },
      ports: [{ name: 'http', protocol: 'TCP', port: 8080, targetPort: 8080 }],
    });
  });
});

describe('planChild and desiredServerObjects', () => {
  it('waits for an object of an earlier Agent of the same name, or one being deleted', () => {
    const a = agent('a');
    const o = objectsOf(a);
    const earlier = { ...written(a, o.service), controllerUid: 'old-uid', controllerName: 'a' };
    assert.deepEqual(planChild(a, earlier, o.service), { kind: 'wait' });
    assert.deepEqual(planChild(a, { ...written(a, o.service), deleting: true }, o.service), { kind: 'wait' });
    assert.deepEqual(planChild(a, { ...earlier, controllerName: 'b' }, o.service), { kind: 'foreign' });
  });

  it("calls an object outdated when its spec hash is not the recipe's, edited when only the verdict differs", () => {
    const a = agent('a');
    const o = objectsOf(a);
    assert.deepEqual(planChild(a, written(a, o.deployment, { hash: 'old' }), o.deployment), {
      kind: 'replace',
      resourceVersion: '7',
      why: 'outdated',
    });
    assert.deepEqual(planChild(a, written(a, o.deployment, { matches: false }), o.deployment), {
      kind: 'replace',
      resourceVersion: '7',
      why: 'edited',
    });
    assert.deepEqual(planChild(a, written(a, o.deployment), o.deployment), { kind: 'ok' });
  });

  it('desiredServerObjects are the objects decide writes (what the shell dry-runs)', () => {
    const a = serving('a');
    assert.deepEqual(desiredServerObjects(snap(a)), objectsOf(a));
    assert.equal(desiredServerObjects(snap(a, { definition: null })), undefined);
  });
});

describe("decide: a server's key recorded (issue 27 §2: the executor reports, decide writes)", () => {
  const record = (a: Agent, uid: string | null): Action => ({
    kind: 'patchStatus',
    ref: { namespace: 'team', name: a.metadata.name, uid: a.metadata.uid },
    resourceVersion: a.metadata.resourceVersion,
    status: { apiKeySecretUID: uid, observedGeneration: 1, conditions: a.status.conditions ?? [] },
  });

  it('records a key Secret just created, before anything else, Pending or Serving', () => {
    const fresh = agent('a');
    const pending = { ...snap(fresh, { serverKey: { kind: 'created', uid: 'uid-new' } }), agent: fresh };
    assert.deepEqual(decide(pending, NOW), { actions: [record(fresh, 'uid-new')], requeueAfterMs: 1 });
    const rotated = keyRecorded(serving('a'));
    const s = snap(rotated, { server: allWritten(rotated), serverKey: { kind: 'created', uid: 'uid-new' } });
    assert.deepEqual(decide(s, NOW), { actions: [record(rotated, 'uid-new')], requeueAfterMs: 1 });
  });

  it('clears a recorded uid after a create met a Secret it did not make; nothing when nothing is recorded', () => {
    const a = keyRecorded(serving('a'));
    const s = snap(a, { server: allWritten(a), serverKey: { kind: 'taken' } });
    assert.deepEqual(decide(s, NOW), { actions: [record(a, null)], requeueAfterMs: 1 });
    const cleared = serving('a');
    const server = allWritten(cleared);
    const after = { ...snap(cleared, { server, serverKey: { kind: 'taken' } }), agent: cleared };
    const without = { ...snap(cleared, { server }), agent: cleared };
    assert.deepEqual(decide(after, NOW), decide(without, NOW), 'the name taken is told by the Ready row');
  });

  it('writes nothing for a key the status already records', () => {
    const a = keyRecorded(serving('a'));
    const s = snap(a, { server: allWritten(a), serverKey: { kind: 'created', uid: 'uid-key' } });
    assert.deepEqual(decide(s, NOW), decide(snap(a, { server: allWritten(a) }), NOW));
  });
});
