// The guards every console request passes: security headers on every answer, cross-site writes refused, the static
// assets, then (after sign-in's routes) a session for everything else and the CSRF token of every POST.

import type { Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { CONSOLE_CSS, CONSOLE_ICON, CONSOLE_JS } from '../assets.ts';
import {
  type ConsoleEnv,
  type ConsoleKit,
  isForm,
  readForm,
  SECURITY_HEADERS,
  SESSION_COOKIE,
  sameOrigin,
} from '../kit.ts';
import { csrfMatches } from '../session.ts';

/** Security headers, same-origin writes, and the static assets (no session needed). */
export function publicGuards(app: Hono<ConsoleEnv>): void {
  app.use('*', async (c, next) => {
    await next();
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) if (!c.res.headers.has(k)) c.res.headers.set(k, v);
  });

  // Cross-site requests that change something are refused outright (the CSRF token is checked as well).
  app.use('*', async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && !sameOrigin(c.req.raw))
      return c.text('cross-site request refused', 403);
    return next();
  });

  app.get('/static/console.css', (c) =>
    c.body(CONSOLE_CSS, 200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'max-age=300' }),
  );
  app.get('/static/console.js', (c) =>
    c.body(CONSOLE_JS, 200, {
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'max-age=300',
    }),
  );

  app.get('/favicon.ico', (c) =>
    c.body(CONSOLE_ICON, 200, { 'content-type': 'image/svg+xml', 'cache-control': 'max-age=86400' }),
  );
}

/** Everything registered after this needs a session; every POST its CSRF token. */
export function sessionGuard(app: Hono<ConsoleEnv>, kit: ConsoleKit): void {
  const { ports } = kit;
  app.use('*', async (c, next) => {
    const id = getCookie(c, SESSION_COOKIE);
    const session = ports.sessions.get(id);
    if (session === undefined || id === undefined) {
      const wantsPage = c.req.method === 'GET' && (c.req.header('accept') ?? '').includes('text/html');
      return wantsPage && c.req.query('fragment') === undefined
        ? c.redirect('/login', 303)
        : c.json({ message: 'sign in first' }, 401);
    }
    if (c.req.method === 'POST') {
      let presented = c.req.header('x-csrf-token');
      if (presented === undefined && isForm(c.req.raw)) {
        const form = await readForm(c.req.raw);
        if (form === undefined) return c.json({ message: 'the form is too large' }, 413);
        c.set('form', form);
        presented = form.get('_csrf') ?? undefined;
      }
      if (!csrfMatches(session, presented)) return c.json({ message: 'missing or wrong CSRF token' }, 403);
    }
    c.set('session', session);
    c.set('sessionId', id);
    return next();
  });
}
