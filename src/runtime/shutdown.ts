import type { Logger } from '../shared/log.ts';

export interface ShutdownHandle {
  /** Aborts on the first SIGTERM/SIGINT. */
  readonly signal: AbortSignal;
  /** Removes the signal handlers. */
  dispose(): void;
}

/** A second signal this soon after the first is the same request delivered twice, not a request to force. */
export const DUPLICATE_SIGNAL_MS = 1000;

/**
 * Turns SIGTERM/SIGINT into an AbortSignal: the first signal starts a graceful shutdown (abort), a later one calls
 * `onForce` (the composition root decides how to exit; only cmd/ may call process.exit). A signal within
 * DUPLICATE_SIGNAL_MS of the first is ignored: one Ctrl-C often arrives twice, from the terminal to the whole
 * foreground process group and again from a launcher that passes signals on (`npm start`). Works on Node and Deno.
 */
export function installShutdown(opts: {
  readonly logger: Logger;
  readonly onForce: (signal: string) => void;
  readonly signals?: readonly NodeJS.Signals[];
  /** Monotonic milliseconds (default performance.now). */
  readonly now?: () => number;
}): ShutdownHandle {
  const ctl = new AbortController();
  const signals = opts.signals ?? ['SIGTERM', 'SIGINT'];
  const now = opts.now ?? (() => performance.now());
  let firstAt = 0;
  const handler = (sig: NodeJS.Signals): void => {
    if (!ctl.signal.aborted) {
      firstAt = now();
      opts.logger.info('Shutting down', { signal: sig });
      ctl.abort();
    } else if (now() - firstAt < DUPLICATE_SIGNAL_MS) {
      opts.logger.info('Already shutting down', { signal: sig });
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
