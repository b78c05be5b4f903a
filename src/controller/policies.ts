// Whether AgentPolicies can be read, found out before the first term decides anything: a cluster without the CRD,
// or a controller without the grant, runs without them (a Station naming a policy then fails, never runs
// unchecked; a default policy cannot apply). Only then does the policy informer start.

import type { ReconcileDeps } from '../effects/reconcile-agent.ts';
import { AGENT_POLICIES } from '../effects/resources.ts';
import {
  describeKubeError,
  isForbidden,
  isNotFound,
  type KubeObject,
  resourcePath,
  type Transport,
} from '../kube/index.ts';
import type { Clock, Informer } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';

/**
 * Asks whether AgentPolicies can be listed: readable, unreadable (no CRD, no grant: logged as a warning unless
 * `warn` is false), or unknown (any other failure: ask again).
 */
export async function probePolicies(
  transport: Transport,
  log: Logger,
  warn = true,
): Promise<{ kind: 'readable' } | { kind: 'unreadable'; why: string } | { kind: 'unknown' }> {
  const r = await transport.request('GET', resourcePath(AGENT_POLICIES, {}), { query: { limit: 1 } });
  if (r.ok) return { kind: 'readable' };
  const why = isNotFound(r.error)
    ? 'the AgentPolicy CRD is not installed'
    : isForbidden(r.error)
      ? 'the controller may not list agentpolicies'
      : undefined;
  if (why === undefined) return { kind: 'unknown' };
  if (warn) {
    log.warn('AgentPolicies cannot be read: Stations that name one fail, default policies do not apply', {
      reason: why,
      error: describeKubeError(r.error),
    });
  }
  return { kind: 'unreadable', why };
}

/** Where the reconciles read AgentPolicies from, once known. */
export interface PolicySource {
  /** The policy cache, or why there is none. */
  current(): NonNullable<ReconcileDeps['policies']>;
  /** Probes once (later calls share the first): resolves when the answer is in and, if readable, the cache filled. */
  ensure(): Promise<void>;
  /** The policy informer's run, once started. */
  running(): Promise<void> | undefined;
}

export function createPolicySource(opts: {
  readonly transport: Transport;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  readonly informer: Informer<KubeObject>;
}): PolicySource {
  const { transport, clock, signal, informer } = opts;
  const log = opts.logger;
  let source: NonNullable<ReconcileDeps['policies']> = { unavailable: 'AgentPolicies are not read yet' };
  let checked: Promise<void> | undefined;
  let running: Promise<void> | undefined;
  /** Starts the policy informer and switches to its cache once it is filled. */
  const read = async (): Promise<void> => {
    running = informer.run(signal);
    await informer.ready;
    source = { store: informer.store };
  };
  /** Unreadable now (the grant or the CRD may come after the controller): asked again every minute. */
  const askAgain = async (): Promise<void> => {
    while (!signal.aborted) {
      await clock.sleep(60_000, signal);
      if (signal.aborted) return;
      const again = await probePolicies(transport, log, false);
      if (again.kind === 'readable') {
        log.info('AgentPolicies can be read now; enforcing them');
        await read();
        return;
      }
    }
  };
  const check = async (): Promise<void> => {
    // An answer that says nothing (timeout, 5xx) is asked again: the informer is only started on a yes, so a
    // missing CRD can never leave the first term waiting for a cache that will not fill.
    let probe = await probePolicies(transport, log);
    while (probe.kind === 'unknown' && !signal.aborted) {
      await clock.sleep(2000, signal);
      probe = await probePolicies(transport, log);
    }
    if (probe.kind === 'readable') {
      await read();
      return;
    }
    if (probe.kind === 'unreadable') source = { unavailable: probe.why };
    void askAgain();
  };
  return {
    current: () => source,
    ensure: () => {
      checked ??= check();
      return checked;
    },
    running: () => running,
  };
}
