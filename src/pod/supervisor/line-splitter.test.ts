import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineSplitter } from './line-splitter.ts';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('LineSplitter', () => {
  it('splits on newlines across chunks and strips a trailing CR', () => {
    const s = new LineSplitter();
    assert.deepEqual(s.push(bytes('a\nb')), { lines: ['a'], oversized: 0 });
    assert.deepEqual(s.push(bytes('c\r\n\nd')), { lines: ['bc', ''], oversized: 0 });
    assert.deepEqual(s.end(), { lines: ['d'], oversized: 0 });
    assert.deepEqual(s.end(), { lines: [], oversized: 0 });
  });

  it('decodes a multi-byte character split across chunks', () => {
    const s = new LineSplitter();
    const all = bytes('h\u00e9\u4e2d\n');
    assert.deepEqual(s.push(all.subarray(0, 2)).lines, []);
    assert.deepEqual(s.push(all.subarray(2, 4)).lines, []);
    assert.deepEqual(s.push(all.subarray(4)).lines, ['h\u00e9\u4e2d']);
  });

  it('drops a line over the cap, counts it, and keeps the following lines', () => {
    const s = new LineSplitter(8);
    assert.deepEqual(s.push(bytes('12345678\n123456789\nok')), { lines: ['12345678'], oversized: 1 });
    assert.deepEqual(s.end(), { lines: ['ok'], oversized: 0 });
  });

  it('drops an over-long line that spans many chunks without buffering it', () => {
    const s = new LineSplitter(8);
    for (let i = 0; i < 100; i++) assert.deepEqual(s.push(bytes('xxxx')), { lines: [], oversized: 0 });
    assert.deepEqual(s.push(bytes('x\nnext\n')), { lines: ['next'], oversized: 1 });
  });

  it('counts an unterminated over-long last line at the end', () => {
    const s = new LineSplitter(4);
    s.push(bytes('abcdef'));
    assert.deepEqual(s.end(), { lines: [], oversized: 1 });
  });

  it('handles an empty chunk and a chunk that is only a newline', () => {
    const s = new LineSplitter();
    assert.deepEqual(s.push(new Uint8Array(0)), { lines: [], oversized: 0 });
    assert.deepEqual(s.push(bytes('\n')), { lines: [''], oversized: 0 });
  });
});
