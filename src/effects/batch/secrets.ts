// Reads the Secret `agent-secrets` of a namespace for batch runs (the vendor key, sink header lines). The
// controller's grant is `get` on that one name (deploy/components/batch): no list, no watch. Values are held in
// memory for a short time so 1,000 batch polls do not cost 1,000 GETs; they never reach a log, an Event or status.

import * as v from 'valibot';
import { AGENT_SECRETS_NAME } from '../../jobs/env.ts';
import {
  getObject,
  isForbidden,
  isNotFound,
  type KubeError,
  SECRETS,
  type Transport,
} from '../../kube/index.ts';
import { err, ok, type Result } from '../../shared/result.ts';

/** How long a read Secret is reused. */
export const SECRET_TTL_MS = 30_000;

const SecretSchema = v.object({
  data: v.optional(v.nullable(v.record(v.string(), v.string()))),
});

/** The keys of `agent-secrets` and their decoded values; `null` when the Secret does not exist. */
export type SecretData = ReadonlyMap<string, string> | null;

/** Why a Secret could not be read. `forbidden`: the controller lacks the grant. */
export type SecretReadError =
  | { readonly kind: 'forbidden' }
  | { readonly kind: 'kube'; readonly error: KubeError };

export interface SecretReader {
  /** The Secret `agent-secrets` of `namespace` (cached for SECRET_TTL_MS; concurrent reads share one GET). */
  read(namespace: string): Promise<Result<SecretData, SecretReadError>>;
  /** Drops the cached copy of a namespace (after a vendor said the key is wrong, say). */
  forget(namespace: string): void;
}

function decode(b64: string): string {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new TextDecoder().decode(bytes);
}

export function createSecretReader(options: {
  readonly transport: Transport;
  readonly now: () => number;
  readonly timeoutMs?: number;
  readonly ttlMs?: number;
}): SecretReader {
  const ttl = options.ttlMs ?? SECRET_TTL_MS;
  const cache = new Map<string, { at: number; value: Promise<Result<SecretData, SecretReadError>> }>();
  async function fetchSecret(namespace: string): Promise<Result<SecretData, SecretReadError>> {
    const got = await getObject(
      options.transport,
      SECRETS,
      { namespace, name: AGENT_SECRETS_NAME },
      SecretSchema,
      { timeoutMs: options.timeoutMs },
    );
    if (!got.ok) {
      if (isNotFound(got.error)) return ok(null);
      if (isForbidden(got.error)) return err({ kind: 'forbidden' });
      return err({ kind: 'kube', error: got.error });
    }
    const data = new Map<string, string>();
    for (const [key, value] of Object.entries(got.value.data ?? {})) {
      try {
        data.set(key, decode(value));
      } catch {
        // A value that is not base64 cannot come from the API server; skip it rather than fail every run.
      }
    }
    return ok(data);
  }
  return {
    read(namespace) {
      const hit = cache.get(namespace);
      if (hit !== undefined && options.now() - hit.at < ttl) return hit.value;
      const value = fetchSecret(namespace);
      cache.set(namespace, { at: options.now(), value });
      // A failed read is not cached.
      void value.then((r) => {
        if (!r.ok && cache.get(namespace)?.value === value) cache.delete(namespace);
      });
      return value;
    },
    forget: (namespace) => void cache.delete(namespace),
  };
}
