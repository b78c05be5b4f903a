import { type Command, UsageError } from './cli/command.ts';
import { isCompletionInvocation, isPluginInvocation } from './cli/flags.ts';
import { CLI_COMMANDS, completeCommand, HIDDEN_COMMANDS, pluginMain } from './cli/index.ts';
import { exitQuietlyOnClosedPipe } from './cli/pipes.ts';
import { versionCommand } from './cli/version.ts';
import { controllerCommand } from './cmd/controller.ts';
import { gatewayCommand } from './cmd/gateway.ts';
import { initCommand } from './cmd/init.ts';
import { supervisorCommand } from './cmd/supervisor.ts';

/** The controller, the model gateway and the run pod's commands. */
const SERVICE_COMMANDS: readonly Command[] = [
  controllerCommand,
  gatewayCommand,
  supervisorCommand,
  initCommand,
];

/** Every command, in help order: the command line (issue 11 §1) after the services. */
const COMMANDS: readonly Command[] = [...SERVICE_COMMANDS, ...CLI_COMMANDS];

function topUsage(): string {
  const rows = (list: readonly Command[]) => list.map((c) => `  ${c.name.padEnd(12)}${c.summary}`).join('\n');
  return [
    'Usage: agent-controller [command] [flags]',
    '',
    'Controller, gateway and run pod (default: controller):',
    rows(SERVICE_COMMANDS),
    '',
    'Command line (also as the kubectl plugin: kubectl agent <command>):',
    rows(CLI_COMMANDS),
    '',
    "Run 'agent-controller <command> --help' for a command's flags.",
  ].join('\n');
}

/**
 * Picks the subcommand, runs it, and maps usage mistakes to exit code 2 with one line on stderr. Invoked through a
 * file named kubectl-agent* (kubectl's plugin), the bundle is the command line only; through kubectl_complete-agent*,
 * it answers kubectl's completion of `kubectl agent`.
 */
export async function main(
  argv: readonly string[],
  invokedAs: string | undefined = process.argv[1],
): Promise<number> {
  const io = {
    env: process.env,
    stdout: (text: string) => void process.stdout.write(text),
    stderr: (text: string) => void process.stderr.write(text),
  };
  // The command line's output may go into a pipe whose reader stops early (`| head`): exit 0 quietly then.
  const quietPipe = () => exitQuietlyOnClosedPipe(process.stdout, (code) => process.exit(code), io.stderr);
  if (isCompletionInvocation(invokedAs)) {
    quietPipe();
    return completeCommand.run({ ...io, argv });
  }
  if (isPluginInvocation(invokedAs)) {
    quietPipe();
    return pluginMain(argv, io);
  }
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h' || first === 'help') {
    io.stdout(`${topUsage()}\n`);
    return 0;
  }
  if (first === '--version') return versionCommand.run({ ...io, argv: [] });
  const explicit = first !== undefined && !first.startsWith('-');
  const command = explicit
    ? [...COMMANDS, ...HIDDEN_COMMANDS].find((c) => c.name === first)
    : controllerCommand;
  if (!command) {
    io.stderr(`agent-controller: unknown command "${first}" (try --help)\n`);
    return 2;
  }
  if (!SERVICE_COMMANDS.includes(command)) quietPipe();
  try {
    const code = await command.run({ ...io, argv: explicit ? rest : argv });
    // stderr (where services log) is written synchronously, so nothing is lost by exiting now.
    if (command.exitWhenDone === true) process.exit(code);
    return code;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`agent-controller ${command.name}: ${error.message} (try --help)\n`);
      return 2;
    }
    throw error;
  }
}
