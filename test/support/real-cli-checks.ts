// What the real-CLI e2e files check the same way whatever the CLI: the processes left on the test node, a tool
// sidecar serving MCP (test/support/mcp-tool-server.mjs) and what it was asked, a server Agent called with
// OpenAI's official `openai` SDK, and the scripted model's marker conversation (a shell call, then an answer) of
// each CLI.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import OpenAI from 'openai';
import * as v from 'valibot';
import { agentCondition, type Scenario } from './controller.ts';
import { apiPath } from './kube-client.ts';
import type { Conversation, Turn } from './model-api/index.ts';
import { pollUntil } from './poll.ts';
import { endpointOf } from './server.ts';
import { addTestImages } from './testbed.ts';

const MCP_SERVER = join(dirname(fileURLToPath(import.meta.url)), 'mcp-tool-server.mjs');

const PodSchema = v.looseObject({ metadata: v.looseObject({ name: v.string() }) });
const SecretSchema = v.looseObject({ data: v.record(v.string(), v.string()) });

/**
 * The Anthropic model's marker conversation: a Bash call that writes `marker` to marker.txt in the working folder
 * and prints the folder and the file, then an answer; each turn with its usage. `tokenUsage` is what the Agent's
 * status must add up to (Claude Code sums its turns), written out from the turns' numbers.
 */
export function claudeMarkerScript(marker: string): {
  turns: Turn[];
  answer: string;
  tokenUsage: Record<string, number>;
} {
  const answer = 'The marker is in marker.txt.';
  return {
    turns: [
      {
        text: 'Writing the marker.',
        toolCall: {
          name: 'Bash',
          input: {
            command: `echo ${marker} > marker.txt && pwd && cat marker.txt`,
            description: 'write a marker',
          },
        },
        usage: { input: 1500, output: 40, cacheRead: 300, cacheWrite: 200 },
      },
      { text: answer, usage: { input: 1700, output: 25, cacheRead: 900, cacheWrite: 0 } },
    ],
    answer,
    tokenUsage: {
      input: 1500 + 1700,
      output: 40 + 25,
      cacheRead: 300 + 900,
      cacheWrite: 200,
      total: 3200 + 65 + 1200 + 200,
    },
  };
}

/**
 * The marker conversation of a Job run of Codex, Gemini CLI or OpenCode: the recipe's model, base-URL variable and
 * key, the fake it talks to (`vendor`: `startOpenAIModel`, `startGeminiModel`, `startAnthropicModel`) and what it
 * plays, the answer, and the `tokenUsage` the Agent's status must show (written out from the turns' numbers).
 */
export interface CliMarkerRun {
  readonly cli: 'codex' | 'gemini' | 'opencode';
  /** The name of its AgentDefinition, Station and (with `-run`) Agent: the CLI's unless a test gives another. */
  readonly name: string;
  readonly vendor: 'openai' | 'gemini' | 'anthropic';
  readonly model: string;
  readonly baseUrlEnv: string;
  /** The key's variable, and its key in the agent-secrets Secret (`agentSecrets`). */
  readonly secret: { readonly name: string; readonly ref: 'openai' | 'gemini' | 'anthropic' };
  /** More recipe fields. */
  readonly extra: Readonly<Record<string, unknown>>;
  readonly conversations: readonly Conversation[];
  readonly answer: string;
  readonly tokenUsage: Readonly<Record<string, number>>;
  /** What the command's output the model gets back must show, when more than {@link MARKER_WRITTEN}. */
  readonly output?: MarkerOutput;
}

/** What a run's command output, as the model got it back, must show. */
export interface MarkerOutput {
  readonly what: string;
  readonly seen: (content: string, marker: string) => boolean;
}

/** A fresh test key for each vendor, by its key in the agent-secrets Secret (`CliMarkerRun.secret.ref`). */
export function vendorKeys(): Record<CliMarkerRun['secret']['ref'], string> {
  return {
    openai: `sk-e2e-${randomBytes(16).toString('hex')}`,
    gemini: `AIza-e2e-${randomBytes(16).toString('hex')}`,
    anthropic: `sk-ant-e2e-${randomBytes(16).toString('hex')}`,
  };
}

/**
 * Codex's command output: the marker written, and the command run in the pod's own user namespace, whose uid map
 * is the initial one (`0 0 4294967295`; neither node gives pods a user namespace), not in one that Codex's
 * bubblewrap sandbox makes (a one-line map of the run's uid): the product runs Codex without a sandbox of its own,
 * since on a real kubelet the RuntimeDefault seccomp profile of every run pod forbids that user namespace
 * (docs/reference/vendor-clis.md#sandbox-and-approvals).
 */
const OUTSIDE_CODEX_SANDBOX: MarkerOutput = {
  what: "the working folder, the marker and the uid map of the pod's own user namespace (no bubblewrap sandbox)",
  seen: (content, marker) => MARKER_WRITTEN.seen(content, marker) && /\b0\s+0\s+4294967295\b/.test(content),
};

/**
 * The marker runs of Codex, Gemini CLI and OpenCode: the model asks for one shell command that writes `marker` to
 * marker.txt in the working folder and prints the folder and the file, then answers. Each CLI's own tool and way of
 * counting tokens (docs/reference/vendor-clis.md): Codex and Gemini count cached tokens inside their input (the
 * Agent shows the uncached part as input), OpenCode (Anthropic provider) does not.
 */
export function otherCliMarkerRuns(marker: string): CliMarkerRun[] {
  const command = `echo ${marker} > marker.txt && pwd && cat marker.txt`;
  const first = { input: 900, output: 20 };
  const last = { input: 2000, output: 60, cacheRead: 500 };
  const cachedInside = {
    input: 900 + 2000 - 500,
    output: 20 + 60,
    cacheRead: 500,
    cacheWrite: 0,
    total: 900 + 2000 + 20 + 60,
  };
  return [
    {
      cli: 'codex',
      name: 'codex',
      vendor: 'openai',
      model: 'gpt-5.1-codex',
      baseUrlEnv: 'OPENAI_BASE_URL',
      secret: { name: 'OPENAI_API_KEY', ref: 'openai' },
      extra: {},
      conversations: [
        {
          turns: [
            {
              toolCall: { name: 'exec_command', input: { cmd: `${command} && cat /proc/self/uid_map` } },
              usage: first,
            },
            { text: 'Codex left the marker.', usage: last },
          ],
        },
      ],
      answer: 'Codex left the marker.',
      tokenUsage: cachedInside,
      output: OUTSIDE_CODEX_SANDBOX,
    },
    {
      cli: 'gemini',
      name: 'gemini',
      vendor: 'gemini',
      model: 'gemini-3.5-flash',
      baseUrlEnv: 'GOOGLE_GEMINI_BASE_URL',
      secret: { name: 'GEMINI_API_KEY', ref: 'gemini' },
      // Gemini CLI offers its shell tool only in yolo mode (docs/reference/vendor-clis.md).
      extra: { permission_mode: 'bypass' },
      conversations: [
        {
          turns: [
            {
              toolCall: { name: 'run_shell_command', input: { command, description: 'write a marker' } },
              usage: first,
            },
            { text: 'Gemini left the marker.', usage: last },
          ],
        },
      ],
      answer: 'Gemini left the marker.',
      tokenUsage: cachedInside,
    },
    {
      cli: 'opencode',
      name: 'opencode',
      vendor: 'anthropic',
      model: 'opencode/anthropic/claude-sonnet-4-5',
      baseUrlEnv: 'ANTHROPIC_BASE_URL',
      secret: { name: 'ANTHROPIC_API_KEY', ref: 'anthropic' },
      extra: {},
      conversations: [
        // OpenCode asks a small model for a session title beside the first turn.
        {
          bodyIncludes: 'You are a title generator',
          turns: [{ text: 'Marker', usage: { input: 1, output: 1 } }, { text: 'Marker' }],
        },
        {
          turns: [
            {
              toolCall: { name: 'bash', input: { command, description: 'write a marker' } },
              usage: { ...first, cacheWrite: 100 },
            },
            { text: 'OpenCode left the marker.', usage: last },
          ],
        },
      ],
      answer: 'OpenCode left the marker.',
      tokenUsage: {
        input: 900 + 2000,
        output: 20 + 60,
        cacheRead: 500,
        cacheWrite: 100,
        total: 900 + 2000 + 20 + 60 + 500 + 100,
      },
    },
  ];
}

/** What a marker check reads of a request a model fake got (loopback or in the node's namespace). */
interface ModelRequestSeen {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly apiKey?: string | undefined;
  readonly toolResults: readonly { readonly content: string }[];
}

/** The command's output the model must get back: the working folder and the marker (the command ran). */
export const MARKER_WRITTEN: MarkerOutput = {
  what: 'the working folder and the marker',
  seen: (content: string, marker: string) => content.includes('/workspace') && content.includes(marker),
};

/**
 * What is wrong with a finished marker run, as one report (undefined: nothing): its phase, result, tokens, the
 * command's output the model got back (the run's `output`, else {@link MARKER_WRITTEN}; in whatever wrapping the CLI
 * gives it), the key in the model's requests and not on the Agent, and the `more` problems a test found itself; then
 * the requests and the status.
 */
export function markerRunFailure(
  run: CliMarkerRun,
  agent: { readonly status: unknown },
  requests: readonly ModelRequestSeen[],
  check: { marker: string; key: string; more?: readonly string[] },
): string | undefined {
  const status = (agent.status ?? {}) as Record<string, unknown>;
  const output = run.output ?? MARKER_WRITTEN;
  const problems: string[] = [];
  if (status.phase !== 'Succeeded') problems.push(`phase ${String(status.phase)}`);
  if (status.result !== run.answer) problems.push(`result ${JSON.stringify(status.result)}`);
  if (!isDeepStrictEqual(status.tokenUsage, run.tokenUsage))
    problems.push(`tokenUsage ${JSON.stringify(status.tokenUsage)}, not ${JSON.stringify(run.tokenUsage)}`);
  const outputs = requests.flatMap((r) => r.toolResults.map((t) => t.content));
  if (!outputs.some((c) => output.seen(c, check.marker)))
    problems.push(`the model did not get ${output.what} back: ${JSON.stringify(outputs)}`);
  if (!requests.some((r) => r.apiKey === check.key)) problems.push('the key did not reach the model API');
  if (JSON.stringify(agent).includes(check.key)) problems.push('the key is on the Agent');
  problems.push(...(check.more ?? []));
  if (problems.length === 0) return undefined;
  const seen = requests.map((q) => `${q.method} ${q.path} ${q.status}`).join(', ');
  return `${run.name}: ${problems.join('; ')}\n  requests: ${seen}\n  status: ${JSON.stringify(status).slice(0, 3000)}`;
}

/** The command lines of every process on the machine (the test node's containers are local processes). */
export function commandLines(): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      out.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * A test image running the MCP tool server (one tool, `lookup`, answering `found <q> at <answer>`) on a random
 * port; removed with the scenario. Its `image` and `port` go into a definition's `sidecars`.
 */
export function mcpToolImage(s: Scenario, answer: string): { image: string; port: number } {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const image = `mcp-tool:${s.ns}`;
  s.defer(
    addTestImages(s.cluster, `mcp-${s.ns}`, {
      [image]: {
        entrypoint: ['node', '/opt/mcp-tool-server.mjs'],
        env: { MCP_PORT: String(port), MCP_ANSWER: answer },
        files: { '/opt/mcp-tool-server.mjs': MCP_SERVER },
      },
    }),
  );
  return { image, port };
}

/** The log of the tool sidecar `container` in the scenario's (only) run pod: one line per MCP message. */
export async function mcpToolLog(s: Scenario, container: string): Promise<string> {
  const pods = await s.client.list(apiPath('v1', 'pods', { namespace: s.ns }), {}, PodSchema);
  const pod = pods.items[0]?.metadata.name ?? '';
  return s.client.logs(s.ns, pod, { container });
}

/**
 * An `openai` SDK client of the server Agent `agent`, once it is Serving and Ready: its Service's endpoint and the key
 * from its `<agent>-server-api-key` Secret; no SDK retries (a retry would hide a failure).
 */
export async function servingClient(s: Scenario, agent: string): Promise<OpenAI> {
  await s.waitForAgent(
    agent,
    (a) => a.status.phase === 'Serving' && agentCondition(a, 'Ready')?.status === 'True',
    'Serving and Ready',
    120_000,
  );
  const secret = await s.client.get(
    `/api/v1/namespaces/${s.ns}/secrets/${agent}-server-api-key`,
    SecretSchema,
  );
  const key = Buffer.from(secret.data['api-key'] ?? '', 'base64').toString('utf8');
  return new OpenAI({
    apiKey: key,
    baseURL: `http://${await endpointOf(s, `${agent}-server`)}/v1`,
    maxRetries: 0,
    timeout: 120_000,
  });
}

/** A plain chat completion of one user message, asked until the server answers (its pods may still be starting). */
export function firstCompletion(client: OpenAI, model: string, content: string) {
  return pollUntil(
    async (observe) => {
      try {
        return await client.chat.completions.create({ model, messages: [{ role: 'user', content }] });
      } catch (error) {
        observe(String(error));
        return undefined;
      }
    },
    { timeoutMs: 90_000, intervalMs: 1000, description: 'an answer from the server' },
  );
}

/** The text of a streamed chat completion of one user message. */
export async function streamedCompletion(client: OpenAI, model: string, content: string): Promise<string> {
  const stream = await client.chat.completions.create({
    model,
    stream: true,
    messages: [{ role: 'user', content }],
  });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
  return streamed;
}
