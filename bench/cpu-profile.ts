/**
 * Reads a V8 CPU profile (`node --cpu-prof`, the `.cpuprofile` JSON) and says where the time went: idle, garbage
 * collection, the program, and the functions with the most self time. Pure apart from `readCpuProfile`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as v from 'valibot';

const CallFrameSchema = v.object({
  functionName: v.string(),
  url: v.string(),
  lineNumber: v.number(),
});

const CpuProfileSchema = v.object({
  nodes: v.array(v.object({ id: v.number(), callFrame: CallFrameSchema })),
  startTime: v.number(),
  endTime: v.number(),
  samples: v.array(v.number()),
  timeDeltas: v.array(v.number()),
});
export type CpuProfile = v.InferOutput<typeof CpuProfileSchema>;

export interface HotFunction {
  /** `name (file:line)`, line 1-based. */
  readonly where: string;
  readonly selfMs: number;
  /** Share of the non-idle time. */
  readonly share: number;
}

export interface ProfileSummary {
  readonly wallMs: number;
  readonly idleMs: number;
  readonly gcMs: number;
  /** Sampled time neither idle nor GC: the program, the runtime and native code it called. */
  readonly busyMs: number;
  readonly top: readonly HotFunction[];
}

/** Parses a `.cpuprofile` document; a clear error when it is not one. */
export function parseCpuProfile(u: unknown): CpuProfile {
  const r = v.safeParse(CpuProfileSchema, u);
  if (!r.success) throw new Error(`not a V8 CPU profile: ${v.summarize(r.issues).split('\n')[0]}`);
  return r.output;
}

/** Self time per function (samples × their time deltas), the `top` heaviest of them, and idle / GC totals. */
export function summarizeCpuProfile(profile: CpuProfile, top = 15): ProfileSummary {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, number>();
  let idleUs = 0;
  let gcUs = 0;
  let sampledUs = 0;
  profile.samples.forEach((id, i) => {
    // The delta at i + 1 is how long the sample at i lasted (the first delta is from the profile's start).
    const us = Math.max(0, profile.timeDeltas[i + 1] ?? 0);
    sampledUs += us;
    const f = frames.get(id);
    const name = f?.functionName ?? '(unknown)';
    if (name === '(idle)') {
      idleUs += us;
      return;
    }
    if (name === '(garbage collector)') gcUs += us;
    const where =
      f === undefined || f.url === ''
        ? name
        : `${name || '(anonymous)'} (${basename(f.url)}:${f.lineNumber + 1})`;
    self.set(where, (self.get(where) ?? 0) + us);
  });
  const busyUs = sampledUs - idleUs;
  const hot = [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([where, us]) => ({ where, selfMs: us / 1000, share: busyUs > 0 ? us / busyUs : 0 }));
  return {
    wallMs: (profile.endTime - profile.startTime) / 1000,
    idleMs: idleUs / 1000,
    gcMs: gcUs / 1000,
    busyMs: (busyUs - gcUs) / 1000,
    top: hot,
  };
}

/** The summary as report lines. */
export function formatProfileSummary(s: ProfileSummary): string[] {
  const pct = (ms: number): string => (s.wallMs > 0 ? `${((ms / s.wallMs) * 100).toFixed(1)}%` : '–');
  return [
    `CPU profile: ${(s.wallMs / 1000).toFixed(1)} s wall; busy ${(s.busyMs / 1000).toFixed(1)} s (${pct(s.busyMs)}), ` +
      `GC ${(s.gcMs / 1000).toFixed(1)} s (${pct(s.gcMs)}), idle ${(s.idleMs / 1000).toFixed(1)} s (${pct(s.idleMs)})`,
    'self time (share of non-idle):',
    ...s.top.map(
      (f) => `  ${f.selfMs.toFixed(0).padStart(7)} ms ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.where}`,
    ),
  ];
}

/** The `.cpuprofile` files in `dir` written at or after `sinceMs`, oldest first, parsed, with their paths. */
export function readCpuProfiles(dir: string, sinceMs = 0): { path: string; profile: CpuProfile }[] {
  const found: { path: string; at: number }[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.cpuprofile')) continue;
    const path = join(dir, name);
    const at = statSync(path).mtimeMs;
    if (at >= sinceMs) found.push({ path, at });
  }
  return found
    .sort((a, b) => a.at - b.at)
    .map(({ path }) => ({ path, profile: parseCpuProfile(JSON.parse(readFileSync(path, 'utf8'))) }));
}
