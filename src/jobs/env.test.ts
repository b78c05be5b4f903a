import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REALTIME_ENV_NAMES, SERVER_ENV_NAMES } from '../shared/reserved-env.ts';
import {
  clampDeadlineMinutes,
  deadlineAt,
  deadlineMs,
  type EnvVar,
  headerEnvName,
  isReservedEnvName,
  RESERVED_ENV_NAMES,
  type RunEnvInput,
  runEnv,
} from './env.ts';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0); // 1795953600000
const PATH = '/agent/.local/bin:/agent/.opencode/bin:/usr/local/bin:/usr/bin:/bin:/agent/bin';
const S = (name: string, key: string): EnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: 'agent-secrets', key, optional: false } },
});
const L = (name: string, value: string): EnvVar => ({ name, value });
const F = (name: string, fieldPath: string): EnvVar => ({ name, valueFrom: { fieldRef: { fieldPath } } });

const minimal: RunEnvInput = { agentName: 'a1', stationName: 's1', model: 'claude-opus-5-5', now: NOW };

describe('runEnv', () => {
  it('emits the always-present variables in order for a minimal run', () => {
    assert.deepEqual(runEnv(minimal), [
      L('AGENT_SINKS', '[]'),
      L('AGENT_REPOS', '[]'),
      L('AGENT_SKILLS', '[]'),
      L('AGENT_SKILLS_SOURCE', ''),
      L('AGENT_CONVERSATION_AUTH', ''),
      L('AGENT_CONVERSATION_SOURCE', ''),
      L('AGENT_CONVERSATION_ID', ''),
      L('AGENT_CONVERSATION_PIN', ''),
      L('AGENT_DEADLINE_MS', '1790000'),
      L('AGENT_DEADLINE_AT', String(NOW + 1790000)),
      L('WORKSPACE_DIR', '/workspace'),
      L('AGENT_MODEL', 'claude-opus-5-5'),
      L('AGENT_NAME', 'a1'),
      L('STATION_NAME', 's1'),
      L('TASK_ID', ''),
      F('POD_NAME', 'metadata.name'),
      F('POD_NAMESPACE', 'metadata.namespace'),
      L('HOME', '/agent'),
      L('PATH', PATH),
    ]);
  });

  it('emits every optional variable in the reference order', () => {
    const env = runEnv({
      agentName: 'run-1',
      stationName: 'bugs',
      taskId: 'T-9',
      targetRepo: 'acme/app',
      branch: 'fix/x',
      parameters: { ticket: 'ABC-1' },
      model: 'gpt-6-sol',
      deadlineMinutes: 5,
      now: NOW,
      resources: {
        env: [{ name: 'LOG_LEVEL', value: 'debug' }],
        secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }],
        mcp_servers: [
          {
            name: 'lore',
            transport: 'http',
            url: 'https://lore.example/mcp',
            headers_secret: 'lore-mcp-auth',
          },
        ],
        repos: [
          { name: 'app', url: 'acme/app', ref: 'main', token_secret: 'GIT_TOKEN' },
          { name: 'lib', url: 'acme/lib', path: 'vendor/lib', token_secret: 'LIB_TOKEN' },
        ],
        skills: ['review'],
        skills_source: 'https://skills.example',
        conversation: { source: 'https://conv.example', id: 'c1', pin: 'p1', headers_secret: 'CONV_AUTH' },
      },
      output: {
        sinks: [
          { type: 'http', url: 'https://sink.example', headers_secret: 'SINK_AUTH' },
          { type: 'file', path: '/workspace/out.jsonl' },
        ],
        select: [{ event: 'tool_call', tool: 'Bash' }],
        watch: [{ event: 'report', path: 'report.md' }],
      },
    });
    assert.deepEqual(env, [
      L(
        'AGENT_SINKS',
        '[{"type":"http","url":"https://sink.example","headers_secret":"SINK_AUTH"},{"type":"file","path":"/workspace/out.jsonl"}]',
      ),
      S('SINK_AUTH', 'SINK_AUTH'),
      S('LORE_MCP_AUTH', 'lore-mcp-auth'),
      L(
        'AGENT_REPOS',
        '[{"name":"app","url":"acme/app","ref":"main","token_secret":"GIT_TOKEN"},{"name":"lib","url":"acme/lib","path":"vendor/lib","token_secret":"LIB_TOKEN"}]',
      ),
      L('AGENT_SKILLS', '["review"]'),
      L('AGENT_SKILLS_SOURCE', 'https://skills.example'),
      S('CONV_AUTH', 'CONV_AUTH'),
      L('AGENT_CONVERSATION_AUTH', 'CONV_AUTH'),
      L('AGENT_CONVERSATION_SOURCE', 'https://conv.example'),
      L('AGENT_CONVERSATION_ID', 'c1'),
      L('AGENT_CONVERSATION_PIN', 'p1'),
      L('AGENT_DEADLINE_MS', '290000'),
      L('AGENT_DEADLINE_AT', String(NOW + 290000)),
      S('GIT_TOKEN', 'GIT_TOKEN'),
      S('LIB_TOKEN', 'LIB_TOKEN'),
      S('GH_TOKEN', 'GIT_TOKEN'),
      L('AGENT_SELECT', '[{"event":"tool_call","tool":"Bash"}]'),
      L('AGENT_WATCH', '[{"event":"report","path":"report.md"}]'),
      L('WORKSPACE_DIR', '/workspace'),
      L('AGENT_PARAMETERS', '{"ticket":"ABC-1"}'),
      L('TARGET_REPO', 'acme/app'),
      L('BRANCH_NAME', 'fix/x'),
      L('AGENT_MODEL', 'gpt-6-sol'),
      L('AGENT_NAME', 'run-1'),
      L('STATION_NAME', 'bugs'),
      L('TASK_ID', 'T-9'),
      F('POD_NAME', 'metadata.name'),
      F('POD_NAMESPACE', 'metadata.namespace'),
      L('LOG_LEVEL', 'debug'),
      S('ANTHROPIC_API_KEY', 'anthropic'),
      L('HOME', '/agent'),
      L('PATH', PATH),
    ]);
  });

  it('drops or blanks every reserved name a recipe supplies, AGENT_DEADLINE_AT included', () => {
    const env = runEnv({
      ...minimal,
      targetRepo: 'o/r',
      branch: 'b',
      parameters: { p: '1' },
      resources: {
        env: [
          { name: 'AGENT_DEADLINE_AT', value: '0' },
          { name: 'TARGET_REPO', value: 'other' },
          { name: 'AGENT_SELECT', value: '[]' },
          { name: 'HOME', value: '/root' },
          { name: 'PATH', value: '/evil' },
          { name: 'KEEP', value: 'yes' },
        ],
        secrets: [
          { name: 'AGENT_DEADLINE_MS', ref: 'x' },
          { name: 'AGENT_DEADLINE_AT', ref: 'x' },
          { name: 'AGENT_MODEL', ref: 'x' },
        ],
        mcp_servers: [{ name: 'm', transport: 'sse', url: 'https://m', headers_secret: 'agent-sinks' }],
        repos: [{ name: 'r', url: 'o/r', token_secret: 'PATH' }],
        conversation: { source: 'https://c', headers_secret: 'AGENT_NAME' },
      },
      output: {
        sinks: [{ type: 'http', url: 'https://s', headers_secret: 'HOME' }],
        select: [{ event: 'result' }],
        watch: [{ event: 'e', path: 'p' }],
      },
    });
    const names = env.map((e) => e.name);
    for (const name of RESERVED_ENV_NAMES) {
      // The realtime and server names, the input files and the trace context belong to the agent container alone.
      const agentOnly = [
        'AGENT_PROMPT_FILE',
        'AGENT_SYSTEM_PROMPT_FILE',
        'AGENT_PARAMETERS_FILE',
        'AGENT_OTLP_TRACES_ENDPOINT',
        'TRACEPARENT',
        'AGENT_CLI_SETTINGS',
      ];
      const want =
        REALTIME_ENV_NAMES.has(name) || SERVER_ENV_NAMES.has(name) || agentOnly.includes(name) ? 0 : 1;
      assert.equal(names.filter((n) => n === name).length, want, `${name} appears ${want} time(s)`);
    }
    assert.deepEqual(env[0], L('AGENT_SINKS', '[{"type":"http","url":"https://s","headers_secret":""}]'));
    assert.deepEqual(
      env.find((e) => e.name === 'AGENT_REPOS'),
      L('AGENT_REPOS', '[{"name":"r","url":"o/r","token_secret":""}]'),
    );
    assert.deepEqual(
      env.find((e) => e.name === 'AGENT_CONVERSATION_AUTH'),
      L('AGENT_CONVERSATION_AUTH', ''),
    );
    assert.ok(!names.includes('GH_TOKEN'), 'no GH_TOKEN alias from a reserved token name');
    assert.ok(
      env.every((e) => !('valueFrom' in e) || !('secretKeyRef' in e.valueFrom)),
      'no secret injected',
    );
    assert.deepEqual(
      env.find((e) => e.name === 'KEEP'),
      L('KEEP', 'yes'),
    );
    assert.deepEqual(
      env.find((e) => e.name === 'AGENT_DEADLINE_AT'),
      L('AGENT_DEADLINE_AT', String(NOW + 1790000)),
    );
  });

  it('injects each secret env name once and never aliases over an injected GH_TOKEN', () => {
    const env = runEnv({
      ...minimal,
      resources: {
        secrets: [
          { name: 'SHARED', ref: 'later' },
          { name: 'GH_TOKEN', ref: 'gh' },
          { name: 'OTHER', ref: 'o' },
        ],
        mcp_servers: [
          { name: 'a', transport: 'http', headers_secret: 'shared' },
          { name: 'b', transport: 'http', headers_secret: 'SHARED' },
        ],
        repos: [
          { name: 'r0', url: 'o/r0' },
          { name: 'r1', url: 'o/r1', token_secret: 'GH_TOKEN' },
          { name: 'r2', url: 'o/r2', token_secret: 'SHARED' },
        ],
        conversation: { headers_secret: 'SHARED' },
      },
      output: {
        sinks: [
          { type: 'http', headers_secret: 'SHARED' },
          { type: 'http', headers_secret: 'SHARED' },
          { type: 'stdout', headers_secret: 'NOT_HTTP' },
        ],
      },
    });
    const secrets = env.filter((e) => 'valueFrom' in e && 'secretKeyRef' in e.valueFrom);
    assert.deepEqual(secrets, [S('SHARED', 'SHARED'), S('GH_TOKEN', 'GH_TOKEN'), S('OTHER', 'o')]);
    assert.deepEqual(
      env.find((e) => e.name === 'AGENT_CONVERSATION_AUTH'),
      L('AGENT_CONVERSATION_AUTH', 'SHARED'),
    );
  });

  it('keeps duplicate literal env names (reference behaviour) and omits empty optional values', () => {
    const env = runEnv({
      ...minimal,
      targetRepo: '',
      branch: '',
      parameters: {},
      resources: { env: [{ name: 'DUP', value: '1' }], secrets: [{ name: 'DUP', ref: 'k' }] },
      output: { select: [], watch: [] },
    });
    const names = env.map((e) => e.name);
    for (const absent of ['TARGET_REPO', 'BRANCH_NAME', 'AGENT_PARAMETERS', 'AGENT_SELECT', 'AGENT_WATCH']) {
      assert.ok(!names.includes(absent), `${absent} omitted`);
    }
    assert.deepEqual(
      env.filter((e) => e.name === 'DUP'),
      [L('DUP', '1'), S('DUP', 'k')],
    );
  });
});

describe('deadlines', () => {
  const cases: ReadonlyArray<readonly [number | undefined, number]> = [
    [30, 1790000],
    [1, 50000],
    [0, 50000],
    [-7, 50000],
    [2.9, 110000],
    [undefined, 1790000],
    [Number.NaN, 1790000],
    [2147483647, 2147483647 * 60000 - 10000],
  ];
  for (const [minutes, ms] of cases) {
    it(`deadlineMinutes ${minutes} → AGENT_DEADLINE_MS ${ms}, AGENT_DEADLINE_AT now + ${ms}`, () => {
      assert.equal(deadlineMs(minutes), ms);
      assert.equal(deadlineAt(NOW, minutes), NOW + ms);
    });
  }
  it('clamps to at least one minute', () => {
    assert.equal(clampDeadlineMinutes(0), 1);
    assert.equal(clampDeadlineMinutes(45), 45);
  });
});

describe('reserved names and header env names', () => {
  it('reserves the 23 reference names plus AGENT_DEADLINE_AT, the input files, the trace context, the CLI settings, the 7 realtime names and the 6 server names', () => {
    assert.equal(RESERVED_ENV_NAMES.size, 43);
    assert.ok(isReservedEnvName('AGENT_CLI_SETTINGS'));
    assert.ok(isReservedEnvName('AGENT_SYSTEM_PROMPT_FILE'));
    assert.ok(isReservedEnvName('TRACEPARENT'));
    assert.ok(isReservedEnvName('AGENT_OTLP_TRACES_ENDPOINT'));
    assert.ok(isReservedEnvName('AGENT_PROMPT_FILE'));
    assert.ok(isReservedEnvName('AGENT_PARAMETERS_FILE'));
    assert.equal(REALTIME_ENV_NAMES.size, 7);
    for (const name of REALTIME_ENV_NAMES) assert.ok(isReservedEnvName(name), name);
    assert.equal(SERVER_ENV_NAMES.size, 6);
    assert.ok(isReservedEnvName('AGENT_SERVER_API_KEY_FILE'));
    for (const name of SERVER_ENV_NAMES) assert.ok(isReservedEnvName(name), name);
    assert.ok(isReservedEnvName('AGENT_DEADLINE_AT'));
    assert.ok(isReservedEnvName('POD_NAMESPACE'));
    assert.ok(!isReservedEnvName('home'));
    assert.ok(!isReservedEnvName('GH_TOKEN'));
  });
  const names: ReadonlyArray<readonly [string, string]> = [
    ['lore-mcp-auth', 'LORE_MCP_AUTH'],
    ['already_OK9', 'ALREADY_OK9'],
    ['a.b/c d', 'A_B_C_D'],
  ];
  for (const [secret, want] of names) {
    it(`headerEnvName(${secret}) = ${want}`, () => assert.equal(headerEnvName(secret), want));
  }
});
