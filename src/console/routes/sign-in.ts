// Signing in and out: a pasted bearer token (TokenReview, rate-limited) or a local run's one-time link; the session
// cookie, and the login form's own CSRF cookie.

import type { Context, Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { CallerIdentity } from '../../server/prompt.ts';
import type { ConsolePorts } from '../contract.ts';
import { type ConsoleEnv, type ConsoleKit, LOGIN_COOKIE, readForm, SESSION_COOKIE } from '../kit.ts';
import { loginPage } from '../pages.ts';
import { csrfMatches, randomToken, type Session, SignInLimiter, tokenExpiry } from '../session.ts';

/** `GET /login`, `POST /login`. */
export function signInRoutes(app: Hono<ConsoleEnv>, kit: ConsoleKit): void {
  const { ports, page, cookieOptions } = kit;
  const signIns = new SignInLimiter(() => performance.now());

  app.get('/login', (c) => {
    const code = c.req.query('code');
    if (code !== undefined) {
      const identity = ports.sessions.redeemLoginCode(code);
      if (identity === undefined) {
        const csrf = randomToken();
        setCookie(c, LOGIN_COOKIE, csrf, { ...cookieOptions, maxAge: 3600 });
        return page(c, loginPage('That sign-in link was used already or has expired.', csrf), 401);
      }
      return signIn(c, identity);
    }
    const csrf = randomToken();
    setCookie(c, LOGIN_COOKIE, csrf, { ...cookieOptions, maxAge: 3600 });
    return page(c, loginPage(undefined, csrf));
  });

  app.post('/login', async (c) => {
    const form = await readForm(c.req.raw);
    const expected = getCookie(c, LOGIN_COOKIE);
    const csrf = randomToken();
    setCookie(c, LOGIN_COOKIE, csrf, { ...cookieOptions, maxAge: 3600 });
    if (form === undefined) return page(c, loginPage('The request is too large.', csrf), 413);
    if (expected === undefined || !csrfMatches({ csrf: expected } as Session, form.get('_csrf') ?? undefined))
      return page(c, loginPage('The sign-in form expired; try again.', csrf), 403);
    const token = (form.get('token') ?? '').trim();
    if (token === '') return page(c, loginPage('Paste a token.', csrf), 400);
    const waitSeconds = signIns.begin();
    if (waitSeconds !== undefined) {
      c.header('retry-after', String(waitSeconds));
      return page(c, loginPage(`Too many failed sign-ins; try again in ${waitSeconds} s.`, csrf), 429);
    }
    let identity: Awaited<ReturnType<ConsolePorts['authenticateToken']>>;
    try {
      identity = await ports.authenticateToken(token);
    } finally {
      signIns.end(identity === undefined);
    }
    if (identity === undefined)
      return page(c, loginPage('The API server does not accept that token.', csrf), 401);
    if ('error' in identity)
      return page(c, loginPage(`The token could not be checked: ${identity.error}`, csrf), 500);
    deleteCookie(c, LOGIN_COOKIE, { path: '/' });
    // The session ends when the token does: signing in must not outlive a short-lived or expiring token.
    return signIn(c, identity, tokenExpiry(token));
  });

  function signIn(c: Context, identity: CallerIdentity, until?: number) {
    const { id } = ports.sessions.create(identity, until);
    setCookie(c, SESSION_COOKIE, id, cookieOptions);
    return c.redirect('/agents', 303);
  }
}

/** `GET /` and `POST /logout` (behind the session guard). */
export function signOutRoutes(app: Hono<ConsoleEnv>, kit: ConsoleKit): void {
  const { ports } = kit;
  app.get('/', (c) => c.redirect('/agents', 303));

  app.post('/logout', (c) => {
    ports.sessions.delete(c.get('sessionId'));
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.redirect('/login', 303);
  });
}
