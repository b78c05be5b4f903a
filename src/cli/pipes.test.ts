import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { exitQuietlyOnClosedPipe, isBrokenPipe } from './pipes.ts';

const epipe = () => Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });

describe('output into a closed pipe', () => {
  it('EPIPE exits 0 without a word; another write error is one line and exit 1', () => {
    const stream = new EventEmitter();
    const exits: number[] = [];
    const err: string[] = [];
    exitQuietlyOnClosedPipe(
      stream,
      (c) => exits.push(c),
      (t) => err.push(t),
    );
    exitQuietlyOnClosedPipe(
      stream,
      (c) => exits.push(c),
      (t) => err.push(t),
    );
    assert.equal(stream.listenerCount('error'), 1, 'installed once');
    stream.emit('error', epipe());
    assert.deepEqual([exits, err], [[0], []]);
    stream.emit('error', Object.assign(new Error('write EIO'), { code: 'EIO' }));
    assert.deepEqual([exits, err], [[0, 1], ['error: cannot write the output: write EIO\n']]);
    assert.equal(isBrokenPipe(epipe()), true);
    assert.equal(isBrokenPipe(new Error('x')), false);
  });

  it('the bundle: `completion bash | true` exits 0 without a stack trace', { timeout: 60_000 }, async () => {
    const main = fileURLToPath(new URL('../main.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', main, 'completion', 'bash'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The reader goes away before the command writes a byte (as `| true` does).
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (t: string) => {
      stderr += t;
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    assert.equal(stderr, '');
    assert.equal(code, 0);
  });
});
