// What a keyless run (issue 28, docs/design/gateway.md) is checked for on the process node: the processes of a run
// pod (found by the pod's own environment), their environment, and every file of the pod's volumes as its processes
// see them. Shared by the real-CLI gateway tests.
import { type Dirent, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';

/** One process of a run pod: its pid, its environment (`/proc/<pid>/environ`, NUL-separated) and its cwd. */
export interface PodProcess {
  readonly pid: string;
  readonly environ: string;
  readonly cwd: string;
}

/** The processes of this machine whose environment says they belong to the run `agentName` of namespace `ns`. */
export function podProcesses(ns: string, agentName: string): PodProcess[] {
  const out: PodProcess[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
      const vars = environ.split('\0');
      if (!vars.includes(`POD_NAMESPACE=${ns}`) || !vars.includes(`AGENT_NAME=${agentName}`)) continue;
      out.push({ pid, environ, cwd: readlinkSync(`/proc/${pid}/cwd`) });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/** The command line of process `pid` (NUL-separated), or '' when it is gone. */
export function commandLineOf(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** The values of variable `name` in the environments of `procs`. */
export function envValues(procs: readonly PodProcess[], name: string): string[] {
  return procs.flatMap((p) =>
    p.environ
      .split('\0')
      .filter((e) => e.startsWith(`${name}=`))
      .map((e) => e.slice(name.length + 1)),
  );
}

/**
 * The pod's volumes as process `pid` sees them (the test node bind-mounts them from the pod's folder into the
 * container's mount namespace): each mount whose source lies under a `pods/` folder, reached through
 * `/proc/<pid>/root`.
 */
export function podVolumes(pid: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n')) {
    const fields = line.split(' ');
    const source = fields[3] ?? '';
    const target = fields[4] ?? '';
    if (source.includes(`${sep}pods${sep}`)) out.push(`/proc/${pid}/root${target}`);
  }
  return out;
}

/**
 * Every regular file under `dir` (or `dir` itself, a file) whose bytes contain `needle`, and every file read. A file
 * or folder removed while the walk reaches it (a CLI's temporary files, a database journal) is passed over.
 */
export function filesHolding(dir: string, needle: string): { found: string[]; read: string[] } {
  const found: string[] = [];
  const read: string[] = [];
  const gone = (e: unknown) => (e as NodeJS.ErrnoException).code === 'ENOENT';
  const check = (p: string) => {
    try {
      if (statSync(p).size >= 64 * 1024 * 1024) return;
      const bytes = readFileSync(p);
      read.push(p);
      if (bytes.includes(needle)) found.push(p);
    } catch (e) {
      if (!gone(e)) throw e;
    }
  };
  const walk = (d: string) => {
    let entries: Dirent[];
    try {
      if (statSync(d).isFile()) {
        check(d);
        return;
      }
      entries = readdirSync(d, { withFileTypes: true });
    } catch (e) {
      if (gone(e)) return;
      throw e;
    }
    for (const entry of entries) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) check(p);
    }
  };
  walk(dir);
  return { found, read };
}

/**
 * Where `needle` (a vendor key) shows in the pod of `procs`: the environment of each of them, and each file of the
 * pod's volumes as process `pid` (one of them, alive while this reads) sees them. Returns the places found (empty:
 * none), the volumes and every file read, for positive controls.
 */
export function keyInPod(
  procs: readonly PodProcess[],
  pid: string,
  needle: string,
): { found: string[]; volumes: string[]; read: string[] } {
  const found = procs.filter((p) => p.environ.includes(needle)).map((p) => `/proc/${p.pid}/environ`);
  const volumes = podVolumes(pid);
  const read: string[] = [];
  for (const volume of volumes) {
    const scan = filesHolding(volume, needle);
    found.push(...scan.found);
    read.push(...scan.read);
  }
  return { found, volumes, read };
}
