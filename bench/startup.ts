// `node --import tsx bench/startup.ts --kubeconfig PATH [--runs N] [--runtime node|deno] [--deadline SECONDS]
// [--cpu-prof DIR]`: start → `/readyz` 200 of the controller bundle on an empty namespace (issue 15 §5), N runs, with
// the LIST round trip of the same moment as its floor. Each run starts a fresh process (CRDs already installed, so no
// apply at start) and polls `/readyz` every 2 ms; the process is sent SIGTERM once ready (SIGKILL if it has not
// exited 10 s later). A run not ready within the deadline (30 s by default), or whose process exits first, is
// failed: its process is killed, it is left out of the figures, and the runs go on; the failures are counted and
// printed. With --cpu-prof (node only) the first run's process profiles itself into a fresh sub-folder of DIR
// (`startup-…`, made for that run, so no older profile is read), and the functions with the most self time are
// printed: the profile covers the process's whole life, its start, the wait for ready and its shutdown after the
// SIGTERM, not the time before ready alone. Prints figures; asserts nothing. The API server must be reachable and
// the CRDs installed (`scripts/testbed up` does both).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeClient, loadKubeconfig } from '../test/support/index.ts';
import { summarize } from './stats.ts';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    runs: { type: 'string', default: '7' },
    runtime: { type: 'string', default: 'node' },
    bundle: { type: 'string', default: 'dist/agent-controller.mjs' },
    deadline: { type: 'string', default: '30' },
    'cpu-prof': { type: 'string' },
  },
});
const kubeconfig = values.kubeconfig ?? process.env.KUBECONFIG;
if (kubeconfig === undefined) throw new Error('pass --kubeconfig PATH (or set KUBECONFIG)');
const runs = Number(values.runs);
const runtime = values.runtime === 'deno' ? 'deno' : 'node';
const deadlineMs = Number(values.deadline) * 1000;
if (!(deadlineMs > 0))
  throw new Error(`--deadline must be a positive number of seconds, got ${values.deadline}`);
const profRoot = values['cpu-prof'];
/** After SIGTERM, how long a process may take to exit before it is sent SIGKILL. */
const STOP_GRACE_MS = 10_000;
const now = (): number => performance.now();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves when `child` has exited (or could not be started at all), with how. */
function exitOf(child: ChildProcess): Promise<string> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve(signal !== null ? `signal ${signal}` : `code ${code}`));
    child.once('error', (error) => resolve(`error ${error.message}`));
  });
}

/** Sends `signal`, then SIGKILL if the process has not exited within STOP_GRACE_MS; resolves once it has exited. */
async function stop(child: ChildProcess, exit: Promise<string>, signal: NodeJS.Signals): Promise<void> {
  child.kill(signal);
  const late = await Promise.race([exit.then(() => false), sleep(STOP_GRACE_MS).then(() => true)]);
  if (late) {
    child.kill('SIGKILL');
    await exit;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a !== null ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

function readyzOk(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', timeout: 1000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

const access = loadKubeconfig(kubeconfig);
const client = new KubeClient(access);
const namespace = `bench-startup-${Date.now().toString(36)}`;
await client.create('/api/v1/namespaces', {
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name: namespace },
});
const ready: number[] = [];
const lists: number[] = [];
const failures: string[] = [];
/** The folder the profiled run wrote its profile into. */
let profDir: string | undefined;
try {
  for (let k = 0; k < runs; k++) {
    const t = now();
    await client.request('GET', `/apis/agents.re-cinq.com/v1alpha1/namespaces/${namespace}/agents`, {
      query: { limit: '500' },
    });
    lists.push(now() - t);
    const port = await freePort();
    const args = [
      'controller',
      '--namespace',
      namespace,
      '--port',
      String(port),
      '--bind-address',
      '127.0.0.1',
    ];
    // A folder of its own for the profiled run: only the profile this run writes is ever read.
    if (profRoot !== undefined && runtime === 'node' && k === 0) {
      mkdirSync(profRoot, { recursive: true });
      profDir = mkdtempSync(join(profRoot, 'startup-'));
    }
    const [cmd, argv] =
      runtime === 'deno'
        ? ['node_modules/.bin/deno', ['run', '-A', values.bundle, ...args]]
        : [
            process.execPath,
            [
              ...(profDir !== undefined && k === 0 ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
              values.bundle,
              ...args,
            ],
          ];
    const started = now();
    const child = spawn(cmd, argv, {
      env: { ...process.env, KUBECONFIG: kubeconfig, LOG_LEVEL: 'warn', DENO_NO_UPDATE_CHECK: '1' },
      stdio: 'ignore',
    });
    let exited: string | undefined;
    const exit = exitOf(child).then((how) => {
      exited = how;
      return how;
    });
    const deadline = started + deadlineMs;
    let isReady = false;
    while (exited === undefined && now() < deadline) {
      if (await readyzOk(port)) {
        isReady = true;
        break;
      }
      await sleep(2);
    }
    if (isReady) {
      ready.push(now() - started);
      await stop(child, exit, 'SIGTERM');
    } else if (exited !== undefined) {
      failures.push(`run ${k + 1}: the process ended (${exited}) before /readyz was 200`);
    } else {
      failures.push(`run ${k + 1}: /readyz not 200 within ${deadlineMs / 1000} s; the process was killed`);
      await stop(child, exit, 'SIGKILL');
    }
  }
} finally {
  await client.delete(`/api/v1/namespaces/${namespace}`);
  client.close();
}
const r = summarize(ready);
const l = summarize(lists);
const f = (x: number): string => x.toFixed(0);
process.stdout.write(
  (r.count > 0
    ? `start → /readyz 200, ${runtime}, empty namespace, ${r.count} runs: p50 ${f(r.p50)} ms, min ${f(r.min)} ms, max ${f(r.max)} ms\n`
    : `start → /readyz 200, ${runtime}, empty namespace: no run became ready\n`) +
    `LIST round trip (empty namespace): p50 ${f(l.p50)} ms\n` +
    `${failures.length} of ${runs} runs failed${failures.length > 0 ? ':' : ''}\n` +
    failures.map((x) => `  ${x}\n`).join(''),
);
if (profRoot !== undefined && runtime !== 'node')
  process.stdout.write('\n--cpu-prof profiles node processes only: no profile\n');
if (profDir !== undefined) {
  // Self time per function of the first run's profile, read from the folder made for that run. It covers the
  // process's whole life: start, the wait for ready, and the shutdown after SIGTERM.
  const file = readdirSync(profDir).find((n) => n.endsWith('.cpuprofile'));
  if (file === undefined)
    process.stdout.write(`\nno profile in ${profDir}: the first run did not exit normally\n`);
  else {
    const prof = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as {
      nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
      samples: number[];
      timeDeltas: number[];
    };
    const byId = new Map(prof.nodes.map((n) => [n.id, n]));
    const self = new Map<string, number>();
    prof.samples.forEach((id, i) => {
      const n = byId.get(id);
      if (n === undefined) return;
      const url = n.callFrame.url.split('/').at(-1) ?? '';
      const key = `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
      self.set(key, (self.get(key) ?? 0) + (prof.timeDeltas[i] ?? 0) / 1000);
    });
    const top = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20);
    const failed = failures.find((x) => x.startsWith('run 1:'));
    process.stdout.write(
      failed === undefined
        ? `\nself time, first run, start to exit after SIGTERM (${join(profDir, file)}):\n`
        : `\nself time, first run (failed: ${failed.slice('run 1: '.length)}) (${join(profDir, file)}):\n`,
    );
    for (const [k, ms] of top) process.stdout.write(`  ${ms.toFixed(1).padStart(7)} ms  ${k}\n`);
  }
}
