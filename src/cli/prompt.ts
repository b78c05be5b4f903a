// `agent-controller prompt` and `agent-controller close`: talk to a realtime run through the controller's prompt API
// with the kubeconfig's own credentials (its bearer token: a token, an exec plugin or OIDC).

import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createInterface } from 'node:readline';
import * as v from 'valibot';
import { GROUP, VERSION } from '../api/index.ts';
import { describeKubeError, resolveClusterConfig } from '../kube/index.ts';
import { type Command, type CommandIo, parseFlags, UsageError } from './command.ts';
import { DEFAULT_CONTROLLER_NAMESPACE, findPromptApi } from './prompt-endpoint.ts';

/** Where the prompt API is when nothing says otherwise: `npm start`'s local controller. */
export const DEFAULT_ENDPOINT = 'http://127.0.0.1:8443';

/** Exit codes of `prompt` and `close`. */
export const EXIT = {
  ok: 0,
  turnFailed: 1,
  usage: 2,
  refused: 3,
  notFound: 4,
  conflict: 5,
  unavailable: 6,
} as const;

const StatusBody = v.looseObject({ message: v.optional(v.string()), code: v.optional(v.number()) });

const COMMON_FLAGS = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  endpoint: { type: 'string' },
  'controller-namespace': { type: 'string' },
  'certificate-authority': { type: 'string' },
  'insecure-skip-tls-verify': { type: 'boolean' },
} as const;

const COMMON_USAGE = [
  '  --endpoint URL        the controller prompt API (default: $AGENT_API_ENDPOINT, else a port-forward to a ready',
  '                        pod of the Service agent-controller-api in the controller namespace, else, when there',
  '                        is no such Service, http://127.0.0.1:8443, where `npm start` serves it)',
  '  --controller-namespace NS  where the controller runs (default: $AGENT_CONTROLLER_NAMESPACE, else ai-agents)',
  '  -n, --namespace NS    the Agent namespace (default: the kubeconfig context namespace, else default)',
  '  --kubeconfig PATH     kubeconfig whose credentials are sent (default: $KUBECONFIG)',
  '  --context NAME        kubeconfig context',
  '  --certificate-authority FILE  CA of the prompt API certificate (https endpoints; default: the system CAs);',
  '                        through a port-forward it must be issued for agent-controller-api.<namespace>.svc',
  '  --insecure-skip-tls-verify    do not verify the prompt API certificate',
  '',
  'Credentials: the kubeconfig bearer token (token, exec plugin, OIDC), else $AGENT_API_TOKEN, else, over https,',
  "the kubeconfig's client certificate.",
  '',
  'Exit codes: 0 ok; 1 the turn failed; 2 usage; 3 not authenticated or not allowed (401/403);',
  '4 no such Agent (404); 5 not a Running realtime run, or a prompt in flight (409); 6 the run pod is not',
  'listening yet or the API is unreachable (503).',
];

interface Target {
  readonly url: string;
  readonly headers: Record<string, string>;
  /** TLS settings of an https endpoint: its CA, verification, and a client certificate when that is the credential. */
  readonly tls: {
    readonly ca?: Buffer;
    readonly cert?: Buffer;
    readonly key?: Buffer;
    readonly servername?: string;
    readonly rejectUnauthorized: boolean;
  };
}

/** The prompt API as this invocation reaches it: base URL, credentials, the Agents' namespace. */
interface Api {
  readonly base: string;
  readonly headers: Record<string, string>;
  readonly tls: Target['tls'];
  readonly namespace: string;
  /** Ends the port-forward, when there is one. */
  close(): void;
}

const str = (x: unknown) => (typeof x === 'string' && x !== '' ? x : undefined);

/**
 * Resolves the endpoint, namespace and credentials; one clear error line when they cannot be had. The endpoint is
 * --endpoint, else $AGENT_API_ENDPOINT, else the controller's Service in the cluster through a port-forward, else
 * (no such Service) the local default.
 */
async function openApi(io: CommandIo, values: Record<string, unknown>): Promise<Api> {
  const given = str(values.endpoint) ?? str(io.env.AGENT_API_ENDPOINT);
  if (given !== undefined && !/^https?:\/\//.test(given))
    throw new UsageError(`--endpoint must be an http(s) URL, got ${given}`);
  const cluster = await resolveClusterConfig({
    kubeconfig: str(values.kubeconfig),
    context: str(values.context),
    env: io.env,
  });
  if (!cluster.ok) throw new UsageError(`cannot read the kubeconfig: ${describeKubeError(cluster.error)}`);
  const creds = await cluster.value.credentials({ refresh: false });
  if (!creds.ok) throw new UsageError(`cannot get credentials: ${describeKubeError(creds.error)}`);
  const caFile = str(values['certificate-authority']);
  let ca: Buffer | undefined;
  try {
    ca = caFile === undefined ? undefined : readFileSync(caFile);
  } catch (error) {
    throw new UsageError(
      `cannot read --certificate-authority: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  let base = given;
  let servername: string | undefined;
  let close = () => {};
  if (base === undefined) {
    const controllerNs =
      str(values['controller-namespace']) ??
      str(io.env.AGENT_CONTROLLER_NAMESPACE) ??
      DEFAULT_CONTROLLER_NAMESPACE;
    const found = await findPromptApi(cluster.value, controllerNs);
    if (!found.ok) throw new ApiUnreachable(`${found.error}; or pass --endpoint`);
    if (found.value.kind === 'local') base = DEFAULT_ENDPOINT;
    else {
      base = found.value.endpoint;
      servername = found.value.servername;
      close = found.value.close;
    }
  }
  base = base.replace(/\/+$/, '');
  const authorization = creds.value.headers.authorization ?? creds.value.headers.Authorization;
  const token = io.env.AGENT_API_TOKEN;
  const headers: Record<string, string> = {};
  const https = base.startsWith('https://');
  const { cert, key } = creds.value.tls;
  let clientCert: { cert: Buffer; key: Buffer } | undefined;
  if (authorization !== undefined) headers.authorization = authorization;
  else if (token !== undefined && token !== '') headers.authorization = `Bearer ${token}`;
  else if (https && cert !== undefined && key !== undefined)
    clientCert = { cert: Buffer.from(cert), key: Buffer.from(key) };
  else {
    close();
    throw new UsageError(
      https
        ? 'the kubeconfig has neither a bearer token nor a client certificate; set AGENT_API_TOKEN'
        : 'the kubeconfig has no bearer token (a client certificate needs an https endpoint); set AGENT_API_TOKEN, e.g. to `kubectl create token <service-account>`',
    );
  }
  const tls = {
    ...(ca !== undefined ? { ca } : {}),
    ...(clientCert ?? {}),
    ...(servername !== undefined ? { servername } : {}),
    rejectUnauthorized: values['insecure-skip-tls-verify'] !== true,
  };
  const namespace = str(values.namespace) ?? cluster.value.namespace ?? 'default';
  return { base, headers, tls, namespace, close };
}

/** The request for `action` on `agent`. */
function target(api: Api, agent: string, action: 'prompt' | 'close'): Target {
  const path = `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(api.namespace)}/agents/${encodeURIComponent(agent)}/${action}`;
  return { url: `${api.base}${path}`, headers: api.headers, tls: api.tls };
}

/** The prompt API cannot be found or reached (exit 6). */
class ApiUnreachable extends Error {}

/** Runs `body` with the API open, closing any port-forward after; an unreachable API is exit 6 with its reason. */
async function withApi(
  io: CommandIo,
  values: Record<string, unknown>,
  body: (api: Api) => Promise<number>,
): Promise<number> {
  let api: Api;
  try {
    api = await openApi(io, values);
  } catch (error) {
    if (!(error instanceof ApiUnreachable)) throw error;
    io.stderr(`error: cannot find the prompt API: ${error.message}\n`);
    return EXIT.unavailable;
  }
  try {
    return await body(api);
  } finally {
    api.close();
  }
}

/** An answer of the prompt API: its status and body (streamed). */
interface Answer {
  readonly status: number;
  readonly body: AsyncIterable<Uint8Array>;
  text(): Promise<string>;
}

/** POSTs JSON to the prompt API (node:http or node:https, so a client certificate can be sent); rejects when unreachable. */
function post(t: Target, body: string): Promise<Answer> {
  const url = new URL(t.url);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: 'POST',
        headers: {
          ...t.headers,
          'content-type': 'application/json',
          'content-length': String(new TextEncoder().encode(body).length),
        },
        ...(url.protocol === 'https:' ? t.tls : {}),
      },
      (res: IncomingMessage) =>
        resolve({
          status: res.statusCode ?? 0,
          body: res,
          text: async () => {
            let text = '';
            const decoder = new TextDecoder();
            for await (const chunk of res) text += decoder.decode(chunk as Uint8Array, { stream: true });
            return text;
          },
        }),
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Maps an API error answer to an exit code and prints its message. */
async function failure(io: CommandIo, res: Answer): Promise<number> {
  const text = await res.text();
  let message = text.trim();
  try {
    const parsed = v.safeParse(StatusBody, JSON.parse(text));
    if (parsed.success && parsed.output.message !== undefined) message = parsed.output.message;
  } catch {
    // not a Status
  }
  io.stderr(`error: ${message || `HTTP ${res.status}`}\n`);
  if (res.status === 401 || res.status === 403) return EXIT.refused;
  if (res.status === 404) return EXIT.notFound;
  if (res.status === 409) return EXIT.conflict;
  if (res.status === 503) return EXIT.unavailable;
  return EXIT.turnFailed;
}

/**
 * A readable line for one CLI event (Claude, Codex and Gemini stream-JSON), or undefined for lines that say nothing
 * to a person (init, usage). `failed` is set by an error result.
 */
export function readable(line: string): { text?: string; failed?: boolean } {
  let e: Record<string, unknown>;
  try {
    e = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { text: line };
  }
  const type = e.type;
  if (type === 'assistant') {
    const content = (e.message as { content?: unknown[] } | undefined)?.content ?? [];
    const parts = content.flatMap((c) => {
      const block = c as { type?: string; text?: string; name?: string };
      if (block.type === 'text' && typeof block.text === 'string') return [block.text];
      if (block.type === 'tool_use') return [`[tool] ${block.name ?? '?'}`];
      return [];
    });
    return parts.length > 0 ? { text: parts.join('\n') } : {};
  }
  if (type === 'item.completed') {
    const item = e.item as { type?: string; text?: string; command?: string } | undefined;
    if (item?.type === 'agent_message' && typeof item.text === 'string') return { text: item.text };
    if (item?.type === 'command_execution') return { text: `[tool] ${item.command ?? 'command'}` };
    return {};
  }
  if (type === 'message' && e.role === 'assistant' && typeof e.content === 'string')
    return { text: e.content };
  if (type === 'tool_use' && typeof e.tool_name === 'string') return { text: `[tool] ${e.tool_name}` };
  if (type === 'result') {
    const failed = e.is_error === true || (e.status !== undefined && e.status !== 'success');
    return failed
      ? {
          failed,
          text: `[error] ${String(e.result ?? (e.error as { message?: string })?.message ?? 'the turn failed')}`,
        }
      : {};
  }
  if (type === 'turn.failed' || type === 'error') {
    const msg = (e.error as { message?: string } | undefined)?.message ?? (e.message as string | undefined);
    return { failed: true, text: `[error] ${msg ?? 'the turn failed'}` };
  }
  return {};
}

/** Sends one prompt and streams the turn to stdout; resolves to the exit code. */
async function sendPrompt(io: CommandIo, t: Target, prompt: string, json: boolean): Promise<number> {
  let res: Answer;
  try {
    res = await post(t, JSON.stringify({ prompt }));
  } catch (error) {
    io.stderr(
      `error: cannot reach the prompt API: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return EXIT.unavailable;
  }
  if (res.status !== 200) return failure(io, res);
  let failed = false;
  let sawResult = false;
  const decoder = new TextDecoder();
  let partial = '';
  const handle = (line: string): void => {
    if (line === '') return;
    if (line.includes('"type":"result"') || line.includes('"turn.completed"')) sawResult = true;
    if (json) {
      io.stdout(`${line}\n`);
      const r = readable(line);
      if (r.failed) failed = true;
      return;
    }
    const r = readable(line);
    if (r.failed) failed = true;
    if (r.text !== undefined) (r.failed ? io.stderr : io.stdout)(`${r.text}\n`);
  };
  for await (const chunk of res.body) {
    const lines = (partial + decoder.decode(chunk, { stream: true })).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) handle(line);
  }
  handle(partial);
  if (!sawResult) {
    io.stderr('error: the turn ended without a result (the agent CLI stopped)\n');
    return EXIT.turnFailed;
  }
  return failed ? EXIT.turnFailed : EXIT.ok;
}

async function sendClose(io: CommandIo, t: Target): Promise<number> {
  let res: Answer;
  try {
    res = await post(t, '{}');
  } catch (error) {
    io.stderr(
      `error: cannot reach the prompt API: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return EXIT.unavailable;
  }
  if (res.status !== 200) return failure(io, res);
  await res.text();
  return EXIT.ok;
}

export const promptCommand: Command = {
  name: 'prompt',
  summary: 'send a prompt to a realtime run and stream its answer',
  usage: [
    'Usage: agent-controller prompt <agent> TEXT [flags]',
    '       agent-controller prompt <agent> --interactive [flags]',
    '',
    'Sends TEXT as one turn of the realtime run <agent> through the controller prompt API and streams the',
    'answer (assistant text, tool calls, errors) until the turn ends. --interactive reads one prompt per line',
    'from stdin until end of input (Ctrl-D), then closes the session.',
    '',
    'Examples:',
    '  agent-controller prompt live "summarise the open issues"',
    '  agent-controller prompt live --json "list the files" | jq .type',
    '  agent-controller prompt live --interactive',
    '',
    'Flags:',
    '  --interactive         a prompt per line of stdin; Ctrl-D closes the session',
    '  --json                print the raw event lines (NDJSON) instead of readable text',
    ...COMMON_USAGE,
  ].join('\n'),
  async run(io) {
    const { values, positionals, help } = parseFlags(
      io.argv,
      { ...COMMON_FLAGS, interactive: { type: 'boolean' }, json: { type: 'boolean' } },
      true,
    );
    if (help) {
      io.stdout(`${promptCommand.usage}\n`);
      return 0;
    }
    const [agent, ...words] = positionals;
    if (agent === undefined) throw new UsageError('missing the Agent name');
    const interactive = values.interactive === true;
    const text = words.join(' ');
    if (!interactive && text.trim() === '')
      throw new UsageError('missing the prompt text (or --interactive)');
    if (interactive && text !== '')
      throw new UsageError('--interactive reads prompts from stdin: give no text');
    const json = values.json === true;
    return withApi(io, values, async (api) => {
      const t = target(api, agent, 'prompt');
      if (!interactive) return sendPrompt(io, t, text, json);
      const lines = createInterface({ input: process.stdin, terminal: false });
      let last: number = EXIT.ok;
      for await (const line of lines) {
        if (line.trim() === '') continue;
        last = await sendPrompt(io, t, line, json);
        if (last === EXIT.refused || last === EXIT.notFound || last === EXIT.unavailable) return last;
      }
      const closed = await sendClose(io, target(api, agent, 'close'));
      return closed === EXIT.ok ? last : closed;
    });
  },
};

export const closeCommand: Command = {
  name: 'close',
  summary: 'end a realtime run gracefully (closing twice is harmless)',
  usage: [
    'Usage: agent-controller close <agent> [flags]',
    '',
    'Ends the session of the realtime run <agent>: the turn in flight finishes, the pod ends, the Agent goes',
    'terminal. A run that already ended answers 409 (exit 5).',
    '',
    'Examples:',
    '  agent-controller close live',
    '  agent-controller close live -n team',
    '  agent-controller close live --endpoint https://127.0.0.1:8443 --certificate-authority ca.crt',
    '',
    'Flags:',
    ...COMMON_USAGE,
  ].join('\n'),
  async run(io) {
    const { values, positionals, help } = parseFlags(io.argv, COMMON_FLAGS, true);
    if (help) {
      io.stdout(`${closeCommand.usage}\n`);
      return 0;
    }
    const [agent, ...extra] = positionals;
    if (agent === undefined) throw new UsageError('missing the Agent name');
    if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
    return withApi(io, values, async (api) => {
      const code = await sendClose(io, target(api, agent, 'close'));
      if (code === EXIT.ok) io.stdout(`closed ${agent}\n`);
      return code;
    });
  },
};
