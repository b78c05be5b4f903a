// A run behind the model gateway (docs/design/gateway.md#the-runs-environment-with-the-gateway-on): its vendor key
// variables carry the run's gateway credential instead of a key, its base-URL variables name the gateway, and what
// the gateway may do for it (which key of agent-secrets per vendor, which models) is recorded as its grant. Pure.

import {
  type AgentDefinition,
  GATEWAY_VENDORS,
  type GatewayGrant,
  type GatewayVendor,
  VENDOR_BASE_URL_ENV,
  VENDOR_KEY_ENV,
} from '../api/index.ts';
import { type EnvVar, isReservedEnvName } from './env.ts';
import { safeName } from './names.ts';

/** The data key of a run's credential Secret. */
export const GATEWAY_CREDENTIAL_KEY = 'credential';

/** The Secret (owned by the Agent) holding a run's gateway credential. */
export function gatewayCredentialSecretName(agentName: string): string {
  return safeName(`agent-gateway-${agentName}`, 253);
}

/** Where the gateway is, for the runs of this controller. */
export interface GatewayTarget {
  /** The gateway's model-API URL, e.g. `http://agent-gateway.agent-system.svc:8080` (no trailing slash needed). */
  readonly url: string;
}

/**
 * Per vendor, the key of agent-secrets the recipe's `resources.secrets` would have given the run as that vendor's
 * key (the first variable of the vendor wins; reserved names never reach a run), and the model globs the policy
 * allows (absent: any).
 */
export function gatewayGrant(
  definition: AgentDefinition,
  models: readonly string[] | undefined,
  budget?: GatewayGrant['budget'],
): GatewayGrant {
  const keys: Partial<Record<GatewayVendor, string>> = {};
  for (const s of definition.spec.resources.secrets) {
    const vendor = VENDOR_KEY_ENV[s.name];
    if (vendor !== undefined && !isReservedEnvName(s.name) && keys[vendor] === undefined)
      keys[vendor] = s.ref;
  }
  return {
    keys,
    ...(models !== undefined ? { models: [...models] } : {}),
    ...(budget !== undefined ? { budget } : {}),
  };
}

/**
 * The run env behind the gateway: every vendor key variable reads the run's credential Secret instead of
 * agent-secrets, and each vendor's base-URL variable names the gateway (any value the recipe gave is replaced), so
 * no vendor key reaches the pod and no call bypasses the gateway by a setting the recipe controls.
 */
export function gatewayEnv(env: readonly EnvVar[], gateway: GatewayTarget, agentName: string): EnvVar[] {
  const base = gateway.url.replace(/\/+$/, '');
  const urlNames = new Set(GATEWAY_VENDORS.map((v) => VENDOR_BASE_URL_ENV[v].name));
  const secretName = gatewayCredentialSecretName(agentName);
  const out: EnvVar[] = [];
  for (const e of env) {
    if (urlNames.has(e.name)) continue;
    if (VENDOR_KEY_ENV[e.name] !== undefined) {
      out.push({
        name: e.name,
        valueFrom: { secretKeyRef: { name: secretName, key: GATEWAY_CREDENTIAL_KEY, optional: false } },
      });
      continue;
    }
    out.push(e);
  }
  // Before HOME and PATH, which stay last.
  const at = out.findIndex((e) => e.name === 'HOME');
  const urls = GATEWAY_VENDORS.map((v) => ({
    name: VENDOR_BASE_URL_ENV[v].name,
    value: `${base}${VENDOR_BASE_URL_ENV[v].path}`,
  }));
  out.splice(at === -1 ? out.length : at, 0, ...urls);
  return out;
}
