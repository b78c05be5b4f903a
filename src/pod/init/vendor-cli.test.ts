import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseInitConfig } from './config.ts';
import { chooseVariant, type Tool } from './steps.ts';
import { type CliFacts, planVendorCli } from './vendor-cli.ts';

const CURL = 'command -v claude >/dev/null 2>&1 || curl -fsSL https://claude.ai/install.sh | bash';
const CLAUDE: CliFacts = {
  vendor: 'claude',
  binary: 'claude',
  installer: { script: CURL, requires: ['bash', 'curl', 'sha256sum'] },
  stateDir: '.claude/projects',
  npmPackage: { name: '@anthropic-ai/claude-code', version: '9.8.7' },
};

const NPM_INSTALL = ['npm', 'install', '--global', '--prefix', '/agent/.local', '--no-audit', '--no-fund'];
const CURL_STEPS = [
  { kind: 'mkdir', path: '/agent/.local/bin' },
  { kind: 'exec', argv: ['bash', '-o', 'pipefail', '-c', CURL], env: { HOME: '/agent' } },
];

function asRun(tool: Tool | undefined, onPath: readonly string[]): Tool {
  assert.ok(tool !== undefined);
  return chooseVariant(tool, (exe) => onPath.includes(exe));
}

describe('the vendor CLI install plan', () => {
  it('npm present: npm installs the pinned package into $HOME/.local, then the CLI prints its version', () => {
    const run = asRun(planVendorCli(CLAUDE, '/agent'), ['npm']);
    assert.deepEqual(run, {
      name: 'claude',
      skipIfPresent: 'claude',
      requires: ['npm'],
      steps: [
        { kind: 'mkdir', path: '/agent/.local/bin' },
        // npm 11.19.1 fails a global install into a prefix without `lib` (ENOENT, exit 254).
        { kind: 'mkdir', path: '/agent/.local/lib' },
        {
          kind: 'exec',
          argv: [...NPM_INSTALL, '@anthropic-ai/claude-code@9.8.7'],
          env: { HOME: '/agent', npm_config_update_notifier: 'false' },
        },
        { kind: 'exec', argv: ['/agent/.local/bin/claude', '--version'], env: { HOME: '/agent' } },
      ],
    });
  });

  it('a package whose bin is a stub until its postinstall runs is allowed that one install script', () => {
    const opencode: CliFacts = {
      ...CLAUDE,
      vendor: 'opencode',
      binary: 'opencode',
      npmPackage: { name: 'opencode-ai', version: '1.2.3', binaryFromPostinstall: true },
    };
    const install = asRun(planVendorCli(opencode, '/agent'), ['npm']).steps[2];
    assert.ok(install?.kind === 'exec');
    assert.deepEqual(install.argv, [...NPM_INSTALL, '--allow-scripts=opencode-ai', 'opencode-ai@1.2.3']);
  });

  it('a version the run sets wins over the pin', () => {
    const run = asRun(planVendorCli(CLAUDE, '/agent', '2.0.1'), ['npm']);
    const install = run.steps[2];
    assert.ok(install?.kind === 'exec');
    assert.deepEqual(install.argv.at(-1), '@anthropic-ai/claude-code@2.0.1');
  });

  it('npm absent: the vendor installer (curl), as the reference does', () => {
    const run = asRun(planVendorCli(CLAUDE, '/agent'), ['curl', 'bash']);
    assert.deepEqual(run, {
      name: 'claude',
      skipIfPresent: 'claude',
      requires: ['bash', 'curl', 'sha256sum'],
      steps: CURL_STEPS,
    });
  });

  it('a vendor without an npm package always uses its installer', () => {
    const run = asRun(planVendorCli({ ...CLAUDE, npmPackage: undefined }, '/agent'), ['npm']);
    assert.deepEqual(run.steps, CURL_STEPS);
    assert.equal(run.preferred, undefined);
  });

  it('already on PATH: the tool names the binary it is skipped for, whichever way it would install', () => {
    const tool = planVendorCli(CLAUDE, '/agent');
    assert.equal(tool?.skipIfPresent, 'claude');
    assert.equal(asRun(tool, ['npm']).skipIfPresent, 'claude');
  });

  it('no secret and no registry in argv: the registry reaches npm through the env the init inherits', () => {
    const run = asRun(planVendorCli(CLAUDE, '/agent'), ['npm']);
    for (const step of run.steps) {
      if (step.kind !== 'exec') continue;
      assert.ok(!step.argv.some((a) => a.includes('registry')), step.argv.join(' '));
      assert.ok(!Object.keys(step.env ?? {}).some((k) => /registry|token|auth/i.test(k)));
    }
  });
});

describe('AGENT_CLI_VERSION', () => {
  it('is read, trimmed, and unset when empty', () => {
    const set = parseInitConfig({ AGENT_CLI_VERSION: ' 2.1.0-beta.1 ' });
    assert.ok(set.ok);
    assert.equal(set.value.cliVersion, '2.1.0-beta.1');
    const empty = parseInitConfig({ AGENT_CLI_VERSION: '' });
    assert.ok(empty.ok);
    assert.equal(empty.value.cliVersion, undefined);
  });

  it('refuses what is not a version or dist-tag (an option, a path, a URL, a range)', () => {
    for (const bad of ['--registry=http://x', '../x', 'http://evil/x.tgz', '>=1 <2', 'a b']) {
      const r = parseInitConfig({ AGENT_CLI_VERSION: bad });
      assert.ok(!r.ok, bad);
      assert.equal(r.error, 'AGENT_CLI_VERSION must be an npm version or dist-tag');
    }
  });
});
