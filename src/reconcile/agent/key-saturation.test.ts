import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Agent } from '../../api/index.ts';
import type { Action, Decision } from '../actions.ts';
import { REASON } from '../reasons.ts';
import type { Snapshot } from '../snapshot.ts';
import { agent, at, definition, queueOf, recordingBuilder, station } from '../test-fixtures.ts';
import { decide } from './decide.ts';
import { saturatedKey } from './key-saturation.ts';

const GATEWAY = { url: 'http://agent-gateway.agents.svc:8080' };
const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 15000,
  batch: { enabled: true, pollMs: 60000 },
  realtime: { enabled: true },
  controllerNamespace: 'agents',
};
const NOW = at(60);
const keyed = definition('def', {
  model: 'claude-opus-5-5',
  resources: { secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic-key' }] },
});
/** The fixtures' namespace is `team`. */
const ENTRY = 'team.anthropic.anthropic-key';

function snap(
  a: Agent,
  saturation: ReadonlyMap<string, number> | undefined,
  over: Partial<Snapshot> = {},
): Snapshot {
  return {
    agent: a,
    station: station(),
    definition: keyed,
    job: { kind: 'absent' },
    queue: queueOf(a, [a]),
    options: { ...OPTIONS, gateway: GATEWAY },
    ...(saturation !== undefined ? { keySaturation: saturation } : {}),
    ...over,
  };
}
const patches = (d: Decision) =>
  d.actions.filter((x): x is Extract<Action, { kind: 'patchStatus' }> => x.kind === 'patchStatus');
const events = (d: Decision) =>
  d.actions.filter((x): x is Extract<Action, { kind: 'recordEvent' }> => x.kind === 'recordEvent');
const starts = (d: Decision) => d.actions.some((x) => x.kind === 'createJob');
const later = (s: number) => NOW.getTime() + s * 1000;

describe('admission holds runs whose vendor key is saturated at the gateway (issue 28 §5)', () => {
  it('a saturated key: Ready=False/KeySaturated naming the vendor and until when, no Job, requeued at that time', () => {
    const d = decide(
      snap(agent('a', { created: 5 }), new Map([[ENTRY, later(42)]])),
      NOW,
      recordingBuilder(),
    );
    assert.equal(starts(d), false);
    assert.equal(
      d.actions.some((x) => x.kind === 'createGatewayCredential'),
      false,
    );
    const [p] = patches(d);
    assert.equal(p?.status.phase, 'Pending');
    const ready = p?.status.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'KeySaturated');
    assert.equal(
      ready?.message,
      'Waiting for the anthropic key anthropic-key of agent-secrets: saturated at the model gateway until 2025-03-01T12:01:42Z',
    );
    assert.deepEqual(
      events(d).map((e) => [e.type, e.reason]),
      [['Normal', REASON.keySaturated]],
    );
    assert.equal(d.requeueAfterMs, 42_000);
  });

  it('told once: the same wait is not patched again, only requeued', () => {
    const first = decide(
      snap(agent('a', { created: 5 }), new Map([[ENTRY, later(42)]])),
      NOW,
      recordingBuilder(),
    );
    const conditions = patches(first)[0]?.status.conditions ?? [];
    const told = agent('a', {
      created: 5,
      status: {
        phase: 'Pending',
        conditions: conditions.map((c) => ({ ...c, lastTransitionTime: '2025-03-01T12:01:00Z' })),
      },
    });
    const again = decide(snap(told, new Map([[ENTRY, later(42)]])), NOW, recordingBuilder());
    assert.deepEqual(again.actions, []);
    assert.equal(again.requeueAfterMs, 42_000);
  });

  it('starts once the time has passed, and when another key, vendor or namespace is the saturated one', () => {
    for (const saturation of [
      new Map([[ENTRY, later(0)]]),
      new Map([[ENTRY, later(-5)]]),
      new Map([['team.anthropic.other-key', later(42)]]),
      new Map([['team.openai.anthropic-key', later(42)]]),
      new Map([['other.anthropic.anthropic-key', later(42)]]),
      new Map<string, number>(),
    ]) {
      const d = decide(snap(agent('a', { created: 5 }), saturation), NOW, recordingBuilder());
      assert.equal(starts(d), true, JSON.stringify([...saturation]));
    }
  });

  it('not known (no gateway, or the shell has no reading): never held', () => {
    assert.equal(starts(decide(snap(agent('a', { created: 5 }), undefined), NOW, recordingBuilder())), true);
    const noGateway = snap(agent('a', { created: 5 }), new Map([[ENTRY, later(42)]]), { options: OPTIONS });
    assert.equal(starts(decide(noGateway, NOW, recordingBuilder())), true);
  });

  it('FIFO kept: behind a held head, the next run of a full Station waits its turn (Queued), it does not jump ahead', () => {
    const head = agent('a', { created: 5 });
    const next = agent('b', { created: 6 });
    const full = station('stn', { maxConcurrentRuns: 1 });
    const saturation = new Map([[ENTRY, later(42)]]);
    const held = decide(
      snap(head, saturation, { station: full, queue: queueOf(head, [head, next]) }),
      NOW,
      recordingBuilder(),
    );
    assert.equal(
      patches(held)[0]?.status.conditions?.find((c) => c.type === 'Ready')?.reason,
      'KeySaturated',
    );
    // The key frees for the next one (another key of its own would), yet it is behind the head: it waits.
    const d = decide(
      snap(next, new Map(), { station: full, queue: queueOf(next, [head, next]) }),
      NOW,
      recordingBuilder(),
    );
    assert.equal(starts(d), false);
    assert.equal(patches(d)[0]?.status.conditions?.find((c) => c.type === 'Ready')?.reason, REASON.queued);
  });

  it('a run that already holds its slot is not held back', () => {
    const a = agent('a', { created: 5 });
    const s = snap(a, new Map([[ENTRY, later(42)]]), { queue: { ...queueOf(a, [a]), holdsSlot: true } });
    assert.equal(starts(decide(s, NOW, recordingBuilder())), true);
  });

  it('saturatedKey: the key held longest among the grant’s', () => {
    const saturation = new Map([
      ['team.anthropic.a', later(10)],
      ['team.openai.o', later(30)],
      ['team.gemini.g', later(-1)],
    ]);
    assert.deepEqual(
      saturatedKey({ anthropic: 'a', openai: 'o', gemini: 'g' }, 'team', saturation, NOW.getTime()),
      {
        vendor: 'openai',
        key: 'o',
        until: later(30),
      },
    );
    assert.equal(saturatedKey({ gemini: 'g' }, 'team', saturation, NOW.getTime()), undefined);
  });
});
