// Entry point of the test node agent, started in the background by `scripts/testbed up`:
//   node --import tsx test/node-agent/main.ts --kubeconfig=… --node-name=… --port=… --state-dir=… \
//        --tls-cert=… --tls-key=… --client-ca=… --images=… [--extra-images=…] [--log-level=info]
import { mkdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createLogger, parseLogLevel } from '../../src/shared/log.ts';
import { KubeClient } from '../support/kube-client.ts';
import { NodeAgent } from './agent.ts';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    'node-name': { type: 'string', default: 'testbed-node' },
    'host-ip': { type: 'string', default: '127.0.0.1' },
    port: { type: 'string' },
    'state-dir': { type: 'string' },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
    'client-ca': { type: 'string' },
    images: { type: 'string', multiple: true, default: [] },
    'extra-images': { type: 'string', multiple: true, default: [] },
    'log-level': { type: 'string', default: 'info' },
  },
  strict: true,
});

function required(name: keyof typeof values): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') {
    process.stderr.write(`node-agent: --${name} is required\n`);
    process.exit(2);
  }
  return value;
}

const hostIP = values['host-ip'] ?? '127.0.0.1';
if (!hostIP.startsWith('127.')) {
  process.stderr.write('node-agent: --host-ip must be a loopback address (127.0.0.0/8)\n');
  process.exit(2);
}
const port = Number(required('port'));
const stateDir = required('state-dir');
mkdirSync(stateDir, { recursive: true });
const log = createLogger(parseLogLevel(values['log-level']) ?? 'info', undefined, {
  component: 'node-agent',
});
const agent = new NodeAgent({
  client: KubeClient.fromKubeconfig(required('kubeconfig')),
  log,
  nodeName: values['node-name'] ?? 'testbed-node',
  hostIP,
  port,
  stateDir,
  tlsCert: required('tls-cert'),
  tlsKey: required('tls-key'),
  clientCa: required('client-ca'),
  imageFiles: [...(values.images ?? []), ...(values['extra-images'] ?? [])],
});

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    log.info('Node agent stopping', { signal });
    agent.shutdown().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error('Node agent shutdown failed', { error });
        process.exit(1);
      },
    );
  });
}

try {
  await agent.start();
} catch (error) {
  log.error('Node agent failed to start', { error });
  await agent.shutdown(0).catch(() => undefined);
  process.exit(1);
}
