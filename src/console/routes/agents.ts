// The Agent pages: the list by Station and phase, one Agent (with its Job, pods and Events as far as the person may
// read them), its output as server-sent events, and a prompt to a realtime run.

import type { Context, Hono } from 'hono';
import type { Agent } from '../../api/index.ts';
import {
  finishRender,
  INITIAL_RENDER_STATE,
  type RenderState,
  renderLine,
  renderText,
} from '../../cli/event-lines.ts';
import { rerunBody } from '../../cli/rerun.ts';
import { readLimited } from '../../server/prompt.ts';
import type { AccessRequest } from '../contract.ts';
import {
  type ConsoleEnv,
  type ConsoleKit,
  GROUP,
  MAX_CONSOLE_BODY_BYTES,
  MAX_STREAMS_PER_USER,
  plain,
  SECURITY_HEADERS,
  TERMINAL,
  validName,
} from '../kit.ts';
import { agentDetailPage, agentListFragment, agentListPage, PHASES, statusFragment } from '../pages.ts';
import type { Session } from '../session.ts';

/**
 * `GET /agents`, `GET /agents/:namespace/:name[/stream]`, `POST /agents/:namespace/:name/prompt`,
 * `POST /agents/:namespace/:name/rerun`.
 */
export function agentRoutes(app: Hono<ConsoleEnv>, kit: ConsoleKit): void {
  const { ports, viewer, page, may, denied, failed } = kit;
  app.get('/agents', async (c) => {
    const s = c.get('session');
    const namespace = c.req.query('namespace') || ports.defaultNamespace;
    if (!validName(namespace)) return failed(c, s, `"${namespace}" is not a namespace name`, 400);
    const phaseQuery = c.req.query('phase') || undefined;
    const phase = PHASES.find((p) => p === phaseQuery);
    const station = c.req.query('station') || undefined;
    const allowed = await may(s, { verb: 'list', group: GROUP, resource: 'agents', namespace });
    if (typeof allowed !== 'boolean') return failed(c, s, `checking access failed: ${allowed.error}`);
    if (!allowed) return denied(c, s, `list Agents in namespace ${namespace}`);
    const [agents, stations] = await Promise.all([
      ports.listAgents(namespace),
      may(s, { verb: 'list', group: GROUP, resource: 'stations', namespace }).then((ok) =>
        ok === true ? ports.listStations(namespace) : [],
      ),
    ]);
    if ('error' in agents) return failed(c, s, `listing the Agents failed: ${agents.error}`);
    const view = {
      namespace,
      agents,
      stations: 'error' in stations ? [] : stations,
      station,
      phase,
      now: ports.now(),
    };
    if (c.req.query('fragment') !== undefined)
      return c.html(agentListFragment(view).text, 200, { ...SECURITY_HEADERS });
    return page(c, agentListPage(view, viewer(s)));
  });

  /** The Agent the route names, once the person may get it; otherwise the response to send. */
  async function agentFor(c: Context, s: Session): Promise<Agent | Response> {
    const namespace = c.req.param('namespace') ?? '';
    const name = c.req.param('name') ?? '';
    if (!validName(namespace) || !validName(name)) return failed(c, s, 'not an Agent name', 404);
    const allowed = await may(s, { verb: 'get', group: GROUP, resource: 'agents', namespace, name });
    if (typeof allowed !== 'boolean') return failed(c, s, `checking access failed: ${allowed.error}`);
    if (!allowed) return denied(c, s, `read Agent ${namespace}/${name}`);
    const got = await ports.getAgent(namespace, name);
    if (got.kind === 'missing') return failed(c, s, `Agent ${namespace}/${name} does not exist`, 404);
    if (got.kind !== 'ok')
      return failed(
        c,
        s,
        `reading Agent ${namespace}/${name} failed: ${got.kind === 'error' ? got.error.message : got.kind}`,
      );
    // status.jobName is written by whoever may patch the status: one that is not an object name ('.' would make the
    // Job's path the namespace's Job list; a selector would match other pods) is not used to read anything.
    const jobName = got.value.status.jobName;
    if (jobName !== undefined && !validName(jobName))
      return { ...got.value, status: { ...got.value.status, jobName: undefined } };
    return got.value;
  }

  app.get('/agents/:namespace/:name', async (c) => {
    const s = c.get('session');
    const agent = await agentFor(c, s);
    if (agent instanceof Response) return agent;
    const namespace = agent.metadata.namespace ?? '';
    if (c.req.query('fragment') === 'status')
      return c.html(statusFragment({ agent, now: ports.now() }).text, 200, {
        ...SECURITY_HEADERS,
        'x-agent-phase': agent.status.phase,
      });
    const check = (access: Omit<AccessRequest, 'namespace'>) =>
      may(s, { ...access, namespace }).then((ok) => ok === true);
    const [job, pods, events, canRerun] = await Promise.all([
      check({ verb: 'get', group: 'batch', resource: 'jobs' }),
      check({ verb: 'list', group: '', resource: 'pods' }),
      check({ verb: 'list', group: '', resource: 'events' }),
      check({ verb: 'create', group: GROUP, resource: 'agents' }),
    ]);
    const extras = await ports.agentExtras(agent, { job, pods, events });
    const realtime =
      agent.status.phase === 'Running' &&
      extras.pods?.kind === 'ok' &&
      extras.pods.value.some((p) => p.metadata.labels?.['agents.re-cinq.com/execution'] === 'realtime');
    return page(
      c,
      agentDetailPage(
        { agent, ...extras, realtime, traceUrl: ports.traceUrl, now: ports.now(), canRerun },
        viewer(s),
      ),
    );
  });

  outputStreamRoute(app, kit, agentFor);

  // Runs the Agent again: a new Agent built from it as `agent-controller rerun` builds one, created once the person
  // may read this Agent and create Agents in its namespace; the browser goes on to the new run.
  app.post('/agents/:namespace/:name/rerun', async (c) => {
    const s = c.get('session');
    const agent = await agentFor(c, s);
    if (agent instanceof Response) return agent;
    const namespace = agent.metadata.namespace;
    const create = await may(s, { verb: 'create', group: GROUP, resource: 'agents', namespace });
    if (typeof create !== 'boolean') return failed(c, s, `checking access failed: ${create.error}`);
    if (!create) return denied(c, s, `create Agents in namespace ${namespace}`);
    const created = await ports.createAgent(namespace, rerunBody(agent));
    if ('error' in created)
      return failed(c, s, `running ${agent.metadata.name} again failed: ${created.error}`, created.status);
    return c.redirect(`/agents/${namespace}/${created.agent.metadata.name}`, 303);
  });

  app.post('/agents/:namespace/:name/prompt', async (c) => {
    const s = c.get('session');
    const namespace = c.req.param('namespace');
    const name = c.req.param('name');
    if (!validName(namespace) || !validName(name)) return c.json({ message: 'not an Agent name' }, 404);
    // A form's body was read for its CSRF token; a prompt is JSON with the x-csrf-token header.
    if (c.get('form') !== undefined)
      return c.json({ message: 'send the prompt as JSON, with the x-csrf-token header' }, 415);
    const text = await readLimited(c.req.raw, MAX_CONSOLE_BODY_BYTES);
    if (text === undefined) return c.json({ message: 'the prompt is too large' }, 413);
    const upstream = await ports.prompt(s.identity, namespace, name, text, c.req.raw.signal);
    if (upstream.status !== 200 || upstream.body === null) return upstream;
    return new Response(upstream.body.pipeThrough(renderStream()), {
      headers: { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8' },
    });
  });
}

/** `GET /agents/:namespace/:name/stream`: the run's output as server-sent events, a few streams per person at most. */
function outputStreamRoute(
  app: Hono<ConsoleEnv>,
  kit: ConsoleKit,
  agentFor: (c: Context, s: Session) => Promise<Agent | Response>,
): void {
  const { ports, may } = kit;
  /** Output streams open, by user name (entries leave at zero). */
  const streamsOpen = new Map<string, number>();

  app.get('/agents/:namespace/:name/stream', async (c) => {
    const s = c.get('session');
    const agent = await agentFor(c, s);
    if (agent instanceof Response) return agent;
    const namespace = agent.metadata.namespace ?? '';
    const logs = await may(s, { verb: 'get', group: '', resource: 'pods', subresource: 'log', namespace });
    const user = s.identity.username;
    const open = streamsOpen.get(user) ?? 0;
    if (open >= MAX_STREAMS_PER_USER)
      return c.json({ message: `${user} has ${open} output streams open already; close some tabs` }, 429);
    streamsOpen.set(user, open + 1);
    const release = () => {
      const left = (streamsOpen.get(user) ?? 1) - 1;
      if (left > 0) streamsOpen.set(user, left);
      else streamsOpen.delete(user);
    };
    const encoder = new TextEncoder();
    const jobName = agent.status.jobName;
    const abort = new AbortController();
    c.req.raw.signal.addEventListener('abort', () => abort.abort(), { once: true });
    if (c.req.raw.signal.aborted) abort.abort();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        try {
          const send = (event: string | undefined, data: string) => {
            if (abort.signal.aborted) return;
            try {
              controller.enqueue(
                encoder.encode(`${event !== undefined ? `event: ${event}\n` : ''}data: ${data}\n\n`),
              );
            } catch {
              abort.abort();
            }
          };
          const text = (t: string) => {
            if (t !== '') send(undefined, JSON.stringify(t));
          };
          const recorded = () => {
            if (agent.status.output !== undefined) text(renderText(agent.status.output, plain));
          };
          if (logs !== true) {
            text(`(${s.identity.username} may not read the run's pod log; the recorded output follows)\n`);
            recorded();
          } else if (jobName === undefined) {
            if (TERMINAL.has(agent.status.phase)) recorded();
          } else {
            let state: RenderState = INITIAL_RENDER_STATE;
            const end = await ports.streamOutput({
              namespace,
              jobName,
              runOver: TERMINAL.has(agent.status.phase),
              signal: abort.signal,
              onLine: (line) => {
                const r = renderLine(line, state, plain);
                state = r.state;
                text(r.text);
              },
            });
            text(finishRender(state));
            if (end === 'gone') recorded();
            else if (typeof end === 'object') text(`(the live log cannot be read: ${end.error})\n`);
          }
          send('end', '""');
          try {
            controller.close();
          } catch {
            // the browser went away
          }
        } finally {
          release();
        }
      },
      cancel() {
        abort.abort();
      },
    });
    return new Response(body, {
      headers: {
        ...SECURITY_HEADERS,
        'content-type': 'text/event-stream; charset=utf-8',
        'x-accel-buffering': 'no',
      },
    });
  });
}

/** NDJSON event lines in, readable text out. */
function renderStream(): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let partial = '';
  let state: RenderState = INITIAL_RENDER_STATE;
  const emit = (line: string, controller: TransformStreamDefaultController<Uint8Array>) => {
    const r = renderLine(line, state, plain);
    state = r.state;
    if (r.text !== '') controller.enqueue(encoder.encode(r.text));
  };
  return new TransformStream({
    transform(chunk, controller) {
      const lines = (partial + decoder.decode(chunk, { stream: true })).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) emit(line, controller);
    },
    flush(controller) {
      if (partial !== '') emit(partial, controller);
      const tail = finishRender(state);
      if (tail !== '') controller.enqueue(encoder.encode(tail));
    },
  });
}
