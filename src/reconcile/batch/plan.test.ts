import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, type AgentDefinition, parseAgent, type SelectEntry } from '../../api/index.ts';
import { DEFAULT_MODEL } from '../../api/model.ts';
import { API_KEY_ENV, type BatchProvider, runCustomId } from '../../vendors/batch/port.ts';
import { renderClaudeLines } from '../../vendors/batch/render-claude.ts';
import { definition, iso, NS } from '../test-fixtures.ts';
import {
  apiKeySecretKey,
  BATCH_FINALIZER,
  batchFinalizerIndex,
  batchModel,
  batchProviderFor,
  batchRequestFor,
  batchUnsupported,
  CLI_OF_PROVIDER,
  isBatchProvider,
  MAX_CLEANUP_ATTEMPTS,
  renderContextFor,
  selectLines,
} from './plan.ts';

// ------------------------------------------------------------------------------------------------ fixtures

interface AgentOpts {
  readonly uid?: string;
  readonly model?: string;
  readonly parameters?: Readonly<Record<string, string>>;
  readonly finalizers?: readonly string[];
}

/** An Agent `name` in NS with the given uid, model, parameters and finalizers. */
function agentOf(name: string, o: AgentOpts = {}): Agent {
  const r = parseAgent({
    apiVersion: 'agents.re-cinq.com/v1alpha1',
    kind: 'Agent',
    metadata: {
      name,
      namespace: NS,
      uid: o.uid ?? `uid-${name}`,
      resourceVersion: '1',
      generation: 1,
      creationTimestamp: iso(0),
      ...(o.finalizers !== undefined ? { finalizers: o.finalizers } : {}),
    },
    spec: {
      stationRef: 'stn',
      ...(o.model !== undefined ? { model: o.model } : {}),
      ...(o.parameters !== undefined ? { parameters: o.parameters } : {}),
    },
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** A batch recipe (prompt `Do {thing}`); `spec` adds or overrides wire fields. */
const recipe = (spec: Record<string, unknown> = {}): AgentDefinition =>
  definition('def', { execution: 'batch', ...spec });

const PROVIDERS: readonly BatchProvider[] = ['anthropic', 'openai', 'gemini'];

// ------------------------------------------------------------------------------------------------ providers

describe('batchProviderFor', () => {
  const cases: readonly (readonly [string, BatchProvider | undefined])[] = [
    // Claude, the default model and every name no other vendor claims → anthropic.
    ['claude-opus-5-5', 'anthropic'],
    ['claude-sonnet-4-5', 'anthropic'],
    ['claude-3-5-haiku-latest', 'anthropic'],
    ['Claude-Opus-4', 'anthropic'],
    [DEFAULT_MODEL, 'anthropic'],
    ['mistral-large', 'anthropic'],
    ['llama-3.1-70b', 'anthropic'],
    ['some-unknown-model', 'anthropic'],
    ['', 'anthropic'],
    // OpenAI: gpt-*, the o-series, anything codex.
    ['gpt-5', 'openai'],
    ['gpt-4o-mini', 'openai'],
    ['GPT-4.1', 'openai'],
    ['o3', 'openai'],
    ['o3-mini', 'openai'],
    ['o1', 'openai'],
    ['o4-mini', 'openai'],
    ['codex', 'openai'],
    ['codex-mini-latest', 'openai'],
    ['gpt-5-codex', 'openai'],
    // Gemini.
    ['gemini-2.5-pro', 'gemini'],
    ['gemini-2.5-flash', 'gemini'],
    ['Gemini-1.5-Pro', 'gemini'],
    // Vendors without a batch API.
    ['opencode', undefined],
    ['opencode/anthropic/claude-sonnet-4-5', undefined],
    ['opencode/openai/gpt-5', undefined],
    ['opencode/google/gemini-2.5-pro', undefined],
    ['exec', undefined],
    ['EXEC', undefined],
    [' exec ', undefined],
  ];
  for (const [model, provider] of cases) {
    it(`${JSON.stringify(model)} → ${provider ?? 'undefined'}`, () => {
      assert.equal(batchProviderFor(model), provider);
    });
  }
});

describe('isBatchProvider and CLI_OF_PROVIDER', () => {
  it('accepts exactly the three providers', () => {
    for (const p of PROVIDERS) assert.equal(isBatchProvider(p), true, p);
    for (const v of [undefined, '', 'Anthropic', 'claude', 'codex', 'google', 'opencode', 'exec']) {
      assert.equal(isBatchProvider(v), false, String(v));
    }
  });

  it('renders each provider as its CLI', () => {
    assert.deepEqual(CLI_OF_PROVIDER, { anthropic: 'claude', openai: 'codex', gemini: 'gemini' });
  });

  it('constants', () => {
    assert.equal(BATCH_FINALIZER, 'agents.re-cinq.com/batch-cleanup');
    assert.equal(MAX_CLEANUP_ATTEMPTS, 5);
  });
});

describe('batchModel', () => {
  it('the Agent model, else the definition model, else the default', () => {
    assert.equal(batchModel(agentOf('a', { model: 'gpt-5' }), recipe({ model: 'gemini-2.5-pro' })), 'gpt-5');
    assert.equal(batchModel(agentOf('a'), recipe({ model: 'gemini-2.5-pro' })), 'gemini-2.5-pro');
    assert.equal(batchModel(agentOf('a', { model: '' }), recipe({ model: 'o3' })), 'o3');
    assert.equal(batchModel(agentOf('a'), recipe()), DEFAULT_MODEL);
    assert.equal(batchModel(agentOf('a'), null), DEFAULT_MODEL);
    assert.equal(batchModel(agentOf('a', { model: 'o3' }), null), 'o3');
  });
});

// ------------------------------------------------------------------------------------------------ validation

describe('batchUnsupported', () => {
  it('is undefined for a plain prompt recipe of every provider', () => {
    for (const model of ['claude-opus-5-5', 'gpt-5', 'o3', 'gemini-2.5-pro', DEFAULT_MODEL]) {
      assert.equal(batchUnsupported(recipe(), model), undefined, model);
    }
  });

  it('is undefined for what a single prompt can carry: env, secrets, sinks, select, schema, batch settings', () => {
    const d = recipe({
      resources: {
        env: [{ name: 'FOO', value: 'bar' }],
        secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'team-key' }],
      },
      output: {
        schema: { type: 'object' },
        select: [{ event: 'result' }],
        sinks: [{ type: 'http', url: 'http://sink/' }, { type: 'stdout' }],
      },
      batch: { maxTokens: 100, timeoutMinutes: 5, onTimeout: 'fallback' },
      allowed_tools: ['Read'],
      max_turns: 3,
    });
    assert.equal(batchUnsupported(d, 'claude-opus-5-5'), undefined);
  });

  const repos = { repos: [{ name: 'r', url: 'https://github.com/o/r' }] };
  const skills = { skills: ['pdf'] };
  const mcp = { mcp_servers: [{ name: 'm', transport: 'stdio', command: 'mcp' }] };
  const conversation = { conversation: { id: 'c1' } };

  const single: readonly (readonly [string, Record<string, unknown>, string, string])[] = [
    [
      'resources.repos',
      { resources: repos },
      'claude-opus-5-5',
      'batch execution cannot use resources.repos',
    ],
    [
      'resources.skills',
      { resources: skills },
      'claude-opus-5-5',
      'batch execution cannot use resources.skills',
    ],
    [
      'resources.mcp_servers',
      { resources: mcp },
      'claude-opus-5-5',
      'batch execution cannot use resources.mcp_servers',
    ],
    [
      'resources.conversation',
      { resources: conversation },
      'claude-opus-5-5',
      'batch execution cannot use resources.conversation',
    ],
    [
      'an empty resources.conversation object',
      { resources: { conversation: {} } },
      'claude-opus-5-5',
      'batch execution cannot use resources.conversation',
    ],
    [
      'tool_config',
      { tool_config: { command: 'x' } },
      'claude-opus-5-5',
      'batch execution cannot use tool_config',
    ],
    [
      'output.watch',
      { output: { watch: [{ event: 'report', path: 'out.md' }] } },
      'claude-opus-5-5',
      'batch execution cannot use output.watch',
    ],
    [
      'memory',
      { memory: { configMap: 'notes' } },
      'claude-opus-5-5',
      'batch execution cannot use memory: a batch run has no pod to mount it',
    ],
    ['the exec model', {}, 'exec', 'batch execution cannot use the exec model'],
    ['the exec model (any case, padded)', {}, ' Exec ', 'batch execution cannot use the exec model'],
    [
      'an opencode model',
      {},
      'opencode/anthropic/claude-sonnet-4-5',
      'batch execution cannot use model opencode/anthropic/claude-sonnet-4-5: its vendor has no batch API',
    ],
  ];
  for (const [name, spec, model, reason] of single) {
    it(`names ${name}`, () => {
      assert.equal(batchUnsupported(recipe(spec), model), reason);
    });
  }

  it('checks in the fixed order repos, skills, mcp_servers, conversation, tool_config, output.watch, exec, opencode', () => {
    // Every field set; each step removes the field reported before, so the next one in the order is named.
    const steps: readonly (readonly [Record<string, unknown>, string, string])[] = [
      [
        {
          resources: { ...repos, ...skills, ...mcp, ...conversation },
          tool_config: { a: 1 },
          output: { watch: [{ event: 'e', path: 'p' }] },
        },
        'exec',
        'batch execution cannot use resources.repos',
      ],
      [
        {
          resources: { ...skills, ...mcp, ...conversation },
          tool_config: { a: 1 },
          output: { watch: [{ event: 'e', path: 'p' }] },
        },
        'exec',
        'batch execution cannot use resources.skills',
      ],
      [
        {
          resources: { ...mcp, ...conversation },
          tool_config: { a: 1 },
          output: { watch: [{ event: 'e', path: 'p' }] },
        },
        'exec',
        'batch execution cannot use resources.mcp_servers',
      ],
      [
        {
          resources: { ...conversation },
          tool_config: { a: 1 },
          output: { watch: [{ event: 'e', path: 'p' }] },
        },
        'exec',
        'batch execution cannot use resources.conversation',
      ],
      [
        { tool_config: { a: 1 }, output: { watch: [{ event: 'e', path: 'p' }] } },
        'exec',
        'batch execution cannot use tool_config',
      ],
      [{ output: { watch: [{ event: 'e', path: 'p' }] } }, 'exec', 'batch execution cannot use output.watch'],
      [{}, 'exec', 'batch execution cannot use the exec model'],
      [{}, 'opencode/x', 'batch execution cannot use model opencode/x: its vendor has no batch API'],
      [{}, 'claude-opus-5-5', ''],
    ];
    for (const [spec, model, reason] of steps) {
      assert.equal(batchUnsupported(recipe(spec), model) ?? '', reason, reason);
    }
  });

  it('a recipe field wins over an opencode model', () => {
    assert.equal(
      batchUnsupported(recipe({ output: { watch: [{ event: 'e', path: 'p' }] } }), 'opencode/x'),
      'batch execution cannot use output.watch',
    );
  });
});

// ------------------------------------------------------------------------------------------------ API key

describe('apiKeySecretKey', () => {
  it('is the vendor env name when the recipe maps nothing (or there is no recipe)', () => {
    for (const p of PROVIDERS) {
      assert.equal(apiKeySecretKey(recipe(), p), API_KEY_ENV[p]);
      assert.equal(apiKeySecretKey(null, p), API_KEY_ENV[p]);
    }
    assert.equal(apiKeySecretKey(null, 'anthropic'), 'ANTHROPIC_API_KEY');
    assert.equal(apiKeySecretKey(null, 'openai'), 'OPENAI_API_KEY');
    assert.equal(apiKeySecretKey(null, 'gemini'), 'GEMINI_API_KEY');
  });

  it('is the ref of the resources.secrets entry named after the provider env var', () => {
    const d = recipe({
      resources: {
        secrets: [
          { name: 'ANTHROPIC_API_KEY', ref: 'team-anthropic' },
          { name: 'OPENAI_API_KEY', ref: 'team-openai' },
          { name: 'GEMINI_API_KEY', ref: 'team-gemini' },
        ],
      },
    });
    assert.equal(apiKeySecretKey(d, 'anthropic'), 'team-anthropic');
    assert.equal(apiKeySecretKey(d, 'openai'), 'team-openai');
    assert.equal(apiKeySecretKey(d, 'gemini'), 'team-gemini');
  });

  it('maps only the provider it is asked for', () => {
    const d = recipe({ resources: { secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'team-anthropic' }] } });
    assert.equal(apiKeySecretKey(d, 'anthropic'), 'team-anthropic');
    assert.equal(apiKeySecretKey(d, 'openai'), 'OPENAI_API_KEY');
    assert.equal(apiKeySecretKey(d, 'gemini'), 'GEMINI_API_KEY');
  });

  it('matches on the env name, never on the ref', () => {
    const d = recipe({
      resources: {
        secrets: [
          { name: 'CLAUDE_KEY', ref: 'claude-key' },
          { name: 'OTHER', ref: 'OPENAI_API_KEY' },
          { name: 'anthropic_api_key', ref: 'lowercase' },
        ],
      },
    });
    assert.equal(apiKeySecretKey(d, 'anthropic'), 'ANTHROPIC_API_KEY');
    assert.equal(apiKeySecretKey(d, 'openai'), 'OPENAI_API_KEY');
  });

  it('an empty ref falls back to the env name; the first entry of the name wins', () => {
    assert.equal(
      apiKeySecretKey(recipe({ resources: { secrets: [{ name: 'GEMINI_API_KEY', ref: '' }] } }), 'gemini'),
      'GEMINI_API_KEY',
    );
    const twice = recipe({
      resources: {
        secrets: [
          { name: 'OPENAI_API_KEY', ref: 'first' },
          { name: 'OPENAI_API_KEY', ref: 'second' },
        ],
      },
    });
    assert.equal(apiKeySecretKey(twice, 'openai'), 'first');
  });
});

// ------------------------------------------------------------------------------------------------ request

describe('batchRequestFor', () => {
  const UID = '0f8e1c2a-5b6d-4e7f-8a9b-0c1d2e3f4a5b';

  it('builds the one request: custom id from the uid, ns/name label, model, rendered prompt, default maxTokens', () => {
    const a = agentOf('review-42', { uid: UID, parameters: { thing: 'the review', unused: 'x' } });
    const req = batchRequestFor(a, recipe(), 'claude-opus-5-5');
    assert.deepEqual(req, {
      customId: `run-${UID}`,
      label: `${NS}/review-42`,
      model: 'claude-opus-5-5',
      prompt: 'Do the review',
      maxTokens: 16000,
    });
    assert.equal(req.customId, runCustomId(UID));
    assert.equal('schema' in req, false, 'no schema field without output.schema');
  });

  it('a system prompt is rendered and sent before the prompt, a blank line between (issue 10 §1)', () => {
    const a = agentOf('a', { parameters: { thing: 'X' } });
    assert.equal(
      batchRequestFor(a, recipe({ prompt: 'Do {thing}', systemPrompt: 'You care about {thing}.' }), 'gpt-5')
        .prompt,
      'You care about X.\n\nDo X',
    );
    assert.equal(
      batchRequestFor(a, recipe({ prompt: 'Do {thing}', systemPrompt: ' ' }), 'gpt-5').prompt,
      'Do X',
    );
  });

  it('renders every {param}, leaves unknown tokens verbatim, and sends the model it is given', () => {
    const a = agentOf('a', { parameters: { thing: 'X', place: 'Y' } });
    const d = recipe({ prompt: 'Do {thing} in {place}; keep {unknown} and {} as is. {thing}!' });
    const req = batchRequestFor(a, d, 'gpt-5');
    assert.equal(req.prompt, 'Do X in Y; keep {unknown} and {} as is. X!');
    assert.equal(req.model, 'gpt-5');
    assert.equal(req.customId, 'run-uid-a');
    assert.equal(req.label, 'team/a');
  });

  it('without parameters the template is sent as written', () => {
    assert.equal(batchRequestFor(agentOf('a'), recipe(), 'o3').prompt, 'Do {thing}');
  });

  it('takes maxTokens from spec.batch', () => {
    const req = batchRequestFor(agentOf('a'), recipe({ batch: { maxTokens: 512 } }), 'gemini-2.5-pro');
    assert.equal(req.maxTokens, 512);
  });

  it('carries output.schema only when it is set', () => {
    const schema = {
      type: 'object',
      properties: { verdict: { type: 'string' } },
      required: ['verdict'],
    };
    const a = agentOf('a', { uid: UID, parameters: { thing: 'it' } });
    assert.deepEqual(batchRequestFor(a, recipe({ output: { schema } }), 'claude-opus-5-5'), {
      customId: `run-${UID}`,
      label: 'team/a',
      model: 'claude-opus-5-5',
      prompt: 'Do it',
      maxTokens: 16000,
      schema,
    });
  });

  it('a uid with characters outside [a-zA-Z0-9_-] is made safe by runCustomId', () => {
    const req = batchRequestFor(agentOf('a', { uid: 'a.b/c d' }), recipe(), 'claude-opus-5-5');
    assert.equal(req.customId, 'run-a-b-c-d');
    assert.match(req.customId, /^[a-zA-Z0-9_-]{1,64}$/);
  });
});

describe('renderContextFor', () => {
  it('session id = uid, the resolved model, the rendered prompt, structured iff a schema, rounded duration', () => {
    const a = agentOf('a', { uid: 'u-1', parameters: { thing: 'X' } });
    assert.deepEqual(renderContextFor(a, recipe({ model: 'gemini-2.5-pro' }), 1234.6), {
      sessionId: 'u-1',
      model: 'gemini-2.5-pro',
      prompt: 'Do X',
      structured: false,
      durationMs: 1235,
    });
    assert.deepEqual(renderContextFor(a, recipe({ output: { schema: { type: 'object' } } }), 10), {
      sessionId: 'u-1',
      model: DEFAULT_MODEL,
      prompt: 'Do X',
      structured: true,
      durationMs: 10,
    });
  });

  it('the Agent model overrides the recipe; a negative duration is 0', () => {
    const a = agentOf('a', { model: 'o3' });
    const ctx = renderContextFor(a, recipe({ model: 'claude-opus-5-5' }), -5);
    assert.equal(ctx.model, 'o3');
    assert.equal(ctx.durationMs, 0);
  });

  it('without a definition: empty prompt, not structured, the Agent or default model', () => {
    assert.deepEqual(renderContextFor(agentOf('a'), null, 0), {
      sessionId: 'uid-a',
      model: DEFAULT_MODEL,
      prompt: '',
      structured: false,
      durationMs: 0,
    });
    assert.equal(renderContextFor(agentOf('a', { model: 'gpt-5' }), null, 0).model, 'gpt-5');
  });
});

// ------------------------------------------------------------------------------------------------ select

describe('selectLines', () => {
  // Claude stream-JSON lines as the Anthropic renderer produces them: init, assistant, result.
  const ctx = {
    sessionId: 'uid-a',
    model: 'claude-opus-5-5',
    prompt: 'Do X',
    structured: false,
    durationMs: 1000,
  };
  const rendered = renderClaudeLines(
    {
      type: 'succeeded',
      message: { content: [{ type: 'text', text: 'hello world' }], stop_reason: 'end_turn' },
    },
    ctx,
  );
  const [init, assistant, result] = rendered.lines as [string, string, string];
  const claude = [init, assistant, result];

  const sel = (...entries: SelectEntry[]): SelectEntry[] => entries;

  it('the renderer fixture has the three Claude lines', () => {
    assert.equal(rendered.kind, 'succeeded');
    assert.equal(rendered.lines.length, 3);
    assert.equal((JSON.parse(init) as { type: string }).type, 'system');
    assert.equal((JSON.parse(assistant) as { type: string }).type, 'assistant');
    assert.equal((JSON.parse(result) as { type: string }).type, 'result');
  });

  it('an empty select passes every line, unparseable ones included, in order (a copy)', () => {
    const lines = [init, 'not json', assistant, '', result, '{'];
    for (const p of PROVIDERS) {
      const out = selectLines(p, [], lines);
      assert.deepEqual(out, lines, p);
      assert.notEqual(out, lines, 'a new array');
    }
  });

  it('a select on result passes only the Claude result line', () => {
    assert.deepEqual(selectLines('anthropic', sel({ event: 'result' }), claude), [result]);
  });

  it('a select on message passes only the assistant line', () => {
    assert.deepEqual(selectLines('anthropic', sel({ event: 'message' }), claude), [assistant]);
  });

  it('several entries pass the union, in line order', () => {
    assert.deepEqual(selectLines('anthropic', sel({ event: 'result' }, { event: 'message' }), claude), [
      assistant,
      result,
    ]);
  });

  it('unparseable or unclassified lines never pass a non-empty select', () => {
    const junk = ['not json', '', '{', '42', 'null', '"result"', '[]', '{"no":"type"}'];
    for (const event of ['result', 'message', 'tool_call', 'tool_result', 'usage'] as const) {
      for (const p of PROVIDERS) {
        assert.deepEqual(selectLines(p, sel({ event }), junk), [], `${p} ${event}`);
      }
    }
    // The init line is valid JSON but unclassified: no selector passes it.
    for (const event of ['result', 'message', 'tool_call', 'tool_result', 'usage'] as const) {
      assert.deepEqual(selectLines('anthropic', sel({ event }), [init]), [], event);
    }
  });

  it('contains filters on the event text', () => {
    assert.deepEqual(selectLines('anthropic', sel({ event: 'message', contains: 'hello' }), claude), [
      assistant,
    ]);
    assert.deepEqual(selectLines('anthropic', sel({ event: 'message', contains: 'goodbye' }), claude), []);
    assert.deepEqual(selectLines('anthropic', sel({ event: 'result', contains: 'world' }), claude), [result]);
    assert.deepEqual(selectLines('anthropic', sel({ event: 'result', contains: 'nope' }), claude), []);
    // An empty contains filters nothing.
    assert.deepEqual(selectLines('anthropic', sel({ event: 'result', contains: '' }), claude), [result]);
  });

  it('contains never matches an event without text', () => {
    const usage = JSON.stringify({ type: 'system', subtype: 'token_usage' });
    assert.deepEqual(selectLines('anthropic', sel({ event: 'usage' }), [usage]), [usage]);
    assert.deepEqual(selectLines('anthropic', sel({ event: 'usage', contains: 'x' }), [usage]), []);
  });

  it('tool filters tool calls by name', () => {
    const bash = JSON.stringify({
      type: 'assistant',
      message: { content: [{ type: 'tool_use', name: 'Bash', input: {} }] },
    });
    const read = JSON.stringify({
      type: 'assistant',
      message: { content: [{ type: 'tool_use', name: 'Read', input: {} }] },
    });
    assert.deepEqual(selectLines('anthropic', sel({ event: 'tool_call', tool: 'Bash' }), [bash, read]), [
      bash,
    ]);
    assert.deepEqual(selectLines('anthropic', sel({ event: 'tool_call' }), [bash, read]), [bash, read]);
    assert.deepEqual(selectLines('anthropic', sel({ event: 'tool_call', tool: '' }), [bash, read]), [
      bash,
      read,
    ]);
  });

  it('classifies by the provider CLI: Codex rules for openai', () => {
    const message = JSON.stringify({ type: 'item.completed', item: { type: 'agent_message', text: 'hi' } });
    const usage = JSON.stringify({ type: 'turn.completed', usage: {} });
    const started = JSON.stringify({ type: 'thread.started', thread_id: 't' });
    const lines = [started, message, usage, result];
    assert.deepEqual(selectLines('openai', sel({ event: 'message' }), lines), [message]);
    assert.deepEqual(selectLines('openai', sel({ event: 'usage' }), lines), [usage]);
    // The Claude result line means nothing to the Codex rules.
    assert.deepEqual(selectLines('openai', sel({ event: 'result' }), lines), []);
    assert.deepEqual(selectLines('openai', sel({ event: 'message', contains: 'hi' }), lines), [message]);
    assert.deepEqual(selectLines('openai', sel({ event: 'message', contains: 'ho' }), lines), []);
  });

  it('classifies by the provider CLI: Gemini rules for gemini', () => {
    const init = JSON.stringify({ type: 'init', session_id: 's', model: 'gemini-2.5-pro' });
    const message = JSON.stringify({ type: 'message', role: 'assistant', content: 'the answer' });
    const done = JSON.stringify({ type: 'result', status: 'success' });
    const lines = [init, message, done];
    assert.deepEqual(selectLines('gemini', sel({ event: 'result' }), lines), [done]);
    assert.deepEqual(selectLines('gemini', sel({ event: 'message', contains: 'answer' }), lines), [message]);
    // A Claude assistant line is not a Gemini message.
    assert.deepEqual(selectLines('gemini', sel({ event: 'message' }), [assistant]), []);
  });
});

// ------------------------------------------------------------------------------------------------ finalizer

describe('batchFinalizerIndex', () => {
  it('is the index of the batch finalizer, or -1', () => {
    assert.equal(batchFinalizerIndex(agentOf('a')), -1);
    assert.equal(batchFinalizerIndex(agentOf('a', { finalizers: [] })), -1);
    assert.equal(batchFinalizerIndex(agentOf('a', { finalizers: [BATCH_FINALIZER] })), 0);
    assert.equal(
      batchFinalizerIndex(agentOf('a', { finalizers: ['example.com/other', BATCH_FINALIZER] })),
      1,
    );
    assert.equal(
      batchFinalizerIndex(agentOf('a', { finalizers: ['x/a', 'x/b', BATCH_FINALIZER, 'x/c'] })),
      2,
    );
    assert.equal(batchFinalizerIndex(agentOf('a', { finalizers: ['example.com/other'] })), -1);
    assert.equal(
      batchFinalizerIndex(agentOf('a', { finalizers: ['agents.re-cinq.com/batch-cleanup-old'] })),
      -1,
    );
  });
});
