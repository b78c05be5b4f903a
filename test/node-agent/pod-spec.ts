import * as v from 'valibot';
import { ObjectMetaSchema, PodStatusSchema } from '../support/schemas.ts';

const KeyRef = v.looseObject({
  name: v.optional(v.string(), ''),
  key: v.string(),
  optional: v.optional(v.boolean()),
});

const ResourceFieldRefSchema = v.looseObject({
  resource: v.string(),
  containerName: v.optional(v.string()),
  divisor: v.optional(v.unknown()),
});

const EnvVarSchema = v.looseObject({
  name: v.string(),
  value: v.optional(v.string()),
  valueFrom: v.optional(
    v.looseObject({
      fieldRef: v.optional(v.looseObject({ fieldPath: v.string() })),
      resourceFieldRef: v.optional(ResourceFieldRefSchema),
      secretKeyRef: v.optional(KeyRef),
      configMapKeyRef: v.optional(KeyRef),
    }),
  ),
});
export type EnvVar = v.InferOutput<typeof EnvVarSchema>;

const EnvFromSchema = v.looseObject({
  prefix: v.optional(v.string()),
  secretRef: v.optional(
    v.looseObject({ name: v.optional(v.string(), ''), optional: v.optional(v.boolean()) }),
  ),
  configMapRef: v.optional(
    v.looseObject({ name: v.optional(v.string(), ''), optional: v.optional(v.boolean()) }),
  ),
});
export type EnvFrom = v.InferOutput<typeof EnvFromSchema>;

const CapabilitiesSchema = v.looseObject({
  add: v.optional(v.array(v.string())),
  drop: v.optional(v.array(v.string())),
});

const ContainerSecuritySchema = v.looseObject({
  runAsUser: v.optional(v.number()),
  runAsGroup: v.optional(v.number()),
  runAsNonRoot: v.optional(v.boolean()),
  privileged: v.optional(v.boolean()),
  allowPrivilegeEscalation: v.optional(v.boolean()),
  capabilities: v.optional(CapabilitiesSchema),
});
export type ContainerSecurity = v.InferOutput<typeof ContainerSecuritySchema>;

const VolumeMountSchema = v.looseObject({
  name: v.string(),
  mountPath: v.string(),
  subPath: v.optional(v.string()),
  readOnly: v.optional(v.boolean()),
});
export type VolumeMount = v.InferOutput<typeof VolumeMountSchema>;

/** An int-or-string port: a number, or the name of one of the container's ports. */
const PortRefSchema = v.union([
  v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535)),
  v.string(),
]);
const Seconds = (min: number, fallback: number) =>
  v.optional(v.pipe(v.number(), v.integer(), v.minValue(min)), fallback);

/** A startup/readiness probe, with the API server's defaults for the timing fields. */
const ProbeSchema = v.looseObject({
  exec: v.optional(v.looseObject({ command: v.optional(v.array(v.string()), []) })),
  tcpSocket: v.optional(v.looseObject({ port: PortRefSchema, host: v.optional(v.string()) })),
  httpGet: v.optional(
    v.looseObject({
      path: v.optional(v.string(), '/'),
      port: PortRefSchema,
      host: v.optional(v.string()),
      scheme: v.optional(v.picklist(['HTTP', 'HTTPS']), 'HTTP'),
      httpHeaders: v.optional(v.array(v.looseObject({ name: v.string(), value: v.string() })), []),
    }),
  ),
  initialDelaySeconds: Seconds(0, 0),
  periodSeconds: Seconds(1, 10),
  timeoutSeconds: Seconds(1, 1),
  failureThreshold: Seconds(1, 3),
  successThreshold: Seconds(1, 1),
  /** Grace period when a failed probe makes the node kill the container (default: the pod's). */
  terminationGracePeriodSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
});
export type Probe = v.InferOutput<typeof ProbeSchema>;

const ContainerPortSchema = v.looseObject({
  name: v.optional(v.string()),
  containerPort: v.number(),
  protocol: v.optional(v.string()),
});
export type ContainerPort = v.InferOutput<typeof ContainerPortSchema>;

const ContainerSchema = v.looseObject({
  name: v.string(),
  image: v.optional(v.string(), ''),
  command: v.optional(v.array(v.string()), []),
  args: v.optional(v.array(v.string()), []),
  workingDir: v.optional(v.string()),
  env: v.optional(v.array(EnvVarSchema), []),
  envFrom: v.optional(v.array(EnvFromSchema), []),
  volumeMounts: v.optional(v.array(VolumeMountSchema), []),
  securityContext: v.optional(ContainerSecuritySchema),
  /** `Always` on an init container makes it a sidecar; on regular containers the test node refuses it. */
  restartPolicy: v.optional(v.picklist(['Always', 'OnFailure', 'Never'])),
  ports: v.optional(v.array(ContainerPortSchema), []),
  startupProbe: v.optional(ProbeSchema),
  readinessProbe: v.optional(ProbeSchema),
  terminationMessagePath: v.optional(v.string()),
  terminationMessagePolicy: v.optional(v.string()),
  resources: v.optional(
    v.looseObject({
      limits: v.optional(v.record(v.string(), v.union([v.string(), v.number()]))),
      requests: v.optional(v.record(v.string(), v.union([v.string(), v.number()]))),
    }),
  ),
});
export type Container = v.InferOutput<typeof ContainerSchema>;

const ItemsSchema = v.optional(
  v.array(v.looseObject({ key: v.string(), path: v.string(), mode: v.optional(v.number()) })),
);

/** One file of a downward API volume or projection: a field of the pod, or a container's resource. */
const DownwardItemSchema = v.looseObject({
  path: v.string(),
  fieldRef: v.optional(v.looseObject({ fieldPath: v.string(), apiVersion: v.optional(v.string()) })),
  resourceFieldRef: v.optional(ResourceFieldRefSchema),
  mode: v.optional(v.number()),
});
export type DownwardItem = v.InferOutput<typeof DownwardItemSchema>;

/** A Secret or ConfigMap as a projection source (no defaultMode of its own: the projected volume's applies). */
const ObjectProjectionSchema = v.looseObject({
  name: v.optional(v.string(), ''),
  items: ItemsSchema,
  optional: v.optional(v.boolean()),
});

/** One source of a projected volume; the test node supports the first four (admitPod refuses the others). */
const ProjectionSchema = v.looseObject({
  serviceAccountToken: v.optional(
    v.looseObject({
      audience: v.optional(v.string(), ''),
      expirationSeconds: v.optional(v.number(), 3600),
      path: v.string(),
    }),
  ),
  configMap: v.optional(ObjectProjectionSchema),
  secret: v.optional(ObjectProjectionSchema),
  downwardAPI: v.optional(v.looseObject({ items: v.optional(v.array(DownwardItemSchema), []) })),
});
export type Projection = v.InferOutput<typeof ProjectionSchema>;

const VolumeSchema = v.looseObject({
  name: v.string(),
  emptyDir: v.optional(v.looseObject({})),
  hostPath: v.optional(v.unknown()),
  secret: v.optional(
    v.looseObject({
      secretName: v.optional(v.string(), ''),
      items: ItemsSchema,
      optional: v.optional(v.boolean()),
      defaultMode: v.optional(v.number()),
    }),
  ),
  configMap: v.optional(
    v.looseObject({
      name: v.optional(v.string(), ''),
      items: ItemsSchema,
      optional: v.optional(v.boolean()),
      defaultMode: v.optional(v.number()),
    }),
  ),
  downwardAPI: v.optional(
    v.looseObject({
      items: v.optional(v.array(DownwardItemSchema), []),
      defaultMode: v.optional(v.number()),
    }),
  ),
  projected: v.optional(
    v.looseObject({
      sources: v.optional(v.array(ProjectionSchema), []),
      defaultMode: v.optional(v.number()),
    }),
  ),
});
export type Volume = v.InferOutput<typeof VolumeSchema>;

export const PodSpecSchema = v.looseObject({
  nodeName: v.optional(v.string(), ''),
  schedulerName: v.optional(v.string(), 'default-scheduler'),
  nodeSelector: v.optional(v.record(v.string(), v.string()), {}),
  restartPolicy: v.optional(v.picklist(['Always', 'OnFailure', 'Never']), 'Always'),
  activeDeadlineSeconds: v.optional(v.number()),
  terminationGracePeriodSeconds: v.optional(v.number(), 30),
  serviceAccountName: v.optional(v.string()),
  hostNetwork: v.optional(v.boolean()),
  initContainers: v.optional(v.array(ContainerSchema), []),
  containers: v.array(ContainerSchema),
  volumes: v.optional(v.array(VolumeSchema), []),
  securityContext: v.optional(
    v.looseObject({
      runAsUser: v.optional(v.number()),
      runAsGroup: v.optional(v.number()),
      runAsNonRoot: v.optional(v.boolean()),
      fsGroup: v.optional(v.number()),
      supplementalGroups: v.optional(v.array(v.number())),
    }),
    {},
  ),
});
export type PodSpec = v.InferOutput<typeof PodSpecSchema>;

/** A Pod as the node agent needs it: metadata with name/namespace/uid, a typed spec, the status as read. */
export const NodePodSchema = v.looseObject({
  metadata: v.looseObject({
    ...ObjectMetaSchema.entries,
    name: v.string(),
    namespace: v.string(),
    uid: v.string(),
  }),
  spec: PodSpecSchema,
  status: v.optional(PodStatusSchema, {}),
});
export type NodePod = v.InferOutput<typeof NodePodSchema>;

/** A Secret or ConfigMap, data only. */
export const DataObjectSchema = v.looseObject({
  data: v.nullish(v.record(v.string(), v.string()), {}),
  binaryData: v.nullish(v.record(v.string(), v.string()), {}),
});
