// End-to-end harness of the model gateway (`agent-controller gateway`, docs/design/gateway.md): the gateway from the
// built bundle as a child process (Node or Deno, per AGENT_E2E_RUNTIME) with loopback ports, and a loopback relay in
// front of a model-API fake that passes every call on to the fake, except a call marked `x-test-hold`: that one is
// answered with the first event of a stream and then held open, and the relay records when its connection closes
// (the gateway cancelling upstream when its client went away).
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ControllerProcess, type E2eRuntime, e2eRuntime, spawnBundle } from './controller.ts';
import { pollUntil } from './poll.ts';

export interface GatewayProcessOptions {
  readonly kubeconfig: string;
  /** The namespace of the Secret agent-controller-gateway. */
  readonly namespace: string;
  /** Upstream base URLs per vendor. */
  readonly upstreams: { readonly anthropic: string; readonly openai: string; readonly gemini: string };
  readonly identity?: string;
  readonly runtime?: E2eRuntime;
  readonly logLevel?: string;
  /** Wait for `/readyz` before returning (default true). */
  readonly waitReady?: boolean;
  /** More environment (e.g. `AGENT_GATEWAY_MAX_WAIT_SECONDS`). */
  readonly env?: Readonly<Record<string, string>>;
}

/** A gateway process and the port of its model APIs. */
export interface GatewayProcess {
  readonly process: ControllerProcess;
  /** `http://127.0.0.1:<api port>`. */
  readonly url: string;
}

/** Starts `gateway` on 127.0.0.1 with free ports and waits until it serves (and, by default, is ready). */
export async function startGatewayProcess(opts: GatewayProcessOptions): Promise<GatewayProcess> {
  const runtime = opts.runtime ?? e2eRuntime();
  const identity = opts.identity ?? `gateway-${opts.namespace}`;
  const argv = [
    'gateway',
    '--namespace',
    opts.namespace,
    '--port',
    '0',
    '--metrics-port',
    '0',
    '--bind-address',
    '127.0.0.1',
    '--kubeconfig',
    opts.kubeconfig,
  ];
  const process = spawnBundle(runtime, argv, identity, {
    LOG_LEVEL: opts.logLevel ?? 'debug',
    AGENT_GATEWAY_ANTHROPIC_URL: opts.upstreams.anthropic,
    AGENT_GATEWAY_OPENAI_URL: opts.upstreams.openai,
    AGENT_GATEWAY_GEMINI_URL: opts.upstreams.gemini,
    ...opts.env,
  });
  const line = await process.waitForLog('Serving the model APIs');
  if (typeof line.port !== 'number') throw new Error(`no port in ${JSON.stringify(line)}`);
  if (opts.waitReady !== false) await process.waitReady();
  return { process, url: `http://127.0.0.1:${line.port}` };
}

/** One call the relay held open. */
export interface HeldCall {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** When the gateway closed the connection (ms since the epoch), undefined while open. */
  closedAt: number | undefined;
}

export interface HoldingRelay {
  /** The relay's base URL (an origin: the gateway adds the vendor's path). */
  readonly url: string;
  readonly held: readonly HeldCall[];
  /** Waits until `n` held calls have arrived. */
  waitHeld(n: number): Promise<HeldCall>;
  close(): Promise<void>;
}

/**
 * A relay to the model-API fake at `target` (an origin). A call `hold` picks (by default one with the header
 * `x-test-hold`) is answered 200 as an event stream with `firstEvent` and then never ended.
 */
export async function startHoldingRelay(
  target: string,
  firstEvent: string,
  /** Which calls to hold (`n`: the call's number, from 1); default: those with the header `x-test-hold`. */
  hold: (req: IncomingMessage, n: number) => boolean = (req) => req.headers['x-test-hold'] !== undefined,
): Promise<HoldingRelay> {
  const held: HeldCall[] = [];
  let calls = 0;
  const server = createServer((req, res) => {
    calls++;
    if (hold(req, calls)) {
      const call: HeldCall = { path: req.url ?? '', headers: req.headers, closedAt: undefined };
      held.push(call);
      req.resume();
      res.on('close', () => {
        call.closedAt = Date.now();
      });
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(firstEvent);
      return;
    }
    const url = new URL(req.url ?? '/', target);
    const upstream = httpRequest(
      url,
      { method: req.method, headers: { ...req.headers, host: url.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    waitHeld: (n) =>
      pollUntil(() => held[n - 1], { timeoutMs: 20_000, intervalMs: 20, description: `${n} held calls` }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
