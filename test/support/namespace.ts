import { randomBytes } from 'node:crypto';
import { apiPath, type KubeClient } from './kube-client.ts';

/** A namespace created for one test, and how to remove it. */
export interface TestNamespace {
  readonly name: string;
  /** Deletes the namespace (background propagation); never throws. */
  readonly cleanup: () => Promise<void>;
}

/** Turns any text into a DNS-1123 label prefix (lowercase, digits, dashes; at most 40 chars). */
export function namespacePrefix(text: string): string {
  const slug = text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return slug === '' ? 'test' : slug;
}

/**
 * Creates a fresh namespace named `<prefix>-<random>` and returns it with a cleanup function.
 * Label `agent-controller.test/e2e=true` marks it as test-owned. With node:test, pass
 * `t.after(ns.cleanup)` so it is removed even when the test fails.
 */
export async function freshNamespace(client: KubeClient, prefix: string): Promise<TestNamespace> {
  const name = `${namespacePrefix(prefix)}-${randomBytes(3).toString('hex')}`;
  await client.create(apiPath('v1', 'namespaces'), {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'agent-controller.test/e2e': 'true' } },
  });
  return {
    name,
    cleanup: async () => {
      try {
        await client.delete(apiPath('v1', 'namespaces', { name }), { propagationPolicy: 'Background' });
      } catch {
        // Best effort: the namespace controller or a later run cleans up.
      }
    },
  };
}
