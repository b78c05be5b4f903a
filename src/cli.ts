import { controllerCommand } from './cmd/controller.ts';
import { initCommand } from './cmd/init.ts';
import { closeCommand, promptCommand } from './cmd/prompt.ts';
import { supervisorCommand } from './cmd/supervisor.ts';
import { type Command, UsageError } from './cmd/usage.ts';
import { versionCommand } from './cmd/version.ts';

const COMMANDS: readonly Command[] = [
  controllerCommand,
  promptCommand,
  closeCommand,
  supervisorCommand,
  initCommand,
  versionCommand,
];

function topUsage(): string {
  const rows = COMMANDS.map((c) => `  ${c.name.padEnd(12)}${c.summary}`).join('\n');
  return `Usage: agent-controller [command] [flags]\n\nCommands (default: controller):\n${rows}\n\nRun 'agent-controller <command> --help' for a command's flags.`;
}

/** Picks the subcommand, runs it, and maps usage mistakes to exit code 2 with one line on stderr. */
export async function main(argv: readonly string[]): Promise<number> {
  const io = {
    env: process.env,
    stdout: (text: string) => void process.stdout.write(text),
    stderr: (text: string) => void process.stderr.write(text),
  };
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h' || first === 'help') {
    io.stdout(`${topUsage()}\n`);
    return 0;
  }
  if (first === '--version') return versionCommand.run({ ...io, argv: [] });
  const explicit = first !== undefined && !first.startsWith('-');
  const command = explicit ? COMMANDS.find((c) => c.name === first) : controllerCommand;
  if (!command) {
    io.stderr(`agent-controller: unknown command "${first}" (try --help)\n`);
    return 2;
  }
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
