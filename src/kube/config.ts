import { Buffer } from 'node:buffer';
import { readFile } from 'node:fs/promises';
import { delimiter } from 'node:path';
import * as v from 'valibot';
import type { Result } from '../shared/result.ts';
import { err, ok } from '../shared/result.ts';
import type { KubeError } from './errors.ts';
import type { TlsMaterial } from './tls.ts';
import type { CredentialSource, Credentials } from './transport.ts';

/** Where the service-account files live in a pod. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** How to reach and authenticate to one API server. */
export interface ClusterConfig {
  /** Base URL, e.g. `https://10.0.0.1:443`. */
  readonly server: string;
  readonly credentials: CredentialSource;
  /** The pod's namespace (in cluster) or the context's namespace (kubeconfig), when known. */
  readonly namespace: string | undefined;
  readonly source: 'in-cluster' | 'kubeconfig';
}

const InClusterEnvSchema = v.object({
  KUBERNETES_SERVICE_HOST: v.pipe(v.string(), v.trim(), v.minLength(1)),
  KUBERNETES_SERVICE_PORT: v.optional(v.pipe(v.string(), v.trim(), v.regex(/^\d{1,5}$/)), '443'),
});

const NonEmptyText = v.pipe(v.string(), v.trim(), v.minLength(1));

export interface InClusterOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Directory holding `token`, `ca.crt`, `namespace` (default {@link SERVICE_ACCOUNT_DIR}); overridable for tests. */
  readonly serviceAccountDir?: string | undefined;
  /** How long a read token is reused before the file is read again (default 10 000 ms). */
  readonly tokenCacheMs?: number | undefined;
  /** Clock for the token cache (default `Date.now`). */
  readonly now?: (() => number) | undefined;
}

/**
 * In-cluster config: server from `KUBERNETES_SERVICE_HOST`/`_PORT`, bearer token and CA from the service-account
 * directory, namespace from its `namespace` file. The token (and CA) are re-read at most every `tokenCacheMs` and at
 * once after a 401, so projected-token rotation works; a failed re-read keeps the last good token.
 * Fails (`config`) when the env is missing or the token cannot be read at start.
 */
export async function loadInClusterConfig(opts: InClusterOptions): Promise<Result<ClusterConfig, KubeError>> {
  const env = v.safeParse(InClusterEnvSchema, opts.env);
  if (!env.success) {
    return err({
      kind: 'config',
      message: 'not in a cluster: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset or invalid',
    });
  }
  const dir = opts.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const host = env.output.KUBERNETES_SERVICE_HOST;
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${env.output.KUBERNETES_SERVICE_PORT}`;
  if (!v.safeParse(ServerSchema, server).success) {
    return err({
      kind: 'config',
      message: `not in a cluster: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT make no valid URL (${JSON.stringify(server)})`,
    });
  }
  const cacheMs = opts.tokenCacheMs ?? 10_000;
  const now = opts.now ?? Date.now;
  const readText = async (name: string): Promise<string | undefined> => {
    try {
      const r = v.safeParse(NonEmptyText, await readFile(`${dir}/${name}`, 'utf8'));
      return r.success ? r.output : undefined;
    } catch {
      return undefined;
    }
  };

  let cached: { creds: Credentials; at: number } | undefined;
  const credentials: CredentialSource = async ({ refresh }) => {
    if (cached && !refresh && now() - cached.at < cacheMs) return ok(cached.creds);
    const [token, ca] = await Promise.all([readText('token'), readText('ca.crt')]);
    if (token === undefined) {
      if (cached) {
        cached = { creds: cached.creds, at: now() };
        return ok(cached.creds);
      }
      return err({ kind: 'config', message: `cannot read the service-account token in ${dir}` });
    }
    const tls: TlsMaterial = ca !== undefined ? { ca } : (cached?.creds.tls ?? {});
    cached = { creds: { headers: { Authorization: `Bearer ${token}` }, tls }, at: now() };
    return ok(cached.creds);
  };
  const first = await credentials({ refresh: true });
  if (!first.ok) return first;
  return ok({ server, credentials, namespace: await readText('namespace'), source: 'in-cluster' });
}

export interface KubeconfigOptions {
  /**
   * One path or several joined by the platform's path delimiter (as in `$KUBECONFIG`), merged as kubectl merges
   * them: a user, cluster or context named in several files is taken from the first (no error), a file of the list
   * that does not exist is skipped (a single path must exist), and the current-context is the first file's that has
   * one.
   */
  readonly path: string;
  /** Context to use instead of `current-context`. */
  readonly context?: string | undefined;
  /** How long credentials are reused before the kubeconfig's auth is applied again (default 10 000 ms). */
  readonly cacheMs?: number | undefined;
  readonly now?: (() => number) | undefined;
}

const HeaderValueSchema = v.union([v.string(), v.number(), v.array(v.string())]);
/** What `KubeConfig.applyToHTTPSOptions` fills in, checked before use. */
const AppliedOptionsSchema = v.looseObject({
  headers: v.optional(v.record(v.string(), v.optional(HeaderValueSchema))),
  auth: v.optional(v.string()),
  ca: v.optional(v.union([v.string(), v.instance(Uint8Array)])),
  cert: v.optional(v.union([v.string(), v.instance(Uint8Array)])),
  key: v.optional(v.union([v.string(), v.instance(Uint8Array)])),
  rejectUnauthorized: v.optional(v.boolean()),
  servername: v.optional(v.string()),
});

const ServerSchema = v.pipe(v.string(), v.url(), v.regex(/^https?:\/\//));

/**
 * Out-of-cluster config from a kubeconfig, loaded and authenticated by `@kubernetes/client-node` 1.4's KubeConfig
 * (client certificates, tokens, token files, exec and OIDC plugins); only its headers and TLS material are used, the
 * requests go through our own transport. Credentials are re-applied at most every `cacheMs` and at once after a 401.
 * Caveats: `proxy-url` is ignored; exec plugins need `--allow-run` on Deno.
 */
export async function loadKubeconfig(opts: KubeconfigOptions): Promise<Result<ClusterConfig, KubeError>> {
  const { KubeConfig } = await import('@kubernetes/client-node/dist/config.js');
  let kc = new KubeConfig();
  const paths = opts.path.split(delimiter).filter((p) => p !== '');
  try {
    const loaded: InstanceType<typeof KubeConfig>[] = [];
    for (const p of paths) {
      const one = new KubeConfig();
      try {
        one.loadFromFile(p);
      } catch (e) {
        // kubectl skips a file of a list that does not exist; a single path (or a list of none) must.
        if (paths.length > 1 && isMissingFile(e)) continue;
        throw e;
      }
      loaded.push(one);
    }
    if (loaded.length === 0) throw new Error(`none of the files exists (${paths.join(', ')})`);
    const [first] = loaded;
    if (loaded.length === 1 && first !== undefined) kc = first;
    else
      kc.loadFromOptions({
        clusters: firstByName(loaded.flatMap((c) => c.clusters)),
        users: firstByName(loaded.flatMap((c) => c.users)),
        contexts: firstByName(loaded.flatMap((c) => c.contexts)),
        currentContext:
          loaded.map((c) => c.currentContext).find((x) => typeof x === 'string' && x !== '') ?? '',
      });
    if (opts.context !== undefined) {
      if (kc.getContextObject(opts.context) === null)
        return err({ kind: 'config', message: `context "${opts.context}" does not exist` });
      kc.setCurrentContext(opts.context);
    }
  } catch (e) {
    return err({ kind: 'config', message: `cannot load kubeconfig ${opts.path}: ${errorText(e)}` });
  }
  const cluster = kc.getCurrentCluster();
  const server = v.safeParse(ServerSchema, cluster?.server);
  if (!cluster || !server.success) {
    return err({
      kind: 'config',
      message: `kubeconfig ${opts.path}: current context has no cluster with a valid server URL`,
    });
  }
  const contextNamespace: unknown = kc.getContextObject(kc.getCurrentContext())?.namespace;
  if (contextNamespace !== undefined && typeof contextNamespace !== 'string') {
    return err({
      kind: 'config',
      message: `kubeconfig ${opts.path}: the current context's namespace is not a string`,
    });
  }
  const namespace = contextNamespace || undefined;
  const cacheMs = opts.cacheMs ?? 10_000;
  const now = opts.now ?? Date.now;
  let cached: { creds: Credentials; at: number } | undefined;
  const credentials: CredentialSource = async ({ refresh }) => {
    if (cached && !refresh && now() - cached.at < cacheMs) return ok(cached.creds);
    const applied: Record<string, unknown> = {};
    try {
      await kc.applyToHTTPSOptions(applied);
    } catch (e) {
      return err({ kind: 'config', message: `kubeconfig auth failed: ${errorText(e)}` });
    }
    const parsed = v.safeParse(AppliedOptionsSchema, applied);
    if (!parsed.success)
      return err({ kind: 'config', message: 'kubeconfig auth produced unexpected options' });
    const o = parsed.output;
    const headers: Record<string, string> = {};
    for (const [k, val] of Object.entries(o.headers ?? {})) {
      if (val === undefined) continue;
      headers[k] = Array.isArray(val) ? val.join(', ') : String(val);
    }
    if (o.auth !== undefined && headers.Authorization === undefined) {
      headers.Authorization = `Basic ${Buffer.from(o.auth).toString('base64')}`;
    }
    const tls: TlsMaterial = {
      ...(o.ca !== undefined ? { ca: o.ca } : {}),
      ...(o.cert !== undefined ? { cert: o.cert } : {}),
      ...(o.key !== undefined ? { key: o.key } : {}),
      ...(o.rejectUnauthorized !== undefined ? { rejectUnauthorized: o.rejectUnauthorized } : {}),
      ...(o.servername !== undefined ? { servername: o.servername } : {}),
    };
    cached = { creds: { headers, tls }, at: now() };
    return ok(cached.creds);
  };
  const first = await credentials({ refresh: true });
  if (!first.ok) return first;
  return ok({ server: server.output, credentials, namespace, source: 'kubeconfig' });
}

export interface ResolveOptions {
  /** `--kubeconfig`; wins over `$KUBECONFIG`. */
  readonly kubeconfig?: string | undefined;
  readonly context?: string | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly serviceAccountDir?: string | undefined;
}

/**
 * Picks the config the way the controller documents it: `--kubeconfig`, else `$KUBECONFIG`, else in-cluster.
 * (`~/.kube/config` is deliberately not probed: a controller should not silently pick up a developer's cluster.)
 */
export async function resolveClusterConfig(opts: ResolveOptions): Promise<Result<ClusterConfig, KubeError>> {
  const path = opts.kubeconfig || opts.env.KUBECONFIG || undefined;
  if (path !== undefined) return loadKubeconfig({ path, context: opts.context });
  return loadInClusterConfig({ env: opts.env, serviceAccountDir: opts.serviceAccountDir });
}

/**
 * An error as one safe line. A YAML syntax error's message quotes the lines around the mistake, which in a kubeconfig
 * are tokens and keys: only its reason and position are kept.
 */
function errorText(e: unknown): string {
  if (e instanceof Error && e.name === 'YAMLException') {
    const { reason, mark } = e as Error & { reason?: unknown; mark?: { line?: unknown; column?: unknown } };
    const at =
      typeof mark?.line === 'number' && typeof mark.column === 'number'
        ? ` at line ${mark.line + 1}, column ${mark.column + 1}`
        : '';
    return `invalid YAML: ${typeof reason === 'string' ? reason : 'syntax error'}${at}`;
  }
  return e instanceof Error ? e.message : String(e);
}

function isMissingFile(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'ENOENT';
}

/** The entries of merged lists, the first of each name kept (kubectl's merge: the first file wins). */
function firstByName<T extends { readonly name: string }>(items: readonly T[]): T[] {
  const seen = new Set<string>();
  return items.filter((x) => {
    if (seen.has(x.name)) return false;
    seen.add(x.name);
    return true;
  });
}
