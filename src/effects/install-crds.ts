import * as v from 'valibot';
import { buildCrd, CRD_KINDS } from '../api/crd/index.ts';
import { decodeJson, describeKubeError, type KubeError, type Transport } from '../kube/index.ts';
import type { Clock } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { FIELD_MANAGER } from './execute.ts';

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

const EstablishedSchema = v.looseObject({
  status: v.optional(
    v.looseObject({
      conditions: v.optional(v.array(v.looseObject({ type: v.string(), status: v.string() })), []),
    }),
    {},
  ),
});

/**
 * Server-side applies the three CRDs this build defines (`--install-crds`, for local and edge runs) and waits until
 * each is Established. Needs permission to patch customresourcedefinitions (cluster-admin territory): the
 * deploy/ manifests install the CRDs instead and the in-cluster controller never uses this.
 */
export async function installCrds(
  transport: Transport,
  clock: Clock,
  logger: Logger,
  timeoutMs = 30_000,
): Promise<Result<void, string>> {
  for (const kind of CRD_KINDS) {
    const crd = buildCrd(kind);
    const name = crd.metadata.name;
    const r = await transport.request('PATCH', `${CRD_PATH}/${name}`, {
      body: JSON.stringify(crd),
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: FIELD_MANAGER, force: true },
    });
    if (!r.ok) return err(`installing CRD ${name} failed: ${describeKubeError(r.error)}`);
    const established = await waitEstablished(transport, clock, name, timeoutMs);
    if (!established.ok)
      return err(`CRD ${name} did not become Established: ${describeKubeError(established.error)}`);
    logger.info('Installed CRD', { crd: name });
  }
  return ok(undefined);
}

async function waitEstablished(
  transport: Transport,
  clock: Clock,
  name: string,
  timeoutMs: number,
): Promise<Result<void, KubeError>> {
  const deadline = clock.now() + timeoutMs;
  for (;;) {
    const r = await transport.request('GET', `${CRD_PATH}/${name}`);
    if (!r.ok) return r;
    const parsed = decodeJson(r.value.text, EstablishedSchema, `CRD ${name}`);
    const conditions = parsed.ok ? (parsed.value.status.conditions ?? []) : [];
    if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) return ok(undefined);
    if (clock.now() > deadline)
      return err({ kind: 'timeout', message: `waited ${timeoutMs} ms`, idle: false });
    await clock.sleep(200);
  }
}
