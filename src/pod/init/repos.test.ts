import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  credentialHelper,
  normalizeRepoUrl,
  planRepo,
  REPO_TOKEN_ALIAS,
  redactUrlCredentials,
  repoDestination,
} from './repos.ts';

const WS = '/workspace';

describe('normalizeRepoUrl', () => {
  const accepted: Array<[string, string]> = [
    ['owner/name', 'https://github.com/owner/name.git'],
    ['re-cinq/ai.agent', 'https://github.com/re-cinq/ai.agent.git'],
    ['owner/name.git', 'https://github.com/owner/name.git'],
    ['https://github.com/a/b.git', 'https://github.com/a/b.git'],
    ['HTTPS://example.com/a/b', 'https://example.com/a/b'],
    ['https://user:secret@github.com/a/b.git', 'https://github.com/a/b.git'],
    ['https://x-access-token@github.com/a/b.git', 'https://github.com/a/b.git'],
    ['ssh://git:pw@github.com/a/b.git', 'ssh://git@github.com/a/b.git'],
    ['ssh://git@github.com/a/b.git', 'ssh://git@github.com/a/b.git'],
    ['git@github.com:owner/repo.git', 'git@github.com:owner/repo.git'],
    ['file:///tmp/origin.git', 'file:///tmp/origin.git'],
    ['file://localhost/tmp/origin.git', 'file:///tmp/origin.git'],
    ['http://127.0.0.1:8080/o/r.git', 'http://127.0.0.1:8080/o/r.git'],
    ['http://tok:x@localhost/o/r.git', 'http://localhost/o/r.git'],
    ['http://[::1]:9/r.git', 'http://[::1]:9/r.git'],
  ];
  for (const [raw, want] of accepted) {
    it(`accepts ${raw}`, () => assert.deepEqual(normalizeRepoUrl(raw), { ok: true, value: want }));
  }
  const refused: Array<[string, RegExp]> = [
    ['', /empty/],
    ['--upload-pack=touch /tmp/x foo@bar', /option-shaped/],
    ['-c', /option-shaped/],
    ['https://github.com/a b', /whitespace/],
    ['https://github.com/a\nb', /whitespace/],
    ['http://github.com/a/b', /loopback hosts only/],
    ['http://10.0.0.1/a/b', /loopback hosts only/],
    ['git://github.com/a/b', /scheme "git"/],
    ['ext::sh -c touch% /tmp/pwned', /whitespace/],
    ['ext::sh', /transport::address/],
    ['fd::17', /transport::address/],
    ['/tmp/origin', /not a URL/],
    ['../origin', /not a URL/],
    ['foo@bar', /not a URL/],
    ['git@host:-oProxyCommand=x', /not a URL/],
    ['file://evil.example/tmp/x', /local path/],
    ['file:///', /name a repository/],
    ['https:///a/b', /no host|unparseable/],
  ];
  for (const [raw, why] of refused) {
    it(`refuses ${JSON.stringify(raw)}`, () => {
      const result = normalizeRepoUrl(raw);
      assert.equal(result.ok, false);
      if (!result.ok) assert.match(result.error, why);
    });
  }
});

describe('redactUrlCredentials', () => {
  it('replaces userinfo in every URL of a text', () => {
    assert.equal(
      redactUrlCredentials('clone https://u:p@h/a and ssh://git:x@h/b done'),
      'clone https://<redacted>@h/a and ssh://<redacted>@h/b done',
    );
  });
  it('leaves URLs without userinfo alone', () => {
    assert.equal(redactUrlCredentials('https://h/a@b'), 'https://h/a@b');
  });
  it('hides query strings, which may carry tokens', () => {
    assert.equal(
      redactUrlCredentials('curl failed: https://skills.example/pack.tgz?token=s3cr3t&x=1 (22)'),
      'curl failed: https://skills.example/pack.tgz?… (22)',
    );
  });
});

describe('credentialHelper', () => {
  it('names a shell-identifier env var, never a value', () => {
    const helper = credentialHelper('GH_TOKEN');
    assert.equal(
      helper,
      `!f() { test "$1" = get || return 0; echo username=x-access-token; printf 'password=%s\\n' "$GH_TOKEN"; }; f`,
    );
  });
  it('refuses names that are not shell identifiers', () => {
    for (const name of ['gh-token', "a'b", 'a b', '-x', '$(id)', 'a=b', '', '1A']) {
      assert.equal(credentialHelper(name), undefined, name);
    }
  });
});

describe('repoDestination', () => {
  it('uses the name under the workspace by default', () => {
    assert.equal(repoDestination({ name: 'app', url: 'x' }, WS), '/workspace/app');
  });
  it('resolves a relative path under the workspace', () => {
    assert.equal(repoDestination({ name: 'app', url: 'x', path: 'nested/app' }, WS), '/workspace/nested/app');
  });
  it('keeps an absolute path, normalized', () => {
    assert.equal(
      repoDestination({ name: 'app', url: 'x', path: '/workspace/./a//b/' }, WS),
      '/workspace/a/b',
    );
  });
  it('normalizes traversal lexically', () => {
    assert.equal(repoDestination({ name: 'app', url: 'x', path: '../canary' }, WS), '/canary');
  });
});

describe('planRepo', () => {
  it('plans rm, clone after --, and checkout of the ref fenced by --', () => {
    const d = planRepo({ name: 'app', url: 'file:///srv/origin.git', ref: 'v1' }, WS);
    assert.equal(d.kind, 'clone');
    if (d.kind !== 'clone') return;
    assert.equal(d.dest, '/workspace/app');
    assert.deepEqual(d.steps, [
      { kind: 'remove', path: '/workspace/app', root: WS },
      {
        kind: 'exec',
        argv: ['git', 'clone', '--', 'file:///srv/origin.git', '/workspace/app'],
        env: { GIT_TERMINAL_PROMPT: '0' },
      },
      {
        kind: 'exec',
        argv: ['git', '-C', '/workspace/app', 'checkout', 'v1', '--'],
        env: { GIT_TERMINAL_PROMPT: '0' },
      },
    ]);
  });

  it('with a token: resets helpers, adds one naming the env var, and persists it in the clone', () => {
    const d = planRepo(
      { name: 'p', url: 'https://user:pw@github.com/o/p.git', token_secret: 'GH_TOKEN' },
      WS,
    );
    assert.equal(d.kind, 'clone');
    if (d.kind !== 'clone') return;
    const helper = credentialHelper('GH_TOKEN')!;
    assert.deepEqual(
      d.steps.map((s) => (s.kind === 'exec' ? s.argv : s.kind)),
      [
        'remove',
        [
          'git',
          '-c',
          'credential.helper=',
          '-c',
          `credential.helper=${helper}`,
          'clone',
          '--',
          'https://github.com/o/p.git',
          '/workspace/p',
        ],
        ['git', '-C', '/workspace/p', 'config', 'credential.helper', helper],
      ],
    );
    assert.ok(!JSON.stringify(d).includes('pw@'), 'userinfo is stripped');
  });

  it('clones without credentials when the token env name is unusable', () => {
    const d = planRepo({ name: 'p', url: 'o/p', token_secret: "bad'name" }, WS);
    assert.equal(d.kind, 'clone');
    if (d.kind !== 'clone') return;
    assert.ok(d.steps.every((s) => s.kind !== 'exec' || !s.argv.includes('-c')));
    assert.match(d.warning ?? '', /unusable/);
  });

  it('hands a dashed Secret-key token to the clone under a shell-safe alias, resolved in-process', () => {
    const d = planRepo({ name: 'p', url: 'o/p', token_secret: 'gh-token' }, WS);
    assert.equal(d.kind, 'clone');
    if (d.kind !== 'clone') return;
    const helper = credentialHelper(REPO_TOKEN_ALIAS)!;
    assert.deepEqual(d.steps[1], {
      kind: 'exec',
      argv: [
        'git',
        '-c',
        'credential.helper=',
        '-c',
        `credential.helper=${helper}`,
        'clone',
        '--',
        'https://github.com/o/p.git',
        '/workspace/p',
      ],
      env: { GIT_TERMINAL_PROMPT: '0' },
      envFrom: { AGENT_REPO_TOKEN: 'gh-token' },
    });
    assert.equal(d.steps.length, 2, 'no helper persisted: the agent container has no alias');
    assert.match(d.warning ?? '', /not a shell name/);
  });

  it('skips destinations outside the workspace', () => {
    for (const path of ['../canary', '/etc', '/workspace', '/workspace/..', '/workspacefoo/x', '.']) {
      assert.equal(planRepo({ name: 'r', url: 'o/r', path }, WS).kind, 'skip', path);
    }
    assert.equal(planRepo({ name: '..', url: 'o/r' }, WS).kind, 'skip');
  });

  it('refuses option-shaped refs and URLs before anything runs', () => {
    const ref = planRepo({ name: 'r', url: 'o/r', ref: '--orphan=pwned' }, WS);
    assert.equal(ref.kind, 'refuse');
    if (ref.kind === 'refuse') assert.match(ref.reason, /"--orphan=pwned" is option-shaped/);
    const url = planRepo({ name: 'r', url: '--upload-pack=touch /tmp/s foo@bar' }, WS);
    assert.equal(url.kind, 'refuse');
    if (url.kind === 'refuse') assert.match(url.reason, /repository "--upload-pack=touch \/tmp\/s foo@bar"/);
    assert.equal(planRepo({ name: 'r', url: 'o/r', ref: 'a b' }, WS).kind, 'refuse');
  });

  it('refuses before skipping: an unsafe URL with an escaping path still fails the init', () => {
    assert.equal(planRepo({ name: 'r', url: '-x', path: '../x' }, WS).kind, 'refuse');
  });

  it('treats null ref, path and token as absent', () => {
    const d = planRepo({ name: 'r', url: 'o/r', ref: null, path: null, token_secret: null }, WS);
    assert.equal(d.kind, 'clone');
    if (d.kind === 'clone') assert.equal(d.steps.length, 2);
  });
});
