import { type Command, parseFlags } from './usage.ts';

export const initCommand: Command = {
  name: 'init',
  summary: 'prepare a run pod: inject the supervisor, clone repos, copy skills (in-pod)',
  usage: [
    'Usage: agent-controller init',
    '',
    'Runs as the init container of a run pod. Configuration comes from the run environment.',
  ].join('\n'),
  async run(io) {
    const { help } = parseFlags(io.argv, {});
    if (help) {
      io.stdout(`${initCommand.usage}\n`);
      return 0;
    }
    io.stderr('agent-controller init: not implemented yet\n');
    return 1;
  },
};
