import { type Command, parseFlags, UsageError } from './usage.ts';

export const supervisorCommand: Command = {
  name: 'supervisor',
  summary: 'run a vendor CLI inside a run pod and stream its events (in-pod)',
  usage: [
    'Usage: agent-controller supervisor -- <command> [args...]',
    '',
    'Runs the agent CLI as a child process, forwards signals, and streams its output',
    'to stdout and the configured sinks. Configuration comes from the run environment.',
  ].join('\n'),
  async run(io) {
    const dash = io.argv.indexOf('--');
    const own = dash === -1 ? io.argv : io.argv.slice(0, dash);
    const { help } = parseFlags(own, {});
    if (help) {
      io.stdout(`${supervisorCommand.usage}\n`);
      return 0;
    }
    const child = dash === -1 ? [] : io.argv.slice(dash + 1);
    if (child.length === 0) throw new UsageError('missing the command to supervise after --');
    io.stderr('agent-controller supervisor: not implemented yet\n');
    return 1;
  },
};
