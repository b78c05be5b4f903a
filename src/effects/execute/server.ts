// Handlers of the objects of realtime runs and servers: the prompt token, the gateway credential, the API key, the
// server objects (the executor contract: src/reconcile/executor-contract.ts).
import { createObject, KubeObjectSchema, SECRETS } from '../../kube/index.ts';
import { gatewayCredentialSecret } from '../gateway-credentials.ts';
import { promptTokenSecret } from '../realtime/tokens.ts';
import { apiKeySecret, deleteServerObject as deleteChild, newApiKey, writeServerObject } from '../server.ts';
import { FIELD_MANAGER, type Handler, settle, settleApi, writeOptions } from './deps.ts';

export const createPromptToken: Handler<'createPromptToken'> = async (action, deps) => {
  if (deps.promptTokens === undefined)
    return settle(action, 'notReady', { message: 'the realtime key is not loaded yet' });
  const { ref } = action;
  const body = promptTokenSecret(
    { namespace: ref.namespace, name: ref.name, uid: action.uid },
    action.secretName,
    deps.promptTokens.tokenFor(action.uid),
  );
  return createRunSecret(action, deps, body);
};

export const createGatewayCredential: Handler<'createGatewayCredential'> = async (action, deps) => {
  if (deps.gatewayCredentials === undefined)
    return settle(action, 'notReady', { message: 'the gateway key is not loaded yet' });
  const { ref } = action;
  const run = { namespace: ref.namespace, name: ref.name, uid: action.uid };
  const body = gatewayCredentialSecret(run, action.secretName, deps.gatewayCredentials.credentialFor(run));
  return createRunSecret(action, deps, body);
};

/** Creates a run's own Secret (owned by its Agent) in its namespace; an existing one is kept (the contract). */
async function createRunSecret(
  action: Parameters<Handler<'createPromptToken' | 'createGatewayCredential'>>[0],
  deps: Parameters<Handler<'createPromptToken'>>[1],
  body: Record<string, unknown>,
) {
  const r = await createObject(
    deps.transport,
    SECRETS,
    action.ref.namespace,
    body,
    KubeObjectSchema,
    writeOptions(deps),
  );
  return settleApi(action, r);
}

export const createServerApiKey: Handler<'createServerApiKey'> = async (action, deps) => {
  const { ref } = action;
  const body = apiKeySecret(ref, action.secretName, newApiKey());
  const r = await createObject(
    deps.transport,
    SECRETS,
    ref.namespace,
    body,
    KubeObjectSchema,
    writeOptions(deps),
  );
  if (!r.ok) {
    const outcome = settleApi(action, r);
    // Someone else's (or an earlier Agent's): never used. A uid recorded before (a rotation) is cleared by the next
    // decision, which reads what the create met.
    if (outcome === undefined && action.recorded) {
      deps.serverKeys?.set(ref.uid, { kind: 'taken' });
      deps.logger.warn('Server API-key Secret name taken by a Secret this controller did not create', {
        namespace: ref.namespace,
        secret: action.secretName,
      });
    }
    return outcome;
  }
  const uid = r.value.metadata.uid;
  if (uid === undefined || uid === '')
    return settle(action, 'error', {
      error: { kind: 'decode', message: 'the created API-key Secret has no uid' },
    });
  deps.logger.info('Created server API-key Secret', { namespace: ref.namespace, secret: action.secretName });
  // Recorded on the Agent by the next decision: only a Secret this controller created for it is ever used.
  deps.serverKeys?.set(ref.uid, { kind: 'created', uid });
  return settle(action, 'ok');
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
