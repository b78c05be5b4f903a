// Forwarding one authorised call to its vendor and its answer back (docs/design/gateway.md#forwarding): the answer's
// body is passed on as it is read, pulled by the client (nothing is read from the vendor ahead of what the client
// takes: backpressure), and read on the way for its usage (an event stream event by event, a JSON body whole, up to
// a limit). When the client goes away the vendor request is aborted. Each call ends in exactly one `finish`: the
// metrics, and the usage added to the run's delta.

import type { GatewayVendor } from '../api/gateway.ts';
import type { GatewayMetrics } from '../metrics/gateway.ts';
import type { Logger } from '../shared/log.ts';
import { oneCall, type RunRef } from './accumulator.ts';
import type { UsageFlusher } from './flusher.ts';
import { refusal } from './refusals.ts';
import { downstreamHeaders, type RouteMatch, upstreamHeaders, upstreamUrl } from './routes.ts';
import { SseDecoder } from './sse.ts';
import { type StreamMeter, streamMeter, type Tokens, usageFromBody } from './usage.ts';

/** The largest JSON answer whose usage is read (a copy is kept while it passes; larger: its usage is not read). */
export const MAX_METERED_JSON_BYTES = 32 * 1024 * 1024;

/** A call that passed every check, with the key to send. */
export interface AuthorisedCall {
  readonly vendor: GatewayVendor;
  readonly route: RouteMatch;
  readonly method: string;
  readonly query: URLSearchParams;
  readonly headers: Iterable<[string, string]>;
  readonly body: Uint8Array | undefined;
  /** The model the call named ('' when none). */
  readonly model: string;
  readonly run: RunRef;
  readonly station: string;
  readonly key: string;
  /** Aborts when the client goes away. */
  readonly clientSignal: AbortSignal;
  /** `performance.now()` when the call arrived. */
  readonly startedAt: number;
  /** Told how the call ended: its status and, when metered, its usage (the rate limits settle with it). */
  readonly onEnd?: ((code: number, tokens: Tokens | undefined) => void) | undefined;
}

export interface ForwardDeps {
  readonly upstreams: Readonly<Record<GatewayVendor, string>>;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  readonly flusher: UsageFlusher;
  readonly now: () => number;
  readonly fetch: typeof fetch;
  /** The upstream requests in flight (a stop aborts the ones left at its deadline). */
  readonly active: Set<AbortController>;
}

/** Reads usage from the bytes of an answer as they pass. */
interface BodyMeter {
  chunk(bytes: Uint8Array): void;
  end(): Tokens | undefined;
}

function sseMeter(meter: StreamMeter): BodyMeter {
  const decoder = new SseDecoder((e) => meter.event(e));
  return {
    chunk: (bytes) => decoder.feed(bytes),
    end: () => {
      decoder.end();
      return meter.tokens();
    },
  };
}

function jsonMeter(api: NonNullable<RouteMatch['usage']>): BodyMeter {
  let parts: Uint8Array[] = [];
  let size = 0;
  return {
    chunk(bytes) {
      size += bytes.byteLength;
      if (size > MAX_METERED_JSON_BYTES) parts = [];
      else parts.push(bytes);
    },
    end() {
      if (size > MAX_METERED_JSON_BYTES || parts.length === 0) return undefined;
      const all = new Uint8Array(size);
      let at = 0;
      for (const p of parts) {
        all.set(p, at);
        at += p.byteLength;
      }
      parts = [];
      try {
        return usageFromBody(api, JSON.parse(new TextDecoder().decode(all)));
      } catch {
        return undefined;
      }
    },
  };
}

const TOKEN_KINDS = [
  ['input', 'input'],
  ['output', 'output'],
  ['cacheRead', 'cache_read'],
  ['cacheWrite', 'cache_write'],
] as const;

/** Forwards `call`; the Response to give the client. */
export async function forward(deps: ForwardDeps, call: AuthorisedCall): Promise<Response> {
  const { vendor, route } = call;
  const labels = { namespace: call.run.namespace, station: call.station, model: call.model, vendor };
  const upstream = new AbortController();
  const onClientGone = () => upstream.abort(new Error('client went away'));
  call.clientSignal.addEventListener('abort', onClientGone, { once: true });
  deps.active.add(upstream);
  deps.metrics.inFlight.inc({ vendor });
  let finished = false;
  const finish = (code: number, tokens: Tokens | undefined, metered: boolean, how: string): void => {
    if (finished) return;
    finished = true;
    call.clientSignal.removeEventListener('abort', onClientGone);
    deps.active.delete(upstream);
    deps.metrics.inFlight.dec({ vendor });
    deps.metrics.requests.inc({ ...labels, code: String(code) });
    deps.metrics.duration.observe({ vendor }, (deps.now() - call.startedAt) / 1000);
    if (metered) {
      deps.flusher.record(call.run, oneCall(call.model, tokens));
      for (const [kind, label] of TOKEN_KINDS)
        if (tokens !== undefined && tokens[kind] > 0)
          deps.metrics.tokens.inc({ ...labels, kind: label }, tokens[kind]);
    }
    deps.logger.debug('Call ended', { ...labels, agent: call.run.name, code, how, tokens });
    call.onEnd?.(code, metered ? tokens : undefined);
  };

  let res: Response;
  try {
    res = await deps.fetch(upstreamUrl(deps.upstreams[vendor], route, call.query), {
      method: call.method,
      headers: upstreamHeaders(vendor, call.headers, call.key),
      ...(call.body === undefined ? {} : { body: call.body }),
      redirect: 'manual',
      signal: upstream.signal,
    });
  } catch (error) {
    const gone = call.clientSignal.aborted;
    finish(gone ? 499 : 502, undefined, false, gone ? 'client went away' : 'upstream unreachable');
    if (!gone)
      deps.logger.warn('The vendor could not be reached', { vendor, error: String(error).slice(0, 300) });
    const r = refusal(vendor, 'upstream', `the ${vendor} API could not be reached`);
    return Response.json(r.body, { status: r.status });
  }
  deps.metrics.firstByte.observe({ vendor }, (deps.now() - call.startedAt) / 1000);
  const metered = route.usage !== undefined && res.ok;
  const contentType = res.headers.get('content-type') ?? '';
  const meter: BodyMeter | undefined =
    !metered || route.usage === undefined
      ? undefined
      : contentType.includes('text/event-stream')
        ? sseMeter(streamMeter(route.usage))
        : jsonMeter(route.usage);
  const headers = downstreamHeaders(res.headers);
  if (res.body === null) {
    finish(res.status, meter?.end(), metered, 'no body');
    return new Response(null, { status: res.status, headers });
  }
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          finish(res.status, meter?.end(), metered, 'upstream broke off');
          controller.error(error);
          return;
        }
        if (next.done) {
          finish(res.status, meter?.end(), metered, 'complete');
          controller.close();
          return;
        }
        meter?.chunk(next.value);
        controller.enqueue(next.value);
      },
      cancel(reason) {
        finish(res.status, meter?.end(), metered, 'client went away');
        upstream.abort(new Error('client went away'));
        return reader.cancel(reason).catch(() => undefined);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: res.status, headers });
}
