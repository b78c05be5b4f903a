// The run's own ServiceAccount (issue 9 §2): every run pod runs as `<run>` (the Job's name), owned by the Agent and
// garbage-collected with it, never as a ServiceAccount shared with other runs or workloads. No token is mounted
// (the ServiceAccount and the pod both say so); a run gets Kubernetes access only through bindings the policy
// allows. Pure.
import type { Agent } from '../api/index.ts';
import { type RunObjectMetadata, runObjectMetadata } from './run-metadata.ts';

/** A v1 ServiceAccount manifest ready to POST. */
export interface ServiceAccountManifest {
  readonly apiVersion: 'v1';
  readonly kind: 'ServiceAccount';
  readonly metadata: RunObjectMetadata;
  readonly automountServiceAccountToken: false;
}

/** The ServiceAccount of this run: named and labelled like its Job, controlled by the Agent, no token automount. */
export function buildRunServiceAccount(agent: Agent, stationName: string): ServiceAccountManifest {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: runObjectMetadata(agent, stationName),
    automountServiceAccountToken: false,
  };
}
