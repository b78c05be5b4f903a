// The imperative shell of the CLI commands: how they reach the cluster (kubeconfig, context and namespace exactly
// as kubectl picks them), the terminal they write to, the clock, Ctrl-C, and the one place where any failure
// becomes one line on stderr and an exit code. Commands take these as `CliDeps`, so their flows are tested with a
// fake transport and a manual clock.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTransport, describeKubeError, resolveClusterConfig, type Transport } from '../kube/index.ts';
import { type Clock, systemClock } from '../runtime/index.ts';
import { type Command, type CommandIo, UsageError } from './command.ts';
import { CliError, EXIT, oneLine } from './exit.ts';
import { type ConnectionFlags, programName } from './flags.ts';
import { colorEnabled, type Paint, painter, sanitize } from './style.ts';

/** An open connection to the API server, and the namespace the command works in. */
export interface Connection {
  readonly transport: Transport;
  readonly namespace: string;
  close(): void;
}

/** Everything a command needs from outside. */
export interface CliDeps {
  /** `agent-controller` or `kubectl agent`, for help and error lines. */
  readonly program: string;
  connect(flags: ConnectionFlags): Promise<Connection>;
  readonly clock: Clock;
  readonly random: () => number;
  readonly stdoutTty: boolean;
  readonly stderrTty: boolean;
  /** The terminal width of stderr, when it is a terminal. */
  columns(): number | undefined;
  readFile(path: string): Promise<string>;
  readStdin(): Promise<string>;
  /** A signal that fires on Ctrl-C (SIGINT) or SIGTERM until disposed. */
  interrupt(): { readonly signal: AbortSignal; dispose(): void };
}

/**
 * The kubeconfig to use, as kubectl picks it: `--kubeconfig`, else `$KUBECONFIG` (a list), else `~/.kube/config`
 * when it exists; undefined means in-cluster.
 */
export function kubeconfigPath(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  exists: (path: string) => boolean,
): string | undefined {
  if (flag !== undefined && flag !== '') return flag;
  if ((env.KUBECONFIG ?? '') !== '') return env.KUBECONFIG;
  const home = env.HOME ?? env.USERPROFILE;
  if (home === undefined || home === '') return undefined;
  const path = join(home, '.kube', 'config');
  return exists(path) ? path : undefined;
}

/** Opens a connection as kubectl would: the kubeconfig (or in-cluster config), the context, the namespace. */
export async function connectCluster(
  flags: ConnectionFlags,
  env: Readonly<Record<string, string | undefined>>,
): Promise<Connection> {
  const path = kubeconfigPath(flags.kubeconfig, env, existsSync);
  const cluster = await resolveClusterConfig({ kubeconfig: path, context: flags.context, env });
  if (!cluster.ok) {
    if (path === undefined)
      throw new CliError(
        'no kubeconfig: pass --kubeconfig, set $KUBECONFIG or create ~/.kube/config (nor is this a pod in a cluster)',
      );
    throw new CliError(oneLine(describeKubeError(cluster.error).replace(/^config: /, '')));
  }
  const transport = createTransport({
    server: cluster.value.server,
    credentials: cluster.value.credentials,
    timeoutMs: 30_000,
    identity: 'cli',
  });
  return {
    transport,
    namespace: flags.namespace ?? cluster.value.namespace ?? 'default',
    close: () => transport.close(),
  };
}

/** The real world: process streams, files, signals, the system clock. */
export function systemDeps(io: CommandIo, argv1: string | undefined = process.argv[1]): CliDeps {
  return {
    program: programName(argv1),
    connect: (flags) => connectCluster(flags, io.env),
    clock: systemClock,
    random: Math.random,
    stdoutTty: process.stdout.isTTY === true,
    stderrTty: process.stderr.isTTY === true,
    columns: () => (process.stderr.isTTY === true ? process.stderr.columns : undefined),
    readFile: async (path) => readFileSync(path, 'utf8'),
    readStdin: async () => {
      let text = '';
      const decoder = new TextDecoder();
      for await (const chunk of process.stdin) text += decoder.decode(chunk as Uint8Array, { stream: true });
      return text + decoder.decode();
    },
    interrupt: () => {
      const ctl = new AbortController();
      const onSignal = (): void => ctl.abort();
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      return {
        signal: ctl.signal,
        dispose: () => {
          process.off('SIGINT', onSignal);
          process.off('SIGTERM', onSignal);
        },
      };
    },
  };
}

/** Painters for stdout and stderr: colour only on a terminal without NO_COLOR. */
export function paints(io: CommandIo, deps: CliDeps): { out: Paint; err: Paint } {
  return {
    out: painter(colorEnabled(deps.stdoutTty, io.env)),
    err: painter(colorEnabled(deps.stderrTty, io.env)),
  };
}

/** A CLI command: its help, and its body run with the deps. */
export interface CliCommandSpec {
  readonly name: string;
  readonly summary: string;
  /** The help text; `{program}` is replaced by how the bundle was invoked. */
  readonly usage: string;
  readonly run: (io: CommandIo, deps: CliDeps) => Promise<number>;
}

/** The help of a command for `program`. */
export function helpText(spec: Pick<CliCommandSpec, 'usage'>, program: string): string {
  return spec.usage.replaceAll('{program}', program);
}

/**
 * Runs a command body and turns every failure into one line on stderr: a usage mistake (exit 2, with a pointer to
 * `--help`), a CliError (its code), anything else (exit 1, its message, never a stack trace).
 */
export async function guarded(spec: CliCommandSpec, io: CommandIo, deps: CliDeps): Promise<number> {
  try {
    return await spec.run(io, deps);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`error: ${oneLine(error.message)} (see '${deps.program} ${spec.name} --help')\n`);
      return EXIT.usage;
    }
    if (error instanceof CliError) {
      // Messages quote cluster text (server messages, names): made harmless here once more.
      io.stderr(`error: ${sanitize(error.message)}\n`);
      return error.code;
    }
    io.stderr(`error: ${oneLine(error instanceof Error ? error.message : String(error))}\n`);
    return EXIT.failed;
  }
}

/** The bundle's Command for a CLI command (real deps, guarded). */
export function cliCommand(spec: CliCommandSpec): Command & { readonly spec: CliCommandSpec } {
  return {
    name: spec.name,
    summary: spec.summary,
    usage: helpText(spec, 'agent-controller'),
    spec,
    run: (io) => guarded(spec, io, systemDeps(io)),
  };
}
