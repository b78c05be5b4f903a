// The Helm chart is generated from the kustomize base (scripts/helm, `npm run gen:helm`): the committed chart is
// what the generator writes (drift), the kustomize subset it reads deploy/ with behaves as kustomize does for the
// features deploy/ uses, and what the generator cannot express faithfully stops it. Rendering with a real helm and
// the comparison with the base are in test/e2e/helm-chart.test.ts.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { load } from 'js-yaml';
import {
  CHART_DIR,
  escapeDelimiters,
  Holes,
  readSources,
  renderChart,
  type Sources,
  toggleName,
} from '../../scripts/helm/chart.ts';
import {
  build,
  type Component,
  loadBase,
  overrideImage,
  parseImage,
  ROOT,
  strategicMerge,
} from '../../scripts/helm/kustomize.ts';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const abs = join(dir, name);
    return statSync(abs).isDirectory() ? filesUnder(abs) : [abs];
  });
}

describe('helm chart generator', () => {
  const sources = readSources(ROOT);

  it('the committed chart is what npm run gen:helm writes (no file differs, is missing or is extra)', () => {
    const generated = renderChart(sources);
    for (const f of generated) {
      let current: string | undefined;
      try {
        current = readFileSync(join(ROOT, f.path), 'utf8');
      } catch {
        current = undefined;
      }
      assert.ok(
        current === f.content,
        `${f.path} is ${current === undefined ? 'missing' : 'out of date'}: run npm run gen:helm`,
      );
    }
    const committed = filesUnder(join(ROOT, CHART_DIR)).map((abs) =>
      relative(ROOT, abs).split('\\').join('/'),
    );
    assert.deepEqual(committed.sort(), generated.map((f) => f.path).sort());
  });

  it('Chart.yaml carries package.json version and the image tag of the base as appVersion', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const chart = renderChart(sources).find((f) => f.path === `${CHART_DIR}/Chart.yaml`);
    const parsed = load(chart?.content ?? '') as Record<string, unknown>;
    assert.equal(parsed.version, pkg.version);
    const image = readFileSync(join(ROOT, 'deploy', 'kustomization.yaml'), 'utf8').match(
      /newTag: (\S+)/,
    )?.[1];
    assert.equal(parsed.appVersion, image);
  });

  it('each component is a values toggle; the CRDs are copied into crds/ as they are', () => {
    const files = new Map(renderChart(sources).map((f) => [f.path, f.content]));
    const values = load(files.get(`${CHART_DIR}/values.yaml`) ?? '') as Record<string, unknown>;
    // Component settings that are chart values too default to the component's own (deploy/components/sessions).
    const own: Record<string, Record<string, unknown>> = {
      sessions: {
        endpoint: 'https://s3.us-east-1.amazonaws.com',
        bucket: 'agent-sessions',
        region: 'us-east-1',
        prefix: '',
      },
    };
    for (const c of sources.components)
      assert.deepEqual(values[toggleName(c.name)], { enabled: false, ...own[c.name] }, c.name);
    const controller = files.get(`${CHART_DIR}/templates/controller.yaml`) ?? '';
    assert.match(
      controller,
      /^ {8}- name: AGENT_SESSION_STORE_URL\n {10}value: \{\{ \.Values\.sessions\.endpoint \| quote \}\}$/m,
    );
    assert.match(controller, /^ {10}value: \{\{ \.Values\.sessions\.prefix \| quote \}\}$/m);
    assert.equal(toggleName('run-rbac'), 'runRbac');
    for (const name of readdirSync(join(ROOT, 'deploy', 'crds')))
      assert.equal(
        files.get(`${CHART_DIR}/crds/${name}`),
        readFileSync(join(ROOT, 'deploy', 'crds', name), 'utf8'),
      );
  });

  it('no placeholder is left and the base namespace is never named outside comments', () => {
    for (const f of renderChart(sources)) {
      assert.doesNotMatch(f.content, /HOLE\d+X/, f.path);
      if (!f.path.includes('/templates/')) continue;
      for (const line of f.content.split('\n'))
        if (!line.trimStart().startsWith('#')) assert.ok(!line.includes('ai-agents'), `${f.path}: ${line}`);
    }
  });

  it("a component's Deployment of the controller image runs the chart's image; a Service name in the base namespace names the release's", () => {
    const files = new Map(renderChart(sources).map((f) => [f.path, f.content]));
    const gateway = files.get(`${CHART_DIR}/templates/components/gateway/gateway-deployment.yaml`) ?? '';
    assert.match(gateway, /^ {8}image: \{\{ include "agent-controller.image" \. \| quote \}\}$/m);
    assert.match(gateway, /^ {8}imagePullPolicy: \{\{ \.Values\.image\.pullPolicy \}\}$/m);
    assert.doesNotMatch(gateway, /ghcr\.io/);
    const controller = files.get(`${CHART_DIR}/templates/controller.yaml`) ?? '';
    assert.match(controller, /value: http:\/\/agent-gateway\.\{\{ \.Release\.Namespace \}\}\.svc:8080$/m);
  });

  function withComponent(extra: Component): Sources {
    return { ...sources, components: [...sources.components, extra] };
  }
  const deploymentPatch = (spec: unknown): Component['patches'][number] => ({
    file: 'components/x/patch.yaml',
    target: { kind: 'Deployment', name: 'agent-controller' },
    patch: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'agent-controller' }, spec },
  });
  const component = (name: string, spec: unknown): Component => ({
    name,
    description: [],
    docs: [],
    patches: [deploymentPatch(spec)],
  });
  const containerPatch = (c: Record<string, unknown>): unknown => ({
    template: { spec: { containers: [{ name: 'controller', ...c }] } },
  });

  it('refuses what it cannot express: removals, a value two components replace, a patched chart value', () => {
    assert.throws(
      () => renderChart(withComponent(component('drop', containerPatch({ readinessProbe: null })))),
      /removes a field is not supported/,
    );
    assert.throws(
      () =>
        renderChart(withComponent(component('other-args', containerPatch({ args: ['controller', '--x'] })))),
      /replaced by more than one component/,
    );
    assert.throws(
      () => renderChart(withComponent(component('image', containerPatch({ image: 'elsewhere/ac:1' })))),
      /changed by a component; it cannot also be a chart value/,
    );
    const service: Component = {
      name: 'svc',
      description: [],
      docs: [],
      patches: [{ ...deploymentPatch({}), target: { kind: 'Service', name: 'x' } }],
    };
    assert.throws(() => renderChart(withComponent(service)), /only patches of the Deployment/);
  });

  it('a component key the base lacks becomes a conditional key; one it leaves equal changes nothing', () => {
    const added = renderChart(
      withComponent(component('host-users', { template: { spec: { hostUsers: false } }, replicas: 2 })),
    ).find((f) => f.path.endsWith('templates/controller.yaml'))?.content;
    assert.match(
      added ?? '',
      /\{\{- if \.Values\.hostUsers\.enabled \}\}\n {6}hostUsers: false\n {6}\{\{- end \}\}/,
    );
  });

  it('literal {{ and }} of the base are written so that Helm prints them as they are', () => {
    // Checked with helm itself: the template below renders `{{ $labels.namespace }} }}`.
    assert.equal(
      escapeDelimiters("a: '{{ $labels.namespace }} }}'"),
      `a: '{{ "{{" }} $labels.namespace {{ "}}" }} {{ "}}" }}'`,
    );
  });

  it('Holes.fill rewrites list elements, keys and values, and refuses a placeholder elsewhere', () => {
    const holes = new Holes();
    const item = holes.add((pad) => [`${pad}{{- with .Values.x }}`, `${pad}{{- end }}`]);
    const key = holes.add((pad) => [`${pad}k: {{ .Values.k }}`]);
    const value = holes.add((pad, k) => [`${pad}${k}: {{ .Values.v }}`]);
    assert.equal(
      holes.fill(`a:\n- 1\n- ${item}\nb:\n  ${key}: null\n  c: ${value}`),
      'a:\n- 1\n{{- with .Values.x }}\n{{- end }}\nb:\n  k: {{ .Values.k }}\n  c: {{ .Values.v }}',
    );
    assert.throws(() => holes.fill(`a: x${item}`), /unexpected place/);
  });
});

describe('kustomize subset', () => {
  it('strategic merge: elements with a merge key merge or append in patch order; other lists are replaced', () => {
    const baseDoc = {
      spec: {
        containers: [
          { name: 'c', args: ['a'], env: [{ name: 'A', value: '1' }], ports: [{ containerPort: 1 }] },
          { name: 'd' },
        ],
        volumes: [{ name: 'v' }],
      },
    };
    const patched = strategicMerge(baseDoc, {
      spec: {
        containers: [
          {
            name: 'c',
            args: ['b', 'c'],
            env: [
              { name: 'B', value: '2' },
              { name: 'A', value: '3' },
            ],
            ports: [{ containerPort: 2 }],
          },
        ],
        volumes: [{ name: 'w' }],
        hostUsers: false,
      },
    });
    assert.deepEqual(patched, {
      spec: {
        containers: [
          {
            name: 'c',
            args: ['b', 'c'],
            env: [
              { name: 'A', value: '3' },
              { name: 'B', value: '2' },
            ],
            ports: [{ containerPort: 1 }, { containerPort: 2 }],
          },
          { name: 'd' },
        ],
        volumes: [{ name: 'v' }, { name: 'w' }],
        hostUsers: false,
      },
    });
    assert.deepEqual(baseDoc.spec.containers[0]?.env, [{ name: 'A', value: '1' }], 'the base is not changed');
    assert.deepEqual(strategicMerge({ a: 1, b: 2 }, { a: null }), { b: 2 });
    assert.throws(() => strategicMerge({}, { $patch: 'replace' }), /not implemented/);
  });

  it('images: a registry port is not a tag; newTag, newName and digest as kustomize applies them', () => {
    assert.deepEqual(parseImage('registry:5000/a/b:1.0@sha256:ab'), {
      name: 'registry:5000/a/b',
      tag: '1.0',
      digest: 'sha256:ab',
    });
    assert.deepEqual(parseImage('registry:5000/a/b'), { name: 'registry:5000/a/b' });
    assert.equal(overrideImage('x/y:1', { name: 'x/y', newTag: '2' }), 'x/y:2');
    assert.equal(overrideImage('x/y:1', { name: 'x/y', newName: 'z/y' }), 'z/y:1');
    assert.equal(overrideImage('x/y:1', { name: 'x/y', digest: 'sha256:cd' }), 'x/y@sha256:cd');
  });

  it('the base with the realtime and batch components: patches in component order, images transformed', () => {
    const sources = readSources(ROOT);
    const pick = (n: string): Component => sources.components.find((c) => c.name === n)!;
    const objects = build(sources.base, [pick('batch'), pick('realtime')]);
    const d = objects.find((o) => o.kind === 'Deployment') as {
      spec: {
        template: { spec: { containers: { args: string[]; env: { name: string }[]; image: string }[] } };
      };
    };
    const c = d.spec.template.spec.containers[0]!;
    assert.deepEqual(
      c.env.slice(-3).map((e) => e.name),
      ['BATCH_ENABLED', 'REALTIME_ENABLED', 'API_PORT'],
    );
    assert.equal(c.args[0], 'controller');
    assert.ok(c.args.some((a) => a.startsWith('--tls-cert-file=')));
    assert.ok(objects.some((o) => o.kind === 'Service'));
    const tag = readFileSync(join(ROOT, 'deploy', 'kustomization.yaml'), 'utf8').match(/newTag: (\S+)/)?.[1];
    assert.equal(c.image, `ghcr.io/re-cinq/agent-controller:${tag}`);
  });

  it('refuses a kustomization field it does not implement', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kustomize-'));
    try {
      mkdirSync(join(dir, 'x'));
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        'kind: Kustomization\nresources: []\nnamespace: other\n',
      );
      assert.throws(() => loadBase(dir), /uses `namespace`, which .* does not implement/);
      writeFileSync(join(dir, 'kustomization.yaml'), 'kind: Kustomization\nresources: [x]\n');
      assert.throws(() => loadBase(dir), /directory resources are not implemented/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
