import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  csrfMatches,
  LOGIN_CODE_MS,
  MAX_SESSIONS,
  SESSION_IDLE_MS,
  SESSION_MAX_MS,
  SessionStore,
  SignInLimiter,
  tokenExpiry,
} from './session.ts';

const ALICE = { username: 'alice', groups: ['devs'] };

function store() {
  let now = 1_000_000;
  const s = new SessionStore(() => now);
  return { s, advance: (ms: number) => (now += ms) };
}

describe('console sessions', () => {
  it('a session is found by its id only, with random ids and CSRF tokens', () => {
    const { s } = store();
    const a = s.create(ALICE);
    const b = s.create(ALICE);
    assert.notEqual(a.id, b.id);
    assert.notEqual(a.session.csrf, b.session.csrf);
    assert.ok(a.id.length >= 43, 'at least 32 random bytes');
    assert.equal(s.get(a.id)?.identity.username, 'alice');
    assert.equal(s.get(`${a.id}x`), undefined);
    assert.equal(s.get(''), undefined);
    assert.equal(s.get(undefined), undefined);
  });

  it('ends after the idle time without use, and after the longest time whatever the use', () => {
    const { s, advance } = store();
    const idle = s.create(ALICE);
    advance(SESSION_IDLE_MS + 1);
    assert.equal(s.get(idle.id), undefined);
    const busy = s.create(ALICE);
    for (let t = 0; t < SESSION_MAX_MS; t += SESSION_IDLE_MS / 2) {
      assert.ok(s.get(busy.id), 'in use: kept');
      advance(SESSION_IDLE_MS / 2);
    }
    advance(1);
    assert.equal(s.get(busy.id), undefined, 'past the longest time');
  });

  it('sign-out ends the session', () => {
    const { s } = store();
    const a = s.create(ALICE);
    s.delete(a.id);
    assert.equal(s.get(a.id), undefined);
  });

  it('keeps at most MAX_SESSIONS, dropping the oldest', () => {
    const { s } = store();
    const first = s.create(ALICE);
    for (let i = 0; i < MAX_SESSIONS; i++) s.create(ALICE);
    assert.equal(s.size, MAX_SESSIONS);
    assert.equal(s.get(first.id), undefined);
  });

  it('the one-time login code works once, not after it expires, and a new code replaces the old', () => {
    const { s, advance } = store();
    const code = s.issueLoginCode(ALICE);
    assert.equal(s.redeemLoginCode('wrong'), undefined);
    assert.equal(s.redeemLoginCode(''), undefined);
    assert.deepEqual(s.redeemLoginCode(code), ALICE);
    assert.equal(s.redeemLoginCode(code), undefined, 'used');
    const old = s.issueLoginCode(ALICE);
    const fresh = s.issueLoginCode(ALICE);
    assert.equal(s.redeemLoginCode(old), undefined, 'replaced');
    assert.deepEqual(s.redeemLoginCode(fresh), ALICE);
    const late = s.issueLoginCode(ALICE);
    advance(LOGIN_CODE_MS + 1);
    assert.equal(s.redeemLoginCode(late), undefined, 'expired');
  });

  it('CSRF tokens must match exactly', () => {
    const { s } = store();
    const { session } = s.create(ALICE);
    assert.equal(csrfMatches(session, session.csrf), true);
    assert.equal(csrfMatches(session, `${session.csrf}x`), false);
    assert.equal(csrfMatches(session, ''), false);
    assert.equal(csrfMatches(session, undefined), false);
  });
});

describe('console sessions: token expiry', () => {
  it('a session started from an expiring token ends when the token does', () => {
    const { s, advance } = store();
    const short = s.create(ALICE, 1_000_000 + 60_000);
    const long = s.create(ALICE, 1_000_000 + 10 * SESSION_MAX_MS);
    assert.equal(long.session.expiresAt, 1_000_000 + SESSION_MAX_MS, 'never past the longest time');
    advance(60_000);
    assert.ok(s.get(short.id));
    advance(1);
    assert.equal(s.get(short.id), undefined);
    assert.ok(s.get(long.id));
  });

  it('reads the exp claim of a JWT, nothing from other tokens', () => {
    const jwt = (claims: unknown) =>
      `eyJhbGciOiJSUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;
    assert.equal(tokenExpiry(jwt({ exp: 1_900_000_000 })), 1_900_000_000_000);
    assert.equal(tokenExpiry(jwt({ sub: 'x' })), undefined);
    assert.equal(tokenExpiry(jwt({ exp: '1900000000' })), undefined);
    assert.equal(tokenExpiry(jwt(null)), undefined);
    assert.equal(tokenExpiry('a.%%%.c'), undefined);
    assert.equal(tokenExpiry('static-token'), undefined);
  });
});

describe('console sign-ins: the failure limit', () => {
  it('allows `limit` failures per window, counting attempts still under review, then says how long to wait', () => {
    let now = 0;
    const l = new SignInLimiter(() => now, 3, 60_000);
    assert.equal(l.begin(), undefined);
    assert.equal(l.begin(), undefined);
    assert.equal(l.begin(), undefined);
    assert.equal(l.begin(), 1, 'three under review: a fourth waits');
    l.end(false);
    assert.equal(l.begin(), undefined, 'a success frees its place');
    now = 10_000;
    l.end(true);
    l.end(true);
    l.end(true);
    assert.equal(l.begin(), 60, 'three failures at 10 s: wait until 70 s');
    now = 69_500;
    assert.equal(l.begin(), 1);
    now = 70_000;
    assert.equal(l.begin(), undefined, 'the failures left the window');
  });

  it('accepted tokens (and reviews that could not be made) never count; end() without begin() cannot go below zero', () => {
    let now = 0;
    const l = new SignInLimiter(() => now, 2, 1_000);
    for (let i = 0; i < 10; i += 1) {
      assert.equal(l.begin(), undefined);
      l.end(false);
      now += 1;
    }
    l.end(false);
    l.end(false);
    assert.equal(l.begin(), undefined);
    assert.equal(l.begin(), undefined);
    assert.equal(l.begin(), 1);
  });
});
