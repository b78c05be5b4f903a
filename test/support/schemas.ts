import * as v from 'valibot';

/** ObjectMeta fields tests and the node agent read; everything else is kept (loose). */
export const ObjectMetaSchema = v.looseObject({
  name: v.optional(v.string()),
  generateName: v.optional(v.string()),
  namespace: v.optional(v.string()),
  uid: v.optional(v.string()),
  resourceVersion: v.optional(v.string()),
  generation: v.optional(v.number()),
  creationTimestamp: v.optional(v.string()),
  deletionTimestamp: v.optional(v.string()),
  deletionGracePeriodSeconds: v.optional(v.number()),
  labels: v.optional(v.record(v.string(), v.string())),
  annotations: v.optional(v.record(v.string(), v.string())),
  finalizers: v.optional(v.array(v.string())),
  ownerReferences: v.optional(
    v.array(v.looseObject({ kind: v.string(), name: v.string(), uid: v.string() })),
  ),
});
export type ObjectMeta = v.InferOutput<typeof ObjectMetaSchema>;

/** Any Kubernetes object: apiVersion/kind/metadata checked, the rest kept as unknown. */
export const KubeObjectSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: v.optional(ObjectMetaSchema, {}),
});
export type KubeObject = v.InferOutput<typeof KubeObjectSchema>;

/** A list response: items plus the list's resourceVersion and continue token. */
export const KubeListSchema = v.looseObject({
  metadata: v.optional(
    v.looseObject({ resourceVersion: v.optional(v.string()), continue: v.optional(v.string()) }),
    {},
  ),
  items: v.nullish(v.array(v.unknown()), []),
});

/** A metav1.Status (errors and in-stream watch ERROR objects). */
export const StatusSchema = v.looseObject({
  kind: v.optional(v.string()),
  status: v.optional(v.string()),
  message: v.optional(v.string()),
  reason: v.optional(v.string()),
  code: v.optional(v.number()),
});
export type Status = v.InferOutput<typeof StatusSchema>;

/** A condition as Jobs and Pods carry them. */
export const ConditionSchema = v.looseObject({
  type: v.string(),
  status: v.string(),
  reason: v.optional(v.string()),
  message: v.optional(v.string()),
  lastTransitionTime: v.optional(v.nullable(v.string())),
});
export type Condition = v.InferOutput<typeof ConditionSchema>;

/** batch/v1 Job, the fields tests assert on. */
export const JobSchema = v.looseObject({
  ...KubeObjectSchema.entries,
  spec: v.optional(v.looseObject({}), {}),
  status: v.optional(
    v.looseObject({
      conditions: v.optional(v.array(ConditionSchema), []),
      active: v.optional(v.number()),
      ready: v.optional(v.number()),
      succeeded: v.optional(v.number()),
      failed: v.optional(v.number()),
      terminating: v.optional(v.number()),
      startTime: v.optional(v.string()),
      completionTime: v.optional(v.string()),
    }),
    {},
  ),
});
export type Job = v.InferOutput<typeof JobSchema>;

const ContainerStateSchema = v.looseObject({
  waiting: v.optional(v.looseObject({ reason: v.optional(v.string()), message: v.optional(v.string()) })),
  running: v.optional(v.looseObject({ startedAt: v.optional(v.nullable(v.string())) })),
  terminated: v.optional(
    v.looseObject({
      exitCode: v.number(),
      signal: v.optional(v.number()),
      reason: v.optional(v.string()),
      message: v.optional(v.string()),
      startedAt: v.optional(v.nullable(v.string())),
      finishedAt: v.optional(v.nullable(v.string())),
      containerID: v.optional(v.string()),
    }),
  ),
});

/** One entry of status.containerStatuses / initContainerStatuses. */
export const ContainerStatusSchema = v.looseObject({
  name: v.string(),
  image: v.optional(v.string()),
  imageID: v.optional(v.string()),
  containerID: v.optional(v.string()),
  ready: v.optional(v.boolean()),
  started: v.optional(v.boolean()),
  restartCount: v.optional(v.number()),
  state: v.optional(ContainerStateSchema, {}),
  lastState: v.optional(ContainerStateSchema, {}),
});
export type ContainerStatus = v.InferOutput<typeof ContainerStatusSchema>;

/** The pod status fields tests and the node agent read. */
export const PodStatusSchema = v.looseObject({
  phase: v.optional(v.string()),
  reason: v.optional(v.string()),
  message: v.optional(v.string()),
  hostIP: v.optional(v.string()),
  podIP: v.optional(v.string()),
  podIPs: v.optional(v.array(v.looseObject({ ip: v.string() }))),
  startTime: v.optional(v.string()),
  conditions: v.optional(v.array(ConditionSchema), []),
  initContainerStatuses: v.optional(v.array(ContainerStatusSchema), []),
  containerStatuses: v.optional(v.array(ContainerStatusSchema), []),
});
export type PodStatus = v.InferOutput<typeof PodStatusSchema>;

/** A Pod with its status checked; spec kept loose (the node agent validates the spec itself). */
export const PodSchema = v.looseObject({
  ...KubeObjectSchema.entries,
  spec: v.optional(v.looseObject({ nodeName: v.optional(v.string()) }), {}),
  status: v.optional(PodStatusSchema, {}),
});
export type Pod = v.InferOutput<typeof PodSchema>;

/** A Node: the conditions and addresses tests read. */
export const NodeSchema = v.looseObject({
  ...KubeObjectSchema.entries,
  status: v.optional(
    v.looseObject({
      conditions: v.optional(v.array(ConditionSchema), []),
      addresses: v.optional(v.array(v.looseObject({ type: v.string(), address: v.string() })), []),
    }),
    {},
  ),
});
export type Node = v.InferOutput<typeof NodeSchema>;
