import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InitConfig } from './config.ts';
import { CONVERSATION_AUTH_CHILD_ENV, planConversation, RESTORE_SCRIPT } from './conversation.ts';
import { planInit, requiredExecutables } from './plan.ts';
import { choosePackageManager, installCommands, packageFor } from './prerequisites.ts';
import { isAllowedSourceUrl, isSafeSkillName, joinUrl, planSkills } from './skills.ts';
import { describeStep } from './steps.ts';
import { type CliFacts, planVendorCli } from './vendor-cli.ts';

const CLAUDE: CliFacts = {
  vendor: 'claude',
  binary: 'claude',
  installer: { script: 'command -v claude || install', requires: ['bash', 'curl', 'sha256sum'] },
  stateDir: '.claude/projects',
};
const EXEC: CliFacts = { vendor: 'exec', binary: undefined, installer: undefined, stateDir: undefined };

const BASE: InitConfig = {
  home: '/agent',
  workspace: '/workspace',
  model: '',
  repos: [],
  skills: [],
  skillsSource: '',
  conversation: { source: '', id: '', pin: '', authEnv: '' },
  cliVersion: undefined,
};

describe('planInit', () => {
  it('always injects the supervisor first and always has skills', () => {
    const plan = planInit(BASE, EXEC);
    assert.deepEqual(
      plan.tools.map((t) => t.name),
      ['supervisor', 'skills'],
    );
    assert.deepEqual(plan.tools[0]?.steps, [
      { kind: 'mkdir', path: '/agent/bin' },
      { kind: 'inject-supervisor', binDir: '/agent/bin' },
    ]);
    assert.equal(plan.binDir, '/agent/bin');
    assert.deepEqual(requiredExecutables(plan.tools), []);
  });

  it('orders supervisor, git, vendor CLI, skills, conversation', () => {
    const plan = planInit(
      {
        ...BASE,
        repos: [{ name: 'a', url: 'o/a' }],
        conversation: { source: 'https://c', id: 'x', pin: '', authEnv: '' },
      },
      CLAUDE,
    );
    assert.deepEqual(
      plan.tools.map((t) => t.name),
      ['supervisor', 'git', 'claude', 'skills', 'conversation'],
    );
    assert.deepEqual(requiredExecutables(plan.tools), ['git', 'bash', 'curl', 'sha256sum', 'sh', 'tar']);
  });

  it('collects refusals and skips without dropping the good repos', () => {
    const plan = planInit(
      {
        ...BASE,
        repos: [
          { name: 'good', url: 'o/good' },
          { name: 'out', url: 'o/out', path: '../canary' },
          { name: 'bad', url: 'o/bad', ref: '-x' },
        ],
      },
      EXEC,
    );
    assert.equal(plan.refusals.length, 1);
    assert.match(plan.warnings[0] ?? '', /repo "out" skipped/);
    const git = plan.tools.find((t) => t.name === 'git');
    assert.ok(git?.steps.some((s) => s.kind === 'exec' && s.argv.includes('/workspace/good')));
  });

  it('has no git tool when every repo is skipped', () => {
    const plan = planInit({ ...BASE, repos: [{ name: 'x', url: 'o/x', path: '/etc' }] }, EXEC);
    assert.ok(!plan.tools.some((t) => t.name === 'git'));
  });
});

describe('planVendorCli', () => {
  it('runs the installer with bash -o pipefail under HOME and skips when the binary is present', () => {
    const tool = planVendorCli(CLAUDE, '/agent');
    assert.deepEqual(tool, {
      name: 'claude',
      requires: ['bash', 'curl', 'sha256sum'],
      skipIfPresent: 'claude',
      steps: [
        { kind: 'mkdir', path: '/agent/.local/bin' },
        {
          kind: 'exec',
          argv: ['bash', '-o', 'pipefail', '-c', 'command -v claude || install'],
          env: { HOME: '/agent' },
        },
      ],
    });
  });
  it('plans nothing for exec', () => assert.equal(planVendorCli(EXEC, '/agent'), undefined));
});

describe('planSkills', () => {
  it('only copies from the workspace without a source', () => {
    const { tool, warnings } = planSkills(['a'], '', '/agent', '/workspace');
    assert.deepEqual(tool.steps, [
      { kind: 'mkdir', path: '/agent/.claude/skills' },
      { kind: 'collect-skills', workspace: '/workspace', dest: '/agent/.claude/skills' },
    ]);
    assert.deepEqual(tool.requires, []);
    assert.deepEqual(warnings, []);
  });

  it('downloads settings and each safe skill, best effort, URLs after --', () => {
    const { tool, warnings } = planSkills(
      ['lint', '.hidden', 'a/b', 'ok.v2'],
      'https://s.example/',
      '/agent',
      '/w',
    );
    const execs = tool.steps.filter((s) => s.kind === 'exec');
    assert.ok(execs.every((s) => s.kind === 'exec' && s.bestEffort === true));
    assert.deepEqual(
      execs.map((s) => (s.kind === 'exec' ? s.argv : [])),
      [
        ['curl', '-fsSL', '-o', '/agent/.claude/settings.json', '--', 'https://s.example/settings.json'],
        [
          'sh',
          '-c',
          'curl -fsSL -- "$1" | tar -xz --no-same-owner -C "$2"',
          'sh',
          'https://s.example/lint.tar.gz',
          '/agent/.claude/skills',
        ],
        [
          'sh',
          '-c',
          'curl -fsSL -- "$1" | tar -xz --no-same-owner -C "$2"',
          'sh',
          'https://s.example/ok.v2.tar.gz',
          '/agent/.claude/skills',
        ],
      ],
    );
    assert.deepEqual(tool.requires, ['sh', 'curl', 'tar']);
    assert.equal(warnings.length, 2);
  });

  it('refuses sources that are not http(s) or file URLs', () => {
    const { tool, warnings } = planSkills(['a'], 'dict://x', '/agent', '/w');
    assert.equal(tool.steps.length, 2);
    assert.match(warnings[0] ?? '', /not an http\(s\) or file URL/);
  });

  it('validates names and URLs', () => {
    for (const ok of ['a', 'A-b_c.d', '-x', '0']) assert.equal(isSafeSkillName(ok), true, ok);
    for (const bad of ['', '.a', '..', 'a/b', 'a b', 'a$']) assert.equal(isSafeSkillName(bad), false, bad);
    for (const ok of ['https://a', 'http://a', 'file:///a']) assert.equal(isAllowedSourceUrl(ok), true, ok);
    for (const bad of ['-https://a', 'https://a b', 'ftp://a', 'a'])
      assert.equal(isAllowedSourceUrl(bad), false, bad);
    assert.equal(joinUrl('https://a//', 'b'), 'https://a/b');
  });
});

describe('planConversation', () => {
  const conv = { source: 'https://c.example/conv', id: 'abc', pin: 'p', authEnv: 'conv-auth' };
  it('restores into HOME with the credential resolved in-process, never in argv', () => {
    const plan = planConversation(conv, '.claude/projects', '/agent');
    assert.equal(plan.kind, 'restore');
    if (plan.kind !== 'restore') return;
    assert.deepEqual(plan.tool.steps, [
      {
        kind: 'exec',
        argv: ['sh', '-c', RESTORE_SCRIPT, 'sh', '.claude/projects', 'https://c.example/conv/abc'],
        env: { HOME: '/agent' },
        envFrom: { [CONVERSATION_AUTH_CHILD_ENV]: 'conv-auth' },
        bestEffort: true,
      },
    ]);
    assert.match(RESTORE_SCRIPT, /-H @-/);
    assert.ok(!RESTORE_SCRIPT.includes('-H "$'), 'the header never becomes a curl argument');
  });
  it('is inactive without source, id or state dir', () => {
    assert.deepEqual(planConversation({ ...conv, source: '' }, '.x', '/a'), { kind: 'inactive' });
    assert.deepEqual(planConversation({ ...conv, id: '' }, '.x', '/a'), { kind: 'inactive' });
    assert.deepEqual(planConversation(conv, undefined, '/a'), { kind: 'inactive' });
  });
  it('has no envFrom without an auth env name', () => {
    const plan = planConversation({ ...conv, authEnv: '' }, '.x', '/a');
    assert.ok(
      plan.kind === 'restore' && plan.tool.steps[0]?.kind === 'exec' && !('envFrom' in plan.tool.steps[0]),
    );
  });
  it('warns about unusable sources and ids', () => {
    const a = planConversation({ ...conv, source: 'gopher://x' }, '.x', '/a');
    assert.ok(a.kind === 'inactive' && /source/.test(a.warning ?? ''));
    const b = planConversation({ ...conv, id: '-rf' }, '.x', '/a');
    assert.ok(b.kind === 'inactive' && /id/.test(b.warning ?? ''));
  });
});

describe('prerequisites', () => {
  it('maps sha256sum to coreutils', () => {
    assert.equal(packageFor('sha256sum'), 'coreutils');
    assert.equal(packageFor('git'), 'git');
  });
  it('prefers apt, then dnf, then apk', () => {
    assert.equal(
      choosePackageManager((b) => ['apk', 'dnf', 'apt-get'].includes(b)),
      'apt',
    );
    assert.equal(
      choosePackageManager((b) => ['apk', 'dnf'].includes(b)),
      'dnf',
    );
    assert.equal(
      choosePackageManager((b) => b === 'apk'),
      'apk',
    );
    assert.equal(
      choosePackageManager(() => false),
      undefined,
    );
  });
  it('builds the install commands of each manager, deduplicated', () => {
    assert.deepEqual(installCommands('apt', ['git', 'sha256sum', 'git']), [
      ['apt-get', 'update'],
      ['apt-get', 'install', '--no-install-recommends', '-y', 'git', 'coreutils'],
    ]);
    assert.deepEqual(installCommands('dnf', ['curl']), [['dnf', 'install', '-y', 'curl']]);
    assert.deepEqual(installCommands('apk', ['tar']), [['apk', 'add', '--no-cache', 'tar']]);
    assert.deepEqual(installCommands('apt', []), []);
  });
});

describe('describeStep', () => {
  it('renders steps for logs', () => {
    assert.equal(describeStep({ kind: 'exec', argv: ['git', 'clone', '--', 'a b'] }), 'git clone -- "a b"');
    assert.equal(describeStep({ kind: 'remove', path: '/w/a', root: '/w' }), 'rm -rf /w/a');
    assert.equal(describeStep({ kind: 'mkdir', path: '/a' }), 'mkdir -p /a');
  });
});
