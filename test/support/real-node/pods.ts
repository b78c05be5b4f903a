// Pods for the real node's e2e files (docs/design/real-node.md): restricted in every field Pod Security's
// `restricted` level checks, put on the real node by name (the test bed runs no scheduler for it), and small Node
// programs they run from the product image (it holds Node at /nodejs/bin/node and nothing else) to reach other
// addresses from inside a pod.
import type { RealNodeInfo } from './info.ts';

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
 * A Node program for `node -e`: connects to HOST:PORT (its arguments), and writes one JSON line to the termination
 * log: `{"connected":true,"line":"<first line the server sent>"}` or `{"connected":false,"error":"<code>"}`
 * (ETIMEDOUT after 4 s without an answer: a dropped SYN). Exits 0 either way.
 */
export const CONNECT_SCRIPT = `const net = require('node:net');
const fs = require('node:fs');
const [host, port] = process.argv.slice(-2);
const report = (r) => { fs.writeFileSync('/dev/termination-log', JSON.stringify(r)); process.exit(0); };
const s = net.connect({ host, port: Number(port) });
s.setTimeout(4000, () => report({ connected: false, error: 'ETIMEDOUT' }));
let data = '';
s.on('connect', () => s.setTimeout(4000, () => report({ connected: true, line: data })));
s.on('data', (d) => { data += d; if (data.includes('\\n')) report({ connected: true, line: data.split('\\n')[0] }); });
s.on('end', () => report({ connected: true, line: data.split('\\n')[0] }));
s.on('error', (e) => report({ connected: false, error: e.code || e.message }));`;

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
