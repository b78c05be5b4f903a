// The in-pod supervisor: runs the agent CLI, streams its events, ends the run
// (docs/design/reference-behaviour.md#supervisor).
export {
  type ConversationSave,
  DEFAULT_EXIT_GRACE_MS,
  DEFAULT_SINK_FLUSH_MS,
  effectiveDeadline,
  parseSupervisorConfig,
  type SupervisorConfig,
} from './config.ts';
export { collectTree, saveConversation } from './conversation.ts';
export { LineSplitter, MAX_LINE_BYTES } from './line-splitter.ts';
export {
  DEADLINE_EXIT_CODE,
  exitCodeOf,
  initialOutcome,
  nextWakeAt,
  type OutcomeAction,
  type OutcomeConfig,
  type OutcomeEvent,
  type OutcomeState,
  step,
} from './outcome.ts';
export { BareOutput, type WritableLike, waitForFlush } from './output.ts';
export { DEFAULT_PROMPT_PORT, parseRealtimeConfig, runRealtimeSupervisor } from './realtime.ts';
export { createPromptApp, MAX_PROMPT_BODY_BYTES, type PromptPort, type TurnOutput } from './realtime-app.ts';
export { matches, parseSelectors, type Selector, selected } from './select.ts';
export { type HandledSignal, runSupervisor, type SupervisorIo } from './supervise.ts';
export { buildTar, type TarEntry } from './tar.ts';
export { type Terminal, terminalOf } from './terminal.ts';
export { collectFileEvents, type FileEvent, parseWatch, resolveWatchPath, type WatchEntry } from './watch.ts';
