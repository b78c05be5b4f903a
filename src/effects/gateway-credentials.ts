// The credentials of runs behind the model gateway (docs/design/gateway.md#run-identity): each run's is minted from
// its identity with the gateway key, a Secret of the controller's namespace that the controller creates once and the
// gateway only reads. The credential reaches the pod through a Secret owned by the Agent (secretKeyRef).

import { GATEWAY_KEY_FIELD, GATEWAY_KEY_SECRET } from '../api/index.ts';
import { GATEWAY_CREDENTIAL_KEY } from '../jobs/index.ts';
import { mintGatewayCredential, type RunIdentity } from '../shared/gateway-credential.ts';
import { type ControllerKeySpec, runOwnedSecret } from './realtime/tokens.ts';

/** The Secret (in the controller's namespace) and field holding the gateway key. */
export const GATEWAY_KEY: ControllerKeySpec = {
  secret: GATEWAY_KEY_SECRET,
  field: GATEWAY_KEY_FIELD,
  component: 'gateway',
};

/** Mints run credentials (the gateway verifies them with the same key). */
export interface GatewayCredentials {
  credentialFor(run: RunIdentity): string;
}

export function gatewayCredentials(key: Uint8Array): GatewayCredentials {
  return { credentialFor: (run) => mintGatewayCredential(key, run) };
}

/** The run's credential Secret, owned by its Agent. */
export function gatewayCredentialSecret(run: RunIdentity, secretName: string, credential: string) {
  return runOwnedSecret(run, secretName, 'gateway-credential', { [GATEWAY_CREDENTIAL_KEY]: credential });
}
