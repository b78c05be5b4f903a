// Property tests of the supervisor's `LineSplitter` (issue 13 §2): any chunking of any byte stream gives the same
// lines as the whole stream at once, which are the stream's `\n`-separated lines (trailing `\r` removed, blank lines
// kept); a line over the limit is dropped whole and counted; no more than the limit is ever buffered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { chunkBytes, concatBytes } from '../../shared/bytes.ts';
import { LineSplitter } from './line-splitter.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The documented result on the whole stream: complete lines, then the unterminated tail (if not empty). */
function expected(bytes: Uint8Array, max: number): { lines: string[]; oversized: number } {
  const segments: Uint8Array[] = [];
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x0a) {
      segments.push(bytes.subarray(start, i));
      start = i + 1;
    }
  }
  const tail = bytes.subarray(start);
  if (tail.length > 0) segments.push(tail);
  const text = (s: Uint8Array) => {
    const t = dec.decode(s);
    return t.endsWith('\r') ? t.slice(0, -1) : t;
  };
  return {
    lines: segments.filter((s) => s.length <= max).map(text),
    oversized: segments.filter((s) => s.length > max).length,
  };
}

function split(chunks: readonly Uint8Array[], max: number): { lines: string[]; oversized: number } {
  const s = new LineSplitter(max);
  const lines: string[] = [];
  let oversized = 0;
  for (const c of chunks) {
    const r = s.push(c);
    lines.push(...r.lines);
    oversized += r.oversized;
    // Bounded memory: an unfinished line is never buffered past the limit.
    assert.ok((s as unknown as { size: number }).size <= max, 'buffered past the limit');
  }
  const e = s.end();
  lines.push(...e.lines);
  oversized += e.oversized;
  assert.deepEqual(s.end(), { lines: [], oversized: 0 }, 'end() resets');
  return { lines, oversized };
}

const piece: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }).map((s) => enc.encode(s)) },
  { weight: 3, arbitrary: fc.constantFrom('\n', '\r\n', '\n\n', '\r', ' ').map((s) => enc.encode(s)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Uint8Array.of(0xff),
      Uint8Array.of(0xe2, 0x82),
      Uint8Array.of(0xf0, 0x9f),
      enc.encode('é中😀'),
    ),
  },
);
const stream = fc.array(piece, { maxLength: 40 }).map((parts) => concatBytes(parts));
const cuts = fc.array(fc.nat(), { maxLength: 12 });
const max = fc.constantFrom(1, 3, 8, 32, 1024);

describe('LineSplitter (properties)', () => {
  it('any chunking gives the documented lines and oversized count, with bounded buffering', () => {
    fc.assert(
      fc.property(stream, cuts, max, (bytes, at, m) => {
        assert.deepEqual(split(chunkBytes(bytes, at), m), expected(bytes, m));
      }),
      { numRuns: 1500 },
    );
  });

  it('byte-at-a-time delivery equals one-chunk delivery', () => {
    fc.assert(
      fc.property(stream, max, (bytes, m) => {
        assert.deepEqual(
          split(
            Array.from(bytes, (_, i) => bytes.subarray(i, i + 1)),
            m,
          ),
          split([bytes], m),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('text lines joined with \\n (or \\r\\n) come back as they were', () => {
    const line = fc.string({ unit: 'binary', maxLength: 20 }).map((s) => s.replace(/[\r\n]/g, ''));
    fc.assert(
      fc.property(
        fc.array(line, { minLength: 1, maxLength: 10 }),
        fc.constantFrom('\n', '\r\n'),
        cuts,
        (lines, eol, at) => {
          const bytes = enc.encode(lines.map((l) => l + eol).join(''));
          assert.deepEqual(split(chunkBytes(bytes, at), 1 << 20), { lines, oversized: 0 });
        },
      ),
      { numRuns: 300 },
    );
  });
});
