// Public surface of the benchmark's pure core (the entry point is controller.bench.ts, run by scripts/bench.mjs).
export { type BenchOptions, DEFAULT_AGENTS, DEFAULT_CONCURRENCY, parseBenchArgs, USAGE } from './args.ts';
export {
  agentName,
  BENCH_LABEL,
  BENCH_STATION,
  benchAgent,
  benchDefinition,
  benchStation,
} from './fixtures.ts';
export { type ProcPeaks, procPeaks, type RunPodRole, runPodRole } from './host-procs.ts';
export { runPool } from './http.ts';
export {
  type ControllerSample,
  controllerSample,
  resourceFigures,
  sumByLabel,
  sumSamples,
} from './prom-text.ts';
export { type RawFigures, type RawItemTimes, rawFigures } from './raw-figures.ts';
export { type BenchReport, formatReport } from './report.ts';
export { peakOverlap, percentile, perSecond, type Summary, summarize } from './stats.ts';
export { type AgentTimes, type ControllerRunFigures, controllerFigures, Timeline } from './timeline.ts';
export {
  agentRunMarks,
  firstRequests,
  formatTtftReport,
  parseTimedLog,
  type RunMarks,
  rawRunMarks,
  type TimedRun,
  type TtftReport,
  ttftRows,
} from './ttft.ts';
