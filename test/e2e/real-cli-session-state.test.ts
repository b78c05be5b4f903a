// A realtime session's state carried from one run pod to another (issue 29, docs/design/sessions.md "The run pod"),
// with each real CLI (test/clis) against the loopback fake of its model API (test/support/model-api): the opening
// prompt and two prompts through the controller's prompt API, then `GET /session/state` from the pod itself (the
// run's token read from its Secret `agent-prompt-<name>`); the first run is closed; a second Agent annotated
// `agents.re-cinq.com/session-restore: "true"` gets a pod with AGENT_SESSION_RESTORE=true, which sends no opening
// prompt and refuses prompts (409) until the test PUTs the state; the third prompt, through the prompt API again,
// continues the session by id, so its model request carries the opening, turns 1–2 and their answers.
// Node only: the Deno pass runs the supervisor's routes on the host (test/host/realtime-supervisor.test.ts).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { jobNameFor } from '../../src/jobs/index.ts';
import { ANNOTATION_SESSION_RESTORE, promptTokenSecretName, REALTIME_PORT } from '../../src/jobs/realtime.ts';
import {
  agentManifest,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import {
  type ModelApiFake,
  startAnthropicModel,
  startGeminiModel,
  startOpenAIModel,
  type Turn,
} from '../support/model-api/index.ts';
import {
  agentSecrets,
  agentTemplate,
  type RealCli,
  realCliImages,
  realCliSkipReason,
} from '../support/real-clis.ts';
import {
  agentPath,
  apiUrl,
  applyRealtimeRbac,
  call,
  promptWhenReady,
  startRealtimeReplica,
} from '../support/realtime.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

const OPENING = 'You are a helpful assistant.';
const PROMPTS = ['What is the first thing?', 'And the second?', 'And the third, in the new pod?'] as const;
const ANSWERS = ['The first answer.', 'The second answer.', 'The third answer.'] as const;
/** The opening turn's answer, then one answer per prompt. */
const TURNS: readonly Turn[] = [{ text: 'Ready.' }, ...ANSWERS.map((text) => ({ text }))];

interface Case {
  readonly cli: RealCli;
  readonly model: string;
  readonly baseUrlEnv: string;
  readonly keyEnv: string;
  readonly key: string;
  /** Where the CLI keeps its session under $HOME: one archive member at least starts with it. */
  readonly stateDir: string;
  start(key: string): Promise<ModelApiFake>;
}

const hex = () => randomBytes(16).toString('hex');
const CASES: readonly Case[] = [
  {
    cli: 'claude',
    model: 'claude-sonnet-4-5',
    baseUrlEnv: 'ANTHROPIC_BASE_URL',
    keyEnv: 'ANTHROPIC_API_KEY',
    key: `sk-ant-e2e-${hex()}`,
    stateDir: '.claude/projects/',
    start: (apiKey) => startAnthropicModel({ apiKey, turns: TURNS }),
  },
  {
    cli: 'codex',
    model: 'gpt-5.1-codex',
    baseUrlEnv: 'OPENAI_BASE_URL',
    keyEnv: 'OPENAI_API_KEY',
    key: `sk-e2e-${hex()}`,
    stateDir: '.codex/sessions/',
    start: (apiKey) => startOpenAIModel({ apiKey, turns: TURNS }),
  },
  {
    cli: 'gemini',
    model: 'gemini-3.5-flash',
    baseUrlEnv: 'GOOGLE_GEMINI_BASE_URL',
    keyEnv: 'GEMINI_API_KEY',
    key: `AIza-e2e-${hex()}`,
    stateDir: '.gemini/tmp/',
    start: (apiKey) => startGeminiModel({ apiKey, turns: TURNS }),
  },
  {
    cli: 'opencode',
    model: 'opencode/anthropic/claude-sonnet-4-5',
    baseUrlEnv: 'ANTHROPIC_BASE_URL',
    keyEnv: 'ANTHROPIC_API_KEY',
    key: `sk-ant-e2e-${hex()}`,
    stateDir: '.local/share/opencode/',
    start: (apiKey) =>
      startAnthropicModel({
        apiKey,
        conversations: [
          // OpenCode asks a small model for a session title beside a new session's first turn.
          {
            match: (body) => JSON.stringify((body as { system?: unknown }).system ?? '').includes('title'),
            turns: [{ text: 'Title' }, { text: 'Title' }],
          },
          { turns: TURNS },
        ],
      }),
  },
];

/** The model calls of the conversation (not OpenCode's title requests), from `since` (ms) on. */
function turnsSince(fake: ModelApiFake, since: number) {
  return fake.requests.filter(
    (r) =>
      r.step !== undefined &&
      r.at >= since &&
      !JSON.stringify((r.body as { system?: unknown }).system ?? '').includes('title generator'),
  );
}

/** Whether a prompt's NDJSON answer holds `answer` (in one line, or over Gemini CLI's streamed deltas). */
function answered(r: { text: string; lines: Record<string, unknown>[] }, answer: string): boolean {
  const deltas = r.lines
    .filter((l) => l.type === 'message' && l.role === 'assistant')
    .map((l) => String(l.content))
    .join('');
  return r.text.includes(answer) || deltas.includes(answer);
}

/** Whether a request's body holds every one of `texts` (in whatever wrapping the CLI gives a turn). */
function carries(body: unknown, ...texts: string[]): boolean {
  const all = JSON.stringify(body);
  return texts.every((t) => all.includes(JSON.stringify(t).slice(1, -1)));
}

/** The run's prompt token, from its Secret (what the controller's prompt API reads). */
async function runToken(s: Scenario, agent: string): Promise<string> {
  const secret = (await s.client.get(
    `/api/v1/namespaces/${s.ns}/secrets/${promptTokenSecretName(agent)}`,
  )) as {
    data?: Record<string, string>;
  };
  const token = secret.data?.token;
  assert.ok(token, `the Secret ${promptTokenSecretName(agent)} holds a token`);
  return Buffer.from(token, 'base64').toString('utf8');
}

/** The prompt server of the Agent's run pod (its pod IP, port 8090), once its /healthz answers. */
async function podServer(
  s: Scenario,
  agent: string,
): Promise<{ url: string; health: Record<string, unknown> }> {
  return pollUntil(
    async (observe) => {
      const pod = (await s.jobPods(jobNameFor(agent))).find((p) => p.status?.podIP !== undefined);
      const ip = pod?.status?.podIP;
      observe(ip ?? 'no pod IP yet');
      if (ip === undefined) return undefined;
      const url = `http://${ip}:${REALTIME_PORT}`;
      const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5000) }).then(
        async (r) => (r.ok ? ((await r.json()) as Record<string, unknown>) : undefined),
        () => undefined,
      );
      return health === undefined ? undefined : { url, health };
    },
    { timeoutMs: 90_000, intervalMs: 500, description: `the prompt server of ${agent}'s pod` },
  );
}

/** Archive member names, from the ustar headers of a gzip'd archive (an independent reader: the system's tar). */
async function members(archive: Uint8Array): Promise<string[]> {
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync('tar', ['-tz'], { input: archive, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter((l) => l !== '');
}

describe(`the real CLIs: a realtime session's state read from its pod and restored in a new pod (${runtime})`, {
  skip,
  concurrency: true,
}, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  for (const c of CASES) {
    it(`${c.cli}: two prompts, GET /session/state from the pod, PUT it into a restoring pod, the third prompt continues`, {
      timeout: 420_000,
    }, async (t) => {
      const fake = await c.start(c.key);
      try {
        await runScenario(cluster, `st-${c.cli}`, async (s) => {
          await applyRealtimeRbac(s);
          const images = realCliImages(s, runtime);
          const ctl = await startRealtimeReplica(s, { agentImage: images.init });
          await s.create(
            agentSecrets({ key: c.key }),
            {
              apiVersion: GROUP_VERSION,
              kind: 'AgentDefinition',
              metadata: { name: 'live' },
              spec: {
                model: c.model,
                prompt: OPENING,
                execution: 'realtime',
                resources: {
                  env: [{ name: c.baseUrlEnv, value: fake.baseUrl }],
                  secrets: [{ name: c.keyEnv, ref: 'key' }],
                },
              },
            },
            stationManifest('live', 'live', { template: agentTemplate(images.agent) }),
            agentManifest('first', 'live'),
          );
          const launcher = await s.serviceAccountToken('agent-launcher');
          const base = await apiUrl(ctl);
          const requests = () =>
            fake.requests.map((r) => `${r.method} ${r.path} ${r.status} step ${r.step}`).join(', ');

          const one = await promptWhenReady(base, agentPath(s, 'first', 'prompt'), launcher, PROMPTS[0]);
          assert.equal(one.status, 200, one.text);
          assert.ok(answered(one, ANSWERS[0]), `the first answer reaches the caller: ${one.text}`);
          const two = await call(base, agentPath(s, 'first', 'prompt'), launcher, { prompt: PROMPTS[1] });
          assert.equal(two.status, 200, two.text);
          assert.ok(answered(two, ANSWERS[1]), `the second answer reaches the caller: ${two.text}`);

          // The state, from the pod itself, with the run's own token.
          const first = await podServer(s, 'first');
          const token = await runToken(s, 'first');
          assert.equal((await fetch(`${first.url}/session/state`)).status, 401, 'no token, no state');
          const state = await fetch(`${first.url}/session/state`, {
            headers: { authorization: `Bearer ${token}` },
          });
          assert.equal(state.status, 200, await state.clone().text());
          assert.equal(state.headers.get('content-type'), 'application/gzip');
          const sessionId = state.headers.get('x-agent-session-id') ?? '';
          // The opening prompt's turn, then the two prompts.
          assert.equal(state.headers.get('x-agent-turns'), '3');
          const archive = new Uint8Array(await state.arrayBuffer());
          const names = await members(archive);
          t.diagnostic(`${c.cli}: ${archive.length} bytes, members ${names.join(' ')}`);
          assert.ok(
            names.some((n) => n.startsWith(c.stateDir) && !n.endsWith('/')),
            `the CLI's state files are in the archive: ${names.join(' ')}`,
          );
          assert.ok(names.includes('workspace/'), `the workspace is in the archive: ${names.join(' ')}`);
          assert.ok(
            names.every((n) => n.startsWith(c.stateDir) || n.startsWith('workspace/')),
            `nothing else: ${names.join(' ')}`,
          );
          const recorded = await s.waitForAgent(
            'first',
            (a) => (a.status.sessionId ?? '') !== '',
            'status.sessionId',
            60_000,
          );
          assert.equal(sessionId, recorded.status.sessionId, 'the state names the session the Agent records');

          const closed = await call(base, agentPath(s, 'first', 'close'), launcher, {});
          assert.ok(closed.status === 200 || closed.status === 202, closed.text);
          const done = await s.waitTerminal('first', 120_000);
          assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));

          // A new run whose pod restores the session: it waits for its state and opens nothing.
          const sinceRestore = Date.now();
          const secondAgent = agentManifest('second', 'live');
          const restoring = {
            ...secondAgent.metadata,
            annotations: { [ANNOTATION_SESSION_RESTORE]: 'true' },
          };
          await s.create({ ...secondAgent, metadata: restoring });
          const second = await podServer(s, 'second');
          assert.deepEqual(
            [second.health.restoring, second.health.turns, second.health.sessionId],
            [true, 0, null],
          );
          const early = await call(base, agentPath(s, 'second', 'prompt'), launcher, { prompt: 'too early' });
          assert.equal(early.status, 409, early.text);
          assert.match(early.text, /waiting for the session state/);
          assert.deepEqual(turnsSince(fake, sinceRestore), [], 'no model request before the state is in');
          const secondToken = await runToken(s, 'second');
          assert.notEqual(secondToken, token, 'each run has its own token');
          const put = (authToken: string) =>
            fetch(`${second.url}/session/state`, {
              method: 'PUT',
              headers: {
                authorization: `Bearer ${authToken}`,
                'content-type': 'application/gzip',
                'x-agent-session-id': sessionId,
                'x-agent-turns': '3',
              },
              body: archive,
            });
          assert.equal((await put(token)).status, 401, "the first run's token does not open the second pod");
          const restored = await put(secondToken);
          assert.equal(restored.status, 200, await restored.clone().text());
          assert.deepEqual(await restored.json(), {
            restored: true,
            sessionId,
            turns: 3,
            members: names.length,
          });

          const beforeThird = Date.now();
          const three = await promptWhenReady(base, agentPath(s, 'second', 'prompt'), launcher, PROMPTS[2]);
          assert.equal(three.status, 200, three.text);
          assert.ok(
            answered(three, ANSWERS[2]),
            `the answer in the new pod reaches the caller: ${three.text}`,
          );
          const resumed = turnsSince(fake, beforeThird)[0];
          assert.ok(resumed, `a model request for the third prompt: ${requests()}`);
          assert.ok(
            carries(resumed.body, OPENING, PROMPTS[0], ANSWERS[0], PROMPTS[1], ANSWERS[1], PROMPTS[2]),
            `the third prompt's request carries turns 1–2: ${JSON.stringify(resumed.body).slice(-3000)}`,
          );
          assert.ok(!carries(resumed.body, ANSWERS[2]), 'and not the answer it asks for');
          const after = (await (await fetch(`${second.url}/healthz`)).json()) as Record<string, unknown>;
          assert.deepEqual([after.turns, after.restoring, after.sessionId], [4, false, sessionId]);

          assert.equal((await call(base, agentPath(s, 'second', 'close'), launcher, {})).status, 200);
          const end = await s.waitTerminal('second', 120_000);
          assert.equal(end.status.phase, 'Succeeded', JSON.stringify(end.status));
          assert.equal(end.status.sessionId, sessionId, 'the same session went on');
        });
      } finally {
        await fake.close();
      }
    });
  }
});
