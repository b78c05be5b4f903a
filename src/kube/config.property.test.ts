// Property tests of the cluster config loaders (issue 13 §2): whatever a kubeconfig file holds (random YAML/JSON-ish
// objects in kubeconfig shape, random text) and whatever the in-cluster environment says, the loaders answer a
// Result (a `config` error or a usable config) and never throw; an accepted config is well-typed.
// Exec and auth-provider plugins are never generated: they run programs.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import yaml from 'js-yaml';
import type { Result } from '../shared/result.ts';
import { type ClusterConfig, loadInClusterConfig, loadKubeconfig } from './config.ts';
import type { KubeError } from './errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'kube-config-property-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const CA_FILE = join(dir, 'ca.crt');
writeFileSync(CA_FILE, 'CA-PEM');
const TOKEN_FILE = join(dir, 'token');
writeFileSync(TOKEN_FILE, 'tok\n');

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A scalar YAML/JSON might hold where a string is expected. */
const scalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
);
const nameArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('c', 'u', 'ctx', 'other') },
  { weight: 1, arbitrary: scalar },
);
const serverArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom('https://127.0.0.1:6443', 'http://localhost:8080/', 'https://[fd00::1]:443', 'ftp://x', ''),
  fc.webUrl(),
  scalar,
);
const fileArb = fc.constantFrom(CA_FILE, TOKEN_FILE, join(dir, 'missing'), 'relative/file', '');

const cluster = fc.record(
  {
    server: serverArb,
    'certificate-authority-data': fc.oneof(fc.constant(b64('CA')), scalar),
    'certificate-authority': fileArb,
    'insecure-skip-tls-verify': fc.oneof(fc.boolean(), scalar),
    'tls-server-name': scalar,
  },
  { requiredKeys: [] },
);
const user = fc.record(
  {
    token: scalar,
    tokenFile: fileArb,
    username: scalar,
    password: scalar,
    'client-certificate-data': fc.oneof(fc.constant(b64('CERT')), scalar),
    'client-key-data': fc.oneof(fc.constant(b64('KEY')), scalar),
    'client-certificate': fileArb,
    'client-key': fileArb,
  },
  { requiredKeys: [] },
);
const context = fc.record(
  { cluster: nameArb, user: nameArb, namespace: fc.oneof(fc.constantFrom('team-a', ''), scalar) },
  { requiredKeys: [] },
);
const entry = <T>(key: string, body: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.record({ name: nameArb, [key]: body }, { requiredKeys: [] }) },
    { weight: 1, arbitrary: scalar },
  );

const kubeconfigObject: fc.Arbitrary<unknown> = fc.record(
  {
    apiVersion: fc.constantFrom('v1', 1),
    kind: fc.constantFrom('Config', 'Other'),
    clusters: fc.oneof(fc.array(entry('cluster', cluster), { maxLength: 3 }), scalar),
    users: fc.oneof(fc.array(entry('user', user), { maxLength: 3 }), scalar),
    contexts: fc.oneof(fc.array(entry('context', context), { maxLength: 3 }), scalar),
    'current-context': nameArb,
  },
  { requiredKeys: [] },
);

/** A kubeconfig whose current context names a usable cluster, everything else random. */
const usableKubeconfig: fc.Arbitrary<unknown> = fc
  .record({
    server: fc.constantFrom('https://127.0.0.1:6443', 'http://localhost:8080/'),
    cluster,
    user,
    context,
    others: fc.array(entry('context', context), { maxLength: 2 }),
  })
  .map((r) => ({
    clusters: [{ name: 'c', cluster: { ...r.cluster, server: r.server } }],
    users: [{ name: 'u', user: r.user }],
    contexts: [...r.others, { name: 'ctx', context: { ...r.context, cluster: 'c' } }],
    'current-context': 'ctx',
  }));

/** What goes into the file: the object as YAML or JSON, cut short, or random text. */
const fileText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: kubeconfigObject.map((o) => yaml.dump(o)) },
  { weight: 4, arbitrary: usableKubeconfig.map((o) => yaml.dump(o)) },
  { weight: 2, arbitrary: kubeconfigObject.map((o) => JSON.stringify(o)) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(kubeconfigObject, fc.nat())
      .map(([o, n]) => yaml.dump(o).slice(0, n % (yaml.dump(o).length + 1))),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
);

/** A Result of the loaders: an error of kind `config`, or a config whose fields have their declared types. */
async function checkResult(
  r: Result<ClusterConfig, KubeError>,
  source: 'kubeconfig' | 'in-cluster',
): Promise<void> {
  assert.equal(typeof r.ok, 'boolean');
  if (!r.ok) {
    assert.equal(r.error.kind, 'config');
    assert.equal(typeof r.error.message, 'string');
    return;
  }
  const c = r.value;
  assert.equal(c.source, source);
  assert.match(c.server, /^https?:\/\//);
  assert.doesNotThrow(() => new URL(c.server));
  assert.ok(
    c.namespace === undefined || (typeof c.namespace === 'string' && c.namespace !== ''),
    `namespace ${JSON.stringify(c.namespace)}`,
  );
  const creds = await c.credentials({ refresh: true });
  if (!creds.ok) {
    assert.equal(creds.error.kind, 'config');
    return;
  }
  for (const [k, v] of Object.entries(creds.value.headers)) {
    assert.equal(typeof k, 'string');
    assert.equal(typeof v, 'string', `header ${k}`);
  }
}

let n = 0;
describe('loadKubeconfig (properties)', () => {
  it('answers a Result for any kubeconfig file content, never throws', async () => {
    await fc.assert(
      fc.asyncProperty(
        fileText,
        fc.option(fc.constantFrom('ctx', 'other', 'nope'), { nil: undefined }),
        async (text, ctx) => {
          fc.pre(!/exec|auth-provider|command/.test(text));
          const p = join(dir, `k${n++}.yaml`);
          writeFileSync(p, text);
          await checkResult(await loadKubeconfig({ path: p, context: ctx }), 'kubeconfig');
        },
      ),
      { numRuns: 150 },
    );
  });

  it('regression: a non-string context namespace is a config error, never passed on as the namespace', async () => {
    for (const namespace of [42, true, { a: 1 }, ['x']]) {
      const p = join(dir, 'ns-not-string.yaml');
      writeFileSync(
        p,
        yaml.dump({
          clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443' } }],
          users: [{ name: 'u', user: { token: 'abc' } }],
          contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace } }],
          'current-context': 'ctx',
        }),
      );
      const r = await loadKubeconfig({ path: p });
      assert.ok(!r.ok && r.error.kind === 'config', JSON.stringify(r));
    }
  });
});

describe('loadInClusterConfig (properties)', () => {
  const sa = join(dir, 'sa');
  mkdirSync(sa, { recursive: true });
  writeFileSync(join(sa, 'token'), 'tok');
  writeFileSync(join(sa, 'namespace'), 'agents');
  const envValue = fc.oneof(
    fc.constantFrom('10.0.0.1', 'fd00::1', 'kubernetes.default.svc', '443', '6443', '', ' ', '99999', '-1'),
    fc.string({ unit: 'binary', maxLength: 30 }),
  );

  it('regression: a host or port that makes no URL is a config error, not a server the transport cannot parse', async () => {
    for (const host of ['\u0000', 'a b', '[::1]']) {
      const r = await loadInClusterConfig({ env: { KUBERNETES_SERVICE_HOST: host }, serviceAccountDir: sa });
      assert.ok(!r.ok && r.error.kind === 'config', `${JSON.stringify(host)}: ${JSON.stringify(r)}`);
    }
    const port = await loadInClusterConfig({
      env: { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '99999' },
      serviceAccountDir: sa,
    });
    assert.ok(!port.ok && port.error.kind === 'config', JSON.stringify(port));
  });

  it('answers a Result for any service environment, never throws', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          { KUBERNETES_SERVICE_HOST: envValue, KUBERNETES_SERVICE_PORT: envValue, OTHER: envValue },
          { requiredKeys: [] },
        ),
        async (env) => {
          const r = await loadInClusterConfig({ env, serviceAccountDir: sa });
          await checkResult(r, 'in-cluster');
          if (r.ok) assert.equal(r.value.namespace, 'agents');
        },
      ),
      { numRuns: 300 },
    );
  });
});
