// The controller keys: every replica derives the same realtime prompt tokens, and mints the same gateway
// credentials, from keys kept in Secrets of the controller's namespace; loading is retried until a key can be read
// (realtime runs, and runs behind the gateway, wait meanwhile).

import { GATEWAY_KEY, type GatewayCredentials, gatewayCredentials } from '../effects/gateway-credentials.ts';
import {
  loadControllerKey,
  loadRealtimeKey,
  type PromptTokens,
  promptTokens as tokensFor,
} from '../effects/realtime/tokens.ts';
import { describeKubeError, type KubeError, type Transport } from '../kube/index.ts';
import type { Clock } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';
import type { Result } from '../shared/result.ts';

/** How often loading a key is retried. */
export const REALTIME_KEY_RETRY_MS = 5000;

interface LoadOptions<T> {
  readonly transport: Transport;
  readonly namespace: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  readonly onLoaded: (value: T) => void;
}

type KeyResult = Result<Uint8Array, KubeError | { readonly kind: 'malformed'; readonly message: string }>;

async function loadUntilRead<T>(
  opts: LoadOptions<T>,
  what: { readonly name: string; readonly waiting: string },
  load: () => Promise<KeyResult>,
  use: (key: Uint8Array) => T,
): Promise<void> {
  for (let attempt = 1; !opts.signal.aborted; attempt++) {
    const key = await load();
    if (key.ok) {
      opts.onLoaded(use(key.value));
      opts.logger.info(`Loaded the ${what.name}`, { namespace: opts.namespace });
      return;
    }
    const error = key.error.kind === 'malformed' ? key.error.message : describeKubeError(key.error);
    if (attempt === 1 || attempt % 12 === 0)
      opts.logger.error(`Loading the ${what.name} failed; ${what.waiting} wait`, { error });
    await opts.clock.sleep(REALTIME_KEY_RETRY_MS, opts.signal);
  }
}

export function loadPromptTokens(opts: LoadOptions<PromptTokens>): Promise<void> {
  return loadUntilRead(
    opts,
    { name: 'realtime key', waiting: 'realtime runs' },
    () => loadRealtimeKey(opts.transport, opts.namespace),
    tokensFor,
  );
}

export function loadGatewayCredentials(opts: LoadOptions<GatewayCredentials>): Promise<void> {
  return loadUntilRead(
    opts,
    { name: 'gateway key', waiting: 'runs behind the gateway' },
    () => loadControllerKey(opts.transport, opts.namespace, GATEWAY_KEY),
    gatewayCredentials,
  );
}

/** The keys this replica loads (each retried until read), and the readiness checks they add. */
export interface ControllerKeys {
  promptTokens(): PromptTokens | undefined;
  gatewayCredentials(): GatewayCredentials | undefined;
  readonly checks: readonly { readonly name: string; readonly ready: () => boolean }[];
}

/** Starts loading the keys the configuration needs: the realtime key, the gateway key. */
export function startLoadingKeys(
  opts: Omit<LoadOptions<never>, 'onLoaded'> & { readonly realtime: boolean; readonly gateway: boolean },
): ControllerKeys {
  let tokens: PromptTokens | undefined;
  let credentials: GatewayCredentials | undefined;
  const checks: { readonly name: string; readonly ready: () => boolean }[] = [];
  if (opts.realtime) {
    void loadPromptTokens({ ...opts, onLoaded: (t) => (tokens = t) });
    checks.push({ name: 'realtime-key', ready: () => tokens !== undefined });
  }
  if (opts.gateway) {
    void loadGatewayCredentials({ ...opts, onLoaded: (c) => (credentials = c) });
    checks.push({ name: 'gateway-key', ready: () => credentials !== undefined });
  }
  return { promptTokens: () => tokens, gatewayCredentials: () => credentials, checks };
}
