import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import * as v from 'valibot';
import { type ClusterAccess, loadKubeconfig } from './kubeconfig.ts';
import { KubeListSchema, type KubeObject, KubeObjectSchema, type Status, StatusSchema } from './schemas.ts';

/** A raw API response: status code, headers and the body as text. */
export interface KubeResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** An API error: the HTTP status, the Status `reason` (when the body is a Status) and the body. */
export class KubeError extends Error {
  override readonly name = 'KubeError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly reason: string | undefined,
    readonly body: string,
  ) {
    super(`${method} ${path}: HTTP ${status}${reason ? ` ${reason}` : ''}: ${body.slice(0, 500)}`);
  }
}

export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

export interface RequestOptions {
  readonly query?: Query;
  /** A JSON-serialisable body (objects are stringified) or raw text. */
  readonly body?: unknown;
  readonly contentType?: string;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** Patch flavours the API server accepts. */
export type PatchType = 'merge' | 'json' | 'strategic';
const PATCH_CONTENT_TYPE: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
};

/** One decoded watch event. */
export type WatchEvent =
  | { readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK'; readonly object: KubeObject }
  | { readonly type: 'ERROR'; readonly object: Status };

/** How a watch stream ended: cleanly (server timeout / stop), or with an HTTP error before streaming. */
export type WatchEnd =
  | { readonly kind: 'closed' }
  | { readonly kind: 'aborted' }
  | {
      readonly kind: 'http-error';
      readonly status: number;
      readonly reason: string | undefined;
      readonly body: string;
    };

export interface WatchOptions {
  readonly resourceVersion?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly timeoutSeconds?: number;
  readonly allowWatchBookmarks?: boolean;
  readonly signal?: AbortSignal;
  /** Abort the stream when no bytes arrive for this long (dead-connection detector). */
  readonly idleTimeoutMs?: number;
}

const WatchEventSchema = v.object({
  type: v.picklist(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']),
  object: v.unknown(),
});

/** Builds an API path: `apiVersion` "v1" → /api/v1, otherwise /apis/<group>/<version>. */
export function apiPath(
  apiVersion: string,
  resource: string,
  where: { readonly namespace?: string; readonly name?: string; readonly subresource?: string } = {},
): string {
  const base = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
  const ns = where.namespace !== undefined ? `/namespaces/${encodeURIComponent(where.namespace)}` : '';
  const name = where.name !== undefined ? `/${encodeURIComponent(where.name)}` : '';
  const sub = where.subresource !== undefined ? `/${where.subresource}` : '';
  return `${base}${ns}/${resource}${name}${sub}`;
}

function withQuery(path: string, query: Query | undefined): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, val] of Object.entries(query)) if (val !== undefined) params.set(k, String(val));
  const qs = params.toString();
  return qs === '' ? path : `${path}${path.includes('?') ? '&' : '?'}${qs}`;
}

function statusReason(body: string): string | undefined {
  try {
    const parsed = v.safeParse(StatusSchema, JSON.parse(body));
    return parsed.success ? parsed.output.reason : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A small Kubernetes API client for tests and the test node agent: one keep-alive HTTPS agent, client
 * certificate or bearer auth, JSON in and out, every response validated with valibot before use.
 * Methods that return objects throw KubeError on any HTTP status >= 400.
 */
export class KubeClient {
  readonly #access: ClusterAccess;
  readonly #agent: Agent;

  constructor(access: ClusterAccess) {
    this.#access = access;
    this.#agent = new Agent({
      keepAlive: true,
      maxSockets: 32,
      ...(access.ca !== undefined ? { ca: access.ca } : {}),
      ...(access.cert !== undefined ? { cert: access.cert } : {}),
      ...(access.key !== undefined ? { key: access.key } : {}),
      rejectUnauthorized: !access.insecure,
    });
  }

  /** A client for the current context of the kubeconfig at `path`. */
  static fromKubeconfig(path: string): KubeClient {
    return new KubeClient(loadKubeconfig(path));
  }

  /** The API server URL this client talks to. */
  get server(): URL {
    return this.#access.server;
  }

  /** Closes idle keep-alive sockets; the client stays usable. */
  close(): void {
    this.#agent.destroy();
  }

  #open(method: string, path: string, opts: RequestOptions, accept: string): Promise<IncomingMessage> {
    const url = new URL(withQuery(path, opts.query), this.#access.server);
    let payload: string | undefined;
    if (opts.body !== undefined)
      payload = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    const headers: Record<string, string> = { accept };
    if (payload !== undefined) {
      headers['content-type'] = opts.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    if (this.#access.token !== undefined) headers.authorization = `Bearer ${this.#access.token}`;
    return new Promise((resolvePromise, reject) => {
      const req = httpsRequest(url, {
        method,
        headers,
        agent: this.#agent,
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      if (opts.timeoutMs !== undefined) {
        req.setTimeout(opts.timeoutMs, () => req.destroy(new Error(`${method} ${path}: timed out`)));
      }
      req.on('response', resolvePromise);
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Sends one request and reads the whole response body. Never throws on HTTP status; only on transport errors. */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<KubeResponse> {
    const res = await this.#open(method, path, { timeoutMs: 30_000, ...opts }, 'application/json, */*');
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    return {
      status: res.statusCode ?? 0,
      headers: res.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
  }

  /** Sends a request and parses the JSON response with `schema`; throws KubeError for HTTP >= 400. */
  async json<S extends v.GenericSchema>(
    method: string,
    path: string,
    schema: S,
    opts: RequestOptions = {},
  ): Promise<v.InferOutput<S>> {
    const res = await this.request(method, path, opts);
    if (res.status >= 400) throw new KubeError(method, path, res.status, statusReason(res.body), res.body);
    let raw: unknown;
    try {
      raw = JSON.parse(res.body);
    } catch {
      throw new Error(`${method} ${path}: response is not JSON: ${res.body.slice(0, 200)}`);
    }
    const parsed = v.safeParse(schema, raw);
    if (!parsed.success) {
      throw new Error(`${method} ${path}: unexpected response shape: ${v.summarize(parsed.issues)}`);
    }
    return parsed.output;
  }

  /** GET one object. */
  get<S extends v.GenericSchema = typeof KubeObjectSchema>(
    path: string,
    schema?: S,
  ): Promise<v.InferOutput<S>> {
    return this.json('GET', path, schema ?? KubeObjectSchema);
  }

  /** GET one object; undefined when it does not exist (404). */
  async tryGet<S extends v.GenericSchema = typeof KubeObjectSchema>(
    path: string,
    schema?: S,
  ): Promise<v.InferOutput<S> | undefined> {
    try {
      return await this.get(path, schema);
    } catch (error) {
      if (error instanceof KubeError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** POST an object to a collection path. */
  create<S extends v.GenericSchema = typeof KubeObjectSchema>(
    collectionPath: string,
    body: unknown,
    schema?: S,
  ): Promise<v.InferOutput<S>> {
    return this.json('POST', collectionPath, schema ?? KubeObjectSchema, { body });
  }

  /** PUT a whole object (its metadata.resourceVersion is the precondition). */
  replace<S extends v.GenericSchema = typeof KubeObjectSchema>(
    path: string,
    body: unknown,
    schema?: S,
  ): Promise<v.InferOutput<S>> {
    return this.json('PUT', path, schema ?? KubeObjectSchema, { body });
  }

  /** PATCH an object (merge patch by default). */
  patch<S extends v.GenericSchema = typeof KubeObjectSchema>(
    path: string,
    patch: unknown,
    type: PatchType = 'merge',
    schema?: S,
  ): Promise<v.InferOutput<S>> {
    return this.json('PATCH', path, schema ?? KubeObjectSchema, {
      body: patch,
      contentType: PATCH_CONTENT_TYPE[type],
    });
  }

  /**
   * DELETE an object. Returns false when it was already gone (404); throws KubeError otherwise.
   * Jobs should be deleted with `propagationPolicy: 'Background'` (their default is Orphan).
   */
  async delete(
    path: string,
    opts: {
      readonly propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
      readonly gracePeriodSeconds?: number;
      readonly preconditionUid?: string;
    } = {},
  ): Promise<boolean> {
    const body = {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      ...(opts.propagationPolicy ? { propagationPolicy: opts.propagationPolicy } : {}),
      ...(opts.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: opts.gracePeriodSeconds } : {}),
      ...(opts.preconditionUid !== undefined ? { preconditions: { uid: opts.preconditionUid } } : {}),
    };
    const res = await this.request('DELETE', path, { body });
    if (res.status === 404) return false;
    if (res.status >= 400) throw new KubeError('DELETE', path, res.status, statusReason(res.body), res.body);
    return true;
  }

  /**
   * LISTs a collection, following `continue` tokens; each item is validated with `itemSchema`.
   * Returns the items and the resourceVersion of the list (to start a watch from).
   */
  async list<S extends v.GenericSchema = typeof KubeObjectSchema>(
    collectionPath: string,
    opts: { readonly labelSelector?: string; readonly fieldSelector?: string; readonly limit?: number } = {},
    itemSchema?: S,
  ): Promise<{ items: v.InferOutput<S>[]; resourceVersion: string }> {
    const items: v.InferOutput<S>[] = [];
    let token: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.json('GET', collectionPath, KubeListSchema, {
        query: {
          limit: opts.limit ?? 500,
          labelSelector: opts.labelSelector,
          fieldSelector: opts.fieldSelector,
          continue: token,
        },
      });
      for (const raw of page.items ?? []) {
        const parsed = v.safeParse(itemSchema ?? KubeObjectSchema, raw);
        if (!parsed.success)
          throw new Error(`LIST ${collectionPath}: bad item: ${v.summarize(parsed.issues)}`);
        items.push(parsed.output);
      }
      resourceVersion = page.metadata.resourceVersion ?? resourceVersion;
      token = page.metadata.continue || undefined;
    } while (token !== undefined);
    return { items, resourceVersion };
  }

  /**
   * Watches a collection and calls `onEvent` for each decoded event, in order, until the server closes
   * the stream, the signal aborts, or the idle timer fires (reported as 'aborted'). An HTTP error before
   * the stream starts (e.g. 410 Gone) resolves as `http-error`; in-stream errors arrive as ERROR events.
   * Rejects only on transport errors or undecodable lines.
   */
  async watch(
    collectionPath: string,
    opts: WatchOptions,
    onEvent: (event: WatchEvent) => void | Promise<void>,
  ): Promise<WatchEnd> {
    const local = new AbortController();
    const onAbort = (): void => local.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) local.abort();
    let idle: NodeJS.Timeout | undefined;
    let idleFired = false;
    const arm = (): void => {
      if (opts.idleTimeoutMs === undefined) return;
      clearTimeout(idle);
      idle = setTimeout(() => {
        idleFired = true;
        local.abort();
      }, opts.idleTimeoutMs);
    };
    try {
      arm();
      const res = await this.#open(
        'GET',
        collectionPath,
        {
          query: {
            watch: 1,
            resourceVersion: opts.resourceVersion,
            labelSelector: opts.labelSelector,
            fieldSelector: opts.fieldSelector,
            timeoutSeconds: opts.timeoutSeconds,
            allowWatchBookmarks: opts.allowWatchBookmarks,
          },
          signal: local.signal,
        },
        'application/json',
      );
      const status = res.statusCode ?? 0;
      if (status >= 400) {
        const chunks: Buffer[] = [];
        for await (const chunk of res) chunks.push(chunk as Buffer);
        const body = Buffer.concat(chunks).toString('utf8');
        return { kind: 'http-error', status, reason: statusReason(body), body };
      }
      let buffered = '';
      for await (const chunk of res) {
        arm();
        buffered += (chunk as Buffer).toString('utf8');
        let nl = buffered.indexOf('\n');
        while (nl !== -1) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          nl = buffered.indexOf('\n');
          if (line === '') continue;
          await onEvent(decodeWatchLine(line));
        }
      }
      return { kind: 'closed' };
    } catch (error) {
      if (local.signal.aborted) return { kind: 'aborted' };
      throw error;
    } finally {
      clearTimeout(idle);
      opts.signal?.removeEventListener('abort', onAbort);
      if (idleFired) local.abort();
    }
  }

  /**
   * Reads a container's log through the API server (`pods/log`, proxied to the node's kubelet endpoint).
   * Throws KubeError for HTTP >= 400 (e.g. a container that has not started).
   */
  async logs(
    namespace: string,
    pod: string,
    opts: {
      readonly container?: string;
      readonly tailLines?: number;
      readonly limitBytes?: number;
      readonly timestamps?: boolean;
      readonly previous?: boolean;
    } = {},
  ): Promise<string> {
    const path = apiPath('v1', 'pods', { namespace, name: pod, subresource: 'log' });
    const res = await this.request('GET', path, {
      query: {
        container: opts.container,
        tailLines: opts.tailLines,
        limitBytes: opts.limitBytes,
        timestamps: opts.timestamps,
        previous: opts.previous,
      },
    });
    if (res.status >= 400) throw new KubeError('GET', path, res.status, statusReason(res.body), res.body);
    return res.body;
  }
}

/** Decodes one watch line into a typed event (ERROR objects parsed as Status). Throws on garbage. */
export function decodeWatchLine(line: string): WatchEvent {
  const parsed = v.safeParse(WatchEventSchema, JSON.parse(line));
  if (!parsed.success) throw new Error(`bad watch event: ${line.slice(0, 200)}`);
  const { type, object } = parsed.output;
  if (type === 'ERROR') return { type, object: v.parse(StatusSchema, object) };
  return { type, object: v.parse(KubeObjectSchema, object) };
}
