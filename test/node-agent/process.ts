// Starts one container as a local process: a private mount namespace (unshare) with the pod's volumes
// bind-mounted, the working directory, then setpriv for uid/gid/groups/capabilities, then exec.
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { DEFAULT_PATH, type Identity, type MountPlan } from './plan.ts';

/** Absolute paths of the host tools the wrapper needs (found once at start). */
export interface HostTools {
  readonly unshare: string;
  readonly sh: string;
  readonly mount: string;
  readonly mkdir: string;
  readonly setpriv: string;
}

function which(name: string): string {
  for (const dir of (process.env.PATH || DEFAULT_PATH).split(':')) {
    const candidate = `${dir}/${name}`;
    if (isExecutableFile(candidate)) return candidate;
  }
  throw new Error(`the test node agent needs "${name}" on PATH (Debian: util-linux / coreutils / dash)`);
}

/** Finds the host tools; throws naming the first one missing. */
export function findHostTools(): HostTools {
  return {
    unshare: which('unshare'),
    sh: which('sh'),
    mount: which('mount'),
    mkdir: which('mkdir'),
    setpriv: which('setpriv'),
  };
}

/** Whether `path` is a regular file the container's user could execute (checked as root: any x bit). */
export function isExecutableFile(path: string): boolean {
  try {
    const st = statSync(path);
    if (!st.isFile()) return false;
    accessSync(path, constants.X_OK);
    return (st.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

/**
 * The shell program run inside the new mount namespace. Arguments: triples `source target ro|rw`, then
 * `--`, the working directory, then the command. Its own errors go to fd 3, and it reports "started" on
 * fd 3 right before exec, so the agent can tell a start failure (and its message) from the program's
 * own exit code and output.
 */
export function wrapperScript(tools: HostTools): string {
  return [
    'set -e',
    'exec 4>&2 2>&3',
    'while [ "$1" != "--" ]; do',
    '  src=$1; dst=$2; mode=$3; shift 3',
    `  if [ -d "$src" ]; then ${tools.mkdir} -p "$dst"; else ${tools.mkdir} -p "\${dst%/*}/"; [ -e "$dst" ] || : >"$dst"; fi`,
    `  ${tools.mount} --bind "$src" "$dst"`,
    `  if [ "$mode" = ro ]; then ${tools.mount} -o remount,bind,ro "$dst"; fi`,
    'done',
    'shift',
    `${tools.mkdir} -p "$1"`,
    'cd "$1"',
    'shift',
    'echo started >&3',
    'exec 2>&4 4>&- 3>&-',
    'exec "$@"',
  ].join('\n');
}

/** setpriv arguments for an identity. */
export function setprivArgs(id: Identity): string[] {
  const caps = id.capabilities.length > 0 ? `-all,${id.capabilities.map((c) => `+${c}`).join(',')}` : '-all';
  return [
    `--reuid=${id.uid}`,
    `--regid=${id.gid}`,
    id.groups.length > 0 ? `--groups=${id.groups.join(',')}` : '--clear-groups',
    '--inh-caps=-all',
    `--bounding-set=${caps}`,
    ...(id.noNewPrivs ? ['--no-new-privs'] : []),
    '--',
  ];
}

/** Everything needed to start one container process. */
export interface ProcessSpec {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly workingDir: string;
  readonly mounts: readonly MountPlan[];
  readonly identity: Identity;
}

/**
 * Spawns the container in its own process group (so the whole tree can be signalled) with stdin
 * closed, stdout/stderr piped, and fd 3 as the start-report pipe. Only the container's env is passed.
 */
export function spawnContainer(spec: ProcessSpec, tools: HostTools): ChildProcess {
  const mountArgs = spec.mounts.flatMap((m) => [m.source, m.target, m.readOnly ? 'ro' : 'rw']);
  const args = [
    '--mount',
    '--propagation',
    'private',
    '--',
    tools.sh,
    '-c',
    wrapperScript(tools),
    'container-wrapper',
    ...mountArgs,
    '--',
    spec.workingDir,
    tools.setpriv,
    ...setprivArgs(spec.identity),
    ...spec.argv,
  ];
  return spawn(tools.unshare, args, {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    env: { ...spec.env },
    cwd: '/',
  });
}
