export type { ClusterConfig, InClusterOptions, KubeconfigOptions, ResolveOptions } from './config.ts';
export { loadInClusterConfig, loadKubeconfig, resolveClusterConfig, SERVICE_ACCOUNT_DIR } from './config.ts';
export type { CallOptions, CreateOptions, ObjectRef } from './crud.ts';
export { createObject, getObject, replaceObject } from './crud.ts';
export { decodeJson, validate } from './decode.ts';
export type { KubeError, KubeErrorKind } from './errors.ts';
export {
  apiError,
  apiErrorFromResponse,
  describeKubeError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isResourceVersionTooLarge,
  isTransient,
  isUnauthorized,
} from './errors.ts';
export type { EventNote, EventRecorder, EventRecorderOptions, InvolvedObject } from './events.ts';
export { buildEvent, createEventRecorder, eventName, formatTime, truncateUtf8 } from './events.ts';
export type { InvalidItem, ListOptions, ListResult } from './list.ts';
export { DEFAULT_PAGE_SIZE, listAll } from './list.ts';
export type { KubeObject, ObjectMeta, Status } from './meta.ts';
export { KubeObjectSchema, ListSchema, ObjectMetaSchema, objectKey, StatusSchema, splitKey } from './meta.ts';
export type { DeleteOptions, JsonPatchOp, PatchOptions } from './patch.ts';
export {
  deleteObject,
  deleteOptionsBody,
  escapeJsonPointer,
  JSON_PATCH,
  jsonPatch,
  MERGE_PATCH,
  mergePatch,
  patchStatus,
  withResourceVersion,
} from './patch.ts';
export type {
  ListQueryOptions,
  PathTarget,
  Query,
  ResourceType,
  SelectorOptions,
  WatchQueryOptions,
} from './paths.ts';
export { apiVersionOf, listQuery, queryString, resourcePath, watchQuery } from './paths.ts';
export {
  CLUSTER_ROLE_BINDINGS,
  CONFIG_MAPS,
  ENDPOINT_SLICES,
  EVENTS,
  JOBS,
  LEASES,
  NAMESPACES,
  NETWORK_POLICIES,
  PODS,
  ROLE_BINDINGS,
  SECRETS,
  SERVICE_ACCOUNTS,
} from './resources.ts';
export type { TlsMaterial } from './tls.ts';
export { sameTls } from './tls.ts';
export type {
  CredentialSource,
  Credentials,
  RequestOptions,
  RequestSample,
  Response,
  StreamOptions,
  Transport,
  TransportOptions,
} from './transport.ts';
export { createTransport } from './transport.ts';
export type { LineDecoder, WatchEnd, WatchEvent, WatchLine, WatchOptions } from './watch.ts';
export {
  createLineDecoder,
  DEFAULT_WATCH_IDLE_MS,
  MAX_WATCH_LINE_BYTES,
  parseWatchLine,
  watchOnce,
  watchTimeoutSeconds,
} from './watch.ts';
