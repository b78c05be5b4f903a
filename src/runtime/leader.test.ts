import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeTransport, type FakeReply, type FakeRequest } from '../kube/fake-transport.ts';
import { createLogger } from '../shared/log.ts';
import { ManualClock } from './clock.ts';
import {
  acquirePatch,
  afterAttempt,
  createLeaderElector,
  createLeaseBody,
  decideLeader,
  electorSettings,
  formatMicroTime,
  INITIAL_LEADERSHIP,
  type Lease,
  type LeaseObservation,
  leadsFreshly,
  observeLease,
  releasePatch,
  renewPatch,
} from './leader.ts';

const ME = { identity: 'me', leaseDurationSeconds: 15 };
const lease = (
  holder: string | null,
  renewTime: string,
  rv = '1',
  extra: Partial<Lease['spec']> = {},
): Lease => ({
  metadata: { name: 'agent-controller', namespace: 'ns', resourceVersion: rv },
  spec: { holderIdentity: holder, renewTime, leaseDurationSeconds: 15, leaseTransitions: 3, ...extra },
});

describe('formatMicroTime', () => {
  it('always has exactly 6 fractional digits in UTC', () => {
    assert.equal(formatMicroTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678)), '2026-01-02T03:04:05.678000Z');
    assert.equal(formatMicroTime(Date.UTC(2026, 0, 2, 3, 4, 5, 0)), '2026-01-02T03:04:05.000000Z');
    assert.equal(formatMicroTime(Date.UTC(2026, 0, 2, 3, 4, 5, 1) + 0.25), '2026-01-02T03:04:05.001250Z');
    assert.match(formatMicroTime(Date.now()), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });
});

describe('observeLease', () => {
  it('records an absent lease', () => {
    const o = observeLease(undefined, null, 100);
    assert.deepEqual(o, {
      exists: false,
      holder: '',
      renewTime: '',
      durationSeconds: undefined,
      transitions: 0,
      resourceVersion: '',
      firstSeenAt: 100,
    });
  });
  it('keeps firstSeenAt while holder and renewTime are unchanged (even if the rv changes)', () => {
    const a = observeLease(undefined, lease('x', 't1', '1'), 100);
    const b = observeLease(a, lease('x', 't1', '2'), 5_000);
    assert.equal(b.firstSeenAt, 100);
    assert.equal(b.resourceVersion, '2');
  });
  it('restarts firstSeenAt when renewTime, holder or existence changes', () => {
    const a = observeLease(undefined, lease('x', 't1'), 100);
    assert.equal(observeLease(a, lease('x', 't2'), 200).firstSeenAt, 200);
    assert.equal(observeLease(a, lease('y', 't1'), 300).firstSeenAt, 300);
    assert.equal(observeLease(a, null, 400).firstSeenAt, 400);
  });
  it('reads duration and transitions, ignoring a non-positive duration', () => {
    const o = observeLease(
      undefined,
      lease('x', 't', '1', { leaseDurationSeconds: 0, leaseTransitions: 7 }),
      0,
    );
    assert.equal(o.durationSeconds, undefined);
    assert.equal(o.transitions, 7);
  });
});

describe('decideLeader', () => {
  const seen = (l: Lease | null, at: number): LeaseObservation => observeLease(undefined, l, at);
  it('creates when there is no lease', () => {
    assert.deepEqual(decideLeader(seen(null, 0), ME, 0), { kind: 'create' });
  });
  it('renews when we hold it', () => {
    assert.deepEqual(decideLeader(seen(lease('me', 't'), 0), ME, 60_000), { kind: 'renew' });
  });
  it('waits while another holder is fresh on our clock', () => {
    assert.deepEqual(decideLeader(seen(lease('other', 't'), 1_000), ME, 15_999), {
      kind: 'wait',
      holder: 'other',
      expiresInMs: 1,
    });
  });
  it('acquires once the renewTime has not changed for the lease duration on our clock', () => {
    assert.deepEqual(decideLeader(seen(lease('other', 't'), 1_000), ME, 16_000), {
      kind: 'acquire',
      transitions: 4,
      why: 'expired',
    });
  });
  it('judges expiry by local observation, not by the remote renewTime', () => {
    const ancient = lease('other', '2000-01-01T00:00:00.000000Z');
    assert.equal(decideLeader(seen(ancient, 50_000), ME, 50_001).kind, 'wait');
  });
  it('honours the lease duration written in the lease', () => {
    const short = lease('other', 't', '1', { leaseDurationSeconds: 2 });
    assert.equal(decideLeader(seen(short, 0), ME, 2_000).kind, 'acquire');
  });
  it('acquires a released lease (empty holder) at once', () => {
    assert.deepEqual(decideLeader(seen(lease('', 't'), 0), ME, 0), {
      kind: 'acquire',
      transitions: 4,
      why: 'released',
    });
    assert.equal(decideLeader(seen(lease(null, 't'), 0), ME, 0).kind, 'acquire');
  });
});

describe('afterAttempt', () => {
  const limits = { maxFailures: 2, renewDeadlineMs: 10_000 };
  const leading = { leading: true, consecutiveFailures: 0, lastRenewedAt: 0 };
  it('leads after a won write', () => {
    assert.deepEqual(afterAttempt(INITIAL_LEADERSHIP, 'won', 5, limits), {
      leading: true,
      consecutiveFailures: 0,
      lastRenewedAt: 5,
    });
  });
  it('steps down at once on a renewal conflict', () => {
    assert.equal(afterAttempt(leading, 'conflict', 1, limits).leading, false);
  });
  it('steps down when someone else holds the lease', () => {
    assert.equal(afterAttempt(leading, 'standby', 1, limits).leading, false);
  });
  it('tolerates one failed tick and steps down at the second', () => {
    const one = afterAttempt(leading, 'error', 5_000, limits);
    assert.equal(one.leading, true);
    assert.equal(afterAttempt(one, 'error', 6_000, limits).leading, false);
  });
  it('steps down on a failure once the last renewal is older than the renew deadline', () => {
    assert.equal(afterAttempt(leading, 'error', 10_000, limits).leading, false);
  });
  it('a standby stays one on errors', () => {
    assert.equal(afterAttempt(INITIAL_LEADERSHIP, 'error', 0, limits).leading, false);
  });
});

describe('electorSettings', () => {
  it("the reference's defaults: 15 s lease, 5 s tick, 2 failures, a 10 s renew deadline, 5 s requests", () => {
    assert.deepEqual(electorSettings({ identity: 'me' }), {
      self: { identity: 'me', leaseDurationSeconds: 15 },
      retryMs: 5_000,
      limits: { maxFailures: 2, renewDeadlineMs: 10_000 },
      requestTimeoutMs: 5_000,
    });
  });

  it('the renew deadline follows a custom lease and tick; requests take one tick within [1 s, 10 s]', () => {
    assert.deepEqual(electorSettings({ identity: 'me', leaseDurationSeconds: 30, retryPeriodMs: 200 }), {
      self: { identity: 'me', leaseDurationSeconds: 30 },
      retryMs: 200,
      limits: { maxFailures: 2, renewDeadlineMs: 29_800 },
      requestTimeoutMs: 1_000,
    });
    assert.equal(electorSettings({ identity: 'me', retryPeriodMs: 60_000 }).requestTimeoutMs, 10_000);
  });

  it('an explicit renew deadline and failure count are kept as given', () => {
    assert.deepEqual(
      electorSettings({ identity: 'me', renewDeadlineMs: 7_000, maxConsecutiveFailures: 5 }).limits,
      { maxFailures: 5, renewDeadlineMs: 7_000 },
    );
  });
});

describe('leadsFreshly', () => {
  const leading = { leading: true, consecutiveFailures: 0, lastRenewedAt: 1_000 };
  it('while leading with a renewal younger than the deadline, up to but not at the deadline', () => {
    assert.equal(leadsFreshly(leading, 1_000, 10_000), true);
    assert.equal(leadsFreshly(leading, 10_999, 10_000), true);
    assert.equal(leadsFreshly(leading, 11_000, 10_000), false);
  });
  it('never when not leading or never renewed', () => {
    assert.equal(leadsFreshly({ ...leading, leading: false }, 1_000, 10_000), false);
    assert.equal(leadsFreshly({ ...leading, lastRenewedAt: undefined }, 1_000, 10_000), false);
  });
});

describe('lease bodies', () => {
  const now = Date.UTC(2026, 0, 1);
  const t = '2026-01-01T00:00:00.000000Z';
  it('create names us holder with transitions 0', () => {
    assert.deepEqual(createLeaseBody('agent-controller', ME, now), {
      metadata: { name: 'agent-controller' },
      spec: {
        holderIdentity: 'me',
        leaseDurationSeconds: 15,
        acquireTime: t,
        renewTime: t,
        leaseTransitions: 0,
      },
    });
  });
  it('renew touches only renewTime', () => assert.deepEqual(renewPatch(now), { spec: { renewTime: t } }));
  it('acquire writes the full spec with the new transition count', () => {
    assert.deepEqual(acquirePatch(ME, 4, now), {
      spec: {
        holderIdentity: 'me',
        leaseDurationSeconds: 15,
        acquireTime: t,
        renewTime: t,
        leaseTransitions: 4,
      },
    });
  });
  it('release empties the holder with a 1 s duration', () => {
    assert.deepEqual(releasePatch(now), {
      spec: { holderIdentity: '', leaseDurationSeconds: 1, renewTime: t },
    });
  });
});

/** An in-memory Lease endpoint with resourceVersion-guarded merge patches, like the API server. */
function fakeLeaseServer() {
  let stored: { metadata: Record<string, unknown>; spec: Record<string, unknown> } | undefined;
  let rv = 0;
  let failing = false;
  const conflict = {
    status: 409,
    body: { kind: 'Status', code: 409, reason: 'Conflict', message: 'modified' },
  };
  let gate: Promise<void> | undefined;
  const respond = (req: FakeRequest): FakeReply => {
    if (failing) return { error: { kind: 'network', message: 'down' } };
    if (req.method === 'GET') {
      return stored
        ? { status: 200, body: stored }
        : { status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound' } };
    }
    if (req.method === 'POST') {
      if (stored) return { status: 409, body: { kind: 'Status', code: 409, reason: 'AlreadyExists' } };
      const body = req.body as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
      stored = {
        metadata: { ...body.metadata, namespace: 'ns', resourceVersion: String(++rv) },
        spec: body.spec,
      };
      return { status: 201, body: stored };
    }
    if (req.method === 'PATCH') {
      const body = req.body as { metadata?: { resourceVersion?: string }; spec: Record<string, unknown> };
      if (!stored) return { status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound' } };
      if (
        body.metadata?.resourceVersion !== undefined &&
        body.metadata.resourceVersion !== stored.metadata.resourceVersion
      )
        return conflict;
      stored = {
        metadata: { ...stored.metadata, resourceVersion: String(++rv) },
        spec: { ...stored.spec, ...body.spec },
      };
      return { status: 200, body: stored };
    }
    return { status: 405, body: {} };
  };
  return {
    transport: createFakeTransport({
      request: async (req) => {
        // Committed now, answered once the gate opens (a slow answer, or a process frozen before handling it).
        const reply = respond(req);
        if (gate !== undefined) await gate;
        return reply;
      },
    }),
    /** Holds every answer until the returned function is called. */
    holdAnswers: (): (() => void) => {
      let open = (): void => {};
      gate = new Promise<void>((resolve) => {
        open = () => {
          gate = undefined;
          resolve();
        };
      });
      return open;
    },
    get: () => stored,
    setFailing: (f: boolean) => {
      failing = f;
    },
    bumpExternally: (spec: Record<string, unknown>) => {
      if (stored)
        stored = {
          metadata: { ...stored.metadata, resourceVersion: String(++rv) },
          spec: { ...stored.spec, ...spec },
        };
    },
  };
}

describe('createLeaderElector', () => {
  const logger = createLogger('error', () => {});
  const make = (
    server: ReturnType<typeof fakeLeaseServer>,
    clock: ManualClock,
    identity: string,
    events: string[],
  ) =>
    createLeaderElector({
      transport: server.transport,
      namespace: 'ns',
      name: 'agent-controller',
      identity,
      clock,
      logger,
      onStartedLeading: () => events.push(`${identity}:start`),
      onStoppedLeading: () => events.push(`${identity}:stop`),
    });

  it('one of two electors leads; the other takes over only after the lease went unrenewed for 15 s', async () => {
    const server = fakeLeaseServer();
    const clock = new ManualClock();
    const events: string[] = [];
    const a = make(server, clock, 'a', events);
    const b = make(server, clock, 'b', events);
    await a.tick();
    await b.tick();
    assert.equal(a.isLeader(), true);
    assert.equal(b.isLeader(), false);
    assert.equal(server.get()?.spec.holderIdentity, 'a');
    for (let i = 0; i < 6; i++) {
      await clock.advance(5_000);
      await a.tick();
      await b.tick();
      assert.equal(b.isLeader(), false);
    }
    // a dies (stops ticking): b takes over 15 s after it first saw the last renewTime
    await clock.advance(5_000);
    await b.tick();
    await clock.advance(5_000);
    await b.tick();
    assert.equal(b.isLeader(), false);
    await clock.advance(5_000);
    await b.tick();
    assert.equal(b.isLeader(), true);
    assert.equal(server.get()?.spec.holderIdentity, 'b');
    assert.equal(server.get()?.spec.leaseTransitions, 1);
    assert.deepEqual(events, ['a:start', 'b:start']);
  });

  it('release hands over at the standby’s next tick', async () => {
    const server = fakeLeaseServer();
    const clock = new ManualClock();
    const events: string[] = [];
    const a = make(server, clock, 'a', events);
    const b = make(server, clock, 'b', events);
    await a.tick();
    await b.tick();
    const r = await a.release();
    assert.ok(r.ok);
    assert.equal(a.isLeader(), false);
    assert.equal(server.get()?.spec.holderIdentity, '');
    assert.equal(server.get()?.spec.leaseDurationSeconds, 1);
    await clock.advance(5_000);
    await b.tick();
    assert.equal(b.isLeader(), true);
    assert.equal(server.get()?.spec.leaseDurationSeconds, 15);
    assert.deepEqual(events, ['a:start', 'a:stop', 'b:start']);
  });

  it('release is a no-op for a standby', async () => {
    const server = fakeLeaseServer();
    const clock = new ManualClock();
    const a = make(server, clock, 'a', []);
    const b = make(server, clock, 'b', []);
    await a.tick();
    await b.tick();
    assert.ok((await b.release()).ok);
    assert.equal(server.get()?.spec.holderIdentity, 'a');
  });

  it('steps down at once when a renewal loses the resourceVersion race', async () => {
    const server = fakeLeaseServer();
    const clock = new ManualClock();
    const events: string[] = [];
    const a = make(server, clock, 'a', events);
    await a.tick();
    // someone else writes between our GET and PATCH: simulate by making PATCH see a changed rv
    const original = server.transport.request.bind(server.transport);
    server.transport.request = async (method, path, opts) => {
      if (method === 'PATCH') server.bumpExternally({ holderIdentity: 'intruder' });
      return original(method, path, opts);
    };
    await clock.advance(5_000);
    await a.tick();
    assert.equal(a.isLeader(), false);
    assert.deepEqual(events, ['a:start', 'a:stop']);
  });

  it('steps down after two consecutive failed ticks, and isLeader turns false once the renew deadline passed', async () => {
    const server = fakeLeaseServer();
    const clock = new ManualClock();
    const events: string[] = [];
    const a = make(server, clock, 'a', events);
    await a.tick();
    server.setFailing(true);
    await clock.advance(5_000);
    await a.tick();
    assert.equal(a.isLeader(), true);
    await clock.advance(4_999);
    assert.equal(a.isLeader(), true);
    await clock.advance(1);
    assert.equal(a.isLeader(), false);
    await a.tick();
    assert.equal(a.isLeader(), false);
    assert.deepEqual(events, ['a:start', 'a:stop']);
  });

  it('holdsLease judges like isLeader without stepping down (the write fence asks it)', async () => {
    const server = fakeLeaseServer();
    const clock = new ManualClock();
    const events: string[] = [];
    const a = make(server, clock, 'a', events);
    await a.tick();
    assert.equal(a.holdsLease(), true);
    server.setFailing(true);
    await clock.advance(9_999);
    assert.equal(a.holdsLease(), true);
    await clock.advance(1);
    assert.equal(a.holdsLease(), false);
    assert.deepEqual(events, ['a:start'], 'no step-down from asking');
    assert.equal(a.isLeader(), false);
    assert.deepEqual(events, ['a:start', 'a:stop']);
    assert.equal(a.holdsLease(), false);
  });

  it('a renewal counts from when it was sent, not from when its answer arrived', async () => {
    const server = fakeLeaseServer();
    const clock = new ManualClock();
    const a = make(server, clock, 'a', []);
    const release = server.holdAnswers();
    const first = a.tick();
    // The answer is handled 4 s after the renewal was sent (a slow API server, or a frozen process).
    await clock.advance(4_000);
    release();
    await first;
    assert.equal(a.isLeader(), true);
    await clock.advance(5_999);
    assert.equal(a.holdsLease(), true);
    await clock.advance(1);
    assert.equal(a.holdsLease(), false, '10 s after sending, not after the answer');
  });

  it('run ticks every retry period until aborted', async () => {
    const server = fakeLeaseServer();
    const clock = new ManualClock();
    const a = make(server, clock, 'a', []);
    const ctl = new AbortController();
    const running = a.run(ctl.signal);
    await clock.advance(0);
    assert.equal(a.isLeader(), true);
    const renewTimes = new Set<unknown>([server.get()?.spec.renewTime]);
    for (let i = 0; i < 3; i++) {
      await clock.advance(5_000);
      renewTimes.add(server.get()?.spec.renewTime);
    }
    assert.equal(renewTimes.size, 4);
    ctl.abort();
    await running;
    assert.equal(a.isLeader(), true, 'run does not release on its own');
  });
});
