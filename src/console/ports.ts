// The web console's ports against the real cluster. Lists come from the controller's informer caches where it
// watches the namespace (every replica keeps them warm), everything else is read live with the controller's own
// credentials, after the console has asked a SubjectAccessReview for the signed-in person.

import {
  type Agent,
  type AgentDefinition,
  AgentSchema,
  parseStation,
  type Station,
  StationSchema,
} from '../api/index.ts';
import {
  createAgent,
  getDefinition,
  getJob,
  getStation,
  jobPods,
  type Optional,
  objectEvents,
  optional,
} from '../cli/api.ts';
import { CliError } from '../cli/exit.ts';
import { streamRunLog } from '../cli/log-stream.ts';
import type { AccessReviews } from '../effects/access-review.ts';
import type { promptPorts } from '../effects/realtime/prompt-ports.ts';
import { AGENTS, STATIONS } from '../effects/resources.ts';
import { getObject, listAll, type Transport } from '../kube/index.ts';
import type { Clock } from '../runtime/index.ts';
import { type CallerIdentity, createPromptApi } from '../server/prompt.ts';
import type { ConsolePorts } from './contract.ts';
import type { SessionStore } from './session.ts';

export interface ConsolePortsOptions {
  readonly transport: Transport;
  readonly access: AccessReviews;
  readonly sessions: SessionStore;
  /** The namespace the controller watches, or undefined for all. */
  readonly watched: string | undefined;
  /** The Agents and Stations of the controller's caches (raw for Stations). */
  readonly cachedAgents: () => readonly Agent[];
  readonly cachedStations: () => readonly unknown[];
  /** The prompt API's ports (the console's prompts go through the same checks and forward). */
  readonly prompt: ReturnType<typeof promptPorts> | undefined;
  readonly defaultNamespace: string;
  readonly secure: boolean;
  readonly traceUrl: string | undefined;
  readonly clock: Clock;
  readonly random: () => number;
}

export function consolePorts(o: ConsolePortsOptions): ConsolePorts {
  const t = o.transport;
  const watches = (namespace: string) => o.watched === undefined || o.watched === namespace;
  /** The caller of each forwarded prompt request. */
  const callers = new WeakMap<Request, CallerIdentity>();
  const promptApp =
    o.prompt === undefined
      ? undefined
      : createPromptApi({ ...o.prompt, authenticate: async (request) => callers.get(request) });

  return {
    authenticateToken: (token) => o.access.authenticateToken(token),
    authorize: (caller, access) => o.access.authorize(caller, access),
    async listAgents(namespace) {
      if (watches(namespace)) return o.cachedAgents().filter((a) => a.metadata.namespace === namespace);
      const r = await listAll(t, AGENTS, AgentSchema, { namespace });
      return r.ok ? r.value.items : { error: r.error.message };
    },
    async listStations(namespace) {
      if (watches(namespace)) {
        const out: Station[] = [];
        for (const raw of o.cachedStations()) {
          const s = parseStation(raw);
          if (s.ok && s.value.metadata.namespace === namespace) out.push(s.value);
        }
        return out;
      }
      const r = await listAll(t, STATIONS, StationSchema, { namespace });
      return r.ok ? r.value.items : { error: r.error.message };
    },
    async getAgent(namespace, name) {
      return optional(await getObject(t, AGENTS, { namespace, name }, AgentSchema));
    },
    getStation: (namespace, name) => getStation(t, namespace, name),
    async promptTemplate(namespace, definition) {
      const d: Optional<AgentDefinition> = await getDefinition(t, namespace, definition);
      return d.kind === 'ok' ? d.value.spec.prompt : undefined;
    },
    async agentExtras(agent, allowed) {
      const namespace = agent.metadata.namespace ?? '';
      const jobName = agent.status.jobName;
      const forbidden = { kind: 'forbidden' } as const;
      const [job, pods, events] = await Promise.all([
        jobName === undefined ? undefined : allowed.job ? getJob(t, namespace, jobName) : forbidden,
        jobName === undefined ? undefined : allowed.pods ? jobPods(t, namespace, jobName) : forbidden,
        allowed.events ? objectEvents(t, namespace, agent.metadata.uid ?? '') : forbidden,
      ]);
      return { job, pods, events };
    },
    async createAgent(namespace, body) {
      try {
        return { agent: await createAgent(t, namespace, body, undefined) };
      } catch (error) {
        return {
          error: error instanceof Error ? error.message : String(error),
          status: error instanceof CliError ? 422 : 500,
        };
      }
    },
    async streamOutput(s) {
      const runOver = new AbortController();
      if (s.runOver) runOver.abort();
      const end = await streamRunLog({
        transport: t,
        namespace: s.namespace,
        jobName: s.jobName,
        clock: o.clock,
        random: o.random,
        signal: s.signal,
        onLine: s.onLine,
        runOver: runOver.signal,
      });
      return end.kind === 'failed' ? { error: end.error.message } : end.kind;
    },
    async prompt(caller, namespace, name, body, signal) {
      if (promptApp === undefined)
        return Response.json(
          { message: 'realtime runs are not enabled on this controller (REALTIME_ENABLED)' },
          { status: 409 },
        );
      const request = new Request(
        `http://console/apis/agents.re-cinq.com/v1alpha1/namespaces/${namespace}/agents/${name}/prompt`,
        { method: 'POST', body, headers: { 'content-type': 'application/json' }, signal },
      );
      callers.set(request, caller);
      return promptApp.fetch(request);
    },
    sessions: o.sessions,
    defaultNamespace: o.defaultNamespace,
    secure: o.secure,
    traceUrl: o.traceUrl,
    now: () => o.clock.now(),
  };
}
