import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgentDefinition } from './agent-definition.ts';
import { storedMeta } from './test-fixtures.ts';

const def = (spec: unknown) => ({ metadata: storedMeta('def1'), spec });

function ok(spec: unknown) {
  const r = parseAgentDefinition(def(spec));
  if (!r.ok) assert.fail(`expected ok, got ${r.error}`);
  return r.value.spec;
}

function bad(spec: unknown): string {
  const r = parseAgentDefinition(def(spec));
  assert.equal(r.ok, false, `expected an error for ${JSON.stringify(spec)}`);
  return r.ok ? '' : r.error;
}

describe('parseAgentDefinition', () => {
  it('defaults every absent part', () => {
    assert.deepEqual(ok({ prompt: 'Do {x}' }), {
      prompt: 'Do {x}',
      allowed_tools: [],
      disallowed_tools: [],
      permission_mode: 'auto',
      resources: { env: [], secrets: [], mcp_servers: [], repos: [], skills: [] },
      sidecars: [],
      dependencies: [],
      output: { select: [], sinks: [], watch: [] },
      execution: 'job',
      batch: { maxTokens: 16000, timeoutMinutes: 1440, onTimeout: 'fail' },
      server: { concurrency: 4, requestTimeoutSeconds: 300 },
    });
  });

  it('reads a full recipe with snake_case wire names', () => {
    const spec = {
      description: 'd',
      model: 'claude-opus-5-5',
      prompt: 'p',
      allowed_tools: ['Read'],
      disallowed_tools: ['Bash'],
      permission_mode: 'bypass',
      max_turns: 5,
      resources: {
        env: [{ name: 'A', value: '1' }],
        secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }],
        mcp_servers: [
          { name: 'm', transport: 'http', url: 'https://m.example', headers_secret: 'm-auth' },
          { name: 's', transport: 'stdio', command: 'srv', args: ['-v'] },
        ],
        repos: [
          { name: 'r', url: 'https://git.example/r.git', ref: 'main', path: 'src', token_secret: 'gh' },
        ],
        skills: ['one'],
        skills_source: 'https://skills.example',
        conversation: { source: 'https://c.example', id: 'c1', pin: 'c2', headers_secret: 'c-auth' },
      },
      sidecars: [
        {
          name: 'search',
          image: 'ghcr.io/acme/search:1',
          env: [{ name: 'MODE', value: 'fast' }],
          secrets: [{ name: 'TOKEN', ref: 'search-token' }],
          ports: [{ name: 'http', containerPort: 8080 }],
          resources: { limits: { memory: '128Mi' } },
          mcp: { port: 7070, path: '/v1/mcp' },
        },
      ],
      output: {
        format: 'stream-json',
        schema: { type: 'object', properties: { a: { type: 'string' } } },
        select: [{ event: 'tool_call', tool: 'Bash', role: 'assistant', contains: 'x' }],
        sinks: [
          { type: 'http', url: 'https://h.example', headers_secret: 'h' },
          { type: 'file', path: '/tmp/x' },
        ],
        watch: [{ event: 'report', path: 'out/report.md' }],
      },
      tool_config: { command: ['bash', '-c', 'echo hi'], nested: { any: [1, 2] } },
      execution: 'batch',
      batch: { maxTokens: 100, timeoutMinutes: 60, onTimeout: 'fallback' },
      server: { apiKeySecret: 'key', concurrency: 2, requestTimeoutSeconds: 30 },
      dependencies: [{ service: 'db', port: 5432, timeoutSeconds: 30 }, { service: 'cache' }],
    };
    assert.deepEqual(ok(spec), spec);
  });

  it('reads unknown enum strings as the first member', () => {
    const s = ok({
      prompt: 'p',
      permission_mode: 'yolo',
      execution: 'warp',
      batch: { onTimeout: 'retry' },
      resources: { mcp_servers: [{ name: 'm', transport: 'carrier-pigeon' }] },
      output: { format: 'xml', sinks: [{ type: 'kafka' }], select: [{ event: 'result', role: 'system' }] },
    });
    assert.equal(s.permission_mode, 'auto');
    assert.equal(s.execution, 'job');
    assert.equal(s.batch.onTimeout, 'fail');
    assert.equal(s.resources.mcp_servers[0]?.transport, 'stdio');
    assert.equal(s.output.format, 'text');
    assert.equal(s.output.sinks[0]?.type, 'stdout');
    assert.equal(s.output.select[0]?.role, 'assistant');
  });

  it('drops select entries with an unknown event instead of widening them to tool_call', () => {
    const s = ok({
      prompt: 'p',
      output: { select: [{ event: 'telepathy' }, { event: 'usage' }, { event: 'message', contains: 'ok' }] },
    });
    assert.deepEqual(s.output.select, [{ event: 'usage' }, { event: 'message', contains: 'ok' }]);
    assert.deepEqual(ok({ prompt: 'p', output: { select: [{ event: 'nope' }] } }).output.select, []);
  });

  it('fills batch defaults field by field', () => {
    assert.deepEqual(ok({ prompt: 'p', batch: { maxTokens: 5 } }).batch, {
      maxTokens: 5,
      timeoutMinutes: 1440,
      onTimeout: 'fail',
    });
  });

  it('rejects what is really invalid, naming the field', () => {
    assert.match(bad({}), /spec\.prompt/);
    assert.match(bad({ prompt: 1 }), /spec\.prompt/);
    assert.match(bad({ prompt: 'p', max_turns: 0 }), /spec\.max_turns/);
    assert.match(bad({ prompt: 'p', allowed_tools: 'Read' }), /spec\.allowed_tools/);
    assert.match(bad({ prompt: 'p', resources: { env: [{ name: 'A' }] } }), /spec\.resources\.env\.0\.value/);
    assert.match(
      bad({ prompt: 'p', resources: { secrets: [{ ref: 'k' }] } }),
      /spec\.resources\.secrets\.0\.name/,
    );
    assert.match(bad({ prompt: 'p', resources: { mcp_servers: [{ name: 'm' }] } }), /transport/);
    assert.match(
      bad({ prompt: 'p', resources: { repos: [{ name: 'r' }] } }),
      /spec\.resources\.repos\.0\.url/,
    );
    assert.match(bad({ prompt: 'p', output: { select: [{ tool: 'x' }] } }), /spec\.output\.select\.0\.event/);
    assert.match(bad({ prompt: 'p', output: { sinks: [{}] } }), /spec\.output\.sinks\.0\.type/);
    assert.match(bad({ prompt: 'p', output: { watch: [{ event: 'e' }] } }), /spec\.output\.watch\.0\.path/);
    assert.match(bad({ prompt: 'p', tool_config: [] }), /spec\.tool_config/);
    assert.match(bad({ prompt: 'p', batch: { timeoutMinutes: 0 } }), /spec\.batch\.timeoutMinutes/);
    assert.match(bad({ prompt: 'p', execution: 2 }), /spec\.execution/);
  });
});
