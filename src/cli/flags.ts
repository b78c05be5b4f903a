// Command-line parsing shared by the CLI commands: the kubectl connection flags, durations, `--set key=value`,
// `-o` formats, how the bundle was invoked (`kubectl agent …` through a file named kubectl-agent*) and where the
// subcommand is when global flags come first. Pure.
import { parseFlags, UsageError } from './command.ts';

/** The connection flags every command takes, as kubectl spells them. */
export const CONNECTION_FLAGS = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
} as const;

export interface ConnectionFlags {
  readonly kubeconfig?: string | undefined;
  readonly context?: string | undefined;
  readonly namespace?: string | undefined;
}

/** The help lines of the connection flags. */
export const CONNECTION_HELP = [
  '  -n, --namespace NS    namespace (default: the kubeconfig context namespace, else default)',
  '  --kubeconfig PATH     kubeconfig (default: $KUBECONFIG, else ~/.kube/config, else in-cluster)',
  '  --context NAME        kubeconfig context (default: its current-context)',
].join('\n');

const text = (x: unknown): string | undefined => (typeof x === 'string' && x !== '' ? x : undefined);

/** The connection flags out of parsed values; an empty `-n` is a mistake. */
export function connectionFlags(values: Readonly<Record<string, unknown>>): ConnectionFlags {
  if (values.namespace === '') throw new UsageError('--namespace must not be empty');
  return {
    kubeconfig: text(values.kubeconfig),
    context: text(values.context),
    namespace: text(values.namespace),
  };
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration as kubectl takes one (`90s`, `10m`, `1h30m`, `1.5h`, `500ms`), or a bare number of seconds. Must be
 * more than zero. Milliseconds.
 */
export function parseDuration(value: string, flag = '--timeout'): number {
  const v = value.trim();
  let ms: number | undefined;
  if (/^\d+(\.\d+)?$/.test(v)) ms = Number(v) * 1000;
  else if (/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(v)) {
    ms = 0;
    for (const m of v.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g))
      ms += Number(m[1]) * (UNITS[m[2] ?? 's'] ?? 1000);
  }
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0)
    throw new UsageError(`${flag} must be a duration like 90s, 10m or 1h30m, got ${JSON.stringify(value)}`);
  return Math.round(ms);
}

/** `--set key=value` pairs as parameters (a later key wins); the value may hold `=` and be empty. */
export function parseSets(pairs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? '' : pair.slice(0, eq);
    if (eq <= 0 || /\s/.test(key))
      throw new UsageError(`--set takes key=value (a key without blanks), got ${JSON.stringify(pair)}`);
    // An own property whatever the key (`out[key] =` would set the prototype for `__proto__`).
    Object.defineProperty(out, key, {
      value: pair.slice(eq + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** Output formats of `get`. */
export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml' | 'name';

/** The `-o` value (absent: the table). */
export function parseOutput(value: unknown): OutputFormat {
  if (value === undefined) return 'table';
  if (value === 'wide' || value === 'json' || value === 'yaml' || value === 'name') return value;
  throw new UsageError(`-o must be one of wide, json, yaml, name; got ${JSON.stringify(value)}`);
}

/** Strings of a `multiple: true` flag. */
export function strings(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((x): x is string => typeof x === 'string');
  return typeof value === 'string' ? [value] : [];
}

/** True when the bundle runs as kubectl's plugin: through a file whose name starts with `kubectl-agent`. */
export function isPluginInvocation(argv1: string | undefined): boolean {
  const base = (argv1 ?? '').split(/[\\/]/).pop() ?? '';
  return base.startsWith('kubectl-agent');
}

/** True when kubectl runs the bundle to complete `kubectl agent …` (through a file named kubectl_complete-agent*). */
export function isCompletionInvocation(argv1: string | undefined): boolean {
  const base = (argv1 ?? '').split(/[\\/]/).pop() ?? '';
  return base.startsWith('kubectl_complete-agent');
}

/** How help and errors name the program. */
export function programName(argv1: string | undefined): string {
  return isPluginInvocation(argv1) ? 'kubectl agent' : 'agent-controller';
}

/** Global flags that take a value in the next word (kubectl lets them come before the subcommand). */
const VALUE_FLAGS = new Set(['--kubeconfig', '--context', '--namespace', '-n']);

/**
 * The subcommand and the rest of argv when flags may come first (`kubectl agent -n team get`): the first word that
 * is neither a flag nor the value of a connection flag. The flags stay in `rest`, in order.
 */
export function splitCommand(argv: readonly string[]): { command: string | undefined; rest: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === '--') break;
    if (VALUE_FLAGS.has(a)) {
      i++;
      continue;
    }
    if (a.startsWith('-')) continue;
    return { command: a, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { command: undefined, rest: [...argv] };
}

type FlagOptions = Readonly<
  Record<
    string,
    { readonly type: 'string' | 'boolean'; readonly short?: string; readonly multiple?: boolean }
  >
>;

/**
 * kubectl's `-X=value` for a short flag that takes a value (`-n=team`, `-o=yaml`) as `-X value`, which node's
 * parseArgs reads (it would take `-n=team` as the namespace "=team"). Words after `--` are left alone.
 */
export function normalizeShortFlags(argv: readonly string[], options: FlagOptions): string[] {
  const valued = new Set(
    Object.values(options)
      .filter((o) => o.type === 'string' && o.short !== undefined)
      .map((o) => o.short),
  );
  const out: string[] = [];
  for (const [i, a] of argv.entries()) {
    if (a === '--') return [...out, ...argv.slice(i)];
    const m = /^-([A-Za-z])=([\s\S]*)$/.exec(a);
    if (m !== null && valued.has(m[1])) out.push(`-${m[1]}`, m[2] ?? '');
    else out.push(a);
  }
  return out;
}

/** The command line's flag parsing: {@link normalizeShortFlags}, then the shared parseFlags (positionals allowed). */
export function parseCliFlags<O extends FlagOptions>(
  argv: readonly string[],
  options: O,
): ReturnType<typeof parseFlags> {
  return parseFlags(normalizeShortFlags(argv, options), options as Parameters<typeof parseFlags>[1], true);
}
