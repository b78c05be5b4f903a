// What the console needs from the cluster (its ports, filled by ./ports.ts in the controller and by fakes in tests),
// and the shapes they answer with.

import type { Agent, Job, Pod, Station } from '../api/index.ts';
import type { EventRead, Optional } from '../cli/api.ts';
import type { CallerIdentity } from '../server/prompt.ts';
import type { SessionStore } from './session.ts';

/** What a SubjectAccessReview asks. */
export interface AccessRequest {
  readonly verb: 'get' | 'list' | 'create';
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly namespace: string;
  readonly name?: string;
}

/** An Agent's surroundings, each read only when the person may read it. */
export interface AgentExtras {
  readonly job: Optional<Job> | undefined;
  readonly pods: Optional<Pod[]> | undefined;
  readonly events: Optional<EventRead[]>;
}

/** How an output stream ended. */
export type OutputEnd = 'ended' | 'gone' | 'aborted' | { readonly error: string };

export interface ConsolePorts {
  /** Who a bearer token belongs to (TokenReview); undefined when nobody; `error` when the review failed. */
  authenticateToken(token: string): Promise<CallerIdentity | undefined | { readonly error: string }>;
  /** Whether `caller` may do it (SubjectAccessReview); `error` when the review failed. */
  authorize(caller: CallerIdentity, access: AccessRequest): Promise<boolean | { readonly error: string }>;
  listAgents(namespace: string): Promise<readonly Agent[] | { readonly error: string }>;
  listStations(namespace: string): Promise<readonly Station[] | { readonly error: string }>;
  getAgent(namespace: string, name: string): Promise<Optional<Agent>>;
  getStation(namespace: string, name: string): Promise<Optional<Station>>;
  /** The prompt template of an AgentDefinition, when it can be read. */
  promptTemplate(namespace: string, definition: string): Promise<string | undefined>;
  /** The Agent's Job, pods and Events; `allowed` says which of them the person may read. */
  agentExtras(
    agent: Agent,
    allowed: { readonly job: boolean; readonly pods: boolean; readonly events: boolean },
  ): Promise<AgentExtras>;
  /** Creates an Agent; the created Agent or the API server's message. */
  createAgent(
    namespace: string,
    body: Readonly<Record<string, unknown>>,
  ): Promise<{ readonly agent: Agent } | { readonly error: string; readonly status: number }>;
  /** Streams the agent log of the run's pod, line by line, until it ends, the pod is gone, or `signal` aborts. */
  streamOutput(o: {
    readonly namespace: string;
    readonly jobName: string;
    readonly runOver: boolean;
    readonly signal: AbortSignal;
    readonly onLine: (line: string) => void;
  }): Promise<OutputEnd>;
  /** Sends a prompt to a realtime run as `caller` (through the prompt API: it authorises `agents/prompt`). */
  prompt(
    caller: CallerIdentity,
    namespace: string,
    name: string,
    body: string,
    signal: AbortSignal,
  ): Promise<Response>;
  readonly sessions: SessionStore;
  /** The namespace shown when none is asked for. */
  readonly defaultNamespace: string;
  /** Served over TLS: cookies are `Secure`. */
  readonly secure: boolean;
  /** Where a trace id links to (`{traceID}` replaced). */
  readonly traceUrl?: string | undefined;
  readonly now: () => number;
}
