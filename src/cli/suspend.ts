// `suspend <agent>` and `resume <agent>` (issue 29 §2): ask the controller to suspend a realtime session now (its
// state saved, its pod deleted, no run slot held) or to wake a Suspended one (admitted again, a new pod restored from
// the saved turn). Each sets its annotation; the controller acts on each value once.
import { type Agent, ANNOTATION_SUSPEND_REQUESTED, ANNOTATION_WAKE_REQUESTED } from '../api/index.ts';
import { annotateAgent, getAgent } from './api.ts';
import { type CommandIo, UsageError } from './command.ts';
import { type CliCommandSpec, type CliDeps, cliCommand, helpText } from './context.ts';
import { EXIT, EXIT_CODES_HELP } from './exit.ts';
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFlags, parseCliFlags } from './flags.ts';

/** What `suspend` or `resume` does about an Agent in its phase (pure): ask, say it is so already, or refuse. */
export function sessionRequest(
  verb: 'suspend' | 'resume',
  agent: Pick<Agent, 'status'> & { readonly metadata: { readonly name: string } },
):
  | { readonly kind: 'ask' }
  | { readonly kind: 'already'; readonly line: string }
  | { readonly kind: 'refuse'; readonly line: string } {
  const phase = agent.status.phase;
  const name = agent.metadata.name;
  if (verb === 'suspend') {
    if (phase === 'Running') return { kind: 'ask' };
    if (phase === 'Suspended') return { kind: 'already', line: `${name} is suspended already` };
    return { kind: 'refuse', line: `${name} is ${phase}: only a Running realtime session can be suspended` };
  }
  if (phase === 'Suspended') return { kind: 'ask' };
  if (phase === 'Running') return { kind: 'already', line: `${name} is running already` };
  return { kind: 'refuse', line: `${name} is ${phase}: only a Suspended session can be resumed` };
}

function sessionSpec(verb: 'suspend' | 'resume'): CliCommandSpec {
  const annotation = verb === 'suspend' ? ANNOTATION_SUSPEND_REQUESTED : ANNOTATION_WAKE_REQUESTED;
  const spec: CliCommandSpec = {
    name: verb,
    summary:
      verb === 'suspend'
        ? 'suspend a realtime session now (state saved, pod deleted, no run slot held)'
        : 'wake a Suspended session (a new pod restores it from its last saved turn)',
    usage: [
      `Usage: {program} ${verb} <agent> [flags]`,
      '',
      ...(verb === 'suspend'
        ? [
            'Asks the controller to suspend the realtime session of <agent> at once, as its idleTimeoutSeconds would:',
            'once every turn that ended is saved and none is in flight, its pod is deleted and the Agent shows',
            'phase Suspended, holding no run slot. The next prompt (or resume) wakes it. Needs a session store.',
          ]
        : [
            'Asks the controller to wake the Suspended session of <agent>: it is admitted again (first come, first',
            "served behind its Station's limit) and a new pod continues the session from its last saved turn.",
            'A prompt to a Suspended session wakes it too.',
          ]),
      'A session that is so already is left as it is (exit 0).',
      '',
      'Examples:',
      `  {program} ${verb} live`,
      `  {program} ${verb} live -n team`,
      '',
      'Flags:',
      CONNECTION_HELP,
      '',
      EXIT_CODES_HELP,
    ].join('\n'),
    async run(io: CommandIo, deps: CliDeps) {
      const { values, positionals, help } = parseCliFlags(io.argv, CONNECTION_FLAGS);
      if (help) {
        io.stdout(`${helpText(spec, deps.program)}\n`);
        return EXIT.ok;
      }
      const [name, ...extra] = positionals;
      if (name === undefined) throw new UsageError(`missing the Agent to ${verb}`);
      if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
      const conn = await deps.connect(connectionFlags(values));
      try {
        const agent = await getAgent(conn.transport, conn.namespace, name);
        const asked = sessionRequest(verb, agent);
        if (asked.kind === 'already') {
          io.stdout(`${asked.line}\n`);
          return EXIT.ok;
        }
        if (asked.kind === 'refuse') {
          io.stderr(`error: ${asked.line}\n`);
          return EXIT.failed;
        }
        const when = new Date(deps.clock.now()).toISOString();
        await annotateAgent(conn.transport, conn.namespace, agent, { [annotation]: when });
        io.stdout(`${name} ${verb === 'suspend' ? 'suspend' : 'wake'} requested\n`);
        return EXIT.ok;
      } finally {
        conn.close();
      }
    },
  };
  return spec;
}

export const suspendSpec = sessionSpec('suspend');
export const resumeSpec = sessionSpec('resume');
export const suspendCommand = cliCommand(suspendSpec);
export const resumeCommand = cliCommand(resumeSpec);
