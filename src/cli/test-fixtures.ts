// Objects as the API server sends them, for the CLI's unit tests.
import { type Agent, parseAgent, parseStation, type Station } from '../api/index.ts';

export const NS = 'team';
export const T0 = Date.parse('2026-12-01T12:00:00.000Z');
/** RFC 3339 time `s` seconds after T0. */
export const iso = (s: number): string => new Date(T0 + s * 1000).toISOString().replace(/\.000Z$/, 'Z');

export interface RawAgentOpts {
  readonly station?: string;
  /** Seconds after T0. */
  readonly created?: number;
  readonly phase?: string;
  readonly jobName?: string;
  readonly exitCode?: number;
  readonly failureReason?: string;
  readonly ready?: { readonly status?: string; readonly reason: string; readonly message?: string };
  readonly startBlocked?: { readonly reason: string; readonly message: string };
  readonly deleting?: boolean;
  readonly rv?: string;
  readonly status?: Record<string, unknown>;
  readonly namespace?: string;
  readonly parameters?: Record<string, string>;
}

/** An Agent as the API server returns it (with managedFields, as a real one has). */
export function rawAgent(name: string, o: RawAgentOpts = {}): Record<string, unknown> {
  const conditions: Record<string, unknown>[] = [];
  if (o.ready !== undefined)
    conditions.push({
      type: 'Ready',
      status: o.ready.status ?? 'False',
      reason: o.ready.reason,
      message: o.ready.message ?? '',
      lastTransitionTime: iso(1),
    });
  if (o.startBlocked !== undefined)
    conditions.push({
      type: 'StartBlocked',
      status: 'True',
      reason: o.startBlocked.reason,
      message: o.startBlocked.message,
      lastTransitionTime: iso(1),
    });
  const status: Record<string, unknown> = {
    ...(o.phase !== undefined ? { phase: o.phase } : {}),
    ...(o.jobName !== undefined ? { jobName: o.jobName } : {}),
    ...(o.exitCode !== undefined ? { exitCode: o.exitCode } : {}),
    ...(o.failureReason !== undefined ? { failureReason: o.failureReason } : {}),
    ...(conditions.length > 0 ? { conditions } : {}),
    ...o.status,
  };
  return {
    apiVersion: 'agents.re-cinq.com/v1alpha1',
    kind: 'Agent',
    metadata: {
      name,
      namespace: o.namespace ?? NS,
      uid: `uid-${name}`,
      resourceVersion: o.rv ?? '1',
      generation: 1,
      creationTimestamp: iso(o.created ?? 0),
      managedFields: [{ manager: 'agent-controller' }],
      ...(o.deleting === true ? { deletionTimestamp: iso(100) } : {}),
    },
    spec: { stationRef: o.station ?? 'hello', parameters: o.parameters ?? {} },
    ...(Object.keys(status).length > 0 ? { status } : {}),
  };
}

/** The parsed Agent of `rawAgent`. */
export function agentOf(name: string, o: RawAgentOpts = {}): Agent {
  const r = parseAgent(rawAgent(name, o));
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** A Station as the API server returns it. */
export function rawStation(name = 'hello', spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'agents.re-cinq.com/v1alpha1',
    kind: 'Station',
    metadata: {
      name,
      namespace: NS,
      uid: `uid-station-${name}`,
      resourceVersion: '1',
      creationTimestamp: iso(-600),
    },
    spec: { agentDefRef: name, template: { spec: { containers: [{ name: 'agent', image: 'x' }] } }, ...spec },
  };
}

export function stationOf(name = 'hello', spec: Record<string, unknown> = {}): Station {
  const r = parseStation(rawStation(name, spec));
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** An AgentDefinition as the API server returns it. */
export function rawDefinition(name = 'hello', spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'agents.re-cinq.com/v1alpha1',
    kind: 'AgentDefinition',
    metadata: {
      name,
      namespace: NS,
      uid: `uid-def-${name}`,
      resourceVersion: '1',
      creationTimestamp: iso(-900),
    },
    spec: { model: 'claude-opus-5-5', prompt: 'Do {prompt}', ...spec },
  };
}
