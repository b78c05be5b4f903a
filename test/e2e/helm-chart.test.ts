// The Helm chart charts/agent-controller (issue 11 §4) with a real helm (scripts/build-helm, from its Go
// module): `helm lint` passes; `helm template` with the default values renders exactly the objects of the kustomize
// base deploy/ (one source: the chart is generated from it), but the Namespace, which namespace.create adds; each
// component toggle renders the base with that component (deploy/components/*), as kustomize would; the values reach
// the objects they name; the values schema refuses a misspelt toggle. Then every rendered object (defaults, and
// every toggle on) is applied to the local control plane with a server-side dry run (server-side apply, so objects
// that exist already, like the CRDs, are checked too): the API server accepts all of them and stores none; and
// literally, `helm template | kubectl apply --dry-run=server -f -` with the testbed's kubectl. That kubectl's own
// kustomize (`kubectl kustomize`) also checks the generator's TypeScript reading of the base and its components.
// helm and the chart do not depend on the JavaScript runtime: runs in the Node pass only. The rendering tests need
// no cluster; the dry run does.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import { CHART_DIR, toggleName } from '../../scripts/helm/chart.ts';
import {
  build,
  type Component,
  componentNames,
  type KubeDoc,
  loadBase,
  loadComponent,
  objectKey,
  ROOT,
} from '../../scripts/helm/kustomize.ts';
import { helmBinary, helmSkipReason, parseManifests, runHelm } from '../support/helm.ts';
import { apiPath, type KubeClient, KubeError } from '../support/kube-client.ts';
import { freshNamespace } from '../support/namespace.ts';
import { e2eCluster } from '../support/testbed.ts';

const NODE_ONLY =
  process.env.AGENT_E2E_RUNTIME === 'deno'
    ? 'helm and the chart do not depend on the JavaScript runtime; they run in the node pass only'
    : false;
const helmSkip = NODE_ONLY || helmSkipReason();
const cluster = e2eCluster();

const deploy = join(ROOT, 'deploy');
const base = loadBase(deploy);
const components = componentNames(deploy).map((n) => loadComponent(deploy, n));
/** The namespace the base installs into (its Namespace object). */
const BASE_NS = String(
  (base.docs.find((d) => d.object.kind === 'Namespace')?.object.metadata as { name?: unknown })?.name,
);

function byKey(objects: readonly KubeDoc[]): Map<string, KubeDoc> {
  const out = new Map<string, KubeDoc>();
  for (const o of objects) {
    const key = objectKey(o);
    assert.ok(!out.has(key), `rendered twice: ${key}`);
    out.set(key, o);
  }
  return out;
}

/** Object-by-object equality, with the keys that differ named first (a readable failure). */
function assertSameObjects(got: readonly KubeDoc[], want: readonly KubeDoc[], what: string): void {
  const g = byKey(got);
  const w = byKey(want);
  assert.deepEqual([...g.keys()].sort(), [...w.keys()].sort(), `${what}: the same objects`);
  for (const [key, obj] of w) assert.deepEqual(g.get(key), obj, `${what}: ${key}`);
}

/**
 * The objects with every run of blanks in their strings made one space, and lists of named items (env, ports,
 * volumes, mounts) ordered by name: kustomize re-wraps long multi-line strings (the admission policy's CEL
 * expressions) when it writes them out, and a strategic-merge patch puts the items it adds first, where the chart
 * appends them; neither changes what the objects mean.
 */
function blankNormalised(objects: readonly unknown[]): unknown[] {
  const nameOf = (x: unknown): string | undefined =>
    typeof x === 'object' && x !== null && typeof (x as { name?: unknown }).name === 'string'
      ? (x as { name: string }).name
      : undefined;
  const byName = (list: unknown[]): unknown[] =>
    list.every((x) => nameOf(x) !== undefined)
      ? [...list].sort((a, b) => (nameOf(a) ?? '').localeCompare(nameOf(b) ?? ''))
      : list;
  const walk = (x: unknown): unknown =>
    typeof x === 'string'
      ? x.replace(/\s+/g, ' ')
      : Array.isArray(x)
        ? byName(x.map(walk))
        : typeof x === 'object' && x !== null
          ? Object.fromEntries(Object.entries(x).map(([k, val]) => [k, walk(val)]))
          : x;
  return objects.map(walk);
}

function toggles(enabled: readonly Component[]): string[] {
  return enabled.flatMap((c) => ['--set', `${toggleName(c.name)}.enabled=true`]);
}

describe('helm chart: lint and render', { skip: helmSkip }, () => {
  let helm = '';
  let home = '';
  before(() => {
    helm = helmBinary();
    home = mkdtempSync(join(tmpdir(), 'helm-chart-'));
  });
  after(() => {
    if (home !== '') rmSync(home, { recursive: true, force: true });
  });

  function template(args: readonly string[], namespace = BASE_NS): KubeDoc[] {
    const r = runHelm(
      helm,
      ['template', 'agent-controller', CHART_DIR, '--namespace', namespace, '--include-crds', ...args],
      home,
    );
    assert.equal(r.status, 0, `helm template ${args.join(' ')}: ${r.stderr}`);
    return parseManifests(r.stdout);
  }

  it('helm lint --strict passes with the defaults and with every toggle on', () => {
    for (const args of [[], ['--set', 'namespace.create=true', ...toggles(components)]]) {
      const r = runHelm(helm, ['lint', '--strict', CHART_DIR, ...args], home);
      assert.equal(r.status, 0, `helm lint ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
    }
  });

  it('the defaults render the kustomize base object by object (the Namespace with namespace.create)', () => {
    const kustomized = build(base);
    assert.ok(kustomized.length > 10);
    assertSameObjects(
      template([]),
      kustomized.filter((o) => o.kind !== 'Namespace'),
      'defaults',
    );
    assertSameObjects(template(['--set', 'namespace.create=true']), kustomized, 'namespace.create=true');
  });

  it('each component toggle, and all of them, render the base with those components', () => {
    assert.deepEqual(
      components.map((c) => c.name),
      ['batch', 'console', 'gateway', 'memory', 'realtime', 'run-rbac', 'server', 'sessions'],
    );
    for (const c of components) {
      assertSameObjects(
        template(['--set', 'namespace.create=true', ...toggles([c])]),
        build(base, [c]),
        `${toggleName(c.name)}.enabled`,
      );
    }
    assertSameObjects(
      template(['--set', 'namespace.create=true', ...toggles(components)]),
      build(base, components),
      'every toggle',
    );
    // The session store's settings are values of their own; its credentials stay secretKeyRefs.
    const sessions = template([
      '--set',
      'sessions.enabled=true',
      '--set',
      'sessions.endpoint=http://versitygw.storage.svc:7070',
      '--set',
      'sessions.prefix=prod/',
    ]);
    const deployment = sessions.find(
      (o) => o.kind === 'Deployment' && objectKey(o).includes('agent-controller'),
    );
    assert.ok(deployment, 'the controller Deployment');
    const env = (
      (deployment.spec as { template: { spec: { containers: { env: Record<string, unknown>[] }[] } } })
        .template.spec.containers[0]?.env ?? []
    ).filter((e) => String(e.name).startsWith('AGENT_SESSION_STORE_'));
    assert.deepEqual(env, [
      { name: 'AGENT_SESSION_STORE_URL', value: 'http://versitygw.storage.svc:7070' },
      { name: 'AGENT_SESSION_STORE_BUCKET', value: 'agent-sessions' },
      { name: 'AGENT_SESSION_STORE_REGION', value: 'us-east-1' },
      { name: 'AGENT_SESSION_STORE_PREFIX', value: 'prod/' },
      {
        name: 'AGENT_SESSION_STORE_ACCESS_KEY_ID',
        valueFrom: { secretKeyRef: { name: 'agent-session-store', key: 'access-key-id' } },
      },
      {
        name: 'AGENT_SESSION_STORE_SECRET_ACCESS_KEY',
        valueFrom: { secretKeyRef: { name: 'agent-session-store', key: 'secret-access-key' } },
      },
    ]);
  });

  it('installs into the release namespace; kube-system and default stay where the base puts them', () => {
    const objects = template(['--set', 'namespace.create=true', ...toggles(components)], 'team-x');
    const where = new Set<string>();
    for (const o of objects) {
      const meta = o.metadata as { namespace?: string; name: string };
      if (meta.namespace !== undefined) where.add(meta.namespace);
      for (const s of (o.subjects as { namespace?: string }[] | undefined) ?? [])
        assert.equal(s.namespace, 'team-x', `${objectKey(o)} subject`);
      assert.ok(!JSON.stringify(o).includes(BASE_NS), `${objectKey(o)} still names ${BASE_NS}`);
    }
    assert.deepEqual([...where].sort(), ['default', 'kube-system', 'team-x']);
    assert.ok(
      objects.some((o) => o.kind === 'Namespace' && (o.metadata as { name: string }).name === 'team-x'),
    );
  });

  it('values reach the objects they name', () => {
    const file = join(home, 'values.yaml');
    writeFileSync(
      file,
      JSON.stringify({
        image: {
          repository: 'registry.example:5000/ac',
          tag: '9.9.9',
          digest: `sha256:${'a'.repeat(64)}`,
          pullPolicy: 'Always',
        },
        imagePullSecrets: [{ name: 'regcred' }],
        agentImage: 'registry.example:5000/ac-init:9.9.9',
        replicas: 3,
        resources: { requests: { cpu: '50m' } },
        maxOutputBytes: 1048576,
        otelExporterOtlpEndpoint: 'http://otel:4318',
        extraEnv: [{ name: 'LOG_LEVEL', value: 'debug' }],
        podLabels: { team: 'a' },
        podAnnotations: { note: 'b' },
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        tolerations: [{ key: 'dedicated', operator: 'Exists' }],
        affinity: { nodeAffinity: {} },
        batch: { enabled: true },
      }),
    );
    const d = template(['-f', file]).find((o) => o.kind === 'Deployment') as {
      spec: {
        replicas: number;
        template: {
          metadata: { labels: Record<string, string>; annotations: Record<string, string> };
          spec: Record<string, unknown> & {
            containers: {
              image: string;
              imagePullPolicy: string;
              resources: unknown;
              env: { name: string; value?: string }[];
            }[];
          };
        };
      };
    };
    const pod = d.spec.template.spec;
    const c = pod.containers[0]!;
    const env = Object.fromEntries(c.env.map((e) => [e.name, e.value]));
    assert.equal(d.spec.replicas, 3);
    assert.equal(c.image, `registry.example:5000/ac:9.9.9@sha256:${'a'.repeat(64)}`);
    assert.equal(c.imagePullPolicy, 'Always');
    // Helm merges a values map into the default one: the other quantities stay as the base sets them.
    assert.deepEqual(c.resources, {
      requests: { cpu: '50m', memory: '192Mi' },
      limits: { cpu: '1', memory: '512Mi' },
    });
    assert.equal(env.AGENT_IMAGE, 'registry.example:5000/ac-init:9.9.9');
    assert.equal(env.MAX_OUTPUT_BYTES, '1048576', 'an integer, not 1.048576e+06');
    assert.equal(env.OTEL_EXPORTER_OTLP_ENDPOINT, 'http://otel:4318');
    assert.deepEqual(
      c.env.slice(-4).map((e) => e.name),
      ['PRICES_FILE', 'BATCH_ENABLED', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'LOG_LEVEL'],
      'components first, then the values, after the base',
    );
    assert.equal(d.spec.template.metadata.labels.team, 'a');
    assert.equal(d.spec.template.metadata.labels['agents.re-cinq.com/component'], 'controller');
    assert.equal(d.spec.template.metadata.annotations.note, 'b');
    assert.deepEqual(pod.imagePullSecrets, [{ name: 'regcred' }]);
    assert.deepEqual(pod.nodeSelector, { 'kubernetes.io/os': 'linux' });
    assert.deepEqual(pod.tolerations, [{ key: 'dedicated', operator: 'Exists' }]);
    assert.deepEqual(pod.affinity, { nodeAffinity: {} });

    // Without agentImage, AGENT_IMAGE follows the controller image.
    const plain = template(['--set', 'image.tag=1.2.3']).find((o) => o.kind === 'Deployment') as typeof d;
    const plainEnv = plain.spec.template.spec.containers[0]!.env;
    assert.equal(
      plainEnv.find((e) => e.name === 'AGENT_IMAGE')?.value,
      'ghcr.io/re-cinq/agent-controller:1.2.3',
    );
  });

  it('the values schema refuses a misspelt toggle', () => {
    const r = runHelm(helm, ['template', 'agent-controller', CHART_DIR, '--set', 'batch.enable=true'], home);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /additional properties 'enable' not allowed/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// server-side dry run

const ResourceListSchema = v.looseObject({
  resources: v.array(v.looseObject({ name: v.string(), kind: v.string(), namespaced: v.boolean() })),
});

/** Resource name and scope of each kind, from the API server's discovery (one request per apiVersion). */
function discovery(client: KubeClient) {
  const cache = new Map<string, Promise<v.InferOutput<typeof ResourceListSchema>>>();
  return async (obj: KubeDoc): Promise<string> => {
    const apiVersion = String(obj.apiVersion);
    let list = cache.get(apiVersion);
    if (list === undefined) {
      list = client.json('GET', apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`, ResourceListSchema);
      cache.set(apiVersion, list);
    }
    const r = (await list).resources.find((x) => x.kind === obj.kind && !x.name.includes('/'));
    if (r === undefined) throw new Error(`the API server serves no ${apiVersion} ${String(obj.kind)}`);
    const meta = obj.metadata as { name: string; namespace?: string };
    if (r.namespaced && meta.namespace === undefined) throw new Error(`${objectKey(obj)} has no namespace`);
    return apiPath(apiVersion, r.name, {
      ...(r.namespaced ? { namespace: meta.namespace } : {}),
      name: meta.name,
    });
  };
}

const skipDryRun = helmSkip || (typeof cluster === 'string' ? cluster : false);

describe('helm chart: every rendered object passes a server-side dry run', { skip: skipDryRun }, () => {
  if (typeof cluster === 'string') return;
  const { client } = cluster;
  let helm = '';
  let home = '';
  before(() => {
    helm = helmBinary();
    home = mkdtempSync(join(tmpdir(), 'helm-chart-'));
  });
  after(() => {
    client.close();
    if (home !== '') rmSync(home, { recursive: true, force: true });
  });

  /** Runs the testbed's kubectl (built with the control plane) against the local control plane. */
  function kubectl(args: readonly string[], input?: string) {
    return spawnSync('bash', ['scripts/testbed', 'kubectl', ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      env: {
        ...process.env,
        KUBECONFIG: cluster === undefined || typeof cluster === 'string' ? '' : cluster.kubeconfig,
      },
      ...(input !== undefined ? { input } : {}),
    });
  }

  it('real kustomize (kubectl kustomize) builds the objects the chart generator starts from, base and components', () => {
    // Inside the repository: kustomize reads the base by a relative path.
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    const dir = mkdtempSync(join(ROOT, '.tmp', 'kustomize-'));
    try {
      for (const enabled of [[], components]) {
        writeFileSync(
          join(dir, 'kustomization.yaml'),
          [
            'resources:',
            '  - ../../deploy',
            ...(enabled.length > 0
              ? ['components:', ...enabled.map((c) => `  - ../../deploy/components/${c.name}`)]
              : []),
            '',
          ].join('\n'),
        );
        const r = kubectl(['kustomize', dir]);
        assert.equal(r.status, 0, r.stderr);
        assertSameObjects(
          blankNormalised(parseManifests(r.stdout)) as KubeDoc[],
          blankNormalised(build(base, enabled)) as KubeDoc[],
          `kubectl kustomize (${enabled.length} components)`,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('helm template | kubectl apply --dry-run=server -f -, as a person would check it', async (t) => {
    const ns = await freshNamespace(client, 'helm-kubectl');
    t.after(ns.cleanup);
    const r = runHelm(
      helm,
      ['template', 'agent-controller', CHART_DIR, '--namespace', ns.name, ...toggles(components)],
      home,
    );
    assert.equal(r.status, 0, r.stderr);
    const applied = kubectl(['apply', '--dry-run=server', '-f', '-'], r.stdout);
    assert.equal(applied.status, 0, applied.stderr);
    const lines = applied.stdout.trim().split('\n');
    assert.equal(lines.length, parseManifests(r.stdout).length, applied.stdout);
    for (const line of lines) assert.match(line, /(created|configured|unchanged) \(server dry run\)$/);
  });

  it('defaults and every toggle on: the API server accepts each object and stores none', async (t) => {
    const ns = await freshNamespace(client, 'helm-chart');
    t.after(ns.cleanup);
    const pathOf = discovery(client);
    for (const values of [[], ['--set', 'namespace.create=true', ...toggles(components)]]) {
      const r = runHelm(
        helm,
        ['template', 'agent-controller', CHART_DIR, '--namespace', ns.name, '--include-crds', ...values],
        home,
      );
      assert.equal(r.status, 0, r.stderr);
      const objects = parseManifests(r.stdout);
      assert.ok(objects.length > 10);
      for (const obj of objects) {
        const path = await pathOf(obj);
        const res = await client.request('PATCH', path, {
          body: obj,
          contentType: 'application/apply-patch+yaml',
          query: { dryRun: 'All', fieldManager: 'helm-chart-e2e', force: true },
        });
        assert.ok(
          res.status === 200 || res.status === 201,
          `dry-run apply of ${objectKey(obj)} (${values.join(' ') || 'defaults'}): HTTP ${res.status} ${res.body.slice(0, 800)}`,
        );
      }
    }
    // A dry run stores nothing: the Deployment (namespaced in the fresh namespace) does not exist.
    const deployment = apiPath('apps/v1', 'deployments', { namespace: ns.name, name: 'agent-controller' });
    await assert.rejects(client.get(deployment), (e: unknown) => e instanceof KubeError && e.status === 404);
  });
});
