import { readFileSync, writeFileSync } from 'node:fs';
import * as v from 'valibot';

/** A process we started, identified by pid AND kernel start time, so a recycled pid is never signalled. */
export const ProcRecordSchema = v.object({ name: v.string(), pid: v.number(), start: v.string() });
export type ProcRecord = v.InferOutput<typeof ProcRecordSchema>;

/** The kernel start time (clock ticks since boot, as text) of a live, non-zombie process; else undefined. */
export function procStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
    return fields[19];
  } catch {
    return undefined;
  }
}

/** Whether the recorded process is still the one we started and still running. */
export function procAlive(rec: ProcRecord): boolean {
  return procStart(rec.pid) === rec.start;
}

/** Reads a JSON list of process records; an unreadable or malformed file reads as empty. */
export function readProcRecords(file: string): ProcRecord[] {
  try {
    return v.parse(v.array(ProcRecordSchema), JSON.parse(readFileSync(file, 'utf8')));
  } catch {
    return [];
  }
}

/** Writes a JSON list of process records. */
export function writeProcRecords(file: string, records: readonly ProcRecord[]): void {
  writeFileSync(file, `${JSON.stringify(records, null, 2)}\n`);
}
