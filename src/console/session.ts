// Console sessions: who is signed in, kept in this replica's memory only (a restart signs everyone out). A session
// starts from a bearer token the API server vouched for (TokenReview) or from the one-time login link a local run
// prints; the browser holds only a random session id in an HttpOnly cookie, never the token. Each session has its
// own CSRF token, which every state-changing request must echo.

import { createHash, randomBytes } from 'node:crypto';
import type { CallerIdentity } from '../server/prompt.ts';
import { constantTimeEqual } from '../shared/constant-time.ts';

/** How long a session lasts without use, and at most. */
export const SESSION_IDLE_MS = 8 * 60 * 60 * 1000;
export const SESSION_MAX_MS = 24 * 60 * 60 * 1000;
/** How long the one-time login link of a local run stays valid. */
export const LOGIN_CODE_MS = 24 * 60 * 60 * 1000;
/** Sessions kept at most (the oldest go first). */
export const MAX_SESSIONS = 1000;

export interface Session {
  readonly identity: CallerIdentity;
  /** Echoed by every form and fetch that changes something. */
  readonly csrf: string;
  readonly createdAt: number;
  /** When it ends whatever the use: SESSION_MAX_MS after its start, or sooner when the token it came from expires. */
  readonly expiresAt: number;
  lastUsedAt: number;
}

/** A random token of 32 bytes, URL-safe. */
export function randomToken(random: (n: number) => Uint8Array = randomBytes): string {
  return Buffer.from(random(32)).toString('base64url');
}

const hash = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Sessions by the hash of their id (a lookup by the id itself would let its timing tell a prefix). */
export class SessionStore {
  readonly #sessions = new Map<string, Session>();
  readonly #now: () => number;
  readonly #random: (n: number) => Uint8Array;
  #loginCode:
    | { readonly hash: string; readonly expiresAt: number; readonly identity: CallerIdentity }
    | undefined;

  constructor(now: () => number, random: (n: number) => Uint8Array = randomBytes) {
    this.#now = now;
    this.#random = random;
  }

  /**
   * Starts a session; returns its id (the cookie value) and the session. `until` (epoch ms) ends it sooner than
   * SESSION_MAX_MS: the expiry of the token it was started with, so a short-lived token gives a short session.
   */
  create(identity: CallerIdentity, until?: number): { readonly id: string; readonly session: Session } {
    this.#expire();
    if (this.#sessions.size >= MAX_SESSIONS) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest !== undefined) this.#sessions.delete(oldest);
    }
    const id = randomToken(this.#random);
    const now = this.#now();
    const expiresAt = Math.min(now + SESSION_MAX_MS, until ?? Number.POSITIVE_INFINITY);
    const session: Session = {
      identity,
      csrf: randomToken(this.#random),
      createdAt: now,
      expiresAt,
      lastUsedAt: now,
    };
    this.#sessions.set(hash(id), session);
    return { id, session };
  }

  /** The live session of a cookie value, refreshed; undefined when unknown or expired. */
  get(id: string | undefined): Session | undefined {
    if (id === undefined || id === '') return undefined;
    const key = hash(id);
    const session = this.#sessions.get(key);
    if (session === undefined) return undefined;
    const now = this.#now();
    if (expired(session, now)) {
      this.#sessions.delete(key);
      return undefined;
    }
    session.lastUsedAt = now;
    return session;
  }

  /** Ends a session (sign-out). */
  delete(id: string | undefined): void {
    if (id !== undefined) this.#sessions.delete(hash(id));
  }

  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Issues the one-time login code of a local run: whoever opens the link first is signed in as `identity` (the
   * kubeconfig's user). A new code replaces the old one.
   */
  issueLoginCode(identity: CallerIdentity): string {
    const code = randomToken(this.#random);
    this.#loginCode = { hash: hash(code), expiresAt: this.#now() + LOGIN_CODE_MS, identity };
    return code;
  }

  /** Redeems the one-time code: its identity once, then never again. */
  redeemLoginCode(code: string): CallerIdentity | undefined {
    const issued = this.#loginCode;
    if (issued === undefined || code === '') return undefined;
    if (!constantTimeEqual(issued.hash, hash(code))) return undefined;
    this.#loginCode = undefined;
    return this.#now() <= issued.expiresAt ? issued.identity : undefined;
  }

  #expire(): void {
    const now = this.#now();
    for (const [key, s] of this.#sessions) if (expired(s, now)) this.#sessions.delete(key);
  }
}

function expired(s: Session, now: number): boolean {
  return now - s.lastUsedAt > SESSION_IDLE_MS || now - s.createdAt > SESSION_MAX_MS || now > s.expiresAt;
}

/**
 * When a bearer token expires (epoch ms): the `exp` claim of a JWT (ServiceAccount and OIDC tokens), read without
 * checking the signature, which the API server has just done (TokenReview). Undefined for other tokens.
 */
export function tokenExpiry(token: string): number | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[1] === undefined) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    const exp = typeof claims === 'object' && claims !== null ? (claims as { exp?: unknown }).exp : undefined;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the CSRF token a request carries is its session's (constant time). */
export function csrfMatches(session: Session, presented: string | undefined): boolean {
  return presented !== undefined && presented !== '' && constantTimeEqual(session.csrf, presented);
}

/** Token sign-ins that may fail (or be under review) per window, for this replica. */
export const SIGN_IN_FAILURES_PER_WINDOW = 30;
export const SIGN_IN_WINDOW_MS = 60 * 1000;

/**
 * Bounds token sign-ins that fail: each attempt costs a TokenReview on the API server, so guessing or flooding is
 * refused (429) once SIGN_IN_FAILURES_PER_WINDOW tokens were refused, or are still being reviewed, within the
 * window (a review that could not be made, the API server being away, does not count). One budget per replica:
 * the console sees no client address it could trust behind a port-forward or proxy. Signed-in people and one-time
 * links are not affected. `now` is monotonic milliseconds.
 */
export class SignInLimiter {
  readonly #now: () => number;
  readonly #limit: number;
  readonly #windowMs: number;
  #failures: number[] = [];
  #inReview = 0;

  constructor(now: () => number, limit = SIGN_IN_FAILURES_PER_WINDOW, windowMs = SIGN_IN_WINDOW_MS) {
    this.#now = now;
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** Starts an attempt: undefined when allowed, else the seconds to wait (for Retry-After). */
  begin(): number | undefined {
    const now = this.#now();
    this.#failures = this.#failures.filter((t) => now - t < this.#windowMs);
    if (this.#failures.length + this.#inReview < this.#limit) {
      this.#inReview += 1;
      return undefined;
    }
    const oldest = this.#failures[0];
    const waitMs = oldest === undefined ? 1000 : oldest + this.#windowMs - now;
    return Math.max(1, Math.ceil(waitMs / 1000));
  }

  /** Ends an attempt begun with `begin()`; one whose token was refused counts for the window. */
  end(refused: boolean): void {
    this.#inReview = Math.max(0, this.#inReview - 1);
    if (refused) this.#failures.push(this.#now());
  }
}
