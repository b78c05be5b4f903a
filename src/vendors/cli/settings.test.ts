import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { geminiSettings, vendorLaunch } from './launch.ts';
import { opencodeArgv } from './opencode.ts';
import { cliSettings, mergeSettings } from './settings.ts';

describe('cliSettings', () => {
  it('gives Gemini CLI the deny list as tools.exclude and OpenCode as permission denials', () => {
    const input = { model: 'm', prompt: '', disallowedTools: ['run_shell_command', '', 'web_fetch'] };
    assert.deepEqual(cliSettings('gemini', input), {
      tools: { exclude: ['run_shell_command', 'web_fetch'] },
    });
    assert.deepEqual(cliSettings('opencode', { ...input, disallowedTools: ['bash', 'webfetch'] }), {
      permission: { bash: 'deny', webfetch: 'deny' },
    });
  });

  it('has nothing to say without a deny list, nor for the CLIs that take theirs as flags', () => {
    assert.equal(cliSettings('gemini', { model: 'm', prompt: '' }), undefined);
    assert.equal(cliSettings('opencode', { model: 'm', prompt: '', disallowedTools: [] }), undefined);
    assert.equal(cliSettings('claude', { model: 'm', prompt: '', disallowedTools: ['Bash'] }), undefined);
  });
});

describe('mergeSettings', () => {
  it('merges objects key by key, joins lists without repeats, lets other overlay values win', () => {
    assert.deepEqual(
      mergeSettings(
        { tools: { exclude: ['a', 'b'], core: ['x'] }, model: { name: 'm' }, n: 1 },
        { tools: { exclude: ['b', 'c'] }, n: 2, extra: true },
      ),
      { tools: { exclude: ['a', 'b', 'c'], core: ['x'] }, model: { name: 'm' }, n: 2, extra: true },
    );
  });
});

describe('the deny list in the CLI configuration', () => {
  it("Gemini CLI: the file's own exclusions are kept and the run's added", () => {
    const got = geminiSettings(
      { tools: { exclude: ['web_fetch'] } },
      { tools: { exclude: ['run_shell_command'] } },
    );
    assert.deepEqual(got?.tools, { exclude: ['web_fetch', 'run_shell_command'] });
    assert.deepEqual(got?.security, { auth: { selectedType: 'gemini-api-key' } });
  });

  it("OpenCode: in the config the supervisor makes, and over the recipe's own", () => {
    const argv = opencodeArgv({ model: 'opencode/anthropic/claude-sonnet-4-5', prompt: 'p' });
    const settings = { permission: { bash: 'deny' } };
    const made = vendorLaunch('opencode', argv, { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' }, settings);
    assert.deepEqual(JSON.parse(String(made.env.OPENCODE_CONFIG_CONTENT)), {
      share: 'disabled',
      autoupdate: false,
      provider: { anthropic: { options: { baseURL: 'http://127.0.0.1:9/v1' } } },
      permission: { bash: 'deny' },
    });
    const own = JSON.stringify({ model: 'rec/m1', permission: { bash: 'allow', edit: 'ask' } });
    const over = vendorLaunch('opencode', argv, { OPENCODE_CONFIG_CONTENT: own }, settings);
    assert.deepEqual(JSON.parse(String(over.env.OPENCODE_CONFIG_CONTENT)), {
      model: 'rec/m1',
      permission: { bash: 'deny', edit: 'ask' },
    });
    const broken = vendorLaunch('opencode', argv, { OPENCODE_CONFIG_CONTENT: '{not json' }, settings);
    assert.equal(broken.env.OPENCODE_CONFIG_CONTENT, '{not json');
  });
});
