import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isStrictlyBelow, normalizeAbsolute, parseInitConfig } from './config.ts';

describe('normalizeAbsolute', () => {
  it('normalizes dots and slashes', () => {
    assert.equal(normalizeAbsolute('/a/./b//c/../d/'), '/a/b/d');
    assert.equal(normalizeAbsolute('/../..'), '/');
    assert.equal(normalizeAbsolute('/'), '/');
  });
  it('rejects relative paths', () => {
    assert.equal(normalizeAbsolute('a/b'), undefined);
    assert.equal(normalizeAbsolute(''), undefined);
  });
});

describe('isStrictlyBelow', () => {
  it('is true only strictly below a non-root root', () => {
    assert.equal(isStrictlyBelow('/w/a', '/w'), true);
    assert.equal(isStrictlyBelow('/w', '/w'), false);
    assert.equal(isStrictlyBelow('/wx/a', '/w'), false);
    assert.equal(isStrictlyBelow('/a', '/'), false);
  });
});

describe('parseInitConfig', () => {
  it('defaults to /agent and /workspace with empty lists', () => {
    const r = parseInitConfig({});
    assert.deepEqual(r, {
      ok: true,
      value: {
        home: '/agent',
        workspace: '/workspace',
        model: '',
        repos: [],
        skills: [],
        skillsSource: '',
        conversation: { source: '', id: '', pin: '', authEnv: '' },
        cliVersion: undefined,
      },
    });
  });

  it('reads the run env', () => {
    const r = parseInitConfig({
      HOME: '/agent/',
      WORKSPACE_DIR: '/data/ws',
      AGENT_MODEL: 'gpt-5-codex',
      AGENT_REPOS: JSON.stringify([
        { name: 'a', url: 'o/a', ref: 'v1', path: 'x', token_secret: 'GH_TOKEN', extra: 1 },
      ]),
      AGENT_SKILLS: '["one","two"]',
      AGENT_SKILLS_SOURCE: ' https://skills.example ',
      AGENT_CONVERSATION_SOURCE: 'https://c.example/conv',
      AGENT_CONVERSATION_ID: 'id1',
      AGENT_CONVERSATION_PIN: 'pin1',
      AGENT_CONVERSATION_AUTH: 'CONV-AUTH',
    });
    assert.equal(r.ok, true);
    if (!r.ok) return;
    assert.equal(r.value.home, '/agent');
    assert.equal(r.value.workspace, '/data/ws');
    assert.equal(r.value.model, 'gpt-5-codex');
    assert.equal(r.value.repos[0]?.token_secret, 'GH_TOKEN');
    assert.deepEqual(r.value.skills, ['one', 'two']);
    assert.equal(r.value.skillsSource, 'https://skills.example');
    assert.deepEqual(r.value.conversation, {
      source: 'https://c.example/conv',
      id: 'id1',
      pin: 'pin1',
      authEnv: 'CONV-AUTH',
    });
  });

  it('lets overrides win over the env', () => {
    const r = parseInitConfig(
      { HOME: '/agent', WORKSPACE_DIR: '/workspace' },
      { home: '/tmp/h', workspace: '/tmp/w' },
    );
    assert.equal(r.ok && r.value.home, '/tmp/h');
    assert.equal(r.ok && r.value.workspace, '/tmp/w');
  });

  it('refuses the filesystem root and relative dirs (they get chowned recursively)', () => {
    assert.match(errorOf(parseInitConfig({ HOME: '/' })), /HOME must not be the filesystem root/);
    assert.match(
      errorOf(parseInitConfig({ WORKSPACE_DIR: '/x/..' })),
      /WORKSPACE_DIR must not be the filesystem root/,
    );
    assert.match(errorOf(parseInitConfig({ HOME: 'agent' })), /HOME must be an absolute path/);
  });

  it('fails on malformed lists instead of ignoring them', () => {
    assert.match(errorOf(parseInitConfig({ AGENT_REPOS: '[{' })), /AGENT_REPOS is not valid JSON/);
    assert.match(
      errorOf(parseInitConfig({ AGENT_REPOS: '[{"name":"a"}]' })),
      /AGENT_REPOS is malformed at 0\.url/,
    );
    assert.match(errorOf(parseInitConfig({ AGENT_REPOS: '{}' })), /AGENT_REPOS is malformed/);
    assert.match(errorOf(parseInitConfig({ AGENT_SKILLS: '[1]' })), /AGENT_SKILLS is malformed/);
  });

  it('treats empty and null lists as empty', () => {
    const r = parseInitConfig({ AGENT_REPOS: '', AGENT_SKILLS: 'null' });
    assert.equal(r.ok, true);
    if (r.ok) assert.deepEqual([r.value.repos, r.value.skills], [[], []]);
  });
});

function errorOf(r: { ok: boolean; error?: string }): string {
  assert.equal(r.ok, false);
  return r.error ?? '';
}
