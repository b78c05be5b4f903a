import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { codexArgv } from './codex.ts';
import { CODEX_PROVIDER_ID, geminiSettings, OPENCODE_QUIET_ENV, vendorLaunch } from './launch.ts';
import { opencodeArgv } from './opencode.ts';

const KEY = 'sk-secret-value-1234';

/** The `-c` overrides of an argv, in order. */
function overrides(argv: readonly string[]): string[] {
  const out: string[] = [];
  argv.forEach((a, i) => {
    if (a === '-c' && argv[i + 1] !== undefined) out.push(argv[i + 1] as string);
  });
  return out;
}

describe('vendorLaunch: Codex', () => {
  const argv = codexArgv({ model: 'gpt-6-sol', prompt: 'Fix it' });

  it('makes a custom model provider on OPENAI_BASE_URL, WebSocket off, before the -- fence', () => {
    const env = { OPENAI_BASE_URL: 'http://127.0.0.1:4000/v1', OPENAI_API_KEY: KEY, PATH: '/bin' };
    const got = vendorLaunch('codex', argv, env);
    const p = `model_providers.${CODEX_PROVIDER_ID}`;
    assert.deepEqual(overrides(got.argv), [
      'sandbox_mode="danger-full-access"',
      'approval_policy="never"',
      `model_provider="${CODEX_PROVIDER_ID}"`,
      `${p}.name="OpenAI-compatible (OPENAI_BASE_URL)"`,
      `${p}.base_url="http://127.0.0.1:4000/v1"`,
      `${p}.env_key="OPENAI_API_KEY"`,
      `${p}.wire_api="responses"`,
      `${p}.supports_websockets=false`,
    ]);
    // Everything stays ahead of the fence; the prompt is still last.
    assert.deepEqual(got.argv.slice(-2), ['--', 'Fix it']);
    assert.ok(got.argv.lastIndexOf('-c') < got.argv.indexOf('--'));
    assert.deepEqual(got.env, env);
  });

  it('never puts the key into the argv', () => {
    for (const env of [
      { OPENAI_BASE_URL: 'http://proxy:8080/v1', OPENAI_API_KEY: KEY },
      { OPENAI_BASE_URL: 'http://proxy:8080/v1', CODEX_API_KEY: KEY },
      { OPENAI_API_KEY: KEY },
    ]) {
      const got = vendorLaunch('codex', argv, env);
      assert.ok(!got.argv.some((a) => a.includes(KEY)), JSON.stringify(got.argv));
    }
  });

  it('names CODEX_API_KEY as the provider key when only that is set', () => {
    const got = vendorLaunch('codex', argv, { OPENAI_BASE_URL: 'http://p/v1', CODEX_API_KEY: KEY });
    assert.ok(overrides(got.argv).includes(`model_providers.${CODEX_PROVIDER_ID}.env_key="CODEX_API_KEY"`));
  });

  it('quotes the base URL as a TOML string', () => {
    const got = vendorLaunch('codex', argv, { OPENAI_BASE_URL: ' http://p/v1?a="b" ', OPENAI_API_KEY: KEY });
    assert.ok(
      overrides(got.argv).includes(`model_providers.${CODEX_PROVIDER_ID}.base_url="http://p/v1?a=\\"b\\""`),
    );
  });

  it('a resumed session and a prompt on stdin get the provider too', () => {
    const resumed = [...codexArgv({ model: 'codex', prompt: 'x', resumeSession: 'th-1' }).slice(0, -1), '-'];
    const got = vendorLaunch('codex', resumed, { OPENAI_BASE_URL: 'http://p/v1', OPENAI_API_KEY: KEY });
    assert.deepEqual(got.argv.slice(0, 4), ['codex', 'exec', 'resume', '--json']);
    assert.deepEqual(got.argv.slice(-3), ['--', 'th-1', '-']);
    assert.ok(overrides(got.argv).includes(`model_provider="${CODEX_PROVIDER_ID}"`));
  });

  it('without OPENAI_BASE_URL: argv as built, CODEX_API_KEY from OPENAI_API_KEY (the built-in provider reads only that)', () => {
    const got = vendorLaunch('codex', argv, { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: '' });
    assert.deepEqual(got.argv, argv);
    assert.equal(got.env.CODEX_API_KEY, KEY);
    const own = vendorLaunch('codex', argv, { OPENAI_API_KEY: KEY, CODEX_API_KEY: 'mine' });
    assert.equal(own.env.CODEX_API_KEY, 'mine');
    assert.deepEqual(vendorLaunch('codex', argv, { PATH: '/bin' }).env, { PATH: '/bin' });
  });
});

describe('vendorLaunch: OpenCode', () => {
  const argv = opencodeArgv({ model: 'opencode/anthropic/claude-opus-5-5', prompt: 'p' });

  it('switches off its side traffic unless the run sets the switch itself', () => {
    const got = vendorLaunch('opencode', argv, { OPENCODE_DISABLE_SHARE: '0', PATH: '/bin' });
    for (const [name, value] of Object.entries(OPENCODE_QUIET_ENV)) {
      assert.equal(got.env[name], name === 'OPENCODE_DISABLE_SHARE' ? '0' : value, name);
    }
    assert.deepEqual(got.argv, argv);
  });

  it('configures sharing off and the Anthropic provider on ANTHROPIC_BASE_URL (with /v1)', () => {
    const plain = vendorLaunch('opencode', argv, {});
    assert.deepEqual(JSON.parse(plain.env.OPENCODE_CONFIG_CONTENT ?? ''), {
      share: 'disabled',
      autoupdate: false,
    });
    for (const url of ['http://127.0.0.1:9/', 'http://127.0.0.1:9', 'http://127.0.0.1:9/v1']) {
      const got = vendorLaunch('opencode', argv, { ANTHROPIC_BASE_URL: url });
      assert.deepEqual(JSON.parse(got.env.OPENCODE_CONFIG_CONTENT ?? ''), {
        share: 'disabled',
        autoupdate: false,
        provider: { anthropic: { options: { baseURL: 'http://127.0.0.1:9/v1' } } },
      });
    }
  });

  it('configures the Google provider on GOOGLE_GEMINI_BASE_URL (with /v1beta), its key by reference to the variable set', () => {
    const gateway = {
      ANTHROPIC_BASE_URL: 'http://gw:8080/anthropic',
      OPENAI_BASE_URL: 'http://gw:8080/openai/v1',
      GOOGLE_GEMINI_BASE_URL: 'http://gw:8080/gemini',
    };
    const config = (env: Record<string, string>) =>
      JSON.parse(vendorLaunch('opencode', argv, env).env.OPENCODE_CONFIG_CONTENT ?? '');
    assert.deepEqual(config({ ...gateway, GEMINI_API_KEY: KEY }), {
      share: 'disabled',
      autoupdate: false,
      provider: {
        anthropic: { options: { baseURL: 'http://gw:8080/anthropic/v1' } },
        google: { options: { baseURL: 'http://gw:8080/gemini/v1beta', apiKey: '{env:GEMINI_API_KEY}' } },
      },
    });
    // The key itself never enters the configuration.
    assert.ok(
      !vendorLaunch('opencode', argv, {
        ...gateway,
        GEMINI_API_KEY: KEY,
      }).env.OPENCODE_CONFIG_CONTENT?.includes(KEY),
    );
    for (const url of ['http://gw:8080/gemini/', 'http://gw:8080/gemini/v1beta']) {
      assert.deepEqual(config({ GOOGLE_GEMINI_BASE_URL: url, GOOGLE_API_KEY: KEY }).provider, {
        google: { options: { baseURL: 'http://gw:8080/gemini/v1beta', apiKey: '{env:GOOGLE_API_KEY}' } },
      });
    }
    // The variable OpenCode reads itself: nothing to point at; no key at all: none named.
    for (const env of [{ GOOGLE_GENERATIVE_AI_API_KEY: KEY, GEMINI_API_KEY: KEY }, {}]) {
      assert.deepEqual(config({ GOOGLE_GEMINI_BASE_URL: 'http://gw:8080/gemini', ...env }).provider, {
        google: { options: { baseURL: 'http://gw:8080/gemini/v1beta' } },
      });
    }
  });

  it("leaves the run's own OPENCODE_CONFIG_CONTENT alone", () => {
    const own = '{"model":"rec/m1"}';
    const got = vendorLaunch('opencode', argv, {
      OPENCODE_CONFIG_CONTENT: own,
      ANTHROPIC_BASE_URL: 'http://x',
    });
    assert.equal(got.env.OPENCODE_CONFIG_CONTENT, own);
  });
});

describe('vendorLaunch: Claude Code', () => {
  it('switches off its non-essential traffic unless the run sets the switch itself; argv as built', () => {
    const argv = ['claude', '--print', '--', 'p'];
    const env = { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: KEY };
    assert.deepEqual(vendorLaunch('claude', argv, env), {
      argv,
      env: { ...env, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
    });
    const own = { ...env, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '0' };
    assert.deepEqual(vendorLaunch('claude', argv, own), { argv, env: own });
  });
});

describe('vendorLaunch: the others', () => {
  it('leaves Gemini and exec as built', () => {
    const env = { OPENAI_BASE_URL: 'http://p/v1', OPENAI_API_KEY: KEY };
    for (const vendor of ['gemini', 'exec'] as const) {
      const argv = [vendor, '--', 'p'];
      assert.deepEqual(vendorLaunch(vendor, argv, env), { argv, env });
    }
  });
});

describe('geminiSettings', () => {
  it('a fresh file: the API-key auth type, usage statistics and telemetry off', () => {
    assert.deepEqual(geminiSettings(undefined), {
      security: { auth: { selectedType: 'gemini-api-key' } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
    });
  });

  it('merges into an existing file; keys it sets win', () => {
    const existing = {
      security: { auth: { selectedType: 'vertex-ai' }, folderTrust: { enabled: false } },
      privacy: { usageStatisticsEnabled: true },
      mcpServers: { x: { httpUrl: 'http://x' } },
      telemetry: 'odd',
    };
    assert.deepEqual(geminiSettings(existing), {
      security: { auth: { selectedType: 'vertex-ai' }, folderTrust: { enabled: false } },
      privacy: { usageStatisticsEnabled: true },
      mcpServers: { x: { httpUrl: 'http://x' } },
      telemetry: { enabled: false },
    });
    assert.equal(existing.telemetry, 'odd', 'the input is not changed');
  });

  it('leaves a file that is not a JSON object alone', () => {
    for (const bad of [null, [], 'x', 3]) assert.equal(geminiSettings(bad), undefined);
  });
});
