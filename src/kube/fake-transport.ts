import type { Result } from '../shared/result.ts';
import { err, ok } from '../shared/result.ts';
import { apiErrorFromResponse, type KubeError } from './errors.ts';
import type { Query } from './paths.ts';
import type { Response, Transport } from './transport.ts';

/** A request as the fake saw it; `body` is parsed JSON when it was JSON. */
export interface FakeRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Query;
  readonly body: unknown;
  readonly contentType: string | undefined;
}

/** A scripted answer: an HTTP status with a body (objects are JSON-encoded), or a transport-level error. */
export type FakeReply = { readonly status: number; readonly body?: unknown } | { readonly error: KubeError };

/** Controls one fake stream: push chunks (strings are UTF-8 encoded), watch the caller's signal. */
export interface FakeStreamControl {
  push(chunk: string | Uint8Array): void;
  readonly signal: AbortSignal;
  /** Resolves when the caller aborts (for streams that should hang until then). */
  aborted(): Promise<void>;
}

export interface FakeTransportOptions {
  readonly request?: (req: FakeRequest) => FakeReply | Promise<FakeReply>;
  /** Runs a stream: push chunks, then return how it ended (`'end'` = clean close). */
  readonly stream?: (req: FakeRequest, ctl: FakeStreamControl) => Promise<FakeReply | 'end'>;
}

/** A transport that records requests and answers from scripts: for unit tests of code built on Transport. */
export interface FakeTransport extends Transport {
  readonly requests: FakeRequest[];
}

/** Creates a fake transport (no sockets). Unscripted requests answer 404. */
export function createFakeTransport(opts: FakeTransportOptions): FakeTransport {
  const requests: FakeRequest[] = [];
  const toBody = (body: unknown): string => (typeof body === 'string' ? body : JSON.stringify(body ?? {}));
  const parse = (body: unknown): unknown => {
    if (typeof body !== 'string') return body;
    try {
      return JSON.parse(body);
    } catch {
      return body;
    }
  };
  const finish = (reply: FakeReply): Result<Response, KubeError> => {
    if ('error' in reply) return err(reply.error);
    if (reply.status >= 200 && reply.status < 300)
      return ok({ status: reply.status, text: toBody(reply.body) });
    return err(apiErrorFromResponse(reply.status, toBody(reply.body)));
  };
  return {
    requests,
    async request(method, path, o = {}) {
      const req = { method, path, query: o.query ?? {}, body: parse(o.body), contentType: o.contentType };
      requests.push(req);
      if (o.signal?.aborted) return err({ kind: 'aborted', message: 'aborted' });
      const reply = opts.request
        ? await opts.request(req)
        : { status: 404, body: { kind: 'Status', reason: 'NotFound', code: 404 } };
      return finish(reply);
    },
    async stream(path, o) {
      const req = { method: 'GET', path, query: o.query ?? {}, body: undefined, contentType: undefined };
      requests.push(req);
      if (!opts.stream) return err({ kind: 'network', message: 'no stream scripted' });
      const signal = o.signal ?? new AbortController().signal;
      const ctl: FakeStreamControl = {
        push: (chunk) => {
          if (!signal.aborted) o.onData(typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk);
        },
        signal,
        aborted: () =>
          new Promise<void>((resolve) => {
            if (signal.aborted) resolve();
            else signal.addEventListener('abort', () => resolve(), { once: true });
          }),
      };
      const outcome = await opts.stream(req, ctl);
      if (signal.aborted) return err({ kind: 'aborted', message: 'aborted by caller' });
      if (outcome === 'end') return ok({ status: 200 });
      const r = finish(outcome);
      return r.ok ? ok({ status: r.value.status }) : r;
    },
    close() {},
  };
}
