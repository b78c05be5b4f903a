// `describe agent <name>`: the run's status, conditions, Events, its Job and pod, usage and cost.

import { getAgent, getJob, jobPods, objectEvents } from './api.ts';
import { type CommandIo, UsageError } from './command.ts';
import { type CliCommandSpec, type CliDeps, cliCommand, helpText, paints } from './context.ts';
import { describeAgent } from './describe-text.ts';
import { EXIT, EXIT_CODES_HELP } from './exit.ts';
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFlags, parseCliFlags } from './flags.ts';
import { parseTargets } from './kinds.ts';

/** The Agent names of `describe [agent] NAME ...` (pure). */
export function describeNames(positionals: readonly string[]): string[] {
  if (positionals.length === 0) throw new UsageError('missing the Agent name');
  const { kind, names } = parseTargets(positionals);
  if (kind !== undefined && kind.name !== 'agents')
    throw new UsageError(`describe shows Agents; for ${kind.name} use: get ${kind.name} NAME -o yaml`);
  if (names.length === 0) throw new UsageError('missing the Agent name');
  return [...names];
}

export const describeSpec: CliCommandSpec = {
  name: 'describe',
  summary: "show an Agent's status, conditions, Events, Job and pod, usage and cost",
  usage: [
    'Usage: {program} describe [agent] NAME [NAME ...] [flags]',
    '',
    'Shows everything about a run: its Station, parameters and model, phase, exit code and failure reason, its',
    'Job and pod as they are now, session and trace ids, tokens and estimated cost, its result, its conditions',
    'and the Events recorded about it.',
    '',
    'Examples:',
    '  {program} describe agent hello-x7k2p',
    '  {program} describe hello-x7k2p -n team',
    '',
    'Flags:',
    CONNECTION_HELP,
    '',
    EXIT_CODES_HELP,
  ].join('\n'),
  async run(io: CommandIo, deps: CliDeps) {
    const { values, positionals, help } = parseCliFlags(io.argv, CONNECTION_FLAGS);
    if (help) {
      io.stdout(`${helpText(describeSpec, deps.program)}\n`);
      return EXIT.ok;
    }
    const names = describeNames(positionals);
    const conn = await deps.connect(connectionFlags(values));
    const paint = paints(io, deps).out;
    try {
      for (const [i, name] of names.entries()) {
        const agent = await getAgent(conn.transport, conn.namespace, name);
        const jobName = agent.status.jobName || undefined;
        const [job, pods, events] = await Promise.all([
          jobName !== undefined ? getJob(conn.transport, conn.namespace, jobName) : undefined,
          jobName !== undefined ? jobPods(conn.transport, conn.namespace, jobName) : undefined,
          objectEvents(conn.transport, conn.namespace, agent.metadata.uid),
        ]);
        if (i > 0) io.stdout('\n');
        io.stdout(describeAgent({ agent, job, pods, events }, deps.clock.now(), paint));
      }
      return EXIT.ok;
    } finally {
      conn.close();
    }
  },
};

export const describeCommand = cliCommand(describeSpec);
