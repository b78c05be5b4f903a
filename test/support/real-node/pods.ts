// Pods for the real node's e2e files (docs/design/real-node.md): restricted in every field Pod Security's
// `restricted` level checks, put on the real node by name (the test bed runs no scheduler for it), and small Node
// programs they run from the product image (it holds Node at /nodejs/bin/node and nothing else) to reach other
// addresses from inside a pod.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RealNodeInfo } from './info.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Where the kubelet mounts a ServiceAccount's credentials, as the ServiceAccount admission plugin would. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** A pod for the real node running `image`, restricted (uid 1000, RuntimeDefault, no capabilities, read-only root). */
export function restrictedPod(
  node: RealNodeInfo,
  name: string,
  image: string,
  container: Record<string, unknown>,
  spec: Record<string, unknown> = {},
  labels: Record<string, string> = {},
) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: {
      nodeName: node.nodeName,
      tolerations: [{ ...node.taint, operator: 'Equal' }],
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 2,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 1000,
        runAsGroup: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      ...spec,
      containers: [
        {
          name: 'main',
          image,
          imagePullPolicy: 'Never',
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          ...container,
        },
      ],
    },
  };
}

/**
 * The projected volume a ServiceAccount's pod gets in a cluster (the test bed's API server runs without the
 * ServiceAccount admission plugin, so the pod asks for it itself): a bound token, the cluster's CA, the namespace.
 */
export function serviceAccountVolume(): { volume: object; mount: object } {
  return {
    volume: {
      name: 'sa',
      projected: {
        sources: [
          { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          {
            downwardAPI: {
              items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }],
            },
          },
        ],
      },
    },
    mount: { name: 'sa', mountPath: SERVICE_ACCOUNT_DIR, readOnly: true },
  };
}

/**
 * A Node program for `node -e` (run by `kubectl exec` in an idle pod): connects to each HOST:PORT argument in turn,
 * and prints one JSON array with a result per target: `{"target","connected":true,"line":"<first line the server sent>"}` or
 * `{"target","connected":false,"error":"<code>"}` (ETIMEDOUT after 3 s without an answer: a dropped SYN). Exits 0.
 */
export const CONNECT_SCRIPT = `const net = require('node:net');
const probe = (target) => new Promise((resolve) => {
  const [host, port] = target.split(':');
  const s = net.connect({ host, port: Number(port) });
  let data = '';
  const done = (r) => { s.destroy(); resolve({ target, ...r }); };
  s.setTimeout(3000, () => done(s.connecting ? { connected: false, error: 'ETIMEDOUT' } : { connected: true, line: data }));
  s.on('data', (d) => { data += d; if (data.includes('\\n')) done({ connected: true, line: data.split('\\n')[0] }); });
  s.on('end', () => done({ connected: true, line: data.split('\\n')[0] }));
  s.on('error', (e) => done({ connected: false, error: e.code || e.message }));
});
(async () => {
  const results = [];
  for (const target of process.argv.slice(1)) results.push(await probe(target));
  console.log(JSON.stringify(results));
})();`;

/** A Node program for `node -e` that does nothing until it is stopped: a pod to `kubectl exec` probes in. */
export const IDLE_SCRIPT = `process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1 << 30);`;

/**
 * A Node program for `node -e`: an in-cluster client as client libraries are. It takes the API server from
 * KUBERNETES_SERVICE_HOST/PORT (set by the kubelet), the token, CA and namespace from the ServiceAccount folder,
 * asks who it is (SelfSubjectReview), then makes one SelfSubjectAccessReview per `verb:resource` argument in its
 * namespace; writes `{"host","port","user","allowed":{"verb:resource":bool}}` to the termination log.
 */
export const ACCESS_REVIEW_SCRIPT = `const fs = require('node:fs');
const https = require('node:https');
const dir = '${SERVICE_ACCOUNT_DIR}';
const host = process.env.KUBERNETES_SERVICE_HOST;
const port = process.env.KUBERNETES_SERVICE_PORT;
const token = fs.readFileSync(dir + '/token', 'utf8');
const ca = fs.readFileSync(dir + '/ca.crt');
const namespace = fs.readFileSync(dir + '/namespace', 'utf8');
const post = (path, body) => new Promise((resolve, reject) => {
  const req = https.request({ host, port, path, method: 'POST', ca, timeout: 10000,
    headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' } }, (res) => {
    let text = '';
    res.on('data', (d) => { text += d; });
    res.on('end', () => res.statusCode === 201 ? resolve(JSON.parse(text)) : reject(new Error(res.statusCode + ' ' + text)));
  });
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', reject);
  req.end(JSON.stringify(body));
});
(async () => {
  const me = await post('/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  const allowed = {};
  for (const arg of process.argv.slice(1).filter((a) => a.includes(':'))) {
    const [verb, resource] = arg.split(':');
    const r = await post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { namespace, verb, resource } } });
    allowed[arg] = r.status.allowed;
  }
  fs.writeFileSync('/dev/termination-log', JSON.stringify({ host, port, user: me.status.userInfo.username, allowed }));
})().catch((e) => { fs.writeFileSync('/dev/termination-log', JSON.stringify({ error: String(e) })); process.exit(1); });`;

/**
 * A Node program for `node -e`: POSTs its second argument (JSON) to its first (an http URL) with
 * `authorization: Bearer $API_KEY`, and writes `{"status","body"}` to the termination log. Exits 0 on any answer.
 */
export const POST_SCRIPT = `const http = require('node:http');
const fs = require('node:fs');
const [url, body] = process.argv.slice(-2);
const report = (r) => fs.writeFileSync('/dev/termination-log', JSON.stringify(r));
const req = http.request(url, { method: 'POST', timeout: 60000,
  headers: { 'content-type': 'application/json', authorization: 'Bearer ' + process.env.API_KEY } }, (res) => {
  let text = '';
  res.on('data', (d) => { text += d; });
  res.on('end', () => report({ status: res.statusCode, body: text.slice(0, 3000) }));
});
req.on('timeout', () => req.destroy(new Error('timeout')));
req.on('error', (e) => { report({ error: e.code || e.message }); process.exit(1); });
req.end(body);`;

/** The node namespace's iptables rules and ipsets as text (what kube-proxy and kube-router wrote); needs root. */
export function nodeRules(node: RealNodeInfo): string {
  const r = spawnSync('ip', ['netns', 'exec', node.netns, 'sh', '-c', 'iptables-save; ipset list'], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`reading the node's rules: ${r.stderr}`);
  return r.stdout;
}

/** The kubectl binary of the control plane's release (already built: the test bed runs its binaries). */
export function kubectlBinary(): string {
  const bin = spawnSync('bash', [join(ROOT, 'scripts', 'build-kube-binaries')], { encoding: 'utf8' });
  if (bin.status !== 0) throw new Error(`scripts/build-kube-binaries: ${bin.stderr}`);
  return join(bin.stdout.trim().split('\n').at(-1) ?? '', 'kubectl');
}
