// The run report (issue 10 §2) in the agent container's termination message: what the vendor CLI's output said (final
// answer, usage, cost, model), encoded to fit the 4096 bytes Kubernetes keeps. Written when the run ends, after the CLI
// exited, on every exit path. It must never fail the run: a missing or unwritable file is logged at debug and ignored.

import { closeSync, ftruncateSync, openSync, writeFileSync } from 'node:fs';
import type { Logger } from '../../shared/log.ts';
import { encodeRunReport, type RunResult } from '../../vendors/cli/index.ts';

/**
 * Writes `report` to the termination message file at `path`, replacing what is there. Only a file that exists is
 * written (the kubelet provides it in a pod; nothing is ever created elsewhere). Returns whether it was written;
 * never throws.
 */
export function writeRunReport(path: string, report: RunResult, log: Logger): boolean {
  let fd: number | undefined;
  try {
    const text = encodeRunReport(report);
    fd = openSync(path, 'r+');
    ftruncateSync(fd, 0);
    writeFileSync(fd, text);
    return true;
  } catch (error) {
    log.debug('[supervisor] could not write the run report', {
      path,
      error: error instanceof Error ? error.message : String(error),
    });
    return false;
  } finally {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // nothing left to do
      }
    }
  }
}
