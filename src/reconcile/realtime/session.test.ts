import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Agent } from '../../api/index.ts';
import { decide } from '../agent/decide.ts';
import type { Snapshot } from '../snapshot.ts';
import { agent, at, definition, queueOf, running, station } from '../test-fixtures.ts';

const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: false, pollMs: 60000 },
  realtime: { enabled: true },
};
const NOW = at(60);
const REALTIME = definition('def', { execution: 'realtime' });

/** The Agent with the session id the prompt API reported. */
const reported = (a: Agent, id: string): Agent => ({
  ...a,
  metadata: {
    ...a.metadata,
    annotations: { ...a.metadata.annotations, 'agents.re-cinq.com/session-id': id },
  },
});

function snap(a: Agent, over: Partial<Snapshot> = {}): Snapshot {
  return {
    agent: a,
    station: station(),
    definition: REALTIME,
    job: { kind: 'unknown' },
    queue: queueOf(a, [a]),
    options: OPTIONS,
    ...over,
  };
}

describe('decide: the session id the prompt API reported (issue 27 §2)', () => {
  it('records it in status.sessionId and announces it, before anything else', () => {
    const a = reported(running('a'), 'ses-1');
    assert.deepEqual(decide(snap(a), NOW), {
      actions: [
        {
          kind: 'patchStatus',
          ref: { namespace: 'team', name: 'a', uid: 'uid-a' },
          resourceVersion: 'rv-a',
          status: { sessionId: 'ses-1', observedGeneration: 1, conditions: [] },
        },
        {
          kind: 'recordEvent',
          ref: { namespace: 'team', name: 'a', uid: 'uid-a' },
          type: 'Normal',
          reason: 'SessionStarted',
          message: 'CLI session ses-1',
        },
      ],
      requeueAfterMs: OPTIONS.requeueMs,
    });
  });

  it('records a new id over an older one', () => {
    const a = reported(running('a', { status: { sessionId: 'ses-1' } }), 'ses-2');
    const d = decide(snap(a), NOW);
    assert.deepEqual(
      d.actions.map((x) => (x.kind === 'patchStatus' ? x.status.sessionId : x.kind)),
      ['ses-2', 'recordEvent'],
    );
  });

  it('does nothing more once the status has it: the run is decided as usual', () => {
    const a = reported(running('a', { status: { sessionId: 'ses-1' } }), 'ses-1');
    assert.deepEqual(decide(snap(a), NOW), { actions: [], needs: 'job' });
  });

  it('ignores it on a run that is not realtime, not Running, or an id that is not one', () => {
    assert.deepEqual(decide(snap(reported(running('a'), 'ses-1'), { definition: definition() }), NOW), {
      actions: [],
      needs: 'job',
    });
    assert.deepEqual(decide(snap(reported(running('a'), 'ses-1'), { definition: null }), NOW), {
      actions: [],
      needs: 'job',
    });
    assert.deepEqual(decide(snap(reported(running('a'), 'not an id; rm -rf')), NOW), {
      actions: [],
      needs: 'job',
    });
    const done = reported(agent('a', { status: { phase: 'Succeeded' } }), 'ses-1');
    assert.deepEqual(decide(snap(done), NOW), { actions: [] });
  });
});
