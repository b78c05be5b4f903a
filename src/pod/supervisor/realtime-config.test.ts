// The realtime supervisor's own settings (parseRealtimeConfig): the token, the port, the recipe, the session to
// resume and whether the pod restores a session's state (AGENT_SESSION_RESTORE, validated).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRealtimeConfig } from './realtime.ts';

const base = {
  AGENT_PROMPT_TOKEN: 'tok-0123456789abcdef',
  AGENT_RUN_RECIPE: JSON.stringify({ model: 'claude-sonnet-4-5' }),
  HOME: '/home/agent/',
};

describe('realtime config', () => {
  it('reads the defaults: port 8090, all addresses, no resume, no restore, HOME normalized', () => {
    const r = parseRealtimeConfig(base);
    assert.ok(r.ok);
    assert.deepEqual(
      [r.value.port, r.value.host, r.value.resumeSession, r.value.restore, r.value.home],
      [8090, '0.0.0.0', undefined, false, '/home/agent'],
    );
  });

  it('AGENT_SESSION_RESTORE: true restores, false or empty does not, anything else is refused naming it', () => {
    const restore = (value: string) => parseRealtimeConfig({ ...base, AGENT_SESSION_RESTORE: value });
    const on = restore('true');
    assert.equal(on.ok && on.value.restore, true);
    for (const off of ['false', '']) {
      const r = restore(off);
      assert.equal(r.ok && r.value.restore, false, off);
    }
    for (const bad of ['TRUE', '1', 'yes', ' true']) {
      assert.deepEqual(restore(bad), {
        ok: false,
        error: `AGENT_SESSION_RESTORE must be true or false, got ${JSON.stringify(bad)}`,
      });
    }
  });

  it('a relative or missing HOME leaves no state folder to save', () => {
    for (const HOME of [undefined, '', 'home/agent']) {
      const r = parseRealtimeConfig({ ...base, HOME });
      assert.equal(r.ok && r.value.home, undefined, String(HOME));
    }
  });

  it('refuses a short token and a bad port', () => {
    assert.equal(parseRealtimeConfig({ ...base, AGENT_PROMPT_TOKEN: 'short' }).ok, false);
    assert.equal(parseRealtimeConfig({ ...base, AGENT_PROMPT_PORT: '70000' }).ok, false);
  });
});
