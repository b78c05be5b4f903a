import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_MODEL, resolveModel } from './model.ts';

const agent = (model?: string) => ({ spec: model === undefined ? {} : { model } });

describe('resolveModel', () => {
  it('defaults to claude-opus-5-5', () => {
    assert.equal(DEFAULT_MODEL, 'claude-opus-5-5');
    assert.equal(resolveModel(agent()), 'claude-opus-5-5');
    assert.equal(resolveModel(agent(), agent()), 'claude-opus-5-5');
  });

  it('prefers the Agent, then the definition', () => {
    assert.equal(resolveModel(agent('gpt-5'), agent('gemini-3-pro')), 'gpt-5');
    assert.equal(resolveModel(agent(), agent('gemini-3-pro')), 'gemini-3-pro');
    assert.equal(resolveModel(agent('gpt-5')), 'gpt-5');
  });

  it('treats empty strings as unset', () => {
    assert.equal(resolveModel(agent(''), agent('codex-x')), 'codex-x');
    assert.equal(resolveModel(agent(''), agent('')), 'claude-opus-5-5');
  });
});
