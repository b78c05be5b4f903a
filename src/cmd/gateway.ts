import { readFile } from 'node:fs/promises';
import { type Command, type CommandIo, parseFlags, UsageError } from '../cli/command.ts';
import { type GatewayConfig, parseGatewayConfig } from '../config/gateway-config.ts';
import { createPriceSource } from '../effects/prices.ts';
import { GATEWAY_VENDORS, REFUSAL_REASONS, startGateway } from '../gateway/index.ts';
import {
  createTransport,
  describeKubeError,
  resolveClusterConfig,
  SERVICE_ACCOUNT_DIR,
} from '../kube/index.ts';
import { createGatewayMetrics } from '../metrics/gateway.ts';
import { installShutdown, systemClock } from '../runtime/index.ts';
import { createLogger } from '../shared/log.ts';
import { VERSION } from '../shared/version.ts';

/** How often the price overrides file is looked at (the kubelet updates a mounted ConfigMap in place). */
export const PRICES_REFRESH_MS = 10_000;

export const gatewayCommand: Command = {
  name: 'gateway',
  summary: 'run the model gateway: forwards model calls with the vendor keys, meters them',
  exitWhenDone: true,
  usage: [
    'Usage: agent-controller gateway [flags]',
    '',
    'Forwards the model APIs the vendor CLIs use (Anthropic, OpenAI, Gemini) to the vendors for runs that hold a',
    "gateway credential instead of a key, puts the vendor key of the run's namespace on each call, and writes what",
    'each run used to its Agent (docs/design/gateway.md).',
    '',
    'Examples:',
    '  agent-controller gateway',
    '  agent-controller gateway --kubeconfig ~/.kube/config --namespace ai-agents --port 8080',
    '',
    'Flags:',
    '  --kubeconfig PATH     kubeconfig to use out of cluster (default: $KUBECONFIG, else in-cluster)',
    '  --namespace NS        the namespace of the Secret agent-controller-gateway (default: the pod namespace,',
    '                        else $POD_NAMESPACE, else ai-agents)',
    '  --port N              port of the model APIs (default: $AGENT_GATEWAY_PORT, else 8080)',
    '  --metrics-port N      port of /healthz, /readyz and /metrics (default: $AGENT_GATEWAY_METRICS_PORT, else 9090)',
    '  --bind-address IP     address both serve on (default 0.0.0.0)',
    '  --log-level LEVEL     debug, info, warn or error (default: $LOG_LEVEL, else info)',
    '',
    'Environment: AGENT_GATEWAY_ANTHROPIC_URL, AGENT_GATEWAY_OPENAI_URL, AGENT_GATEWAY_GEMINI_URL (where each',
    "vendor's calls go; default the vendor's API); PRICES_FILE (the price overrides, prices.json of the ConfigMap",
    'agent-prices, as for the controller); AGENT_GATEWAY_SPEND_ALERT_USD_PER_HOUR (the spend alert threshold, 50).',
  ].join('\n'),
  async run(io) {
    const config = await readConfig(io);
    if (config === 'help') {
      io.stdout(`${gatewayCommand.usage}\n`);
      return 0;
    }
    const log = createLogger(config.logLevel, io.stderr, { program: 'gateway' });
    const cluster = await resolveClusterConfig({ kubeconfig: config.kubeconfig, env: io.env });
    if (!cluster.ok) {
      log.error('Loading the cluster configuration failed', { error: describeKubeError(cluster.error) });
      return 1;
    }
    const metrics = createGatewayMetrics(REFUSAL_REASONS, GATEWAY_VENDORS);
    const transport = createTransport({
      server: cluster.value.server,
      credentials: cluster.value.credentials,
      identity: 'agent-gateway',
    });
    log.info('Starting the model gateway', {
      version: VERSION,
      namespace: config.namespace,
      source: cluster.value.source,
      server: cluster.value.server,
    });
    const shutdown = installShutdown({ logger: log, onForce: () => process.exit(130) });
    // The controller's price table with the agent-prices overrides (PRICES_FILE), looked at every 10 s when used.
    const priceSource = createPriceSource(config.pricesFile, log);
    let pricesReadAt = systemClock.now();
    const prices = () => {
      if (systemClock.now() - pricesReadAt >= PRICES_REFRESH_MS) {
        pricesReadAt = systemClock.now();
        priceSource.refresh();
      }
      return priceSource.current();
    };
    const gateway = await startGateway({
      prices,
      config,
      transport,
      clock: systemClock,
      random: Math.random,
      logger: log,
      metrics,
    }).catch((error: unknown) => {
      log.error('Starting the gateway servers failed', { error: String(error) });
      return undefined;
    });
    if (gateway !== undefined && !shutdown.signal.aborted) {
      await new Promise<void>((resolve) =>
        shutdown.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
    }
    await gateway?.stop();
    transport.close();
    shutdown.dispose();
    log.info('Stopped');
    return gateway === undefined ? 1 : 0;
  },
};

/** The configuration from flags, the environment and the in-cluster namespace; `help` for -h. */
async function readConfig(io: CommandIo): Promise<GatewayConfig | 'help'> {
  const { values, help } = parseFlags(io.argv, {
    kubeconfig: { type: 'string' },
    namespace: { type: 'string' },
    port: { type: 'string' },
    'metrics-port': { type: 'string' },
    'bind-address': { type: 'string' },
    'log-level': { type: 'string' },
  });
  if (help) return 'help';
  const str = (x: unknown): string | undefined => (typeof x === 'string' ? x : undefined);
  const inClusterNamespace = await readFile(`${SERVICE_ACCOUNT_DIR}/namespace`, 'utf8').catch(
    () => undefined,
  );
  const parsed = parseGatewayConfig(
    {
      kubeconfig: str(values.kubeconfig),
      namespace: str(values.namespace),
      port: str(values.port),
      metricsPort: str(values['metrics-port']),
      bindAddress: str(values['bind-address']),
      logLevel: str(values['log-level']),
    },
    io.env,
    inClusterNamespace,
  );
  if (!parsed.ok) throw new UsageError(parsed.error);
  return parsed.value;
}
