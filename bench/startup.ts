// `node --import tsx bench/startup.ts --kubeconfig PATH [--runs N] [--runtime node|deno] [--cpu-prof DIR]`:
// start → `/readyz` 200 of the controller bundle on an empty namespace (issue 15 §5), N runs, with the LIST round
// trip of the same moment as its floor. Each run starts a fresh process (CRDs already installed, so no apply at
// start) and polls `/readyz` every 2 ms; the process is stopped once ready. With --cpu-prof the Node process
// profiles itself, and the functions with the most self time before ready are printed. Prints figures; asserts
// nothing. The API server must be reachable and the CRDs installed (`scripts/testbed up` does both).
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
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
    'cpu-prof': { type: 'string' },
  },
});
const kubeconfig = values.kubeconfig ?? process.env.KUBECONFIG;
if (kubeconfig === undefined) throw new Error('pass --kubeconfig PATH (or set KUBECONFIG)');
const runs = Number(values.runs);
const runtime = values.runtime === 'deno' ? 'deno' : 'node';
const now = (): number => performance.now();

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
    const profDir = values['cpu-prof'];
    if (profDir !== undefined) mkdirSync(profDir, { recursive: true });
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
    let exited = false;
    child.on('exit', () => {
      exited = true;
    });
    while (!exited && !(await readyzOk(port))) await new Promise((r) => setTimeout(r, 2));
    if (!exited) ready.push(now() - started);
    child.kill('SIGTERM');
    if (!exited) await new Promise((r) => child.once('exit', r));
  }
} finally {
  await client.delete(`/api/v1/namespaces/${namespace}`);
  client.close();
}
const r = summarize(ready);
const l = summarize(lists);
const f = (x: number): string => x.toFixed(0);
process.stdout.write(
  `start → /readyz 200, ${runtime}, empty namespace, ${r.count} runs: p50 ${f(r.p50)} ms, min ${f(r.min)} ms, max ${f(r.max)} ms\n` +
    `LIST round trip (empty namespace): p50 ${f(l.p50)} ms\n`,
);
const profDir = values['cpu-prof'];
if (profDir !== undefined) {
  // Self time per function of the first run's profile (the process ran until SIGTERM shortly after ready).
  const file = readdirSync(profDir).find((n) => n.endsWith('.cpuprofile'));
  if (file !== undefined) {
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
    process.stdout.write(`\nself time, first run (${file}):\n`);
    for (const [k, ms] of top) process.stdout.write(`  ${ms.toFixed(1).padStart(7)} ms  ${k}\n`);
  }
}
