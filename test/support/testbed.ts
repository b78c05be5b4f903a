import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as v from 'valibot';
import { KubeClient } from './kube-client.ts';
import { e2eKubeconfigPath } from './kubeconfig.ts';

/** What `scripts/testbed up` records next to the admin kubeconfig (`testbed.json`). */
export const TestbedInfoSchema = v.object({
  kubeconfig: v.string(),
  apiserver: v.string(),
  etcd: v.string(),
  nodeName: v.string(),
  kubeletPort: v.number(),
  logDir: v.string(),
  /** A built-in resource whose watch cache is disabled, so watches on it go straight to etcd. */
  uncachedResource: v.string(),
  imageTable: v.string(),
  /** Hash of the node agent's code when it was started (`up` restarts a stale agent). */
  nodeAgentHash: v.optional(v.string()),
});
export type TestbedInfo = v.InferOutput<typeof TestbedInfoSchema>;

/** Reads `testbed.json` beside a testbed kubeconfig; undefined when the kubeconfig is not a testbed's. */
export function readTestbedInfo(kubeconfigPath: string): TestbedInfo | undefined {
  const file = join(dirname(kubeconfigPath), 'testbed.json');
  if (!existsSync(file)) return undefined;
  return v.parse(TestbedInfoSchema, JSON.parse(readFileSync(file, 'utf8')));
}

/** The e2e cluster: a client for `$KUBECONFIG` and, when it is the local testbed, its details. */
export interface E2eCluster {
  readonly kubeconfig: string;
  readonly client: KubeClient;
  readonly testbed: TestbedInfo | undefined;
}

/**
 * Connects to the e2e cluster named by `$KUBECONFIG`. Returns a string (a skip reason) when no
 * kubeconfig is set, so a test file can do `{ skip: typeof cluster === 'string' ? cluster : false }`.
 */
export function e2eCluster(): E2eCluster | string {
  const kubeconfig = e2eKubeconfigPath();
  if (kubeconfig === undefined) return 'KUBECONFIG is not set (run through `npm test -- e2e`)';
  return { kubeconfig, client: KubeClient.fromKubeconfig(kubeconfig), testbed: readTestbedInfo(kubeconfig) };
}
