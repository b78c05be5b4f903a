// Code shared by the in-pod `init` and `supervisor` subcommands: lifecycle events, the {source, event} envelope,
// sink configuration and delivery with retry.

export {
  type Env,
  type EnvProblem,
  parseInteger,
  readInt,
  readOptionalPositiveInt,
  readString,
} from './env.ts';
export {
  DOUBLE_WRAP_MESSAGE,
  type EventSource,
  isEnvelope,
  type ParsedLine,
  parseLine,
  sourceFromEnv,
  withRequestId,
  wrapLine,
} from './envelope.ts';
export {
  createEventSink,
  DEFAULT_SINK_COOLDOWN_MS,
  type DeliverOptions,
  type EventSink,
  type EventSinkOptions,
  type SinkStats,
} from './event-sink.ts';
export { eventSinkFromEnv } from './from-env.ts';
export { type HeaderLines, headersFromSecretEnv, parseHeaderLines } from './headers.ts';
export {
  DEFAULT_REQUEST_TIMEOUT_MS,
  type FetchLike,
  type PostOutcome,
  type PostRequest,
  postOnce,
  postWithRetry,
  sleep,
} from './http.ts';
export {
  agentFailedBeforeStart,
  agentFinished,
  agentStarted,
  encodeEvent,
  type LifecycleDetails,
  type LifecycleEvent,
  type LifecyclePhase,
  type LifecycleStatus,
  lifecycleEvent,
} from './lifecycle.ts';
export { redactUrl, scrubUrl } from './redact.ts';
export { backoffAfter, DEFAULT_RETRY, parseRetryConfig, type RetryConfig } from './retry.ts';
export { isHttpUrl, parseSinkConfig, RESERVED_ENV_NAMES, type SinkConfig } from './sink-config.ts';
