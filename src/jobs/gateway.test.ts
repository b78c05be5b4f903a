import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AgentDefinition, parseAgentDefinition } from '../api/index.ts';
import type { EnvVar } from './env.ts';
import { gatewayCredentialSecretName, gatewayEnv, gatewayGrant } from './gateway.ts';

function definition(_name = 'def', spec: Record<string, unknown> = {}): AgentDefinition {
  const r = parseAgentDefinition({
    metadata: {
      name: 'def',
      namespace: 'team',
      uid: 'uid-def',
      resourceVersion: '1',
      creationTimestamp: '2026-01-01T00:00:00Z',
    },
    spec: { prompt: 'Do it', ...spec },
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

const fromAgentSecrets = (name: string, key: string): EnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: 'agent-secrets', key, optional: false } },
});
const credential = (name: string, agent = 'fix-1'): EnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: `agent-gateway-${agent}`, key: 'credential', optional: false } },
});

describe('a run behind the model gateway (issue 28)', () => {
  it('every vendor key variable reads the run credential; base URLs name the gateway, before HOME and PATH', () => {
    const env: EnvVar[] = [
      { name: 'AGENT_MODEL', value: 'claude-sonnet-4-5' },
      { name: 'ANTHROPIC_BASE_URL', value: 'http://recipe-proxy:9000' },
      fromAgentSecrets('ANTHROPIC_API_KEY', 'anthropic'),
      fromAgentSecrets('OPENAI_API_KEY', 'openai'),
      fromAgentSecrets('CODEX_API_KEY', 'openai'),
      fromAgentSecrets('GEMINI_API_KEY', 'gemini'),
      fromAgentSecrets('GOOGLE_API_KEY', 'gemini'),
      fromAgentSecrets('GOOGLE_GENERATIVE_AI_API_KEY', 'gemini'),
      fromAgentSecrets('ANTHROPIC_AUTH_TOKEN', 'anthropic-token'),
      { name: 'OPENAI_API_KEY_NOTE', value: 'not a key variable' },
      fromAgentSecrets('GH_TOKEN', 'github'),
      { name: 'HOME', value: '/agent' },
      { name: 'PATH', value: '/bin' },
    ];
    assert.deepEqual(gatewayEnv(env, { url: 'http://agent-gateway.agents.svc:8080/' }, 'fix-1'), [
      { name: 'AGENT_MODEL', value: 'claude-sonnet-4-5' },
      credential('ANTHROPIC_API_KEY'),
      credential('OPENAI_API_KEY'),
      credential('CODEX_API_KEY'),
      credential('GEMINI_API_KEY'),
      credential('GOOGLE_API_KEY'),
      credential('GOOGLE_GENERATIVE_AI_API_KEY'),
      credential('ANTHROPIC_AUTH_TOKEN'),
      { name: 'OPENAI_API_KEY_NOTE', value: 'not a key variable' },
      fromAgentSecrets('GH_TOKEN', 'github'),
      { name: 'ANTHROPIC_BASE_URL', value: 'http://agent-gateway.agents.svc:8080/anthropic' },
      { name: 'OPENAI_BASE_URL', value: 'http://agent-gateway.agents.svc:8080/openai/v1' },
      { name: 'GOOGLE_GEMINI_BASE_URL', value: 'http://agent-gateway.agents.svc:8080/gemini' },
      { name: 'HOME', value: '/agent' },
      { name: 'PATH', value: '/bin' },
    ]);
  });

  it('a literal key in the recipe env is replaced too', () => {
    const got = gatewayEnv([{ name: 'OPENAI_API_KEY', value: 'sk-literal' }], { url: 'http://gw' }, 'fix-1');
    assert.deepEqual(got.slice(0, 1), [credential('OPENAI_API_KEY')]);
    assert.ok(!JSON.stringify(got).includes('sk-literal'));
  });

  it('the grant: per vendor the first key its recipe names, and the policy models', () => {
    const def = definition('def', {
      resources: {
        secrets: [
          { name: 'GH_TOKEN', ref: 'github' },
          { name: 'CODEX_API_KEY', ref: 'codex' },
          { name: 'OPENAI_API_KEY', ref: 'openai' },
          { name: 'ANTHROPIC_API_KEY', ref: 'anthropic' },
        ],
      },
    });
    assert.deepEqual(gatewayGrant(def, ['claude-*']), {
      keys: { openai: 'codex', anthropic: 'anthropic' },
      models: ['claude-*'],
    });
    assert.deepEqual(gatewayGrant(definition(), undefined), { keys: {} });
  });

  it('names the credential Secret after the Agent, within 253 characters', () => {
    assert.equal(gatewayCredentialSecretName('fix-1'), 'agent-gateway-fix-1');
    assert.ok(gatewayCredentialSecretName('x'.repeat(253)).length <= 253);
  });
});
