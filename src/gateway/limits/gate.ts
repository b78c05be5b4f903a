// Where the rate limits meet a call (docs/design/gateway.md#rate-limits): after the call was authorised and its key
// found, `hold` waits for the key's capacity (limiter.ts) under the limits configured for it (config.ts, this
// replica's share) and answers 429 in the vendor's shape when the wait was too long; a call let go is charged its
// estimate (estimate.ts), its answer's rate-limit headers (and a 429's body) are learned (headers.ts), and its
// measured tokens settle the charge when it ends.
import type { GatewayVendor } from '../../api/gateway.ts';
import type { GatewayMetrics } from '../../metrics/gateway.ts';
import type { RunIdentity } from '../../shared/gateway-credential.ts';
import type { Logger } from '../../shared/log.ts';
import type { RouteMatch } from '../routes.ts';
import type { Tokens } from '../usage.ts';
import { rateLimited } from './answer.ts';
import { type KeyLimits, shareOf } from './buckets.ts';
import { parseRateLimits } from './config.ts';
import { estimateTokens, measuredTokens } from './estimate.ts';
import { observeAnswer } from './headers.ts';
import type { RateLimiter } from './limiter.ts';

/** The most of a vendor's 429 body read to learn from it (Gemini's RetryInfo). */
const MAX_429_BODY_BYTES = 64 * 1024;

export interface HoldRequest {
  readonly vendor: GatewayVendor;
  readonly run: RunIdentity;
  readonly station: string;
  readonly model: string;
  readonly keyName: string;
  readonly route: RouteMatch;
  readonly body: { readonly bytes: Uint8Array; readonly json: unknown } | undefined;
  readonly signal: AbortSignal;
}

export type Hold =
  | { readonly kind: 'refused'; readonly response: Response }
  | {
      readonly kind: 'go';
      /** For forward's `onEnd`: the call ended with `code` and, when metered, `tokens`. */
      readonly ended: (code: number, tokens: Tokens | undefined) => void;
      /** Learns from the answer (reading a 429's body), and gives it on. */
      readonly answered: (res: Response) => Promise<Response>;
    };

export interface RateLimitGate {
  hold(r: HoldRequest): Promise<Hold>;
}

export function createRateLimitGate(o: {
  readonly limiter: RateLimiter;
  /** The annotation text of the namespace's agent-secrets (read with its keys), undefined when none. */
  readonly annotation: (namespace: string) => string | undefined;
  /** The gateway replicas sharing each configured limit. */
  readonly replicas: number;
  readonly now: () => number;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
}): RateLimitGate {
  const parsed = new Map<string, { text: string; byKey: ReadonlyMap<string, KeyLimits> }>();
  const limitsFor = (namespace: string, keyName: string): KeyLimits => {
    const text = o.annotation(namespace) ?? '';
    let p = parsed.get(namespace);
    if (p === undefined || p.text !== text) {
      const r = parseRateLimits(text);
      for (const problem of r.problems) o.logger.warn('Ignored a rate limit', { namespace, problem });
      p = { text, byKey: r.byKey };
      parsed.set(namespace, p);
    }
    return shareOf(p.byKey.get(keyName) ?? {}, o.replicas);
  };
  return {
    async hold(r) {
      const id = { namespace: r.run.namespace, vendor: r.vendor, key: r.keyName };
      const tokens = estimateTokens(r.route.usage, r.body?.bytes.byteLength ?? 0, r.body?.json);
      const admission = await o.limiter.admit(
        id,
        limitsFor(r.run.namespace, r.keyName),
        `${r.run.namespace}/${r.run.name}/${r.run.uid}`,
        tokens,
        r.signal,
      );
      if (admission.kind === 'refused') {
        const answer = rateLimited(
          r.vendor,
          admission.retryAfterMs,
          `the ${r.vendor} key ${r.keyName} of ${r.run.namespace} is at its rate limit; retry later`,
        );
        o.metrics.requests.inc({
          namespace: r.run.namespace,
          station: r.station,
          model: r.model,
          vendor: r.vendor,
          code: '429',
        });
        return {
          kind: 'refused',
          response: Response.json(answer.body, { status: answer.status, headers: answer.headers }),
        };
      }
      const { ticket } = admission;
      return {
        kind: 'go',
        ended: (code, used) =>
          ticket.settle(
            code >= 200 && code < 300 ? (used === undefined ? undefined : measuredTokens(used)) : 0,
          ),
        async answered(res) {
          const get = (name: string) => res.headers.get(name) ?? undefined;
          if (res.status !== 429 || res.body === null) {
            ticket.observe(observeAnswer(r.vendor, res.status, get, undefined, o.now()));
            return res;
          }
          const text = await readUpTo(res, MAX_429_BODY_BYTES);
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          ticket.observe(observeAnswer(r.vendor, res.status, get, json, o.now()));
          return new Response(text, { status: res.status, headers: res.headers });
        },
      };
    },
  };
}

async function readUpTo(res: Response, limit: number): Promise<string> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    parts.push(next.value);
    size += next.value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      break;
    }
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.byteLength;
  }
  return new TextDecoder().decode(all);
}
