import * as v from 'valibot';
import { createObject, getObject } from '../kube/crud.ts';
import {
  describeKubeError,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeError,
} from '../kube/errors.ts';
import { ObjectMetaSchema } from '../kube/meta.ts';
import { mergePatch } from '../kube/patch.ts';
import { LEASES } from '../kube/resources.ts';
import type { Transport } from '../kube/transport.ts';
import type { Logger } from '../shared/log.ts';
import type { Result } from '../shared/result.ts';
import { err, ok } from '../shared/result.ts';
import type { Clock } from './clock.ts';

// ---------------------------------------------------------------------------------------------------------------
// Pure core (docs/design/reference-behaviour.md#leader-election, docs/design/kubernetes.md#lease-election)
// ---------------------------------------------------------------------------------------------------------------

/** `coordination.k8s.io/v1` Lease, as far as election needs it. */
export const LeaseSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: ObjectMetaSchema,
  spec: v.optional(
    v.looseObject({
      holderIdentity: v.optional(v.nullable(v.string())),
      leaseDurationSeconds: v.optional(v.nullable(v.number())),
      acquireTime: v.optional(v.nullable(v.string())),
      renewTime: v.optional(v.nullable(v.string())),
      leaseTransitions: v.optional(v.nullable(v.number())),
    }),
    {},
  ),
});
export type Lease = v.InferOutput<typeof LeaseSchema>;

/** Election defaults of the reference: 15 s lease, 5 s tick, step down after 2 consecutive failed renewals. */
export const LEASE_DURATION_SECONDS = 15;
export const RETRY_PERIOD_MS = 5_000;
export const MAX_CONSECUTIVE_RENEW_FAILURES = 2;

/** What this elector remembers of the Lease. `firstSeenAt` is on OUR clock. */
export interface LeaseObservation {
  readonly exists: boolean;
  readonly holder: string;
  readonly renewTime: string;
  /** The lease's own duration when set and positive; else undefined. */
  readonly durationSeconds: number | undefined;
  readonly transitions: number;
  readonly resourceVersion: string;
  /** Local time at which this (exists, holder, renewTime) combination was first seen. */
  readonly firstSeenAt: number;
}

/**
 * Folds a freshly read Lease (or `null` when absent) into the observation (pure). `firstSeenAt` restarts whenever the
 * lease appears or disappears or its holder or renewTime changes; otherwise it is kept, so expiry is measured on the
 * local clock from the moment the current renewTime was first seen (immune to clock skew between replicas).
 */
export function observeLease(
  prev: LeaseObservation | undefined,
  lease: Lease | null,
  now: number,
): LeaseObservation {
  const exists = lease !== null;
  const holder = lease?.spec.holderIdentity ?? '';
  const renewTime = lease?.spec.renewTime ?? '';
  const d = lease?.spec.leaseDurationSeconds;
  const same =
    prev !== undefined && prev.exists === exists && prev.holder === holder && prev.renewTime === renewTime;
  return {
    exists,
    holder,
    renewTime,
    durationSeconds: d !== undefined && d !== null && d > 0 ? d : undefined,
    transitions: lease?.spec.leaseTransitions ?? 0,
    resourceVersion: lease?.metadata.resourceVersion ?? '',
    firstSeenAt: same ? prev.firstSeenAt : now,
  };
}

/** Who we are and how long our leases last. */
export interface ElectorSelf {
  readonly identity: string;
  readonly leaseDurationSeconds: number;
}

/** What to do this tick. */
export type LeaderDecision =
  /** No Lease: POST one naming us. */
  | { readonly kind: 'create' }
  /** We hold it: renew (resourceVersion-guarded). */
  | { readonly kind: 'renew' }
  /** Free (released) or expired on our clock: take it over (resourceVersion-guarded), transitions + 1. */
  | { readonly kind: 'acquire'; readonly transitions: number; readonly why: 'released' | 'expired' }
  /** Someone else holds a fresh lease: stand by. */
  | { readonly kind: 'wait'; readonly holder: string; readonly expiresInMs: number };

/**
 * The election decision for one tick (pure). Cases: absent → create; held by us → renew; empty holder (released)
 * → acquire now; held by another whose renewTime has not changed for the lease duration on our clock → acquire;
 * otherwise wait. The lease's own `leaseDurationSeconds` is honoured when set, else ours.
 */
export function decideLeader(observed: LeaseObservation, self: ElectorSelf, now: number): LeaderDecision {
  if (!observed.exists) return { kind: 'create' };
  if (observed.holder === self.identity) return { kind: 'renew' };
  const transitions = observed.transitions + 1;
  if (observed.holder === '') return { kind: 'acquire', transitions, why: 'released' };
  const durationMs = (observed.durationSeconds ?? self.leaseDurationSeconds) * 1000;
  const age = now - observed.firstSeenAt;
  if (age >= durationMs) return { kind: 'acquire', transitions, why: 'expired' };
  return { kind: 'wait', holder: observed.holder, expiresInMs: durationMs - age };
}

/** Leadership bookkeeping between ticks. */
export interface LeadershipState {
  readonly leading: boolean;
  readonly consecutiveFailures: number;
  /** Local time of the last successful create/renew/acquire. */
  readonly lastRenewedAt: number | undefined;
}

export const INITIAL_LEADERSHIP: LeadershipState = {
  leading: false,
  consecutiveFailures: 0,
  lastRenewedAt: undefined,
};

/** How one tick's API work ended. */
export type AttemptResult =
  /** We hold the lease now (create 201, renew/acquire 200). */
  | 'won'
  /** Someone else holds a fresh lease; we did not write. */
  | 'standby'
  /** Our guarded write lost a race (409 Conflict / AlreadyExists): definitive. */
  | 'conflict'
  /** Network, timeout, 5xx, …: inconclusive. */
  | 'error';

/**
 * Applies a tick's result (pure). A leader steps down at once on `conflict` or `standby`, and on `error` once
 * `maxFailures` consecutive ticks failed or the last renewal is `renewDeadlineMs` old; a standby stays one.
 */
export function afterAttempt(
  state: LeadershipState,
  result: AttemptResult,
  now: number,
  limits: { readonly maxFailures: number; readonly renewDeadlineMs: number },
): LeadershipState {
  switch (result) {
    case 'won':
      return { leading: true, consecutiveFailures: 0, lastRenewedAt: now };
    case 'standby':
    case 'conflict':
      return { leading: false, consecutiveFailures: 0, lastRenewedAt: state.lastRenewedAt };
    case 'error': {
      const failures = state.consecutiveFailures + 1;
      const stale = state.lastRenewedAt === undefined || now - state.lastRenewedAt >= limits.renewDeadlineMs;
      const leading = state.leading && failures < limits.maxFailures && !stale;
      return { leading, consecutiveFailures: failures, lastRenewedAt: state.lastRenewedAt };
    }
  }
}

/** A Lease MicroTime: RFC 3339 in UTC with exactly 6 fractional digits (pure). */
export function formatMicroTime(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-01-02T03:04:05.678Z
  const micros = String(Math.floor((((ms % 1000) + 1000) % 1000) * 1000) % 1000).padStart(3, '0');
  return iso.replace(/Z$/, `${micros}Z`);
}

/** The body of the Lease we create (pure). */
export function createLeaseBody(name: string, self: ElectorSelf, now: number): Record<string, unknown> {
  const t = formatMicroTime(now);
  return {
    metadata: { name },
    spec: {
      holderIdentity: self.identity,
      leaseDurationSeconds: self.leaseDurationSeconds,
      acquireTime: t,
      renewTime: t,
      leaseTransitions: 0,
    },
  };
}

/** Merge patch for a renewal (pure): only renewTime changes; guarded by the observed resourceVersion. */
export function renewPatch(now: number): Record<string, unknown> {
  return { spec: { renewTime: formatMicroTime(now) } };
}

/** Merge patch for a take-over (pure): the full spec with us as holder and transitions + 1. */
export function acquirePatch(self: ElectorSelf, transitions: number, now: number): Record<string, unknown> {
  const t = formatMicroTime(now);
  return {
    spec: {
      holderIdentity: self.identity,
      leaseDurationSeconds: self.leaseDurationSeconds,
      acquireTime: t,
      renewTime: t,
      leaseTransitions: transitions,
    },
  };
}

/**
 * Merge patch for a clean release (pure, docs/design/reference-behaviour.md#d-g-lease-released): holder emptied,
 * duration 1 s, renewTime now, transitions kept, so a standby (ours or client-go's) takes over at its next tick.
 */
export function releasePatch(now: number): Record<string, unknown> {
  return { spec: { holderIdentity: '', leaseDurationSeconds: 1, renewTime: formatMicroTime(now) } };
}

// ---------------------------------------------------------------------------------------------------------------
// Thin loop
// ---------------------------------------------------------------------------------------------------------------

export interface LeaderElectorOptions {
  readonly transport: Transport;
  readonly namespace: string;
  /** Lease name (the controller uses `agent-controller`). */
  readonly name: string;
  /** Unique per replica: POD_NAME plus a random suffix. */
  readonly identity: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly leaseDurationSeconds?: number;
  /** Tick period (default 5 000 ms). */
  readonly retryPeriodMs?: number;
  /** Step down after this many consecutive failed ticks while leading (default 2). */
  readonly maxConsecutiveFailures?: number;
  /** Step down when the last renewal is this old (default: lease duration − one tick, i.e. 10 s). */
  readonly renewDeadlineMs?: number;
  readonly onStartedLeading?: () => void;
  readonly onStoppedLeading?: () => void;
  /** After every tick: whether the API answered (readiness) and whether we lead (metrics). */
  readonly onTick?: (info: { readonly reachable: boolean; readonly leading: boolean }) => void;
}

export interface LeaderElector {
  /**
   * Campaigns and renews every tick until `signal` aborts, then resolves (without releasing: stop the work first,
   * then call {@link release}). Leadership lost is reported through onStoppedLeading; the loop keeps campaigning.
   */
  run(signal: AbortSignal): Promise<void>;
  /** True while we hold the lease and the last renewal is younger than the renew deadline (judged on the clock). */
  isLeader(): boolean;
  /**
   * The same judgement as {@link isLeader} without its side effect (stepping down): what every write asks, so a
   * replica paused past its renew deadline writes nothing when it wakes, and its elector steps down on its own tick.
   */
  holdsLease(): boolean;
  /**
   * Gives the lease up if we hold it (resourceVersion-guarded merge patch,
   * docs/design/reference-behaviour.md#d-g-lease-released) and reports stopped leading.
   * Call after `run` has resolved and the work has stopped. Never throws.
   */
  release(): Promise<Result<void, KubeError>>;
  /** Runs one tick now (tests and the loop use it). */
  tick(): Promise<void>;
}

/** An elector's settings, its options' defaults filled in. */
export interface ElectorSettings {
  readonly self: ElectorSelf;
  /** Tick period. */
  readonly retryMs: number;
  readonly limits: { readonly maxFailures: number; readonly renewDeadlineMs: number };
  /** Timeout of each Lease request: one tick, within [1 s, 10 s]. */
  readonly requestTimeoutMs: number;
}

/**
 * The settings of an elector (pure): the reference's defaults (15 s lease, 5 s tick, 2 failures); the renew
 * deadline defaults to the lease duration less one tick, so a leader steps down before a standby may take over.
 */
export function electorSettings(
  opts: Pick<
    LeaderElectorOptions,
    'identity' | 'leaseDurationSeconds' | 'retryPeriodMs' | 'maxConsecutiveFailures' | 'renewDeadlineMs'
  >,
): ElectorSettings {
  const self: ElectorSelf = {
    identity: opts.identity,
    leaseDurationSeconds: opts.leaseDurationSeconds ?? LEASE_DURATION_SECONDS,
  };
  const retryMs = opts.retryPeriodMs ?? RETRY_PERIOD_MS;
  return {
    self,
    retryMs,
    limits: {
      maxFailures: opts.maxConsecutiveFailures ?? MAX_CONSECUTIVE_RENEW_FAILURES,
      renewDeadlineMs: opts.renewDeadlineMs ?? self.leaseDurationSeconds * 1000 - retryMs,
    },
    requestTimeoutMs: Math.max(1000, Math.min(retryMs, 10_000)),
  };
}

/** Whether we lead with a renewal younger than the renew deadline at `now` (pure): what a write may rely on. */
export function leadsFreshly(state: LeadershipState, now: number, renewDeadlineMs: number): boolean {
  return state.leading && state.lastRenewedAt !== undefined && now - state.lastRenewedAt < renewDeadlineMs;
}

/** What a tick writes to the Lease for a decision to create, renew or acquire it (resourceVersion-guarded). */
function writeLease(
  opts: LeaderElectorOptions,
  settings: ElectorSettings,
  decision: Exclude<LeaderDecision, { kind: 'wait' }>,
  resourceVersion: string,
  now: number,
): Promise<Result<Lease, KubeError>> {
  const { self, requestTimeoutMs } = settings;
  const ref = { namespace: opts.namespace, name: opts.name };
  switch (decision.kind) {
    case 'create':
      return createObject(
        opts.transport,
        LEASES,
        opts.namespace,
        createLeaseBody(opts.name, self, now),
        LeaseSchema,
        { timeoutMs: requestTimeoutMs },
      );
    case 'renew':
      return mergePatch(opts.transport, LEASES, ref, renewPatch(now), LeaseSchema, {
        resourceVersion,
        timeoutMs: requestTimeoutMs,
      });
    case 'acquire':
      return mergePatch(
        opts.transport,
        LEASES,
        ref,
        acquirePatch(self, decision.transitions, now),
        LeaseSchema,
        {
          resourceVersion,
          timeoutMs: requestTimeoutMs,
        },
      );
  }
}

/** Creates an elector; nothing happens until `run` or `tick`. */
export function createLeaderElector(opts: LeaderElectorOptions): LeaderElector {
  const settings = electorSettings(opts);
  const { self, retryMs, limits, requestTimeoutMs } = settings;
  const log = opts.logger.with({ lease: `${opts.namespace}/${opts.name}`, identity: opts.identity });
  const ref = { namespace: opts.namespace, name: opts.name };
  let observed: LeaseObservation | undefined;
  let state: LeadershipState = INITIAL_LEADERSHIP;
  let ticking: Promise<void> | undefined;

  const setState = (next: LeadershipState): void => {
    const was = state.leading;
    state = next;
    if (!was && next.leading) {
      log.info('Started leading');
      opts.onStartedLeading?.();
    } else if (was && !next.leading) {
      log.warn('Stopped leading');
      opts.onStoppedLeading?.();
    }
  };

  const fromWrite = (r: Result<Lease, KubeError>, what: string): AttemptResult => {
    const now = opts.clock.now();
    if (r.ok) {
      observed = observeLease(observed, r.value, now);
      return 'won';
    }
    if (isConflict(r.error) || isAlreadyExists(r.error)) {
      log.info('Lost the lease race', { action: what });
      return 'conflict';
    }
    log.warn('Lease write failed', { action: what, error: describeKubeError(r.error) });
    return 'error';
  };

  const attempt = async (): Promise<{ result: AttemptResult; reachable: boolean }> => {
    const got = await getObject(opts.transport, LEASES, ref, LeaseSchema, { timeoutMs: requestTimeoutMs });
    if (!got.ok && !isNotFound(got.error)) {
      log.warn('Lease read failed', { error: describeKubeError(got.error) });
      return { result: 'error', reachable: false };
    }
    const now = opts.clock.now();
    observed = observeLease(observed, got.ok ? got.value : null, now);
    const decision = decideLeader(observed, self, now);
    if (decision.kind === 'wait') return { result: 'standby', reachable: true };
    if (decision.kind === 'acquire')
      log.info('Taking over the lease', { previousHolder: observed.holder, why: decision.why });
    const r = await writeLease(opts, settings, decision, observed.resourceVersion, now);
    return { result: fromWrite(r, decision.kind), reachable: true };
  };

  const tick = (): Promise<void> => {
    if (ticking) return ticking;
    ticking = (async () => {
      try {
        const sentAt = opts.clock.now();
        const { result, reachable } = await attempt();
        const next = afterAttempt(state, result, opts.clock.now(), limits);
        // A renewal counts from when it was sent, not from when its answer was handled: a replica frozen between the
        // API server's commit and this line must not believe its Lease fresher than it is.
        setState(result === 'won' && next.leading ? { ...next, lastRenewedAt: sentAt } : next);
        opts.onTick?.({ reachable, leading: state.leading });
      } finally {
        ticking = undefined;
      }
    })();
    return ticking;
  };

  return {
    async run(signal) {
      while (!signal.aborted) {
        await tick();
        if (!(await opts.clock.sleep(retryMs, signal))) break;
      }
      await ticking;
    },
    holdsLease: () => leadsFreshly(state, opts.clock.now(), limits.renewDeadlineMs),
    isLeader() {
      if (!state.leading) return false;
      if (leadsFreshly(state, opts.clock.now(), limits.renewDeadlineMs)) return true;
      setState({ ...state, leading: false });
      return false;
    },
    async release() {
      await ticking;
      const wasLeading = state.leading;
      setState({ ...state, leading: false });
      if (!wasLeading || !observed || observed.holder !== self.identity) return ok(undefined);
      const r = await mergePatch(opts.transport, LEASES, ref, releasePatch(opts.clock.now()), LeaseSchema, {
        resourceVersion: observed.resourceVersion,
        timeoutMs: requestTimeoutMs,
      });
      if (!r.ok) {
        log.warn('Lease release failed', { error: describeKubeError(r.error) });
        return err(r.error);
      }
      observed = observeLease(observed, r.value, opts.clock.now());
      log.info('Released the lease');
      return ok(undefined);
    },
    tick,
  };
}
