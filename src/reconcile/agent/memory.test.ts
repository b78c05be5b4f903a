// The memory save decided in the core (issue 27 §2): for every branch of `saveBlock`, the exact write and Events of a
// Succeeded run's memory block, from the memory ConfigMap as the shell observed it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConfigMap } from '../../api/index.ts';
import type { Action } from '../actions.ts';
import { REASON } from '../reasons.ts';
import type { MemoryConfigMapObservation, Snapshot } from '../snapshot.ts';
import { at, complete, definition, job, NS, pod, queueOf, running, station } from '../test-fixtures.ts';
import { decide } from './decide.ts';
import { MAX_MEMORY_WRITES, type MemoryPlan, memoryAfterRun } from './memory.ts';

const ref = { namespace: NS, name: 'a', uid: 'uid-a' };
const BLOCK = '- login needs a retry';

/** Run `a`, Running, whose Job finished and started with memory `notes` read at `readVersion`. */
function snapshot(memorySave: Snapshot['memorySave'], readVersion: string | null = '41'): Snapshot {
  const j = job('a', { conditions: complete, succeeded: 1 });
  const annotations: Record<string, string> = {
    ...j.metadata.annotations,
    'agents.re-cinq.com/memory-configmap': 'notes',
    ...(readVersion !== null ? { 'agents.re-cinq.com/memory-version': readVersion } : {}),
  };
  const a = running('a');
  return {
    agent: a,
    station: station(),
    definition: definition('def', { memory: { configMap: 'notes' } }),
    job: {
      kind: 'present',
      job: { ...j, metadata: { ...j.metadata, annotations } },
      evidence: { kind: 'notGathered' },
    },
    queue: queueOf(a),
    options: {
      agentImage: 'agent-controller:test',
      maxOutputBytes: 4096,
      requeueMs: 15000,
      batch: { enabled: false, pollMs: 60000 },
      realtime: { enabled: false },
    },
    ...(memorySave !== undefined ? { memorySave } : {}),
  };
}

const cm = (rv: string, content: string, extra: Partial<ConfigMap> = {}): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'notes',
    namespace: NS,
    resourceVersion: rv,
    labels: { team: 'a', 'agents.re-cinq.com/memory': 'true' },
  },
  data: { 'MEMORY.md': content, other: 'kept' },
  binaryData: { b: 'AAE=' },
  ...extra,
});

/** The plan for BLOCK with the ConfigMap observed as `configMap` after `changed` writes met a change. */
const plan = (
  configMap: MemoryConfigMapObservation,
  changed = 0,
  readVersion: string | null = '41',
): MemoryPlan =>
  memoryAfterRun(snapshot({ configMap, changed }, readVersion), {
    phase: 'Succeeded',
    answer: `done\n<memory>\n${BLOCK}\n</memory>\n`,
    answerTruncated: false,
    output: '',
    vendor: 'claude',
  });

const event = (type: 'Normal' | 'Warning', reason: string, message: string): Action => ({
  kind: 'recordEvent',
  ref,
  type,
  reason,
  message,
});
const saved = event('Normal', REASON.memorySaved, `Memory saved to ConfigMap notes (${BLOCK.length} bytes)`);
const overwritten = (since: string) =>
  event(
    'Normal',
    REASON.memoryOverwritten,
    `This run's memory replaced a concurrent update of ConfigMap notes, written ${since}: the last writer wins`,
  );
const notSaved = (why: string): MemoryPlan => ({
  kind: 'plan',
  write: [],
  events: [event('Warning', REASON.memoryNotSaved, `Memory not saved to ConfigMap notes: ${why}`)],
});
const replaceAt = (current: ConfigMap): Action => ({
  kind: 'saveMemory',
  ref,
  namespace: NS,
  configMap: { ...current, data: { 'MEMORY.md': BLOCK, other: 'kept' } },
  replace: { resourceVersion: current.metadata.resourceVersion },
});
const create: Action = {
  kind: 'saveMemory',
  ref,
  namespace: NS,
  configMap: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'notes', namespace: NS, labels: { 'agents.re-cinq.com/memory': 'true' } },
    data: { 'MEMORY.md': BLOCK },
  },
};

describe('memory save decided in the core: every branch, exactly', () => {
  it('not observed yet → needs the ConfigMap, nothing else', () => {
    const p = memoryAfterRun(snapshot(undefined), {
      phase: 'Succeeded',
      answer: `<memory>${BLOCK}</memory>`,
      answerTruncated: false,
      output: '',
      vendor: 'claude',
    });
    assert.deepEqual(p, { kind: 'needs' });
  });

  it('absent → create it labelled as a memory, owned by nothing: MemorySaved', () => {
    assert.deepEqual(plan({ kind: 'absent' }, 0, ''), { kind: 'plan', write: [create], events: [saved] });
  });

  it('absent although the run read a version (deleted since) → create: MemorySaved and MemoryOverwritten', () => {
    assert.deepEqual(plan({ kind: 'absent' }), {
      kind: 'plan',
      write: [create],
      events: [saved, overwritten('after this run read it (resourceVersion 41)')],
    });
  });

  it('the version the run read → replace MEMORY.md at it, everything else kept: MemorySaved', () => {
    const current = cm('41', 'old');
    assert.deepEqual(plan({ kind: 'present', configMap: current }), {
      kind: 'plan',
      write: [replaceAt(current)],
      events: [saved],
    });
  });

  it('a version written after the run read it → replaced all the same, never silently: MemoryOverwritten', () => {
    const current = cm('57', 'a concurrent run wrote this');
    assert.deepEqual(plan({ kind: 'present', configMap: current }), {
      kind: 'plan',
      write: [replaceAt(current)],
      events: [saved, overwritten('after this run read it (resourceVersion 41)')],
    });
  });

  it('after a write met a change → written again at the version read again: MemoryOverwritten, however it started', () => {
    const current = cm('42', 'theirs');
    assert.deepEqual(plan({ kind: 'present', configMap: current }, 1, ''), {
      kind: 'plan',
      write: [replaceAt(current)],
      events: [saved, overwritten('after this run started (the ConfigMap did not exist then)')],
    });
    assert.deepEqual(plan({ kind: 'present', configMap: cm('41', 'theirs') }, 2, null), {
      kind: 'plan',
      write: [replaceAt(cm('41', 'theirs'))],
      events: [saved, overwritten('while this run saved its own')],
    });
  });

  it('MEMORY.md already the block at the version read → nothing written, nothing told', () => {
    assert.deepEqual(plan({ kind: 'present', configMap: cm('41', BLOCK) }), {
      kind: 'plan',
      write: [],
      events: [],
    });
    assert.deepEqual(plan({ kind: 'present', configMap: cm('41', BLOCK) }, 0, null), {
      kind: 'plan',
      write: [],
      events: [],
    });
  });

  it('MEMORY.md already the block, written after the run read it (by this run, its patch lost) → MemorySaved, no write', () => {
    assert.deepEqual(plan({ kind: 'present', configMap: cm('58', BLOCK) }), {
      kind: 'plan',
      write: [],
      events: [saved],
    });
  });

  it('a ConfigMap not labelled as a memory is never written', () => {
    const plain = cm('41', 'old');
    const unlabelled = { ...plain, metadata: { ...plain.metadata, labels: { team: 'a' } } };
    assert.deepEqual(
      plan({ kind: 'present', configMap: unlabelled }),
      notSaved(
        'it is not labelled agents.re-cinq.com/memory=true (only ConfigMaps marked as memories are written)',
      ),
    );
  });

  it('an immutable ConfigMap is never written', () => {
    assert.deepEqual(
      plan({ kind: 'present', configMap: cm('41', 'old', { immutable: true }) }),
      notSaved('the ConfigMap is immutable'),
    );
  });

  it(`after ${MAX_MEMORY_WRITES} writes that met a change → given up`, () => {
    assert.deepEqual(
      plan({ kind: 'present', configMap: cm('63', 'theirs') }, MAX_MEMORY_WRITES),
      notSaved(`it kept changing while being written (${MAX_MEMORY_WRITES} attempts)`),
    );
    const last = plan({ kind: 'present', configMap: cm('63', 'theirs') }, MAX_MEMORY_WRITES - 1);
    assert.deepEqual(last.kind === 'plan' ? last.write : [], [replaceAt(cm('63', 'theirs'))]);
  });

  it('a refused read or write names the grant; any other failure is told as answered', () => {
    assert.deepEqual(
      plan({ kind: 'failed', message: 'configmaps "notes" is forbidden', forbidden: true }),
      notSaved(
        'configmaps "notes" is forbidden; the controller needs configmaps get, create and update in this namespace (deploy/components/memory)',
      ),
    );
    assert.deepEqual(
      plan({ kind: 'failed', message: 'etcd down', forbidden: false }, 2),
      notSaved('etcd down'),
    );
  });
});

describe('memory save in the terminal transition (decide)', () => {
  const finished = (memorySave: Snapshot['memorySave']): Snapshot => {
    const s = snapshot(memorySave);
    if (s.job.kind !== 'present') throw new Error('no Job');
    const evidence = {
      kind: 'pod' as const,
      pod: pod('a', 0, JSON.stringify({ v: 1, result: `done\n<memory>\n${BLOCK}\n</memory>` })),
      log: { kind: 'read' as const, text: '' },
    };
    return { ...s, job: { ...s.job, evidence } };
  };

  it('the write first, then the terminal patch, the run’s Event, the memory’s Events', () => {
    const current = cm('41', 'old');
    const d = decide(finished({ configMap: { kind: 'present', configMap: current }, changed: 0 }), at(60));
    assert.deepEqual(
      d.actions.slice(0, 4).map((a) => (a.kind === 'recordEvent' ? `recordEvent ${a.reason}` : a.kind)),
      ['saveMemory', 'patchStatus', `recordEvent ${REASON.succeeded}`, `recordEvent ${REASON.memorySaved}`],
    );
    assert.deepEqual(d.actions[0], replaceAt(current));
  });

  it('given up: no write, the run Succeeded all the same, MemoryNotSaved after its Event', () => {
    const d = decide(
      finished({ configMap: { kind: 'failed', message: 'etcd down', forbidden: false }, changed: 0 }),
      at(60),
    );
    assert.deepEqual(
      d.actions.slice(0, 3).map((a) => (a.kind === 'recordEvent' ? `recordEvent ${a.reason}` : a.kind)),
      ['patchStatus', `recordEvent ${REASON.succeeded}`, `recordEvent ${REASON.memoryNotSaved}`],
    );
    assert.ok(!d.actions.some((a) => a.kind === 'saveMemory'));
  });
});
