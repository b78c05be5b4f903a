import type { Logger } from '../shared/log.ts';

export interface ShutdownHandle {
  /** Aborts on the first SIGTERM/SIGINT. */
  readonly signal: AbortSignal;
  /** Removes the signal handlers. */
  dispose(): void;
}

/**
 * Turns SIGTERM/SIGINT into an AbortSignal: the first signal starts a graceful shutdown (abort), a second one calls
 * `onForce` (the composition root decides how to exit; only cmd/ may call process.exit). Works on Node and Deno.
 */
export function installShutdown(opts: {
  readonly logger: Logger;
  readonly onForce: (signal: string) => void;
  readonly signals?: readonly NodeJS.Signals[];
}): ShutdownHandle {
  const ctl = new AbortController();
  const signals = opts.signals ?? ['SIGTERM', 'SIGINT'];
  const handler = (sig: NodeJS.Signals): void => {
    if (!ctl.signal.aborted) {
      opts.logger.info('Shutting down', { signal: sig });
      ctl.abort();
    } else {
      opts.logger.warn('Forced shutdown', { signal: sig });
      opts.onForce(sig);
    }
  };
  for (const s of signals) process.on(s, handler);
  return {
    signal: ctl.signal,
    dispose: () => {
      for (const s of signals) process.off(s, handler);
    },
  };
}
