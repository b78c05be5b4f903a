// Handlers of the objects of realtime runs and servers: the prompt token, the API key, the server objects
// (the executor contract: src/reconcile/executor-contract.ts).
import {
  createObject,
  isNotFound,
  type KubeError,
  KubeObjectSchema,
  patchStatus,
  SECRETS,
} from '../../kube/index.ts';
import type { AgentRef } from '../../reconcile/index.ts';
import { err, ok, type Result } from '../../shared/result.ts';
import { promptTokenSecret } from '../realtime/tokens.ts';
import { AGENTS } from '../resources.ts';
import { apiKeySecret, deleteServerObject as deleteChild, newApiKey, writeServerObject } from '../server.ts';
import { type ExecuteDeps, FIELD_MANAGER, type Handler, settle, settleApi, writeOptions } from './deps.ts';

export const createPromptToken: Handler<'createPromptToken'> = async (action, deps) => {
  if (deps.promptTokens === undefined)
    return settle(action, 'notReady', { message: 'the realtime key is not loaded yet' });
  const { ref } = action;
  const body = promptTokenSecret(
    { namespace: ref.namespace, name: ref.name, uid: action.uid },
    action.secretName,
    deps.promptTokens.tokenFor(action.uid),
  );
  const r = await createObject(
    deps.transport,
    SECRETS,
    ref.namespace,
    body,
    KubeObjectSchema,
    writeOptions(deps),
  );
  return settleApi(action, r);
};

export const createServerApiKey: Handler<'createServerApiKey'> = async (action, deps) => {
  const { ref } = action;
  const opts = writeOptions(deps);
  const body = apiKeySecret(ref, action.secretName, newApiKey());
  const r = await createObject(deps.transport, SECRETS, ref.namespace, body, KubeObjectSchema, opts);
  if (!r.ok) {
    const outcome = settleApi(action, r);
    // Someone else's (or an earlier Agent's): never used. A uid recorded before (a rotation) is cleared, so the
    // next decision sees the name taken.
    if (outcome !== undefined || !action.recorded) return outcome;
    const cleared = await recordApiKeySecret(deps, ref, null, opts);
    if (!cleared.ok) return settleApi(action, cleared);
    deps.logger.warn('Server API-key Secret name taken by a Secret this controller did not create', {
      namespace: ref.namespace,
      secret: action.secretName,
    });
    return undefined;
  }
  const uid = r.value.metadata.uid;
  if (uid === undefined || uid === '')
    return settle(action, 'error', {
      error: { kind: 'decode', message: 'the created API-key Secret has no uid' },
    });
  deps.logger.info('Created server API-key Secret', { namespace: ref.namespace, secret: action.secretName });
  // Recorded on the Agent: only a Secret this controller created for it is ever used.
  const recorded = await recordApiKeySecret(deps, ref, uid, opts);
  return recorded.ok ? settle(action, 'ok') : settle(action, 'error', { error: recorded.error });
};

export const deleteServerObject: Handler<'deleteServerObject'> = async (action, deps) => {
  const { ref } = action;
  const r = await deleteChild(
    { transport: deps.transport, timeoutMs: deps.timeoutMs ?? 30_000 },
    action.resource,
    ref.namespace,
    action.name,
    action.uid,
  );
  if (r.ok)
    deps.logger.info('Deleted server object', {
      namespace: ref.namespace,
      resource: action.resource,
      name: action.name,
    });
  return settleApi(action, r);
};

export const applyServerObject: Handler<'applyServerObject'> = async (action, deps) => {
  const { manifest } = action.object;
  const w = await writeServerObject(
    { transport: deps.transport, timeoutMs: deps.timeoutMs ?? 30_000, fieldManager: FIELD_MANAGER },
    action.object,
    action.replace?.resourceVersion,
  );
  const where = { namespace: manifest.metadata.namespace, kind: manifest.kind, name: manifest.metadata.name };
  if (w.kind === 'written') {
    deps.logger.info(
      action.replace === undefined ? 'Created server object' : 'Replaced server object',
      where,
    );
    return settle(action, 'ok');
  }
  if (w.kind === 'error') return settleApi(action, { ok: false, error: w.error });
  // writeServerObject has classified the answer already; its message says which object and why.
  return w.kind === 'superseded'
    ? settle(action, 'conflict', { what: w.what })
    : settle(action, 'invalid', { message: w.message });
};

/**
 * Writes (or, with null, clears) `status.apiKeySecretUID` of a server's Agent: a merge patch of that one field, so
 * repeating it is harmless; tried up to three times (a key Secret created and not recorded would never be used).
 */
async function recordApiKeySecret(
  deps: ExecuteDeps,
  ref: AgentRef,
  uid: string | null,
  opts: { readonly timeoutMs?: number | undefined; readonly fieldManager: string },
): Promise<Result<void, KubeError>> {
  let last: KubeError | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    const r = await patchStatus(
      deps.transport,
      AGENTS,
      ref,
      { apiKeySecretUID: uid },
      KubeObjectSchema,
      opts,
    );
    if (r.ok) {
      deps.metrics.statusPatches.inc();
      deps.onAgentWritten?.(r.value);
      return ok(undefined);
    }
    last = r.error;
    if (isNotFound(r.error)) break;
  }
  return err(last ?? { kind: 'decode', message: 'the API-key Secret could not be recorded' });
}
