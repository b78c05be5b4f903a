// The real node's way to the API server (docs/design/real-node.md): the kubelet runs in the node's network
// namespace, kube-apiserver listens on 127.0.0.1 of the host's. This TCP forwarder, started by the test bed in the
// host's namespace, listens on the host's end of the veth pair only and forwards each connection, bytes unchanged
// (TLS stays end to end), to kube-apiserver on 127.0.0.1.
//
//   node --import tsx test/support/real-node/forward.ts LISTEN_IP:PORT TARGET_IP:PORT
import { connect, createServer, type Socket } from 'node:net';

function hostPort(text: string | undefined): { host: string; port: number } {
  const m = /^([0-9.]+):(\d+)$/.exec(text ?? '');
  if (!m?.[1] || !m[2]) throw new Error(`expected IP:PORT, got ${String(text)}`);
  return { host: m[1], port: Number(m[2]) };
}

const listen = hostPort(process.argv[2]);
const target = hostPort(process.argv[3]);

function pair(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const end = (): void => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end).on('close', end);
  b.on('error', end).on('close', end);
}

const server = createServer((client) => {
  client.setNoDelay(true);
  const upstream = connect(target.port, target.host);
  upstream.setNoDelay(true);
  pair(client, upstream);
});
server.on('error', (error) => {
  process.stderr.write(`forward: ${error.message}\n`);
  process.exit(1);
});
server.listen(listen.port, listen.host, () => {
  process.stderr.write(`forward: ${listen.host}:${listen.port} -> ${target.host}:${target.port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
