// Realtime sessions answered by each real CLI (test/clis) through the controller's prompt API, against the loopback
// fake of its model API (test/support/model-api), then resumed in a second run: the definition's opening prompt,
// two prompts in one session (the second request carries the first turn), the CLI's session id on the Agent, close
// → the session's state folder saved to a loopback conversation store; a second Agent with
// `spec.resumeSession: <that id>` restores it in its init container and the CLI continues the session by id
// (docs/reference/vendor-clis.md, "Resume" of each CLI), so its first model request carries the earlier turns.
// Node only: the Deno pass runs the same path with the mock CLI (controller-realtime).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  pollUntil,
  runScenario,
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
  startConversationStore,
  startRealtimeReplica,
} from '../support/realtime.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

const OPENING = 'You are a helpful assistant.';
const PROMPTS = ['What is the first thing?', 'And the second?', 'And the third, after the resume?'] as const;
const ANSWERS = ['The first answer.', 'The second answer.', 'The third answer.'] as const;
/** The opening turn's answer, then one answer per prompt. */
const TURNS: readonly Turn[] = [{ text: 'Ready.' }, ...ANSWERS.map((text) => ({ text }))];

interface Case {
  readonly cli: RealCli;
  readonly model: string;
  readonly baseUrlEnv: string;
  readonly keyEnv: string;
  readonly key: string;
  readonly session: RegExp;
  readonly extra?: Readonly<Record<string, unknown>>;
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
    session: /^[0-9a-f-]{36}$/,
    start: (apiKey) => startAnthropicModel({ apiKey, turns: TURNS }),
  },
  {
    cli: 'codex',
    model: 'gpt-5.1-codex',
    baseUrlEnv: 'OPENAI_BASE_URL',
    keyEnv: 'OPENAI_API_KEY',
    key: `sk-e2e-${hex()}`,
    session: /^[0-9a-f-]{36}$/,
    start: (apiKey) => startOpenAIModel({ apiKey, turns: TURNS }),
  },
  {
    cli: 'gemini',
    model: 'gemini-3.5-flash',
    baseUrlEnv: 'GOOGLE_GEMINI_BASE_URL',
    keyEnv: 'GEMINI_API_KEY',
    key: `AIza-e2e-${hex()}`,
    session: /^[0-9a-f-]{36}$/,
    start: (apiKey) => startGeminiModel({ apiKey, turns: TURNS }),
  },
  {
    cli: 'opencode',
    model: 'opencode/anthropic/claude-sonnet-4-5',
    baseUrlEnv: 'ANTHROPIC_BASE_URL',
    keyEnv: 'ANTHROPIC_API_KEY',
    key: `sk-ant-e2e-${hex()}`,
    session: /^ses_[A-Za-z0-9]+$/,
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

/**
 * Whether a prompt's NDJSON answer holds `answer`: in one line (Claude's `result`, Codex's `agent_message`,
 * OpenCode's `text` part) or spread over Gemini CLI's streamed assistant `message` deltas.
 */
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

describe(`the real CLIs in a realtime session, resumed in a second run (${runtime})`, {
  skip,
  concurrency: true,
}, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  for (const c of CASES) {
    it(`${c.cli}: two prompts in one session, close, then resumeSession continues it`, {
      timeout: 420_000,
    }, async () => {
      const fake = await c.start(c.key);
      const store = await startConversationStore();
      try {
        await runScenario(cluster, `rt-${c.cli}`, async (s) => {
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
                  conversation: { source: store.url },
                },
                ...c.extra,
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
          const beforeSecond = Date.now();
          const two = await call(base, agentPath(s, 'first', 'prompt'), launcher, { prompt: PROMPTS[1] });
          assert.equal(two.status, 200, two.text);
          assert.ok(answered(two, ANSWERS[1]), `the second answer reaches the caller: ${two.text}`);
          const secondTurn = turnsSince(fake, beforeSecond)[0];
          assert.ok(secondTurn, `a model request for the second prompt: ${requests()}`);
          assert.ok(
            carries(secondTurn.body, PROMPTS[0], ANSWERS[0], PROMPTS[1]),
            `the second prompt's request carries the first turn: ${JSON.stringify(secondTurn.body).slice(-3000)}`,
          );

          const first = await s.waitForAgent(
            'first',
            (a) => (a.status.sessionId ?? '') !== '',
            'status.sessionId',
            60_000,
          );
          const session = String(first.status.sessionId ?? '');
          assert.match(session, c.session, 'the CLI names its session');
          const closed = await call(base, agentPath(s, 'first', 'close'), launcher, {});
          assert.ok(closed.status === 200 || closed.status === 202, closed.text);
          const done = await s.waitTerminal('first', 120_000);
          assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
          assert.equal(done.status.sessionId, session);
          const saved = await pollUntil(async () => store.saved.get(`/${session}`), {
            timeoutMs: 60_000,
            description: 'the session to be saved to the store',
          });
          assert.ok(saved.length > 0, 'a non-empty archive');

          const beforeResume = Date.now();
          await s.create({
            ...agentManifest('second', 'live'),
            spec: { stationRef: 'live', resumeSession: session },
          });
          const three = await promptWhenReady(base, agentPath(s, 'second', 'prompt'), launcher, PROMPTS[2]);
          assert.equal(three.status, 200, three.text);
          assert.ok(
            answered(three, ANSWERS[2]),
            `the answer after the resume reaches the caller: ${three.text}`,
          );
          assert.ok(store.fetched.includes(`/${session}`), 'the init container fetched the session');
          const resumed = turnsSince(fake, beforeResume)[0];
          assert.ok(resumed, `a model request after the resume: ${requests()}`);
          assert.ok(
            carries(resumed.body, PROMPTS[0], ANSWERS[0], PROMPTS[1], ANSWERS[1], PROMPTS[2]),
            `the resumed run's first request carries the earlier turns: ${JSON.stringify(resumed.body).slice(-3000)}`,
          );
          assert.ok(!carries(resumed.body, ANSWERS[2]), 'and not the answer it asks for');

          assert.equal((await call(base, agentPath(s, 'second', 'close'), launcher, {})).status, 200);
          const end = await s.waitTerminal('second', 120_000);
          assert.equal(end.status.phase, 'Succeeded', JSON.stringify(end.status));
          assert.equal(end.status.sessionId, session, 'the same session went on');
        });
      } finally {
        await Promise.all([fake.close(), store.close()]);
      }
    });
  }
});
