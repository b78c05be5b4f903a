/**
 * The shell's view of runs that are starting (issue 13 §4): run pods and the Job controller's `FailedCreate`
 * Events, indexed by Job, fed from two watches. `observe` gives the core a run's `StartObservation`; the change
 * handlers tell which Job's Agent to wake, only when something the start decision reads changed.
 */
import type { ObjectEvent, Pod } from '../api/index.ts';
import { objectKey } from '../kube/index.ts';
import { podStartSignal, START_PROBLEM_REASONS } from '../reconcile/agent/starting.ts';
import type { PodCreateFailure, StartObservation } from '../reconcile/snapshot.ts';
import type { Change } from '../runtime/index.ts';

/** The Job a pod belongs to (`namespace/name`), from the labels the Job controller sets. */
export function podJobKey(pod: Pod): string | undefined {
  const labels = pod.metadata.labels;
  const job = labels['batch.kubernetes.io/job-name'] ?? labels['job-name'];
  return job === undefined ? undefined : `${pod.metadata.namespace}/${job}`;
}

/** The Job's uid on its pods, from the labels the Job controller sets. */
export function podJobUid(pod: Pod): string | undefined {
  const labels = pod.metadata.labels;
  return labels['batch.kubernetes.io/controller-uid'] ?? labels['controller-uid'];
}

/** The Job an Event is about (`namespace/name`), when it is a Job's `FailedCreate`. */
export function eventJobKey(ev: ObjectEvent): string | undefined {
  const o = ev.involvedObject;
  if (o.kind !== 'Job' || ev.reason !== 'FailedCreate' || o.name === undefined) return undefined;
  return `${o.namespace ?? ev.metadata.namespace}/${o.name}`;
}

const EMPTY: StartObservation = { pods: [], createFailures: [] };

export class RunStartIndex {
  readonly #pods = new Map<string, Map<string, Pod>>();
  readonly #failures = new Map<string, Map<string, PodCreateFailure>>();

  /**
   * Records a pod change; returns its Job's key when the run's start may read differently now, and whether the pod
   * is now kept from starting (a pod that is merely created or started matters only to a run that shows a cause).
   */
  podChanged(c: Change<Pod>): { readonly job: string; readonly blocked: boolean } | undefined {
    const changed = this.#podChanged(c);
    if (changed === undefined) return undefined;
    const blocked = c.type !== 'deleted' && START_PROBLEM_REASONS.has(podStartSignal(c.object));
    return { job: changed, blocked };
  }

  #podChanged(c: Change<Pod>): string | undefined {
    const job = podJobKey(c.object);
    const old = c.type === 'modified' ? c.old : undefined;
    const oldJob = old === undefined ? undefined : podJobKey(old);
    if (old !== undefined && oldJob !== undefined && oldJob !== job)
      remove(this.#pods, oldJob, objectKey(old));
    if (job === undefined) return oldJob;
    if (c.type === 'deleted') {
      remove(this.#pods, job, objectKey(c.object));
      return job;
    }
    put(this.#pods, job, objectKey(c.object), c.object);
    if (old !== undefined && oldJob === job && podStartSignal(old) === podStartSignal(c.object))
      return undefined;
    return job;
  }

  /** Records an Event change; returns its Job's key when it is a new or repeated `FailedCreate` of a Job. */
  eventChanged(c: Change<ObjectEvent>): string | undefined {
    const job = eventJobKey(c.object);
    if (job === undefined) return undefined;
    const key = objectKey(c.object);
    if (c.type === 'deleted') {
      remove(this.#failures, job, key);
      return undefined;
    }
    const ev = c.object;
    put(this.#failures, job, key, {
      jobUid: ev.involvedObject.uid ?? '',
      message: ev.message ?? 'FailedCreate',
      lastSeen: ev.lastTimestamp ?? ev.eventTime ?? ev.metadata.creationTimestamp,
    });
    return job;
  }

  /**
   * The pods and pod-creation failures of the Job `namespace/name`; `withFailures` false leaves the failures out (the
   * Event watch has not listed yet, or may not: a failure seen alone, without the pods, is not one).
   */
  observe(namespace: string, jobName: string, withFailures = true): StartObservation {
    const key = `${namespace}/${jobName}`;
    const pods = this.#pods.get(key);
    const failures = withFailures ? this.#failures.get(key) : undefined;
    if (pods === undefined && failures === undefined) return EMPTY;
    return { pods: [...(pods?.values() ?? [])], createFailures: [...(failures?.values() ?? [])] };
  }

  /** Jobs with indexed pods or failures (for tests and gauges). */
  get size(): number {
    return new Set([...this.#pods.keys(), ...this.#failures.keys()]).size;
  }
}

function put<T>(index: Map<string, Map<string, T>>, job: string, key: string, value: T): void {
  let entries = index.get(job);
  if (entries === undefined) {
    entries = new Map();
    index.set(job, entries);
  }
  entries.set(key, value);
}

function remove<T>(index: Map<string, Map<string, T>>, job: string, key: string): void {
  const entries = index.get(job);
  if (entries === undefined) return;
  entries.delete(key);
  if (entries.size === 0) index.delete(job);
}
