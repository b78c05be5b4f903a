// `delete <kind> <name...>`: deletes Agents (a running one is stopped: its Job goes with it), Stations or
// AgentDefinitions, in the background as kubectl does.
import { GROUP, RESOURCE_NAMES } from '../api/index.ts';
import { deleteKind, what } from './api.ts';
import { type CommandIo, UsageError } from './command.ts';
import { type CliCommandSpec, type CliDeps, cliCommand, helpText } from './context.ts';
import { EXIT, EXIT_CODES_HELP, exitCodeOf, kubeErrorLine } from './exit.ts';
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFlags, parseCliFlags } from './flags.ts';
import { type KindInfo, kindOf, kindWords, parseTargets } from './kinds.ts';

/** The kind and names of `delete` (pure). */
export function parseDeleteRequest(positionals: readonly string[]): { kind: KindInfo; names: string[] } {
  const [word] = positionals;
  if (word === undefined)
    throw new UsageError('missing the kind and the names to delete (e.g. delete agent NAME)');
  if (!word.includes('/') && kindOf(word) === undefined)
    throw new UsageError(
      `unknown kind ${JSON.stringify(word)}: say what to delete (${kindWords().slice(0, 9).join(', ')}, …)`,
    );
  const { kind, names } = parseTargets(positionals);
  if (kind === undefined) throw new UsageError('missing the kind of the objects to delete');
  if (names.length === 0) throw new UsageError(`missing the name of the ${kind.noun} to delete`);
  return { kind, names: [...names] };
}

export const deleteSpec: CliCommandSpec = {
  name: 'delete',
  summary: 'delete Agents (stopping their runs), Stations or AgentDefinitions',
  usage: [
    'Usage: {program} delete <agent|station|definition> NAME [NAME ...] [flags]',
    '       {program} delete KIND/NAME [KIND/NAME ...] [flags]',
    '',
    'Deletes the named objects (background propagation: a running Agent is stopped, its Job and pod go with',
    'it; an Agent that holds cleanup finalizers disappears once the controller has cleaned up). Every name is',
    'tried; the exit code is that of the first failure.',
    '',
    'Examples:',
    '  {program} delete agent hello-x7k2p',
    '  {program} delete agents run-1 run-2 -n team',
    '',
    'Flags:',
    CONNECTION_HELP,
    '',
    EXIT_CODES_HELP,
  ].join('\n'),
  async run(io: CommandIo, deps: CliDeps) {
    const { values, positionals, help } = parseCliFlags(io.argv, CONNECTION_FLAGS);
    if (help) {
      io.stdout(`${helpText(deleteSpec, deps.program)}\n`);
      return EXIT.ok;
    }
    const { kind, names } = parseDeleteRequest(positionals);
    const conn = await deps.connect(connectionFlags(values));
    let code: number = EXIT.ok;
    try {
      for (const name of names) {
        const r = await deleteKind(conn.transport, kind, conn.namespace, name);
        if (r.ok) {
          io.stdout(`${RESOURCE_NAMES[kind.kind].singular}.${GROUP} "${name}" deleted\n`);
          continue;
        }
        io.stderr(`error: ${kubeErrorLine(r.error, what(kind, name, conn.namespace))}\n`);
        if (code === EXIT.ok) code = exitCodeOf(r.error);
      }
      return code;
    } finally {
      conn.close();
    }
  },
};

export const deleteCommand = cliCommand(deleteSpec);
