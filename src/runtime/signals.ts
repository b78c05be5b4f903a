/**
 * An AbortSignal that fires when any of `signals` fires (AbortSignal.any is missing on Node 20.0–20.2).
 * Returns the signal and a function that detaches the listeners once the combined signal is no longer needed.
 */
export function anySignal(...signals: readonly (AbortSignal | undefined)[]): {
  signal: AbortSignal;
  dispose: () => void;
} {
  const ctl = new AbortController();
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  const onAbort = (): void => ctl.abort();
  for (const s of present) {
    if (s.aborted) {
      ctl.abort();
      break;
    }
    s.addEventListener('abort', onAbort, { once: true });
  }
  return {
    signal: ctl.signal,
    dispose: () => {
      for (const s of present) s.removeEventListener('abort', onAbort);
    },
  };
}
