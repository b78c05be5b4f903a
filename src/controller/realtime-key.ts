// The realtime prompt tokens: every replica derives the same run tokens from the key in a Secret of the
// controller's namespace; loading is retried until it can be read (realtime runs wait meanwhile).

import { loadRealtimeKey, type PromptTokens, promptTokens as tokensFor } from '../effects/realtime/tokens.ts';
import { describeKubeError, type Transport } from '../kube/index.ts';
import type { Clock } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';

/** How often loading the key is retried. */
export const REALTIME_KEY_RETRY_MS = 5000;

export async function loadPromptTokens(opts: {
  readonly transport: Transport;
  readonly namespace: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  readonly onLoaded: (tokens: PromptTokens) => void;
}): Promise<void> {
  for (let attempt = 1; !opts.signal.aborted; attempt++) {
    const key = await loadRealtimeKey(opts.transport, opts.namespace);
    if (key.ok) {
      opts.onLoaded(tokensFor(key.value));
      opts.logger.info('Loaded the realtime key', { namespace: opts.namespace });
      return;
    }
    const error = key.error.kind === 'malformed' ? key.error.message : describeKubeError(key.error);
    if (attempt === 1 || attempt % 12 === 0)
      opts.logger.error('Loading the realtime key failed; realtime runs wait', { error });
    await opts.clock.sleep(REALTIME_KEY_RETRY_MS, opts.signal);
  }
}
