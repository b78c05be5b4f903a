// The contract between the gateway and the controller's admission for saturated vendor keys
// (docs/design/gateway.md#rate-limits): the ConfigMap `agent-gateway-saturation` of the gateway's (and the
// controller's) namespace, one data entry per saturated key, `<namespace>.<vendor>.<key name>` → the RFC 3339 time
// until which the key has no capacity. Namespaces and vendors have no dots, so the key name is everything after the
// second. The gateway writes it; the controller reads it and holds new runs using such a key until then. Pure.

export const KEY_SATURATION_CONFIGMAP = 'agent-gateway-saturation';

export const saturationEntry = (namespace: string, vendor: string, key: string): string =>
  `${namespace}.${vendor}.${key}`;

/** The ConfigMap's data as the times (ms) until which each entry is saturated; entries that do not parse are left out. */
export function parseSaturation(
  data: Readonly<Record<string, string>> | undefined,
): ReadonlyMap<string, number> {
  const out = new Map<string, number>();
  for (const [entry, value] of Object.entries(data ?? {})) {
    if (entry.split('.').length < 3) continue;
    const at = Date.parse(value);
    if (!Number.isNaN(at)) out.set(entry, at);
  }
  return out;
}
