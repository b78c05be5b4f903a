// An HTTP-level fault-injecting reverse proxy in front of kube-apiserver, for chaos tests.
//
// Unlike the TCP relay (relay.ts), it terminates TLS (serving a certificate signed by the testbed CA) and
// re-originates it upstream, so it can answer requests itself with Kubernetes Status errors (429/500/503) and delay
// them. The Authorization header (ServiceAccount bearer tokens) passes through untouched; client certificates do
// not (the proxy does not present one upstream), so clients must authenticate with tokens.
//
// Layout: a TCP relay on the public port feeds every client connection to an in-process HTTPS server on a private
// loopback port. The relay gives byte-exact connection faults (cut/stall/block act on the wire, exactly as in
// relay.ts); the HTTPS server does the HTTP work (latency, injected errors, streaming forwarding).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { ClientRequest, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';

export type InjectedCode = 429 | 500 | 503;

export interface FaultSettings {
  /** Extra delay before forwarding each request, uniform in [min, max] ms (default none). */
  readonly latencyMs?: readonly [number, number];
  /** Fraction of requests answered by the proxy itself with an error instead of being forwarded (0..1). */
  readonly errorRate?: number;
  /** Codes to pick from for those errors (uniformly): 429, 500, 503. Default [429, 500, 503]. */
  readonly errorCodes?: readonly InjectedCode[];
  /** Retry-After seconds sent with 429 (and 503) answers (default 1). */
  readonly retryAfterSeconds?: number;
}

export interface FaultProxyStats {
  /** HTTP requests received (forwarded, injected, refused upgrades). */
  requests: number;
  /** Requests sent upstream (including those that then failed upstream). */
  forwarded: number;
  /** Requests given a latency > 0. */
  delayed: number;
  injected429: number;
  injected500: number;
  injected503: number;
  /** Client connections destroyed by cut() or block(). */
  cuts: number;
  /** Client connections stalled (open at stall() or accepted while stalled). */
  stalls: number;
  /** Client connections refused while blocked. */
  refused: number;
  /** Forwarded requests that failed upstream (connect error, reset): answered 502 by the proxy or ended abruptly. */
  upstreamErrors: number;
}

export interface FaultProxy {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** PEM of the CA its serving certificate chains to (the CA given in the options). */
  readonly caPem: string;
  /** Replaces the current fault settings (not merged); throws RangeError on invalid settings. */
  setFaults(f: FaultSettings): void;
  clearFaults(): void;
  /**
   * Destroys every open client connection and upstream request (watches end abruptly); new ones are accepted.
   * Also ends a stall (new connections flow); a block stays.
   */
  cut(): void;
  /**
   * Keeps open connections but stops forwarding any bytes on them, both ways (half-open), until cut() or open().
   * New connections are also stalled while stalled (their TLS handshake hangs).
   */
  stall(): void;
  /** Refuses new connections (destroy on accept) and cuts open ones, until open(). */
  block(): void;
  /** Ends stall/block. Stalled connections resume (bytes held back meanwhile flow, like a healed partition). */
  open(): void;
  stats(): FaultProxyStats;
  close(): Promise<void>;
}

export interface FaultProxyOptions {
  /** https URL of kube-apiserver. */
  readonly upstream: string;
  /** CA that signs the proxy's serving cert AND verifies upstream (the testbed CA). */
  readonly caCertPath: string;
  readonly caKeyPath: string;
  /** Where to write the proxy's key/cert (openssl). */
  readonly workDir: string;
  /** Seeded randomness for reproducible runs (default Math.random); see seededRandom. */
  readonly random?: () => number;
}

/** A small seeded PRNG (mulberry32) giving numbers in [0, 1), for `FaultProxyOptions.random`. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const DEFAULT_CODES: readonly InjectedCode[] = [429, 500, 503];

/** Header names never forwarded either way (hop-by-hop); `proxy-*` is dropped too. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

const INJECTED: Record<InjectedCode, { reason: string; message: string }> = {
  429: {
    reason: 'TooManyRequests',
    message: 'the server has received too many requests and has asked us to try again later',
  },
  500: {
    reason: 'InternalError',
    message: 'an error on the server has prevented the request from succeeding',
  },
  503: { reason: 'ServiceUnavailable', message: 'the server is currently unable to handle the request' },
};

/** The Kubernetes Status body of an injected error. */
export function injectedStatus(code: InjectedCode, retryAfterSeconds: number): Record<string, unknown> {
  const { reason, message } = INJECTED[code];
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `${message} (injected by the chaos proxy)`,
    reason,
    details: { retryAfterSeconds },
    code,
  };
}

function proxyStatus(code: number, reason: string | undefined, message: string): string {
  return `${JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...(reason === undefined ? {} : { reason }),
    code,
  })}\n`;
}

function openssl(args: readonly string[]): void {
  const r = spawnSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.error) throw new Error(`openssl is required: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr.trim()}`);
}

/** Issues an ECDSA P-256 serving certificate for 127.0.0.1/localhost signed by the CA; returns PEMs. */
function issueServingCert(o: FaultProxyOptions): { key: string; cert: string } {
  mkdirSync(o.workDir, { recursive: true });
  const base = join(o.workDir, `fault-proxy-${process.pid}-${randomBytes(4).toString('hex')}`);
  const key = `${base}.key`;
  const csr = `${base}.csr`;
  const ext = `${base}.ext`;
  const crt = `${base}.crt`;
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
  openssl(['req', '-new', '-key', key, '-subj', '/CN=agent-controller-fault-proxy', '-out', csr]);
  writeFileSync(
    ext,
    'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' +
      'subjectAltName=IP:127.0.0.1,DNS:localhost\n',
  );
  try {
    openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      o.caCertPath,
      '-CAkey',
      o.caKeyPath,
      '-set_serial',
      `0x${Date.now().toString(16)}${randomBytes(2).toString('hex')}`,
      '-days',
      '30',
      '-extfile',
      ext,
      '-out',
      crt,
    ]);
  } finally {
    rmSync(csr, { force: true });
    rmSync(ext, { force: true });
  }
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(crt, 'utf8') };
}

/** Raw headers → headers to send on, without hop-by-hop ones (nor those the Connection header names). */
function forwardableHeaders(raw: readonly string[]): OutgoingHttpHeaders {
  const named = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'connection') {
      for (const token of raw[i + 1]!.split(',')) named.add(token.trim().toLowerCase());
    }
  }
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    if (HOP_BY_HOP.has(name) || name.startsWith('proxy-') || named.has(name)) continue;
    const prev = out[name];
    if (prev === undefined) out[name] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else out[name] = [prev, value];
  }
  return out;
}

function validate(f: FaultSettings): FaultSettings {
  if (f.latencyMs !== undefined) {
    const [min, max] = f.latencyMs;
    if (!(Number.isFinite(min) && Number.isFinite(max) && min >= 0 && max >= min)) {
      throw new RangeError(`latencyMs must be [min, max] with 0 <= min <= max, got [${min}, ${max}]`);
    }
  }
  if (f.errorRate !== undefined && !(f.errorRate >= 0 && f.errorRate <= 1)) {
    throw new RangeError(`errorRate must be in [0, 1], got ${f.errorRate}`);
  }
  for (const c of f.errorCodes ?? []) {
    if (!(c in INJECTED)) throw new RangeError(`errorCodes may hold 429, 500, 503, got ${c}`);
  }
  if (
    f.retryAfterSeconds !== undefined &&
    !(Number.isInteger(f.retryAfterSeconds) && f.retryAfterSeconds >= 0)
  ) {
    throw new RangeError(`retryAfterSeconds must be a non-negative integer, got ${f.retryAfterSeconds}`);
  }
  return { ...f };
}

/** One client connection: the accepted socket and its link to the private HTTPS server. */
interface Conn {
  readonly client: net.Socket;
  readonly inner: net.Socket;
  stalled: boolean;
}

/** Copies bytes src → dst with backpressure; never resumes src while the connection is stalled. */
function link(src: net.Socket, dst: net.Socket, conn: Conn): void {
  src.on('data', (chunk: Buffer) => {
    if (!dst.write(chunk)) src.pause();
  });
  dst.on('drain', () => {
    if (!conn.stalled) src.resume();
  });
  src.on('end', () => dst.end());
}

/**
 * Starts the proxy on 127.0.0.1 (a fresh port) in front of `o.upstream`. Decisions per request, in this order of
 * `random()` calls: a latency draw (only when latencyMs is set), an error draw (only when errorRate > 0), a code draw
 * (only for an injected error with more than one code to pick from).
 */
export async function startFaultProxy(o: FaultProxyOptions): Promise<FaultProxy> {
  const upstream = new URL(o.upstream);
  if (upstream.protocol !== 'https:') throw new Error(`upstream must be an https URL, got ${o.upstream}`);
  const basePath = upstream.pathname.replace(/\/+$/, '');
  const random = o.random ?? Math.random;
  const caPem = readFileSync(o.caCertPath, 'utf8');
  const { key, cert } = issueServingCert(o);

  const stats: FaultProxyStats = {
    requests: 0,
    forwarded: 0,
    delayed: 0,
    injected429: 0,
    injected500: 0,
    injected503: 0,
    cuts: 0,
    stalls: 0,
    refused: 0,
    upstreamErrors: 0,
  };
  let faults: FaultSettings = {};
  let stalled = false;
  let blocked = false;
  let closed = false;
  const conns = new Set<Conn>();
  const upstreamRequests = new Set<ClientRequest>();
  const agent = new https.Agent({ keepAlive: true, ca: caPem });

  const inject = (res: ServerResponse, code: InjectedCode, retryAfterSeconds: number): void => {
    if (code === 429) stats.injected429++;
    else if (code === 500) stats.injected500++;
    else stats.injected503++;
    const body = `${JSON.stringify(injectedStatus(code, retryAfterSeconds))}\n`;
    res.writeHead(code, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-cache, private',
      ...(code === 500 ? {} : { 'retry-after': String(retryAfterSeconds) }),
    });
    res.end(body);
  };

  const forward = (req: IncomingMessage, res: ServerResponse): void => {
    stats.forwarded++;
    const headers = forwardableHeaders(req.rawHeaders);
    headers.host = upstream.host;
    const upReq = https.request({
      agent,
      protocol: 'https:',
      hostname: upstream.hostname,
      port: upstream.port || 443,
      method: req.method ?? 'GET',
      path: `${basePath}${req.url ?? '/'}`,
      headers,
    });
    upstreamRequests.add(upReq);
    // Set when the client side went away (or the proxy cut it): upstream errors after that are not upstream's.
    let abandoned = false;
    const abandon = (): void => {
      abandoned = true;
      upReq.destroy();
    };
    upReq.on('close', () => upstreamRequests.delete(upReq));
    upReq.on('error', (err) => {
      if (abandoned) return;
      stats.upstreamErrors++;
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (res.destroyed) return;
      const body = proxyStatus(502, undefined, `chaos proxy: upstream request failed: ${err.message}`);
      res.writeHead(502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    upReq.on('response', (upRes) => {
      upRes.on('error', () => {
        if (!abandoned) stats.upstreamErrors++;
        res.destroy();
      });
      upRes.on('close', () => {
        if (!upRes.complete) res.destroy();
      });
      if (res.destroyed) {
        abandon();
        return;
      }
      res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, forwardableHeaders(upRes.rawHeaders));
      // Watches: the headers go out now, each chunk as it comes (pipe writes every chunk through at once).
      res.flushHeaders();
      upRes.pipe(res);
    });
    res.on('close', () => {
      if (!res.writableFinished) abandon();
    });
    req.pipe(upReq);
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    stats.requests++;
    req.on('error', () => {});
    res.on('error', () => {});
    const f = faults;
    let delay = 0;
    if (f.latencyMs !== undefined) {
      const [min, max] = f.latencyMs;
      delay = min + random() * (max - min);
    }
    let code: InjectedCode | undefined;
    const rate = f.errorRate ?? 0;
    if (rate > 0 && random() < rate) {
      const codes = f.errorCodes !== undefined && f.errorCodes.length > 0 ? f.errorCodes : DEFAULT_CODES;
      code =
        codes.length === 1
          ? codes[0]!
          : codes[Math.min(codes.length - 1, Math.floor(random() * codes.length))]!;
    }
    const retryAfterSeconds = f.retryAfterSeconds ?? 1;
    const proceed = (): void => {
      if (res.destroyed || req.socket.destroyed) return; // the client left (or was cut) while waiting
      if (code !== undefined) inject(res, code, retryAfterSeconds);
      else forward(req, res);
    };
    if (delay > 0) {
      stats.delayed++;
      const timer = setTimeout(proceed, delay);
      res.on('close', () => clearTimeout(timer));
    } else {
      proceed();
    }
  };

  const server = https.createServer({ key, cert, requestTimeout: 0 }, handle);
  // Longer than client idle timeouts (client-go: 90 s), so clients, not the proxy, close idle connections.
  server.keepAliveTimeout = 120_000;
  server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
    stats.requests++;
    socket.on('error', () => {});
    const body = proxyStatus(
      501,
      undefined,
      'chaos proxy: upgrade requests (exec, attach, port-forward) are not supported',
    );
    socket.end(
      'HTTP/1.1 501 Not Implemented\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const innerPort = (server.address() as net.AddressInfo).port;

  const stallConn = (c: Conn): void => {
    if (c.stalled) return;
    c.stalled = true;
    stats.stalls++;
    c.client.pause();
    c.inner.pause();
  };
  const resumeConn = (c: Conn): void => {
    if (!c.stalled) return;
    c.stalled = false;
    if (!c.inner.writableNeedDrain) c.client.resume();
    if (!c.client.writableNeedDrain) c.inner.resume();
  };

  const relay = net.createServer({ allowHalfOpen: true }, (client) => {
    if (blocked || closed) {
      stats.refused++;
      client.on('error', () => {});
      client.destroy();
      return;
    }
    const inner = net.connect({ port: innerPort, host: '127.0.0.1', allowHalfOpen: true });
    const conn: Conn = { client, inner, stalled: false };
    conns.add(conn);
    const drop = (): void => {
      client.destroy();
      inner.destroy();
      conns.delete(conn);
    };
    client.on('error', drop).on('close', drop);
    inner.on('error', drop).on('close', drop);
    link(client, inner, conn);
    link(inner, client, conn);
    if (stalled) stallConn(conn);
  });
  relay.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    relay.once('error', reject);
    relay.listen(0, '127.0.0.1', () => {
      relay.off('error', reject);
      resolve();
    });
  });
  const port = (relay.address() as net.AddressInfo).port;

  const cutAll = (): void => {
    for (const c of [...conns]) {
      stats.cuts++;
      c.client.destroy();
      c.inner.destroy();
    }
    conns.clear();
    for (const r of [...upstreamRequests]) r.destroy();
    upstreamRequests.clear();
  };

  return {
    url: `https://127.0.0.1:${port}`,
    caPem,
    setFaults: (f) => {
      faults = validate(f);
    },
    clearFaults: () => {
      faults = {};
    },
    cut: () => {
      stalled = false;
      cutAll();
    },
    stall: () => {
      stalled = true;
      for (const c of conns) stallConn(c);
    },
    block: () => {
      blocked = true;
      stalled = false;
      cutAll();
    },
    open: () => {
      blocked = false;
      stalled = false;
      for (const c of conns) resumeConn(c);
    },
    stats: () => ({ ...stats }),
    close: async () => {
      if (closed) return;
      closed = true;
      const cuts = stats.cuts;
      cutAll();
      stats.cuts = cuts;
      agent.destroy();
      server.closeAllConnections();
      await Promise.all([
        new Promise<void>((resolve) => relay.close(() => resolve())),
        new Promise<void>((resolve) => server.close(() => resolve())),
      ]);
    },
  };
}
