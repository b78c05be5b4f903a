import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { effectiveDeadline, parseSupervisorConfig } from './config.ts';

describe('supervisor configuration', () => {
  it('uses the documented defaults for an empty environment', () => {
    const { config, warnings } = parseSupervisorConfig({});
    assert.deepEqual(warnings, []);
    assert.equal(config.graceMs, 5000);
    assert.equal(config.deadlineMs, undefined);
    assert.equal(config.deadlineAt, undefined);
    assert.equal(config.vendor, 'claude');
    assert.equal(config.workspace, '/workspace');
    assert.deepEqual(config.sinks, []);
    assert.deepEqual(config.selectors, []);
    assert.deepEqual(config.watch, []);
    assert.deepEqual(config.retry, { attempts: 3, baseMs: 200, maxMs: 5000 });
    assert.equal(config.conversation, undefined);
    assert.equal(config.flushMs, 10000);
    assert.equal(config.terminationMessagePath, '/dev/termination-log');
  });

  it('AGENT_CLI_SETTINGS is read as a JSON object; anything else is ignored with a warning', () => {
    const set = parseSupervisorConfig({ AGENT_CLI_SETTINGS: '{"tools":{"exclude":["run_shell_command"]}}' });
    assert.deepEqual(set.warnings, []);
    assert.deepEqual(set.config.cliSettings, { tools: { exclude: ['run_shell_command'] } });
    for (const bad of ['[1]', '"x"', '{oops']) {
      const got = parseSupervisorConfig({ AGENT_CLI_SETTINGS: bad });
      assert.equal(got.config.cliSettings, undefined, bad);
      assert.deepEqual(got.warnings, ['[supervisor] AGENT_CLI_SETTINGS is not a JSON object; ignored']);
    }
  });

  it('AGENT_TERMINATION_MESSAGE_PATH overrides where the run report goes; a relative path is refused', () => {
    const set = parseSupervisorConfig({ AGENT_TERMINATION_MESSAGE_PATH: ' /tmp/x/../report ' });
    assert.deepEqual(set.warnings, []);
    assert.equal(set.config.terminationMessagePath, '/tmp/report');
    const bad = parseSupervisorConfig({ AGENT_TERMINATION_MESSAGE_PATH: 'report.json' });
    assert.equal(bad.config.terminationMessagePath, '/dev/termination-log');
    assert.deepEqual(bad.warnings, [
      '[supervisor] AGENT_TERMINATION_MESSAGE_PATH must be an absolute path; using /dev/termination-log',
    ]);
  });

  it('reads every setting', () => {
    const { config, warnings } = parseSupervisorConfig({
      AGENT_SINKS: '[{"type":"file","path":"/tmp/e"}]',
      AGENT_NOTIFY_URL: 'http://127.0.0.1:1/n',
      AGENT_NAME: 'a',
      POD_NAME: 'p',
      AGENT_MODEL: 'gpt-5-codex',
      AGENT_SELECT: '[{"event":"message"}]',
      AGENT_EXIT_GRACE_MS: '250',
      AGENT_DEADLINE_MS: '50000',
      AGENT_DEADLINE_AT: '1900000000000',
      WORKSPACE_DIR: '/ws/',
      AGENT_WATCH: '[{"event":"e","path":"p"}]',
      AGENT_SINK_FLUSH_MS: '0',
      HOME: '/agent',
      AGENT_CONVERSATION_SOURCE: 'http://c/conv',
      AGENT_CONVERSATION_PIN: 'pin-1',
      AGENT_CONVERSATION_AUTH: 'CONV_AUTH',
    });
    assert.deepEqual(warnings, []);
    assert.equal(config.sinks.length, 2);
    assert.deepEqual(config.source, { agent: 'a', pod: 'p' });
    assert.equal(config.vendor, 'codex');
    assert.equal(config.graceMs, 250);
    assert.equal(config.deadlineMs, 50000);
    assert.equal(config.deadlineAt, 1900000000000);
    assert.equal(config.workspace, '/ws');
    assert.deepEqual(config.watch, [{ event: 'e', path: 'p' }]);
    assert.equal(config.flushMs, 0);
    assert.deepEqual(config.conversation, {
      source: 'http://c/conv',
      pin: 'pin-1',
      stateDir: '.codex/sessions',
      home: '/agent',
      authEnvName: 'CONV_AUTH',
    });
  });

  it('bad values fall back to defaults with one warning each, never a throw', () => {
    const { config, warnings } = parseSupervisorConfig({
      AGENT_EXIT_GRACE_MS: '0',
      AGENT_DEADLINE_MS: '-1',
      AGENT_DEADLINE_AT: 'soon',
      AGENT_SINK_RETRY_ATTEMPTS: 'many',
      AGENT_SINKS: '{',
      WORKSPACE_DIR: 'relative',
      AGENT_SELECT: '[{"event":"nope"}]',
    });
    assert.equal(config.graceMs, 5000);
    assert.equal(config.deadlineMs, undefined);
    assert.equal(config.deadlineAt, undefined);
    assert.equal(config.retry.attempts, 3);
    assert.equal(config.workspace, '/workspace');
    assert.equal(warnings.length, 7);
    for (const w of warnings) assert.match(w, /^\[(supervisor|selectmatcher)\] /);
  });

  it('conversation save needs source, pin, HOME and a vendor with a state dir; reserved auth names are ignored', () => {
    const base = { AGENT_CONVERSATION_SOURCE: 's', AGENT_CONVERSATION_PIN: 'p', HOME: '/h' };
    assert.ok(parseSupervisorConfig(base).config.conversation);
    assert.equal(
      parseSupervisorConfig({ ...base, AGENT_CONVERSATION_PIN: '' }).config.conversation,
      undefined,
    );
    assert.equal(parseSupervisorConfig({ ...base, HOME: '' }).config.conversation, undefined);
    assert.equal(parseSupervisorConfig({ ...base, AGENT_MODEL: 'exec' }).config.conversation, undefined);
    assert.equal(
      parseSupervisorConfig({ ...base, AGENT_MODEL: 'opencode/x/y' }).config.conversation?.stateDir,
      '.local/share/opencode',
      'OpenCode keeps its sessions in its XDG data folder',
    );
    assert.equal(
      parseSupervisorConfig({ ...base, AGENT_CONVERSATION_AUTH: 'AGENT_SINKS' }).config.conversation
        ?.authEnvName,
      '',
    );
  });

  it('the effective deadline is the earlier of start + AGENT_DEADLINE_MS and AGENT_DEADLINE_AT', () => {
    assert.equal(effectiveDeadline(1000, {}), undefined);
    assert.equal(effectiveDeadline(1000, { deadlineMs: 500 }), 1500);
    assert.equal(effectiveDeadline(1000, { deadlineAt: 9000 }), 9000);
    assert.equal(effectiveDeadline(1000, { deadlineMs: 500, deadlineAt: 9000 }), 1500);
    assert.equal(effectiveDeadline(1000, { deadlineMs: 50_000, deadlineAt: 9000 }), 9000);
  });
});
