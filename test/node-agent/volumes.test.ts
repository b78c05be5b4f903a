import assert from 'node:assert/strict';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import * as v from 'valibot';
import type { PodFacts } from './env.ts';
import { type NodePod, NodePodSchema, type Volume } from './pod-spec.ts';
import {
  type FileProjection,
  formatMap,
  fsUserOf,
  type IssuedToken,
  samePayload,
  syncsWithObjects,
  type TokenRequestSpec,
  tokenRefreshAt,
  type VolumeContext,
  type VolumeSources,
  volumeContent,
  writeVolume,
} from './volumes.ts';

const root = typeof process.getuid === 'function' && process.getuid() === 0;
const NOW = Date.parse('2025-06-01T12:00:00Z');

function pod(spec: Record<string, unknown> = {}, meta: Record<string, unknown> = {}): NodePod {
  return v.parse(NodePodSchema, {
    metadata: {
      name: 'p',
      namespace: 'ns',
      uid: 'u-1',
      labels: { app: 'demo', tier: 'web' },
      annotations: { note: 'say "hi"' },
      ...meta,
    },
    spec: { containers: [{ name: 'main', image: 'x' }], ...spec },
  });
}

function facts(p: NodePod): PodFacts {
  return {
    name: p.metadata.name,
    namespace: p.metadata.namespace,
    uid: p.metadata.uid,
    nodeName: 'node',
    serviceAccountName: p.spec.serviceAccountName ?? 'default',
    hostIP: '127.0.0.1',
    podIP: '127.0.0.9',
    labels: p.metadata.labels ?? {},
    annotations: p.metadata.annotations ?? {},
  };
}

/** Fake sources: a Secret `creds`, the ConfigMaps `kube-root-ca.crt` and `cfg`; tokens per `answer`. */
function sources(answer: (ns: string, sa: string, spec: TokenRequestSpec) => IssuedToken | Error) {
  const requests: { ns: string; sa: string; spec: TokenRequestSpec }[] = [];
  const s: VolumeSources = {
    secret: async (_ns, name) => (name === 'creds' ? { user: 'u', password: 'pw' } : undefined),
    configMap: async (_ns, name) =>
      name === 'kube-root-ca.crt'
        ? { 'ca.crt': '-----BEGIN CERTIFICATE-----\n' }
        : name === 'cfg'
          ? { mode: 'fast', level: 'debug' }
          : undefined,
    serviceAccountToken: async (ns, sa, spec) => {
      requests.push({ ns, sa, spec: structuredClone(spec) });
      const a = answer(ns, sa, spec);
      if (a instanceof Error) throw a;
      return a;
    },
  };
  return { sources: s, requests };
}

const issued = (token: string, expirationSeconds = 3600): IssuedToken => ({
  token,
  expiresAt: NOW + expirationSeconds * 1000,
  expirationSeconds,
});

function context(p: NodePod, s: VolumeSources, owner: { fsUser?: number; fsGroup?: number } = {}) {
  return {
    pod: p,
    facts: facts(p),
    sources: s,
    fsUser: owner.fsUser,
    fsGroup: owner.fsGroup,
  } satisfies VolumeContext;
}

const volume = (p: NodePod, name: string): Volume => {
  const vol = p.spec.volumes.find((x) => x.name === name);
  if (!vol) throw new Error(`no volume ${name}`);
  return vol;
};

/** The payload as plain `{path: [data, mode(octal), fsUser?]}` for comparisons. */
const plain = (payload: ReadonlyMap<string, FileProjection>) =>
  Object.fromEntries(
    [...payload].map(([path, f]) => [
      path,
      f.fsUser === undefined ? [f.data, f.mode.toString(8)] : [f.data, f.mode.toString(8), f.fsUser],
    ]),
  );

/** The kube-api-access volume the API server's ServiceAccount admission injects. */
const KUBE_API_ACCESS = {
  name: 'kube-api-access-x7k2p',
  projected: {
    defaultMode: 420,
    sources: [
      { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      {
        downwardAPI: {
          items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
        },
      },
    ],
  },
};

describe('projected volume contents', () => {
  it('the kube-api-access volume: a TokenRequest bound to the pod for its ServiceAccount, the CA, the namespace', async () => {
    const p = pod({ serviceAccountName: 'sa1', volumes: [KUBE_API_ACCESS] });
    const { sources: s, requests } = sources(() => issued('tok-1', 3607));
    const r = await volumeContent(volume(p, KUBE_API_ACCESS.name), context(p, s));
    assert.ok(r?.ok, JSON.stringify(r));
    assert.deepEqual(plain(r.value.payload), {
      token: ['tok-1', '644'],
      'ca.crt': ['-----BEGIN CERTIFICATE-----\n', '644'],
      namespace: ['ns', '644'],
    });
    assert.deepEqual(requests, [
      {
        ns: 'ns',
        sa: 'sa1',
        spec: {
          audiences: [],
          expirationSeconds: 3607,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u-1' },
        },
      },
    ]);
    // Refreshed once 80% of its lifetime has passed.
    assert.equal(r.value.refreshAt, NOW + 3607 * 800);
  });

  it('an audience is requested as the only one; the default lifetime is an hour; the ServiceAccount defaults to "default"', async () => {
    const p = pod({
      volumes: [
        {
          name: 't',
          projected: { sources: [{ serviceAccountToken: { audience: 'vault', path: 'vault/token' } }] },
        },
      ],
    });
    const { sources: s, requests } = sources((_ns, _sa, spec) => issued('aud-tok', spec.expirationSeconds));
    const r = await volumeContent(volume(p, 't'), context(p, s));
    assert.ok(r?.ok);
    assert.deepEqual(plain(r.value.payload), { 'vault/token': ['aud-tok', '644'] });
    assert.equal(requests[0]?.sa, 'default');
    assert.deepEqual(requests[0]?.spec.audiences, ['vault']);
    assert.equal(requests[0]?.spec.expirationSeconds, 3600);
  });

  it('the token is private (0600) to the pod user when all containers run as one, and when there is an fsGroup', async () => {
    const p = pod({ serviceAccountName: 'sa1', volumes: [KUBE_API_ACCESS] });
    const { sources: s } = sources(() => issued('tok'));
    const owned = await volumeContent(volume(p, KUBE_API_ACCESS.name), context(p, s, { fsUser: 1000 }));
    assert.ok(owned?.ok);
    assert.deepEqual(owned.value.payload.get('token'), { data: 'tok', mode: 0o600, fsUser: 1000 });
    assert.equal(owned.value.payload.get('ca.crt')?.fsUser, undefined, 'only the token changes owner');
    const grouped = await volumeContent(volume(p, KUBE_API_ACCESS.name), context(p, s, { fsGroup: 2000 }));
    assert.ok(grouped?.ok);
    assert.deepEqual(grouped.value.payload.get('token'), { data: 'tok', mode: 0o600, fsUser: undefined });
  });

  it('secret, configMap and downwardAPI sources: all keys or the items, item modes over the default mode', async () => {
    const p = pod({
      containers: [{ name: 'main', image: 'x', resources: { limits: { memory: '256Mi' } } }],
      volumes: [
        {
          name: 'all',
          projected: {
            defaultMode: 0o440,
            sources: [
              { secret: { name: 'creds', items: [{ key: 'password', path: 'db/password', mode: 0o400 }] } },
              { configMap: { name: 'cfg' } },
              {
                downwardAPI: {
                  items: [
                    { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
                    { path: 'uid', fieldRef: { fieldPath: 'metadata.uid' } },
                    { path: 'app', fieldRef: { fieldPath: "metadata.labels['app']" } },
                    { path: 'absent', fieldRef: { fieldPath: "metadata.labels['absent']" } },
                    { path: 'note', fieldRef: { fieldPath: "metadata.annotations['note']" }, mode: 0o600 },
                    { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                    { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
                    {
                      path: 'mem',
                      resourceFieldRef: { containerName: 'main', resource: 'limits.memory', divisor: '1Mi' },
                    },
                  ],
                },
              },
            ],
          },
        },
      ],
    });
    const { sources: s, requests } = sources(() => new Error('no tokens here'));
    const r = await volumeContent(volume(p, 'all'), context(p, s));
    assert.ok(r?.ok, JSON.stringify(r));
    assert.deepEqual(plain(r.value.payload), {
      'db/password': ['pw', '400'],
      mode: ['fast', '440'],
      level: ['debug', '440'],
      name: ['p', '440'],
      uid: ['u-1', '440'],
      app: ['demo', '440'],
      absent: ['', '440'],
      note: ['say "hi"', '600'],
      labels: ['app="demo"\ntier="web"', '440'],
      annotations: ['note="say \\"hi\\""', '440'],
      mem: ['256', '440'],
    });
    assert.equal(r.value.refreshAt, undefined, 'nothing to refresh without a token');
    assert.equal(requests.length, 0);
  });

  it('optional sources that are missing are left out; missing required ones are reported, all of them', async () => {
    const p = pod({
      volumes: [
        {
          name: 'opt',
          projected: {
            sources: [
              { secret: { name: 'nope', optional: true } },
              { configMap: { name: 'cfg', items: [{ key: 'missing', path: 'm' }], optional: true } },
              { configMap: { name: 'cfg', items: [{ key: 'mode', path: 'mode' }] } },
            ],
          },
        },
        {
          name: 'bad',
          projected: {
            sources: [
              { serviceAccountToken: { path: 'token' } },
              { secret: { name: 'nope' } },
              { configMap: { name: 'cfg', items: [{ key: 'missing', path: 'm' }] } },
            ],
          },
        },
      ],
      serviceAccountName: 'sa1',
    });
    const { sources: s } = sources(() => new Error('serviceaccounts "sa1" not found'));
    const opt = await volumeContent(volume(p, 'opt'), context(p, s));
    assert.ok(opt?.ok);
    assert.deepEqual(plain(opt.value.payload), { mode: ['fast', '644'] });
    assert.deepEqual(await volumeContent(volume(p, 'bad'), context(p, s)), {
      ok: false,
      error:
        '[failed to fetch token: serviceaccounts "sa1" not found, secret "nope" not found, key "missing" not found in configmap "cfg"]',
    });
  });

  it('a refused TokenRequest alone is the whole message', async () => {
    const p = pod({ serviceAccountName: 'sa1', volumes: [KUBE_API_ACCESS] });
    const { sources: s } = sources(() => new Error('serviceaccounts "sa1" not found'));
    assert.deepEqual(await volumeContent(volume(p, KUBE_API_ACCESS.name), context(p, s)), {
      ok: false,
      error: 'failed to fetch token: serviceaccounts "sa1" not found',
    });
  });

  it('secret, configMap and downwardAPI volumes keep their semantics; emptyDir has no contents', async () => {
    const p = pod({
      volumes: [
        { name: 's', secret: { secretName: 'creds', defaultMode: 0o400 } },
        { name: 'c', configMap: { name: 'cfg', items: [{ key: 'mode', path: 'conf/mode', mode: 0o640 }] } },
        {
          name: 'd',
          downwardAPI: { items: [{ path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } }] },
        },
        { name: 'missing', secret: { secretName: 'nope' } },
        { name: 'e', emptyDir: {} },
      ],
    });
    const { sources: s } = sources(() => new Error('unused'));
    const ctx = context(p, s);
    const content = async (name: string) => {
      const r = await volumeContent(volume(p, name), ctx);
      assert.ok(r?.ok, JSON.stringify(r));
      return plain(r.value.payload);
    };
    assert.deepEqual(await content('s'), { user: ['u', '400'], password: ['pw', '400'] });
    assert.deepEqual(await content('c'), { 'conf/mode': ['fast', '640'] });
    assert.deepEqual(await content('d'), { ns: ['ns', '644'] });
    assert.deepEqual(await volumeContent(volume(p, 'missing'), ctx), {
      ok: false,
      error: 'secret "nope" not found',
    });
    assert.equal(await volumeContent(volume(p, 'e'), ctx), undefined);
  });
});

describe('token refresh and owner', () => {
  it('tokenRefreshAt: at 80% of the lifetime, at most 24 hours after issue', () => {
    assert.equal(tokenRefreshAt(issued('t', 600)), NOW + 480_000);
    assert.equal(tokenRefreshAt(issued('t', 3600)), NOW + 2_880_000);
    assert.equal(tokenRefreshAt(issued('t', 7 * 24 * 3600)), NOW + 24 * 3600_000);
  });

  it('fsUserOf: the runAsUser every container shares (pod or container level), else none', () => {
    const c = (runAsUser?: number) => ({
      name: `c${runAsUser}`,
      image: 'x',
      ...(runAsUser !== undefined ? { securityContext: { runAsUser } } : {}),
    });
    assert.equal(fsUserOf(pod({ securityContext: { runAsUser: 1000 } })), 1000);
    assert.equal(fsUserOf(pod({ initContainers: [c(7)], containers: [c(7)] })), 7);
    assert.equal(fsUserOf(pod({ initContainers: [c(7)], containers: [c(8)] })), undefined);
    assert.equal(fsUserOf(pod({ containers: [c(7), c()] })), undefined);
    assert.equal(fsUserOf(pod()), undefined, 'the image user does not count');
  });

  it('formatMap: sorted key="value" lines', () => {
    assert.equal(formatMap({ b: '2', a: 'x\ny' }), 'a="x\\ny"\nb="2"');
    assert.equal(formatMap({}), '');
  });
});

describe('keeping volumes in step with their objects', () => {
  const vol = (spec: Record<string, unknown>): Volume =>
    pod({ volumes: [{ name: 'v', ...spec }] }).spec.volumes[0] as Volume;

  it('syncsWithObjects: secret and configMap volumes, projected ones with such a source; not tokens alone, downwardAPI or emptyDir', () => {
    assert.equal(syncsWithObjects(vol({ secret: { secretName: 's' } })), true);
    assert.equal(syncsWithObjects(vol({ configMap: { name: 'c' } })), true);
    assert.equal(
      syncsWithObjects(
        vol({
          projected: {
            sources: [{ serviceAccountToken: { path: 't' } }, { configMap: { name: 'kube-root-ca.crt' } }],
          },
        }),
      ),
      true,
    );
    assert.equal(syncsWithObjects(vol({ projected: { sources: [{ secret: { name: 's' } }] } })), true);
    assert.equal(
      syncsWithObjects(vol({ projected: { sources: [{ serviceAccountToken: { path: 't' } }] } })),
      false,
    );
    assert.equal(
      syncsWithObjects(
        vol({ downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name' } }] } }),
      ),
      false,
    );
    assert.equal(syncsWithObjects(vol({ emptyDir: {} })), false);
  });

  it('samePayload: the same paths with the same contents, modes and owners', () => {
    const a = new Map<string, FileProjection>([
      ['api-key', { data: 'k1', mode: 0o440 }],
      ['x/y', { data: 'z', mode: 0o644, fsUser: 1000 }],
    ]);
    assert.equal(samePayload(a, new Map(a)), true);
    assert.equal(samePayload(a, new Map([...a].map(([p, f]) => [p, { ...f }]))), true);
    const changed = (path: string, f: FileProjection) => new Map([...a, [path, f]]);
    assert.equal(samePayload(a, changed('api-key', { data: 'k2', mode: 0o440 })), false, 'content');
    assert.equal(samePayload(a, changed('api-key', { data: 'k1', mode: 0o444 })), false, 'mode');
    assert.equal(samePayload(a, changed('x/y', { data: 'z', mode: 0o644 })), false, 'owner');
    assert.equal(samePayload(a, changed('more', { data: '', mode: 0o644 })), false, 'a file more');
    assert.equal(samePayload(a, new Map([...a].slice(1))), false, 'a file less');
    assert.equal(samePayload(new Map(), new Map()), true);
  });

  it('a Secret that is gone fails the build (the kubelet then keeps the files); an optional one empties the volume', async () => {
    const p = pod();
    const { sources: s } = sources(() => issued('t'));
    const ctx = context(p, s);
    assert.deepEqual(await volumeContent(vol({ secret: { secretName: 'gone' } }), ctx), {
      ok: false,
      error: 'secret "gone" not found',
    });
    const optional = await volumeContent(vol({ secret: { secretName: 'gone', optional: true } }), ctx);
    assert.ok(optional?.ok);
    assert.equal(optional.value.payload.size, 0);
  });

  it("an optional Secret volume skips a listed key the Secret lacks (the server's API-key volume before its key exists)", async () => {
    const p = pod();
    const { sources: s } = sources(() => issued('t'));
    const ctx = context(p, s);
    const items = [{ key: 'api-key', path: 'api-key' }];
    assert.deepEqual(await volumeContent(vol({ secret: { secretName: 'creds', items } }), ctx), {
      ok: false,
      error: 'key "api-key" not found in secret "creds"',
    });
    const lacking = await volumeContent(
      vol({ secret: { secretName: 'creds', defaultMode: 0o440, items, optional: true } }),
      ctx,
    );
    assert.ok(lacking?.ok);
    assert.equal(lacking.value.payload.size, 0, 'no file, no error: the pod starts');
    const partly = await volumeContent(
      vol({
        secret: {
          secretName: 'creds',
          defaultMode: 0o440,
          items: [...items, { key: 'user', path: 'user' }],
          optional: true,
        },
      }),
      ctx,
    );
    assert.ok(partly?.ok);
    assert.deepEqual(plain(partly.value.payload), { user: ['u', '440'] }, 'the keys it has are written');
  });
});

describe('writeVolume (the kubelet atomic writer layout)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'node-agent-volumes-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (data: string, mode = 0o644, fsUser?: number): FileProjection => ({ data, mode, fsUser });
  const mode = (path: string) => (statSync(path).mode & 0o7777).toString(8);
  const visible = (vol: string) => readdirSync(vol).filter((e) => !e.startsWith('..'));

  it('writes the files in a timestamped folder behind ..data, visible through per-entry links, with their modes', () => {
    const vol = join(dir, 'first');
    writeVolume(
      vol,
      new Map([
        ['token', file('tok-1', 0o600)],
        ['ca.crt', file('CA')],
        ['conf/mode', file('fast', 0o440)],
      ]),
      undefined,
      NOW,
    );
    const data = readlinkSync(join(vol, '..data'));
    assert.match(data, /^\.\.2025_06_01_12_00_00\./);
    assert.deepEqual(visible(vol).sort(), ['ca.crt', 'conf', 'token']);
    assert.equal(readlinkSync(join(vol, 'token')), '..data/token');
    assert.ok(lstatSync(join(vol, 'conf')).isSymbolicLink());
    assert.equal(readFileSync(join(vol, 'token'), 'utf8'), 'tok-1');
    assert.equal(readFileSync(join(vol, 'conf', 'mode'), 'utf8'), 'fast');
    assert.equal(mode(join(vol, 'token')), '600');
    assert.equal(mode(join(vol, 'ca.crt')), '644');
    assert.equal(mode(join(vol, 'conf', 'mode')), '440');
    assert.equal(mode(join(vol, data)), '755');
    assert.equal(mode(vol), '755');
  });

  it('a rewrite swaps in the new files, removes the previous data folder and entries no longer there', () => {
    const vol = join(dir, 'rewrite');
    writeVolume(
      vol,
      new Map([
        ['token', file('old')],
        ['gone', file('x')],
      ]),
      undefined,
      NOW,
    );
    const before = readlinkSync(join(vol, '..data'));
    writeVolume(vol, new Map([['token', file('new')]]), undefined, NOW + 1000);
    const now = readlinkSync(join(vol, '..data'));
    assert.notEqual(now, before);
    assert.equal(readFileSync(join(vol, 'token'), 'utf8'), 'new');
    assert.deepEqual(
      readdirSync(vol).sort(),
      ['..data', now, 'token'].sort(),
      'only the data link, the current data folder and current entries',
    );
  });

  it('refuses paths that are absolute, empty or leave the volume', () => {
    for (const path of ['/etc/passwd', '../up', 'a/../../up', '..data', '']) {
      assert.throws(
        () => writeVolume(join(dir, 'bad'), new Map([[path, file('x')]]), undefined, NOW),
        /invalid path/,
      );
    }
  });

  it('gives the token to its user, and everything to the fsGroup with group read (0600 → 0640)', {
    skip: root ? false : 'needs root (chown)',
  }, () => {
    const vol = join(dir, 'owned');
    writeVolume(
      vol,
      new Map([
        ['token', file('tok', 0o600, 1234)],
        ['ca.crt', file('CA', 0o644)],
      ]),
      2345,
      NOW,
    );
    const token = statSync(join(vol, 'token'));
    assert.deepEqual([token.uid, token.gid, mode(join(vol, 'token'))], [1234, 2345, '640']);
    const ca = statSync(join(vol, 'ca.crt'));
    assert.deepEqual([ca.uid, ca.gid, mode(join(vol, 'ca.crt'))], [0, 2345, '644']);
    assert.equal(statSync(vol).gid, 2345);
    assert.equal(mode(vol), '2755');
  });
});
