/** Object metadata as the API server returns it, for tests of the parsers. */
export function storedMeta(name = 'a1', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    namespace: 'ns1',
    uid: `uid-${name}`,
    resourceVersion: '42',
    generation: 1,
    creationTimestamp: '2026-01-02T03:04:05Z',
    managedFields: [{ manager: 'kubectl' }],
    ...extra,
  };
}
