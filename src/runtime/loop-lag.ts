/**
 * Measures how late the event loop runs a timer: every `intervalMs` a timer is armed and the delay beyond its due
 * time is reported. A reconcile pass that never yields, a huge JSON parse or a synchronous file read all show up
 * here (and as slow `/healthz` answers). Works on Node and Deno; `stop()` clears the timer so nothing keeps the
 * process alive.
 */
export interface LoopLagProbe {
  /** Largest lag seen in the last `windowMs` (seconds). */
  maxSeconds(): number;
  stop(): void;
}

export function startLoopLagProbe(opts: {
  readonly observe: (lagSeconds: number) => void;
  readonly intervalMs?: number;
  readonly windowMs?: number;
  readonly now?: () => number;
}): LoopLagProbe {
  const interval = opts.intervalMs ?? 100;
  const window = opts.windowMs ?? 10_000;
  const now = opts.now ?? (() => performance.now());
  /** [time, lag ms] of recent samples, oldest first. */
  const recent: Array<readonly [number, number]> = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const arm = (): void => {
    const due = now() + interval;
    timer = setTimeout(() => {
      if (stopped) return;
      const t = now();
      const lag = Math.max(0, t - due);
      opts.observe(lag / 1000);
      recent.push([t, lag]);
      while (recent.length > 0 && (recent[0]?.[0] ?? t) < t - window) recent.shift();
      arm();
    }, interval);
  };
  arm();
  return {
    maxSeconds: () => recent.reduce((m, [, lag]) => Math.max(m, lag), 0) / 1000,
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}
