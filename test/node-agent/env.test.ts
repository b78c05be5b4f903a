import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as v from 'valibot';
import {
  containerEnvironment,
  type EnvSources,
  kubernetesServiceEnv,
  type PodFacts,
  parseQuantity,
  resolveEnv,
} from './env.ts';
import { DEFAULT_PATH } from './plan.ts';
import { type Container, PodSpecSchema } from './pod-spec.ts';

const facts: PodFacts = {
  name: 'p',
  namespace: 'ns',
  uid: 'u-1',
  nodeName: 'node',
  serviceAccountName: 'default',
  hostIP: '127.0.0.1',
  podIP: '127.0.0.9',
  labels: { app: 'demo' },
  annotations: { note: 'hi' },
};

const sources: EnvSources = {
  secret: async (_ns, name) =>
    name === 'creds' ? { token: 's3cr3t', 'bad-key!': 'x', USER: 'u' } : undefined,
  configMap: async (_ns, name) => (name === 'cfg' ? { mode: 'fast', LEVEL: 'debug' } : undefined),
};

function container(extra: Record<string, unknown>): Container {
  return v.parse(PodSpecSchema, { containers: [{ name: 'main', image: 'x', ...extra }] })
    .containers[0] as Container;
}

async function env(extra: Record<string, unknown>) {
  const c = container(extra);
  return resolveEnv(c, [c], facts, sources);
}

describe('resolveEnv', () => {
  it('resolves literals in order with $(VAR) expansion against earlier entries', async () => {
    const r = await env({
      env: [
        { name: 'A', value: 'one' },
        { name: 'B', value: '$(A)-two-$(LATER)' },
        { name: 'LATER', value: 'x' },
        { name: 'A', value: 'override' },
      ],
    });
    assert.ok(r.ok);
    assert.deepEqual(
      [...r.value],
      [
        ['A', 'override'],
        ['B', 'one-two-$(LATER)'],
        ['LATER', 'x'],
      ],
    );
  });

  it('resolves fieldRef, secretKeyRef and configMapKeyRef', async () => {
    const r = await env({
      env: [
        { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
        { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
        { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'creds', key: 'token' } } },
        { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } },
      ],
    });
    assert.ok(r.ok);
    assert.deepEqual(Object.fromEntries(r.value), {
      NAME: 'p',
      NS: 'ns',
      UID: 'u-1',
      IP: '127.0.0.9',
      APP: 'demo',
      TOKEN: 's3cr3t',
      MODE: 'fast',
    });
  });

  it('missing secrets, configmaps and keys give the kubelet messages unless optional', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ secretKeyRef: { name: 'nope', key: 'k' } }, 'secret "nope" not found'],
      [{ secretKeyRef: { name: 'creds', key: 'k' } }, "couldn't find key k in Secret ns/creds"],
      [{ configMapKeyRef: { name: 'nope', key: 'k' } }, 'configmap "nope" not found'],
      [{ configMapKeyRef: { name: 'cfg', key: 'k' } }, "couldn't find key k in ConfigMap ns/cfg"],
      [{ fieldRef: { fieldPath: 'spec.nothing' } }, 'unsupported fieldPath: spec.nothing'],
    ];
    for (const [valueFrom, message] of cases) {
      const r = await env({ env: [{ name: 'X', valueFrom }] });
      assert.deepEqual(r, { ok: false, error: { reason: 'CreateContainerConfigError', message } });
    }
    const optional = await env({
      env: [
        { name: 'X', valueFrom: { secretKeyRef: { name: 'creds', key: 'k', optional: true } } },
        { name: 'Y', valueFrom: { configMapKeyRef: { name: 'nope', key: 'k', optional: true } } },
      ],
    });
    assert.deepEqual(optional, { ok: true, value: new Map() });
  });

  it('envFrom imports valid keys with a prefix, env entries override them', async () => {
    const r = await env({
      envFrom: [{ secretRef: { name: 'creds' }, prefix: 'S_' }, { configMapRef: { name: 'cfg' } }],
      env: [{ name: 'LEVEL', value: 'info' }],
    });
    assert.ok(r.ok);
    assert.deepEqual(Object.fromEntries(r.value), {
      S_token: 's3cr3t',
      S_USER: 'u',
      mode: 'fast',
      LEVEL: 'info',
    });
    const missing = await env({ envFrom: [{ configMapRef: { name: 'nope' } }] });
    assert.equal(missing.ok, false);
    assert.ok((await env({ envFrom: [{ configMapRef: { name: 'nope', optional: true } }] })).ok);
  });

  it('resourceFieldRef reads limits (node capacity when unset) with a divisor', async () => {
    const r = await env({
      resources: { limits: { memory: '512Mi' }, requests: { cpu: '250m' } },
      env: [
        { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
        { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
        { name: 'REQ', valueFrom: { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } } },
      ],
    });
    assert.ok(r.ok);
    assert.deepEqual(Object.fromEntries(r.value), { MEM: '512', CPU: '8', REQ: '250' });
  });
});

describe('the kubernetes Service variables', () => {
  it('are the kubelet set for the Service, pointed at the API server the node uses', () => {
    assert.deepEqual(Object.fromEntries(kubernetesServiceEnv('127.0.0.1', '37409')), {
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: '37409',
      KUBERNETES_SERVICE_PORT_HTTPS: '37409',
      KUBERNETES_PORT: 'tcp://127.0.0.1:37409',
      KUBERNETES_PORT_37409_TCP: 'tcp://127.0.0.1:37409',
      KUBERNETES_PORT_37409_TCP_PROTO: 'tcp',
      KUBERNETES_PORT_37409_TCP_PORT: '37409',
      KUBERNETES_PORT_37409_TCP_ADDR: '127.0.0.1',
    });
  });

  it('bracket an IPv6 address in URLs only', () => {
    const env = kubernetesServiceEnv('[::1]', '443');
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), '::1');
    assert.equal(env.get('KUBERNETES_PORT'), 'tcp://[::1]:443');
    assert.equal(env.get('KUBERNETES_PORT_443_TCP_ADDR'), '::1');
  });

  it('override the image env, and the container env overrides them (explicit env wins)', async () => {
    const service = kubernetesServiceEnv('127.0.0.1', '6443');
    const c = container({
      env: [
        { name: 'KUBERNETES_SERVICE_HOST', value: 'api.example' },
        { name: 'URL', value: 'https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)' },
      ],
    });
    const r = await resolveEnv(c, [c], facts, sources, service);
    assert.ok(r.ok);
    const env = containerEnvironment(
      { KUBERNETES_SERVICE_PORT: '1', LANG: 'C.UTF-8' },
      new Map([['HOSTNAME', 'p'], ...service]),
      r.value,
    );
    assert.equal(env.get('PATH'), DEFAULT_PATH);
    assert.equal(env.get('LANG'), 'C.UTF-8');
    assert.equal(env.get('HOSTNAME'), 'p');
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), 'api.example', 'the container env wins');
    assert.equal(env.get('KUBERNETES_SERVICE_PORT'), '6443', 'the service variables win over the image');
    assert.equal(env.get('KUBERNETES_PORT_6443_TCP'), 'tcp://127.0.0.1:6443');
    // $(VAR) sees the container's own variables first, then the service variables.
    assert.equal(env.get('URL'), 'https://api.example:6443');
  });

  it('containerEnvironment: PATH defaults, the image PATH and an explicit PATH win in turn', () => {
    assert.equal(containerEnvironment({}, new Map(), new Map()).get('PATH'), DEFAULT_PATH);
    assert.equal(containerEnvironment({ PATH: '/img' }, new Map(), new Map()).get('PATH'), '/img');
    assert.equal(
      containerEnvironment({ PATH: '/img' }, new Map(), new Map([['PATH', '/mine']])).get('PATH'),
      '/mine',
    );
  });
});

describe('parseQuantity', () => {
  const cases: [string | number, number | undefined][] = [
    ['1', 1],
    [2, 2],
    ['500m', 0.5],
    ['1k', 1000],
    ['1Ki', 1024],
    ['1Gi', 2 ** 30],
    ['1.5G', 1.5e9],
    ['1e3', 1000],
    ['abc', undefined],
    ['1Xi', undefined],
  ];
  for (const [q, expected] of cases) it(`${q} → ${expected}`, () => assert.equal(parseQuantity(q), expected));
});
