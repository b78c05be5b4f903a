// The realtime prompt API as e2e tests call it: the RBAC a realtime controller and its callers need, a replica with
// REALTIME_ENABLED, the API's URL from its log, prompt/close calls (NDJSON answers parsed), and the bundle's CLI.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  applyRbacManifests,
  bundleArgv,
  type ControllerProcess,
  type E2eRuntime,
  GROUP_VERSION,
  type Manifest,
  type Scenario,
} from './controller.ts';
import { pollUntil } from './poll.ts';

/** The controller's RBAC plus the realtime component's, and the caller role (agent-launcher). */
export async function applyRealtimeRbac(s: Scenario): Promise<void> {
  await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
  await applyRbacManifests(s, 'deploy/components/realtime/realtime-rbac.yaml');
  await applyRbacManifests(s, 'deploy/rbac/caller-rbac.yaml');
}

/**
 * Binds the realtime component's Role agent-prompt-forwarder (deploy/components/realtime/realtime-cli-rbac.yaml,
 * already applied) to the ServiceAccount `name`: the CLI may then port-forward to the prompt API.
 */
export async function bindPromptForwarder(s: Scenario, name: string): Promise<void> {
  await s.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: `${name}-forwards` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'agent-prompt-forwarder' },
    subjects: [{ kind: 'ServiceAccount', name, namespace: s.ns }],
  });
}

/** A realtime AgentDefinition (Claude, prompt `hello {topic}`), `spec` merged over it. */
export function realtimeDefinition(name: string, spec: Readonly<Record<string, unknown>> = {}): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: { model: 'claude-opus-5-5', prompt: 'hello {topic}', execution: 'realtime', ...spec },
  };
}

/** A replica as the agent-controller ServiceAccount with REALTIME_ENABLED (unless told otherwise). */
export async function startRealtimeReplica(
  s: Scenario,
  opts: { enabled?: boolean; identity?: string; agentImage?: string } = {},
): Promise<ControllerProcess> {
  return s.startReplica({
    kubeconfig: await s.kubeconfigAs('agent-controller'),
    env: {
      ...(opts.enabled === false ? {} : { REALTIME_ENABLED: 'true', API_PORT: '0' }),
      ...(opts.agentImage !== undefined ? { AGENT_IMAGE: opts.agentImage } : {}),
    },
    ...(opts.identity !== undefined ? { identity: opts.identity } : {}),
  });
}

/** The prompt API base URL of a replica (from its log line). */
export async function apiUrl(ctl: ControllerProcess): Promise<string> {
  const line = await ctl.waitForLog('Serving the realtime prompt API');
  return `http://127.0.0.1:${String(line.port)}`;
}

export function agentPath(s: Scenario, name: string, action: 'prompt' | 'close'): string {
  return `/apis/${GROUP_VERSION}/namespaces/${s.ns}/agents/${name}/${action}`;
}

export async function call(
  base: string,
  path: string,
  token: string | undefined,
  body: unknown,
): Promise<{ status: number; text: string; lines: Record<string, unknown>[] }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  const lines = (res.headers.get('content-type') ?? '').includes('ndjson')
    ? text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];
  return { status: res.status, text, lines };
}

/** Prompts until the run pod listens (503 before), then returns the 200 answer. */
export async function promptWhenReady(base: string, path: string, token: string, prompt: string) {
  return pollUntil(
    async (observe) => {
      const r = await call(base, path, token, { prompt });
      observe(`${r.status} ${r.text.slice(0, 200)}`);
      if (r.status === 503 || r.status === 409) return undefined;
      return r;
    },
    { timeoutMs: 90_000, intervalMs: 500, description: 'the run pod to take a prompt' },
  );
}

/** A loopback conversation store: POST <path> keeps the body, GET <path> returns it (404 when unknown). */
export async function startConversationStore(): Promise<{
  url: string;
  saved: Map<string, Buffer>;
  fetched: string[];
  close(): Promise<void>;
}> {
  const saved = new Map<string, Buffer>();
  const fetched: string[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').replace(/^\/store/, '');
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        saved.set(path, Buffer.concat(chunks));
        res.writeHead(201).end();
      });
      return;
    }
    fetched.push(path);
    const body = saved.get(path);
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'application/gzip' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/store`,
    saved,
    fetched,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Runs the bundle's CLI (e.g. `prompt`, `close`) on `runtime`; exit code and both streams. */
export function runCli(
  runtime: E2eRuntime,
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [cmd, ...pre] = bundleArgv(runtime);
  const child = spawn(cmd ?? process.execPath, [...pre, ...args], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      NO_COLOR: '1',
      DENO_NO_UPDATE_CHECK: '1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
