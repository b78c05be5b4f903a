import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

/** The part of a run pod a host process plays, from its argv: the init container or the agent's supervisor. */
export type RunPodRole = 'init' | 'supervisor';

/**
 * Which run-pod process `argv` is: the bundle (`…/agent-controller.mjs`) run with `init` or `supervisor` as its
 * subcommand, directly (`node bundle init`) or through a runtime launcher (`deno run -A bundle init`). Anything else
 * (the controller, the benchmark, the agent CLI under the supervisor) is undefined.
 */
export function runPodRole(argv: readonly string[]): RunPodRole | undefined {
  const i = argv.findIndex((a) => a.endsWith('/agent-controller.mjs') || a === 'agent-controller.mjs');
  if (i < 0) return undefined;
  const sub = argv[i + 1];
  return sub === 'init' || sub === 'supervisor' ? sub : undefined;
}

/** Run-pod processes alive on this host right now (every user's pods, not only this benchmark's). */
export interface RunPodCount {
  readonly init: number;
  readonly supervisor: number;
}

/** Counts run-pod processes by reading /proc; undefined where /proc cannot be read (not Linux). */
export function countRunPodProcesses(): RunPodCount | undefined {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  let init = 0;
  let supervisor = 0;
  for (const pid of pids) {
    let raw: string;
    try {
      raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const role = runPodRole(raw.split('\0').filter((a) => a !== ''));
    if (role === 'init') init++;
    else if (role === 'supervisor') supervisor++;
  }
  return { init, supervisor };
}

/** Peak concurrent run-pod processes seen by a sampler. */
export interface ProcPeaks {
  readonly samples: number;
  readonly peakInit: number;
  readonly peakSupervisor: number;
  readonly peakTotal: number;
}

/** Folds counts into peaks. Pure. */
export function procPeaks(counts: readonly RunPodCount[]): ProcPeaks {
  return {
    samples: counts.length,
    peakInit: counts.reduce((m, c) => Math.max(m, c.init), 0),
    peakSupervisor: counts.reduce((m, c) => Math.max(m, c.supervisor), 0),
    peakTotal: counts.reduce((m, c) => Math.max(m, c.init + c.supervisor), 0),
  };
}

/** Samples run-pod process counts every `intervalMs` until `stop()`, which resolves with the peaks. */
export function startProcSampler(intervalMs = 1000): { stop(): Promise<ProcPeaks> } {
  const counts: RunPodCount[] = [];
  const ac = new AbortController();
  const loop = (async () => {
    while (!ac.signal.aborted) {
      const c = countRunPodProcesses();
      if (c) counts.push(c);
      await delay(intervalMs, undefined, { signal: ac.signal }).catch(() => undefined);
    }
  })();
  return {
    async stop() {
      ac.abort();
      await loop;
      return procPeaks(counts);
    },
  };
}
