// Admission holds a new run while a vendor key it would use is saturated at the model gateway (issue 28 §5,
// docs/design/gateway.md#rate-limits): rather than start pods that would only sleep in retries, a Pending run whose
// grant names a key the gateway reports saturated (the ConfigMap agent-gateway-saturation, read by the shell) waits
// with Ready=False/KeySaturated (patched and announced once per `until`), takes no run slot, keeps its place in its
// Station's queue, and is looked at again at the `until` time. It never fails for this. Pure.
import type { GatewayGrant } from '../../api/gateway.ts';
import { saturationEntry } from '../../shared/key-saturation.ts';
import type { Decision } from '../actions.ts';
import { conditionsSatisfied } from '../conditions.ts';
import { CONDITION_READY, REASON } from '../reasons.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { MAX_RECHECK_MS } from './dependencies.ts';
import { agentRef, event, statusPatch } from './status.ts';

/** The soonest a held run is looked at again. */
export const MIN_SATURATION_RECHECK_MS = 1000;

export interface SaturatedKey {
  readonly vendor: string;
  readonly key: string;
  /** ms */
  readonly until: number;
}

/** The saturated key among `keys` (vendor → key name) of `namespace` held longest; undefined when none is. */
export function saturatedKey(
  keys: Readonly<Record<string, string | undefined>>,
  namespace: string,
  saturation: ReadonlyMap<string, number>,
  now: number,
): SaturatedKey | undefined {
  let found: SaturatedKey | undefined;
  for (const [vendor, key] of Object.entries(keys).sort(([a], [b]) => a.localeCompare(b))) {
    if (key === undefined) continue;
    const until = saturation.get(saturationEntry(namespace, vendor, key));
    if (until !== undefined && until > now && (found === undefined || until > found.until))
      found = { vendor, key, until };
  }
  return found;
}

/** The wait of a Pending run (not holding a slot) whose `grant` names a saturated key; undefined: it may go on. */
export function keySaturationGate(
  s: CommonSnapshot,
  grant: GatewayGrant | undefined,
  now: Date,
): Decision | undefined {
  if (grant === undefined || s.keySaturation === undefined || s.queue.holdsSlot) return undefined;
  const { agent } = s;
  const held = saturatedKey(grant.keys, agent.metadata.namespace, s.keySaturation, now.getTime());
  if (held === undefined) return undefined;
  const until = new Date(held.until).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const message = `Waiting for the ${held.vendor} key ${held.key} of agent-secrets: saturated at the model gateway until ${until}`;
  const updates = [{ type: CONDITION_READY, status: 'False' as const, reason: REASON.keySaturated, message }];
  const stamped = updates.map((u) => ({ ...u, observedGeneration: agent.metadata.generation }));
  const requeueAfterMs = Math.min(
    MAX_RECHECK_MS,
    Math.max(MIN_SATURATION_RECHECK_MS, held.until - now.getTime()),
  );
  if (conditionsSatisfied(agent.status.conditions, stamped)) return { actions: [], requeueAfterMs };
  return {
    actions: [
      statusPatch(agent, { phase: 'Pending' }, updates, now),
      event(agentRef(agent), 'Normal', REASON.keySaturated, message),
    ],
    requeueAfterMs,
  };
}
