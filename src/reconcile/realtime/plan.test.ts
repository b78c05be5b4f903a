import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Agent, AgentDefinition } from '../../api/index.ts';
import { parseAgent } from '../../api/index.ts';
import { buildJob } from '../../jobs/index.ts';
import { decide } from '../agent/decide.ts';
import type { Snapshot } from '../snapshot.ts';
import { agent, at, definition, queueOf, station } from '../test-fixtures.ts';
import {
  FAILURE_REALTIME_DISABLED,
  FAILURE_RESUME_NEEDS_REALTIME,
  LABEL_EXECUTION,
  promptTokenSecretName,
  REALTIME_PORT,
  realtimeProblem,
} from './plan.ts';

/** An Agent of station `stn` with spec overrides (resumeSession, model). */
function agentWith(name: string, spec: Record<string, unknown>): Agent {
  const base = agent(name);
  const parsed = parseAgent({
    apiVersion: 'agents.re-cinq.com/v1alpha1',
    kind: 'Agent',
    metadata: base.metadata,
    spec: { stationRef: 'stn', ...spec },
  });
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

const realtimeDef = (spec: Record<string, unknown> = {}): AgentDefinition =>
  definition('def', { execution: 'realtime', model: 'claude-opus-5-5', ...spec });

const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: false, pollMs: 60000 },
  realtime: { enabled: true },
};

function snap(a: Agent, def: AgentDefinition, enabled = true): Snapshot {
  return {
    agent: a,
    station: station(),
    definition: def,
    job: { kind: 'unknown' },
    queue: queueOf(a, [a]),
    options: { ...OPTIONS, realtime: { enabled } },
  };
}

describe('realtime admission reasons', () => {
  const source = { resources: { conversation: { source: 'http://store.invalid' } } };
  const cases: [string, Agent, AgentDefinition, boolean, string | undefined][] = [
    ['a plain realtime run', agent('a'), realtimeDef(), true, undefined],
    ['a controller without REALTIME_ENABLED', agent('a'), realtimeDef(), false, FAILURE_REALTIME_DISABLED],
    [
      'resources.conversation.id',
      agent('a'),
      realtimeDef({ resources: { conversation: { source: 'http://s', id: 'c1' } } }),
      true,
      'realtime execution cannot use resources.conversation.id',
    ],
    [
      'resources.conversation.pin',
      agent('a'),
      realtimeDef({ resources: { conversation: { pin: 'p1' } } }),
      true,
      'realtime execution cannot use resources.conversation.pin',
    ],
    [
      'resumeSession without a conversation source',
      agentWith('a', { resumeSession: 's-1' }),
      realtimeDef(),
      true,
      'resumeSession needs resources.conversation.source',
    ],
    [
      'resumeSession with a source (claude)',
      agentWith('a', { resumeSession: 's-1' }),
      realtimeDef(source),
      true,
      undefined,
    ],
    [
      'resumeSession on codex and gemini',
      agentWith('a', { resumeSession: 's-1', model: 'gpt-6.1-sol' }),
      realtimeDef(source),
      true,
      undefined,
    ],
    [
      'resumeSession on opencode (its sessionID, --session)',
      agentWith('a', { resumeSession: 's-1', model: 'opencode/x/y' }),
      realtimeDef(source),
      true,
      undefined,
    ],
    [
      'resumeSession on the exec model',
      agentWith('a', { resumeSession: 's-1' }),
      realtimeDef({ ...source, model: 'exec', tool_config: { command: ['true'] } }),
      true,
      'exec cannot resume a session',
    ],
    [
      'resumeSession on a batch run',
      agentWith('a', { resumeSession: 's-1' }),
      definition('def', { execution: 'batch' }),
      true,
      FAILURE_RESUME_NEEDS_REALTIME,
    ],
    [
      'resumeSession on a job run keeps the CLI --resume',
      agentWith('a', { resumeSession: 's-1' }),
      definition(),
      true,
      undefined,
    ],
    [
      'resumeSession on a job run of opencode keeps its --session',
      agentWith('a', { resumeSession: 's-1', model: 'opencode/x/y' }),
      definition(),
      true,
      undefined,
    ],
    [
      'resumeSession on a job run of the exec model is refused',
      agentWith('a', { resumeSession: 's-1' }),
      definition('def', { model: 'exec', tool_config: { command: ['true'] } }),
      true,
      'exec cannot resume a session',
    ],
    [
      'an exec job run without resumeSession',
      agent('a'),
      definition('def', { model: 'exec', tool_config: { command: ['true'] } }),
      true,
      undefined,
    ],
    ['a job run on a controller without realtime', agent('a'), definition(), false, undefined],
  ];
  for (const [name, a, def, enabled, want] of cases) {
    it(name, () => assert.equal(realtimeProblem(a, def, enabled), want));
  }

  it('the disabled check comes before the field checks, the field checks before the resume checks', () => {
    const a = agentWith('a', { resumeSession: 's-1' });
    const def = realtimeDef({ resources: { conversation: { id: 'c', pin: 'p' } } });
    assert.equal(realtimeProblem(a, def, false), FAILURE_REALTIME_DISABLED);
    assert.equal(realtimeProblem(a, def, true), 'realtime execution cannot use resources.conversation.id');
  });
});

describe('decide: a realtime Agent at Pending', () => {
  it('fails at Pending with the reason, a RealtimeRefused Warning and no Job', () => {
    const d = decide(snap(agent('a'), realtimeDef(), false), at(10), buildJob);
    const patch = d.actions.find((x) => x.kind === 'patchStatus');
    assert.equal(patch?.kind === 'patchStatus' && patch.status.phase, 'Failed');
    assert.equal(patch?.kind === 'patchStatus' && patch.status.failureReason, FAILURE_REALTIME_DISABLED);
    const ev = d.actions.find((x) => x.kind === 'recordEvent');
    assert.deepEqual(ev?.kind === 'recordEvent' && [ev.type, ev.reason], ['Warning', 'RealtimeRefused']);
    assert.ok(!d.actions.some((x) => x.kind === 'createJob' || x.kind === 'createPromptToken'));
  });

  it('creates the prompt-token Secret right before the run input and the Job, which reads it by secretKeyRef', () => {
    const d = decide(snap(agent('a'), realtimeDef()), at(10), buildJob);
    const kinds = d.actions.map((x) => x.kind);
    const token = kinds.indexOf('createPromptToken');
    assert.deepEqual(kinds.slice(token, token + 3), ['createPromptToken', 'createRunInput', 'createJob']);
    const action = d.actions[token];
    assert.deepEqual(
      action?.kind === 'createPromptToken' && [action.uid, action.secretName, action.ref.name],
      ['uid-a', 'agent-prompt-a', 'a'],
    );
  });

  it('an exec Job run asked to resume a session fails at Pending with the reason and no Job', () => {
    const execDef = definition('def', { model: 'exec', tool_config: { command: ['true'] } });
    const d = decide(snap(agentWith('a', { resumeSession: 's-1' }), execDef), at(10), buildJob);
    const patch = d.actions.find((x) => x.kind === 'patchStatus');
    assert.equal(patch?.kind === 'patchStatus' && patch.status.phase, 'Failed');
    assert.equal(patch?.kind === 'patchStatus' && patch.status.failureReason, 'exec cannot resume a session');
    assert.ok(!d.actions.some((x) => x.kind === 'createJob'));
  });

  it('a job run gets no prompt token', () => {
    const d = decide(snap(agent('a'), definition()), at(10), buildJob);
    assert.ok(!d.actions.some((x) => x.kind === 'createPromptToken'));
  });
});

describe('buildJob: a realtime run', () => {
  const built = (a: Agent, def: AgentDefinition) => {
    const r = buildJob({ agent: a, station: station(), definition: def, agentImage: 'img', now: at(0) });
    if (!r.ok) throw new Error(r.error);
    const spec = r.value.spec.template.spec as {
      containers: Record<string, unknown>[];
      initContainers: Record<string, unknown>[];
    };
    const container = spec.containers.find((c) => c.name === 'agent') as Record<string, unknown>;
    const env = container.env as { name: string; value?: string; valueFrom?: unknown }[];
    const initEnv = spec.initContainers[0]?.env as { name: string; value?: string }[];
    return { job: r.value, container, env, initEnv };
  };

  it('labels the Job and pod, opens port 8090 and hands the token by secretKeyRef, never as a literal', () => {
    const { job, container, env, initEnv } = built(agent('a'), realtimeDef());
    assert.equal(job.metadata.labels[LABEL_EXECUTION], 'realtime');
    const podLabels = (job.spec.template.metadata as { labels: Record<string, string> }).labels;
    assert.equal(podLabels[LABEL_EXECUTION], 'realtime');
    assert.deepEqual(container.ports, [{ name: 'prompt', containerPort: REALTIME_PORT }]);
    const token = env.find((e) => e.name === 'AGENT_PROMPT_TOKEN');
    assert.deepEqual(token?.valueFrom, {
      secretKeyRef: { name: promptTokenSecretName('a'), key: 'token', optional: false },
    });
    assert.equal(token?.value, undefined);
    assert.equal(env.find((e) => e.name === 'AGENT_EXECUTION')?.value, 'realtime');
    const recipe = JSON.parse(env.find((e) => e.name === 'AGENT_RUN_RECIPE')?.value ?? '{}') as Record<
      string,
      unknown
    >;
    assert.equal(recipe.model, 'claude-opus-5-5');
    assert.equal(recipe.prompt, undefined, 'the recipe carries no prompt');
    assert.ok(
      !initEnv.some((e) => e.name === 'AGENT_PROMPT_TOKEN'),
      'the init container never sees the token',
    );
  });

  it('a resume restores that session: AGENT_RESUME_SESSION and the conversation id of the init', () => {
    const { env, initEnv } = built(
      agentWith('a', { resumeSession: 'sess-9' }),
      realtimeDef({ resources: { conversation: { source: 'http://store.invalid' } } }),
    );
    assert.equal(env.find((e) => e.name === 'AGENT_RESUME_SESSION')?.value, 'sess-9');
    assert.equal(initEnv.find((e) => e.name === 'AGENT_CONVERSATION_ID')?.value, 'sess-9');
  });

  it('a job run has none of it (only the prompt file of its input ConfigMap, as every run)', () => {
    const { job, env } = built(agent('a'), definition());
    assert.equal(job.metadata.labels[LABEL_EXECUTION], undefined);
    assert.deepEqual(
      env.filter((e) => e.name.startsWith('AGENT_PROMPT') || e.name === 'AGENT_EXECUTION'),
      [{ name: 'AGENT_PROMPT_FILE', value: '/agent/input/prompt' }],
    );
  });
});
