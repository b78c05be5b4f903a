// The hermetic test control plane: etcd, kube-apiserver, kube-controller-manager and the test node agent,
// all on 127.0.0.1, and beside it the session store (versitygw, an S3-compatible server; issue 29). Run through `scripts/testbed up|down|status|env|restart` (the wrapper holds a lock so
// concurrent callers share one instance). Human-readable progress goes to stderr; `up` (and `restart`) print the
// admin kubeconfig path as the LAST line of stdout.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { arch } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { S3Client } from '../src/store/s3/index.ts';
import { apiPath, KubeClient } from '../test/support/kube-client.ts';
import {
  type ProcRecord,
  procAlive,
  procStart,
  readProcRecords,
  writeProcRecords,
} from '../test/support/proc.ts';
import { readRealNodeInfo } from '../test/support/real-node/info.ts';
import { NodeSchema } from '../test/support/schemas.ts';
import { readTestbedInfo, type TestbedInfo } from '../test/support/testbed.ts';
import {
  REAL_NODE_NAME,
  type RealNodeHost,
  realNodeDown,
  layout as realNodeLayout,
  realNodeRunning,
  realNodeUp,
  SERVICE_CIDR,
} from './real-node.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const STATE = process.env.AGENT_TESTBED_DIR ?? join(ROOT, '.testbed');
/** Image tables that tests add while the node runs (one file each; the node reads the folder on every pod). */
const IMAGE_DIR = join(STATE, 'images.d');
const CERTS = join(STATE, 'certs');
const LOGS = join(STATE, 'logs');
const KUBECONFIG = join(STATE, 'admin.kubeconfig');
const PIDS = join(STATE, 'pids.json');
const NODE_STATE = join(STATE, 'node');
const NODE_NAME = 'testbed-node';
/** A built-in resource nobody else uses; its watch cache is off so watches hit etcd (410 after compaction). */
const UNCACHED_RESOURCE = 'podtemplates';
/**
 * Our three custom resources are served without a watch cache too, so a controller's watch from a compacted
 * resourceVersion really gets 410 Gone (a cached watch is answered from the cache's own history, whatever etcd
 * compacted). `--watch-cache-sizes` applies to custom resources although its help text says otherwise: the
 * apiextensions REST options getter (apiextensions-apiserver v0.36 `NewCRDRESTOptionsGetter`) clears the sizes
 * on a copy it uses only for the storage config and hands the original options to `StorageFactoryRestOptionsFactory`,
 * which looks the resource (`<plural>.<group>`) up in them.
 */
const UNCACHED_CUSTOM_RESOURCES = ['agents', 'stations', 'agentdefinitions'].map(
  (r) => `${r}.agents.re-cinq.com`,
);
/** The exact command line `up` started kube-apiserver with; `restart kube-apiserver` starts it again from it. */
const APISERVER_LAUNCH = join(STATE, 'kube-apiserver.launch.json');
/** kube-apiserver's audit policy (written by `up`) and its JSON-lines audit log (recorded as `auditLog`). */
const AUDIT_POLICY = join(STATE, 'audit-policy.yaml');
const AUDIT_LOG = join(LOGS, 'audit.log');
/**
 * The audit policy: writes (create, update, patch, delete, whatever their outcome) to what the chaos suite checks
 * (Agents and their status, Jobs, Leases, NetworkPolicies), with request and response bodies; the run pods' writes
 * and the Job controller's writes of Job status with their request bodies, and the reads of the pods' logs (metadata),
 * which tell a violation's story; nothing else is logged. One event per request (stage ResponseComplete;
 * RequestReceived is omitted). `resources` names match the resource alone, `agents/status` the status subresource.
 */
const AUDIT_POLICY_YAML = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
  - RequestReceived
rules:
  - level: RequestResponse
    verbs: [create, update, patch, delete]
    resources:
      - group: agents.re-cinq.com
        resources: [agents, agents/status]
      - group: batch
        resources: [jobs]
      - group: coordination.k8s.io
        resources: [leases]
      - group: networking.k8s.io
        resources: [networkpolicies]
  - level: Request
    verbs: [create, update, patch, delete]
    resources:
      - group: ""
        resources: [pods, pods/status]
      - group: batch
        resources: [jobs/status]
  - level: Metadata
    verbs: [get]
    resources:
      - group: ""
        resources: [pods/log]
  - level: None
`;
/**
 * The session store: versitygw with its POSIX backend (objects as files under `session-store/data`, their metadata
 * in the sidecar folder `session-store/meta`, so no extended attributes are needed of the file system), root
 * credentials generated at each start and written to SESSION_STORE_CREDENTIALS (mode 0600, never on a command line),
 * and one bucket.
 */
const SESSION_STORE_DIR = join(STATE, 'session-store');
const SESSION_STORE_CREDENTIALS = join(STATE, 'session-store.credentials.json');
const SESSION_STORE_BUCKET = 'agent-sessions';
const SESSION_STORE_REGION = 'us-east-1';
const START_TIMEOUT_MS = Number(process.env.AGENT_TESTBED_START_TIMEOUT_MS ?? 90_000);

/** Milliseconds as seconds with one decimal. */
function secs(ms: number): string {
  return (ms / 1000).toFixed(1);
}

function say(message: string): void {
  process.stderr.write(`testbed: ${message}\n`);
}

// ---------------------------------------------------------------------------------------------
// Processes: recorded as pid + kernel start time so a recycled pid is never signalled by mistake.

const alive = procAlive;
const readRecords = readProcRecords;
const writeRecords = (records: readonly ProcRecord[]): void => writeProcRecords(PIDS, records);

async function stopProcess(rec: ProcRecord, graceMs: number, group = false): Promise<void> {
  if (!alive(rec)) return;
  const target = group ? -rec.pid : rec.pid;
  try {
    process.kill(target, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (alive(rec) && Date.now() < deadline) await delay(50);
  if (alive(rec)) {
    say(`${rec.name} (pid ${rec.pid}) ignored SIGTERM for ${graceMs} ms; sending SIGKILL`);
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // already gone
    }
    while (alive(rec)) await delay(20);
  }
}

function startDaemon(
  name: string,
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): ProcRecord {
  const log = join(LOGS, `${name}.log`);
  const fd = openSync(log, 'a');
  const child = spawn(command, args, { cwd: ROOT, detached: true, stdio: ['ignore', fd, fd], env });
  closeSync(fd);
  child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${name} (${command})`);
  const start = procStart(pid);
  if (start === undefined) throw new Error(`${name} exited at once; see ${log}`);
  return { name, pid, start };
}

function tail(file: string, lines = 25): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// ---------------------------------------------------------------------------------------------
// Certificates (openssl, ECDSA P-256, envtest style).

function openssl(args: readonly string[]): void {
  const r = spawnSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.error) throw new Error(`openssl is required: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr.trim()}`);
}

function certValid(crt: string): boolean {
  if (!existsSync(crt)) return false;
  return (
    spawnSync('openssl', ['x509', '-checkend', '86400', '-noout', '-in', crt], { stdio: 'ignore' }).status ===
    0
  );
}

function leaf(name: string, subject: string, ext: string): void {
  const key = join(CERTS, `${name}.key`);
  const csr = join(CERTS, `${name}.csr`);
  const extFile = join(CERTS, `${name}.ext`);
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
  openssl(['req', '-new', '-key', key, '-subj', subject, '-out', csr]);
  writeFileSync(extFile, `${ext}\n`);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    join(CERTS, 'ca.crt'),
    '-CAkey',
    join(CERTS, 'ca.key'),
    '-set_serial',
    `0x${Date.now().toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`,
    '-days',
    '30',
    '-extfile',
    extFile,
    '-out',
    join(CERTS, `${name}.crt`),
  ]);
  rmSync(csr);
  rmSync(extFile);
}

function ensureCerts(): void {
  const all = ['ca', 'apiserver', 'admin', 'kubelet-client', 'kubelet-serving'].map((n) =>
    join(CERTS, `${n}.crt`),
  );
  if (all.every(certValid) && existsSync(join(CERTS, 'sa.key')) && existsSync(join(CERTS, 'sa.pub'))) return;
  say('generating certificates');
  rmSync(CERTS, { recursive: true, force: true });
  mkdirSync(CERTS, { recursive: true, mode: 0o700 });
  const caKey = join(CERTS, 'ca.key');
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', caKey]);
  openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    caKey,
    '-subj',
    '/O=agent-controller/CN=agent-controller-testbed-ca',
    '-days',
    '30',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    '-out',
    join(CERTS, 'ca.crt'),
  ]);
  const server = 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth';
  const client = 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth';
  // The `kubernetes` Service's names and ClusterIP (10.0.0.1, what in-cluster clients on the real node dial), and the
  // real node's forwarder address (docs/design/real-node.md), so clients there verify the API server as they would
  // in a cluster.
  leaf(
    'apiserver',
    '/CN=kube-apiserver',
    `${server}\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1,IP:${realNodeLayout(STATE).hostIP}`,
  );
  leaf('admin', '/O=system:masters/CN=admin', client);
  leaf('kubelet-client', '/O=system:masters/CN=kube-apiserver-kubelet-client', client);
  leaf(
    'kubelet-serving',
    `/O=system:nodes/CN=system:node:${NODE_NAME}`,
    `${server}\nsubjectAltName=IP:127.0.0.1`,
  );
  openssl([
    'genpkey',
    '-algorithm',
    'EC',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-out',
    join(CERTS, 'sa.key'),
  ]);
  openssl(['pkey', '-in', join(CERTS, 'sa.key'), '-pubout', '-out', join(CERTS, 'sa.pub')]);
}

function writeKubeconfig(apiserverPort: number): void {
  const b64 = (name: string): string => readFileSync(join(CERTS, name)).toString('base64');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'testbed',
        cluster: {
          server: `https://127.0.0.1:${apiserverPort}`,
          'certificate-authority-data': b64('ca.crt'),
        },
      },
    ],
    users: [
      {
        name: 'admin',
        user: { 'client-certificate-data': b64('admin.crt'), 'client-key-data': b64('admin.key') },
      },
    ],
    contexts: [{ name: 'testbed', context: { cluster: 'testbed', user: 'admin', namespace: 'default' } }],
    'current-context': 'testbed',
    preferences: {},
  };
  writeFileSync(KUBECONFIG, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
}

// ---------------------------------------------------------------------------------------------

/** Distinct free TCP ports on 127.0.0.1 (all held open together, then released). */
async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolvePromise, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolvePromise);
      });
      const addr = server.address();
      if (addr === null || typeof addr === 'string') throw new Error('no port');
      ports.push(addr.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  }
}

function binaries(...args: string[]): string {
  const r = spawnSync('bash', [join(ROOT, 'scripts', 'build-kube-binaries'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error('scripts/build-kube-binaries failed');
  const bin = r.stdout.trim().split('\n').at(-1);
  if (!bin) throw new Error('scripts/build-kube-binaries printed no folder');
  return bin;
}

/** The versitygw binary (scripts/build-versitygw: built from its Go module once, then cached). */
function versitygwBinary(): string {
  const r = spawnSync('bash', [join(ROOT, 'scripts', 'build-versitygw')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error('scripts/build-versitygw failed');
  const bin = r.stdout.trim().split('\n').at(-1);
  if (!bin) throw new Error('scripts/build-versitygw printed no path');
  return bin;
}

/** Whether the session store answers its health check. */
async function sessionStoreHealthy(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(3000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * Starts versitygw on `port` with fresh data, credentials and bucket; returns what testbed.json records of it.
 * `record` keeps its process with the others (stopped by `down`).
 */
async function startSessionStore(
  bin: string,
  port: number,
  env: NodeJS.ProcessEnv,
  procs: ProcRecord[],
  record: (rec: ProcRecord) => ProcRecord,
): Promise<NonNullable<TestbedInfo['sessionStore']>> {
  rmSync(SESSION_STORE_DIR, { recursive: true, force: true });
  const data = join(SESSION_STORE_DIR, 'data');
  const meta = join(SESSION_STORE_DIR, 'meta');
  mkdirSync(data, { recursive: true });
  mkdirSync(meta, { recursive: true });
  const credentials = {
    accessKeyId: `testbed${randomBytes(6).toString('hex')}`,
    secretAccessKey: randomBytes(30).toString('base64url'),
  };
  writeFileSync(SESSION_STORE_CREDENTIALS, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  const endpoint = `http://127.0.0.1:${port}`;
  record(
    startDaemon(
      'versitygw',
      bin,
      ['--port', `127.0.0.1:${port}`, '--health', '/health', '--quiet', 'posix', '--sidecar', meta, data],
      {
        ...env,
        ROOT_ACCESS_KEY_ID: credentials.accessKeyId,
        ROOT_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        VGW_REGION: SESSION_STORE_REGION,
      },
    ),
  );
  await waitFor('versitygw /health', procs, async () =>
    (await sessionStoreHealthy(endpoint)) ? true : undefined,
  );
  const client = new S3Client({
    endpoint,
    bucket: SESSION_STORE_BUCKET,
    region: SESSION_STORE_REGION,
    credentials,
  });
  await waitFor('the session store bucket', procs, async () => {
    const made = await client.createBucket();
    if (!made.ok) throw new Error(`${made.error.code}: ${made.error.message}`);
    return true;
  });
  return {
    endpoint,
    bucket: SESSION_STORE_BUCKET,
    region: SESSION_STORE_REGION,
    credentialsFile: SESSION_STORE_CREDENTIALS,
  };
}

function imageTable(): string {
  const file = join(STATE, 'images.json');
  // The images' files are bind-mounted under /opt/agent-controller (read-only, readable by any user, as in a
  // real image), so a checkout in a private folder still runs as a non-root container user.
  const app = '/opt/agent-controller';
  const bundle = `${app}/agent-controller.mjs`;
  const files = { [bundle]: join(ROOT, 'dist', 'agent-controller.mjs') };
  const table = {
    'agent-controller:e2e': {
      entrypoint: [`${app}/node`, bundle],
      files: { ...files, [`${app}/node`]: realpathSync(process.execPath) },
    },
    'agent-controller:e2e-deno': {
      entrypoint: [`${app}/deno`, 'run', '-A', bundle],
      env: { DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1' },
      files: { ...files, [`${app}/deno`]: realpathSync(join(ROOT, 'node_modules', '.bin', 'deno')) },
    },
  };
  writeFileSync(file, `${JSON.stringify(table, null, 2)}\n`);
  return file;
}

class FatalStart extends Error {
  constructor(
    message: string,
    readonly component: string,
  ) {
    super(message);
  }
}

/** Polls `attempt` until it yields a value; fails fast when one of `procs` dies, else at the deadline. */
async function waitFor<T>(
  what: string,
  procs: readonly ProcRecord[],
  attempt: () => Promise<T | undefined>,
  timeoutMs = START_TIMEOUT_MS,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = 'nothing yet';
  for (;;) {
    const dead = procs.find((p) => !alive(p));
    if (dead) throw new FatalStart(`${dead.name} exited while waiting for ${what}`, dead.name);
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (error) {
      last = error instanceof Error ? error.message : error;
    }
    if (Date.now() >= deadline) {
      throw new FatalStart(
        `timed out waiting for ${what} (last: ${String(last)})`,
        procs.at(-1)?.name ?? 'testbed',
      );
    }
    await delay(100);
  }
}

/** How a daemon was started: binary and argv. */
const LaunchSchema = v.object({ command: v.string(), args: v.array(v.string()) });
type Launch = v.InferOutput<typeof LaunchSchema>;

/** kube-apiserver's flags for this testbed (envtest style); the certificates are in CERTS. */
function apiserverArgs(etcdUrl: string, apiPort: number): string[] {
  const c = (name: string): string => join(CERTS, name);
  return [
    `--etcd-servers=${etcdUrl}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    `--cert-dir=${join(STATE, 'apiserver-certs')}`,
    `--tls-cert-file=${c('apiserver.crt')}`,
    `--tls-private-key-file=${c('apiserver.key')}`,
    `--client-ca-file=${c('ca.crt')}`,
    '--authorization-mode=RBAC',
    `--service-account-issuer=https://127.0.0.1:${apiPort}`,
    `--service-account-key-file=${c('sa.pub')}`,
    `--service-account-signing-key-file=${c('sa.key')}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--disable-admission-plugins=ServiceAccount',
    '--endpoint-reconciler-type=none',
    '--allow-privileged=true',
    `--kubelet-client-certificate=${c('kubelet-client.crt')}`,
    `--kubelet-client-key=${c('kubelet-client.key')}`,
    `--kubelet-certificate-authority=${c('ca.crt')}`,
    '--kubelet-preferred-address-types=InternalIP',
    `--watch-cache-sizes=${[UNCACHED_RESOURCE, ...UNCACHED_CUSTOM_RESOURCES].map((r) => `${r}#0`).join(',')}`,
    '--profiling=false',
    // On SIGTERM, end open watches at once (clients reconnect) instead of holding the shutdown until the
    // request timeout (60 s): `restart kube-apiserver` then stops it in about a second.
    '--shutdown-watch-termination-grace-period=5s',
    // Audit log of the writes the chaos suite checks (AUDIT_POLICY_YAML), one JSON event a line; the default
    // (blocking) mode writes each event before the response is sent, so lines are in completion order. Rotated at
    // 100 MB into audit-<timestamp>.log beside it, 5 backups kept.
    `--audit-policy-file=${AUDIT_POLICY}`,
    `--audit-log-path=${AUDIT_LOG}`,
    '--audit-log-format=json',
    '--audit-log-maxsize=100',
    '--audit-log-maxbackup=5',
  ];
}

/** Writes the audit policy kube-apiserver's flags name (before it starts; the same text every time). */
function writeAuditPolicy(): void {
  writeFileSync(AUDIT_POLICY, AUDIT_POLICY_YAML);
}

/** Says so when the running kube-apiserver's flags are not the ones this code would start it with. */
function warnStaleApiserverFlags(info: TestbedInfo): void {
  const rec = readRecords(PIDS).find((r) => r.name === 'kube-apiserver');
  const launch = rec && apiserverLaunch(rec);
  if (!launch) return;
  const wanted = apiserverArgs(info.etcd, Number(new URL(info.apiserver).port));
  if (JSON.stringify(launch.args) !== JSON.stringify(wanted))
    say(
      'note: kube-apiserver runs with the flags of an older testbed (`restart kube-apiserver` keeps them); ' +
        '`scripts/testbed down && scripts/testbed up` applies the current ones',
    );
}

/** Hash of the code the node agent runs, so `up` can restart a stale agent of a shared instance. */
function nodeAgentSourceHash(): string {
  const hash = createHash('sha256');
  const agentDir = join(ROOT, 'test', 'node-agent');
  const files = [
    ...readdirSync(agentDir)
      .filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))
      .map((n) => join(agentDir, n)),
    // What the agent imports from outside its folder.
    ...['kube-client.ts', 'kubeconfig.ts', 'schemas.ts', 'proc.ts'].map((n) =>
      join(ROOT, 'test', 'support', n),
    ),
    ...['log.ts', 'result.ts'].map((n) => join(ROOT, 'src', 'shared', n)),
  ].sort();
  for (const file of files) hash.update(file).update(existsSync(file) ? readFileSync(file) : '');
  return hash.digest('hex').slice(0, 16);
}

function startNodeAgent(kubeletPort: number, env: NodeJS.ProcessEnv): ProcRecord {
  const c = (name: string): string => join(CERTS, name);
  const images = imageTable();
  mkdirSync(IMAGE_DIR, { recursive: true });
  return startDaemon(
    'node-agent',
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'test', 'node-agent', 'main.ts'),
      `--kubeconfig=${KUBECONFIG}`,
      `--node-name=${NODE_NAME}`,
      `--port=${kubeletPort}`,
      `--state-dir=${NODE_STATE}`,
      `--tls-cert=${c('kubelet-serving.crt')}`,
      `--tls-key=${c('kubelet-serving.key')}`,
      `--client-ca=${c('ca.crt')}`,
      `--images=${images}`,
      `--images=${IMAGE_DIR}`,
      ...(process.env.AGENT_TESTBED_IMAGES ? [`--extra-images=${process.env.AGENT_TESTBED_IMAGES}`] : []),
    ],
    env,
  );
}

const LeaseSchema = v.looseObject({
  spec: v.optional(v.looseObject({ renewTime: v.optional(v.string()) }), {}),
});

/** Waits until the node agent renewed its Lease at or after `since` (it does so right after starting). */
async function waitLeaseRenewed(
  client: KubeClient,
  procs: readonly ProcRecord[],
  since: number,
): Promise<void> {
  const path = apiPath('coordination.k8s.io/v1', 'leases', { namespace: 'kube-node-lease', name: NODE_NAME });
  await waitFor('the node agent to renew its Lease', procs, async () => {
    const lease = await client.tryGet(path, LeaseSchema);
    const renewed = Date.parse(lease?.spec.renewTime ?? '');
    return renewed >= since - 1000 ? true : undefined;
  });
}

/** Replaces a running node agent with one running the current code; false when that failed. */
async function restartNodeAgent(
  info: TestbedInfo,
  hash: string,
  why = 'the node agent code changed; restarting the node agent (the control plane keeps its state)',
): Promise<boolean> {
  const records = readRecords(PIDS);
  const old = records.find((r) => r.name === 'node-agent');
  if (!old) return false;
  say(why);
  await stopProcess(old, 40_000);
  const env = { ...process.env };
  delete env.KUBECONFIG;
  const since = Date.now();
  const client = KubeClient.fromKubeconfig(KUBECONFIG);
  try {
    const fresh = startNodeAgent(info.kubeletPort, env);
    writeRecords(records.map((r) => (r === old ? fresh : r)));
    await waitLeaseRenewed(client, [fresh], since);
  } catch (error) {
    say(`node agent restart failed: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  } finally {
    client.close();
  }
  writeFileSync(
    join(STATE, 'testbed.json'),
    `${JSON.stringify({ ...info, nodeAgentHash: hash }, null, 2)}\n`,
  );
  return true;
}

async function healthy(info: TestbedInfo | undefined): Promise<boolean> {
  if (!info) return false;
  const records = readRecords(PIDS);
  if (records.length < 5 || !records.every(alive)) return false;
  // A test bed started before the session store existed is started again.
  if (info.sessionStore === undefined || !(await sessionStoreHealthy(info.sessionStore.endpoint)))
    return false;
  const client = KubeClient.fromKubeconfig(KUBECONFIG);
  try {
    const ready = await client.request('GET', '/readyz', { timeoutMs: 3000 });
    if (ready.status !== 200) return false;
    const node = await client.tryGet(apiPath('v1', 'nodes', { name: NODE_NAME }), NodeSchema);
    return node?.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
  } catch {
    return false;
  } finally {
    client.close();
  }
}

async function down(): Promise<void> {
  // The real node first (it needs the API server to delete its Node), when one was started here.
  if (['real-node.pids.json', 'real-node.net', 'real-node'].some((f) => existsSync(join(STATE, f))))
    await realNodeDown(realNodeHost(0, ''));
  const records = readRecords(PIDS);
  // Reverse start order: the node agent first (it stops its pods), etcd last.
  for (const rec of [...records].reverse()) {
    if (!alive(rec)) continue;
    say(`stopping ${rec.name} (pid ${rec.pid})`);
    await stopProcess(rec, rec.name === 'node-agent' ? 40_000 : 15_000);
  }
  // Pod processes the node agent could not stop (e.g. it was killed): their process groups.
  for (const rec of readRecords(join(NODE_STATE, 'processes.json'))) {
    if (alive(rec)) {
      say(`stopping leftover pod process ${rec.name} (pid ${rec.pid})`);
      await stopProcess(rec, 2_000, true);
    }
  }
  rmSync(PIDS, { force: true });
  rmSync(APISERVER_LAUNCH, { force: true });
}

/** `up --real-node` or AGENT_TESTBED_REAL_NODE=1: also the real node (scripts/real-node.ts, issue 26). */
const WANT_REAL_NODE = process.argv.includes('--real-node') || process.env.AGENT_TESTBED_REAL_NODE === '1';

/** What the real node uses of this test bed. */
function realNodeHost(apiPort: number, bin: string): RealNodeHost {
  return {
    state: STATE,
    certs: CERTS,
    logs: LOGS,
    kubeconfig: KUBECONFIG,
    apiPort,
    bin,
    say,
    leaf,
    startDaemon,
    stopProcess: (rec, graceMs) => stopProcess(rec, graceMs),
  };
}

/** Whether the real node of this test bed runs and its Node is Ready. */
async function realNodeReady(): Promise<boolean> {
  if (!realNodeRunning(STATE, KUBECONFIG)) return false;
  const client = KubeClient.fromKubeconfig(KUBECONFIG);
  try {
    const node = await client.tryGet(apiPath('v1', 'nodes', { name: REAL_NODE_NAME }), NodeSchema);
    return node?.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
  } catch {
    return false;
  } finally {
    client.close();
  }
}

/** Starts the real node on the running control plane unless it runs already; false (exit code 1) when it failed. */
async function ensureRealNode(info: TestbedInfo): Promise<boolean> {
  if (await realNodeReady()) {
    say(`real node ${REAL_NODE_NAME} already running`);
    return true;
  }
  const host = realNodeHost(Number(new URL(info.apiserver).port), '');
  try {
    await realNodeUp({ ...host, bin: binaries('--kubelet') });
    return true;
  } catch (error) {
    say(`real node start failed: ${error instanceof Error ? error.message : String(error)}`);
    for (const log of [
      'real-node-containerd',
      'real-node-kubelet',
      'real-node-kube-proxy',
      'real-node-kube-router',
    ].map((n) => join(LOGS, `${n}.log`)))
      if (existsSync(log)) say(`last lines of ${log}:\n${tail(log, 15)}`);
    await realNodeDown(host);
    say('the control plane keeps running without the real node');
    process.exitCode = 1;
    return false;
  }
}

const CLI_STARTED = Date.now();

/** Starts everything (or reuses a healthy instance); one retry with fresh ports after a failed start. */
async function up(attempt = 1): Promise<void> {
  const started = CLI_STARTED;
  const current = readTestbedInfo(KUBECONFIG);
  if (current && (await healthy(current))) {
    const hash = nodeAgentSourceHash();
    if (current.nodeAgentHash === hash || (await restartNodeAgent(current, hash))) {
      warnStaleApiserverFlags(current);
      say(`already running; logs in ${LOGS}`);
      if (WANT_REAL_NODE && !(await ensureRealNode(current))) return;
      process.stdout.write(`${KUBECONFIG}\n`);
      return;
    }
  }
  await down();
  for (const dir of ['etcd', 'node', 'logs', 'apiserver-certs'])
    rmSync(join(STATE, dir), { recursive: true, force: true });
  rmSync(join(STATE, 'testbed.json'), { force: true });
  mkdirSync(LOGS, { recursive: true });
  mkdirSync(NODE_STATE, { recursive: true });
  const bin = binaries();
  const versitygw = versitygwBinary();
  ensureCerts();
  const [etcdPort, peerPort, apiPort, kubeletPort, storePort] = (await freePorts(5)) as [
    number,
    number,
    number,
    number,
    number,
  ];
  writeKubeconfig(apiPort);
  const env = { ...process.env };
  delete env.KUBECONFIG;
  const procs: ProcRecord[] = [];
  const record = (rec: ProcRecord): ProcRecord => {
    procs.push(rec);
    writeRecords(procs);
    return rec;
  };
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  let sessionStore: TestbedInfo['sessionStore'];
  try {
    record(
      startDaemon(
        'etcd',
        join(bin, 'etcd'),
        [
          '--name=testbed',
          `--data-dir=${join(STATE, 'etcd')}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
          `--initial-cluster=testbed=http://127.0.0.1:${peerPort}`,
          '--unsafe-no-fsync=true',
          '--enable-grpc-gateway=true',
          '--log-level=warn',
        ],
        env,
      ),
    );
    await waitFor('etcd health', procs, async () => {
      const res = await fetch(`${etcdUrl}/health`);
      return res.ok && (await res.text()).includes('"true"') ? true : undefined;
    });
    const c = (name: string): string => join(CERTS, name);
    writeAuditPolicy();
    const launch: Launch = { command: join(bin, 'kube-apiserver'), args: apiserverArgs(etcdUrl, apiPort) };
    writeFileSync(APISERVER_LAUNCH, `${JSON.stringify(launch, null, 2)}\n`);
    record(startDaemon('kube-apiserver', launch.command, launch.args, env));
    const client = KubeClient.fromKubeconfig(KUBECONFIG);
    try {
      await waitFor('kube-apiserver /readyz', procs, async () => {
        const res = await client.request('GET', '/readyz', { timeoutMs: 2000 });
        return res.status === 200 ? true : undefined;
      });
      record(
        startDaemon(
          'kube-controller-manager',
          join(bin, 'kube-controller-manager'),
          [
            `--kubeconfig=${KUBECONFIG}`,
            [
              '--controllers=job-controller',
              'garbage-collector-controller',
              'ttl-after-finished-controller',
              'namespace-controller',
              'serviceaccount-controller',
              'serviceaccount-token-controller',
              'root-ca-certificate-publisher-controller',
              'deployment-controller',
              'replicaset-controller',
              // Aggregated ClusterRoles (view, edit, admin) get their rules, as in any cluster.
              'clusterrole-aggregation-controller',
            ].join(','),
            '--leader-elect=false',
            '--secure-port=0',
            // Shared by several test suites (and benchmarks creating hundreds of Jobs): the default
            // client rate limit (20 QPS) and 5 Job workers let one busy suite delay everyone's pods.
            '--kube-api-qps=100',
            '--kube-api-burst=200',
            '--concurrent-job-syncs=10',
            '--use-service-account-credentials=false',
            `--service-account-private-key-file=${c('sa.key')}`,
            `--root-ca-file=${c('ca.crt')}`,
          ],
          env,
        ),
      );
      record(startNodeAgent(kubeletPort, env));
      await waitFor('the test node to be Ready', procs, async () => {
        const node = await client.tryGet(apiPath('v1', 'nodes', { name: NODE_NAME }), NodeSchema);
        return node?.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True')
          ? true
          : undefined;
      });
      await waitFor('the default ServiceAccount', procs, () =>
        client.tryGet(apiPath('v1', 'serviceaccounts', { namespace: 'default', name: 'default' })),
      );
      sessionStore = await startSessionStore(versitygw, storePort, env, procs, record);
    } finally {
      client.close();
    }
  } catch (error) {
    const component = error instanceof FatalStart ? error.component : undefined;
    say(`start failed: ${error instanceof Error ? error.message : String(error)}`);
    if (component)
      say(`last lines of ${join(LOGS, `${component}.log`)}:\n${tail(join(LOGS, `${component}.log`))}`);
    await down();
    if (attempt < 2) {
      say('retrying once with fresh ports');
      return up(attempt + 1);
    }
    process.exitCode = 1;
    return;
  }
  const info: TestbedInfo = {
    kubeconfig: KUBECONFIG,
    apiserver: `https://127.0.0.1:${apiPort}`,
    etcd: etcdUrl,
    nodeName: NODE_NAME,
    kubeletPort,
    logDir: LOGS,
    uncachedResource: UNCACHED_RESOURCE,
    imageTable: join(STATE, 'images.json'),
    imageDir: IMAGE_DIR,
    nodeAgentHash: nodeAgentSourceHash(),
    auditLog: AUDIT_LOG,
    sessionStore,
  };
  writeFileSync(join(STATE, 'testbed.json'), `${JSON.stringify(info, null, 2)}\n`);
  say(
    `ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${arch()}); API ${info.apiserver}; logs in ${LOGS}`,
  );
  if (WANT_REAL_NODE && !(await ensureRealNode(info))) return;
  process.stdout.write(`${KUBECONFIG}\n`);
}

async function status(): Promise<void> {
  const records = readRecords(PIDS);
  if (records.length === 0) {
    say('not running');
    process.exitCode = 1;
    return;
  }
  for (const rec of [...records, ...readRecords(join(STATE, 'real-node.pids.json'))])
    say(`${rec.name.padEnd(24)} pid ${rec.pid} ${alive(rec) ? 'running' : 'NOT RUNNING'}`);
  const realNode = readRealNodeInfo(KUBECONFIG);
  const realNodeOk = realNode === undefined || (await realNodeReady());
  if (realNode)
    say(
      `real node ${realNode.nodeName}: ${realNodeOk ? 'Ready' : 'NOT Ready'} (node IP ${realNode.nodeIP}, netns ${realNode.netns})`,
    );
  if (!realNodeOk) process.exitCode = 1;
  const ok = await healthy(readTestbedInfo(KUBECONFIG));
  say(ok ? `healthy; kubeconfig ${KUBECONFIG}; logs in ${LOGS}` : 'NOT healthy');
  if (!ok) process.exitCode = 1;
}

async function envCommand(): Promise<void> {
  if (!(await healthy(readTestbedInfo(KUBECONFIG)))) {
    say('not running (try: scripts/testbed up)');
    process.exitCode = 1;
    return;
  }
  process.stdout.write(`export KUBECONFIG=${KUBECONFIG}\n`);
}

/** The command line the recorded kube-apiserver runs with: `up`'s record, else (older instances) `/proc`. */
function apiserverLaunch(rec: ProcRecord): Launch | undefined {
  try {
    const parsed = v.safeParse(LaunchSchema, JSON.parse(readFileSync(APISERVER_LAUNCH, 'utf8')));
    if (parsed.success) return parsed.output;
  } catch {
    // not recorded (an instance started by an older testbed) or unreadable: ask the running process
  }
  if (!alive(rec)) return undefined;
  try {
    const [command, ...args] = readFileSync(`/proc/${rec.pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
    return command === undefined ? undefined : { command, args };
  } catch {
    return undefined;
  }
}

/** Starts kube-apiserver from `launch` and waits for /readyz; retries a start that exits (e.g. port briefly busy). */
async function startApiserver(
  launch: Launch,
  env: NodeJS.ProcessEnv,
  client: KubeClient,
  deadline: number,
): Promise<ProcRecord> {
  for (let attempt = 1; ; attempt++) {
    const rec = startDaemon('kube-apiserver', launch.command, launch.args, env);
    try {
      await waitFor(
        'kube-apiserver /readyz',
        [rec],
        async () => {
          const res = await client.request('GET', '/readyz', { timeoutMs: 2000 });
          return res.status === 200 ? true : undefined;
        },
        Math.max(1000, deadline - Date.now()),
      );
      return rec;
    } catch (error) {
      const exited = error instanceof FatalStart && !alive(rec);
      if (!exited || attempt >= 3 || Date.now() >= deadline) {
        await stopProcess(rec, 5_000);
        throw error;
      }
      say(
        `kube-apiserver exited at start (attempt ${attempt}); retrying:\n${tail(join(LOGS, 'kube-apiserver.log'), 5)}`,
      );
      await delay(1000);
    }
  }
}

/**
 * `restart kube-apiserver`: stops the recorded kube-apiserver (SIGTERM, SIGKILL after 15 s) and starts it again
 * with the very same command line (flags, certificates, port), so every kubeconfig and ServiceAccount token keeps
 * working; returns once /readyz answers 200 and the Node is Ready. etcd, kube-controller-manager and the node
 * agent keep running and reconnect by themselves. Starts a kube-apiserver that had died, so it is safe to repeat.
 */
async function restartApiserver(): Promise<void> {
  const started = Date.now();
  const records = readRecords(PIDS);
  const old = records.find((r) => r.name === 'kube-apiserver');
  const info = readTestbedInfo(KUBECONFIG);
  if (!old || !info) {
    say('not running (try: scripts/testbed up)');
    process.exitCode = 1;
    return;
  }
  const dead = records.filter((r) => r !== old && !alive(r)).map((r) => r.name);
  if (dead.length > 0) {
    say(`not healthy: ${dead.join(', ')} not running (try: scripts/testbed down && scripts/testbed up)`);
    process.exitCode = 1;
    return;
  }
  const launch = apiserverLaunch(old);
  if (!launch) {
    say(
      'kube-apiserver is not running and its command line was not recorded (try: scripts/testbed down && up)',
    );
    process.exitCode = 1;
    return;
  }
  mkdirSync(LOGS, { recursive: true });
  // The recorded command line names the audit policy: put it back if it was removed (a missing file stops the start).
  if (launch.args.includes(`--audit-policy-file=${AUDIT_POLICY}`) && !existsSync(AUDIT_POLICY))
    writeAuditPolicy();
  const env = { ...process.env };
  delete env.KUBECONFIG;
  const client = KubeClient.fromKubeconfig(KUBECONFIG);
  try {
    const stopping = Date.now();
    if (alive(old)) {
      say(`stopping kube-apiserver (pid ${old.pid})`);
      await stopProcess(old, 15_000);
    } else {
      say('kube-apiserver was not running; starting it');
    }
    const stopped = Date.now();
    let fresh: ProcRecord;
    try {
      fresh = await startApiserver(launch, env, client, Date.now() + START_TIMEOUT_MS);
    } catch (error) {
      say(`restart failed: ${error instanceof Error ? error.message : String(error)}`);
      say(`last lines of ${join(LOGS, 'kube-apiserver.log')}:\n${tail(join(LOGS, 'kube-apiserver.log'))}`);
      say(
        'run `scripts/testbed restart kube-apiserver` again, or `scripts/testbed up` to restart everything',
      );
      process.exitCode = 1;
      return;
    }
    writeRecords(records.map((r) => (r === old ? fresh : r)));
    const ready = Date.now();
    const others = records.filter((r) => r !== old);
    await waitFor('the test node to be Ready', [fresh, ...others], async () => {
      const node = await client.tryGet(apiPath('v1', 'nodes', { name: NODE_NAME }), NodeSchema);
      return node?.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True')
        ? true
        : undefined;
    });
    say(
      `kube-apiserver restarted (pid ${fresh.pid}, ${info.apiserver}): stopped in ${secs(stopped - stopping)} s, ` +
        `ready ${secs(ready - stopped)} s later (unavailable ${secs(ready - stopping)} s), done in ${secs(Date.now() - started)} s; ` +
        `${others.map((r) => r.name).join(', ')} kept running`,
    );
    process.stdout.write(`${KUBECONFIG}\n`);
  } catch (error) {
    say(`restart failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  } finally {
    client.close();
  }
}

/**
 * `restart node-agent`: the test node's agent (its kubelet) stopped and started again, as a kubelet restart; the
 * pods it was running are marked Failed (NodeAgentRestarted), as their processes are gone; finished pods' logs
 * stay readable, as a kubelet keeps /var/log/pods.
 */
async function restartNode(): Promise<void> {
  const info = readTestbedInfo(KUBECONFIG);
  if (
    info === undefined ||
    !(await restartNodeAgent(info, nodeAgentSourceHash(), 'restarting the node agent'))
  ) {
    say('restart failed: is the testbed up?');
    process.exitCode = 1;
    return;
  }
  say('node agent restarted');
}

/** Components `restart` can restart alone. */
const RESTARTABLE: Readonly<Record<string, () => Promise<void>>> = {
  'kube-apiserver': restartApiserver,
  'node-agent': restartNode,
};

const USAGE = `Usage: scripts/testbed up [--real-node]|down|status|env|kubectl|restart kube-apiserver|restart node-agent

  up      start (or reuse) the local control plane; prints the admin kubeconfig path last on stdout
  up --real-node (or AGENT_TESTBED_REAL_NODE=1)
          also a real node: the kubelet over containerd and runc, kube-proxy and kube-router's policy controller,
          in a network namespace of its own (root; sudo scripts/install-node-runtime first); node "real-node",
          tainted agent-controller.test/real-node
          (docs/design/real-node.md). Added to a running control plane; down stops and removes it.
  down    stop everything up started (safe to call twice)
  status  show the components and whether the control plane is healthy (exit 1 if not)
  env     print "export KUBECONFIG=..." for a running control plane
  kubectl run kubectl (built with the control plane) with the admin kubeconfig
  restart kube-apiserver
          stop kube-apiserver (SIGTERM, SIGKILL after 15 s) and start it again with the same flags,
          certificates and port, so existing kubeconfigs and tokens keep working; returns when /readyz is
          ok and the node is Ready (prints the kubeconfig path last). etcd, kube-controller-manager and the
          node agent keep running and reconnect. Clients see a few seconds of outage.
  restart node-agent
          stop the test node's agent (its kubelet) and start it again; the pods it ran are marked Failed
          (NodeAgentRestarted), as after a kubelet restart that lost its containers.

Watches on podtemplates and on the custom resources (agents, stations, agentdefinitions of
agents.re-cinq.com) bypass the API server's watch cache: a watch from a compacted resourceVersion gets 410.

Audit log (JSON lines, recorded as auditLog in testbed.json): every create, update, patch and delete of agents,
agents/status, jobs, leases and networkpolicies, with request and response bodies, in <logs>/audit.log
(rotated at 100 MB into audit-<timestamp>.log, 5 kept); policy in <state>/audit-policy.yaml.

Session store (issue 29): versitygw (scripts/build-versitygw) on a free port of 127.0.0.1, POSIX backend under
<state>/session-store, bucket agent-sessions, root credentials generated at each up in
<state>/session-store.credentials.json (mode 0600); recorded as sessionStore in testbed.json.

State, certificates and logs live in \${AGENT_TESTBED_DIR:-<repo>/.testbed}.
Images: agent-controller:e2e runs the built bundle on Node, agent-controller:e2e-deno on Deno; any other
image runs the container's command from the host. Extra entries: AGENT_TESTBED_IMAGES=<json file> (read by
up, re-read at each container start), e.g. {"my/image:tag": ["/usr/bin/node", "/path/app.mjs"]} or
{"my/image:tag": {"entrypoint": [...], "cmd": [...], "env": {...}, "workingDir": "/", "user": 1000}}.`;

const commands: Record<string, () => Promise<void>> = { up, down, status, env: envCommand };
const name = process.argv[2] ?? '';
const run =
  name === 'restart'
    ? process.argv.length === 4
      ? RESTARTABLE[process.argv[3] ?? '']
      : undefined
    : process.argv.length <= 3 ||
        (name === 'up' && process.argv.length === 4 && process.argv[3] === '--real-node')
      ? commands[name]
      : undefined;
if (name === '--help' || name === '-h' || name === 'help') {
  process.stdout.write(`${USAGE}\n`);
} else if (!run) {
  process.stderr.write(`testbed: unknown command "${process.argv.slice(2).join(' ')}" (try --help)\n`);
  process.exitCode = 2;
} else {
  mkdirSync(STATE, { recursive: true });
  await run();
}
