// Test fixtures for the reconcile core: realistic objects built by running raw API JSON through the api parsers.
import {
  type Agent,
  type AgentDefinition,
  type Job,
  type Pod,
  parseAgent,
  parseAgentDefinition,
  parseJob,
  parsePod,
  parseStation,
  type Station,
} from '../api/index.ts';
import { buildJob, jobNameFor } from '../jobs/index.ts';
import { err } from '../shared/result.ts';
import type { JobBuilder } from './agent/decide.ts';
import { type StationQueueView, viewAmong } from './station/book.ts';

export const NS = 'team';
export const T0 = Date.parse('2025-03-01T12:00:00.000Z');
/** The instant `s` seconds after T0. */
export const at = (s: number): Date => new Date(T0 + s * 1000);
export const iso = (s: number): string => at(s).toISOString();

function unwrap<T>(r: { ok: true; value: T } | { ok: false; error: string }): T {
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

export interface AgentOpts {
  readonly station?: string;
  readonly created?: number;
  readonly rv?: string;
  readonly generation?: number;
  readonly status?: Record<string, unknown>;
  readonly deleting?: boolean;
  readonly uid?: string;
}

export function agent(name: string, o: AgentOpts = {}): Agent {
  return unwrap(
    parseAgent({
      apiVersion: 'agents.re-cinq.com/v1alpha1',
      kind: 'Agent',
      metadata: {
        name,
        namespace: NS,
        uid: o.uid ?? `uid-${name}`,
        resourceVersion: o.rv ?? `rv-${name}`,
        generation: o.generation ?? 1,
        creationTimestamp: iso(o.created ?? 0),
        ...(o.deleting ? { deletionTimestamp: iso(500) } : {}),
      },
      spec: { stationRef: o.station ?? 'stn' },
      ...(o.status !== undefined ? { status: o.status } : {}),
    }),
  );
}

export const running = (name: string, o: AgentOpts & { started?: number; jobName?: string } = {}): Agent =>
  agent(name, {
    ...o,
    status: {
      phase: 'Running',
      jobName: o.jobName ?? jobNameFor(name),
      startedAt: iso(o.started ?? 1),
      ...o.status,
    },
  });

export const finished = (
  name: string,
  phase: 'Succeeded' | 'Failed',
  completed: number,
  o: AgentOpts = {},
): Agent => agent(name, { ...o, status: { phase, completedAt: iso(completed), ...o.status } });

export function station(name = 'stn', spec: Record<string, unknown> = {}): Station {
  return unwrap(
    parseStation({
      metadata: {
        name,
        namespace: NS,
        uid: `uid-st-${name}`,
        resourceVersion: '1',
        creationTimestamp: iso(-100),
      },
      spec: {
        agentDefRef: 'def',
        template: { spec: { containers: [{ name: 'agent', image: 'busybox' }] } },
        ...spec,
      },
    }),
  );
}

/** An AgentDefinition with prompt `Do {thing}`; `spec` adds or overrides wire fields (e.g. `output.sinks`). */
export function definition(name = 'def', spec: Record<string, unknown> = {}): AgentDefinition {
  return unwrap(
    parseAgentDefinition({
      metadata: {
        name,
        namespace: NS,
        uid: `uid-def-${name}`,
        resourceVersion: '1',
        creationTimestamp: iso(-100),
      },
      spec: { prompt: 'Do {thing}', ...spec },
    }),
  );
}

export interface JobOpts {
  readonly owner?: { readonly name: string; readonly uid: string; readonly kind?: string } | null;
  readonly created?: number;
  readonly conditions?: readonly Record<string, unknown>[];
  readonly succeeded?: number;
  readonly failed?: number;
  /** `status.active`: pods the Job controller created and counts as running. */
  readonly active?: number;
  readonly deleting?: boolean;
}

/** The Job of the Agent `agentName` (owned by `uid-<agentName>` unless `owner` says otherwise). */
export function job(agentName: string, o: JobOpts = {}): Job {
  const owner = o.owner === undefined ? { name: agentName, uid: `uid-${agentName}` } : o.owner;
  return unwrap(
    parseJob({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: jobNameFor(agentName),
        namespace: NS,
        uid: `uid-job-${agentName}`,
        resourceVersion: '7',
        creationTimestamp: iso(o.created ?? 1),
        ...(o.deleting ? { deletionTimestamp: iso(400) } : {}),
        ownerReferences:
          owner === null
            ? []
            : [
                {
                  apiVersion: 'agents.re-cinq.com/v1alpha1',
                  kind: owner.kind ?? 'Agent',
                  name: owner.name,
                  uid: owner.uid,
                  controller: true,
                  blockOwnerDeletion: true,
                },
              ],
      },
      spec: { backoffLimit: 0 },
      status: {
        ...(o.conditions !== undefined ? { conditions: o.conditions } : {}),
        ...(o.succeeded !== undefined ? { succeeded: o.succeeded } : {}),
        ...(o.failed !== undefined ? { failed: o.failed } : {}),
        ...(o.active !== undefined ? { active: o.active } : {}),
      },
    }),
  );
}

export const complete = [{ type: 'Complete', status: 'True', reason: 'CompletionsReached' }];
export const successCriteriaMet = [
  { type: 'SuccessCriteriaMet', status: 'True', reason: 'CompletionsReached' },
];
export const failedBackoff = [
  {
    type: 'Failed',
    status: 'True',
    reason: 'BackoffLimitExceeded',
    message: 'Job has reached the specified backoff limit',
  },
];
export const failureTarget = [
  {
    type: 'FailureTarget',
    status: 'True',
    reason: 'BackoffLimitExceeded',
    message: 'Job has reached the specified backoff limit',
  },
];
export const deadlineExceeded = [
  {
    type: 'Failed',
    status: 'True',
    reason: 'DeadlineExceeded',
    message: 'Job was active longer than specified deadline',
  },
];

/** A pod of the Agent's Job whose agent container exited with `exitCode` (undefined: still running). */
export function pod(agentName: string, exitCode: number | undefined, message?: string): Pod {
  return unwrap(
    parsePod({
      metadata: {
        name: `${jobNameFor(agentName)}-abcde`,
        namespace: NS,
        uid: `uid-pod-${agentName}`,
        resourceVersion: '9',
        creationTimestamp: iso(2),
        labels: { 'job-name': jobNameFor(agentName) },
      },
      spec: { containers: [{ name: 'agent' }] },
      status: {
        phase: exitCode === undefined ? 'Running' : exitCode === 0 ? 'Succeeded' : 'Failed',
        containerStatuses: [
          {
            name: 'agent',
            state:
              exitCode === undefined
                ? { running: {} }
                : { terminated: { exitCode, ...(message !== undefined ? { message } : {}) } },
          },
        ],
      },
    }),
  );
}

/** The real builder (src/jobs `buildJob`), recording its requests. */
export function recordingBuilder(): JobBuilder & { readonly calls: Parameters<JobBuilder>[0][] } {
  const calls: Parameters<JobBuilder>[0][] = [];
  const build: JobBuilder = (req) => {
    calls.push(req);
    return buildJob(req);
  };
  return Object.assign(build, { calls });
}

/** A builder that always fails with `message`. */
export const failingBuilder =
  (message: string): JobBuilder =>
  () =>
    err(message);

/** The Station picture `candidate` sees among `siblings` (see `viewAmong`). */
export function queueOf(candidate: Agent, siblings: readonly Agent[] = []): StationQueueView<Agent> {
  return viewAmong(candidate, siblings);
}
