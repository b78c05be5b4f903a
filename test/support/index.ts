export * from './controller.ts';
export * from './fault-proxy.ts';
export * from './http-sink.ts';
export {
  apiPath,
  decodeWatchLine,
  KubeClient,
  KubeError,
  type KubeResponse,
  type PatchType,
  type Query,
  type RequestOptions,
  type WatchEnd,
  type WatchEvent,
  type WatchOptions,
} from './kube-client.ts';
export { type ClusterAccess, e2eKubeconfigPath, loadKubeconfig, parseKubeconfig } from './kubeconfig.ts';
export { freshNamespace, namespacePrefix, type TestNamespace } from './namespace.ts';
export {
  type CollectedSpan,
  type OtelCollector,
  otelcolBinary,
  parseSpansJsonl,
  startOtelCollector,
} from './otelcol.ts';
export { type PollOptions, PollTimeoutError, pollUntil } from './poll.ts';
export * from './schemas.ts';
export {
  addTestImages,
  type E2eCluster,
  e2eCluster,
  readTestbedInfo,
  type TestbedInfo,
  TestbedInfoSchema,
  testbedImage,
} from './testbed.ts';
