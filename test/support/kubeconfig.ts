import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import * as v from 'valibot';

/** What a test client needs to reach one API server with TLS: all PEM material already read. */
export interface ClusterAccess {
  readonly server: URL;
  /** PEM CA bundle that signs the server certificate; undefined means the system roots. */
  readonly ca?: string;
  /** PEM client certificate + key (client-certificate auth). */
  readonly cert?: string;
  readonly key?: string;
  /** Bearer token auth. */
  readonly token?: string;
  /** Skip server certificate verification (kubeconfig `insecure-skip-tls-verify`). */
  readonly insecure: boolean;
}

const NamedCluster = v.object({
  name: v.string(),
  cluster: v.looseObject({
    server: v.pipe(v.string(), v.url()),
    'certificate-authority': v.optional(v.string()),
    'certificate-authority-data': v.optional(v.string()),
    'insecure-skip-tls-verify': v.optional(v.boolean()),
  }),
});
const NamedUser = v.object({
  name: v.string(),
  user: v.looseObject({
    'client-certificate': v.optional(v.string()),
    'client-certificate-data': v.optional(v.string()),
    'client-key': v.optional(v.string()),
    'client-key-data': v.optional(v.string()),
    token: v.optional(v.string()),
    tokenFile: v.optional(v.string()),
  }),
});
const NamedContext = v.object({
  name: v.string(),
  context: v.looseObject({ cluster: v.string(), user: v.string(), namespace: v.optional(v.string()) }),
});
/** The subset of a kubeconfig this loader understands (static credentials only). */
const KubeconfigSchema = v.looseObject({
  clusters: v.array(NamedCluster),
  users: v.array(NamedUser),
  contexts: v.array(NamedContext),
  'current-context': v.string(),
});
export type Kubeconfig = v.InferOutput<typeof KubeconfigSchema>;

function b64(data: string): string {
  return Buffer.from(data, 'base64').toString('utf8');
}

/**
 * Parses kubeconfig text (JSON, which the testbed writes; YAML is not supported here) and resolves the
 * current context to TLS material. Relative file references resolve against `baseDir`.
 * Throws an Error naming the problem when the document is invalid or the context is missing.
 */
export function parseKubeconfig(text: string, baseDir: string): ClusterAccess {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new Error(
      'kubeconfig is not JSON: the test support loader reads the JSON kubeconfigs the testbed writes',
    );
  }
  const parsed = v.safeParse(KubeconfigSchema, raw);
  if (!parsed.success) {
    throw new Error(`invalid kubeconfig: ${v.summarize(parsed.issues).split('\n')[0] ?? 'unknown issue'}`);
  }
  const cfg = parsed.output;
  const ctx = cfg.contexts.find((c) => c.name === cfg['current-context']);
  if (!ctx) throw new Error(`kubeconfig: current context "${cfg['current-context']}" not found`);
  const cluster = cfg.clusters.find((c) => c.name === ctx.context.cluster)?.cluster;
  if (!cluster) throw new Error(`kubeconfig: cluster "${ctx.context.cluster}" not found`);
  const user = cfg.users.find((u) => u.name === ctx.context.user)?.user;
  if (!user) throw new Error(`kubeconfig: user "${ctx.context.user}" not found`);
  const file = (p: string): string => readFileSync(resolve(baseDir, p), 'utf8');
  const pick = (data: string | undefined, path: string | undefined): string | undefined =>
    data !== undefined ? b64(data) : path !== undefined ? file(path) : undefined;
  const ca = pick(cluster['certificate-authority-data'], cluster['certificate-authority']);
  const cert = pick(user['client-certificate-data'], user['client-certificate']);
  const key = pick(user['client-key-data'], user['client-key']);
  const token = user.token ?? (user.tokenFile !== undefined ? file(user.tokenFile).trim() : undefined);
  return {
    server: new URL(cluster.server),
    insecure: cluster['insecure-skip-tls-verify'] === true,
    ...(ca !== undefined ? { ca } : {}),
    ...(cert !== undefined ? { cert } : {}),
    ...(key !== undefined ? { key } : {}),
    ...(token !== undefined ? { token } : {}),
  };
}

/** Reads and resolves a kubeconfig file (see parseKubeconfig). */
export function loadKubeconfig(path: string): ClusterAccess {
  return parseKubeconfig(readFileSync(path, 'utf8'), dirname(path));
}

/**
 * The kubeconfig path the e2e tests run against: `$KUBECONFIG` (as `scripts/test.mjs` sets it).
 * Returns undefined when it is not set, so tests can skip with a reason.
 */
export function e2eKubeconfigPath(): string | undefined {
  const path = process.env.KUBECONFIG;
  return path !== undefined && path !== '' ? path.split(':')[0] : undefined;
}
