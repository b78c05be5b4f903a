// Agent memory after a run (issue 10 §3): the last memory block of a successful run's final answer replaces the
// memory it started with. Decided purely from the run's Job (which records the memory ConfigMap, its cap and the
// version the run read) and the answer; the executor writes the ConfigMap.

import { DEFAULT_MEMORY_MAX_SIZE_KB } from '../../api/index.ts';
import { lastMemoryBlock, MEMORY_OPEN, memoryOfJob, utf8Length } from '../../jobs/index.ts';
import type { Vendor } from '../../vendors/cli/route.ts';
import type { Action } from '../actions.ts';
import { REASON } from '../reasons.ts';
import type { Snapshot } from '../snapshot.ts';
import { agentRef, event } from './status.ts';

export interface MemoryAfterRun {
  readonly phase: 'Succeeded' | 'Failed';
  /** The run's final answer as read (uncapped), when it gave one. */
  readonly answer: string | undefined;
  /** The answer is known to be cut short. */
  readonly answerTruncated: boolean;
  /** The run's output (the capped log tail): what an `exec` run, which has no answer format, said. */
  readonly output: string;
  readonly vendor: Vendor;
}

/**
 * What the end of a run does to its memory, to run after its terminal status patch: nothing unless the run
 * Succeeded, started with memory (its Job says so) and its answer holds a memory block; a block over the run's
 * `maxSizeKB` is not saved (Warning `MemoryTooLarge`); a cut answer that may hold one is not trusted (Warning
 * `MemoryNotSaved`); otherwise `saveMemory`.
 */
export function memoryAfterRun(s: Snapshot, run: MemoryAfterRun): Action[] {
  if (run.phase !== 'Succeeded' || s.job.kind !== 'present') return [];
  const memory = memoryOfJob(s.job.job.metadata.annotations, DEFAULT_MEMORY_MAX_SIZE_KB);
  if (memory === undefined) return [];
  const ref = agentRef(s.agent);
  // The final answer; an exec run, whose command has no result format, answers with its output.
  const text = run.answer ?? (run.vendor === 'exec' ? run.output : undefined);
  if (text === undefined) return [];
  if (run.answerTruncated) {
    return text.includes(MEMORY_OPEN)
      ? [
          event(
            ref,
            'Warning',
            REASON.memoryNotSaved,
            `Memory not saved: the run's final answer was cut short, so its memory block cannot be trusted; ConfigMap ${memory.configMap} is unchanged`,
          ),
        ]
      : [];
  }
  const block = lastMemoryBlock(text);
  if (block === undefined) return [];
  const size = utf8Length(block);
  const cap = memory.maxSizeKB * 1024;
  if (size > cap) {
    return [
      event(
        ref,
        'Warning',
        REASON.memoryTooLarge,
        `Memory not saved: the memory block is ${size} bytes, over memory.maxSizeKB ${memory.maxSizeKB} (${cap} bytes); ConfigMap ${memory.configMap} is unchanged`,
      ),
    ];
  }
  return [
    {
      kind: 'saveMemory',
      ref,
      namespace: s.agent.metadata.namespace,
      configMap: memory.configMap,
      content: block,
      ...(memory.readVersion !== undefined ? { readVersion: memory.readVersion } : {}),
    },
  ];
}
