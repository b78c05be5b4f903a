// What every route of the console shares: its limits and cookie names, the security headers, name and origin checks,
// form reading, and the per-request helpers (render a page, ask a SubjectAccessReview, say "not allowed").

import type { Context } from 'hono';
import { DNS1123_SUBDOMAIN } from '../api/index.ts';
import { painter } from '../cli/style.ts';
import { readLimited } from '../server/prompt.ts';
import type { AccessRequest, ConsolePorts } from './contract.ts';
import { messagePage, type Viewer } from './pages.ts';
import type { Session } from './session.ts';

export const SESSION_COOKIE = 'agent_console_session';
export const LOGIN_COOKIE = 'agent_console_login';
/** Largest form or prompt body the console reads. */
export const MAX_CONSOLE_BODY_BYTES = 1024 * 1024;
/** Output streams (each holds a pod watch or a log stream on the API server) one person may have open at once. */
export const MAX_STREAMS_PER_USER = 16;

/** Hono's per-request variables of the console: set by the session guard (./routes/guards.ts). */
export type ConsoleEnv = {
  Variables: { session: Session; sessionId: string; form: URLSearchParams | undefined };
};

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

export const GROUP = 'agents.re-cinq.com';
export const TERMINAL = new Set(['Succeeded', 'Failed']);
export const plain = painter(false);

/** A namespace or object name as Kubernetes allows (DNS-1123 subdomain); anything else is refused. */
export function validName(name: string): boolean {
  return name.length <= 253 && DNS1123_SUBDOMAIN.test(name);
}

/** The helpers every route uses, bound to the console's ports. */
export interface ConsoleKit {
  readonly ports: ConsolePorts;
  readonly viewer: (s: Session) => Viewer;
  readonly page: (c: Context, body: string, status?: number) => Response | Promise<Response>;
  readonly may: (s: Session, access: AccessRequest) => Promise<boolean | { readonly error: string }>;
  readonly denied: (c: Context, s: Session, what: string) => Response | Promise<Response>;
  readonly failed: (
    c: Context,
    s: Session | undefined,
    message: string,
    status?: number,
  ) => Response | Promise<Response>;
  readonly cookieOptions: {
    readonly httpOnly: true;
    readonly sameSite: 'Lax';
    readonly path: '/';
    readonly secure: boolean;
  };
}

export function consoleKit(ports: ConsolePorts): ConsoleKit {
  const viewer = (s: Session): Viewer => ({ username: s.identity.username, csrf: s.csrf });
  const page = (c: Context, body: string, status = 200) =>
    c.html(body, status as 200, { ...SECURITY_HEADERS });
  return {
    ports,
    viewer,
    page,
    may: async (s, access) => ports.authorize(s.identity, access),
    denied: (c, s, what) =>
      page(c, messagePage('Not allowed', `${s.identity.username} may not ${what}.`, viewer(s)), 403),
    failed: (c, s, message, status = 500) =>
      page(c, messagePage('Something went wrong', message, s === undefined ? undefined : viewer(s)), status),
    cookieOptions: { httpOnly: true, sameSite: 'Lax', path: '/', secure: ports.secure },
  };
}

/** Whether a request that changes something comes from the console's own pages (Origin, else Sec-Fetch-Site). */
export function sameOrigin(request: Request): boolean {
  const origin = request.headers.get('origin');
  if (origin !== null && origin !== 'null') {
    const host = request.headers.get('host') ?? new URL(request.url).host;
    try {
      return new URL(origin).host === host;
    } catch {
      return false;
    }
  }
  if (origin === 'null') return false;
  const site = request.headers.get('sec-fetch-site');
  return site === null || site === 'same-origin' || site === 'none';
}

export function isForm(request: Request): boolean {
  const type = request.headers.get('content-type') ?? '';
  return type.startsWith('application/x-www-form-urlencoded') || type.startsWith('multipart/form-data');
}

/** A urlencoded form, or undefined when larger than the limit. */
export async function readForm(request: Request): Promise<URLSearchParams | undefined> {
  const text = await readLimited(request, MAX_CONSOLE_BODY_BYTES);
  return text === undefined ? undefined : new URLSearchParams(text);
}
