// The gateway's model-API app (port 8080; docs/design/gateway.md): every call is matched to a route of its vendor,
// its credential verified and its run's Agent read, then refused in the vendor's error shape or forwarded with the
// vendor key (forward.ts). Built from ports, so it is tested on loopback with fakes of the vendors.

import { Hono } from 'hono';
import type { GatewayVendor } from '../api/gateway.ts';
import type { KubeError } from '../kube/index.ts';
import { describeKubeError } from '../kube/index.ts';
import { readLimitedBytes } from '../server/prompt.ts';
import { type RunIdentity, verifyGatewayCredential } from '../shared/gateway-credential.ts';
import type { Result } from '../shared/result.ts';
import { authorize, type GatewayAgent, needsFreshRead } from './authorize.ts';
import { type AuthorisedCall, type ForwardDeps, forward } from './forward.ts';
import type { RateLimitGate } from './limits/gate.ts';
import { type RefusalReason, refusal } from './refusals.ts';
import { clientCredential, matchRoute, modelOf, vendorOf } from './routes.ts';

/** The largest request body forwarded (the model is read from it, so it is read whole first). */
export const MAX_REQUEST_BYTES = 64 * 1024 * 1024;

export interface GatewayAppDeps extends ForwardDeps {
  /** The credentials' HMAC key; undefined until it was read (calls are answered 503 meanwhile). */
  readonly hmacKey: () => Uint8Array | undefined;
  /** The run's Agent: from the cache, or read afresh when `fresh`. */
  readonly agent: (run: RunIdentity, fresh: boolean) => Promise<Result<GatewayAgent | undefined, KubeError>>;
  /** A vendor key of a namespace's agent-secrets: undefined when absent. */
  readonly vendorKey: (namespace: string, keyName: string) => Promise<Result<string | undefined, KubeError>>;
  /** The rate limits of the vendor keys (limits/gate.ts); absent: none. */
  readonly rateLimits?: RateLimitGate | undefined;
}

/** What a refused call is known to be about, for its metrics and log line. */
interface Known {
  readonly vendor: GatewayVendor;
  readonly run?: RunIdentity | undefined;
  readonly station?: string | undefined;
  readonly model?: string | undefined;
}

export function createGatewayApp(deps: GatewayAppDeps): Hono {
  const app = new Hono();

  const refuse = (known: Known, reason: RefusalReason, message: string, detail?: string): Response => {
    const r = refusal(known.vendor, reason, message);
    deps.metrics.refusals.inc({ vendor: known.vendor, reason });
    deps.metrics.requests.inc({
      namespace: known.run?.namespace ?? '',
      station: known.station ?? '',
      model: known.model ?? '',
      vendor: known.vendor,
      code: String(r.status),
    });
    deps.logger[reason === 'unavailable' ? 'warn' : 'info']('Refused a call', {
      vendor: known.vendor,
      reason,
      namespace: known.run?.namespace,
      agent: known.run?.name,
      model: known.model,
      ...(detail === undefined ? {} : { detail }),
    });
    return Response.json(r.body, { status: r.status, headers: r.headers });
  };

  app.all('*', async (c) => {
    const startedAt = deps.now();
    const request = c.req.raw;
    const url = new URL(request.url);
    const prefixed = vendorOf(url.pathname);
    if (prefixed === undefined)
      return c.json({ error: { message: `agent gateway: no vendor at ${url.pathname}` } }, 404);
    const { vendor } = prefixed;
    const route = matchRoute(vendor, request.method, prefixed.rest);
    if (route === undefined)
      return refuse(
        { vendor },
        'route',
        `${request.method} ${prefixed.rest} is not forwarded by the gateway`,
      );
    const key = deps.hmacKey();
    if (key === undefined) return refuse({ vendor }, 'unavailable', 'the gateway is starting; try again');
    const credential = clientCredential(
      vendor,
      (name) => request.headers.get(name) ?? undefined,
      url.searchParams,
    );
    const run = credential === undefined ? undefined : verifyGatewayCredential(key, credential);
    if (run === undefined)
      return refuse(
        { vendor },
        'credential',
        credential === undefined ? 'no credential' : 'the credential is not valid',
      );
    const body = await readRequestBody(request);
    if (body === 'tooLarge')
      return refuse({ vendor, run }, 'body', `the request body is larger than ${MAX_REQUEST_BYTES} bytes`);
    const model = modelOf(route, body?.json);
    const agent = await lookUp(deps, run);
    if (!agent.ok)
      return refuse(
        { vendor, run, model },
        'unavailable',
        'the run cannot be looked up now; try again',
        agent.error,
      );
    const decision = authorize({
      run,
      agent: agent.value,
      vendor,
      modelNamed: route.model !== undefined,
      model,
    });
    const station = agent.value?.spec.stationRef;
    if (!decision.ok) return refuse({ vendor, run, station, model }, decision.reason, decision.message);
    const vendorKey = await deps.vendorKey(run.namespace, decision.keyName);
    if (!vendorKey.ok)
      return refuse(
        { vendor, run, station, model },
        'unavailable',
        'the key cannot be read now; try again',
        describeKubeError(vendorKey.error),
      );
    if (vendorKey.value === undefined || vendorKey.value === '')
      return refuse(
        { vendor, run, station, model },
        'no_key',
        `agent-secrets of ${run.namespace} has no key ${decision.keyName}`,
      );
    const held = await deps.rateLimits?.hold({
      vendor,
      run,
      station: station ?? '',
      model: model ?? '',
      keyName: decision.keyName,
      route,
      body,
      signal: request.signal,
    });
    if (held?.kind === 'refused') return held.response;
    const call: AuthorisedCall = {
      vendor,
      route,
      method: request.method,
      query: url.searchParams,
      headers: request.headers.entries(),
      body: body?.bytes,
      model: model ?? '',
      run,
      station: station ?? '',
      key: vendorKey.value,
      clientSignal: request.signal,
      startedAt,
      onEnd: held?.ended,
    };
    return held === undefined ? forward(deps, call) : held.answered(await forward(deps, call));
  });
  app.onError((error, c) => {
    deps.logger.error('A call failed in the gateway', { error: error.message });
    return c.json({ error: { message: 'agent gateway: internal error' } }, 500);
  });
  return app;
}

/** The run's Agent: the cached one, or read afresh when the cache cannot decide (authorize.ts `needsFreshRead`). */
async function lookUp(
  deps: GatewayAppDeps,
  run: RunIdentity,
): Promise<{ ok: true; value: GatewayAgent | undefined } | { ok: false; error: string }> {
  const cached = await deps.agent(run, false);
  if (cached.ok && !needsFreshRead(run, cached.value)) return cached;
  const fresh = await deps.agent(run, true);
  return fresh.ok ? fresh : { ok: false, error: describeKubeError(fresh.error) };
}

/** The body of a call that has one (bytes as sent, and its JSON when it is JSON); `tooLarge` past the limit. */
async function readRequestBody(
  request: Request,
): Promise<{ readonly bytes: Uint8Array; readonly json: unknown } | undefined | 'tooLarge'> {
  if (request.method === 'GET' || request.method === 'HEAD') return undefined;
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > MAX_REQUEST_BYTES) return 'tooLarge';
  const bytes = await readLimitedBytes(request, MAX_REQUEST_BYTES);
  if (bytes === undefined) return 'tooLarge';
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    json = undefined;
  }
  return { bytes, json };
}
