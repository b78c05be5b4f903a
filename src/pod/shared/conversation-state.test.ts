import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { conversationStateDir } from './conversation-state.ts';

describe('conversation state directories', () => {
  it('names the state dir of each resumable vendor and none for the others', () => {
    assert.equal(conversationStateDir('claude'), '.claude/projects');
    assert.equal(conversationStateDir('codex'), '.codex/sessions');
    assert.equal(conversationStateDir('gemini'), '.gemini/tmp');
    assert.equal(conversationStateDir('opencode'), undefined);
    assert.equal(conversationStateDir('exec'), undefined);
  });
});
