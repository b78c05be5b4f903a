// The process groups under the agent CLI: a CLI may start a tool in a process group of its own (Gemini CLI 0.61
// runs its shell tool detached, docs/reference/vendor-clis.md#exit-codes-and-retries-2), which a signal to the CLI's
// group misses. Read from /proc (Linux); elsewhere there is none to find.
import { readdirSync, readFileSync } from 'node:fs';

/** One process as /proc/<pid>/stat shows it. */
export interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  readonly pgrp: number;
}

/** `pid (comm) state ppid pgrp …` → its pid, ppid and pgrp; undefined when it is not that shape. Pure. */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  const pid = Number.parseInt(text, 10);
  if (close === -1 || !Number.isInteger(pid)) return undefined;
  const [, ppid, pgrp] = text
    .slice(close + 2)
    .split(' ')
    .map((f) => Number.parseInt(f, 10));
  if (ppid === undefined || pgrp === undefined || !Number.isInteger(ppid) || !Number.isInteger(pgrp))
    return undefined;
  return { pid, ppid, pgrp };
}

/** The process groups of `root`'s descendants other than `root`'s own group (`root` leads it). Pure. */
export function descendantGroups(root: number, processes: readonly ProcStat[]): number[] {
  const children = new Map<number, ProcStat[]>();
  for (const p of processes) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const groups = new Set<number>();
  const todo = [root];
  const seen = new Set<number>(todo);
  for (let pid = todo.pop(); pid !== undefined; pid = todo.pop()) {
    for (const child of children.get(pid) ?? []) {
      if (seen.has(child.pid)) continue;
      seen.add(child.pid);
      if (child.pgrp !== root && child.pgrp > 1) groups.add(child.pgrp);
      todo.push(child.pid);
    }
  }
  return [...groups];
}

/** Every process of the machine (or PID namespace) as /proc shows it; none when there is no /proc. */
export function readProcesses(): ProcStat[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  const out: ProcStat[] = [];
  for (const pid of pids) {
    try {
      const stat = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      if (stat !== undefined) out.push(stat);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
