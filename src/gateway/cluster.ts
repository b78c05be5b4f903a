// What the gateway reads from the API server: every Agent (one informer, all namespaces, the trimmed view of
// authorize.ts; an Agent not yet in the cache is read by name), the HMAC key of the run credentials (Secret
// agent-controller-gateway of its own namespace, made by the controller: the gateway waits for it and never makes
// it), and the vendor keys (Secret agent-secrets of a run's namespace, read by name and kept for a short while).

import * as v from 'valibot';
import { GROUP, VERSION } from '../api/group.ts';
import {
  describeKubeError,
  getObject,
  isNotFound,
  type KubeError,
  type ResourceType,
  SECRETS,
  type Transport,
} from '../kube/index.ts';
import { type Clock, createInformer, type Informer } from '../runtime/index.ts';
import type { RunIdentity } from '../shared/gateway-credential.ts';
import type { Logger } from '../shared/log.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { type GatewayAgent, GatewayAgentSchema } from './authorize.ts';

export const AGENT_RESOURCE: ResourceType = {
  group: GROUP,
  version: VERSION,
  plural: 'agents',
  kind: 'Agent',
  namespaced: true,
};

/** The Secret (in the gateway's and the controller's namespace) and its field that hold the credentials' HMAC key. */
import { GATEWAY_KEY_FIELD, GATEWAY_KEY_SECRET } from '../api/index.ts';

export { GATEWAY_KEY_FIELD, GATEWAY_KEY_SECRET };
/** The Secret of a run's namespace whose keys hold the vendor keys (the one the batch mode reads too). */
export const VENDOR_KEYS_SECRET = 'agent-secrets';

/** A key shorter than this is refused (the controller makes 32 random bytes). */
const MIN_KEY_BYTES = 16;

/** The Agents, from the informer's cache or, when it does not have the one asked for (yet), from the API server. */
export interface AgentSource {
  readonly informer: Informer<GatewayAgent>;
  /** The cached Agent, read afresh first when `fresh` is asked (absent, another uid, no grant). */
  find(run: RunIdentity, fresh: boolean): Promise<Result<GatewayAgent | undefined, KubeError>>;
  /** Reads one Agent from the API server (bypassing the cache). */
  read(namespace: string, name: string): Promise<Result<GatewayAgent | undefined, KubeError>>;
}

export function agentSource(o: {
  readonly transport: Transport;
  readonly clock: Clock;
  readonly random: () => number;
  readonly logger: Logger;
}): AgentSource {
  const informer = createInformer<GatewayAgent>({
    transport: o.transport,
    resource: AGENT_RESOURCE,
    namespace: undefined,
    schema: GatewayAgentSchema,
    clock: o.clock,
    random: o.random,
    logger: o.logger,
  });
  const read = async (namespace: string, name: string) => {
    const r = await getObject(o.transport, AGENT_RESOURCE, { namespace, name }, GatewayAgentSchema, {
      timeoutMs: 10_000,
    });
    if (r.ok) return ok(r.value);
    return isNotFound(r.error) ? ok(undefined) : r;
  };
  return {
    informer,
    read,
    async find(run, fresh) {
      const cached = informer.store.get(`${run.namespace}/${run.name}`);
      if (!fresh) return ok(cached);
      return read(run.namespace, run.name);
    },
  };
}

const SecretSchema = v.object({
  metadata: v.optional(v.object({ annotations: v.optional(v.nullable(v.record(v.string(), v.string()))) })),
  data: v.optional(v.nullable(v.record(v.string(), v.string()))),
});

const decodeBase64 = (b64: string): Uint8Array => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));

/**
 * Reads the HMAC key until it can (every `retryMs`), then again every `refreshMs` (the controller may make a new one
 * after the Secret was deleted). `onKey` gets each key read; nothing is logged of it but its length.
 */
export async function keepHmacKey(o: {
  readonly transport: Transport;
  readonly namespace: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  readonly onKey: (key: Uint8Array) => void;
  readonly retryMs?: number;
  readonly refreshMs?: number;
}): Promise<void> {
  const retryMs = o.retryMs ?? 2000;
  const refreshMs = o.refreshMs ?? 60_000;
  let loaded = false;
  for (let attempt = 1; !o.signal.aborted; attempt++) {
    const r = await getObject(
      o.transport,
      SECRETS,
      { namespace: o.namespace, name: GATEWAY_KEY_SECRET },
      SecretSchema,
      {
        timeoutMs: 10_000,
        signal: o.signal,
      },
    );
    const b64 = r.ok ? r.value.data?.[GATEWAY_KEY_FIELD] : undefined;
    const key = b64 === undefined ? undefined : safeDecode(b64);
    if (key !== undefined && key.length >= MIN_KEY_BYTES) {
      if (!loaded) o.logger.info('Loaded the credential key', { namespace: o.namespace, bytes: key.length });
      loaded = true;
      o.onKey(key);
    } else if (!o.signal.aborted && (attempt === 1 || attempt % 15 === 0)) {
      const why = !r.ok
        ? describeKubeError(r.error)
        : `Secret ${o.namespace}/${GATEWAY_KEY_SECRET} has no ${GATEWAY_KEY_FIELD} of at least ${MIN_KEY_BYTES} bytes`;
      o.logger[loaded ? 'warn' : 'info']('Waiting for the credential key (the controller creates it)', {
        error: why,
      });
    }
    await o.clock.sleep(loaded ? refreshMs : retryMs, o.signal);
  }
}

function safeDecode(b64: string): Uint8Array | undefined {
  try {
    return decodeBase64(b64);
  } catch {
    return undefined;
  }
}

/** How long a namespace's agent-secrets is kept after a read (a changed key is used within this). */
export const VENDOR_KEYS_TTL_MS = 30_000;

/** The vendor keys of run namespaces: agent-secrets read by name, kept `VENDOR_KEYS_TTL_MS`, one read at a time. */
export interface VendorKeys {
  /** The value of `keyName` in `namespace`'s agent-secrets: undefined when the Secret or the key is absent. */
  get(namespace: string, keyName: string): Promise<Result<string | undefined, KubeError>>;
  /** The annotation `name` of the namespace's agent-secrets as last read (by `get`), undefined when none. */
  annotation(namespace: string, name: string): string | undefined;
}

export function vendorKeys(o: { readonly transport: Transport; readonly now: () => number }): VendorKeys {
  const cache = new Map<
    string,
    { at: number; data: Readonly<Record<string, string>>; annotations: Readonly<Record<string, string>> }
  >();
  const reading = new Map<string, Promise<Result<Readonly<Record<string, string>>, KubeError>>>();
  const load = async (namespace: string): Promise<Result<Readonly<Record<string, string>>, KubeError>> => {
    const r = await getObject(o.transport, SECRETS, { namespace, name: VENDOR_KEYS_SECRET }, SecretSchema, {
      timeoutMs: 10_000,
    });
    if (!r.ok && !isNotFound(r.error)) return err(r.error);
    // An absent Secret is kept too: a run without a key is refused again without another read.
    const data = r.ok ? (r.value.data ?? {}) : {};
    const annotations = r.ok ? (r.value.metadata?.annotations ?? {}) : {};
    cache.set(namespace, { at: o.now(), data, annotations });
    return ok(data);
  };
  return {
    annotation: (namespace, name) => cache.get(namespace)?.annotations[name],
    async get(namespace, keyName) {
      const hit = cache.get(namespace);
      let data = hit !== undefined && o.now() - hit.at < VENDOR_KEYS_TTL_MS ? hit.data : undefined;
      if (data === undefined) {
        const pending = reading.get(namespace) ?? load(namespace);
        reading.set(namespace, pending);
        const r = await pending.finally(() => reading.delete(namespace));
        if (!r.ok) return r;
        data = r.value;
      }
      const b64 = data[keyName];
      if (b64 === undefined) return ok(undefined);
      const bytes = safeDecode(b64);
      return ok(bytes === undefined ? undefined : new TextDecoder().decode(bytes).trim());
    },
  };
}
