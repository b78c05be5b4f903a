// What the real-CLI e2e files check the same way whatever the CLI: the processes left on the test node, a tool
// sidecar serving MCP (test/support/mcp-tool-server.mjs) and what it was asked, a server Agent called with
// OpenAI's official `openai` SDK, and the scripted model's marker conversation (a Bash call, then an answer).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import * as v from 'valibot';
import { agentCondition, type Scenario } from './controller.ts';
import { apiPath } from './kube-client.ts';
import type { Turn } from './model-api/index.ts';
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
