// The prompt API's ports against the real cluster: TokenReview and SubjectAccessReview (delegated authentication and
// authorisation, as an aggregated API server does), the Agent and its run pod read live from the API server, the
// forward to the pod's prompt server with the run's token, and the report of a session id a turn revealed (an
// annotation; decide records it in `status.sessionId`, issue 27 §2).

import * as v from 'valibot';
import { ANNOTATION_SESSION_TURNS, DNS1123_SUBDOMAIN, GROUP } from '../../api/index.ts';
import { LABEL_JOB_NAME } from '../../jobs/names.ts';
import { ANNOTATION_SESSION_ID, LABEL_EXECUTION, REALTIME_PORT } from '../../jobs/realtime.ts';
import {
  describeKubeError,
  getObject,
  isNotFound,
  type KubeError,
  listAll,
  mergePatch,
  PODS,
  type Transport,
} from '../../kube/index.ts';
import type { PodEndpoint, PromptApiDeps, PromptTarget, Upstream } from '../../server/prompt.ts';
import type { Logger } from '../../shared/log.ts';
import { err } from '../../shared/result.ts';
import { sessionIdOfAny } from '../../vendors/cli/session.ts';
import { type AccessReviews, createAccessReviews } from '../access-review.ts';
import { AGENTS } from '../resources.ts';
import type { SessionStatePort } from '../sessions/port.ts';
import { sessionPorts } from './session-ports.ts';
import type { PromptTokens } from './tokens.ts';

const AgentView = v.looseObject({
  metadata: v.looseObject({
    name: v.string(),
    namespace: v.optional(v.string()),
    uid: v.string(),
    annotations: v.optional(v.record(v.string(), v.string())),
  }),
  status: v.optional(
    v.looseObject({
      phase: v.optional(v.string()),
      jobName: v.optional(v.string()),
      sessionId: v.optional(v.string()),
      startedAt: v.optional(v.string()),
      session: v.optional(v.looseObject({ turns: v.optional(v.number()) })),
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
  readonly logger: Logger;
  readonly now: () => number;
  readonly fetch?: typeof fetch;
  /** The Agent from the controller's informer cache (every replica keeps one), if it is there. */
  readonly cachedAgent?: (namespace: string, name: string) => unknown;
  /** TokenReviews and SubjectAccessReviews (shared with the console, so their caches are); made here if absent. */
  readonly access?: AccessReviews;
  /** The session store (issue 29): turns saved and restored, Suspended sessions woken. Absent: none. */
  readonly sessions?: SessionStatePort | undefined;
  /** Bound of a prompt held while its Suspended session wakes, in ms. */
  readonly wakeWaitMs?: number | undefined;
  /** Metrics of the sessions: a turn's save, a held prompt's wake. */
  readonly observeSave?: ((result: 'ok' | 'error') => void) | undefined;
  readonly observeWake?: ((seconds: number, result: 'ok' | 'timeout' | 'error') => void) | undefined;
}

/** The prompt API's ports (everything but `observe`, which the metrics own). */
export function promptPorts(o: PromptPortsOptions): Omit<PromptApiDeps, 'observe'> {
  const doFetch = o.fetch ?? ((input, init) => fetch(input, init));
  const access = o.access ?? createAccessReviews(o);
  /** The prompt server of a run (by Agent uid), kept while it answers; dropped when a forward fails. */
  const endpoints = new Map<string, string>();
  /** The session id last reported per run (by Agent uid). */
  const reported = new Map<string, string>();

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
      const reported = Number(a.metadata.annotations?.[ANNOTATION_SESSION_TURNS] ?? Number.NaN);
      const turns = Math.max(
        Number.isInteger(reported) && reported >= 0 ? reported : 0,
        a.status?.session?.turns ?? 0,
      );
      return {
        namespace,
        name: a.metadata.name,
        uid: a.metadata.uid,
        phase: a.status?.phase,
        jobName: a.status?.jobName,
        sessionId: a.status?.sessionId,
        startedAt: a.status?.startedAt,
        turns,
      };
    },
    async endpoint(target) {
      // status.jobName is written by whoever may patch the status: only a valid name reaches a label selector.
      const job = target.jobName ?? '';
      if (job.length > 63 || !DNS1123_SUBDOMAIN.test(job))
        return { kind: 'notRealtime' } satisfies PodEndpoint;
      // A wake or a restore starts a new pod (a new startedAt): its address is looked up afresh.
      const cacheKey = `${target.uid}/${target.startedAt ?? ''}`;
      const known = endpoints.get(cacheKey);
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
      endpoints.set(cacheKey, url);
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
        // The pod moved or ended: look it up again next time.
        for (const key of endpoints.keys()) if (key.startsWith(`${uid}/`)) endpoints.delete(key);
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
      // Once per run and id: every line of a turn may carry it.
      if (reported.get(target.uid) === sessionId) return;
      if (reported.size > 10_000) reported.clear();
      reported.set(target.uid, sessionId);
      void reportSession(o, target, sessionId).then((ok) => {
        if (!ok && reported.get(target.uid) === sessionId) reported.delete(target.uid);
      });
    },
    ...(o.sessions !== undefined
      ? { sessions: sessionPorts(o, o.sessions, doFetch), wakeWaitMs: o.wakeWaitMs }
      : {}),
  };
}

/**
 * Reports a session id a turn revealed as the Agent's `agents.re-cinq.com/session-id` annotation (a merge patch of
 * that one annotation, with the Agent's uid: another Agent of the same name is not touched). Nothing else: decide
 * records it in `status.sessionId` and announces it (src/reconcile/realtime/session.ts). Never rejects.
 */
async function reportSession(
  o: PromptPortsOptions,
  target: PromptTarget,
  sessionId: string,
): Promise<boolean> {
  const ref = { namespace: target.namespace, name: target.name };
  const patched = await mergePatch(
    o.transport,
    AGENTS,
    ref,
    { metadata: { uid: target.uid, annotations: { [ANNOTATION_SESSION_ID]: sessionId } } },
    v.unknown(),
    { fieldManager: 'agent-controller' },
  ).catch((error: unknown) => err<KubeError>({ kind: 'network', message: String(error) }));
  if (patched.ok) return true;
  o.logger.warn('Reporting the session id failed', {
    agent: `${ref.namespace}/${ref.name}`,
    error: describeKubeError(patched.error),
  });
  return false;
}
