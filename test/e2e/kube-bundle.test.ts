// The client shell bundled by esbuild into one ESM file (as the product is) and run on the pass's runtime
// (Node, or Deno when AGENT_E2E_RUNTIME=deno): kubeconfig loading through the bundled @kubernetes/client-node,
// mTLS over the keep-alive node:https agent, paginated LIST, an informer's WATCH, the idle timer, a cut
// connection, and a Lease.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import {
  createObject,
  createTransport,
  deleteObject,
  KubeObjectSchema,
  loadKubeconfig,
  NAMESPACES,
  type Transport,
} from '../../src/kube/index.ts';
import { e2eKubeconfigPath } from '../support/index.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const kubeconfig = e2eKubeconfigPath();
const runtime = process.env.AGENT_E2E_RUNTIME === 'deno' ? 'deno' : 'node';

/** The probe: runs inside the bundle and prints one JSON line per finished step. */
const PROBE = `
import { CONFIG_MAPS, createObject, createTransport, KubeObjectSchema, listAll, loadKubeconfig, watchOnce } from ${JSON.stringify(join(ROOT, 'src/kube/index.ts'))};
import { createInformer, createLeaderElector, systemClock } from ${JSON.stringify(join(ROOT, 'src/runtime/index.ts'))};
import { createLogger } from ${JSON.stringify(join(ROOT, 'src/shared/log.ts'))};

const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
const logger = createLogger('error');
const ns = process.env.PROBE_NAMESPACE;
const cfg = await loadKubeconfig({ path: process.env.KUBECONFIG });
if (!cfg.ok) { out({ step: 'config', error: cfg.error }); process.exit(1); }
out({ step: 'config', ok: true, runtime: typeof Deno !== 'undefined' ? 'deno' : 'node' });
const t = createTransport({ server: cfg.value.server, credentials: cfg.value.credentials });
for (let i = 0; i < 4; i++) await createObject(t, CONFIG_MAPS, ns, { metadata: { name: 'pre-' + i } }, KubeObjectSchema);
const listed = await listAll(t, CONFIG_MAPS, KubeObjectSchema, { namespace: ns, limit: 2 });
out({ step: 'list', ok: listed.ok, pages: listed.ok ? listed.value.pages : 0, names: listed.ok ? listed.value.items.map((i) => i.metadata.name) : [] });

const ctl = new AbortController();
const inf = createInformer({ transport: t, resource: CONFIG_MAPS, namespace: ns, clock: systemClock, random: Math.random, logger });
const running = inf.run(ctl.signal);
await inf.ready;
await createObject(t, CONFIG_MAPS, ns, { metadata: { name: 'watched' } }, KubeObjectSchema);
const deadline = Date.now() + 10000;
while (!inf.store.get(ns + '/watched') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
out({ step: 'informer', ok: inf.store.get(ns + '/watched') !== undefined });
ctl.abort();
await running;

const idleStart = Date.now();
const end = await watchOnce(t, { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true },
  { namespace: ns, resourceVersion: listed.ok ? listed.value.resourceVersion : '0', timeoutSeconds: 60, idleTimeoutMs: 1000 }, () => {});
out({ step: 'idle', kind: end.kind, error: end.kind === 'failed' ? end.error.kind : undefined, ms: Date.now() - idleStart });

// A relay whose connection is cut mid-watch: the stream must end as a network failure, promptly.
const net = await import('node:net');
const upstream = new URL(cfg.value.server);
const sockets = new Set();
const relay = net.createServer((client) => {
  const up = net.connect(Number(upstream.port), upstream.hostname);
  sockets.add(client); sockets.add(up);
  const drop = () => { client.destroy(); up.destroy(); };
  client.on('error', drop).on('close', drop); up.on('error', drop).on('close', drop);
  client.pipe(up); up.pipe(client);
});
await new Promise((r) => relay.listen(0, '127.0.0.1', r));
const viaRelay = createTransport({ server: 'https://127.0.0.1:' + relay.address().port, credentials: cfg.value.credentials });
const cutStart = Date.now();
setTimeout(() => { for (const s of sockets) s.destroy(); }, 500);
const cutEnd = await watchOnce(viaRelay, CONFIG_MAPS,
  { namespace: ns, resourceVersion: listed.ok ? listed.value.resourceVersion : '0', timeoutSeconds: 60, idleTimeoutMs: 30000 }, () => {});
out({ step: 'cut', kind: cutEnd.kind, error: cutEnd.kind === 'failed' ? cutEnd.error.kind : undefined, ms: Date.now() - cutStart });
viaRelay.close();
relay.close();

const elector = createLeaderElector({ transport: t, namespace: ns, name: 'probe', identity: 'probe-1', clock: systemClock, logger });
await elector.tick();
const led = elector.isLeader();
const released = await elector.release();
out({ step: 'leader', led, released: released.ok });
t.close();
out({ step: 'done' });
`;

describe(`kube client bundled and run on ${runtime}`, {
  skip: kubeconfig === undefined ? 'KUBECONFIG is not set' : false,
}, () => {
  let direct: Transport;
  let ns = '';
  const dir = mkdtempSync(join(tmpdir(), 'kube-bundle-'));

  before(async () => {
    const cfg = await loadKubeconfig({ path: kubeconfig ?? '' });
    assert.ok(cfg.ok);
    direct = createTransport({ server: cfg.value.server, credentials: cfg.value.credentials });
    ns = `kube-bundle-${randomBytes(3).toString('hex')}`;
    const r = await createObject(
      direct,
      NAMESPACES,
      undefined,
      { metadata: { name: ns, labels: { 'agent-controller.test/e2e': 'true' } } },
      KubeObjectSchema,
    );
    assert.ok(r.ok);
  });
  after(async () => {
    await deleteObject(direct, NAMESPACES, { name: ns });
    direct.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists, watches, detects a silent stream and elects a leader from the one-file bundle', async () => {
    const entry = join(dir, 'probe.ts');
    writeFileSync(entry, PROBE);
    const outfile = join(dir, 'probe.mjs');
    await esbuild.build({
      absWorkingDir: ROOT,
      entryPoints: [entry],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: ['node20', 'deno2'],
      logLevel: 'error',
      banner: {
        js: "import { createRequire as __acCreateRequire } from 'node:module';\nconst require = __acCreateRequire(import.meta.url);",
      },
    });
    const [cmd, args] =
      runtime === 'deno'
        ? [join(ROOT, 'node_modules/.bin/deno'), ['run', '-A', '--quiet', outfile]]
        : [process.execPath, [outfile]];
    const { code, stdout, stderr } = await new Promise<{
      code: number | null;
      stdout: string;
      stderr: string;
    }>((resolve) => {
      const child = spawn(cmd, args, {
        env: { ...process.env, KUBECONFIG: kubeconfig, PROBE_NAMESPACE: ns, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c) => {
        stdout += c;
      });
      child.stderr.on('data', (c) => {
        stderr += c;
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
    const steps = new Map<string, Record<string, unknown>>();
    for (const line of stdout.split('\n').filter((l) => l.trim() !== '')) {
      const o = JSON.parse(line) as Record<string, unknown>;
      steps.set(String(o.step), o);
    }
    const context = `exit ${code}\nstdout: ${stdout}\nstderr: ${stderr.slice(0, 2000)}`;
    assert.equal(code, 0, context);
    assert.deepEqual(steps.get('config'), { step: 'config', ok: true, runtime }, context);
    const list = steps.get('list');
    assert.equal(list?.ok, true, context);
    assert.ok(Number(list?.pages) >= 2, context);
    for (const n of ['pre-0', 'pre-1', 'pre-2', 'pre-3'])
      assert.ok(((list?.names ?? []) as string[]).includes(n), context);
    assert.equal(steps.get('informer')?.ok, true, context);
    const idle = steps.get('idle');
    assert.equal(idle?.kind, 'failed', context);
    assert.equal(idle?.error, 'timeout', context);
    assert.ok(Number(idle?.ms) >= 900 && Number(idle?.ms) < 10_000, context);
    const cut = steps.get('cut');
    assert.equal(cut?.kind, 'failed', context);
    assert.equal(cut?.error, 'network', context);
    assert.ok(Number(cut?.ms) < 10_000, context);
    assert.deepEqual(steps.get('leader'), { step: 'leader', led: true, released: true }, context);
    assert.ok(steps.has('done'), context);
  });
});
