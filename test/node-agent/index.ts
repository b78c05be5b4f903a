export { NodeAgent, type NodeAgentOptions } from './agent.ts';
export {
  containerEnvironment,
  type EnvSources,
  kubernetesServiceEnv,
  type PodFacts,
  parseQuantity,
  resolveEnv,
} from './env.ts';
export { type ImageEntry, type ImageTable, loadImageTables } from './images.ts';
export { IpPool } from './ip-pool.ts';
export { startKubeletServer } from './kubelet-server.ts';
export { ContainerLogWriter, type LogEntry, type LogQuery, parseCriLog, renderLog } from './logs.ts';
export * from './plan.ts';
export { type NodePod, NodePodSchema, type PodSpec, PodSpecSchema } from './pod-spec.ts';
export { PodWorker, type WorkerDeps } from './pod-worker.ts';
export { checkProbe, type ProbeCheck, Prober, type ProbeTarget } from './probe.ts';
export { findHostTools, type HostTools, setprivArgs, spawnContainer, wrapperScript } from './process.ts';
export {
  buildPodStatus,
  isReady,
  isStarted,
  kubeTime,
  type PodRun,
  podConditions,
  podPhase,
} from './status.ts';
export {
  type FileProjection,
  fsUserOf,
  type IssuedToken,
  type TokenRequestSpec,
  tokenRefreshAt,
  type VolumeSources,
  volumeContent,
  writeVolume,
} from './volumes.ts';
