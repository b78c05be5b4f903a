import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  /** Folder of extra image tables read by the node on every pod (absent on a testbed started before it existed). */
  imageDir: v.optional(v.string()),
  /** Hash of the node agent's code when it was started (`up` restarts a stale agent). */
  nodeAgentHash: v.optional(v.string()),
  /**
   * kube-apiserver's JSON-lines audit log of writes to agents, agents/status, jobs, leases and networkpolicies
   * (rotated backups `audit-<timestamp>.log` beside it); absent on a testbed started before it existed.
   */
  auditLog: v.optional(v.string()),
  /**
   * The session store (issue 29): versitygw on 127.0.0.1, path-style S3 at `endpoint`, one bucket; its root
   * credentials are in `credentialsFile` (JSON `{accessKeyId, secretAccessKey}`, mode 0600). Absent on a testbed
   * started before it existed.
   */
  sessionStore: v.optional(
    v.object({
      endpoint: v.string(),
      bucket: v.string(),
      region: v.string(),
      credentialsFile: v.string(),
    }),
  ),
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

/**
 * Adds image tables to the testbed's node while it runs (a file `<key>.json` in its image folder; the node reads
 * the folder on every pod). Returns the function that removes them again. Throws when the cluster is not a testbed
 * with an image folder (restart it with `scripts/testbed up`).
 */
export function addTestImages(
  cluster: E2eCluster,
  key: string,
  table: Readonly<Record<string, unknown>>,
): () => void {
  const dir = cluster.testbed?.imageDir;
  if (dir === undefined)
    throw new Error('the e2e cluster is not a testbed with an image folder (run scripts/testbed up)');
  const file = join(dir, `${key}.json`);
  writeFileSync(file, `${JSON.stringify(table, null, 2)}\n`);
  return () => rmSync(file, { force: true });
}

/** The testbed's own image table entry for `image` (for example the run-pod image), to extend in a test image. */
export function testbedImage(cluster: E2eCluster, image: string): Record<string, unknown> {
  const file = cluster.testbed?.imageTable;
  if (file === undefined) throw new Error('the e2e cluster is not a testbed');
  const table = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Record<string, unknown>>;
  const entry = table[image];
  if (entry === undefined) throw new Error(`the testbed image table ${file} has no image ${image}`);
  return entry;
}

const StoreCredentialsSchema = v.object({
  accessKeyId: v.pipe(v.string(), v.minLength(1)),
  secretAccessKey: v.pipe(v.string(), v.minLength(1)),
});

/** Where the testbed's session store is and its credentials, ready for an S3Client; throws when it has none. */
export function testbedSessionStore(info: TestbedInfo | undefined): {
  endpoint: string;
  bucket: string;
  region: string;
  credentials: v.InferOutput<typeof StoreCredentialsSchema>;
} {
  const store = info?.sessionStore;
  if (store === undefined)
    throw new Error('the e2e cluster is not a testbed with a session store (run scripts/testbed up)');
  const credentials = v.parse(
    StoreCredentialsSchema,
    JSON.parse(readFileSync(store.credentialsFile, 'utf8')),
  );
  return { endpoint: store.endpoint, bucket: store.bucket, region: store.region, credentials };
}
