// The web console (issue 11 §2): a few server-rendered pages on their own port (`--console`), built from injected
// ports so it is tested with `app.request()`.
//
//   GET  /login[?code=…]      sign in: paste a bearer token (TokenReview), or redeem a local run's one-time link
//   POST /login, POST /logout
//   GET  /agents?namespace=&station=&phase=[&fragment=1]      Agents by Station and phase
//   GET  /agents/:ns/:name[?fragment=status]                  one Agent
//   GET  /agents/:ns/:name/stream                             its output as server-sent events
//   POST /agents/:ns/:name/prompt                             a prompt to a realtime run (answer as text)
//   POST /agents/:ns/:name/rerun                              run it again (a new Agent, same spec)
//   GET  /stations/:ns/:name/run, POST …                      start a run
//
// Every action is authorised for the signed-in person with a SubjectAccessReview, so kube RBAC decides; the
// controller's own credentials only carry out what was allowed. Sessions live in this replica's memory; the browser
// holds a random id (HttpOnly, SameSite=Lax), every POST carries the session's CSRF token, and cross-site requests
// are refused by their Origin. Pages are escaped throughout and sent with a strict Content-Security-Policy.

import { Hono } from 'hono';
import type { ConsolePorts } from './contract.ts';
import { type ConsoleEnv, consoleKit } from './kit.ts';
import { agentRoutes } from './routes/agents.ts';
import { publicGuards, sessionGuard } from './routes/guards.ts';
import { signInRoutes, signOutRoutes } from './routes/sign-in.ts';
import { stationRoutes } from './routes/stations.ts';

/** Builds the console app: the routes in the order their guards need (./routes). */
export function createConsoleApp(ports: ConsolePorts): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  const kit = consoleKit(ports);
  publicGuards(app);
  signInRoutes(app, kit);
  sessionGuard(app, kit);
  signOutRoutes(app, kit);
  agentRoutes(app, kit);
  stationRoutes(app, kit);
  app.notFound((c) => c.text('not found', 404));
  app.onError((error, c) => c.text(`console error: ${error.message}`, 500));
  return app;
}

/** The origin the console is reached at on this host (for the one-time link a local run prints). */
export function consoleOrigin(bindAddress: string, port: number, tls: boolean): string {
  const host = bindAddress === '0.0.0.0' || bindAddress === '::' ? '127.0.0.1' : bindAddress;
  return `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
