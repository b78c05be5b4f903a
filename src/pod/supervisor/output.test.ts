import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { BareOutput, waitForFlush } from './output.ts';

/** A writable stand-in: accepts `capacity` writes before reporting backpressure. */
class FakeStream extends EventEmitter {
  readonly written: string[] = [];
  writableLength = 0;
  constructor(private capacity: number) {
    super();
  }
  write(chunk: string): boolean {
    this.written.push(chunk);
    this.writableLength += chunk.length;
    return this.written.length < this.capacity;
  }
  drain(): void {
    this.writableLength = 0;
    this.capacity = Number.POSITIVE_INFINITY;
    this.emit('drain');
  }
}

describe('BareOutput', () => {
  it('writes lines with a newline and reports congestion until drain', async () => {
    const stream = new FakeStream(2);
    const out = new BareOutput(stream, () => undefined);
    out.line('a');
    assert.equal(out.congested, false);
    out.line('b');
    assert.equal(out.congested, true);
    let released = false;
    const waiting = out.drained().then(() => {
      released = true;
    });
    await Promise.resolve();
    assert.equal(released, false);
    stream.drain();
    await waiting;
    assert.equal(out.congested, false);
    assert.deepEqual(stream.written, ['a\n', 'b\n']);
  });

  it('a stream error (EPIPE) is reported once and later writes are dropped without throwing', () => {
    const stream = new FakeStream(10);
    const errors: unknown[] = [];
    const out = new BareOutput(stream, (e) => errors.push(e));
    stream.emit('error', new Error('EPIPE'));
    stream.emit('error', new Error('EPIPE again'));
    out.line('lost');
    out.write('lost too');
    assert.equal(errors.length, 1);
    assert.deepEqual(stream.written, []);
    assert.equal(out.congested, false);
  });

  it('a throwing write marks the stream broken instead of crashing', () => {
    const out = new BareOutput(
      {
        write: () => {
          throw new Error('closed');
        },
        once: () => undefined,
        on: () => undefined,
      },
      () => undefined,
    );
    out.line('x');
    out.line('y');
    assert.equal(out.congested, false);
  });
});

describe('waitForFlush', () => {
  it('returns once buffers are empty, or at the timeout', async () => {
    const stream = new FakeStream(10);
    stream.writableLength = 5;
    setTimeout(() => stream.drain(), 30);
    await waitForFlush([stream], 5_000);
    assert.equal(stream.writableLength, 0);
    stream.writableLength = 5;
    const started = Date.now();
    await waitForFlush([stream], 50);
    assert.ok(Date.now() - started < 1_000);
  });
});
