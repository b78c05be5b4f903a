import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../shared/log.ts';
import { DUPLICATE_SIGNAL_MS, installShutdown } from './shutdown.ts';

function setup() {
  let now = 10_000;
  const lines: string[] = [];
  const forced: string[] = [];
  // A signal this process never gets from outside, delivered to the handlers as Node delivers a real one.
  const handle = installShutdown({
    logger: createLogger('info', (line) => lines.push(line)),
    onForce: (sig) => forced.push(sig),
    signals: ['SIGUSR2'],
    now: () => now,
  });
  const send = (): void => {
    process.emit('SIGUSR2', 'SIGUSR2');
  };
  return { handle, lines, forced, send, advance: (ms: number) => (now += ms) };
}

describe('installShutdown', () => {
  it('the first signal aborts; the same signal again within a second is a duplicate; a later one forces', () => {
    const t = setup();
    try {
      assert.equal(t.handle.signal.aborted, false);
      t.send();
      assert.equal(t.handle.signal.aborted, true);
      t.advance(DUPLICATE_SIGNAL_MS - 1);
      t.send();
      assert.deepEqual(t.forced, [], 'a Ctrl-C delivered twice does not force');
      t.advance(1);
      t.send();
      assert.deepEqual(t.forced, ['SIGUSR2']);
      const msgs = t.lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
      assert.deepEqual(msgs, ['Shutting down', 'Already shutting down', 'Forced shutdown']);
    } finally {
      t.handle.dispose();
    }
  });
});
