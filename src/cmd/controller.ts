import { readFile } from 'node:fs/promises';
import * as v from 'valibot';
import { type Command, type CommandIo, parseFlags, UsageError } from '../cli/command.ts';
import { ALL_NAMESPACES, type ControllerConfig, parseControllerConfig } from '../config/index.ts';
import { consoleOrigin, createConsoleApp } from '../console/app.ts';
import { consolePorts } from '../console/ports.ts';
import { SessionStore } from '../console/session.ts';
import { type RunningController, startController } from '../controller/run-controller.ts';
import { sessionStateOf } from '../controller/session-store.ts';
import { type AccessReviews, createAccessReviews, whoAmI } from '../effects/access-review.ts';
import { watchInstalledCrds } from '../effects/crd-check.ts';
import { installCrds } from '../effects/install-crds.ts';
import { promptPorts } from '../effects/realtime/prompt-ports.ts';
import {
  createTransport,
  describeKubeError,
  resolveClusterConfig,
  SERVICE_ACCOUNT_DIR,
  type Transport,
} from '../kube/index.ts';
import { type ControllerMetrics, createControllerMetrics } from '../metrics/index.ts';
import { installShutdown, startLoopLagProbe, systemClock } from '../runtime/index.ts';
import { createApp, type RunningServer, serveApp } from '../server/index.ts';
import { createPromptApi } from '../server/prompt.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import { VERSION } from '../shared/version.ts';

/** A lag at or past this (seconds) is logged: the event loop is never to be blocked longer (issue 15 §3). */
const EVENT_LOOP_BLOCKED_S = 0.1;

export const controllerCommand: Command = {
  name: 'controller',
  summary: 'run the Agent controller (the default)',
  exitWhenDone: true,
  usage: [
    'Usage: agent-controller controller [flags]',
    '',
    'Runs the controller that drives Agents to a terminal phase.',
    '',
    'Examples:',
    '  agent-controller controller --kubeconfig ~/.kube/config --namespace ai-agents --install-crds',
    '  agent-controller controller --all-namespaces --console --log-level debug',
    '  agent-controller                # no command: the same as agent-controller controller',
    '',
    'Flags:',
    '  --kubeconfig PATH     kubeconfig to use out of cluster (default: $KUBECONFIG, else in-cluster)',
    '  --namespace NS        namespace to watch (default: $WATCH_NAMESPACE, else the pod namespace, else ai-agents)',
    '  --all-namespaces      watch every namespace',
    '  --port N              port for /healthz, /readyz and /metrics (default: $HEALTH_PORT, else 8081)',
    '  --bind-address IP     address to serve on (default: $HEALTH_HOST, else 0.0.0.0)',
    '  --log-level LEVEL     debug, info, warn or error (default: $LOG_LEVEL, else info)',
    '  --api-port N          port of the realtime prompt API (default: $API_PORT, else 8443; REALTIME_ENABLED only)',
    '  --tls-cert-file F     certificate of the prompt API (plain HTTP is served only on a loopback address)',
    '  --tls-private-key-file F  its private key',
    '  --install-crds        server-side apply the CRDs at start (local and edge runs; needs CRD permissions)',
    '  --console             serve the web console (default: $CONSOLE_ENABLED, else off); a local run prints a',
    '                        one-time sign-in link',
    '  --console-port N      port of the web console (default: $CONSOLE_PORT, else 8082)',
    '  --console-bind-address IP  its address (default: $CONSOLE_BIND_ADDRESS, else 127.0.0.1; in a pod reach it',
    '                        with kubectl port-forward; another address needs the TLS flags)',
    '',
    'Environment: AGENT_IMAGE (init image of run pods), MAX_OUTPUT_BYTES, POD_NAME (leader identity),',
    'AGENT_POLL_INTERVAL_MS (default 15000), AGENT_LEADER_ELECTION (default true), BATCH_ENABLED,',
    'BATCH_POLL_SECONDS, BATCH_POLL_LIST, REALTIME_ENABLED, CONSOLE_TRACE_URL (links trace ids: {traceID}).',
  ].join('\n'),
  async run(io) {
    const read = await readConfig(io);
    if (read === 'help') {
      io.stdout(`${controllerCommand.usage}\n`);
      return 0;
    }
    const { config, installCrdsFirst } = read;
    const log = createLogger(config.logLevel, io.stderr);

    const cluster = await resolveClusterConfig({ kubeconfig: config.kubeconfig, env: io.env });
    if (!cluster.ok) {
      log.error('Loading the cluster configuration failed', { error: describeKubeError(cluster.error) });
      return 1;
    }
    const metrics = createControllerMetrics();
    const lag = startLoopLagProbe({
      observe: (s) => {
        metrics.eventLoopLag.observe(s);
        metrics.eventLoopMaxLag.set(lag.maxSeconds());
        // Something held the event loop past the controller's own target (100 ms; issue 15): say so, with how long.
        if (s >= EVENT_LOOP_BLOCKED_S) log.warn('Event loop was blocked', { ms: Math.round(s * 1000) });
      },
    });
    const transport = createTransport({
      server: cluster.value.server,
      credentials: cluster.value.credentials,
      identity: config.identity,
      observe: (s) => {
        if (!s.stream)
          metrics.apiRequestDuration.observe({ verb: s.verb, code: s.code }, s.durationMs / 1000);
      },
    });
    const clock = systemClock;
    log.info('Starting agent-controller', {
      version: VERSION,
      namespace: config.namespace,
      identity: config.identity,
      port: config.port,
      agentImage: config.agentImage,
      source: cluster.value.source,
      server: cluster.value.server,
    });
    if (installCrdsFirst) {
      const installed = await installCrds(transport, clock, log);
      if (!installed.ok) {
        log.error('Installing the CRDs failed', { error: installed.error });
        lag.stop();
        transport.close();
        return 1;
      }
    }

    const shutdown = installShutdown({ logger: log, onForce: () => process.exit(130) });
    // The session store (issue 29): absent unless configured (AGENT_SESSION_STORE_URL).
    const sessions = sessionStateOf(config, log);
    const controller = startController({
      config,
      transport,
      metrics,
      logger: log,
      clock,
      random: Math.random,
      ...(sessions !== undefined ? { sessions } : {}),
    });
    const crds = watchInstalledCrds({ transport, log, signal: shutdown.signal, clock });
    const app = createApp({
      checks: [...controller.checks, crds.check],
      metrics: async () => ({
        body: await metrics.registry.metrics(),
        contentType: metrics.registry.contentType,
      }),
    });
    const server = await serveApp(app, config.port, config.bindAddress).catch((error: unknown) => {
      log.error('Starting the HTTP server failed', { port: config.port, error: String(error) });
      return undefined;
    });
    if (server) log.info('Serving health and metrics', { port: server.port, address: config.bindAddress });
    const access = createAccessReviews({ transport, now: Date.now });
    const prompt = config.realtimeEnabled
      ? promptPorts({
          transport,
          tokens: () => controller.promptTokens(),
          cachedAgent: (ns, name) => controller.cachedAgent(ns, name),
          logger: log,
          now: Date.now,
          access,
          ...(sessions !== undefined
            ? {
                sessions,
                wakeWaitMs: config.sessionWakeWaitMs,
                observeSave: (result: 'ok' | 'error') => metrics.sessionSaves.inc({ result }),
                observeWake: (seconds: number, result: 'ok' | 'timeout' | 'error') =>
                  metrics.sessionWakeSeconds.observe({ result }, seconds),
              }
            : {}),
        })
      : undefined;
    const promptServer =
      server && prompt !== undefined
        ? await servePromptApi(config, prompt, transport, metrics, log)
        : undefined;
    const consoleServer =
      server && config.console !== undefined
        ? await serveConsole(config, config.console, {
            controller,
            transport,
            access,
            prompt,
            log,
            local: cluster.value.source !== 'in-cluster',
          })
        : undefined;

    if (!shutdown.signal.aborted && server) {
      await new Promise<void>((resolve) =>
        shutdown.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
    }
    await promptServer?.close();
    await consoleServer?.close();
    await controller.stop();
    await server?.close();
    lag.stop();
    transport.close();
    shutdown.dispose();
    log.info('Stopped');
    return server &&
      (promptServer !== undefined || !config.realtimeEnabled) &&
      (consoleServer !== undefined || config.console === undefined)
      ? 0
      : 1;
  },
};

/** The controller's configuration from its flags, the environment and the in-cluster namespace; `help` for -h. */
async function readConfig(
  io: CommandIo,
): Promise<'help' | { readonly config: ControllerConfig; readonly installCrdsFirst: boolean }> {
  const { values, help } = parseFlags(io.argv, {
    kubeconfig: { type: 'string' },
    namespace: { type: 'string' },
    'all-namespaces': { type: 'boolean' },
    port: { type: 'string' },
    'bind-address': { type: 'string' },
    'log-level': { type: 'string' },
    'api-port': { type: 'string' },
    'tls-cert-file': { type: 'string' },
    'tls-private-key-file': { type: 'string' },
    'install-crds': { type: 'boolean' },
    console: { type: 'boolean' },
    'console-port': { type: 'string' },
    'console-bind-address': { type: 'string' },
  });
  if (help) return 'help';
  const str = (x: unknown): string | undefined => (typeof x === 'string' ? x : undefined);
  const inClusterNamespace = await readFile(`${SERVICE_ACCOUNT_DIR}/namespace`, 'utf8').catch(
    () => undefined,
  );
  const parsed = parseControllerConfig(
    {
      kubeconfig: str(values.kubeconfig),
      namespace: str(values.namespace),
      allNamespaces: values['all-namespaces'] === true,
      port: str(values.port),
      bindAddress: str(values['bind-address']),
      logLevel: str(values['log-level']),
      apiPort: str(values['api-port']),
      tlsCertFile: str(values['tls-cert-file']),
      tlsPrivateKeyFile: str(values['tls-private-key-file']),
      console: values.console === true,
      consolePort: str(values['console-port']),
      consoleBindAddress: str(values['console-bind-address']),
    },
    io.env,
    inClusterNamespace,
    Math.random().toString(36).slice(2, 8),
  );
  if (!parsed.ok) throw new UsageError(parsed.error);
  return { config: parsed.value, installCrdsFirst: values['install-crds'] === true };
}

/** Serves the realtime prompt API on its own port (every replica, leader or not); undefined when it cannot listen. */
async function servePromptApi(
  config: ControllerConfig,
  ports: ReturnType<typeof promptPorts>,
  transport: Transport,
  metrics: ControllerMetrics,
  log: Logger,
): Promise<RunningServer | undefined> {
  const app = createPromptApi({
    ...ports,
    observe: (sample) => {
      metrics.promptsServed.inc({ action: sample.action, result: sample.result });
      if (sample.firstLineMs !== undefined) metrics.promptFirstLine.observe(sample.firstLineMs / 1000);
    },
  });
  const clientCa = config.apiTls === undefined ? undefined : await readClientCa(transport, log);
  const tls = config.apiTls === undefined ? undefined : { ...config.apiTls, clientCa };
  const server = await serveApp(app, config.apiPort, config.bindAddress, tls).catch((error: unknown) => {
    log.error('Starting the prompt API failed', { port: config.apiPort, error: String(error) });
    return undefined;
  });
  if (server) {
    log.info('Serving the realtime prompt API', {
      port: server.port,
      address: config.bindAddress,
      tls: config.apiTls !== undefined,
      clientCertificates: clientCa !== undefined,
    });
  }
  return server;
}

/**
 * Serves the web console on its own port (every replica: it reads the informer caches, which every replica keeps).
 * A local run (out of cluster) prints a one-time sign-in link for the kubeconfig's user. Undefined when it cannot
 * listen.
 */
async function serveConsole(
  config: ControllerConfig,
  settings: NonNullable<ControllerConfig['console']>,
  o: {
    readonly controller: RunningController;
    readonly transport: Transport;
    readonly access: AccessReviews;
    readonly prompt: ReturnType<typeof promptPorts> | undefined;
    readonly log: Logger;
    readonly local: boolean;
  },
): Promise<RunningServer | undefined> {
  const sessions = new SessionStore(Date.now);
  const watched = config.namespace === ALL_NAMESPACES ? undefined : config.namespace;
  const app = createConsoleApp(
    consolePorts({
      transport: o.transport,
      access: o.access,
      sessions,
      watched,
      cachedAgents: () => o.controller.cachedAgents(),
      cachedStations: () => o.controller.cachedStations(),
      prompt: o.prompt,
      defaultNamespace: watched ?? 'default',
      secure: config.apiTls !== undefined,
      traceUrl: settings.traceUrl,
      clock: systemClock,
      random: Math.random,
    }),
  );
  const server = await serveApp(app, settings.port, settings.bindAddress, config.apiTls).catch(
    (error: unknown) => {
      o.log.error('Starting the console failed', { port: settings.port, error: String(error) });
      return undefined;
    },
  );
  if (server === undefined) return undefined;
  // The console's own address (not the health server's --bind-address).
  const origin = consoleOrigin(settings.bindAddress, server.port, config.apiTls !== undefined);
  o.log.info('Serving the web console', {
    url: `${origin}/`,
    port: server.port,
    address: settings.bindAddress,
    tls: config.apiTls !== undefined,
  });
  if (o.local) {
    const me = await whoAmI(o.transport);
    if ('error' in me)
      o.log.warn('No one-time console link: the kubeconfig user cannot be told; sign in with a token', {
        error: me.error,
      });
    else
      o.log.info('Open the console (one-time sign-in link)', {
        user: me.username,
        url: `${origin}/login?code=${sessions.issueLoginCode(me)}`,
      });
  }
  return server;
}

const ClientCaConfigMap = v.looseObject({
  data: v.optional(v.looseObject({ 'client-ca-file': v.optional(v.string()) })),
});

/**
 * The cluster's client CA (ConfigMap kube-system/extension-apiserver-authentication, what aggregated API servers
 * read): with it, the prompt API accepts client certificates it signed. Undefined (bearer tokens only) when it cannot
 * be read; never fatal.
 */
async function readClientCa(transport: Transport, log: Logger): Promise<string | undefined> {
  const r = await transport.request(
    'GET',
    '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication',
  );
  if (!r.ok) {
    log.warn('The cluster client CA cannot be read; the prompt API accepts bearer tokens only', {
      error: describeKubeError(r.error),
    });
    return undefined;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(r.value.text);
  } catch {
    raw = undefined;
  }
  const parsed = v.safeParse(ClientCaConfigMap, raw);
  const pem = parsed.success ? parsed.output.data?.['client-ca-file'] : undefined;
  if (pem === undefined || pem.trim() === '') {
    log.warn('The cluster publishes no client CA; the prompt API accepts bearer tokens only');
    return undefined;
  }
  return pem;
}
