// Agent memory after a run (issue 10 §3): the last memory block of a successful run's final answer replaces the
// memory it started with. Decided purely (issue 27 §2) from the run's Job (which records the memory ConfigMap, its cap
// and the version the run read), the answer and the memory ConfigMap as the shell observed it (`Snapshot.memorySave`):
// no write, a create, or a replace at the resourceVersion read, with the Events that tell it. The executor performs
// the one write; a write that met a changed ConfigMap is observed again and decided again here.

import { DEFAULT_MEMORY_MAX_SIZE_KB } from '../../api/index.ts';
import {
  LABEL_MEMORY,
  lastMemoryBlock,
  MEMORY_KEY,
  MEMORY_OPEN,
  memoryOfJob,
  type RunMemoryRecord,
  utf8Length,
} from '../../jobs/index.ts';
import type { Vendor } from '../../vendors/cli/route.ts';
import type { Action, AgentRef } from '../actions.ts';
import { REASON } from '../reasons.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { agentRef, event } from './status.ts';

/** Writes one save makes at most (each after the ConfigMap changed under the one before) before it gives up. */
export const MAX_MEMORY_WRITES = 5;

/** What the grant a memory needs is called in messages. */
export const MEMORY_GRANT =
  'the controller needs configmaps get, create and update in this namespace (deploy/components/memory)';

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
 * What the end of a run does to its memory: `needs` (the memory ConfigMap must be observed first), or the write to
 * run right before the terminal patch (none, or one `saveMemory`) and the Events to record after the run's own.
 */
export type MemoryPlan =
  | { readonly kind: 'needs' }
  | { readonly kind: 'plan'; readonly write: readonly Action[]; readonly events: readonly Action[] };

const nothing: MemoryPlan = { kind: 'plan', write: [], events: [] };
const told = (...events: Action[]): MemoryPlan => ({ kind: 'plan', write: [], events });

/** The memory a run started with, as its Job records it (undefined: it started without memory). */
export function runMemory(s: CommonSnapshot): RunMemoryRecord | undefined {
  if (s.job.kind !== 'present') return undefined;
  return memoryOfJob(s.job.job.metadata.annotations, DEFAULT_MEMORY_MAX_SIZE_KB);
}

/**
 * What the end of a run does to its memory: nothing unless the run Succeeded, started with memory (its Job says so)
 * and its answer holds a memory block; a block over the run's `maxSizeKB` is not saved (Warning `MemoryTooLarge`); a
 * cut answer that may hold one is not trusted (Warning `MemoryNotSaved`); otherwise the block is saved
 * ({@link saveBlock}).
 */
export function memoryAfterRun(s: CommonSnapshot, run: MemoryAfterRun): MemoryPlan {
  if (run.phase !== 'Succeeded') return nothing;
  const memory = runMemory(s);
  if (memory === undefined) return nothing;
  const ref = agentRef(s.agent);
  // The final answer; an exec run, whose command has no result format, answers with its output.
  const text = run.answer ?? (run.vendor === 'exec' ? run.output : undefined);
  if (text === undefined) return nothing;
  if (run.answerTruncated) {
    return text.includes(MEMORY_OPEN)
      ? told(
          event(
            ref,
            'Warning',
            REASON.memoryNotSaved,
            `Memory not saved: the run's final answer was cut short, so its memory block cannot be trusted; ConfigMap ${memory.configMap} is unchanged`,
          ),
        )
      : nothing;
  }
  const block = lastMemoryBlock(text);
  if (block === undefined) return nothing;
  const size = utf8Length(block);
  const cap = memory.maxSizeKB * 1024;
  if (size > cap) {
    return told(
      event(
        ref,
        'Warning',
        REASON.memoryTooLarge,
        `Memory not saved: the memory block is ${size} bytes, over memory.maxSizeKB ${memory.maxSizeKB} (${cap} bytes); ConfigMap ${memory.configMap} is unchanged`,
      ),
    );
  }
  return saveBlock(s, ref, memory, block);
}

/**
 * Saving `content` to the memory ConfigMap as observed (`Snapshot.memorySave`; not observed yet → `needs`):
 * - the read or the last write refused or failed → Warning `MemoryNotSaved` with the answer (a 403 names the grant);
 * - MAX_MEMORY_WRITES writes met a changed ConfigMap → Warning `MemoryNotSaved` (it kept changing);
 * - absent → create it, labelled as a memory, owned by nothing (it outlives the run);
 * - present without the memory label → never written (Warning `MemoryNotSaved`);
 * - MEMORY.md already `content` → no write; `MemorySaved` only when it was written after the run read it (by this
 *   run, in a decision whose terminal patch did not land, or by another writer of the same text);
 * - immutable → Warning `MemoryNotSaved`;
 * - else → replace MEMORY.md (everything else kept) at the resourceVersion read.
 * A write is told by `MemorySaved`, and by `MemoryOverwritten` when the version replaced is not the one the run read
 * or a write had met a change first (last writer wins, never silently).
 */
export function saveBlock(
  s: CommonSnapshot,
  ref: AgentRef,
  memory: RunMemoryRecord,
  content: string,
): MemoryPlan {
  const observed = s.memorySave;
  if (observed === undefined) return { kind: 'needs' };
  const name = memory.configMap;
  const notSaved = (why: string): MemoryPlan =>
    told(event(ref, 'Warning', REASON.memoryNotSaved, `Memory not saved to ConfigMap ${name}: ${why}`));
  const cm = observed.configMap;
  if (cm.kind === 'failed') return notSaved(cm.forbidden ? `${cm.message}; ${MEMORY_GRANT}` : cm.message);
  if (observed.changed >= MAX_MEMORY_WRITES)
    return notSaved(`it kept changing while being written (${MAX_MEMORY_WRITES} attempts)`);
  const namespace = s.agent.metadata.namespace;
  const saved = (replaced: string): readonly Action[] =>
    savedEvents(ref, name, content, memory.readVersion, replaced, observed.changed > 0);
  if (cm.kind === 'absent') {
    const configMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace, labels: { [LABEL_MEMORY]: 'true' } },
      data: { [MEMORY_KEY]: content },
    };
    return { kind: 'plan', write: [{ kind: 'saveMemory', ref, namespace, configMap }], events: saved('') };
  }
  const current = cm.configMap;
  if (current.metadata.labels?.[LABEL_MEMORY] !== 'true')
    return notSaved(
      `it is not labelled ${LABEL_MEMORY}=true (only ConfigMaps marked as memories are written)`,
    );
  const resourceVersion = current.metadata.resourceVersion;
  if (current.data?.[MEMORY_KEY] === content) {
    const writtenSince = memory.readVersion !== undefined && memory.readVersion !== resourceVersion;
    return writtenSince ? told(savedEvent(ref, name, content)) : nothing;
  }
  if (current.immutable === true) return notSaved('the ConfigMap is immutable');
  const configMap = { ...current, data: { ...(current.data ?? {}), [MEMORY_KEY]: content } };
  return {
    kind: 'plan',
    write: [{ kind: 'saveMemory', ref, namespace, configMap, replace: { resourceVersion } }],
    events: saved(resourceVersion),
  };
}

const savedEvent = (ref: AgentRef, name: string, content: string): Action =>
  event(
    ref,
    'Normal',
    REASON.memorySaved,
    `Memory saved to ConfigMap ${name} (${utf8Length(content)} bytes)`,
  );

/** `MemorySaved`, and `MemoryOverwritten` when another writer came in between (the version replaced is not the one read). */
function savedEvents(
  ref: AgentRef,
  name: string,
  content: string,
  read: string | undefined,
  replaced: string,
  retried: boolean,
): readonly Action[] {
  if (!retried && (read === undefined || read === replaced)) return [savedEvent(ref, name, content)];
  const since =
    read === undefined
      ? 'while this run saved its own'
      : read === ''
        ? 'after this run started (the ConfigMap did not exist then)'
        : `after this run read it (resourceVersion ${read})`;
  return [
    savedEvent(ref, name, content),
    event(
      ref,
      'Normal',
      REASON.memoryOverwritten,
      `This run's memory replaced a concurrent update of ConfigMap ${name}, written ${since}: the last writer wins`,
    ),
  ];
}
