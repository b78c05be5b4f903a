// The saturated vendor keys the model gateway publishes (docs/design/gateway.md#rate-limits): one informer on the
// ConfigMap agent-gateway-saturation of the controller's namespace (by name: a field selector, so the grant can name
// it), parsed once per change. Read by admission (reconcile/agent/key-saturation.ts) for Pending runs behind the
// gateway. Before it has listed, or when it cannot be read, nothing is saturated: runs are not held.
import * as v from 'valibot';
import type { ControllerConfig } from '../config/index.ts';
import { CONFIG_MAPS, describeKubeError, KubeObjectSchema, type Transport } from '../kube/index.ts';
import { type Clock, createInformer, type Informer } from '../runtime/index.ts';
import { KEY_SATURATION_CONFIGMAP, parseSaturation } from '../shared/key-saturation.ts';
import type { Logger } from '../shared/log.ts';

const SaturationConfigMapSchema = v.looseObject({
  ...KubeObjectSchema.entries,
  data: v.optional(v.nullable(v.record(v.string(), v.string()))),
});
type SaturationConfigMap = v.InferOutput<typeof SaturationConfigMapSchema>;

export interface KeySaturationSource {
  readonly informer: Informer<SaturationConfigMap>;
  /** Entry (`<namespace>.<vendor>.<key>`) → until (ms). */
  current(): ReadonlyMap<string, number>;
}

/** The source when the controller runs with the model gateway (`AGENT_GATEWAY_URL`), watching its own namespace. */
export function keySaturationFor(
  config: Pick<ControllerConfig, 'gatewayUrl' | 'leaseNamespace'>,
  o: {
    readonly transport: Transport;
    readonly clock: Clock;
    readonly random: () => number;
    readonly logger: Logger;
  },
): KeySaturationSource | undefined {
  if (config.gatewayUrl === undefined) return undefined;
  return createKeySaturationSource({ ...o, namespace: config.leaseNamespace });
}

export function createKeySaturationSource(o: {
  readonly transport: Transport;
  readonly namespace: string;
  readonly clock: Clock;
  readonly random: () => number;
  readonly logger: Logger;
}): KeySaturationSource {
  let parsed: ReadonlyMap<string, number> = new Map();
  let warned = false;
  const informer = createInformer<SaturationConfigMap>({
    transport: o.transport,
    resource: CONFIG_MAPS,
    namespace: o.namespace,
    fieldSelector: `metadata.name=${KEY_SATURATION_CONFIGMAP}`,
    schema: SaturationConfigMapSchema,
    clock: o.clock,
    random: o.random,
    logger: o.logger,
    hooks: {
      onListError: (error) => {
        if (warned) return;
        warned = true;
        o.logger.warn('Cannot read the saturated vendor keys; runs are not held for them', {
          configMap: `${o.namespace}/${KEY_SATURATION_CONFIGMAP}`,
          error: describeKubeError(error),
        });
      },
    },
    onChange: (change) => {
      parsed = parseSaturation(change.type === 'deleted' ? undefined : (change.object.data ?? undefined));
    },
  });
  return { informer, current: () => parsed };
}
