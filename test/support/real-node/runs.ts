// What the real node's e2e files share about the product's runs there: whether they run (and the node), the Station
// template that puts a run pod on the real node, and the pod of a finished run.
import assert from 'node:assert/strict';
import { controllerSkipReason, type E2eCluster, type Pod, type Scenario } from '../index.ts';
import { type RealNodeInfo, readRealNodeInfo, realNodeSkipReason } from './info.ts';

/** The real node of the test bed, and why the product's real-node files skip (false: they run). */
export function realNodeRuns(cluster: E2eCluster | string): {
  realNode: RealNodeInfo | undefined;
  skip: string | false;
} {
  const realNode = typeof cluster === 'string' ? undefined : readRealNodeInfo(cluster.kubeconfig);
  const skip = controllerSkipReason(cluster) || realNodeSkipReason(realNode);
  return { realNode, skip };
}

/** A Station template that puts the run on the real node; the agent container runs `image`. */
export function realNodeTemplate(node: RealNodeInfo, image: string): Record<string, unknown> {
  return {
    spec: {
      // The test bed runs no scheduler for the real node: the pod names it (as a scheduler would bind it), and
      // selects its label and tolerates its taint as a Station on a cluster would.
      nodeName: node.nodeName,
      nodeSelector: { [node.taint.key]: node.taint.value },
      tolerations: [{ ...node.taint, operator: 'Equal' }],
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'agent', image, imagePullPolicy: 'Never' }],
    },
  };
}

/** The run pod of an Agent's Job (there is one: backoffLimit 0). */
export async function runPod(s: Scenario, agent: string): Promise<Pod> {
  const pods = await s.jobPods(`agent-job-${agent}`);
  assert.equal(pods.length, 1, `one pod of ${agent}'s Job`);
  return pods[0] as Pod;
}
