import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SessionStore } from '../sessions/store.ts';
import { err, ok } from '../shared/result.ts';
import { sessionStatePort } from './session-store.ts';

describe('the session-state port over the session store', () => {
  const calls: string[] = [];
  const store: Pick<SessionStore, 'saveTurn' | 'loadTurn' | 'deleteSession'> = {
    saveTurn: async (ref, turn, _a, meta) => {
      calls.push(`save ${ref.namespace}/${ref.uid} ${turn} ${meta.sessionId}`);
      return turn > 5
        ? err({ kind: 'invalid', message: 'InternalError (HTTP 500)' })
        : ok({ turn, key: 'k', size: 0 });
    },
    loadTurn: async (ref) =>
      ref.uid === 'none'
        ? err({ kind: 'not-found', message: 'no turn' })
        : ref.uid === 'down'
          ? err({ kind: 'invalid', message: 'SlowDown (HTTP 503)' })
          : ok({ turn: 3, archive: new Uint8Array([1]), sessionId: 's', vendor: 'claude', key: 'k' }),
    deleteSession: async (ref) =>
      ref.uid === 'down' ? err({ kind: 'invalid', message: 'left 2 objects' }) : ok({ deleted: 4 }),
  };
  const port = sessionStatePort(store);

  it('saves by namespace and uid; a failure is its message', async () => {
    assert.deepEqual(
      await port.saveTurn('team', 'u1', 2, new Uint8Array(), { sessionId: 's', vendor: 'claude' }),
      ok(undefined),
    );
    assert.deepEqual(
      await port.saveTurn('team', 'u1', 6, new Uint8Array(), { sessionId: 's', vendor: 'claude' }),
      err('InternalError (HTTP 500)'),
    );
    assert.deepEqual(calls, ['save team/u1 2 s', 'save team/u1 6 s']);
  });

  it('loads the latest turn; none saved is undefined, a failure an error', async () => {
    assert.deepEqual(
      await port.loadLatest('team', 'u1'),
      ok({ turn: 3, archive: new Uint8Array([1]), sessionId: 's', vendor: 'claude' }),
    );
    assert.deepEqual(await port.loadLatest('team', 'none'), ok(undefined));
    assert.deepEqual(await port.loadLatest('team', 'down'), err('SlowDown (HTTP 503)'));
  });

  it('deletes a session; a failure names what was left', async () => {
    assert.deepEqual(await port.deleteSession('team', 'u1'), ok(undefined));
    assert.deepEqual(await port.deleteSession('team', 'down'), err('left 2 objects'));
  });
});
