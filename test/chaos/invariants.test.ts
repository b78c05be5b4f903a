// The chaos invariants on synthetic audit logs: a clean run passes, and each kind of violation is caught.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { userAgentFor } from '../../src/kube/transport.ts';
import type { AuditRecord } from './audit.ts';
import {
  checkInvariants,
  type InvariantInput,
  type InvariantResult,
  identityOf,
  oneBatchPerRun,
} from './invariants.ts';

const NS = 'chaos';
const CONTROLLER = 'system:serviceaccount:agents:agent-controller';
const LEASE = { namespace: 'agents', name: 'agent-controller' };
const T0 = Date.parse('2026-12-02T05:00:00Z');
const ua = (replica: string): string => `agent-controller/0.1.0 (${replica})`;
const marker = (name: string): string => `MARKER<${name}>`;

let seq = 0;
let rv = 100;

interface Opts {
  /** Received at T0 + at ms; completed `took` ms later (default 2). */
  readonly at: number;
  readonly took?: number;
  readonly replica?: string;
  readonly user?: string;
  readonly userAgent?: string;
  readonly code?: number;
}

function record(
  o: Opts,
  fields: Pick<AuditRecord, 'verb' | 'apiGroup' | 'resource'> &
    Partial<Pick<AuditRecord, 'subresource' | 'namespace' | 'name' | 'responseObject' | 'requestObject'>>,
): AuditRecord {
  const received = T0 + o.at;
  return {
    auditID: `id-${++seq}`,
    user: o.user ?? CONTROLLER,
    userAgent: o.userAgent ?? ua(o.replica ?? 'a'),
    code: o.code ?? 200,
    received,
    completed: received + (o.took ?? 2),
    namespace: NS,
    ...fields,
  };
}

const uidOf = (name: string): string => `uid-${name}`;

function agentObject(
  name: string,
  station: string,
  status?: Record<string, unknown>,
  version = ++rv,
): unknown {
  return {
    apiVersion: 'agents.re-cinq.com/v1alpha1',
    kind: 'Agent',
    metadata: { name, namespace: NS, uid: uidOf(name), resourceVersion: String(version) },
    spec: { stationRef: station },
    ...(status ? { status } : {}),
  };
}

function createAgent(o: Opts, name: string, station = 's1'): AuditRecord {
  return record(
    { user: 'admin', userAgent: 'kubectl/v1.36.3', code: 201, ...o },
    {
      verb: 'create',
      apiGroup: 'agents.re-cinq.com',
      resource: 'agents',
      name,
      responseObject: agentObject(name, station),
    },
  );
}

function createJob(o: Opts, agent: string, job = `${agent}-job`): AuditRecord {
  return record(
    { code: 201, ...o },
    {
      verb: 'create',
      apiGroup: 'batch',
      resource: 'jobs',
      name: job,
      responseObject: {
        kind: 'Job',
        apiVersion: 'batch/v1',
        metadata: {
          name: job,
          namespace: NS,
          uid: `uid-${job}`,
          resourceVersion: String(++rv),
          ownerReferences: [
            {
              apiVersion: 'agents.re-cinq.com/v1alpha1',
              kind: 'Agent',
              name: agent,
              uid: uidOf(agent),
              controller: true,
            },
          ],
        },
      },
    },
  );
}

function setPhase(
  o: Opts & { readonly version?: number; readonly plain?: boolean; readonly failureReason?: string },
  agent: string,
  phase: string,
  output?: string,
  station = 's1',
): AuditRecord {
  return record(o, {
    verb: 'patch',
    apiGroup: 'agents.re-cinq.com',
    resource: 'agents',
    ...(o.plain ? {} : { subresource: 'status' }),
    name: agent,
    responseObject: agentObject(
      agent,
      station,
      {
        phase,
        ...(output === undefined ? {} : { output }),
        ...(o.failureReason === undefined ? {} : { failureReason: o.failureReason }),
      },
      o.version,
    ),
  });
}

function deleteAgent(o: Opts, agent: string): AuditRecord {
  return record(o, {
    verb: 'delete',
    apiGroup: 'agents.re-cinq.com',
    resource: 'agents',
    name: agent,
    responseObject: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name: agent, group: 'agents.re-cinq.com', kind: 'agents', uid: uidOf(agent) },
    },
  });
}

function leaseWrite(o: Opts, holder: string, verb = 'update'): AuditRecord {
  return record(
    { replica: holder || 'a', ...o },
    {
      verb,
      apiGroup: 'coordination.k8s.io',
      resource: 'leases',
      namespace: LEASE.namespace,
      name: LEASE.name,
      responseObject: {
        kind: 'Lease',
        apiVersion: 'coordination.k8s.io/v1',
        metadata: {
          name: LEASE.name,
          namespace: LEASE.namespace,
          uid: 'uid-lease',
          resourceVersion: String(++rv),
        },
        spec: { holderIdentity: holder, leaseDurationSeconds: 15 },
      },
    },
  );
}

function createNetpol(o: Opts, name: string): AuditRecord {
  return record(
    { code: 201, ...o },
    {
      verb: 'create',
      apiGroup: 'networking.k8s.io',
      resource: 'networkpolicies',
      name,
      responseObject: { kind: 'NetworkPolicy', metadata: { name, namespace: NS, uid: `uid-${name}` } },
    },
  );
}

/** Two runs of Station s1 (limit 1) one after the other; replica a leads throughout. */
function cleanLog(): AuditRecord[] {
  return [
    leaseWrite({ at: 0, replica: 'a' }, 'a', 'create'),
    createAgent({ at: 5 }, 'a-1'),
    createAgent({ at: 6 }, 'a-2'),
    createNetpol({ at: 8 }, 'a-1-egress'),
    createJob({ at: 10 }, 'a-1'),
    setPhase({ at: 20 }, 'a-1', 'Running'),
    leaseWrite({ at: 25 }, 'a'),
    setPhase({ at: 30, took: 5 }, 'a-1', 'Succeeded', `done ${marker('a-1')}`), // completes at 35
    // a-2 starts the instant a-1's slot frees: an end and a start at the same time are no overlap.
    createJob({ at: 35 }, 'a-2'),
    setPhase({ at: 40 }, 'a-2', 'Running'),
    setPhase({ at: 50 }, 'a-2', 'Succeeded', `result: ${marker('a-2')}`),
    // Later writes of a finished Agent keep its phase.
    setPhase({ at: 55 }, 'a-2', 'Succeeded', `result: ${marker('a-2')}`),
    record({ at: 60 }, { verb: 'delete', apiGroup: 'batch', resource: 'jobs', name: 'a-1-job' }),
    // Writes by other users are not the controller's.
    setPhase({ at: 70, user: 'admin', userAgent: 'kubectl/v1.36.3' }, 'a-2', 'Succeeded', marker('a-2')),
  ];
}

function check(records: readonly AuditRecord[], over: Partial<InvariantInput> = {}): InvariantResult[] {
  return checkInvariants({
    records,
    namespace: NS,
    stations: new Map([['s1', 1]]),
    lease: LEASE,
    controllerUser: CONTROLLER,
    markerOf: marker,
    ...over,
  });
}

function result(results: readonly InvariantResult[], id: number): InvariantResult {
  const r = results.find((x) => x.id === id);
  assert.ok(r, `invariant ${id} reported`);
  return r;
}

/** Asserts invariant `id` has `count` violations, each matching every pattern of its row; the others none. */
function expectViolations(
  results: readonly InvariantResult[],
  id: number,
  patterns: readonly RegExp[][],
): void {
  const r = result(results, id);
  assert.equal(
    r.violations.length,
    patterns.length,
    `invariant ${id}: ${JSON.stringify(r.violations, null, 2)}`,
  );
  patterns.forEach((row, i) => {
    for (const p of row) assert.match(r.violations[i] ?? '', p);
  });
  for (const other of results)
    if (other.id !== id) assert.deepEqual(other.violations, [], `invariant ${other.id} (${other.name})`);
}

describe('checkInvariants: a clean run', () => {
  it('passes all five, in order, having checked something', () => {
    const results = check(cleanLog());
    assert.deepEqual(
      results.map((r) => [r.id, r.name]),
      [
        [1, 'one Job per Agent'],
        [2, 'phases never go backwards, one terminal phase'],
        [3, 'concurrency limit'],
        [4, 'results not lost or crossed'],
        [5, 'only the Lease holder writes'],
      ],
    );
    for (const r of results) assert.deepEqual(r.violations, [], `${r.id} ${r.name}`);
    assert.deepEqual(
      results.map((r) => r.checked),
      [2, 6, 2, 4, 9], // 2 Agents; 6 status writes; 2 runs; 4 Succeeded writes; 9 controller writes
    );
  });

  it('sorts the records itself', () => {
    const results = check([...cleanLog()].reverse());
    for (const r of results) assert.deepEqual(r.violations, [], `${r.id} ${r.name}`);
  });
});

describe('invariant 1: one Job per Agent', () => {
  it('reports two successful Job creates for one Agent', () => {
    const log = [...cleanLog(), createJob({ at: 80 }, 'a-1', 'a-1-again')];
    const results = check(log, { stations: new Map() });
    expectViolations(results, 1, [
      [/Agent a-1 \(uid uid-a-1\)/, /2 Jobs/, /a-1-job/, /a-1-again/, /05:00:00\.080000Z/],
    ]);
  });

  it('ignores a create the API server refused (AlreadyExists)', () => {
    const log = [...cleanLog(), createJob({ at: 80, code: 409 }, 'a-1', 'a-1-job')];
    for (const r of check(log)) assert.deepEqual(r.violations, [], `${r.id}`);
  });
});

describe('invariant 2: phases never go backwards', () => {
  it('reports Running after Succeeded', () => {
    const log = [...cleanLog(), setPhase({ at: 80, replica: 'a' }, 'a-1', 'Running')];
    const results = check(log, { stations: new Map() });
    expectViolations(results, 2, [[/Agent a-1/, /Running after terminal Succeeded/, /05:00:00\.080000Z/]]);
  });

  it('reports Succeeded then Failed, and Pending after Running', () => {
    const log = [
      ...cleanLog(),
      setPhase({ at: 80 }, 'a-2', 'Failed'),
      createAgent({ at: 90 }, 'a-3'),
      setPhase({ at: 91 }, 'a-3', 'Running'),
      setPhase({ at: 92 }, 'a-3', 'Pending'),
    ];
    const results = check(log, { stations: new Map() });
    expectViolations(results, 2, [
      [/Agent a-2/, /Failed after terminal Succeeded/],
      [/Agent a-3/, /Pending after Running/],
    ]);
  });

  it('also reads the status in responses to writes of the Agent itself', () => {
    const log = [...cleanLog(), setPhase({ at: 80, plain: true }, 'a-1', 'Pending')];
    const results = check(log, { stations: new Map() });
    expectViolations(results, 2, [[/Agent a-1/, /Pending after terminal Succeeded/, /patch agents a-1/]]);
  });

  it('orders writes by resourceVersion (commit order), not by when their responses completed', () => {
    const log = [
      createAgent({ at: 0 }, 'b-1'),
      // Running committed first (rv 500) but its response finished after Succeeded's (rv 501).
      setPhase({ at: 10, took: 20, version: 500 }, 'b-1', 'Running'),
      setPhase({ at: 12, took: 2, version: 501 }, 'b-1', 'Succeeded', marker('b-1')),
    ];
    assert.deepEqual(result(check(log), 2).violations, []);
    const backwards = [
      createAgent({ at: 0 }, 'b-1'),
      setPhase({ at: 10, took: 20, version: 502 }, 'b-1', 'Running'),
      setPhase({ at: 12, took: 2, version: 501 }, 'b-1', 'Succeeded', marker('b-1')),
    ];
    assert.match(
      result(check(backwards), 2).violations.join('\n'),
      /Agent b-1 \(uid uid-b-1\): Running after terminal Succeeded/,
    );
  });

  it('tells a re-created Agent (new uid, same name) from the old one', () => {
    const old = setPhase({ at: 80 }, 'a-1', 'Pending');
    const fresh = {
      ...old,
      responseObject: {
        ...(old.responseObject as object),
        metadata: { name: 'a-1', uid: 'uid-a-1-new', resourceVersion: '900' },
      },
    };
    assert.deepEqual(result(check([...cleanLog(), fresh]), 2).violations, []);
  });
});

describe('invariant 3: concurrency limit', () => {
  it('reports two runs of a limit-1 Station at once, naming both', () => {
    const log = [
      leaseWrite({ at: 0 }, 'a', 'create'),
      createAgent({ at: 1 }, 'c-1'),
      createAgent({ at: 2 }, 'c-2'),
      createJob({ at: 10 }, 'c-1'),
      createJob({ at: 20 }, 'c-2'), // c-1 still runs
      setPhase({ at: 30 }, 'c-1', 'Succeeded', marker('c-1')),
      setPhase({ at: 40 }, 'c-2', 'Failed'),
    ];
    const results = check(log);
    expectViolations(results, 3, [
      [
        /Station s1 \(maxConcurrentRuns 1\): 2 runs at 2026-12-02T05:00:00\.020000Z/,
        /Agent c-1/,
        /Agent c-2/,
      ],
    ]);
    assert.equal(result(results, 3).checked, 2);
  });

  it('counts a run marked Running without a Job (a stale admission) from its Running write', () => {
    const log = [
      leaseWrite({ at: 0 }, 'a', 'create'),
      createAgent({ at: 1 }, 'c-1'),
      createAgent({ at: 2 }, 'c-2'),
      createJob({ at: 10 }, 'c-1'),
      setPhase({ at: 11 }, 'c-1', 'Running'),
      setPhase({ at: 20 }, 'c-2', 'Running'), // no Job: still a run holding a slot
      setPhase({ at: 30 }, 'c-1', 'Succeeded', marker('c-1')),
      setPhase({ at: 40 }, 'c-2', 'Failed'),
    ];
    expectViolations(check(log), 3, [
      [/2 runs at/, /Agent c-1 .*\(Job c-1-job created/, /Agent c-2 .*\(Running written/],
    ]);
  });

  it('reports each instant above the limit', () => {
    const log = [
      createAgent({ at: 1 }, 'c-1'),
      createAgent({ at: 2 }, 'c-2'),
      createAgent({ at: 3 }, 'c-3'),
      createJob({ at: 10 }, 'c-1'),
      createJob({ at: 20 }, 'c-2'),
      createJob({ at: 30 }, 'c-3'),
    ];
    const v = result(check(log, { stations: new Map([['s1', 1]]), controllerUser: 'nobody' }), 3).violations;
    assert.equal(v.length, 2, JSON.stringify(v));
    assert.match(v[0] ?? '', /2 runs/);
    assert.match(v[1] ?? '', /3 runs at .*05:00:00\.030000Z.*c-1.*c-2.*c-3/);
  });

  it('accepts a slot freed and taken at the same instant, and a slot freed by deleting the Agent', () => {
    const log = [
      createAgent({ at: 1 }, 'c-1'),
      createAgent({ at: 2 }, 'c-2'),
      createAgent({ at: 3 }, 'c-3'),
      createJob({ at: 10 }, 'c-1'),
      setPhase({ at: 20, took: 5 }, 'c-1', 'Failed'), // completes at 25
      createJob({ at: 25 }, 'c-2'), // received at 25
      deleteAgent({ at: 30, took: 3 }, 'c-2'), // completes at 33, c-2 never finished
      createJob({ at: 33 }, 'c-3'),
    ];
    assert.deepEqual(result(check(log, { controllerUser: 'nobody' }), 3).violations, []);
  });

  it('holds a run without an end until the end of the log', () => {
    const log = [
      createAgent({ at: 1 }, 'c-1'),
      createAgent({ at: 2 }, 'c-2'),
      createJob({ at: 10 }, 'c-1'), // never finishes
      setPhase({ at: 500 }, 'c-2', 'Pending'),
      createJob({ at: 1000 }, 'c-2'),
      setPhase({ at: 1010 }, 'c-2', 'Succeeded', marker('c-2')),
    ];
    const v = result(check(log, { controllerUser: 'nobody' }), 3).violations;
    assert.equal(v.length, 1, JSON.stringify(v));
    assert.match(v[0] ?? '', /c-1 .*until 2026-12-02T05:00:01\.012000Z: end of the log/);
  });

  it('does not limit Stations with 0 (unlimited) or unknown Stations', () => {
    const log = [
      createAgent({ at: 1 }, 'c-1', 'free'),
      createAgent({ at: 2 }, 'c-2', 'free'),
      createAgent({ at: 3 }, 'c-3', 'other'),
      createAgent({ at: 4 }, 'c-4', 'other'),
      createJob({ at: 10 }, 'c-1'),
      createJob({ at: 11 }, 'c-2'),
      createJob({ at: 12 }, 'c-3'),
      createJob({ at: 13 }, 'c-4'),
    ];
    const r = result(check(log, { stations: new Map([['free', 0]]), controllerUser: 'nobody' }), 3);
    assert.deepEqual(r.violations, []);
    assert.equal(r.checked, 0);
  });
});

describe('invariant 4: results not lost or crossed', () => {
  it("reports a Succeeded output carrying another run's marker", () => {
    const log = cleanLog().map((r) =>
      r.name === 'a-2' && r.subresource === 'status' && r.received === T0 + 50
        ? setPhase({ at: 50 }, 'a-2', 'Succeeded', `${marker('a-2')} and ${marker('a-1')}`)
        : r,
    );
    expectViolations(check(log), 4, [[/Agent a-2/, /marker of Agent a-1/, /MARKER<a-1>/]]);
  });

  it('reports a Succeeded run without its own marker, or without output', () => {
    const log = [
      ...cleanLog(),
      createAgent({ at: 80 }, 'd-1', 'none'),
      setPhase({ at: 81 }, 'd-1', 'Succeeded', marker('a-1')),
      createAgent({ at: 90 }, 'd-2', 'none'),
      setPhase({ at: 91 }, 'd-2', 'Succeeded'),
    ];
    expectViolations(check(log), 4, [
      [/Agent d-1/, /without its marker "MARKER<d-1>"/],
      [/Agent d-1/, /marker of Agent a-1/],
      [/Agent d-2/, /without its marker/, /no output/],
    ]);
  });

  it('excuses a missing marker only for a run whose pod was deleted by hand and that says its output is gone', () => {
    const log = [
      ...cleanLog(),
      createAgent({ at: 80 }, 'h-1', 'none'),
      setPhase(
        { at: 81, failureReason: 'run output unavailable: pod garbage-collected' },
        'h-1',
        'Succeeded',
        '',
      ),
      createAgent({ at: 90 }, 'h-2', 'none'),
      setPhase({ at: 91 }, 'h-2', 'Succeeded', ''),
      createAgent({ at: 92 }, 'h-3', 'none'),
      setPhase({ at: 93, failureReason: 'run output unavailable' }, 'h-3', 'Succeeded', ''),
    ];
    expectViolations(check(log, { podDeletedByHand: new Set(['h-1', 'h-2']) }), 4, [
      [/Agent h-2/, /without its marker/],
      [/Agent h-3/, /without its marker/],
    ]);
  });

  it('does not mistake a marker contained in the own one (a-1 in a-10)', () => {
    const plain = (n: string): string => `run ${n}`;
    const log = [
      createAgent({ at: 1 }, 'a-1'),
      createAgent({ at: 2 }, 'a-10'),
      setPhase({ at: 10 }, 'a-10', 'Succeeded', 'run a-10 ok'),
    ];
    assert.deepEqual(result(check(log, { markerOf: plain }), 4).violations, []);
  });

  it('checks Failed runs for nothing', () => {
    const log = [createAgent({ at: 1 }, 'f-1'), setPhase({ at: 10 }, 'f-1', 'Failed', 'no marker here')];
    const r = result(check(log), 4);
    assert.deepEqual([r.checked, r.violations], [0, []]);
  });
});

describe('invariant 5: only the Lease holder writes', () => {
  it('reports a write by the holder after its Lease expired, though nobody took it over', () => {
    const log = [
      leaseWrite({ at: 0 }, 'a', 'create'),
      createAgent({ at: 1 }, 'e-1'),
      setPhase({ at: 14_000 }, 'e-1', 'Running'), // within the 15 s of the Lease
      setPhase({ at: 15_001 }, 'e-1', 'Failed'), // past it
    ];
    expectViolations(check(log), 5, [
      [/patch agents\/status e-1 by a/, /Lease .* had expired at 2026-12-02T05:00:15\.000000Z/],
    ]);
  });

  it('reports a write by replica b while a holds the Lease', () => {
    const log = [...cleanLog(), setPhase({ at: 80, replica: 'b' }, 'a-2', 'Succeeded', marker('a-2'))];
    expectViolations(check(log), 5, [
      [
        /patch agents\/status a-2 by b/,
        /replica b is not the leader at 2026-12-02T05:00:00\.080000Z/,
        /held by a/,
      ],
    ]);
  });

  it("accepts the prompt API's session-id annotation from any replica, and nothing more in the same shape", () => {
    const sessionPatch = (at: number, name: string, body: unknown, subresource?: string): AuditRecord =>
      record(
        { at, replica: 'b' },
        {
          verb: 'patch',
          apiGroup: 'agents.re-cinq.com',
          resource: 'agents',
          ...(subresource !== undefined ? { subresource } : {}),
          name,
          requestObject: body,
        },
      );
    const annotation = (value: unknown) => ({ 'agents.re-cinq.com/session-id': value });
    const log = [
      ...cleanLog(),
      sessionPatch(80, 'a-2', { metadata: { uid: 'u-2', annotations: annotation('s-1') } }),
      sessionPatch(81, 'a-2', { metadata: { annotations: annotation('s-1') } }),
      sessionPatch(82, 'a-2', { metadata: { uid: 'u-2', annotations: { ...annotation('s-1'), x: 'y' } } }),
      sessionPatch(83, 'a-2', {
        metadata: { uid: 'u-2', labels: { x: 'y' }, annotations: annotation('s-1') },
      }),
      sessionPatch(84, 'a-2', { metadata: { uid: 'u-2', annotations: annotation('s-1') }, spec: {} }),
      sessionPatch(85, 'a-2', { metadata: { uid: 'u-2', annotations: annotation('s-1') } }, 'status'),
      sessionPatch(86, 'a-2', { metadata: { uid: 'u-2', annotations: annotation(null) } }),
    ];
    expectViolations(check(log), 5, [
      [/patch agents a-2 by b/, /replica b is not the leader/],
      [/patch agents a-2 by b/, /replica b is not the leader/],
      [/patch agents a-2 by b/, /replica b is not the leader/],
      [/patch agents a-2 by b/, /replica b is not the leader/],
      [/patch agents\/status a-2 by b/, /replica b is not the leader/],
      [/patch agents a-2 by b/, /replica b is not the leader/],
    ]);
  });

  it('reports a write by the old holder after the new holder acquired', () => {
    const log = [
      ...cleanLog(),
      leaseWrite({ at: 100, took: 4, replica: 'b' }, 'b'), // b holds from 104
      record(
        { at: 104, replica: 'a' },
        { verb: 'delete', apiGroup: 'batch', resource: 'jobs', name: 'a-2-job' },
      ),
      createNetpol({ at: 110, replica: 'a' }, 'x-egress'),
      createNetpol({ at: 111, replica: 'b' }, 'y-egress'),
    ];
    expectViolations(check(log), 5, [
      [/delete jobs a-2-job by a/, /held by b since 2026-12-02T05:00:00\.104000Z/],
      [/create networkpolicies x-egress by a/, /held by b/],
    ]);
  });

  it('accepts a write received before the new holder acquired but completed after', () => {
    const log = [
      ...cleanLog(),
      leaseWrite({ at: 100, took: 4, replica: 'b' }, 'b'), // b holds from 104
      record(
        { at: 103, took: 10, replica: 'a' },
        { verb: 'delete', apiGroup: 'batch', resource: 'jobs', name: 'a-2-job' },
      ),
    ];
    for (const r of check(log)) assert.deepEqual(r.violations, [], `${r.id}`);
  });

  it('reports writes while nobody holds the Lease, before any Lease write, or without an identity', () => {
    const log = [
      createAgent({ at: 0 }, 'e-1', 'none'),
      setPhase({ at: 1 }, 'e-1', 'Running'), // before the Lease was ever written
      leaseWrite({ at: 10 }, 'a', 'create'),
      setPhase({ at: 20, userAgent: 'agent-controller/0.1.0' }, 'e-1', 'Running'), // no identity
      leaseWrite({ at: 30 }, ''), // released
      setPhase({ at: 40 }, 'e-1', 'Failed'),
      // Not checked: refused writes, other users, other namespaces, Lease writes, Job updates.
      setPhase({ at: 41, code: 409, replica: 'z' }, 'e-1', 'Failed'),
      setPhase({ at: 42, user: 'admin', replica: 'z' }, 'e-1', 'Failed'),
      { ...setPhase({ at: 43, replica: 'z' }, 'e-1', 'Failed'), namespace: 'elsewhere' },
      leaseWrite({ at: 44, replica: 'z' }, 'z'),
      record({ at: 50, replica: 'q' }, { verb: 'update', apiGroup: 'batch', resource: 'jobs', name: 'x' }),
    ];
    expectViolations(check(log), 5, [
      [/e-1 by a/, /no write of Lease agents\/agent-controller seen before/],
      [/no replica identity in User-Agent "agent-controller\/0.1.0"/],
      [/patch agents\/status e-1 by a/, /held by nobody since/],
    ]);
    assert.equal(result(check(log), 5).checked, 3);
  });

  it('ignores writes to another Lease', () => {
    const other = { ...leaseWrite({ at: 90, replica: 'b' }, 'b'), name: 'someone-else' };
    const log = [...cleanLog(), other, setPhase({ at: 95 }, 'a-2', 'Succeeded', marker('a-2'))];
    for (const r of check(log)) assert.deepEqual(r.violations, [], `${r.id}`);
  });
});

describe('identityOf', () => {
  it('reads the replica from the controller User-Agent', () => {
    assert.equal(
      identityOf('agent-controller/0.1.0 (agent-controller-7d9f-abc)'),
      'agent-controller-7d9f-abc',
    );
    assert.equal(identityOf('agent-controller/0.1.0-dev+sha (replica b)'), 'replica b');
    assert.equal(identityOf(userAgentFor('pod-1')), 'pod-1');
  });
  it('is undefined for anything else', () => {
    assert.equal(identityOf('agent-controller/0.1.0'), undefined);
    assert.equal(identityOf(userAgentFor(undefined)), undefined);
    assert.equal(identityOf('agent-controller/0.1.0 ()'), undefined);
    assert.equal(identityOf('kubectl/v1.36.3 (linux/amd64) kubernetes/abc'), undefined);
    assert.equal(identityOf('other/1 (agent-controller/0.1.0 (x))'), undefined);
    assert.equal(identityOf(''), undefined);
  });
});

describe('invariant 8: one vendor batch per batch run', () => {
  it('passes one batch per request id and names every run with more', () => {
    const ok = oneBatchPerRun([
      { id: 'msgbatch_1', customId: 'run-a' },
      { id: 'msgbatch_2', customId: 'run-b' },
    ]);
    assert.equal(ok.id, 8);
    assert.equal(ok.checked, 2);
    assert.deepEqual(ok.violations, []);
    const twice = oneBatchPerRun([
      { id: 'msgbatch_1', customId: 'run-a' },
      { id: 'msgbatch_2', customId: 'run-b' },
      { id: 'msgbatch_3', customId: 'run-a' },
    ]);
    assert.deepEqual(twice.violations, ['run-a: 2 batches (msgbatch_1, msgbatch_3)']);
  });
});
