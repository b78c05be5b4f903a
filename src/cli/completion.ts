// `completion bash|zsh|fish` prints a completion script; the hidden `__complete WORDS…` answers it (and kubectl's
// plugin completion, which runs `kubectl_complete-agent WORDS…`) with the candidates for the last word, looking up
// names in the cluster when the word is an Agent, Station, AgentDefinition or namespace.

import { KubeObjectSchema, listAll, NAMESPACES } from '../kube/index.ts';
import { type CommandIo, parseFlags, UsageError } from './command.ts';
import {
  completionAnswer,
  completionScript,
  planCompletion,
  SHELLS,
  type Shell,
  typedConnection,
} from './completion-scripts.ts';
import { type CliCommandSpec, type CliDeps, cliCommand, helpText } from './context.ts';
import { EXIT, EXIT_CODES_HELP } from './exit.ts';
import { KINDS } from './kinds.ts';

/** How long a name lookup may take before completion offers nothing (a Tab must not hang). */
export const LOOKUP_TIMEOUT_MS = 5_000;

export const completionSpec: CliCommandSpec = {
  name: 'completion',
  summary: 'print a shell completion script (bash, zsh or fish)',
  usage: [
    'Usage: {program} completion bash|zsh|fish',
    '',
    'Prints a script that completes subcommands, kinds, flags and their values, and the names of Agents,',
    'Stations, AgentDefinitions and namespaces (asked of the cluster as you type) for agent-controller and',
    "kubectl-agent. kubectl completes 'kubectl agent …' itself through the kubectl_complete-agent command that",
    'npm installs next to kubectl-agent.',
    '',
    'Examples:',
    '  source <(agent-controller completion bash)        # in ~/.bashrc',
    '  source <(agent-controller completion zsh)         # in ~/.zshrc, after compinit',
    '  agent-controller completion fish > ~/.config/fish/completions/agent-controller.fish',
    '',
    EXIT_CODES_HELP,
  ].join('\n'),
  async run(io: CommandIo, deps: CliDeps) {
    const { positionals, help } = parseFlags(io.argv, {}, true);
    if (help) {
      io.stdout(`${helpText(completionSpec, deps.program)}\n`);
      return EXIT.ok;
    }
    const [shell, ...extra] = positionals;
    if (shell === undefined) throw new UsageError('missing the shell: bash, zsh or fish');
    if (!(SHELLS as readonly string[]).includes(shell))
      throw new UsageError(`unknown shell ${JSON.stringify(shell)}: bash, zsh or fish`);
    if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
    io.stdout(completionScript(shell as Shell));
    return EXIT.ok;
  },
};

/** Names of a resource for completion; nothing when they cannot be read quickly. */
async function lookupNames(
  deps: CliDeps,
  resource: 'agents' | 'stations' | 'definitions' | 'namespaces',
  prior: readonly string[],
): Promise<string[]> {
  let conn: Awaited<ReturnType<CliDeps['connect']>>;
  try {
    conn = await deps.connect(typedConnection(prior));
  } catch {
    return [];
  }
  const stop = new AbortController();
  const cancel = deps.clock.setTimer(LOOKUP_TIMEOUT_MS, () => stop.abort());
  try {
    const kind = KINDS.find((k) => k.name === resource);
    const r =
      kind !== undefined
        ? await listAll(conn.transport, kind.resource, KubeObjectSchema, {
            namespace: conn.namespace,
            signal: stop.signal,
          })
        : await listAll(conn.transport, NAMESPACES, KubeObjectSchema, { signal: stop.signal });
    return r.ok ? r.value.items.map((o) => o.metadata.name ?? '').filter((n) => n !== '') : [];
  } finally {
    cancel();
    conn.close();
  }
}

/** `__complete WORDS…`: cobra's protocol (candidates, then `:<directive>`); never fails. */
export const completeSpec: CliCommandSpec = {
  name: '__complete',
  summary: 'answer shell completion (used by the completion scripts and kubectl)',
  usage:
    'Usage: {program} __complete WORD... CURRENT\n\nUsed by the completion scripts; prints candidates, then :<directive>.',
  async run(io: CommandIo, deps: CliDeps) {
    const typed = io.argv.length === 0 ? [''] : io.argv;
    const current = typed.at(-1) ?? '';
    // The value of `--flag=…` (or `-n=…`): planned as `--flag …`, the candidates given back as `--flag=value`.
    const joined = /^(--?[A-Za-z][\w-]*)=([\s\S]*)$/.exec(current);
    const args = joined !== null ? [...typed.slice(0, -1), joined[1] ?? '', joined[2] ?? ''] : typed;
    const prefix = joined !== null ? `${joined[1]}=` : '';
    const plan = planCompletion(args);
    const answer = (candidates: readonly string[], files: boolean): string =>
      completionAnswer(
        candidates.map((c) => `${prefix}${c}`),
        current,
        files,
      );
    switch (plan.kind) {
      case 'words':
        io.stdout(answer(plan.words, false));
        break;
      case 'files':
        io.stdout(answer([], true));
        break;
      case 'names':
        io.stdout(answer(await lookupNames(deps, plan.resource, args.slice(0, -1)), false));
        break;
      case 'none':
        io.stdout(answer([], false));
        break;
    }
    return EXIT.ok;
  },
};

export const completionCommand = cliCommand(completionSpec);
export const completeCommand = cliCommand(completeSpec);
