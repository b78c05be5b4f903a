import type { Logger } from '../../shared/log.ts';
import type { Env, EnvProblem } from './env.ts';
import { sourceFromEnv } from './envelope.ts';
import { createEventSink, type EventSink, type EventSinkOptions } from './event-sink.ts';
import { parseRetryConfig } from './retry.ts';
import { parseSinkConfig } from './sink-config.ts';

/**
 * The pod's event sinks as the run environment configures them: `AGENT_SINKS` + `AGENT_NOTIFY_URL`, the
 * `AGENT_SINK_RETRY_*` policy and the identity from `AGENT_NAME`/`STATION_NAME`/`TASK_ID`/`POD_NAME`/`POD_NAMESPACE`.
 * Unusable values are logged as warnings (`<tag> <problem>`) and replaced by their defaults; never throws.
 */
export function eventSinkFromEnv(
  env: Env,
  log: Logger,
  tag: string,
  overrides: Partial<Omit<EventSinkOptions, 'env' | 'log' | 'tag'>> = {},
): EventSink {
  const problems: EnvProblem[] = [];
  const sinks = parseSinkConfig(env, problems);
  const retry = parseRetryConfig(env, problems);
  for (const p of problems) log.warn(`${tag} ${p.message}`, { env: p.name });
  return createEventSink({ sinks, retry, source: sourceFromEnv(env), ...overrides, env, log, tag });
}
