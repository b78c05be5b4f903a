// Container logs in the CRI file format (`<RFC3339Nano> <stream> <F|P> <content>` per line), written as
// a container produces output and rendered for the kubelet's /containerLogs endpoint.
import { appendFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

/** One CRI log record: a full line (F) or a partial one (P, no newline after it). */
export interface LogEntry {
  readonly time: string;
  readonly stream: 'stdout' | 'stderr';
  readonly partial: boolean;
  readonly content: string;
}

/** Longest content per record; longer lines are split into partial records, as containerd does. */
export const MAX_RECORD = 16 * 1024;

/** RFC 3339 with nanoseconds (milliseconds padded), as CRI log files and `timestamps=true` use. */
export function nanoTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000000Z');
}

/** Parses CRI log text into records; malformed lines are skipped. */
export function parseCriLog(text: string): LogEntry[] {
  const out: LogEntry[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\S+) (stdout|stderr) ([FP]) (.*)$/s.exec(line);
    if (!m) continue;
    out.push({
      time: m[1] ?? '',
      stream: m[2] as 'stdout' | 'stderr',
      partial: m[3] === 'P',
      content: m[4] ?? '',
    });
  }
  return out;
}

/** Options of `GET /containerLogs/...` the node implements. */
export interface LogQuery {
  readonly tailLines?: number;
  readonly limitBytes?: number;
  readonly timestamps?: boolean;
  /** Only records at or after this time (epoch ms). */
  readonly sinceMs?: number;
}

/**
 * Renders records as the kubelet returns them: full lines end with a newline, partial records are
 * joined with what follows; `timestamps` prefixes each line with its time; `tailLines` keeps the last N
 * lines; `limitBytes` cuts the output (possibly mid-line).
 */
export function renderLog(entries: readonly LogEntry[], query: LogQuery = {}): Buffer {
  let selected = entries;
  if (query.sinceMs !== undefined) {
    const since = query.sinceMs;
    selected = selected.filter((e) => Date.parse(e.time) >= since);
  }
  // Group records into logical lines: partial records followed by a full one (or the end).
  const lines: LogEntry[][] = [];
  let current: LogEntry[] = [];
  for (const e of selected) {
    current.push(e);
    if (!e.partial) {
      lines.push(current);
      current = [];
    }
  }
  if (current.length > 0) lines.push(current);
  const kept =
    query.tailLines !== undefined ? lines.slice(Math.max(0, lines.length - query.tailLines)) : lines;
  let text = '';
  for (const line of kept) {
    if (query.timestamps && line[0]) text += `${line[0].time} `;
    for (const e of line) text += e.partial ? e.content : `${e.content}\n`;
  }
  const bytes = Buffer.from(text, 'utf8');
  return query.limitBytes !== undefined && bytes.length > query.limitBytes
    ? bytes.subarray(0, query.limitBytes)
    : bytes;
}

/**
 * Appends a container's stdout and stderr to one CRI log file as the output arrives. `close()` writes
 * any unterminated trailing output as a partial record. Writes are synchronous so the file is always
 * complete when the process exit is reported.
 */
export class ContainerLogWriter {
  readonly #file: string;
  readonly #now: () => number;
  readonly #pending = { stdout: '', stderr: '' };

  constructor(file: string, now: () => number = Date.now) {
    this.#file = file;
    this.#now = now;
    appendFileSync(file, '');
  }

  get file(): string {
    return this.#file;
  }

  /** Copies a stream into the log until it ends. */
  attach(stream: Readable, name: 'stdout' | 'stderr'): void {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => this.write(name, chunk));
  }

  /** Records a chunk of output from `name`. */
  write(name: 'stdout' | 'stderr', chunk: string): void {
    let text = this.#pending[name] + chunk;
    let out = '';
    const time = nanoTime(this.#now());
    let nl = text.indexOf('\n');
    while (nl !== -1) {
      let line = text.slice(0, nl);
      while (line.length > MAX_RECORD) {
        out += `${time} ${name} P ${line.slice(0, MAX_RECORD)}\n`;
        line = line.slice(MAX_RECORD);
      }
      out += `${time} ${name} F ${line}\n`;
      text = text.slice(nl + 1);
      nl = text.indexOf('\n');
    }
    while (text.length > MAX_RECORD) {
      out += `${time} ${name} P ${text.slice(0, MAX_RECORD)}\n`;
      text = text.slice(MAX_RECORD);
    }
    this.#pending[name] = text;
    if (out !== '') appendFileSync(this.#file, out);
  }

  /** Flushes unterminated output of both streams as partial records. */
  close(): void {
    const time = nanoTime(this.#now());
    let out = '';
    for (const name of ['stdout', 'stderr'] as const) {
      if (this.#pending[name] !== '') out += `${time} ${name} P ${this.#pending[name]}\n`;
      this.#pending[name] = '';
    }
    if (out !== '') appendFileSync(this.#file, out);
  }
}

/** The last `maxLines` lines / `maxBytes` bytes of a log, for FallbackToLogsOnError termination messages. */
export function terminationMessageFromLog(
  entries: readonly LogEntry[],
  maxLines = 80,
  maxBytes = 2048,
): string {
  const text = renderLog(entries, { tailLines: maxLines }).toString('utf8');
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length > maxBytes ? bytes.subarray(bytes.length - maxBytes).toString('utf8') : text;
}

/**
 * The kubelet's answer to a log request for a container that has not started yet (validateContainerLogStatus):
 * the two image pull failures are spelled out, any other waiting reason is given as is.
 */
export function waitingToStartMessage(container: string, pod: string, reason: string | undefined): string {
  const detail =
    reason === 'ErrImagePull'
      ? "image can't be pulled"
      : reason === 'ImagePullBackOff'
        ? 'trying and failing to pull image'
        : (reason ?? 'ContainerCreating');
  return `container "${container}" in pod "${pod}" is waiting to start: ${detail}`;
}

/**
 * The log files a container left in `<podDir>/logs/<container>/<restartCount>.log`, oldest first, as a
 * kubelet finds them again after its restart (it keeps /var/log/pods). Empty when there are none.
 */
export function logFilesOnDisk(podDir: string, container: string): string[] {
  const dir = join(podDir, 'logs', container);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .map((n) => /^(\d+)\.log$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]))
    .map((m) => join(dir, m[0]));
}
