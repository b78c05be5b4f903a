// Starting a run from the console: the run form of a Station (its definition's prompt template when the person may
// read it) and the Agent it creates.

import type { Context, Hono } from 'hono';
import type { Station } from '../../api/index.ts';
import { agentBody, PROMPT_PARAMETER } from '../../cli/run.ts';
import { type ConsoleEnv, type ConsoleKit, GROUP, isForm, readForm, validName } from '../kit.ts';
import { runFormPage } from '../pages.ts';
import type { Session } from '../session.ts';

/** `GET /stations/:namespace/:name/run`, `POST /stations/:namespace/:name/run`. */
export function stationRoutes(app: Hono<ConsoleEnv>, kit: ConsoleKit): void {
  const { ports, viewer, page, may, denied, failed } = kit;
  async function stationFor(c: Context, s: Session): Promise<Station | Response> {
    const namespace = c.req.param('namespace') ?? '';
    const name = c.req.param('name') ?? '';
    if (!validName(namespace) || !validName(name)) return failed(c, s, 'not a Station name', 404);
    const [read, create] = await Promise.all([
      may(s, { verb: 'get', group: GROUP, resource: 'stations', namespace, name }),
      may(s, { verb: 'create', group: GROUP, resource: 'agents', namespace }),
    ]);
    if (typeof read !== 'boolean') return failed(c, s, `checking access failed: ${read.error}`);
    if (typeof create !== 'boolean') return failed(c, s, `checking access failed: ${create.error}`);
    if (!read) return denied(c, s, `read Station ${namespace}/${name}`);
    if (!create) return denied(c, s, `create Agents in namespace ${namespace}`);
    const got = await ports.getStation(namespace, name);
    if (got.kind === 'missing') return failed(c, s, `Station ${namespace}/${name} does not exist`, 404);
    if (got.kind !== 'ok')
      return failed(
        c,
        s,
        `reading Station ${namespace}/${name} failed: ${got.kind === 'error' ? got.error.message : got.kind}`,
      );
    return got.value;
  }

  app.get('/stations/:namespace/:name/run', async (c) => {
    const s = c.get('session');
    const station = await stationFor(c, s);
    if (station instanceof Response) return station;
    const namespace = c.req.param('namespace');
    const promptTemplate = await templateFor(s, namespace, station);
    return page(
      c,
      runFormPage(
        {
          namespace,
          station,
          promptTemplate,
          values: { prompt: '', parameters: '', model: '', name: '' },
          error: undefined,
        },
        viewer(s),
      ),
    );
  });

  async function templateFor(s: Session, namespace: string, station: Station): Promise<string | undefined> {
    const name = station.spec.agentDefRef;
    const ok = await may(s, { verb: 'get', group: GROUP, resource: 'agentdefinitions', namespace, name });
    return ok === true ? ports.promptTemplate(namespace, name) : undefined;
  }

  app.post('/stations/:namespace/:name/run', async (c) => {
    const s = c.get('session');
    const station = await stationFor(c, s);
    if (station instanceof Response) return station;
    const namespace = c.req.param('namespace');
    // The CSRF check read the form unless the token came as the x-csrf-token header: then it is read here.
    let form: URLSearchParams | undefined = c.get('form');
    if (form === undefined) {
      if (!isForm(c.req.raw)) return c.json({ message: 'send the run form urlencoded' }, 415);
      form = await readForm(c.req.raw);
      if (form === undefined) return c.json({ message: 'the form is too large' }, 413);
    }
    const values = {
      prompt: form.get('prompt') ?? '',
      parameters: form.get('parameters') ?? '',
      model: (form.get('model') ?? '').trim(),
      name: (form.get('name') ?? '').trim(),
    };
    const again = async (error: string, status: number) =>
      page(
        c,
        runFormPage(
          { namespace, station, promptTemplate: await templateFor(s, namespace, station), values, error },
          viewer(s),
        ),
        status,
      );
    let body: Record<string, unknown>;
    try {
      const parameters = parseParameterLines(values.parameters);
      const prompt = values.prompt.trim() === '' ? undefined : values.prompt;
      if (prompt !== undefined && Object.hasOwn(parameters, PROMPT_PARAMETER))
        return again(`the prompt and the parameter ${PROMPT_PARAMETER} both set ${PROMPT_PARAMETER}`, 422);
      if (values.name !== '' && !validName(values.name))
        return again(
          `the name ${JSON.stringify(values.name)} is not valid: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`,
          422,
        );
      body = agentBody(
        {
          station: station.metadata.name,
          name: values.name === '' ? undefined : values.name,
          model: values.model === '' ? undefined : values.model,
          parameters,
          prompt: undefined,
          wait: false,
          follow: false,
          raw: false,
          timeoutMs: undefined,
        },
        prompt,
      );
    } catch (error) {
      return again(error instanceof Error ? error.message : String(error), 422);
    }
    const created = await ports.createAgent(namespace, body);
    if ('error' in created) return again(created.error, created.status);
    return c.redirect(`/agents/${namespace}/${created.agent.metadata.name}`, 303);
  });
}

/**
 * The parameters of the run form: one `key=value` per line, blanks around the key and value ignored, empty lines
 * skipped. Throws one clear line for a line without a key.
 */
export function parseParameterLines(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    const eq = line.indexOf('=');
    const key = eq < 0 ? '' : line.slice(0, eq).trim();
    if (key === '' || /\s/.test(key))
      throw new Error(
        `parameters, line ${i + 1}: write key=value (a key without blanks), got ${JSON.stringify(line)}`,
      );
    // An own property whatever the key (`out[key] =` would set the prototype for `__proto__`).
    Object.defineProperty(out, key, {
      value: line.slice(eq + 1).trim(),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  });
  return out;
}
