// The gateway's route table (docs/design/gateway.md#ports-and-routes), pure: which calls of which vendor are
// forwarded, what each is (a metered model call, a token count, a model list), where the model of a call is, where
// the client's credential is, and how the upstream request's headers and URL are made from the client's (the
// credential taken off, the vendor key put on, hop-by-hop headers dropped).

import type { GatewayVendor } from '../api/gateway.ts';

/** The wire protocol of a metered call: it says where the usage of the answer is. */
export type UsageApi = 'anthropic-messages' | 'openai-responses' | 'openai-chat' | 'gemini';

/** A forwarded call, as the route table sees it. */
export interface RouteMatch {
  readonly vendor: GatewayVendor;
  /** The path sent upstream (the vendor prefix taken off). */
  readonly upstreamPath: string;
  /** Where the answer's usage is; undefined for calls that use no tokens (model lists, token counts). */
  readonly usage: UsageApi | undefined;
  /** Where the call's model is: the JSON body's `model`, the path (Gemini), or none (model lists). */
  readonly model: { readonly from: 'body' } | { readonly from: 'path'; readonly model: string } | undefined;
}

/** The path prefix of each vendor on the gateway. */
export const VENDOR_PREFIX: Readonly<Record<GatewayVendor, string>> = {
  anthropic: '/anthropic',
  openai: '/openai',
  gemini: '/gemini',
};

interface Row {
  readonly method: 'GET' | 'POST';
  readonly path: RegExp;
  readonly usage?: UsageApi;
  readonly model?: 'body' | 'path';
}

/**
 * Per vendor, the calls forwarded (paths after the prefix). Gemini's model is the `{model}` of the path; its API
 * versions `v1beta` (Gemini CLI) and `v1` (@google/genai's default) are both served.
 */
const ROUTES: Readonly<Record<GatewayVendor, readonly Row[]>> = {
  anthropic: [
    { method: 'POST', path: /^\/v1\/messages$/, usage: 'anthropic-messages', model: 'body' },
    { method: 'POST', path: /^\/v1\/messages\/count_tokens$/, model: 'body' },
    { method: 'GET', path: /^\/v1\/models$/ },
  ],
  openai: [
    { method: 'POST', path: /^\/v1\/responses$/, usage: 'openai-responses', model: 'body' },
    { method: 'POST', path: /^\/v1\/chat\/completions$/, usage: 'openai-chat', model: 'body' },
    { method: 'GET', path: /^\/v1\/models$/ },
  ],
  gemini: [
    {
      method: 'POST',
      path: /^\/v1(?:beta)?\/models\/([^/:]+):(?:generateContent|streamGenerateContent)$/,
      usage: 'gemini',
      model: 'path',
    },
    { method: 'POST', path: /^\/v1(?:beta)?\/models\/([^/:]+):countTokens$/, model: 'path' },
    { method: 'GET', path: /^\/v1(?:beta)?\/models$/ },
  ],
};

/** The vendor a gateway path belongs to, and the rest of the path; undefined outside every prefix. */
export function vendorOf(path: string): { vendor: GatewayVendor; rest: string } | undefined {
  for (const [vendor, prefix] of Object.entries(VENDOR_PREFIX) as [GatewayVendor, string][]) {
    if (path.startsWith(`${prefix}/`)) return { vendor, rest: path.slice(prefix.length) };
  }
  return undefined;
}

/**
 * The route of `method path` under `vendor`'s prefix (`rest` is the path after it), or undefined when the gateway
 * does not forward it. Path segments are compared decoded (`%3A` is `:`).
 */
export function matchRoute(vendor: GatewayVendor, method: string, rest: string): RouteMatch | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rest);
  } catch {
    return undefined;
  }
  for (const row of ROUTES[vendor]) {
    if (row.method !== method.toUpperCase()) continue;
    const m = row.path.exec(decoded);
    if (m === null) continue;
    const model =
      row.model === 'path'
        ? { from: 'path' as const, model: m[1] ?? '' }
        : row.model === 'body'
          ? { from: 'body' as const }
          : undefined;
    return { vendor, upstreamPath: decoded, usage: row.usage, model };
  }
  return undefined;
}

/** The model a call names: the path's (Gemini) or the JSON body's `model`; undefined when it names none. */
export function modelOf(route: RouteMatch, body: unknown): string | undefined {
  if (route.model === undefined) return undefined;
  if (route.model.from === 'path') return route.model.model || undefined;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const model = (body as Record<string, unknown>).model;
  return typeof model === 'string' && model !== '' ? model : undefined;
}

const bearer = (value: string | undefined): string | undefined => {
  const m = value === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(value);
  return m?.[1];
};

/**
 * The credential a client presents, where each vendor's SDKs and CLIs put the key: Anthropic `x-api-key` (or
 * `Authorization: Bearer`, `ANTHROPIC_AUTH_TOKEN`), OpenAI `Authorization: Bearer`, Gemini `x-goog-api-key` (or
 * `?key=`). `header` reads a request header by lower-case name.
 */
export function clientCredential(
  vendor: GatewayVendor,
  header: (name: string) => string | undefined,
  query: URLSearchParams,
): string | undefined {
  switch (vendor) {
    case 'anthropic':
      return header('x-api-key') ?? bearer(header('authorization'));
    case 'openai':
      return bearer(header('authorization'));
    case 'gemini':
      return header('x-goog-api-key') ?? query.get('key') ?? undefined;
  }
}

/** Hop-by-hop headers (HTTP semantics: they belong to one connection) and the ones the HTTP client sets itself. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

/** Headers that may carry a client's credential, for any vendor: never forwarded. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'x-api-key', 'x-goog-api-key', 'cookie']);

/** The names a `Connection` header lists: hop-by-hop too. */
function connectionTokens(headers: Iterable<[string, string]>): Set<string> {
  const out = new Set<string>();
  for (const [name, value] of headers) {
    if (name.toLowerCase() !== 'connection') continue;
    for (const token of value.split(',')) out.add(token.trim().toLowerCase());
  }
  return out;
}

/** The header that carries `vendor`'s key upstream, and its value. */
export function keyHeader(vendor: GatewayVendor, key: string): [string, string] {
  switch (vendor) {
    case 'anthropic':
      return ['x-api-key', key];
    case 'openai':
      return ['authorization', `Bearer ${key}`];
    case 'gemini':
      return ['x-goog-api-key', key];
  }
}

/**
 * The upstream request's headers: the client's, less hop-by-hop ones, every credential header and `accept-encoding`
 * (the gateway reads the answer's usage, so it asks for it unencoded), plus the vendor key in its header.
 */
export function upstreamHeaders(
  vendor: GatewayVendor,
  client: Iterable<[string, string]>,
  key: string,
): [string, string][] {
  const entries = [...client];
  const listed = connectionTokens(entries);
  const out: [string, string][] = [];
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || listed.has(lower) || CREDENTIAL_HEADERS.has(lower)) continue;
    if (lower === 'accept-encoding') continue;
    out.push([lower, value]);
  }
  out.push(['accept-encoding', 'identity'], keyHeader(vendor, key));
  return out;
}

/**
 * The answer's headers as the client gets them: hop-by-hop ones, `content-length` and `content-encoding` dropped
 * (the body is passed on as it is read, decoded).
 */
export function downstreamHeaders(upstream: Iterable<[string, string]>): [string, string][] {
  const entries = [...upstream];
  const listed = connectionTokens(entries);
  return entries
    .map(([name, value]): [string, string] => [name.toLowerCase(), value])
    .filter(([name]) => !HOP_BY_HOP.has(name) && !listed.has(name) && name !== 'content-encoding');
}

/** The upstream URL: the vendor's base, the path after the prefix, the client's query less `key` (Gemini's key). */
export function upstreamUrl(base: string, route: RouteMatch, query: URLSearchParams): string {
  const q = new URLSearchParams(query);
  q.delete('key');
  const text = q.toString();
  const path = route.upstreamPath
    .split('/')
    .map((segment) => encodeURIComponent(segment).replace(/%3A/gi, ':'))
    .join('/');
  return `${base}${path}${text === '' ? '' : `?${text}`}`;
}
