import { type Command, parseFlags, UsageError } from './usage.ts';

export const controllerCommand: Command = {
  name: 'controller',
  summary: 'run the Agent controller (the default)',
  usage: [
    'Usage: agent-controller controller [flags]',
    '',
    'Runs the controller that drives Agents to a terminal phase.',
    '',
    'Flags:',
    '  --kubeconfig PATH     kubeconfig to use out of cluster (default: $KUBECONFIG, else in-cluster)',
    '  --namespace NS        namespace to watch (default: $WATCH_NAMESPACE, else the pod namespace)',
    '  --all-namespaces      watch every namespace',
    '  --port N              port for /healthz, /readyz, /metrics and the prompt API (default 8081)',
    '  --log-level LEVEL     debug, info, warn or error (default info)',
  ].join('\n'),
  async run(io) {
    const { values, help } = parseFlags(io.argv, {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      'all-namespaces': { type: 'boolean' },
      port: { type: 'string' },
      'log-level': { type: 'string' },
    });
    if (help) {
      io.stdout(`${controllerCommand.usage}\n`);
      return 0;
    }
    if (values.port !== undefined && !/^\d{1,5}$/.test(String(values.port))) {
      throw new UsageError(`--port must be a number, got "${String(values.port)}"`);
    }
    io.stderr('agent-controller controller: not implemented yet\n');
    return 1;
  },
};
