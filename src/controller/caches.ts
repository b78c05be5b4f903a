// The controller's watches: one informer per kind it reads, kept warm on every replica (leading or not). Each
// change goes to the wiring's handler for its source (run-controller.ts), which updates the indexes and fires the
// triggers (triggers.ts).

import {
  type Agent,
  AgentSchema,
  type ObjectEvent,
  ObjectEventSchema,
  type Pod,
  PodSchema,
  SPEND_CONFIGMAP,
} from '../api/index.ts';
import type { ControllerConfig } from '../config/index.ts';
import { LABEL_SERVICE_NAME } from '../effects/api-server.ts';
import { AGENT_DEFINITIONS, AGENT_POLICIES, AGENTS, STATIONS } from '../effects/resources.ts';
import { JOB_LABEL_SELECTOR } from '../jobs/index.ts';
import {
  CONFIG_MAPS,
  describeKubeError,
  ENDPOINT_SLICES,
  EVENTS,
  isForbidden,
  JOBS,
  type KubeObject,
  PODS,
  type Transport,
} from '../kube/index.ts';
import type { ControllerMetrics } from '../metrics/index.ts';
import { type Change, type Clock, createInformer, type Informer } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';

/** What the wiring does with each watch's changes and list failures. */
export interface CacheHandlers {
  agent(c: Change<Agent>): void;
  job(c: Change<KubeObject>): void;
  station(c: Change<KubeObject>): void;
  definition(c: Change<KubeObject>): void;
  policy(c: Change<KubeObject>): void;
  endpointSlice(c: Change<KubeObject>): void;
  /** The EndpointSlice LIST was refused (the dependencies gate then says so). */
  endpointSlicesForbidden(why: string): void;
  pendingPod(c: Change<Pod>): void;
  finishedPod(c: Change<Pod>): void;
  jobEvent(c: Change<ObjectEvent>): void;
  /** The spend ledgers (ConfigMaps agent-spend, issue 28 §4). */
  spendLedger(c: Change<KubeObject>): void;
}

export interface Caches {
  readonly agents: Informer<Agent>;
  readonly stations: Informer<KubeObject>;
  readonly definitions: Informer<KubeObject>;
  /** Started only once AgentPolicies are known to be readable (policies.ts). */
  readonly policies: Informer<KubeObject>;
  readonly slices: Informer<KubeObject>;
  readonly jobs: Informer<KubeObject>;
  /** Run pods that have not started, parsed and trimmed to what the start decision reads. */
  readonly pendingPods: Informer<Pod>;
  /** Run pods that ended (issue 15 §2): their agent container's log is read ahead of the Job's verdict. */
  readonly finishedPods: Informer<Pod>;
  /** The Job controller's FailedCreate Events. */
  readonly jobEvents: Informer<ObjectEvent>;
  /** The spend ledgers of the namespaces (ConfigMaps `agent-spend`, by name: the controller may read no other). */
  readonly spendLedgers: Informer<KubeObject>;
  /** Every informer but the policies', which starts later. */
  readonly always: readonly Informer<KubeObject>[];
}

export function createCaches(
  deps: {
    readonly config: ControllerConfig;
    readonly transport: Transport;
    readonly clock: Clock;
    readonly random: () => number;
    readonly logger: Logger;
    readonly metrics: ControllerMetrics;
    readonly namespace: string | undefined;
  },
  on: CacheHandlers,
): Caches {
  const { metrics, logger: log } = deps;
  const base = {
    transport: deps.transport,
    namespace: deps.namespace,
    clock: deps.clock,
    random: deps.random,
    logger: log,
  };
  const reconnect = (resource: string) => ({ onReconnect: () => metrics.watchReconnects.inc({ resource }) });
  // Agents are cached parsed (an Agent that does not parse is skipped with a warning by the informer): one copy
  // per Agent, shared with the book, matters at 10,000 queued Agents.
  const agents = createInformer<Agent>({
    ...base,
    resource: AGENTS,
    schema: AgentSchema,
    hooks: {
      ...reconnect('agents'),
      // Every full LIST of Agents: at start, on each poll and after a 410 (a failed LIST's retry is not one).
      onList: (reason) => {
        if (reason !== 'retry') metrics.resyncs.inc();
      },
    },
    onChange: on.agent,
  });
  const stations = createInformer({
    ...base,
    resource: STATIONS,
    hooks: reconnect('stations'),
    onChange: on.station,
  });
  const definitions = createInformer({
    ...base,
    resource: AGENT_DEFINITIONS,
    hooks: reconnect('agentdefinitions'),
    onChange: on.definition,
  });
  // AgentPolicies are cluster-scoped.
  const policies = createInformer({
    ...base,
    namespace: undefined,
    resource: AGENT_POLICIES,
    hooks: reconnect('agentpolicies'),
    onChange: on.policy,
  });
  // EndpointSlices of Services, for the dependencies gate (issue 10 §4).
  const slices = createInformer({
    ...base,
    resource: ENDPOINT_SLICES,
    labelSelector: LABEL_SERVICE_NAME,
    hooks: {
      ...reconnect('endpointslices'),
      onListError: (error) => {
        if (isForbidden(error))
          on.endpointSlicesForbidden(
            `the controller may not watch EndpointSlices (${describeKubeError(error)})`,
          );
      },
    },
    onChange: on.endpointSlice,
  });
  // Runs that cannot start (issue 13 §4): only pods that have not started (one that leaves Pending arrives as
  // deleted): thousands of runs may be in progress.
  const pendingPods = createInformer<Pod>({
    ...base,
    resource: PODS,
    labelSelector: JOB_LABEL_SELECTOR,
    fieldSelector: 'status.phase=Pending',
    schema: PodSchema,
    hooks: reconnect('pods'),
    onChange: on.pendingPod,
  });
  const finishedPods = createInformer<Pod>({
    ...base,
    resource: PODS,
    labelSelector: JOB_LABEL_SELECTOR,
    fieldSelector: 'status.phase!=Pending,status.phase!=Running,status.phase!=Unknown',
    schema: PodSchema,
    hooks: reconnect('pods'),
    onChange: on.finishedPod,
  });
  let eventsForbiddenLogged = false;
  const jobEvents = createInformer<ObjectEvent>({
    ...base,
    resource: EVENTS,
    fieldSelector: 'involvedObject.kind=Job,reason=FailedCreate',
    schema: ObjectEventSchema,
    hooks: {
      ...reconnect('events'),
      onListError: (error) => {
        if (!isForbidden(error) || eventsForbiddenLogged) return;
        eventsForbiddenLogged = true;
        log.warn(
          'The controller may not watch Events: a run whose pod cannot be created shows it only at its deadline',
          {
            error: describeKubeError(error),
          },
        );
      },
    },
    onChange: on.jobEvent,
  });
  const spendLedgers = createInformer({
    ...base,
    resource: CONFIG_MAPS,
    fieldSelector: `metadata.name=${SPEND_CONFIGMAP}`,
    hooks: reconnect('configmaps'),
    onChange: on.spendLedger,
  });
  const jobs = createInformer({
    ...base,
    resource: JOBS,
    labelSelector: JOB_LABEL_SELECTOR,
    hooks: reconnect('jobs'),
    onChange: on.job,
  });
  const always = [
    agents,
    stations,
    definitions,
    jobs,
    slices,
    pendingPods,
    finishedPods,
    jobEvents,
    spendLedgers,
  ] as Informer<KubeObject>[];
  return {
    agents,
    stations,
    definitions,
    policies,
    slices,
    jobs,
    pendingPods,
    finishedPods,
    jobEvents,
    spendLedgers,
    always,
  };
}
