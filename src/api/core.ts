import * as v from 'valibot';
import type { Result } from '../shared/result.ts';
import { ObjectMetaSchema } from './meta.ts';
import { lenientEnum, parseDefault, parseWith } from './schema-kit.ts';

/**
 * An optional value the API server may also send as `null` (Go zero `metav1.Time` and nil pointers);
 * `null` reads as absent.
 */
function nullable<TSchema extends v.GenericSchema>(schema: TSchema) {
  return v.pipe(
    v.nullish(schema),
    v.transform((x): v.InferOutput<TSchema> | undefined => x ?? undefined),
  );
}

const optString = nullable(v.string());
const optInt = nullable(v.number());

/** Status values of a built-in condition; an unknown string reads as `Unknown`. */
export const CORE_CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;

/** A batch/v1 JobCondition (Complete, Failed, FailureTarget, SuccessCriteriaMet, Suspended, …). */
export const JobConditionSchema = v.object({
  type: v.string(),
  status: lenientEnum(CORE_CONDITION_STATUSES, 'Unknown'),
  reason: optString,
  message: optString,
  lastTransitionTime: optString,
});
export type JobCondition = v.InferOutput<typeof JobConditionSchema>;

/** The subset of batch/v1 Job the controller reads. `spec.template` is kept as free-form JSON. */
export const JobSchema = v.object({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: ObjectMetaSchema,
  spec: parseDefault(
    v.object({
      activeDeadlineSeconds: optInt,
      backoffLimit: optInt,
      ttlSecondsAfterFinished: optInt,
      suspend: nullable(v.boolean()),
      template: nullable(v.record(v.string(), v.unknown())),
    }),
    {},
  ),
  status: parseDefault(
    v.object({
      active: optInt,
      ready: optInt,
      terminating: optInt,
      succeeded: optInt,
      failed: optInt,
      /** Finished pods the Job controller has seen but not yet added to `succeeded` / `failed` (pod finalizers). */
      uncountedTerminatedPods: parseDefault(
        v.nullable(
          v.object({
            succeeded: parseDefault(v.nullable(v.array(v.string())), []),
            failed: parseDefault(v.nullable(v.array(v.string())), []),
          }),
        ),
        null,
      ),
      startTime: optString,
      completionTime: optString,
      conditions: parseDefault(v.nullable(v.array(JobConditionSchema), []), []),
    }),
    {},
  ),
});
export type Job = v.InferOutput<typeof JobSchema>;
export type JobStatus = Job['status'];

/** Parses a batch/v1 Job read from the API server (unknown fields dropped, absent status empty). */
export function parseJob(u: unknown): Result<Job, string> {
  return parseWith(JobSchema, u, 'Job');
}

/** Pod phases; an unknown string reads as `Unknown`, an absent phase as `Pending`. */
export const POD_PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'] as const;
export type PodPhase = (typeof POD_PHASES)[number];

const ContainerStateSchema = v.object({
  waiting: nullable(v.object({ reason: optString, message: optString })),
  running: nullable(v.object({ startedAt: optString })),
  terminated: nullable(
    v.object({
      exitCode: v.number(),
      signal: optInt,
      reason: optString,
      message: optString,
      startedAt: optString,
      finishedAt: optString,
    }),
  ),
});
export type ContainerState = v.InferOutput<typeof ContainerStateSchema>;

/** A core/v1 ContainerStatus subset (state waiting/running/terminated, last state, restarts). */
export const ContainerStatusSchema = v.object({
  name: v.string(),
  state: parseDefault(v.nullable(ContainerStateSchema, {}), {}),
  lastState: parseDefault(v.nullable(ContainerStateSchema, {}), {}),
  ready: parseDefault(v.boolean(), false),
  restartCount: parseDefault(v.number(), 0),
});
export type ContainerStatus = v.InferOutput<typeof ContainerStatusSchema>;

const ContainerStatusesSchema = parseDefault(v.nullable(v.array(ContainerStatusSchema), []), []);
const ContainersSchema = parseDefault(v.nullable(v.array(v.object({ name: v.string() })), []), []);

/** The subset of core/v1 Pod the controller reads: container names, phase, container statuses. */
export const PodSchema = v.object({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: ObjectMetaSchema,
  spec: parseDefault(
    v.object({
      containers: ContainersSchema,
      initContainers: ContainersSchema,
      nodeName: optString,
    }),
    {},
  ),
  status: parseDefault(
    v.object({
      phase: parseDefault(lenientEnum(POD_PHASES, 'Unknown'), 'Pending'),
      reason: optString,
      message: optString,
      startTime: optString,
      containerStatuses: ContainerStatusesSchema,
      initContainerStatuses: ContainerStatusesSchema,
      /** PodScheduled (False/Unschedulable from the scheduler), Initialized, ContainersReady, Ready… */
      conditions: parseDefault(v.nullable(v.array(JobConditionSchema), []), []),
    }),
    {},
  ),
});
export type Pod = v.InferOutput<typeof PodSchema>;
export type PodStatus = Pod['status'];

/** Parses a core/v1 Pod read from the API server (unknown fields dropped, absent status `Pending`). */
export function parsePod(u: unknown): Result<Pod, string> {
  return parseWith(PodSchema, u, 'Pod');
}

/**
 * The subset of a core/v1 Event the controller reads about its Jobs (the Job controller's `FailedCreate`: the pod
 * could not be created, e.g. refused by Pod Security admission or a quota).
 */
export const ObjectEventSchema = v.object({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.string()),
  metadata: ObjectMetaSchema,
  involvedObject: v.object({
    kind: optString,
    namespace: optString,
    name: optString,
    uid: optString,
  }),
  reason: optString,
  message: optString,
  type: optString,
  count: optInt,
  /** Last occurrence (core/v1); events.k8s.io writers set `eventTime` / `series` instead. */
  lastTimestamp: optString,
  eventTime: optString,
});
export type ObjectEvent = v.InferOutput<typeof ObjectEventSchema>;

/**
 * A v1 ConfigMap as far as the controller reads one (an agent's memory, issue 10 §3): its resourceVersion, labels
 * and string data. Loose: every other field is kept as read, because the controller writes the object back whole
 * (PUT, resourceVersion precondition) and must not drop what it does not know (binaryData, other metadata).
 */
export const ConfigMapSchema = v.looseObject({
  metadata: v.looseObject({
    name: v.string(),
    resourceVersion: v.string(),
    labels: v.nullish(v.record(v.string(), v.string())),
  }),
  data: v.nullish(v.record(v.string(), v.string())),
  immutable: v.nullish(v.boolean()),
});
export type ConfigMap = v.InferOutput<typeof ConfigMapSchema>;

/** Parses a ConfigMap read from the API server (see {@link ConfigMapSchema}). */
export function parseConfigMap(u: unknown): Result<ConfigMap, string> {
  return parseWith(ConfigMapSchema, u, 'ConfigMap');
}
