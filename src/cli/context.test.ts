import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { UsageError } from './command.ts';
import {
  type CliCommandSpec,
  cliCommand,
  connectCluster,
  guarded,
  helpText,
  kubeconfigPath,
} from './context.ts';
import { CliError } from './exit.ts';
import { captureIo, FakeCluster, fakeDeps } from './fake-cluster.ts';

const dir = mkdtempSync(join(tmpdir(), 'ac-cli-context-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(name: string, namespace?: string): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'c', cluster: { server: 'https://127.0.0.1:6443' } },
        { name: 'other', cluster: { server: 'https://127.0.0.1:7443' } },
      ],
      users: [{ name: 'u', user: { token: 'secret-token' } }],
      contexts: [
        { name: 'main', context: { cluster: 'c', user: 'u', ...(namespace ? { namespace } : {}) } },
        { name: 'dev', context: { cluster: 'other', user: 'u', namespace: 'dev-ns' } },
      ],
      'current-context': 'main',
    }),
  );
  return path;
}

describe('kubeconfig, context and namespace, as kubectl picks them', () => {
  it('--kubeconfig, else $KUBECONFIG, else ~/.kube/config when it exists, else in-cluster', () => {
    const exists = (p: string) => p === '/home/me/.kube/config';
    assert.equal(kubeconfigPath('/flag', { KUBECONFIG: '/env' }, exists), '/flag');
    assert.equal(kubeconfigPath(undefined, { KUBECONFIG: '/env', HOME: '/home/me' }, exists), '/env');
    assert.equal(
      kubeconfigPath(undefined, { KUBECONFIG: '', HOME: '/home/me' }, exists),
      '/home/me/.kube/config',
    );
    assert.equal(kubeconfigPath(undefined, { HOME: '/home/other' }, exists), undefined);
    assert.equal(kubeconfigPath(undefined, {}, exists), undefined);
  });

  it("the namespace: -n, else the context's, else default; --context picks another context", async () => {
    const withNs = kubeconfig('with-ns.json', 'team');
    const without = kubeconfig('without.json');
    const env = { HOME: '/nonexistent' };
    const pick = async (flags: Parameters<typeof connectCluster>[0]) => {
      const conn = await connectCluster(flags, env);
      conn.close();
      return conn.namespace;
    };
    assert.equal(await pick({ kubeconfig: withNs }), 'team');
    assert.equal(await pick({ kubeconfig: withNs, namespace: 'mine' }), 'mine');
    assert.equal(await pick({ kubeconfig: without }), 'default');
    assert.equal(await pick({ kubeconfig: without, context: 'dev' }), 'dev-ns');
    const home = join(dir, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    kubeconfig(join('home', '.kube', 'config'), 'from-home');
    const conn = await connectCluster({}, { HOME: home });
    conn.close();
    assert.equal(conn.namespace, 'from-home');
  });

  it('no kubeconfig and no cluster around: one line saying what to do', async () => {
    await assert.rejects(
      connectCluster({}, { HOME: '/nonexistent' }),
      (e) =>
        e instanceof CliError &&
        /^no kubeconfig: pass --kubeconfig, set \$KUBECONFIG or create ~\/\.kube\/config/.test(e.message),
    );
    await assert.rejects(
      connectCluster({ kubeconfig: join(dir, 'missing.json') }, {}),
      (e) => e instanceof CliError && /cannot load kubeconfig/.test(e.message) && !e.message.includes('\n'),
    );
  });

  it('a malformed kubeconfig is named with the YAML mistake and its place, never its content', async () => {
    const broken = join(dir, 'broken.kubeconfig');
    writeFileSync(broken, 'users:\n- name: u\n  user:\n    token: hunter2-secret\n   bad: [\n');
    await assert.rejects(connectCluster({ kubeconfig: broken }, {}), (e) => {
      assert.ok(e instanceof CliError);
      assert.doesNotMatch(e.message, /hunter2|token/);
      assert.match(
        e.message,
        /^cannot load kubeconfig \S+broken\.kubeconfig: invalid YAML: .* at line \d+, column \d+$/,
      );
      return true;
    });
  });

  it('KUBECONFIG=a:b as kubectl: --context of another file, a missing one skipped, an unknown context said so', async () => {
    const one = (name: string, server: string) =>
      `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "${server}"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: ${name}\n  context: {cluster: c, user: u, namespace: ${name}}\n`;
    const a = join(dir, 'a.kubeconfig');
    const b = join(dir, 'b.kubeconfig');
    writeFileSync(a, one('first', 'https://a:1'));
    writeFileSync(b, `${one('second', 'https://b:1')}current-context: second\n`);
    const env = { KUBECONFIG: [a, join(dir, 'gone.kubeconfig'), b].join(delimiter) };
    const conn = await connectCluster({}, env);
    assert.equal(conn.namespace, 'second');
    conn.close();
    const first = await connectCluster({ context: 'first' }, env);
    assert.equal(first.namespace, 'first');
    first.close();
    await assert.rejects(
      connectCluster({ context: 'nope' }, env),
      (e) => e instanceof CliError && e.message === 'context "nope" does not exist',
    );
  });
});

describe('guarded: every failure is one line and an exit code', () => {
  const spec = (fail: () => never): CliCommandSpec => ({
    name: 'x',
    summary: '',
    usage: 'Usage: {program} x',
    run: async () => fail(),
  });
  it('usage 2, CliError its code, anything else 1 without a stack', async () => {
    const cases: [() => never, number, string][] = [
      [
        () => {
          throw new UsageError('bad flag');
        },
        2,
        "error: bad flag (see 'kubectl agent x --help')\n",
      ],
      [
        () => {
          throw new CliError('gone', 4);
        },
        4,
        'error: gone\n',
      ],
      [
        () => {
          throw new TypeError('boom\n    at somewhere (file.ts:1:1)');
        },
        1,
        'error: boom at somewhere (file.ts:1:1)\n',
      ],
      [
        () => {
          throw 'a string';
        },
        1,
        'error: a string\n',
      ],
    ];
    for (const [fail, code, line] of cases) {
      const io = captureIo([]);
      assert.equal(
        await guarded(spec(fail), io, fakeDeps(new FakeCluster(), { program: 'kubectl agent' })),
        code,
      );
      assert.equal(io.stderrText(), line);
    }
  });
  it('help text names the program', () => {
    assert.equal(
      helpText({ usage: 'Usage: {program} x; {program} y' }, 'kubectl agent'),
      'Usage: kubectl agent x; kubectl agent y',
    );
    const cmd = cliCommand(
      spec(() => {
        throw new Error('x');
      }),
    );
    assert.equal(cmd.usage, 'Usage: agent-controller x');
    assert.equal(cmd.name, 'x');
  });
});
