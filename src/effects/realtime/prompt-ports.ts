// The prompt API's ports against the real cluster: TokenReview and SubjectAccessReview (delegated authentication and
// authorisation, as an aggregated API server does), the Agent and its run pod read live from the API server, the
// forward to the pod's prompt server with the run's token, and the `status.sessionId` patch.

import * as v from 'valibot';
import { API_VERSION, DNS1123_SUBDOMAIN, GROUP } from '../../api/index.ts';
import { LABEL_JOB_NAME } from '../../jobs/names.ts';
import { LABEL_EXECUTION, REALTIME_PORT } from '../../jobs/realtime.ts';
import {
  describeKubeError,
  type EventRecorder,
  getObject,
  isConflict,
  isNotFound,
  listAll,
  PODS,
  patchStatus,
  type Transport,
} from '../../kube/index.ts';
import { REASON } from '../../reconcile/reasons.ts';
import type { PodEndpoint, PromptApiDeps, PromptTarget, Upstream } from '../../server/prompt.ts';
import type { Logger } from '../../shared/log.ts';
import { sessionIdOfAny } from '../../vendors/cli/session.ts';
import { type AccessReviews, createAccessReviews } from '../access-review.ts';
import { AGENTS } from '../resources.ts';
import type { PromptTokens } from './tokens.ts';

const AgentView = v.looseObject({
  metadata: v.looseObject({ name: v.string(), namespace: v.optional(v.string()), uid: v.string() }),
  status: v.optional(
    v.looseObject({
      phase: v.optional(v.string()),
      jobName: v.optional(v.string()),
      sessionId: v.optional(v.string()),
    }),
  ),
});
const PodView = v.looseObject({
  metadata: v.looseObject({
    name: v.string(),
    labels: v.optional(v.record(v.string(), v.string())),
    deletionTimestamp: v.optional(v.string()),
  }),
  status: v.optional(v.looseObject({ phase: v.optional(v.string()), podIP: v.optional(v.string()) })),
});

export interface PromptPortsOptions {
  readonly transport: Transport;
  readonly tokens: () => PromptTokens | undefined;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly now: () => number;
  readonly fetch?: typeof fetch;
  /** The Agent from the controller's informer cache (every replica keeps one), if it is there. */
  readonly cachedAgent?: (namespace: string, name: string) => unknown;
  /** TokenReviews and SubjectAccessReviews (shared with the console, so their caches are); made here if absent. */
  readonly access?: AccessReviews;
}

/** The prompt API's ports (everything but `observe`, which the metrics own). */
export function promptPorts(o: PromptPortsOptions): Omit<PromptApiDeps, 'observe'> {
  const doFetch = o.fetch ?? ((input, init) => fetch(input, init));
  const access = o.access ?? createAccessReviews(o);
  /** The prompt server of a run (by Agent uid), kept while it answers; dropped when a forward fails. */
  const endpoints = new Map<string, string>();

  return {
    now: o.now,
    async authenticate(request, peer) {
      // A client certificate signed by the cluster's client CA: user = CN, groups = O (as the API server reads it).
      if (peer?.authorized === true && (peer.commonName ?? '') !== '')
        return { username: peer.commonName ?? '', groups: [...peer.organizations, 'system:authenticated'] };
      const token = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1];
      if (token === undefined) return undefined;
      return access.authenticateToken(token);
    },
    authorize: (caller, target) =>
      access.authorize(caller, {
        verb: 'create',
        group: GROUP,
        resource: 'agents',
        subresource: target.subresource,
        namespace: target.namespace,
        name: target.name,
      }),
    async agent(namespace, name, fresh) {
      const cached = v.safeParse(AgentView, fresh === true ? undefined : o.cachedAgent?.(namespace, name));
      let a: v.InferOutput<typeof AgentView>;
      if (cached.success) a = cached.output;
      else {
        const got = await getObject(o.transport, AGENTS, { namespace, name }, AgentView);
        if (!got.ok) return isNotFound(got.error) ? undefined : { error: describeKubeError(got.error) };
        a = got.value;
      }
      return {
        namespace,
        name: a.metadata.name,
        uid: a.metadata.uid,
        phase: a.status?.phase,
        jobName: a.status?.jobName,
        sessionId: a.status?.sessionId,
      };
    },
    async endpoint(target) {
      // status.jobName is written by whoever may patch the status: only a valid name reaches a label selector.
      const job = target.jobName ?? '';
      if (job.length > 63 || !DNS1123_SUBDOMAIN.test(job))
        return { kind: 'notRealtime' } satisfies PodEndpoint;
      const known = endpoints.get(target.uid);
      if (known !== undefined) return { kind: 'ready', url: known } satisfies PodEndpoint;
      const listed = await listAll(o.transport, PODS, PodView, {
        namespace: target.namespace,
        labelSelector: `${LABEL_JOB_NAME}=${target.jobName ?? ''}`,
      });
      if (!listed.ok) return { error: describeKubeError(listed.error) };
      const pods = listed.value.items.filter((p) => p.metadata.deletionTimestamp === undefined);
      if (pods.length > 0 && pods.every((p) => p.metadata.labels?.[LABEL_EXECUTION] !== 'realtime'))
        return { kind: 'notRealtime' } satisfies PodEndpoint;
      const pod = pods.find((p) => p.status?.phase === 'Running' && (p.status.podIP ?? '') !== '');
      if (pod === undefined) {
        const phase = pods[0]?.status?.phase;
        return {
          kind: 'notYet',
          detail: pods.length === 0 ? 'no pod yet' : `pod ${pods[0]?.metadata.name} is ${phase ?? 'Pending'}`,
        };
      }
      const ip = pod.status?.podIP ?? '';
      const url = `http://${ip.includes(':') ? `[${ip}]` : ip}:${REALTIME_PORT}`;
      if (endpoints.size > 10_000) endpoints.clear();
      endpoints.set(target.uid, url);
      return { kind: 'ready', url };
    },
    async forward(url, path, uid, body, signal): Promise<Upstream> {
      const tokens = o.tokens();
      if (tokens === undefined) throw new Error('the realtime key is not loaded yet');
      try {
        const res = await doFetch(`${url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${tokens.tokenFor(uid)}`, 'content-type': 'application/json' },
          body,
          signal,
        });
        return { status: res.status, body: res.body, text: () => res.text() };
      } catch (error) {
        endpoints.delete(uid); // the pod moved or ended: look it up again next time
        throw error;
      }
    },
    sessionIdOf(line) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        return undefined;
      }
      return sessionIdOfAny(parsed);
    },
    sessionSeen(target, sessionId) {
      void recordSession(o, target, sessionId);
    },
  };
}

/** Patches `status.sessionId` (resourceVersion precondition, retried on conflict) and records an Event once. */
async function recordSession(o: PromptPortsOptions, target: PromptTarget, sessionId: string): Promise<void> {
  const ref = { namespace: target.namespace, name: target.name };
  for (let attempt = 0; attempt < 4; attempt++) {
    const got = await getObject(
      o.transport,
      AGENTS,
      ref,
      v.looseObject({
        metadata: v.looseObject({ uid: v.string(), resourceVersion: v.string() }),
        status: v.optional(v.looseObject({ sessionId: v.optional(v.string()) })),
      }),
    );
    if (!got.ok || got.value.metadata.uid !== target.uid) return;
    if (got.value.status?.sessionId === sessionId) return;
    const patched = await patchStatus(o.transport, AGENTS, ref, { sessionId }, v.unknown(), {
      resourceVersion: got.value.metadata.resourceVersion,
      fieldManager: 'agent-controller',
    });
    if (patched.ok) {
      void o.events.record(
        { apiVersion: API_VERSION, kind: 'Agent', metadata: { ...ref, uid: target.uid } },
        { type: 'Normal', reason: REASON.sessionStarted, message: `CLI session ${sessionId}` },
      );
      return;
    }
    if (!isConflict(patched.error)) {
      o.logger.warn('Recording the session id failed', {
        agent: `${ref.namespace}/${ref.name}`,
        error: describeKubeError(patched.error),
      });
      return;
    }
  }
}
