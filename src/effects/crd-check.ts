// Whether the CRDs installed in the cluster carry every field this version reads and writes. A cluster upgraded
// from the reference controller may still have the reference's CRDs: runs work, but the API server silently prunes
// what they lack (status.conditions, observedGeneration, …), so `kubectl wait --for=condition=Complete` hangs.
// Checked at start and until they are fine; the answer shows in the log and in /readyz?verbose.

import { CRD_KINDS, crdDrift } from '../api/crd/index.ts';
import { RESOURCE_NAMES } from '../api/group.ts';
import { describeKubeError, type Transport } from '../kube/index.ts';
import type { Clock } from '../runtime/index.ts';
import type { ReadinessCheck } from '../server/index.ts';
import type { Logger } from '../shared/log.ts';

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** What the check found. */
export type CrdCheck =
  | { readonly kind: 'ok' }
  /** Field paths each CRD (by name) lacks; absent CRDs are listed as `(not installed)`. */
  | { readonly kind: 'lacking'; readonly missing: Readonly<Record<string, readonly string[]>> }
  /** The CRDs could not be read (no grant, API trouble). */
  | { readonly kind: 'unknown'; readonly reason: string };

/** Reads the four CRDs and compares each with the one this build generates. */
export async function checkInstalledCrds(transport: Transport): Promise<CrdCheck> {
  const missing: Record<string, readonly string[]> = {};
  for (const kind of CRD_KINDS) {
    const name = `${RESOURCE_NAMES[kind].plural}.agents.re-cinq.com`;
    const r = await transport.request('GET', `${CRD_PATH}/${name}`);
    if (!r.ok) {
      if (r.error.kind === 'api' && r.error.code === 404) {
        missing[name] = ['(not installed)'];
        continue;
      }
      return { kind: 'unknown', reason: `reading CRD ${name} failed: ${describeKubeError(r.error)}` };
    }
    let json: unknown;
    try {
      json = JSON.parse(r.value.text);
    } catch {
      return { kind: 'unknown', reason: `CRD ${name} is not JSON` };
    }
    const lacking = crdDrift(kind, json);
    if (lacking === undefined) return { kind: 'unknown', reason: `CRD ${name} does not read as a CRD` };
    if (lacking.length > 0) missing[name] = lacking;
  }
  return Object.keys(missing).length === 0 ? { kind: 'ok' } : { kind: 'lacking', missing };
}

/** One line for the log and /readyz: what is lacking, or why it is not known. */
export function describeCrdCheck(check: CrdCheck): string {
  switch (check.kind) {
    case 'ok':
      return 'the installed CRDs carry every field this version writes';
    case 'unknown':
      return `the installed CRDs could not be checked: ${check.reason}`;
    case 'lacking':
      return `installed CRDs lack fields this version writes (the API server drops them; apply deploy/crds): ${Object.entries(
        check.missing,
      )
        .map(([crd, fields]) => `${crd}: ${fields.join(', ')}`)
        .join('; ')}`;
  }
}

/** How often the installed CRDs are checked again while they lack fields (or could not be read). */
export const CRD_RECHECK_MS = 60_000;

/**
 * Checks the installed CRDs at start and, while they lack fields or cannot be read, every `recheckMs` until they are
 * fine or `signal` aborts: a log line when the answer changes, and the readiness check `crd-schema` (always ready:
 * runs still work) whose detail says what is lacking. One timer at a time, cancelled on abort.
 */
export function watchInstalledCrds(o: {
  readonly transport: Transport;
  readonly log: Logger;
  readonly signal: AbortSignal;
  readonly clock: Clock;
  readonly recheckMs?: number;
}): { readonly check: ReadinessCheck } {
  let last: CrdCheck | undefined;
  let cancelTimer: (() => void) | undefined;
  o.signal.addEventListener('abort', () => cancelTimer?.(), { once: true });
  const run = async (): Promise<void> => {
    cancelTimer = undefined;
    let now: CrdCheck;
    try {
      now = await checkInstalledCrds(o.transport);
    } catch (error) {
      now = { kind: 'unknown', reason: String(error) };
    }
    if (last === undefined || describeCrdCheck(last) !== describeCrdCheck(now)) {
      if (now.kind === 'lacking')
        o.log.warn('Installed CRDs lack fields this version writes', {
          missing: now.missing,
          advice: "apply this version's CRDs (deploy/crds) first: the API server drops the missing fields",
        });
      else if (now.kind === 'unknown')
        o.log.info('The installed CRDs could not be checked', { reason: now.reason });
      else o.log.info('The installed CRDs carry every field this version writes');
    }
    last = now;
    if (now.kind !== 'ok' && !o.signal.aborted)
      cancelTimer = o.clock.setTimer(o.recheckMs ?? CRD_RECHECK_MS, () => void run());
  };
  if (!o.signal.aborted) void run();
  return {
    check: {
      name: 'crd-schema',
      ready: () => true,
      detail: () => (last === undefined || last.kind === 'ok' ? undefined : describeCrdCheck(last)),
    },
  };
}
