// The narrow port the controller's session code uses to reach the session store (issue 29, docs/design/sessions.md):
// one turn's state written, the last one read, a session deleted. The S3 client and the session store
// (src/store/s3, src/sessions/store.ts) fill it in `./store-port.ts`; the tests use `memorySessionState`.

import { err, ok, type Result } from '../../shared/result.ts';

/** One saved turn of a session: the archive the run pod's `GET /session/state` gave, and what names it. */
export interface SavedTurn {
  readonly turn: number;
  readonly archive: Uint8Array;
  /** The CLI's session id (`x-agent-session-id`). */
  readonly sessionId: string;
  readonly vendor: string;
}

export interface SessionStatePort {
  /** Writes turn `turn` of the Agent's session. */
  saveTurn(
    namespace: string,
    agentUid: string,
    turn: number,
    archive: Uint8Array,
    meta: { readonly sessionId: string; readonly vendor: string },
  ): Promise<Result<void, string>>;
  /** The last saved turn of the Agent's session; undefined when it has none. */
  loadLatest(namespace: string, agentUid: string): Promise<Result<SavedTurn | undefined, string>>;
  /** Deletes every stored object of the Agent's session (none: done). */
  deleteSession(namespace: string, agentUid: string): Promise<Result<void, string>>;
}

/** A port over a map (unit tests; a controller without a store never builds one). */
export function memorySessionState(): SessionStatePort & {
  readonly turns: Map<string, SavedTurn[]>;
  failDeletes: number;
} {
  const turns = new Map<string, SavedTurn[]>();
  const port = {
    turns,
    failDeletes: 0,
    async saveTurn(
      namespace: string,
      agentUid: string,
      turn: number,
      archive: Uint8Array,
      meta: { readonly sessionId: string; readonly vendor: string },
    ): Promise<Result<void, string>> {
      const key = `${namespace}/${agentUid}`;
      const list = (turns.get(key) ?? []).filter((t) => t.turn !== turn);
      list.push({ turn, archive, ...meta });
      list.sort((a, b) => a.turn - b.turn);
      turns.set(key, list);
      return ok(undefined);
    },
    async loadLatest(namespace: string, agentUid: string): Promise<Result<SavedTurn | undefined, string>> {
      const list = turns.get(`${namespace}/${agentUid}`) ?? [];
      return ok(list[list.length - 1]);
    },
    async deleteSession(namespace: string, agentUid: string): Promise<Result<void, string>> {
      if (port.failDeletes > 0) {
        port.failDeletes--;
        return err('the store answered 503');
      }
      turns.delete(`${namespace}/${agentUid}`);
      return ok(undefined);
    },
  };
  return port;
}

/** The calls of the session store (src/sessions/store.ts `SessionStore`) the port is made of, structurally. */
export interface SessionStoreLike {
  saveTurn(
    ref: { readonly namespace: string; readonly uid: string },
    turn: number,
    archive: Uint8Array,
    metadata: { readonly sessionId: string; readonly vendor: string },
  ): Promise<Result<unknown, { readonly kind: string; readonly message: string }>>;
  loadTurn(
    ref: { readonly namespace: string; readonly uid: string },
    which: 'latest',
  ): Promise<
    Result<
      {
        readonly turn: number;
        readonly archive: Uint8Array;
        readonly sessionId: string;
        readonly vendor: string;
      },
      { readonly kind: string; readonly message: string }
    >
  >;
  deleteSession(ref: {
    readonly namespace: string;
    readonly uid: string;
  }): Promise<Result<unknown, { readonly kind: string; readonly message: string }>>;
}

/** The port over the session store: failures as one line; no saved turn (`not-found`) as undefined. */
export function sessionStatePort(store: SessionStoreLike): SessionStatePort {
  return {
    async saveTurn(namespace, uid, turn, archive, meta) {
      const r = await store.saveTurn({ namespace, uid }, turn, archive, meta);
      return r.ok ? ok(undefined) : err(r.error.message);
    },
    async loadLatest(namespace, uid) {
      const r = await store.loadTurn({ namespace, uid }, 'latest');
      if (r.ok) {
        const { turn, archive, sessionId, vendor } = r.value;
        return ok({ turn, archive, sessionId, vendor });
      }
      return r.error.kind === 'not-found' ? ok(undefined) : err(r.error.message);
    },
    async deleteSession(namespace, uid) {
      const r = await store.deleteSession({ namespace, uid });
      return r.ok ? ok(undefined) : err(r.error.message);
    },
  };
}
