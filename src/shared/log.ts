/** Log levels, lowest first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFields = Readonly<Record<string, unknown>>;

/**
 * A structured logger: each call writes one JSON line `{"ts","level","msg",...fields}`.
 * Messages follow the Kubernetes style: capital first letter, no final period, key/value context in fields.
 * Never pass secrets in fields: the logger does not redact.
 */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  with(fields: LogFields): Logger;
}

/** Creates a JSON-lines logger writing to `write` (default: stderr) at `level` and above. */
export function createLogger(
  level: LogLevel = 'info',
  write: (line: string) => void = (line) => void process.stderr.write(line),
  base: LogFields = {},
  now: () => Date = () => new Date(),
): Logger {
  const min = LOG_LEVELS.indexOf(level);
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields): void => {
    if (LOG_LEVELS.indexOf(lvl) < min) return;
    const record = { ts: now().toISOString(), level: lvl, msg, ...base, ...fields };
    write(`${JSON.stringify(record, errorReplacer)}\n`);
  };
  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    with: (fields) => createLogger(level, write, { ...base, ...fields }, now),
  };
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}

/** Parses a log level name; undefined for anything else. */
export function parseLogLevel(value: string | undefined): LogLevel | undefined {
  return LOG_LEVELS.find((l) => l === value);
}
