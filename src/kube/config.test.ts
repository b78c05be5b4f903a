import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadInClusterConfig, loadKubeconfig, resolveClusterConfig } from './config.ts';

const dir = mkdtempSync(join(tmpdir(), 'kube-config-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('loadInClusterConfig', () => {
  const sa = join(dir, 'sa');
  const env = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '6443' };

  it('fails without the service env', async () => {
    const r = await loadInClusterConfig({ env: {}, serviceAccountDir: sa });
    assert.ok(!r.ok && r.error.kind === 'config');
  });

  it('reads server, token, CA and namespace, and re-reads a rotated token after the cache period', async () => {
    rmSync(sa, { recursive: true, force: true });
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), 'tok-1\n');
    writeFileSync(join(sa, 'ca.crt'), 'CA-PEM');
    writeFileSync(join(sa, 'namespace'), 'agents');
    let now = 1000;
    const r = await loadInClusterConfig({ env, serviceAccountDir: sa, tokenCacheMs: 10_000, now: () => now });
    assert.ok(r.ok);
    const c = r.value;
    assert.equal(c.server, 'https://10.0.0.1:6443');
    assert.equal(c.namespace, 'agents');
    assert.equal(c.source, 'in-cluster');
    const first = await c.credentials({ refresh: false });
    assert.ok(first.ok);
    assert.deepEqual(first.value.headers, { Authorization: 'Bearer tok-1' });
    assert.equal(first.value.tls.ca, 'CA-PEM');
    writeFileSync(join(sa, 'token'), 'tok-2');
    now += 5_000;
    const cached = await c.credentials({ refresh: false });
    assert.ok(cached.ok && cached.value.headers.Authorization === 'Bearer tok-1');
    now += 6_000;
    const rotated = await c.credentials({ refresh: false });
    assert.ok(rotated.ok && rotated.value.headers.Authorization === 'Bearer tok-2');
    writeFileSync(join(sa, 'token'), 'tok-3');
    const forced = await c.credentials({ refresh: true });
    assert.ok(forced.ok && forced.value.headers.Authorization === 'Bearer tok-3');
  });

  it('keeps the last good token when the file becomes unreadable', async () => {
    writeFileSync(join(sa, 'token'), 'good');
    const r = await loadInClusterConfig({ env, serviceAccountDir: sa });
    assert.ok(r.ok);
    rmSync(join(sa, 'token'));
    const again = await r.value.credentials({ refresh: true });
    assert.ok(again.ok && again.value.headers.Authorization === 'Bearer good');
  });

  it('brackets an IPv6 host and defaults the port to 443', async () => {
    writeFileSync(join(sa, 'token'), 'x');
    const r = await loadInClusterConfig({
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1' },
      serviceAccountDir: sa,
    });
    assert.ok(r.ok && r.value.server === 'https://[fd00::1]:443');
  });

  it('fails when no token can be read at start', async () => {
    const r = await loadInClusterConfig({ env, serviceAccountDir: join(dir, 'missing') });
    assert.ok(!r.ok && r.error.kind === 'config');
  });
});

const kubeconfig = (user: string): string => `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: ${Buffer.from('CA-PEM').toString('base64')}
users:
- name: u
  user:
${user}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: team-a}
current-context: ctx
`;

describe('loadKubeconfig', () => {
  it('applies a bearer token and the CA', async () => {
    const p = join(dir, 'token.kubeconfig');
    writeFileSync(p, kubeconfig('    token: abc'));
    const r = await loadKubeconfig({ path: p });
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.value.server, 'https://127.0.0.1:6443');
    assert.equal(r.value.namespace, 'team-a');
    const c = await r.value.credentials({ refresh: false });
    assert.ok(c.ok);
    assert.equal(c.value.headers.Authorization, 'Bearer abc');
    assert.equal(Buffer.from(c.value.tls.ca ?? '').toString(), 'CA-PEM');
  });

  it('applies client certificate and key data', async () => {
    const p = join(dir, 'cert.kubeconfig');
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    writeFileSync(
      p,
      kubeconfig(`    client-certificate-data: ${b64('CERT')}\n    client-key-data: ${b64('KEY')}`),
    );
    const r = await loadKubeconfig({ path: p });
    assert.ok(r.ok);
    const c = await r.value.credentials({ refresh: false });
    assert.ok(c.ok);
    assert.equal(Buffer.from(c.value.tls.cert ?? '').toString(), 'CERT');
    assert.equal(Buffer.from(c.value.tls.key ?? '').toString(), 'KEY');
    assert.equal(c.value.headers.Authorization, undefined);
  });

  it('runs an exec credential plugin', async () => {
    const plugin = join(dir, 'plugin.mjs');
    writeFileSync(
      plugin,
      `process.stdout.write(JSON.stringify({apiVersion:'client.authentication.k8s.io/v1',kind:'ExecCredential',status:{token:'from-exec'}}));`,
    );
    const p = join(dir, 'exec.kubeconfig');
    writeFileSync(
      p,
      kubeconfig(
        `    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ${JSON.stringify(process.execPath)}\n      args: [${JSON.stringify(plugin)}]\n      interactiveMode: Never`,
      ),
    );
    const r = await loadKubeconfig({ path: p });
    assert.ok(r.ok, JSON.stringify(r));
    const c = await r.value.credentials({ refresh: false });
    assert.ok(c.ok && c.value.headers.Authorization === 'Bearer from-exec');
  });

  it('honours insecure-skip-tls-verify and a chosen context', async () => {
    const p = join(dir, 'insecure.kubeconfig');
    writeFileSync(
      p,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: c',
        '  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}',
        'users:',
        '- name: u',
        '  user: {token: abc}',
        'contexts:',
        '- name: other',
        '  context: {cluster: c, user: u}',
        '- name: ctx',
        '  context: {cluster: c, user: u, namespace: team-a}',
        'current-context: other',
        '',
      ].join('\n'),
    );
    const r = await loadKubeconfig({ path: p, context: 'ctx' });
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.value.namespace, 'team-a');
    const c = await r.value.credentials({ refresh: false });
    assert.ok(c.ok && c.value.tls.rejectUnauthorized === false);
  });

  it('fails with a config error for a missing file or a context without a server', async () => {
    const missing = await loadKubeconfig({ path: join(dir, 'nope') });
    assert.ok(!missing.ok && missing.error.kind === 'config');
    const p = join(dir, 'noserver.kubeconfig');
    writeFileSync(p, 'apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n');
    const r = await loadKubeconfig({ path: p });
    assert.ok(!r.ok && r.error.kind === 'config');
  });
});

describe('loadKubeconfig: errors and merging as kubectl', () => {
  const token = async (r: Awaited<ReturnType<typeof loadKubeconfig>>): Promise<string | undefined> => {
    assert.ok(r.ok, JSON.stringify(r));
    const c = await r.value.credentials({ refresh: false });
    assert.ok(c.ok);
    return c.value.headers.Authorization;
  };
  const file = (name: string, text: string): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const config = (o: {
    cluster: string;
    server: string;
    user: string;
    token: string;
    context?: string;
    current?: string;
  }) =>
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: ${o.cluster}`,
      `  cluster: {server: "${o.server}"}`,
      'users:',
      `- name: ${o.user}`,
      `  user: {token: ${o.token}}`,
      'contexts:',
      `- name: ${o.context ?? 'ctx'}`,
      `  context: {cluster: ${o.cluster}, user: ${o.user}}`,
      ...(o.current !== undefined ? [`current-context: ${o.current}`] : []),
      '',
    ].join('\n');

  it('a YAML mistake is told by reason and position, never with the lines around it (they hold secrets)', async () => {
    const p = file(
      'broken.kubeconfig',
      kubeconfig('    token: s3cr3t-token-value\n    client-key-data: PRIVATEKEY\n  : : bad: [').replace(
        'contexts:',
        'contexts:\n\t- oops',
      ),
    );
    const r = await loadKubeconfig({ path: p });
    assert.ok(!r.ok && r.error.kind === 'config');
    assert.doesNotMatch(r.error.message, /s3cr3t|PRIVATEKEY|token:|\n/);
    assert.match(
      r.error.message,
      /^cannot load kubeconfig .*broken\.kubeconfig: invalid YAML: .+ at line \d+, column \d+$/,
    );
  });

  it('several files: the first of a name wins without an error, missing files are skipped', async () => {
    const a = file(
      'm-a.kubeconfig',
      config({ cluster: 'c', server: 'https://a:1', user: 'u', token: 'from-a', current: 'ctx' }),
    );
    const b = file(
      'm-b.kubeconfig',
      config({ cluster: 'c', server: 'https://b:1', user: 'u', token: 'from-b', current: 'ctx' }),
    );
    const both = await loadKubeconfig({ path: [a, join(dir, 'missing.kubeconfig'), b].join(delimiter) });
    assert.ok(both.ok, JSON.stringify(both));
    assert.equal(both.value.server, 'https://a:1');
    assert.equal(await token(both), 'Bearer from-a');
    const none = await loadKubeconfig({
      path: [join(dir, 'missing-1'), join(dir, 'missing-2')].join(delimiter),
    });
    assert.ok(!none.ok && none.error.kind === 'config');
  });

  it("a later file's current-context is used when the first has none; a chosen context must exist", async () => {
    const a = file(
      'n-a.kubeconfig',
      config({ cluster: 'ca', server: 'https://a:1', user: 'ua', token: 'from-a', context: 'first' }),
    );
    const b = file(
      'n-b.kubeconfig',
      config({
        cluster: 'cb',
        server: 'https://b:1',
        user: 'ub',
        token: 'from-b',
        context: 'second',
        current: 'second',
      }),
    );
    const merged = await loadKubeconfig({ path: [a, b].join(delimiter) });
    assert.ok(merged.ok, JSON.stringify(merged));
    assert.equal(merged.value.server, 'https://b:1');
    const chosen = await loadKubeconfig({ path: [a, b].join(delimiter), context: 'first' });
    assert.equal(await token(chosen), 'Bearer from-a');
    const nope = await loadKubeconfig({ path: [a, b].join(delimiter), context: 'nope' });
    assert.ok(!nope.ok);
    assert.equal(nope.error.message, 'context "nope" does not exist');
    const single = await loadKubeconfig({ path: a, context: 'nope' });
    assert.ok(!single.ok && single.error.message === 'context "nope" does not exist');
  });
});

describe('resolveClusterConfig', () => {
  it('prefers --kubeconfig, then $KUBECONFIG, then in-cluster', async () => {
    const a = join(dir, 'a.kubeconfig');
    writeFileSync(a, kubeconfig('    token: from-flag'));
    const b = join(dir, 'b.kubeconfig');
    writeFileSync(b, kubeconfig('    token: from-env'));
    const flag = await resolveClusterConfig({ kubeconfig: a, env: { KUBECONFIG: b } });
    assert.ok(flag.ok);
    const fc = await flag.value.credentials({ refresh: false });
    assert.ok(fc.ok && fc.value.headers.Authorization === 'Bearer from-flag');
    const env = await resolveClusterConfig({ env: { KUBECONFIG: b } });
    assert.ok(env.ok);
    const ec = await env.value.credentials({ refresh: false });
    assert.ok(ec.ok && ec.value.headers.Authorization === 'Bearer from-env');
    const none = await resolveClusterConfig({ env: {}, serviceAccountDir: join(dir, 'missing') });
    assert.ok(!none.ok && none.error.kind === 'config');
  });
});
