// The test bed's real node (issue 26; docs/design/real-node.md): the kubelet of the API server's release over
// containerd and runc, in a network namespace the test bed creates, joined to the host by one veth pair. Started by
// `scripts/testbed up --real-node` after the control plane, stopped by `scripts/testbed down` before it. Needs
// root and `scripts/install-node-runtime`.
//
//   host namespace                                 node namespace acrn-<h>
//   kube-apiserver 127.0.0.1:P                      kubelet (node IP 10.213.o.2, :10250)
//   forwarder 10.213.o.1:P ──▶ 127.0.0.1:P          containerd (own root, state, socket) ── runc
//                                                   kube-proxy (iptables mode: Services' ClusterIPs)
//                                                   kube-router (network-policy controller only: iptables, ipset)
//   veth acrn-<h>-h 10.213.o.1/30 ◀──────────────▶  veth acrn-<h>-n 10.213.o.2/30 (pods masqueraded out)
//                                                   bridge acrn-br0 10.214.o.1/24 ── pods 10.214.o.x
//
// The namespace has no default route: nothing in it reaches past the host's end of the veth, and the host's
// filter chain ACRN-<h> lets in from the veth only the forwarder's port and replies. Pods reach the API server
// as in a cluster, through the `kubernetes` Service (10.0.0.1:443): kube-proxy sends it to the forwarder, whose
// address the test bed writes into that Service's EndpointSlice.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import * as v from 'valibot';
import { apiPath, KubeClient } from '../test/support/kube-client.ts';
import { type ProcRecord, procAlive, readProcRecords, writeProcRecords } from '../test/support/proc.ts';
import { buildRealNodeImages, HELLO_IMAGE, PAUSE_IMAGE } from '../test/support/real-node/images.ts';
import { type RealNodeInfo, readRealNodeInfo } from '../test/support/real-node/info.ts';
import { NodeSchema } from '../test/support/schemas.ts';

export const REAL_NODE_NAME = 'real-node';
/** Only pods that tolerate this taint may run on the real node. */
const TAINT = { key: 'agent-controller.test/real-node', value: 'true', effect: 'NoSchedule' };
const KUBELET_PORT = 10250;
/** The `kubernetes` Service's ClusterIP (the first address of the API server's --service-cluster-ip-range). */
const KUBERNETES_SERVICE_IP = '10.0.0.1';
/** Who manages the `kubernetes` Service's EndpointSlice (the API server's endpoint reconciler is off here). */
const SLICE_MANAGER = 'real-node.agent-controller.test';
/** kube-router's binary in the bin folder (scripts/build-kube-binaries --kubelet, same default release). */
const KUBE_ROUTER = `kube-router-v${process.env.KUBE_ROUTER_VERSION ?? '2.10.0'}`;
/**
 * The API server's --service-cluster-ip-range (scripts/testbed-cli.ts starts it with this): the `kubernetes` Service
 * gets its first address, kube-router lets traffic to it through.
 */
export const SERVICE_CIDR = '10.0.0.0/24';
const CNI_BIN = '/usr/lib/cni';
const RUNC = '/usr/sbin/runc';
const INSTALL_HINT = 'run `sudo scripts/install-node-runtime` first';

/** What the real node needs from the test bed that starts it. */
export interface RealNodeHost {
  readonly state: string;
  readonly certs: string;
  readonly logs: string;
  /** The admin kubeconfig (its credentials are the kubelet's too, as for the test node agent). */
  readonly kubeconfig: string;
  readonly apiPort: number;
  /** Folder of the kube binaries, the kubelet included. */
  readonly bin: string;
  readonly say: (message: string) => void;
  /** Issues a certificate signed by the test bed's CA (openssl extension text). */
  readonly leaf: (name: string, subject: string, ext: string) => void;
  readonly startDaemon: (
    name: string,
    command: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv,
  ) => ProcRecord;
  readonly stopProcess: (rec: ProcRecord, graceMs: number) => Promise<void>;
}

/** Names and addresses, all derived from the state folder so two test beds on one machine never collide. */
interface Layout {
  readonly dir: string;
  readonly pids: string;
  readonly info: string;
  /** Present while this test bed owns the namespace, veth and chain of its name (only then does `down` remove them). */
  readonly net: string;
  readonly netns: string;
  readonly vethHost: string;
  readonly vethNode: string;
  readonly chain: string;
  readonly hostIP: string;
  readonly nodeIP: string;
  readonly podCIDR: string;
  readonly podGateway: string;
  readonly sock: string;
  readonly podLogs: string;
}

export function layout(state: string): Layout {
  const h = createHash('sha256').update(state).digest('hex').slice(0, 6);
  const o = Number.parseInt(h.slice(0, 2), 16);
  const dir = join(state, 'real-node');
  return {
    dir,
    pids: join(state, 'real-node.pids.json'),
    info: join(state, 'real-node.json'),
    net: join(state, 'real-node.net'),
    netns: `acrn-${h}`,
    vethHost: `acrn-${h}-h`,
    vethNode: `acrn-${h}-n`,
    chain: `ACRN-${h.toUpperCase()}`,
    hostIP: `10.213.${o}.1`,
    nodeIP: `10.213.${o}.2`,
    podCIDR: `10.214.${o}.0/24`,
    podGateway: `10.214.${o}.1`,
    sock: join(dir, 'containerd', 'containerd.sock'),
    podLogs: join(dir, 'pod-logs'),
  };
}

/** Runs a command; throws with its stderr when it fails. */
function run(command: string, args: readonly string[]): string {
  const r = spawnSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) throw new Error(`${command}: ${r.error.message} (${INSTALL_HINT})`);
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${r.stderr.trim()}`);
  return r.stdout;
}

/** Runs a command whose failure is expected when there is nothing to clean; true when it succeeded. */
function attempt(command: string, args: readonly string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

function checkPrerequisites(bin: string): void {
  if (process.getuid?.() !== 0)
    throw new Error('the real node needs root (network namespace, containerd, kubelet)');
  for (const file of [
    '/usr/bin/containerd',
    '/usr/bin/ctr',
    RUNC,
    join(CNI_BIN, 'bridge'),
    '/usr/sbin/iptables',
    '/usr/sbin/ipset',
  ])
    if (!existsSync(file)) throw new Error(`${file} is missing: ${INSTALL_HINT}`);
  for (const binary of ['kubelet', 'kube-proxy', KUBE_ROUTER])
    if (!existsSync(join(bin, binary)))
      throw new Error(`no ${binary} in ${bin} (scripts/build-kube-binaries --kubelet builds it)`);
}

// ---------------------------------------------------------------------------------------------
// Network: namespace, veth pair, the host's filter chain.

function setUpNetwork(l: Layout, apiPort: number): void {
  const inUse = run('ip', ['-4', '-o', 'addr', 'show']);
  for (const prefix of [l.hostIP.replace(/\.1$/, '.'), l.podGateway.replace(/\.1$/, '.')])
    if (inUse.includes(` ${prefix}`))
      throw new Error(
        `addresses ${prefix}0 are already on an interface of this machine; is another real node up?`,
      );
  // Fails when a namespace of that name exists (another test bed whose name hash collides): nothing of it is touched.
  run('ip', ['netns', 'add', l.netns]);
  writeFileSync(l.net, `${l.netns}\n`);
  run('ip', ['link', 'add', l.vethHost, 'type', 'veth', 'peer', 'name', l.vethNode, 'netns', l.netns]);
  // IPv4 only: with IPv6 the veth's link-local addresses would be a second way to the host, past the chain below
  // (an iptables chain, IPv4). This is the setting of our own interface, and of the namespace, not the host's.
  run('sysctl', ['-q', '-w', `net.ipv6.conf.${l.vethHost}.disable_ipv6=1`]);
  run('ip', ['addr', 'add', `${l.hostIP}/30`, 'dev', l.vethHost]);
  run('ip', ['link', 'set', l.vethHost, 'up']);
  const inNs = (...args: string[]): string => run('ip', ['netns', 'exec', l.netns, ...args]);
  inNs('sysctl', '-q', '-w', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.default.disable_ipv6=1');
  inNs('ip', 'link', 'set', 'lo', 'up');
  inNs('ip', 'addr', 'add', `${l.nodeIP}/30`, 'dev', l.vethNode);
  inNs('ip', 'link', 'set', l.vethNode, 'up');
  // The namespace's own setting (not the host's): pods reach the host's end of the veth through the node.
  inNs('sysctl', '-q', '-w', 'net.ipv4.ip_forward=1');
  // Bridged traffic between two pods passes the namespace's iptables (per namespace since Linux 5.3; br_netfilter
  // is built into this kernel): kube-proxy needs it for the reply of a pod reached through a ClusterIP by a pod on
  // the same bridge (else the reply skips the un-DNAT and the client drops it).
  inNs('sysctl', '-q', '-w', 'net.bridge.bridge-nf-call-iptables=1');
  // Pods' packets that leave through the veth (only to the host's end: there is no other route) carry the node's
  // address: the host has no route back to the pod range. The namespace's own nat table.
  inNs(
    'iptables',
    '-w',
    '-t',
    'nat',
    '-A',
    'POSTROUTING',
    '-s',
    l.podCIDR,
    '-o',
    l.vethNode,
    '-j',
    'MASQUERADE',
  );
  // The host accepts from the veth only the forwarder's port and replies to what it opened, and nothing else
  // reaches the host's end of the veth (its address is local, so another interface could otherwise address it).
  run('iptables', ['-w', '-N', l.chain]);
  const rule = (...args: string[]): string => run('iptables', ['-w', '-A', l.chain, ...args]);
  rule('-i', l.vethHost, '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'RETURN');
  rule('-i', l.vethHost, '-d', l.hostIP, '-p', 'tcp', '--dport', String(apiPort), '-j', 'RETURN');
  rule('-i', l.vethHost, '-j', 'DROP');
  rule('-d', l.hostIP, '-j', 'DROP');
  run('iptables', ['-w', '-I', 'INPUT', '-j', l.chain]);
}

function tearDownNetwork(l: Layout): void {
  if (!existsSync(l.net)) return;
  while (attempt('iptables', ['-w', '-D', 'INPUT', '-j', l.chain])) {
    // a rule per earlier start
  }
  attempt('iptables', ['-w', '-F', l.chain]);
  attempt('iptables', ['-w', '-X', l.chain]);
  // Deleting the namespace deletes the veth end in it, and with it the host's end.
  attempt('ip', ['netns', 'del', l.netns]);
  attempt('ip', ['link', 'del', l.vethHost]);
  rmSync(l.net, { force: true });
}

// ---------------------------------------------------------------------------------------------
// Configuration files.

function containerdConfig(l: Layout): string {
  const d = join(l.dir, 'containerd');
  return `# The real node's containerd (scripts/real-node.ts). Everything it keeps is under ${l.dir}.
version = 2
root = "${d}/root"
state = "${d}/state"
# Plugins that look for host-wide resources this node does not use.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "${l.sock}"
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "${d}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  # Our own pause image, imported at start (nothing can be pulled).
  sandbox_image = "${PAUSE_IMAGE}"
  # Deviates from a normal node: containerd would set the sandbox's oom_score_adj to -998, which this machine
  # does not allow, and runc then fails with only "can't get final child's PID from pipe: EOF". With this, no
  # container's oom_score_adj goes below containerd's own (0).
  restrict_oom_score_adj = true
  # Pods' network namespaces are mounted under the state folder, not in the host's /run/netns.
  netns_mounts_under_state_dir = true
  # The streaming server (exec, attach, port-forward) on the node namespace's loopback, where the kubelet is.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # Debian's runc; crun refuses this machine's hybrid cgroup layout.
        BinaryName = "${RUNC}"
        # cgroupfs, as the kubelet (no systemd here).
        SystemdCgroup = false
        # runc's state, else /run/containerd/runc.
        Root = "${d}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN}"
    conf_dir = "${join(l.dir, 'cni', 'net.d')}"
    max_conf_num = 1
`;
}

/** One bridge in the node's namespace; host-local addresses from the pod range; no masquerade, no way out. */
function cniConfig(l: Layout): string {
  return `${JSON.stringify(
    {
      cniVersion: '0.4.0',
      name: 'acrn-pods',
      plugins: [
        {
          type: 'bridge',
          bridge: 'acrn-br0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: l.podCIDR, gateway: l.podGateway }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: join(l.dir, 'cni', 'ipam'),
          },
        },
      ],
    },
    null,
    2,
  )}\n`;
}

function kubeletConfig(l: Layout, certs: string): string {
  return `${JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: l.nodeIP,
      port: KUBELET_PORT,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: false },
        x509: { clientCAFile: join(certs, 'ca.crt') },
      },
      // Only clients with a certificate of the test bed's CA get here (the API server's kubelet client).
      authorization: { mode: 'AlwaysAllow' },
      tlsCertFile: join(certs, 'real-node-serving.crt'),
      tlsPrivateKeyFile: join(certs, 'real-node-serving.key'),
      containerRuntimeEndpoint: `unix://${l.sock}`,
      // Deviations from a normal node, each needed on this machine (cgroups v1, hybrid layout, no systemd, shared
      // with other test beds): cgroup v1 accepted, cgroupfs, no QoS cgroup tree, no node allocatable enforcement.
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      cgroupsPerQOS: false,
      enforceNodeAllocatable: [],
      failSwapOn: false,
      podLogsDir: l.podLogs,
      volumePluginDir: join(l.dir, 'volume-plugins'),
      registerWithTaints: [TAINT],
      // No DNS: pods get no resolver (the host's would lead off the machine).
      resolvConf: '',
      clusterDomain: 'cluster.local',
      // The images are imported, never pulled again: no image garbage collection, no eviction for a busy disk.
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      evictionHard: { 'memory.available': '50Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
      maxPods: 20,
      serializeImagePulls: false,
    },
    null,
    2,
  )}\n`;
}

/**
 * kube-proxy's KubeProxyConfiguration. Settings that differ from a normal node are commented; the rest are the
 * defaults written out so the file says what runs.
 */
function kubeProxyConfig(l: Layout): string {
  return `${JSON.stringify(
    {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clientConnection: { kubeconfig: join(l.dir, 'kubelet.kubeconfig') },
      hostnameOverride: REAL_NODE_NAME,
      bindAddress: l.nodeIP,
      // The pod range: traffic from outside it to a ClusterIP is masqueraded (detectLocalMode ClusterCIDR).
      clusterCIDR: l.podCIDR,
      detectLocalMode: 'ClusterCIDR',
      // Deviation: the node namespace's loopback only (normal: 0.0.0.0:10256 and 127.0.0.1:10249); nothing
      // outside the namespace needs them.
      healthzBindAddress: '127.0.0.1:10256',
      metricsBindAddress: '127.0.0.1:10249',
      // Deviation: NodePorts on the node IP only (normal: every address, 127.0.0.1 included, which makes
      // kube-proxy set route_localnet).
      nodePortAddresses: [`${l.nodeIP}/32`],
      iptables: {
        masqueradeAll: false,
        masqueradeBit: 14,
        // Deviation: no NodePorts on 127.0.0.1 (normal: on), so route_localnet stays off.
        localhostNodePorts: false,
        syncPeriod: '30s',
        minSyncPeriod: '1s',
      },
      // Deviation: kube-proxy leaves conntrack's limits and timeouts alone (normal: it raises nf_conntrack_max and
      // sets two TCP timeouts). Those are settings of the whole machine, shared with other test beds, and read-only
      // from a network namespace other than the host's.
      conntrack: {
        maxPerCore: 0,
        min: 0,
        tcpEstablishedTimeout: '0s',
        tcpCloseWaitTimeout: '0s',
      },
    },
    null,
    2,
  )}\n`;
}

/**
 * kube-router's flags: its network-policy controller alone (docs/design/real-node.md says why kube-router). Pod
 * networking is the CNI bridge's and Services are kube-proxy's, so its router (BGP) and service proxy (IPVS) are off.
 */
function kubeRouterArgs(l: Layout): string[] {
  return [
    `--kubeconfig=${join(l.dir, 'kubelet.kubeconfig')}`,
    `--hostname-override=${REAL_NODE_NAME}`,
    '--run-firewall=true',
    '--run-router=false',
    '--run-service-proxy=false',
    '--run-loadbalancer=false',
    '--enable-ipv4=true',
    // Deviation: IPv4 only (IPv6 is off in the node namespace).
    '--enable-ipv6=false',
    // Deviation: no SNAT of pods' egress by kube-router (its router's job, off here); the namespace's own
    // masquerade rule covers the only way out, the veth.
    '--enable-pod-egress=false',
    // Traffic to ClusterIPs is let through kube-router's INPUT chain; the API server's range.
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    // Deviation: health on the namespace's loopback only (normal: all addresses); no metrics (the default).
    '--health-addr=127.0.0.1',
    '--metrics-port=0',
    '--v=1',
  ];
}

/** The admin kubeconfig, pointed at the forwarder; the server certificate is checked for `localhost`. */
function kubeletKubeconfig(l: Layout, adminKubeconfig: string, apiPort: number): string {
  const config = JSON.parse(readFileSync(adminKubeconfig, 'utf8')) as {
    clusters: { cluster: Record<string, string> }[];
  };
  for (const c of config.clusters) {
    c.cluster.server = `https://${l.hostIP}:${apiPort}`;
    c.cluster['tls-server-name'] = 'localhost';
  }
  return `${JSON.stringify(config, null, 2)}\n`;
}

// ---------------------------------------------------------------------------------------------
// Start and stop.

async function waitUntil(
  what: string,
  procs: readonly ProcRecord[],
  check: () => Promise<boolean>,
  ms: number,
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const dead = procs.find((p) => !procAlive(p));
    if (dead) throw new Error(`${dead.name} exited while waiting for ${what}`);
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(250);
  }
}

/** Whether the node namespace's iptables listing (`iptables -w ARGS`) includes `text`. */
function rulesInclude(l: Layout, args: readonly string[], text: string): boolean {
  return run('ip', ['netns', 'exec', l.netns, 'iptables', '-w', ...args]).includes(text);
}

function ctr(l: Layout, ...args: string[]): string {
  return run('ctr', ['--address', l.sock, '--namespace', 'k8s.io', ...args]);
}

/** Starts the real node on a running control plane; records its processes; returns what tests read. */
export async function realNodeUp(host: RealNodeHost): Promise<RealNodeInfo> {
  const l = layout(host.state);
  const started = Date.now();
  checkPrerequisites(host.bin);
  if (l.sock.length > 100)
    throw new Error(`the containerd socket path is too long for a unix socket: ${l.sock}`);
  await realNodeDown(host);
  for (const sub of ['containerd', 'cni/net.d', 'cni/ipam', 'kubelet', 'images'])
    mkdirSync(join(l.dir, sub), { recursive: true });
  host.leaf(
    'real-node-serving',
    `/O=system:nodes/CN=system:node:${REAL_NODE_NAME}`,
    `keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:${l.nodeIP}`,
  );
  setUpNetwork(l, host.apiPort);
  const env = { ...process.env };
  delete env.KUBECONFIG;
  const procs: ProcRecord[] = [];
  const record = (rec: ProcRecord): void => {
    procs.push(rec);
    writeProcRecords(l.pids, procs);
  };
  const nsenter = ['--net=/run/netns/' + l.netns, '--'];
  record(
    host.startDaemon(
      'real-node-forward',
      process.execPath,
      [
        '--import',
        'tsx',
        join(import.meta.dirname, '..', 'test', 'support', 'real-node', 'forward.ts'),
        `${l.hostIP}:${host.apiPort}`,
        `127.0.0.1:${host.apiPort}`,
      ],
      env,
    ),
  );
  writeFileSync(join(l.dir, 'containerd.toml'), containerdConfig(l));
  writeFileSync(join(l.dir, 'cni', 'net.d', '10-acrn-pods.conflist'), cniConfig(l));
  record(
    host.startDaemon(
      'real-node-containerd',
      'nsenter',
      [...nsenter, 'containerd', '--config', join(l.dir, 'containerd.toml')],
      env,
    ),
  );
  await waitUntil('containerd', procs, async () => attempt('ctr', ['--address', l.sock, 'version']), 30_000);
  for (const archive of buildRealNodeImages(join(l.dir, 'images'))) ctr(l, 'images', 'import', archive);
  host.say(`real node: containerd up, images imported (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  writeFileSync(join(l.dir, 'kubelet.json'), kubeletConfig(l, host.certs));
  writeFileSync(join(l.dir, 'kubelet.kubeconfig'), kubeletKubeconfig(l, host.kubeconfig, host.apiPort), {
    mode: 0o600,
  });
  record(
    host.startDaemon(
      'real-node-kubelet',
      'nsenter',
      [
        ...nsenter,
        join(host.bin, 'kubelet'),
        `--config=${join(l.dir, 'kubelet.json')}`,
        `--kubeconfig=${join(l.dir, 'kubelet.kubeconfig')}`,
        `--root-dir=${join(l.dir, 'kubelet')}`,
        `--hostname-override=${REAL_NODE_NAME}`,
        `--node-ip=${l.nodeIP}`,
        `--node-labels=${TAINT.key}=${TAINT.value}`,
        '--v=2',
      ],
      env,
    ),
  );
  const client = KubeClient.fromKubeconfig(host.kubeconfig);
  try {
    await putKubernetesSlice(client, l, host.apiPort);
    writeFileSync(join(l.dir, 'kube-proxy.json'), kubeProxyConfig(l));
    record(
      host.startDaemon(
        'real-node-kube-proxy',
        'nsenter',
        [...nsenter, join(host.bin, 'kube-proxy'), `--config=${join(l.dir, 'kube-proxy.json')}`, '--v=2'],
        env,
      ),
    );
    await waitUntil(
      'the real node to be Ready',
      procs,
      async () => {
        const node = await client.tryGet(apiPath('v1', 'nodes', { name: REAL_NODE_NAME }), NodeSchema);
        return node?.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
      },
      120_000,
    );
    // kube-proxy has written the `kubernetes` Service's rules: pods can reach the API server.
    await waitUntil(
      'kube-proxy to route the kubernetes Service',
      procs,
      async () => rulesInclude(l, ['-t', 'nat', '-S', 'KUBE-SERVICES'], `${KUBERNETES_SERVICE_IP}/32`),
      60_000,
    );
    record(
      host.startDaemon(
        'real-node-kube-router',
        'nsenter',
        [...nsenter, join(host.bin, KUBE_ROUTER), ...kubeRouterArgs(l)],
        env,
      ),
    );
    // kube-router has hooked its chains into the namespace's FORWARD: policies are enforced from here on.
    await waitUntil(
      'kube-router to enforce NetworkPolicies',
      procs,
      async () => rulesInclude(l, ['-S', 'FORWARD'], 'KUBE-ROUTER-FORWARD'),
      60_000,
    );
  } finally {
    client.close();
  }
  const info: RealNodeInfo = {
    nodeName: REAL_NODE_NAME,
    nodeIP: l.nodeIP,
    hostIP: l.hostIP,
    podCIDR: l.podCIDR,
    netns: l.netns,
    taint: TAINT,
    images: { hello: HELLO_IMAGE, pause: PAUSE_IMAGE },
    containerdSocket: l.sock,
    logDir: host.logs,
  };
  writeFileSync(l.info, `${JSON.stringify(info, null, 2)}\n`);
  host.say(
    `real node ${REAL_NODE_NAME} Ready in ${((Date.now() - started) / 1000).toFixed(1)} s (node IP ${l.nodeIP}, pods ${l.podCIDR}, netns ${l.netns})`,
  );
  return info;
}

/** The processes a running real node has (forwarder, containerd, kubelet, kube-proxy, kube-router). */
const DAEMONS = 5;

/** Whether the recorded real node runs (its processes alive; the Node's readiness is the caller's to check). */
export function realNodeRunning(state: string, kubeconfig: string): boolean {
  const l = layout(state);
  const records = readProcRecords(l.pids);
  return records.length === DAEMONS && records.every(procAlive) && readRealNodeInfo(kubeconfig) !== undefined;
}

/** Mount points at or under `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  const unoctal = (s: string): string =>
    s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => unoctal(line.split(' ')[4] ?? ''))
    .filter((p) => p === dir || p.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

/** Processes whose command line names `needle` (the shims of our containerd carry its socket path). */
function processesNaming(needle: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(needle)) pids.push(Number(name));
    } catch {
      // gone
    }
  }
  return pids.filter((pid) => pid !== process.pid);
}

/** Every process under `root` (children, their children, …), from the parent pids in /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const walk = (pid: number): void => {
    for (const child of children.get(pid) ?? []) {
      out.push(child);
      walk(child);
    }
  };
  walk(root);
  return out;
}

/** Stops everything `realNodeUp` started and removes what it made (safe to call twice, or after a failed start). */
export async function realNodeDown(
  host: Pick<RealNodeHost, 'state' | 'kubeconfig' | 'say' | 'stopProcess'>,
): Promise<void> {
  const l = layout(host.state);
  const records = readProcRecords(l.pids);
  const containerIds = ourContainerIds(l);
  const kubelet = records.find((r) => r.name === 'real-node-kubelet');
  if (kubelet && procAlive(kubelet)) {
    host.say(`stopping real-node-kubelet (pid ${kubelet.pid})`);
    await host.stopProcess(kubelet, 15_000);
  }
  // The pods' containers: killed through containerd while it runs (the kubelet does not stop them on exit).
  const containerd = records.find((r) => r.name === 'real-node-containerd');
  if (containerd && procAlive(containerd)) {
    const tasks = spawnSync(
      'ctr',
      ['--address', l.sock, '--namespace', 'k8s.io', 'tasks', 'list', '--quiet'],
      { encoding: 'utf8' },
    );
    for (const id of (tasks.stdout ?? '').split('\n').filter(Boolean)) {
      attempt('ctr', [
        '--address',
        l.sock,
        '--namespace',
        'k8s.io',
        'tasks',
        'kill',
        '--all',
        '--signal',
        'SIGKILL',
        id,
      ]);
      attempt('ctr', ['--address', l.sock, '--namespace', 'k8s.io', 'tasks', 'delete', '--force', id]);
    }
  }
  for (const rec of [...records].reverse()) {
    if (rec.name === 'real-node-kubelet' || !procAlive(rec)) continue;
    host.say(`stopping ${rec.name} (pid ${rec.pid})`);
    await host.stopProcess(rec, 15_000);
  }
  // containerd's shims outlive it; theirs are the processes that name our socket. Those of deleted tasks exit by
  // themselves (removing their sockets); the rest are killed. When containerd was not there to kill the containers
  // (it had died), their processes are the shims' descendants: those go first.
  for (let i = 0; i < 50 && processesNaming(l.sock).length > 0; i++) await delay(100);
  for (const shim of processesNaming(l.sock)) {
    const doomed = [...descendants(shim), shim];
    host.say(`stopping leftover containerd shim (pid ${shim}) and ${doomed.length - 1} process(es) under it`);
    for (const pid of doomed) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  removeShimSockets(l, containerIds);
  await deleteNodeObjects(host.kubeconfig);
  for (const mount of mountsUnder(l.dir)) if (!attempt('umount', [mount])) attempt('umount', ['-l', mount]);
  tearDownNetwork(l);
  removeLogLinks(l.podLogs);
  // Folders the kubelet and containerd's shims create outside the state folder (see removeLogLinks and the
  // shims' sockets under /run/containerd/s): removed when nothing else left anything in them.
  for (const dir of ['/var/log/containers', '/run/containerd/s', '/run/containerd']) attempt('rmdir', [dir]);
  removeCgroups(containerIds);
  rmSync(l.pids, { force: true });
  rmSync(l.info, { force: true });
  const left = mountsUnder(l.dir);
  if (left.length > 0) host.say(`real node: still mounted, not removing ${l.dir}: ${left.join(', ')}`);
  else rmSync(l.dir, { recursive: true, force: true });
}

/** The ids of the containers (sandboxes included) our containerd ever ran and has not deleted. */
function ourContainerIds(l: Layout): string[] {
  const dir = join(l.dir, 'containerd', 'state', 'io.containerd.runtime.v2.task', 'k8s.io');
  return existsSync(dir) ? readdirSync(dir) : [];
}

/**
 * With cgroupsPerQOS off the kubelet gives containers no cgroup parent, and containerd puts each under /k8s.io
 * (its namespace) in every hierarchy. runc removes a container's cgroup when it is deleted; after a crash (containerd
 * gone before it could) ours are removed here, then /k8s.io itself. rmdir fails on a cgroup still in use (another
 * containerd's pods), so nothing of anyone else's goes.
 */
function removeCgroups(containerIds: readonly string[]): void {
  const root = '/sys/fs/cgroup';
  for (const hierarchy of existsSync(root) ? readdirSync(root) : []) {
    for (const id of containerIds) attempt('rmdir', [join(root, hierarchy, 'k8s.io', id)]);
    attempt('rmdir', [join(root, hierarchy, 'k8s.io')]);
  }
}

/**
 * A killed shim leaves its socket in /run/containerd/s (containerd 1.6 puts it there whatever its `state`), named by
 * the sha256 of `<containerd address>/<namespace>/<sandbox id>`: ours are those of our address.
 */
function removeShimSockets(l: Layout, containerIds: readonly string[]): void {
  for (const id of containerIds) {
    const name = createHash('sha256')
      .update(join(l.sock, 'k8s.io', id))
      .digest('hex');
    rmSync(join('/run/containerd/s', name), { force: true });
  }
}

/** The kubelet links each container's log into /var/log/containers; the links into our folder go. */
function removeLogLinks(podLogs: string): void {
  const dir = '/var/log/containers';
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    try {
      if (readlinkSync(join(dir, name)).startsWith(`${podLogs}/`)) unlinkSync(join(dir, name));
    } catch {
      // not a link
    }
  }
}

/**
 * The Node object goes with the node (a control plane that keeps running would show it NotReady forever), and so
 * does the `kubernetes` Service's EndpointSlice (it names the forwarder, which is gone), when it is ours.
 */
async function deleteNodeObjects(kubeconfig: string): Promise<void> {
  if (!existsSync(kubeconfig)) return;
  const client = KubeClient.fromKubeconfig(kubeconfig);
  try {
    await client.request('DELETE', apiPath('v1', 'nodes', { name: REAL_NODE_NAME }), { timeoutMs: 2000 });
    const slice = apiPath('discovery.k8s.io/v1', 'endpointslices', {
      namespace: 'default',
      name: 'kubernetes',
    });
    const current = await client.tryGet(slice, SliceSchema);
    if (current?.metadata.labels?.[MANAGED_BY] === SLICE_MANAGER)
      await client.request('DELETE', slice, { timeoutMs: 2000 });
  } catch {
    // the control plane is not up: nothing to delete
  } finally {
    client.close();
  }
}

const MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';
const SliceSchema = v.looseObject({
  metadata: v.looseObject({ labels: v.optional(v.record(v.string(), v.string())) }),
});

/**
 * The `kubernetes` Service's endpoint: the forwarder (10.213.o.1:P), the API server's address as the node's
 * namespace sees it. A cluster's API server writes this itself (its endpoint reconciler, with its advertised
 * address); the test bed's runs with `--endpoint-reconciler-type=none` and advertises 127.0.0.1, which a pod cannot
 * reach, so the test bed writes the EndpointSlice kube-proxy reads (replaced at each start: the port changes).
 */
async function putKubernetesSlice(client: KubeClient, l: Layout, apiPort: number): Promise<void> {
  const path = apiPath('discovery.k8s.io/v1', 'endpointslices', { namespace: 'default', name: 'kubernetes' });
  await client.request('DELETE', path, { timeoutMs: 5000 });
  await client.create(apiPath('discovery.k8s.io/v1', 'endpointslices', { namespace: 'default' }), {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: 'kubernetes',
      namespace: 'default',
      labels: { 'kubernetes.io/service-name': 'kubernetes', [MANAGED_BY]: SLICE_MANAGER },
    },
    addressType: 'IPv4',
    endpoints: [{ addresses: [l.hostIP], conditions: { ready: true } }],
    ports: [{ name: 'https', port: apiPort, protocol: 'TCP' }],
  });
}
