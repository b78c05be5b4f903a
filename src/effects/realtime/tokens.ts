// The prompt tokens of realtime runs: one per run, derived from the Agent uid with a keyed hash (HMAC-SHA256) under
// a controller key kept in a Secret, so every replica derives the same token and a token opens no other run. The
// controller creates the key Secret once (get-or-create, the loser of a race re-reads); the per-run token reaches the
// pod through a Secret owned by the Agent (secretKeyRef), never as a literal in the Job.

import { createHmac, randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { API_VERSION, KIND_AGENT } from '../../api/index.ts';
import {
  createObject,
  getObject,
  isAlreadyExists,
  isNotFound,
  type KubeError,
  KubeObjectSchema,
  SECRETS,
  type Transport,
} from '../../kube/index.ts';
import { PROMPT_TOKEN_KEY } from '../../reconcile/realtime/plan.ts';
import { err, ok, type Result } from '../../shared/result.ts';

/** Name of the Secret (in the controller's namespace) holding the key every replica derives tokens with. */
export const REALTIME_KEY_SECRET = 'agent-controller-realtime';
/** Its data key. */
export const REALTIME_KEY_FIELD = 'hmac-key';
/** Bytes of a new key. */
const KEY_BYTES = 32;

const KeySecretSchema = v.object({
  data: v.optional(v.nullable(v.record(v.string(), v.string()))),
});

/** Derives the prompt tokens of realtime runs (the run pod checks the one it is given, in constant time). */
export interface PromptTokens {
  /** The token of the run whose Agent has `uid` (base64url, 43 characters). */
  tokenFor(uid: string): string;
}

/** The tokens for a key (the raw key bytes). */
export function promptTokens(key: Uint8Array): PromptTokens {
  return { tokenFor: (uid) => createHmac('sha256', key).update(`prompt:${uid}`).digest('base64url') };
}

/**
 * Reads the controller key from `namespace/agent-controller-realtime`, creating it (32 random bytes) when absent.
 * Two replicas starting together: one create wins, the other reads the winner's key.
 */
export function loadRealtimeKey(
  transport: Transport,
  namespace: string,
): Promise<Result<Uint8Array, KubeError | { readonly kind: 'malformed'; readonly message: string }>> {
  return loadControllerKey(transport, namespace, {
    secret: REALTIME_KEY_SECRET,
    field: REALTIME_KEY_FIELD,
    component: 'realtime',
  });
}

/** Where a controller key lives: a Secret of the controller's namespace, one field. */
export interface ControllerKeySpec {
  readonly secret: string;
  readonly field: string;
  /** Its `app.kubernetes.io/component` label. */
  readonly component: string;
}

/**
 * Reads a controller key (`spec.field` of Secret `namespace/spec.secret`), creating it (32 random bytes) when
 * absent. Two replicas starting together: one create wins, the other reads the winner's key.
 */
export async function loadControllerKey(
  transport: Transport,
  namespace: string,
  spec: ControllerKeySpec,
): Promise<Result<Uint8Array, KubeError | { readonly kind: 'malformed'; readonly message: string }>> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const got = await getObject(transport, SECRETS, { namespace, name: spec.secret }, KeySecretSchema);
    if (got.ok) {
      const b64 = got.value.data?.[spec.field];
      const bytes = b64 === undefined ? new Uint8Array() : Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      if (bytes.length < 16) {
        return err({
          kind: 'malformed',
          message: `Secret ${namespace}/${spec.secret} has no ${spec.field} of at least 16 bytes`,
        });
      }
      return ok(bytes);
    }
    if (!isNotFound(got.error)) return got;
    const created = await createObject(
      transport,
      SECRETS,
      namespace,
      {
        metadata: {
          name: spec.secret,
          labels: {
            'app.kubernetes.io/name': 'agent-controller',
            'app.kubernetes.io/component': spec.component,
          },
        },
        type: 'Opaque',
        data: { [spec.field]: btoa(String.fromCharCode(...randomBytes(KEY_BYTES))) },
      },
      KubeObjectSchema,
      { fieldManager: 'agent-controller' },
    );
    if (!created.ok && !isAlreadyExists(created.error)) return created;
  }
  return err({
    kind: 'malformed',
    message: `Secret ${namespace}/${spec.secret} could not be read or created`,
  });
}

/** The per-run Secret holding a run's token, owned by its Agent (garbage-collected with it). */
export function promptTokenSecret(
  agent: { readonly namespace: string; readonly name: string; readonly uid: string },
  secretName: string,
  token: string,
): Record<string, unknown> {
  return runOwnedSecret(agent, secretName, 'prompt-token', { [PROMPT_TOKEN_KEY]: token });
}

/** A Secret of a run, owned by its Agent (controller owner: garbage-collected with it), labelled by component. */
export function runOwnedSecret(
  agent: { readonly namespace: string; readonly name: string; readonly uid: string },
  secretName: string,
  component: string,
  stringData: Readonly<Record<string, string>>,
): Record<string, unknown> {
  return {
    metadata: {
      name: secretName,
      namespace: agent.namespace,
      labels: { 'agents.re-cinq.com/component': component },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: KIND_AGENT,
          name: agent.name,
          uid: agent.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    type: 'Opaque',
    stringData: { ...stringData },
  };
}
