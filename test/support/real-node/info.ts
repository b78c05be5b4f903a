import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as v from 'valibot';

/** What `scripts/testbed up --real-node` records beside the admin kubeconfig (`real-node.json`). */
export const RealNodeInfoSchema = v.object({
  /** The Node's name; pods get there by `spec.nodeName` and a toleration of `taint`. */
  nodeName: v.string(),
  /** The kubelet's address (its end of the veth pair, inside the node's network namespace). */
  nodeIP: v.string(),
  /** The host's end of the veth pair, where the kubelet reaches the API server (forwarded to 127.0.0.1). */
  hostIP: v.string(),
  /** The pods' addresses (a bridge inside the node's network namespace). */
  podCIDR: v.string(),
  netns: v.string(),
  taint: v.object({ key: v.string(), value: v.string(), effect: v.string() }),
  /** Images imported into the node's containerd (nothing can be pulled): the test image and the pause image. */
  images: v.object({ hello: v.string(), pause: v.string() }),
  containerdSocket: v.string(),
  logDir: v.string(),
});
export type RealNodeInfo = v.InferOutput<typeof RealNodeInfoSchema>;

/** Reads `real-node.json` beside a testbed kubeconfig; undefined when no real node was started there. */
export function readRealNodeInfo(kubeconfigPath: string): RealNodeInfo | undefined {
  const file = join(dirname(kubeconfigPath), 'real-node.json');
  if (!existsSync(file)) return undefined;
  return v.parse(RealNodeInfoSchema, JSON.parse(readFileSync(file, 'utf8')));
}

/**
 * Why a real-node e2e file skips, or false: the Deno pass skips them (the real node does not depend on the bundle's
 * runtime), and so does a test bed started without the real node.
 */
export function realNodeSkipReason(info: RealNodeInfo | undefined): string | false {
  if (process.env.AGENT_E2E_RUNTIME === 'deno')
    return 'the real node does not depend on the JavaScript runtime; it runs in the node pass only';
  if (info === undefined)
    return 'the real node is not up (sudo scripts/install-node-runtime, then scripts/testbed up --real-node)';
  return false;
}
