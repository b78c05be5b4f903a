// The spend ledger (issue 28 §4), the I/O half: the one write of the `recordSpend` action. The ConfigMap
// `agent-spend` of the namespace is read, changed by the pure `writeLedger` (src/reconcile/budget/ledger.ts), and
// created, or replaced at the resourceVersion read; a 409 reads it again (five tries). The controller is its one
// writer. A ledger that does not parse is started again (logged): a ledger that cannot be read must not hold Agents
// by their finalizer for good.

import * as v from 'valibot';
import { type Agent, ConfigMapSchema, parseSpendLedger, SPEND_CONFIGMAP, SPEND_KEY } from '../api/index.ts';
import {
  CONFIG_MAPS,
  createObject,
  getObject,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeError,
  type KubeObject,
  replaceObject,
  type Transport,
} from '../kube/index.ts';
import { EMPTY_LEDGER, sameLedger, writeLedger } from '../reconcile/budget/ledger.ts';
import { runItem } from '../reconcile/budget/spend.ts';
import type { SpendItem } from '../reconcile/budget/window.ts';
import type { Action, SpendObservation } from '../reconcile/index.ts';
import type { PriceTable } from '../reconcile/results/prices.ts';
import type { StoreReader } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';

/** Labels of the ledger ConfigMap. */
export const SPEND_LABELS = {
  'app.kubernetes.io/managed-by': 'agent-controller',
  'agents.re-cinq.com/spend': 'true',
};

const TRIES = 5;

export interface SpendIo {
  readonly transport: Transport;
  readonly logger: Logger;
  readonly timeoutMs?: number | undefined;
  readonly fieldManager?: string | undefined;
}

export async function recordSpend(
  action: Extract<Action, { kind: 'recordSpend' }>,
  io: SpendIo,
): Promise<{ ok: true } | { ok: false; error: KubeError }> {
  const ref = { namespace: action.namespace, name: SPEND_CONFIGMAP };
  let last: KubeError | undefined;
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const got = await getObject(io.transport, CONFIG_MAPS, ref, ConfigMapSchema, { timeoutMs: io.timeoutMs });
    if (!got.ok && !isNotFound(got.error)) return got;
    let ledger = EMPTY_LEDGER;
    if (got.ok) {
      const parsed = parseSpendLedger(got.value.data?.[SPEND_KEY] ?? '{"runs":{},"hours":{}}');
      if (parsed.ok) ledger = parsed.ledger;
      else
        io.logger.warn('The spend ledger is not readable; starting it again', {
          ...ref,
          error: parsed.message,
        });
    }
    const next = writeLedger(ledger, action, action.nowMs, action.hourMs);
    if (got.ok && sameLedger(ledger, next)) return { ok: true };
    const body = {
      metadata: {
        name: SPEND_CONFIGMAP,
        namespace: action.namespace,
        labels: SPEND_LABELS,
        ...(got.ok ? { resourceVersion: got.value.metadata.resourceVersion } : {}),
      },
      data: { [SPEND_KEY]: JSON.stringify(next) },
    };
    const opts = { timeoutMs: io.timeoutMs, fieldManager: io.fieldManager };
    const written = got.ok
      ? await replaceObject(io.transport, CONFIG_MAPS, ref, body, ConfigMapSchema, opts)
      : await createObject(io.transport, CONFIG_MAPS, action.namespace, body, ConfigMapSchema, opts);
    if (written.ok) {
      io.logger.debug('Recorded spend', { ...ref, set: action.set.length, folded: action.gone.length });
      return { ok: true };
    }
    // Changed since it was read (409 on either), or deleted meanwhile (404 on the replace): read it again.
    if (!isConflict(written.error) && !isAlreadyExists(written.error) && !isNotFound(written.error))
      return written;
    last = written.error;
  }
  return { ok: false, error: last ?? { kind: 'network', message: 'spend ledger not written' } };
}

/**
 * The spend of a namespace as the caches show it (issue 28 §4): its ledger ConfigMap (from the watch of
 * `agent-spend` ConfigMaps) and what each of its Agents has spent (their status, or the gateway's annotation when
 * that is ahead). Pure over the caches; read when decide asks (`needs: 'spend'`).
 */
export function observeSpend(
  namespace: string,
  agents: StoreReader<Agent>,
  ledgers: StoreReader<KubeObject> | undefined,
  prices: PriceTable,
): SpendObservation {
  const live = new Set<string>();
  const runs = new Map<string, SpendItem>();
  for (const agent of agents.list()) {
    if (agent.metadata.namespace !== namespace) continue;
    live.add(agent.metadata.uid);
    const item = runItem(agent, prices);
    if (item !== undefined) runs.set(agent.metadata.uid, item);
  }
  const raw = ledgers?.get(`${namespace}/${SPEND_CONFIGMAP}`);
  if (raw === undefined) return { ledger: EMPTY_LEDGER, live, runs };
  const cm = v.safeParse(ConfigMapSchema, raw);
  const text = cm.success ? cm.output.data?.[SPEND_KEY] : undefined;
  if (text === undefined) return { ledger: EMPTY_LEDGER, live, runs, unreadable: `${SPEND_KEY} missing` };
  const parsed = parseSpendLedger(text);
  return parsed.ok
    ? { ledger: parsed.ledger, live, runs }
    : { ledger: EMPTY_LEDGER, live, runs, unreadable: parsed.message };
}
