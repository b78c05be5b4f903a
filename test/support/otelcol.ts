// A real OpenTelemetry Collector for tests: the minimal `otelcol` that scripts/build-otelcol builds (and caches),
// receiving OTLP/HTTP on a free 127.0.0.1 port and writing every batch it gets as one JSON line to a file. Tests
// point an exporter at `endpoint` and read back what arrived with `readSpans()`.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pollUntil } from './poll.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** One span as the collector wrote it (OTLP/JSON field names), with where it came from. */
export interface CollectedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly name: string;
  /** The span's attributes, flattened to plain values (`{"k": "v"}`); the OTLP list stays in `raw.attributes`. */
  readonly attrs: Record<string, unknown>;
  /** The resource's attributes, flattened the same way (e.g. `resource['service.name']`). */
  readonly resource: Record<string, unknown>;
  /** The instrumentation scope's name ('' when absent). */
  readonly scope: string;
  /** The span object exactly as written (parentSpanId, kind, times, status, events...). */
  readonly raw: Record<string, unknown>;
}

export interface OtelCollector {
  /** Base URL of the OTLP/HTTP receiver, e.g. `http://127.0.0.1:4318` (traces go to `${endpoint}/v1/traces`). */
  readonly endpoint: string;
  /** The JSONL file the file exporter writes (one ExportTraceServiceRequest per line). */
  readonly spansFile: string;
  /** The collector's stdout and stderr. */
  readonly logFile: string;
  /** Every span written so far, in file order. The exporter flushes every 100 ms: poll for what you expect. */
  readSpans(): Promise<CollectedSpan[]>;
  /** Stops the collector (SIGTERM, which flushes the file; SIGKILL after 10 s). Safe to call twice. */
  stop(): Promise<void>;
}

/** Builds (or reuses) the test collector and returns the path of its binary. Needs Go on PATH. */
export function otelcolBinary(): string {
  const r = spawnSync('bash', [join(ROOT, 'scripts', 'build-otelcol')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`scripts/build-otelcol failed (exit ${r.status ?? r.signal})`);
  const bin = r.stdout.trim().split('\n').at(-1);
  if (!bin) throw new Error('scripts/build-otelcol printed no binary path');
  return bin;
}

/** A loopback port that was free a moment ago (the OS picks it; the listener is closed again). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const addr = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (addr === null || typeof addr === 'string') throw new Error('could not pick a free port');
  return addr.port;
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function logTail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '(no log)';
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The plain value of an OTLP/JSON AnyValue (`{"stringValue": "x"}` is 'x'; int64s stay strings, as sent). */
function anyValue(value: unknown): unknown {
  if (!isObject(value)) return undefined;
  if ('stringValue' in value) return value.stringValue;
  if ('boolValue' in value) return value.boolValue;
  if ('intValue' in value) return value.intValue;
  if ('doubleValue' in value) return value.doubleValue;
  if ('bytesValue' in value) return value.bytesValue;
  if (isObject(value.arrayValue)) return list(value.arrayValue.values).map(anyValue);
  if (isObject(value.kvlistValue)) return attributes(value.kvlistValue.values);
  return undefined;
}

/** An OTLP/JSON attribute list as a plain object. */
function attributes(kvs: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list(kvs)) {
    if (isObject(kv) && typeof kv.key === 'string') out[kv.key] = anyValue(kv.value);
  }
  return out;
}

/** Flattens the file exporter's JSONL (resourceSpans[].scopeSpans[].spans[]) into spans. */
export function parseSpansJsonl(text: string): CollectedSpan[] {
  const spans: CollectedSpan[] = [];
  // Only complete lines: the last one may still be being written.
  const lines = text.split('\n').slice(0, -1);
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let batch: unknown;
    try {
      batch = JSON.parse(line);
    } catch {
      throw new Error(`spans file line ${index + 1} is not JSON: ${line.slice(0, 200)}`);
    }
    if (!isObject(batch)) return;
    for (const rs of list(batch.resourceSpans)) {
      if (!isObject(rs)) continue;
      const resource = attributes(isObject(rs.resource) ? rs.resource.attributes : undefined);
      for (const ss of list(rs.scopeSpans)) {
        if (!isObject(ss)) continue;
        const scope = isObject(ss.scope) && typeof ss.scope.name === 'string' ? ss.scope.name : '';
        for (const span of list(ss.spans)) {
          if (!isObject(span)) continue;
          spans.push({
            traceId: typeof span.traceId === 'string' ? span.traceId : '',
            spanId: typeof span.spanId === 'string' ? span.spanId : '',
            name: typeof span.name === 'string' ? span.name : '',
            attrs: attributes(span.attributes),
            resource,
            scope,
            raw: span,
          });
        }
      }
    }
  });
  return spans;
}

/**
 * Starts a collector whose config, spans file and log live in `dir` (which must exist). Builds the binary first
 * when it is not cached yet (minutes, once per machine and Go version). `stop()` it at the end of the test.
 */
export async function startOtelCollector(dir: string): Promise<OtelCollector> {
  const bin = otelcolBinary();
  const port = await freePort();
  const spansFile = join(dir, 'spans.jsonl');
  const configFile = join(dir, 'otelcol.yaml');
  const logFile = join(dir, 'otelcol.log');
  // JSON is YAML, and needs no quoting rules for the paths.
  const config = {
    receivers: { otlp: { protocols: { http: { endpoint: `127.0.0.1:${port}` } } } },
    exporters: { file: { path: spansFile, flush_interval: '100ms' } },
    service: {
      // The collector's own metrics would listen on a fixed port (8888): off.
      telemetry: { metrics: { level: 'none' } },
      pipelines: { traces: { receivers: ['otlp'], exporters: ['file'] } },
    },
  };
  writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`);

  const log = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(bin, ['--config', configFile], { cwd: dir, stdio: ['ignore', log, log] });
  } finally {
    closeSync(log);
  }
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', () => {
      exited = true;
      resolve();
    });
    child.once('error', () => {
      exited = true;
      resolve();
    });
  });
  // A test process that dies without stop() must not leave the collector behind.
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);

  const stop = async (): Promise<void> => {
    process.off('exit', killOnExit);
    if (exited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exit;
    clearTimeout(timer);
  };

  let failure: string | undefined;
  try {
    const state = await pollUntil(
      async (observe) => {
        if (exited) return 'exited';
        observe(`port ${port} not accepting yet`);
        return (await accepts(port)) ? 'listening' : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50, description: `otelcol to listen on 127.0.0.1:${port}` },
    );
    if (state === 'exited') failure = `otelcol exited early (${child.exitCode ?? child.signalCode})`;
  } catch (error) {
    failure = error instanceof Error ? error.message : String(error);
  }
  if (failure !== undefined) {
    await stop();
    throw new Error(`${failure}\n--- ${logFile}\n${logTail(logFile)}`);
  }

  return {
    endpoint: `http://127.0.0.1:${port}`,
    spansFile,
    logFile,
    async readSpans() {
      let text: string;
      try {
        text = await readFile(spansFile, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
      return parseSpansJsonl(text);
    },
    stop,
  };
}
