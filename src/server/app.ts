import { Hono } from 'hono';

/** A named readiness check; `ready` false makes /readyz answer 503 and name the failing check. */
export interface ReadinessCheck {
  readonly name: string;
  readonly ready: () => boolean;
  /** What a person should know about it even while ready (a warning); shown by `?verbose` and `/readyz/<name>`. */
  readonly detail?: () => string | undefined;
}

/** `ok` or `failed`, and the check's detail when it has one. */
function checkLine(check: ReadinessCheck): string {
  const detail = check.detail?.();
  return `${check.ready() ? 'ok' : 'failed'}${detail !== undefined ? `: ${detail}` : ''}`;
}

/** What the HTTP server needs from the rest of the controller: read-only ports, no controller state. */
export interface ServerDeps {
  readonly checks: readonly ReadinessCheck[];
  /** Prometheus exposition text and its content type. */
  readonly metrics: () => Promise<{ body: string; contentType: string }>;
}

/**
 * Builds the controller's HTTP app: `GET /healthz` (process alive), `GET /readyz` (every check passes; `?verbose`
 * lists them), `GET /readyz/<check>`, `GET /metrics`. Unknown paths answer 404 `not found`.
 */
export function createApp(deps: ServerDeps): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.text('ok'));
  app.get('/readyz', (c) => {
    const failing = deps.checks.filter((check) => !check.ready());
    const verbose = c.req.query('verbose') !== undefined;
    if (verbose) {
      const lines = deps.checks.map(
        (check) => `[${check.ready() ? '+' : '-'}]${check.name} ${checkLine(check)}`,
      );
      return c.text(
        `${lines.join('\n')}\nreadyz check ${failing.length === 0 ? 'passed' : 'failed'}\n`,
        failing.length === 0 ? 200 : 503,
      );
    }
    if (failing.length > 0) return c.text(`not ready: ${failing.map((f) => f.name).join(', ')}`, 503);
    return c.text('ok');
  });
  app.get('/readyz/:check', (c) => {
    const check = deps.checks.find((k) => k.name === c.req.param('check'));
    if (!check) return c.text('not found', 404);
    const detail = check.detail?.();
    if (check.ready()) return c.text(detail === undefined ? 'ok' : `ok: ${detail}`);
    return c.text(`not ready: ${check.name}${detail !== undefined ? `: ${detail}` : ''}`, 503);
  });
  app.get('/metrics', async (c) => {
    const { body, contentType } = await deps.metrics();
    return c.body(body, 200, { 'Content-Type': contentType });
  });
  app.notFound((c) => c.text('not found', 404));
  app.onError((error, c) => c.json({ error: error.message }, 500));
  return app;
}
