// The narrow port the controller's session code uses to reach the session store (issue 29, docs/design/sessions.md):
// one turn's state written, the last one read, a session deleted. The S3 client and the session store
// (src/store/s3, src/sessions/store.ts) fill it in src/controller/session-store.ts; the tests use `memorySessionState`.

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
