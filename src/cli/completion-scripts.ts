// Shell completion: what to offer for a partly typed command line (subcommands, flags, kinds, flag values, or the
// names of Agents, Stations, AgentDefinitions and namespaces, looked up by the caller), answered the way cobra's
// `__complete` does (one candidate per line, then `:<directive>`), so the same answer serves our bash, zsh and fish
// scripts and kubectl's own completion of plugins (it runs `kubectl_complete-agent <words>`). Pure.
import { CONNECTION_FLAGS, type ConnectionFlags, splitCommand } from './flags.ts';
import { GET_FLAGS } from './get.ts';
import { KINDS, kindOf } from './kinds.ts';
import { LOGS_FLAGS } from './logs.ts';
import { RERUN_FLAGS } from './rerun.ts';
import { RUN_FLAGS } from './run.ts';

type FlagTable = Readonly<Record<string, { readonly type: 'string' | 'boolean'; readonly short?: string }>>;

const PROMPT_API_FLAGS = {
  ...CONNECTION_FLAGS,
  endpoint: { type: 'string' },
  'controller-namespace': { type: 'string' },
  'certificate-authority': { type: 'string' },
  'insecure-skip-tls-verify': { type: 'boolean' },
} as const;

/** What can be completed in place of a positional argument. */
type Positional = (before: readonly string[]) => CompletionPlan;

/** What to offer. */
export type CompletionPlan =
  | { readonly kind: 'words'; readonly words: readonly string[] }
  | { readonly kind: 'files' }
  | { readonly kind: 'names'; readonly resource: 'agents' | 'stations' | 'definitions' | 'namespaces' }
  | { readonly kind: 'none' };

const words = (w: readonly string[]): CompletionPlan => ({ kind: 'words', words: w });
const names = (resource: 'agents' | 'stations' | 'definitions' | 'namespaces'): CompletionPlan => ({
  kind: 'names',
  resource,
});
const NONE: CompletionPlan = { kind: 'none' };
const KIND_WORDS = KINDS.map((k) => k.name);

/** The CLI commands completion knows, with their flags and what their positionals are. */
export const COMPLETION_COMMANDS: Readonly<Record<string, { flags: FlagTable; positional: Positional }>> = {
  run: { flags: RUN_FLAGS, positional: (b) => (b.length === 0 ? names('stations') : NONE) },
  rerun: { flags: RERUN_FLAGS, positional: (b) => (b.length === 0 ? names('agents') : NONE) },
  get: {
    flags: GET_FLAGS,
    positional: (b) => {
      if (b.length === 0) return words(KIND_WORDS);
      const kind = kindOf(b[0] ?? '');
      return names(kind?.name ?? 'agents');
    },
  },
  describe: {
    flags: CONNECTION_FLAGS,
    positional: (b) => (b.length === 0 ? { kind: 'words', words: ['agent'] } : names('agents')),
  },
  logs: { flags: LOGS_FLAGS, positional: (b) => (b.length === 0 ? names('agents') : NONE) },
  delete: {
    flags: CONNECTION_FLAGS,
    positional: (b) => {
      if (b.length === 0) return words(KINDS.map((k) => k.noun));
      const kind = kindOf(b[0] ?? '');
      return kind === undefined ? NONE : names(kind.name);
    },
  },
  prompt: {
    flags: { ...PROMPT_API_FLAGS, interactive: { type: 'boolean' }, json: { type: 'boolean' } },
    positional: (b) => (b.length === 0 ? names('agents') : NONE),
  },
  close: { flags: PROMPT_API_FLAGS, positional: (b) => (b.length === 0 ? names('agents') : NONE) },
  suspend: { flags: CONNECTION_FLAGS, positional: (b) => (b.length === 0 ? names('agents') : NONE) },
  resume: { flags: CONNECTION_FLAGS, positional: (b) => (b.length === 0 ? names('agents') : NONE) },
  version: { flags: { json: { type: 'boolean' } }, positional: () => NONE },
  completion: { flags: {}, positional: (b) => (b.length === 0 ? words(['bash', 'zsh', 'fish']) : NONE) },
};

/** Every spelling of a table's flags: `--long` and `-s`. */
export function flagWords(table: FlagTable): string[] {
  return Object.entries(table).flatMap(([name, f]) => [`--${name}`, ...(f.short ? [`-${f.short}`] : [])]);
}

/** The long name of a flag word (`-n` → `namespace`, `--output` → `output`), if the table has it. */
function flagName(word: string, table: FlagTable): string | undefined {
  if (word.startsWith('--')) {
    const name = word.slice(2);
    return Object.hasOwn(table, name) ? name : undefined;
  }
  if (/^-[A-Za-z]$/.test(word)) return Object.entries(table).find(([, f]) => f.short === word.slice(1))?.[0];
  return undefined;
}

/** What a flag's value can be. */
function valuePlan(flag: string, command: string | undefined): CompletionPlan {
  switch (flag) {
    case 'namespace':
      return names('namespaces');
    case 'output':
      return words(command === 'rerun' ? ['name', 'yaml', 'json'] : ['wide', 'json', 'yaml', 'name']);
    case 'kubeconfig':
    case 'prompt-file':
    case 'certificate-authority':
      return { kind: 'files' };
    default:
      return NONE;
  }
}

/** The connection flags typed so far (for name lookups in the right namespace and cluster). */
export function typedConnection(prior: readonly string[]): ConnectionFlags {
  const out: { kubeconfig?: string; context?: string; namespace?: string } = {};
  for (let i = 0; i < prior.length; i++) {
    const w = prior[i] ?? '';
    const eq = w.indexOf('=');
    const name = flagName(eq > 0 ? w.slice(0, eq) : w, CONNECTION_FLAGS);
    if (name === undefined) continue;
    const value = eq > 0 ? w.slice(eq + 1) : prior[++i];
    if (value !== undefined && value !== '') out[name as keyof typeof out] = value;
  }
  return out;
}

/**
 * What to offer for `args` (the words after the program; the last one is the word being completed, maybe
 * empty): subcommands first, then a command's flags (after `-`), a flag's value, or its positionals.
 */
export function planCompletion(args: readonly string[]): CompletionPlan {
  const current = args.at(-1) ?? '';
  const prior = args.slice(0, -1);
  const { command, rest } = splitCommand(prior);
  const spec = command !== undefined ? COMPLETION_COMMANDS[command] : undefined;
  if (command !== undefined && spec === undefined) return NONE;
  const table: FlagTable = spec?.flags ?? CONNECTION_FLAGS;
  const last = prior.at(-1);
  if (last !== undefined && !last.includes('=')) {
    const flag = flagName(last, { ...CONNECTION_FLAGS, ...table });
    if (
      flag !== undefined &&
      (table[flag] ?? CONNECTION_FLAGS[flag as keyof typeof CONNECTION_FLAGS])?.type === 'string'
    )
      return valuePlan(flag, command);
  }
  if (current.startsWith('-')) {
    if (current.startsWith('--') && current.includes('=')) return NONE;
    return words([...flagWords(table), '--help']);
  }
  if (spec === undefined) return words(Object.keys(COMPLETION_COMMANDS));
  const positionals: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const w = rest[i] ?? '';
    if (!w.startsWith('-')) {
      positionals.push(w);
      continue;
    }
    const flag = flagName(w, table);
    if (flag !== undefined && table[flag]?.type === 'string') i++;
  }
  return spec.positional(positionals);
}

/** Cobra's directives: 4 = no file completion; 0 = the shell may complete file names. */
export const DIRECTIVE_NO_FILES = 4;
export const DIRECTIVE_DEFAULT = 0;

/** The `__complete` answer: the candidates that start with the current word, then the directive line. */
export function completionAnswer(candidates: readonly string[], current: string, files: boolean): string {
  const lines = [...new Set(candidates)].filter((c) => c.startsWith(current));
  return `${[...lines, `:${files ? DIRECTIVE_DEFAULT : DIRECTIVE_NO_FILES}`].join('\n')}\n`;
}

/** Shells `completion` writes a script for. */
export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** The commands a script completes: the bundle under its own name and as kubectl's plugin. */
const PROGRAMS = ['agent-controller', 'kubectl-agent'];

// The scripts are shell code: their `${…}` are parameter expansions, not templates.
// biome-ignore-start lint/suspicious/noTemplateCurlyInString: shell parameter expansions
/** The completion script for `shell`: it asks the program itself (`__complete`) what to offer. */
export function completionScript(shell: Shell): string {
  switch (shell) {
    case 'bash':
      return [
        '# bash completion for agent-controller and kubectl-agent',
        '#   source <(agent-controller completion bash)',
        '_agent_controller() {',
        '  local i w cur prefix= line directive',
        '  local -a args=() lines=()',
        '  # bash splits --flag=value at "=" (COMP_WORDBREAKS): join the pieces again.',
        '  for ((i = 1; i <= COMP_CWORD; i++)); do',
        '    w=${COMP_WORDS[i]}',
        '    if [ ${#args[@]} -gt 0 ] && { [ "$w" = = ] || [ "${args[${#args[@]}-1]: -1}" = = ]; }; then',
        '      args[${#args[@]}-1]+=$w',
        '    else',
        '      args+=("$w")',
        '    fi',
        '  done',
        '  cur=${args[${#args[@]}-1]}',
        '  # Completing the value of --flag=: bash replaces only what follows the "=".',
        '  case $cur in -*=*) prefix=${cur%%=*}= ;; esac',
        '  while IFS= read -r line; do lines+=("$line"); done < <(',
        '    "${COMP_WORDS[0]}" __complete "${args[@]}" 2>/dev/null)',
        '  [ ${#lines[@]} -gt 0 ] || return 0',
        '  directive=${lines[${#lines[@]}-1]#:}',
        '  unset "lines[${#lines[@]}-1]"',
        '  if [ ${#lines[@]} -eq 0 ] && [ $((directive & 4)) -eq 0 ]; then',
        '    COMPREPLY=($(compgen -f -- "${cur#"$prefix"}"))',
        '    return 0',
        '  fi',
        '  COMPREPLY=("${lines[@]#"$prefix"}")',
        '}',
        `complete -F _agent_controller ${PROGRAMS.join(' ')}`,
        '',
      ].join('\n');
    case 'zsh':
      return [
        `#compdef ${PROGRAMS.join(' ')}`,
        '# zsh completion for agent-controller and kubectl-agent',
        '#   source <(agent-controller completion zsh)   (after compinit)',
        '_agent_controller() {',
        '  local -a lines candidates',
        '  local directive',
        '  lines=("${(@f)$(${words[1]} __complete "${(@)words[2,CURRENT-1]}" "${words[CURRENT]}" 2>/dev/null)}")',
        '  (( ${#lines} )) || return 1',
        '  directive=${lines[-1]#:}',
        '  candidates=("${(@)lines[1,-2]}")',
        '  if (( ${#candidates} == 0 )) && (( (directive & 4) == 0 )); then',
        '    _files',
        '    return',
        '  fi',
        '  compadd -a candidates',
        '}',
        `compdef _agent_controller ${PROGRAMS.join(' ')}`,
        '',
      ].join('\n');
    case 'fish':
      return [
        '# fish completion for agent-controller and kubectl-agent',
        '#   agent-controller completion fish | source',
        'function __agent_controller_complete',
        '    set -l args (commandline -opc)',
        '    set -l prog $args[1]',
        '    set -e args[1]',
        '    set -l cur (commandline -ct)',
        '    set -l out ($prog __complete $args "$cur" 2>/dev/null)',
        '    test (count $out) -gt 0; or return',
        '    set -l directive (string replace -- ":" "" $out[-1])',
        '    set -e out[-1]',
        '    if test (count $out) -eq 0; and test (math "bitand($directive, 4)") -eq 0',
        '        __fish_complete_path "$cur"',
        '        return',
        '    end',
        "    printf '%s\\n' $out",
        'end',
        ...PROGRAMS.map((p) => `complete -c ${p} -f -a '(__agent_controller_complete)'`),
        '',
      ].join('\n');
  }
}
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: shell parameter expansions
