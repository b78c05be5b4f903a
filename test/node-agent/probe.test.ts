// The probe runner against real servers on 127.0.0.1 (tcpSocket, httpGet over HTTP and HTTPS), an injected
// exec runner, and the Prober's period/threshold behaviour with shortened seconds.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import { pollUntil } from '../support/poll.ts';
import { HAVE_OPENSSL, selfSignedCert } from '../support/self-signed.ts';
import { PodSpecSchema, type Probe } from './pod-spec.ts';
import { checkProbe, type ProbeCheck, Prober, type ProbeTarget } from './probe.ts';

/** A probe as the node sees it after validation (defaults filled in). */
function probe(fields: Record<string, unknown>): Probe {
  const spec = v.parse(PodSpecSchema, {
    containers: [{ name: 'main' }],
    initContainers: [{ name: 's', restartPolicy: 'Always', startupProbe: fields }],
  });
  const parsed = spec.initContainers[0]?.startupProbe;
  if (!parsed) throw new Error('no probe');
  return parsed;
}

const noExec: ProbeTarget['exec'] = async () => ({ passed: false, detail: 'no exec in this test' });
const target = (ports: ProbeTarget['ports'] = [], exec = noExec): ProbeTarget => ({
  podIP: '127.0.0.1',
  ports,
  exec,
});
const signal = new AbortController().signal;

function listen<S extends Server | TcpServer>(server: S, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

function close(server: Server | TcpServer): Promise<void> {
  if ('closeAllConnections' in server) server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A port nothing listens on: bound once, then released. */
async function freePort(): Promise<number> {
  const s = createTcpServer();
  const port = await listen(s);
  await close(s);
  return port;
}

describe('checkProbe: tcpSocket', () => {
  const server = createTcpServer((socket) => socket.end());
  let port = 0;
  before(async () => {
    port = await listen(server);
  });
  after(() => close(server));

  it('passes when the port accepts a connection, by number or container port name', async () => {
    assert.deepEqual(await checkProbe(probe({ tcpSocket: { port } }), target(), signal), { passed: true });
    const named = await checkProbe(
      probe({ tcpSocket: { port: 'admin' } }),
      target([{ name: 'admin', containerPort: port }]),
      signal,
    );
    assert.deepEqual(named, { passed: true });
  });

  it('fails on a refused connection and on an unknown port name', async () => {
    const closed = await freePort();
    const refused = await checkProbe(probe({ tcpSocket: { port: closed } }), target(), signal);
    assert.equal(refused.passed, false);
    assert.match(refused.detail ?? '', new RegExp(`dial tcp 127\\.0\\.0\\.1:${closed}: .*ECONNREFUSED`));
    const unknown = await checkProbe(probe({ tcpSocket: { port: 'nope' } }), target(), signal);
    assert.equal(unknown.passed, false);
    assert.match(unknown.detail ?? '', /"nope"/);
  });

  it('targets the probe host when one is given instead of the pod IP', async () => {
    // The listener is on 127.0.0.1 only: the pod IP 127.0.0.2 is refused, the probe host reaches it.
    const pod = { ...target(), podIP: '127.0.0.2' };
    assert.equal((await checkProbe(probe({ tcpSocket: { port } }), pod, signal)).passed, false);
    assert.deepEqual(await checkProbe(probe({ tcpSocket: { port, host: '127.0.0.1' } }), pod, signal), {
      passed: true,
    });
  });
});

describe('checkProbe: httpGet', () => {
  const seen: { path: string | undefined; headers: IncomingHttpHeaders }[] = [];
  let arrived: Array<() => void> = [];
  /** Resolves once a request for `path` has reached the server. */
  const requested = async (path: string): Promise<void> => {
    while (!seen.some((r) => r.path === path)) await new Promise<void>((resolve) => arrived.push(resolve));
  };
  const server = createHttpServer((req, res) => {
    seen.push({ path: req.url, headers: req.headers });
    const woken = arrived;
    arrived = [];
    for (const w of woken) w();
    if (req.url === '/hang') return; // never answers
    const status = req.url === '/ok' ? 200 : req.url === '/moved' ? 302 : req.url === '/missing' ? 404 : 500;
    res.writeHead(status, status === 302 ? { location: '/elsewhere' } : {});
    res.end('body');
  });
  let port = 0;
  before(async () => {
    port = await listen(server);
  });
  after(() => close(server));

  it('passes on 2xx and 3xx, fails on 4xx/5xx with the status code', async () => {
    const check = (path: string) => checkProbe(probe({ httpGet: { port, path } }), target(), signal);
    assert.deepEqual(await check('/ok'), { passed: true });
    assert.deepEqual(await check('/moved'), { passed: true });
    assert.deepEqual(await check('/missing'), {
      passed: false,
      detail: 'HTTP probe failed with statuscode: 404',
    });
    assert.equal((await check('/boom')).passed, false);
  });

  it('sends the path, the kube-probe user agent and the probe headers; resolves named ports', async () => {
    seen.length = 0;
    const r = await checkProbe(
      probe({ httpGet: { port: 'http', path: '/ok', httpHeaders: [{ name: 'X-Probe', value: 'yes' }] } }),
      target([{ name: 'http', containerPort: port }]),
      signal,
    );
    assert.deepEqual(r, { passed: true });
    assert.equal(seen.length, 1);
    assert.equal(seen[0]?.path, '/ok');
    assert.match(seen[0]?.headers['user-agent'] ?? '', /^kube-probe\//);
    assert.equal(seen[0]?.headers['x-probe'], 'yes');
  });

  // These two run on node:test's manual clock: timers fire on the test's ticks only. Their `timeout` only turns a
  // wait that never ends into a failure; nothing is asserted about how long anything takes.
  it('fails after timeoutSeconds when the server does not answer', { timeout: 20_000 }, async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    seen.length = 0;
    let settled = false;
    const pending = checkProbe(
      probe({ httpGet: { port, path: '/hang' }, timeoutSeconds: 1 }),
      target(),
      signal,
    ).finally(() => {
      settled = true;
    });
    await requested('/hang');
    t.mock.timers.tick(999);
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false, 'still waiting 1 ms before timeoutSeconds');
    t.mock.timers.tick(1);
    const r = await pending;
    assert.equal(r.passed, false);
    assert.match(r.detail ?? '', /Client\.Timeout exceeded/);
  });

  it('a cancelled check ends at once', { timeout: 20_000 }, async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const ac = new AbortController();
    const pending = checkProbe(
      probe({ httpGet: { port, path: '/hang' }, timeoutSeconds: 30 }),
      target(),
      ac.signal,
    );
    ac.abort();
    // Ends with no time passing.
    const r = await pending;
    assert.deepEqual(r, { passed: false, detail: 'probe cancelled' });
  });
});

describe('checkProbe: httpGet over HTTPS (certificate not verified, as the kubelet)', {
  skip: HAVE_OPENSSL ? false : 'needs openssl',
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'probe-tls-'));
  let server: Server | undefined;
  let port = 0;
  before(async () => {
    const { cert, key } = selfSignedCert(dir);
    server = createHttpsServer({ key, cert }, (req, res) => {
      res.writeHead(req.url === '/ok' ? 204 : 503);
      res.end();
    });
    port = await listen(server);
  });
  after(async () => {
    if (server) await close(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes against a self-signed certificate and fails on 503', async () => {
    const ok = await checkProbe(probe({ httpGet: { port, path: '/ok', scheme: 'HTTPS' } }), target(), signal);
    assert.deepEqual(ok, { passed: true });
    const down = await checkProbe(
      probe({ httpGet: { port, path: '/x', scheme: 'HTTPS' } }),
      target(),
      signal,
    );
    assert.equal(down.passed, false);
    const plain = await checkProbe(probe({ httpGet: { port, path: '/ok' } }), target(), signal);
    assert.equal(plain.passed, false, 'HTTP against an HTTPS port fails');
  });
});

describe('checkProbe: exec', () => {
  it('hands the command and the timeout to the container exec runner', async () => {
    const calls: [readonly string[], number][] = [];
    const exec: ProbeTarget['exec'] = async (command, timeoutMs) => {
      calls.push([command, timeoutMs]);
      return command[0] === 'true' ? { passed: true } : { passed: false, detail: 'exit code 1' };
    };
    assert.deepEqual(
      await checkProbe(probe({ exec: { command: ['true'] }, timeoutSeconds: 4 }), target([], exec), signal),
      { passed: true },
    );
    assert.equal(
      (await checkProbe(probe({ exec: { command: ['false'] } }), target([], exec), signal)).passed,
      false,
    );
    assert.deepEqual(calls, [
      [['true'], 4000],
      [['false'], 1000],
    ]);
  });
});

describe('Prober', () => {
  const SECOND = 20; // ms per probe second: periods of 20 ms keep these tests fast

  it('a startup prober passes once the port opens, then stops probing', async () => {
    const port = await freePort();
    const verdicts: string[] = [];
    let checks = 0;
    const p = probe({ tcpSocket: { port }, periodSeconds: 1, failureThreshold: 1000 });
    const prober = new Prober(
      p,
      (s) => {
        checks++;
        return checkProbe(p, target(), s);
      },
      { untilDecided: true, secondMs: SECOND, onVerdict: (verdict) => verdicts.push(verdict) },
    );
    await pollUntil(() => (checks >= 3 ? true : undefined), { timeoutMs: 5000, intervalMs: 5 });
    assert.deepEqual(verdicts, [], 'no verdict while the port is closed (below the failure threshold)');
    const server = createTcpServer((socket) => socket.end());
    await listen(server, port);
    try {
      await prober.done;
      assert.deepEqual(verdicts, ['success']);
      assert.equal(prober.verdict, 'success', 'the loop ended on the verdict');
    } finally {
      prober.stop();
      await close(server);
    }
  });

  it('a startup prober fails after failureThreshold consecutive failures, waiting initialDelaySeconds first', async () => {
    const times: number[] = [];
    const verdicts: [string, ProbeCheck][] = [];
    const began = Date.now();
    const prober = new Prober(
      probe({ exec: { command: ['x'] }, initialDelaySeconds: 10, periodSeconds: 1, failureThreshold: 3 }),
      async () => {
        times.push(Date.now() - began);
        return { passed: false, detail: `failure ${times.length}` };
      },
      { untilDecided: true, secondMs: SECOND, onVerdict: (verdict, last) => verdicts.push([verdict, last]) },
    );
    await prober.done;
    assert.deepEqual(verdicts, [['failure', { passed: false, detail: 'failure 3' }]]);
    assert.equal(times.length, 3);
    assert.ok((times[0] ?? 0) >= 10 * SECOND - 5, `first check at ${times[0]} ms, after the initial delay`);
  });

  it('a readiness prober follows the thresholds both ways and keeps probing until stopped', async () => {
    let up = false;
    const verdicts: string[] = [];
    const prober = new Prober(
      probe({ exec: { command: ['x'] }, periodSeconds: 1, successThreshold: 2, failureThreshold: 2 }),
      async () => ({ passed: up }),
      { untilDecided: false, secondMs: SECOND, onVerdict: (verdict) => verdicts.push(verdict) },
    );
    try {
      await pollUntil(() => (verdicts.length >= 1 ? true : undefined), { timeoutMs: 5000, intervalMs: 5 });
      assert.deepEqual(verdicts, ['failure']);
      up = true;
      await pollUntil(() => (verdicts.length >= 2 ? true : undefined), { timeoutMs: 5000, intervalMs: 5 });
      up = false;
      await pollUntil(() => (verdicts.length >= 3 ? true : undefined), { timeoutMs: 5000, intervalMs: 5 });
      assert.deepEqual(verdicts, ['failure', 'success', 'failure']);
    } finally {
      prober.stop();
    }
    await prober.done;
  });

  it('a check that throws counts as a failure', async () => {
    const verdicts: [string, string | undefined][] = [];
    const prober = new Prober(
      probe({ exec: { command: ['x'] }, periodSeconds: 1, failureThreshold: 1 }),
      async () => {
        throw new Error('runner broke');
      },
      {
        untilDecided: true,
        secondMs: SECOND,
        onVerdict: (verdict, last) => verdicts.push([verdict, last.detail]),
      },
    );
    await prober.done;
    assert.deepEqual(verdicts, [['failure', 'runner broke']]);
  });
});
