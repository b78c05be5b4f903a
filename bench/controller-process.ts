import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import * as v from 'valibot';
import type { Runtime } from './args.ts';
import { type ControllerSample, controllerSample } from './prom-text.ts';

/** A controller process the benchmark started. */
export interface ControllerProcess {
  readonly pid: number;
  readonly port: number;
  readonly metricsUrl: string;
  readonly logFile: string;
  /** Log lines at warn / error (or fatal) level so far, and the first few error messages. */
  readonly log: { warnings: number; errors: number; firstErrors: string[] };
  /** The realtime prompt API's port, once it logged `Serving the realtime prompt API` (REALTIME_ENABLED only). */
  apiPort(): number | undefined;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process has exited. Safe to call twice. */
  stop(graceMs?: number): Promise<void>;
}

const LogLine = v.looseObject({
  level: v.optional(v.string()),
  msg: v.optional(v.string()),
  port: v.optional(v.number()),
  error: v.optional(v.unknown()),
});

export interface StartOptions {
  readonly runtime: Runtime;
  readonly repoRoot: string;
  readonly bundle: string;
  readonly kubeconfig: string;
  readonly namespace: string;
  readonly agentImage: string;
  readonly logFile: string;
  readonly startTimeoutMs?: number;
  /** Extra environment of the controller process. */
  readonly env?: Readonly<Record<string, string>>;
  /** Node only: profile the process (`--cpu-prof`), written into this folder when it exits. */
  readonly cpuProfDir?: string | undefined;
  /** Run this instead of the bundle (the informer baseline); it must log `Serving health and metrics` with its port. */
  readonly command?: readonly [string, readonly string[]];
}

function commandFor(o: StartOptions): [string, string[]] {
  if (o.command !== undefined) return [o.command[0], [...o.command[1]]];
  const args = [
    'controller',
    '--namespace',
    o.namespace,
    '--port',
    '0',
    '--bind-address',
    '127.0.0.1',
    '--install-crds',
  ];
  if (o.runtime === 'deno')
    return [join(o.repoRoot, 'node_modules/.bin/deno'), ['run', '-A', o.bundle, ...args]];
  const profile = o.cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${o.cpuProfDir}`];
  return [process.execPath, [...profile, o.bundle, ...args]];
}

function waitExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Starts `agent-controller controller` for one namespace with its HTTP port chosen by the OS, writes its log lines to
 * `logFile`, and resolves once it logs `Serving health and metrics` (rejecting if it exits first or takes longer
 * than `startTimeoutMs`, in which case it is killed).
 */
export async function startControllerProcess(o: StartOptions): Promise<ControllerProcess> {
  const [cmd, args] = commandFor(o);
  const child = spawn(cmd, args, {
    cwd: o.repoRoot,
    env: {
      ...process.env,
      KUBECONFIG: o.kubeconfig,
      AGENT_IMAGE: o.agentImage,
      LOG_LEVEL: 'info',
      DENO_NO_UPDATE_CHECK: '1',
      ...o.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = createWriteStream(o.logFile);
  const log = { warnings: 0, errors: 0, firstErrors: [] as string[] };
  let apiPort: number | undefined;
  let stopped: Promise<void> | undefined;
  const stop = (graceMs = 15_000): Promise<void> => {
    stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const exited = await Promise.race([
          waitExit(child).then(() => true),
          delay(graceMs).then(() => false),
        ]);
        if (!exited) {
          child.kill('SIGKILL');
          await waitExit(child);
        }
      }
      await new Promise<void>((resolve) => out.end(() => resolve()));
    })();
    return stopped;
  };

  const port = new Promise<number>((resolve, reject) => {
    const onLine = (line: string): void => {
      out.write(`${line}\n`);
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch {
        return;
      }
      const parsed = v.safeParse(LogLine, raw);
      if (!parsed.success) return;
      const { level, msg } = parsed.output;
      if (level === 'warn') log.warnings++;
      if (level === 'error' || level === 'fatal') {
        log.errors++;
        if (log.firstErrors.length < 3) log.firstErrors.push(line.slice(0, 300));
      }
      if (msg === 'Serving health and metrics' && parsed.output.port !== undefined)
        resolve(parsed.output.port);
      if (msg === 'Serving the realtime prompt API' && parsed.output.port !== undefined)
        apiPort = parsed.output.port;
    };
    if (child.stdout) createInterface({ input: child.stdout }).on('line', onLine);
    if (child.stderr) createInterface({ input: child.stderr }).on('line', onLine);
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(
        new Error(`controller exited before serving (code ${code}, signal ${signal}); log: ${o.logFile}`),
      ),
    );
  });
  const timeoutMs = o.startTimeoutMs ?? 60_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    const p = await Promise.race([
      port,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`controller did not serve within ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
    return {
      pid: child.pid ?? -1,
      port: p,
      metricsUrl: `http://127.0.0.1:${p}/metrics`,
      logFile: o.logFile,
      log,
      apiPort: () => apiPort,
      stop,
    };
  } catch (error) {
    await stop(2000);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Scrapes `/metrics` once; undefined when it cannot be read within `timeoutMs`. */
export async function scrape(metricsUrl: string, timeoutMs = 3000): Promise<ControllerSample | undefined> {
  try {
    const res = await fetch(metricsUrl, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return undefined;
    return controllerSample(await res.text());
  } catch {
    return undefined;
  }
}

/** A background sampler of the controller's `/metrics`. */
export interface Sampler {
  readonly samples: ControllerSample[];
  /** Takes one last sample and stops. */
  stop(): Promise<void>;
}

/** Samples `/metrics` every `intervalMs` (a sample in flight is never overlapped) until stopped. */
export function startSampler(metricsUrl: string, intervalMs = 1000): Sampler {
  const samples: ControllerSample[] = [];
  const ac = new AbortController();
  const loop = (async () => {
    while (!ac.signal.aborted) {
      const s = await scrape(metricsUrl);
      if (s) samples.push(s);
      await delay(intervalMs, undefined, { signal: ac.signal }).catch(() => undefined);
    }
  })();
  return {
    samples,
    async stop() {
      ac.abort();
      await loop;
      const s = await scrape(metricsUrl);
      if (s) samples.push(s);
    },
  };
}

/** Polls `/metrics` until the controller reports `controller_is_leader 1`; false after `timeoutMs`. */
export async function waitLeader(
  metricsUrl: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !signal.aborted) {
    const s = await scrape(metricsUrl);
    if (s?.isLeader === 1) return true;
    await delay(200, undefined, { signal }).catch(() => undefined);
  }
  return false;
}
