// The command line (issue 11 §1): the commands people run, their shared help, and the kubectl plugin entry (the
// bundle invoked through a file named kubectl-agent*, or kubectl_complete-agent for kubectl's completion).

import { type Command, type CommandIo, UsageError } from './command.ts';
import { completeCommand, completionCommand } from './completion.ts';
import { deleteCommand } from './delete.ts';
import { describeCommand } from './describe.ts';
import { EXIT } from './exit.ts';
import { splitCommand } from './flags.ts';
import { getCommand } from './get.ts';
import { logsCommand } from './logs.ts';
import { closeCommand, promptCommand } from './prompt.ts';
import { rerunCommand } from './rerun.ts';
import { runCommand } from './run.ts';
import { resumeCommand, suspendCommand } from './suspend.ts';
import { versionCommand } from './version.ts';

export {
  completeCommand,
  completionCommand,
  deleteCommand,
  describeCommand,
  getCommand,
  logsCommand,
  rerunCommand,
  runCommand,
};

/** The commands of the command line, in help order (`__complete` is hidden). */
export const CLI_COMMANDS: readonly Command[] = [
  runCommand,
  rerunCommand,
  getCommand,
  describeCommand,
  logsCommand,
  deleteCommand,
  promptCommand,
  closeCommand,
  suspendCommand,
  resumeCommand,
  completionCommand,
  versionCommand,
];

/** Commands that run but are not listed. */
export const HIDDEN_COMMANDS: readonly Command[] = [completeCommand];

/** The help of the command line as kubectl's plugin (`kubectl agent`): its commands, flags and exit codes. */
export function pluginHelp(program: string, commands: readonly Command[] = CLI_COMMANDS): string {
  const rows = commands.map((c) => `  ${c.name.padEnd(12)}${c.summary}`).join('\n');
  return [
    `Usage: ${program} <command> [flags]`,
    '',
    'Runs AI agents on Kubernetes: start runs of Stations, watch them, read their logs (agents.re-cinq.com).',
    '',
    'Commands:',
    rows,
    '',
    'Flags of every command: -n/--namespace, --kubeconfig, --context (as kubectl), -h/--help.',
    "Exit codes: 0 ok; 1 failed; 2 usage; 3 not allowed; 4 not found; 124 timed out (see '<command> --help').",
    '',
    'Examples:',
    `  ${program} run hello --set name=world --follow`,
    `  ${program} get agents -w`,
    `  ${program} describe agent hello-x7k2p`,
    '',
    `Run '${program} <command> --help' for a command's flags and examples.`,
  ].join('\n');
}

/**
 * `kubectl agent …`: the command line alone (no controller), global flags allowed before the command as kubectl
 * allows them; no arguments prints the help.
 */
export async function pluginMain(argv: readonly string[], io: Omit<CommandIo, 'argv'>): Promise<number> {
  const program = 'kubectl agent';
  const only = argv.length === 1 ? argv[0] : undefined;
  if (argv.length === 0 || only === '--help' || only === '-h' || only === 'help') {
    io.stdout(`${pluginHelp(program)}\n`);
    return EXIT.ok;
  }
  if (only === '--version') return versionCommand.run({ ...io, argv: [] });
  const { command: name, rest } = splitCommand(argv);
  if (name === undefined) {
    io.stderr(`error: missing the command (try '${program} --help')\n`);
    return EXIT.usage;
  }
  const command = [...CLI_COMMANDS, ...HIDDEN_COMMANDS].find((c) => c.name === name);
  if (command === undefined) {
    io.stderr(`error: unknown command "${name}" (try '${program} --help')\n`);
    return EXIT.usage;
  }
  try {
    return await command.run({ ...io, argv: rest });
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`error: ${error.message} (see '${program} ${command.name} --help')\n`);
      return EXIT.usage;
    }
    throw error;
  }
}
