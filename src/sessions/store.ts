// The session store (issue 29, docs/design/sessions.md "The store"): each saved turn of a session is one object
// `<prefix>sessions/<namespace>/<agent uid>/turn-<NNNNNN>.tar.gz` in an S3-compatible bucket, with the CLI's session
// id and the vendor as user metadata. Only the controller holds the store's credentials. The key functions are
// pure; `SessionStore` is the I/O over them that the controller calls.

import { err, ok, type Result } from '../shared/result.ts';
import { type Credentials, checkKey, S3Client, type S3Error } from '../store/s3/index.ts';

/** The controller's session store settings (AGENT_SESSION_STORE_*, src/config/controller-config.ts). */
export interface SessionStoreConfig {
  /** Endpoint URL, path-style addressing. */
  readonly endpoint: string;
  readonly bucket: string;
  readonly region: string;
  /** Key prefix: empty, or ending in `/`. */
  readonly prefix: string;
  readonly credentials: Credentials;
}

/** Whose session: the Agent's namespace and uid (a new Agent of the same name never sees an old one's state). */
export interface SessionRef {
  readonly namespace: string;
  readonly uid: string;
}

/** A saved turn's user metadata. */
export interface TurnMetadata {
  /** The CLI's own session id (Claude Code's session UUID, Codex's thread id, …). */
  readonly sessionId: string;
  readonly vendor: string;
}

export interface TurnInfo {
  readonly turn: number;
  readonly key: string;
  readonly size: number;
}

export interface LoadedTurn extends TurnMetadata {
  readonly turn: number;
  readonly archive: Uint8Array;
}

/** The last turn number a key can hold (six digits). */
export const MAX_TURN = 999_999;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** Kubernetes uids are UUIDs; any lower-case letters, digits and dashes are accepted. */
const UID = /^[a-z0-9][-a-z0-9]{0,63}$/;
const TURN_FILE = /^turn-(\d{6})\.tar\.gz$/;
const META_SESSION_ID = 'session-id';
const META_VENDOR = 'vendor';

/**
 * A store failure: `invalid` (refused before any request: a bad reference, turn or metadata), `not-found` (no such
 * turn), or `s3` (the store's answer, with S3's code and status).
 */
export type SessionStoreError =
  | { readonly kind: 'invalid'; readonly message: string }
  | { readonly kind: 'not-found'; readonly message: string }
  | { readonly kind: 's3'; readonly message: string; readonly s3: S3Error };

const s3Error = (what: string, e: S3Error): SessionStoreError => ({
  kind: 's3',
  message: `${what}: ${e.code} (HTTP ${e.status}): ${e.message}`,
  s3: e,
});

function checkRef(ref: SessionRef): string | undefined {
  if (!NAMESPACE.test(ref.namespace)) return `invalid namespace ${JSON.stringify(ref.namespace)}`;
  if (!UID.test(ref.uid)) return `invalid Agent uid ${JSON.stringify(ref.uid)}`;
  return undefined;
}

function checkTurn(turn: number): string | undefined {
  return Number.isInteger(turn) && turn >= 1 && turn <= MAX_TURN
    ? undefined
    : `turn must be a whole number from 1 to ${MAX_TURN}, got ${turn}`;
}

/** `<prefix>sessions/<namespace>/<uid>/`: every object of one session, and nothing of another. */
export function sessionPrefix(prefix: string, ref: SessionRef): string {
  return `${prefix}sessions/${ref.namespace}/${ref.uid}/`;
}

/** `<prefix>sessions/<namespace>/<uid>/turn-<NNNNNN>.tar.gz`. */
export function turnKey(prefix: string, ref: SessionRef, turn: number): string {
  return `${sessionPrefix(prefix, ref)}turn-${String(turn).padStart(6, '0')}.tar.gz`;
}

/** The turn number of a key under `sessionPrefix`, or undefined for any other object. */
export function turnOfKey(sessionPrefixValue: string, key: string): number | undefined {
  if (!key.startsWith(sessionPrefixValue)) return undefined;
  const m = TURN_FILE.exec(key.slice(sessionPrefixValue.length));
  if (!m?.[1]) return undefined;
  const turn = Number(m[1]);
  return turn >= 1 ? turn : undefined;
}

/** Checks a configured key prefix: empty, or ending in `/`, and a valid key start. */
export function checkPrefix(prefix: string): string | undefined {
  if (prefix === '') return undefined;
  if (!prefix.endsWith('/'))
    return `the session store prefix must be empty or end with /, got ${JSON.stringify(prefix)}`;
  if (prefix.startsWith('/'))
    return `the session store prefix must not start with /, got ${JSON.stringify(prefix)}`;
  return checkKey(`${prefix}x`);
}

/** What the controller calls (an interface, so the reconcile side can be tested with its own double). */
export interface SessionStore {
  /** Writes turn `turn` of a session (overwrites a turn saved before under the same number). */
  saveTurn(
    ref: SessionRef,
    turn: number,
    archive: Uint8Array,
    metadata: TurnMetadata,
  ): Promise<Result<TurnInfo, SessionStoreError>>;
  /** Reads turn `which` (a number, or the highest saved); `not-found` when there is none. */
  loadTurn(ref: SessionRef, which: number | 'latest'): Promise<Result<LoadedTurn, SessionStoreError>>;
  /** The saved turns of a session, in turn order (objects not named like a turn are left out). */
  listTurns(ref: SessionRef): Promise<Result<TurnInfo[], SessionStoreError>>;
  /** Copies turn `turn` of `from` to the same turn number of `to` (a fork); the source is untouched. */
  copyTurn(from: SessionRef, turn: number, to: SessionRef): Promise<Result<TurnInfo, SessionStoreError>>;
  /**
   * Deletes every object under the session's prefix (not only turns); idempotent: nothing left is a success.
   * `deleted` counts the objects removed; on a failure part way, `message` names what was left.
   */
  deleteSession(ref: SessionRef): Promise<Result<{ deleted: number }, SessionStoreError>>;
}

export interface S3SessionStoreOptions {
  readonly client: S3Client;
  /** Key prefix (empty, or ending in `/`). */
  readonly prefix: string;
  /** Keys per ListObjectsV2 page (default 1000, S3's maximum). */
  readonly pageSize?: number;
  /** Deletes in flight at once in deleteSession (default 8). */
  readonly deleteConcurrency?: number;
}

/** The session store over one bucket of an S3-compatible store. */
export class S3SessionStore implements SessionStore {
  private readonly client: S3Client;
  private readonly prefix: string;
  private readonly pageSize: number | undefined;
  private readonly deleteConcurrency: number;

  constructor(options: S3SessionStoreOptions) {
    const bad = checkPrefix(options.prefix);
    if (bad) throw new Error(bad);
    this.client = options.client;
    this.prefix = options.prefix;
    this.pageSize = options.pageSize;
    this.deleteConcurrency = Math.max(1, options.deleteConcurrency ?? 8);
  }

  async saveTurn(
    ref: SessionRef,
    turn: number,
    archive: Uint8Array,
    metadata: TurnMetadata,
  ): Promise<Result<TurnInfo, SessionStoreError>> {
    const bad = checkRef(ref) ?? checkTurn(turn);
    if (bad) return err({ kind: 'invalid', message: bad });
    const key = turnKey(this.prefix, ref, turn);
    const put = await this.client.putObject(key, archive, {
      contentType: 'application/gzip',
      metadata: { [META_SESSION_ID]: metadata.sessionId, [META_VENDOR]: metadata.vendor },
    });
    if (!put.ok)
      return put.error.code === 'InvalidArgument'
        ? err({ kind: 'invalid', message: put.error.message })
        : err(s3Error(`saving ${key}`, put.error));
    return ok({ turn, key, size: archive.length });
  }

  async listTurns(ref: SessionRef): Promise<Result<TurnInfo[], SessionStoreError>> {
    const bad = checkRef(ref);
    if (bad) return err({ kind: 'invalid', message: bad });
    const prefix = sessionPrefix(this.prefix, ref);
    const listed = await this.client.listAll(prefix, this.pageSize);
    if (!listed.ok) return err(s3Error(`listing ${prefix}`, listed.error));
    const turns: TurnInfo[] = [];
    for (const o of listed.value) {
      const turn = turnOfKey(prefix, o.key);
      if (turn !== undefined) turns.push({ turn, key: o.key, size: o.size });
    }
    return ok(turns.sort((a, b) => a.turn - b.turn));
  }

  async loadTurn(ref: SessionRef, which: number | 'latest'): Promise<Result<LoadedTurn, SessionStoreError>> {
    const bad = checkRef(ref) ?? (which === 'latest' ? undefined : checkTurn(which));
    if (bad) return err({ kind: 'invalid', message: bad });
    let turn: number;
    if (which === 'latest') {
      const turns = await this.listTurns(ref);
      if (!turns.ok) return turns;
      const last = turns.value.at(-1);
      if (last === undefined)
        return err({ kind: 'not-found', message: `no saved turn under ${sessionPrefix(this.prefix, ref)}` });
      turn = last.turn;
    } else turn = which;
    const key = turnKey(this.prefix, ref, turn);
    const got = await this.client.getObject(key);
    if (!got.ok)
      return got.error.status === 404
        ? err({ kind: 'not-found', message: `no saved turn ${key}` })
        : err(s3Error(`loading ${key}`, got.error));
    return ok({
      turn,
      archive: got.value.body,
      sessionId: got.value.metadata[META_SESSION_ID] ?? '',
      vendor: got.value.metadata[META_VENDOR] ?? '',
    });
  }

  async copyTurn(
    from: SessionRef,
    turn: number,
    to: SessionRef,
  ): Promise<Result<TurnInfo, SessionStoreError>> {
    const bad = checkRef(from) ?? checkRef(to) ?? checkTurn(turn);
    if (bad) return err({ kind: 'invalid', message: bad });
    const source = turnKey(this.prefix, from, turn);
    const destination = turnKey(this.prefix, to, turn);
    const copied = await this.client.copyObject(source, destination);
    if (!copied.ok)
      return copied.error.status === 404
        ? err({ kind: 'not-found', message: `no saved turn ${source}` })
        : err(s3Error(`copying ${source} to ${destination}`, copied.error));
    const head = await this.client.headObject(destination);
    if (!head.ok) return err(s3Error(`reading ${destination} after the copy`, head.error));
    return ok({ turn, key: destination, size: head.value.size });
  }

  async deleteSession(ref: SessionRef): Promise<Result<{ deleted: number }, SessionStoreError>> {
    const bad = checkRef(ref);
    if (bad) return err({ kind: 'invalid', message: bad });
    const prefix = sessionPrefix(this.prefix, ref);
    let deleted = 0;
    // List and delete until a listing comes back empty (objects written meanwhile go too).
    for (;;) {
      const page = await this.client.listObjectsV2({
        prefix,
        ...(this.pageSize !== undefined ? { maxKeys: this.pageSize } : {}),
      });
      if (!page.ok) return err(s3Error(`listing ${prefix} (${deleted} objects deleted so far)`, page.error));
      const keys = page.value.objects.map((o) => o.key);
      if (keys.length === 0) return ok({ deleted });
      const failures: string[] = [];
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < keys.length) {
          const key = keys[next++] as string;
          const gone = await this.client.deleteObject(key);
          if (gone.ok || gone.error.status === 404) deleted++;
          else failures.push(`${key}: ${gone.error.code} (HTTP ${gone.error.status})`);
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.deleteConcurrency, keys.length) }, worker));
      if (failures.length > 0) {
        const first = failures[0] as string;
        return err({
          kind: 's3',
          message: `deleting ${prefix}: ${failures.length} objects left (${deleted} deleted), first ${first}`,
          s3: { status: 0, code: 'DeleteIncomplete', message: failures.join('; ') },
        });
      }
    }
  }
}

/** The store the controller's configuration names. */
export function sessionStoreFromConfig(config: SessionStoreConfig): SessionStore {
  const client = new S3Client({
    endpoint: config.endpoint,
    bucket: config.bucket,
    region: config.region,
    credentials: config.credentials,
  });
  return new S3SessionStore({ client, prefix: config.prefix });
}
