// The prompt API's session ports against the real cluster (issue 29, docs/design/sessions.md): after each turn the
// state is fetched from the run pod (`GET /session/state`, the run's own token) and written to the session store,
// then reported on the Agent as annotations (decide records them in `status.session`); a Suspended session is asked
// to wake by an annotation; a pod started to restore gets the last saved turn (`PUT /session/state`). Run pods never
// reach the store: only the controller holds its credentials.

import * as v from 'valibot';
import {
  ANNOTATION_SESSION_IN_FLIGHT,
  ANNOTATION_SESSION_LAST_PROMPT,
  ANNOTATION_SESSION_SAVED_TURN,
  ANNOTATION_SESSION_TURNS,
  ANNOTATION_WAKE_REQUESTED,
} from '../../api/index.ts';
import { describeKubeError, type KubeError, mergePatch, type Transport } from '../../kube/index.ts';
import type { PromptTarget, SessionPorts } from '../../server/prompt.ts';
import type { Logger } from '../../shared/log.ts';
import { err } from '../../shared/result.ts';
import { AGENTS } from '../resources.ts';
import type { SessionStatePort } from '../sessions/port.ts';
import type { PromptTokens } from './tokens.ts';

export interface SessionPortsOptions {
  readonly transport: Transport;
  readonly tokens: () => PromptTokens | undefined;
  readonly logger: Logger;
  readonly now: () => number;
  /** Metrics: a turn's save (`ok`, `error`), a held prompt's wake. */
  readonly observeSave?: ((result: 'ok' | 'error') => void) | undefined;
  readonly observeWake?: ((seconds: number, result: 'ok' | 'timeout' | 'error') => void) | undefined;
}

/** Headers of the run pod's session state (docs/design/sessions.md, "The run pod"). */
export const HEADER_SESSION_ID = 'x-agent-session-id';
export const HEADER_TURNS = 'x-agent-turns';
export const HEADER_VENDOR = 'x-agent-vendor';

const TurnsHeader = v.pipe(v.string(), v.regex(/^\d{1,9}$/), v.transform(Number));

/** The session ports over `store`. */
export function sessionPorts(
  o: SessionPortsOptions,
  store: SessionStatePort,
  doFetch: typeof fetch,
): SessionPorts {
  const iso = () => new Date(o.now()).toISOString();
  const token = (uid: string): string | undefined => o.tokens()?.tokenFor(uid);
  const annotate = (target: PromptTarget, annotations: Record<string, string | null>) =>
    annotateAgent(o, target, annotations);

  return {
    async turnStarted(target) {
      await annotate(target, {
        [ANNOTATION_SESSION_IN_FLIGHT]: String((target.turns ?? 0) + 1),
        [ANNOTATION_SESSION_LAST_PROMPT]: iso(),
      });
    },
    async turnEnded(target, url) {
      const bearer = token(target.uid);
      if (bearer === undefined) return;
      const got = await doFetch(`${url}/session/state`, {
        headers: { authorization: `Bearer ${bearer}` },
      }).catch((error: unknown) => new Error(String(error)));
      if (got instanceof Error || got.status !== 200) {
        const why = got instanceof Error ? got.message : `the pod answered ${got.status}`;
        if (!(got instanceof Error)) await got.body?.cancel().catch(() => undefined);
        // 409: the next turn started already; that turn's save covers this one.
        if (!(got instanceof Error) && got.status === 409) return;
        o.observeSave?.('error');
        o.logger.warn('Fetching the session state failed', {
          agent: `${target.namespace}/${target.name}`,
          error: why,
        });
        await annotate(target, {
          [ANNOTATION_SESSION_TURNS]: String((target.turns ?? 0) + 1),
          [ANNOTATION_SESSION_LAST_PROMPT]: iso(),
          [ANNOTATION_SESSION_IN_FLIGHT]: null,
        });
        return;
      }
      const turns = v.safeParse(TurnsHeader, got.headers.get(HEADER_TURNS) ?? '');
      const turn = turns.success ? turns.output : (target.turns ?? 0) + 1;
      const archive = new Uint8Array(await got.arrayBuffer());
      const sessionId = got.headers.get(HEADER_SESSION_ID) ?? '';
      const vendor = got.headers.get(HEADER_VENDOR) ?? '';
      const saved = await store
        .saveTurn(target.namespace, target.uid, turn, archive, { sessionId, vendor })
        .catch((error: unknown) => err(String(error)));
      o.observeSave?.(saved.ok ? 'ok' : 'error');
      if (!saved.ok)
        o.logger.warn('Saving the session turn failed', {
          agent: `${target.namespace}/${target.name}`,
          turn,
          error: saved.error,
        });
      await annotate(target, {
        [ANNOTATION_SESSION_TURNS]: String(turn),
        ...(saved.ok ? { [ANNOTATION_SESSION_SAVED_TURN]: String(turn) } : {}),
        [ANNOTATION_SESSION_LAST_PROMPT]: iso(),
        [ANNOTATION_SESSION_IN_FLIGHT]: null,
      });
    },
    async turnLost(target) {
      await annotate(target, { [ANNOTATION_SESSION_IN_FLIGHT]: null });
    },
    async requestWake(target) {
      const ok = await annotate(target, { [ANNOTATION_WAKE_REQUESTED]: iso() });
      return ok ? true : { error: 'the wake could not be asked for (see the log)' };
    },
    async restore(target, url) {
      const bearer = token(target.uid);
      if (bearer === undefined) return { error: 'the realtime key is not loaded yet' };
      const latest = await store
        .loadLatest(target.namespace, target.uid)
        .catch((error: unknown) => err(String(error)));
      if (!latest.ok) return { error: `reading the saved session failed: ${latest.error}` };
      if (latest.value === undefined) return { error: 'the session has no saved turn' };
      const saved = latest.value;
      const put = await doFetch(`${url}/session/state`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${bearer}`,
          'content-type': 'application/gzip',
          [HEADER_SESSION_ID]: saved.sessionId,
          [HEADER_TURNS]: String(saved.turn),
        },
        body: saved.archive,
      }).catch(() => undefined);
      if (put === undefined) return 'notListening';
      const text = await put.text().catch(() => '');
      // 409: the pod has its state already (another replica's held prompt gave it), or is not waiting for one.
      if (put.status === 200 || put.status === 204 || put.status === 409) return true;
      return { error: `the pod answered ${put.status}${text !== '' ? `: ${text.slice(0, 200)}` : ''}` };
    },
    ...(o.observeWake !== undefined ? { observeWake: o.observeWake } : {}),
  };
}

/** A merge patch of the Agent's annotations (null removes one), with its uid; false (logged) when it failed. */
async function annotateAgent(
  o: SessionPortsOptions,
  target: PromptTarget,
  annotations: Record<string, string | null>,
): Promise<boolean> {
  const ref = { namespace: target.namespace, name: target.name };
  const patched = await mergePatch(
    o.transport,
    AGENTS,
    ref,
    { metadata: { uid: target.uid, annotations } },
    v.unknown(),
    { fieldManager: 'agent-controller' },
  ).catch((error: unknown) => err<KubeError>({ kind: 'network', message: String(error) }));
  if (patched.ok) return true;
  o.logger.warn('Reporting the session failed', {
    agent: `${ref.namespace}/${ref.name}`,
    error: describeKubeError(patched.error),
  });
  return false;
}
