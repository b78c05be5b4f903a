import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseKubeconfig } from './kubeconfig.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const base = {
  clusters: [
    { name: 'c1', cluster: { server: 'https://127.0.0.1:6443', 'certificate-authority-data': b64('CA') } },
    { name: 'c2', cluster: { server: 'https://127.0.0.2:6443', 'insecure-skip-tls-verify': true } },
  ],
  users: [
    { name: 'u1', user: { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') } },
    { name: 'u2', user: { token: 'tok' } },
  ],
  contexts: [
    { name: 'one', context: { cluster: 'c1', user: 'u1' } },
    { name: 'two', context: { cluster: 'c2', user: 'u2' } },
  ],
  'current-context': 'one',
};

describe('parseKubeconfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('resolves the current context with embedded certificate data', () => {
    const a = parseKubeconfig(JSON.stringify(base), dir);
    assert.equal(a.server.href, 'https://127.0.0.1:6443/');
    assert.deepEqual([a.ca, a.cert, a.key, a.token, a.insecure], ['CA', 'CERT', 'KEY', undefined, false]);
  });
  it('supports tokens, insecure clusters and file references relative to the kubeconfig', () => {
    const two = parseKubeconfig(JSON.stringify({ ...base, 'current-context': 'two' }), dir);
    assert.deepEqual([two.token, two.insecure, two.ca], ['tok', true, undefined]);
    writeFileSync(join(dir, 'ca.crt'), 'FILE-CA');
    const files = {
      ...base,
      clusters: [
        { name: 'c1', cluster: { server: 'https://127.0.0.1:1', 'certificate-authority': 'ca.crt' } },
      ],
    };
    assert.equal(parseKubeconfig(JSON.stringify(files), dir).ca, 'FILE-CA');
  });
  it('names what is wrong', () => {
    assert.throws(() => parseKubeconfig('apiVersion: v1\n', dir), /not JSON/);
    assert.throws(
      () => parseKubeconfig(JSON.stringify({ ...base, 'current-context': 'nope' }), dir),
      /"nope" not found/,
    );
    assert.throws(
      () => parseKubeconfig(JSON.stringify({ ...base, clusters: [] }), dir),
      /cluster "c1" not found/,
    );
    assert.throws(() => parseKubeconfig(JSON.stringify({ clusters: 'x' }), dir), /invalid kubeconfig/);
  });
});
