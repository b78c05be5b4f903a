import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { constants, createDeflate, inflateSync } from 'node:zlib';
import { HEADER_DICTIONARY } from './frames.ts';
import { adler32, Inflater, MAX_INFLATED, StoredDeflater } from './zlib.ts';

const enc = new TextEncoder();

/** Compresses `chunks` as one zlib stream with a preset dictionary, sync-flushed after each chunk (as SPDY does). */
async function zlibFlushed(chunks: Uint8Array[], level: number): Promise<Uint8Array[]> {
  const deflate = createDeflate({ dictionary: HEADER_DICTIONARY, level });
  const out: Uint8Array[] = [];
  for (const chunk of chunks) {
    const parts: Buffer[] = [];
    const onData = (b: Buffer) => parts.push(b);
    deflate.on('data', onData);
    deflate.write(chunk);
    await new Promise<void>((resolve) => deflate.flush(constants.Z_SYNC_FLUSH, () => resolve()));
    deflate.off('data', onData);
    out.push(Buffer.concat(parts));
  }
  deflate.close();
  return out;
}

describe('SPDY header compression', () => {
  it('uses the SPDY/3 dictionary (1,423 bytes, digest of the draft specification constant)', () => {
    assert.equal(HEADER_DICTIONARY.length, 1423);
    assert.equal(
      createHash('sha256').update(HEADER_DICTIONARY).digest('hex'),
      '51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02',
    );
  });

  it('computes Adler-32 as RFC 1950 defines it', () => {
    assert.equal(adler32(enc.encode('Wikipedia')), 0x11e60398);
    assert.equal(adler32(new Uint8Array(0)), 1);
  });

  for (const level of [0, 1, 6, 9]) {
    it(`inflates a zlib stream flushed per header block (level ${level}), back-references across blocks`, async () => {
      const blocks = [
        enc.encode('streamtype error port 8443 requestid 0 content-type accept-encoding'),
        enc.encode('streamtype data port 8443 requestid 0 content-type accept-encoding'),
        new Uint8Array(0),
        new Uint8Array(randomBytes(5000)),
        enc.encode('x'.repeat(70_000)),
        enc.encode('streamtype data port 8443 requestid 1 HTTP/1.1 200 OK'),
      ];
      const compressed = await zlibFlushed(blocks, level);
      const inflater = new Inflater(HEADER_DICTIONARY);
      for (const [i, chunk] of compressed.entries()) {
        assert.deepEqual(inflater.inflate(chunk), blocks[i], `block ${i}`);
      }
    });
  }

  it('writes stored blocks a real zlib reads back, one stream across calls', () => {
    const deflater = new StoredDeflater(HEADER_DICTIONARY);
    const parts = [
      enc.encode('first'),
      new Uint8Array(0),
      new Uint8Array(randomBytes(140_000)),
      enc.encode('last'),
    ];
    const stream = Buffer.concat(parts.map((p) => deflater.deflate(p)));
    const back = inflateSync(stream, { dictionary: HEADER_DICTIONARY, finishFlush: constants.Z_SYNC_FLUSH });
    assert.deepEqual(new Uint8Array(back), new Uint8Array(Buffer.concat(parts)));
    // And our own reader, block by block.
    const again = new StoredDeflater(HEADER_DICTIONARY);
    const inflater = new Inflater(HEADER_DICTIONARY);
    for (const p of parts) assert.deepEqual(inflater.inflate(again.deflate(p)), p);
  });

  it('ends every header block with the sync-flush marker (an empty stored block), as Go and zlib flush', () => {
    // Go's inflater, which the kubelet's SPDY reader uses, hands a stored block's bytes over only when the next
    // block begins: without the marker it reads past the frame and the session dies at the next header block.
    const deflater = new StoredDeflater(HEADER_DICTIONARY);
    for (const part of [enc.encode('streamtype error'), new Uint8Array(0), new Uint8Array(70_000)]) {
      const chunk = deflater.deflate(part);
      assert.deepEqual([...chunk.subarray(-5)], [0x00, 0x00, 0x00, 0xff, 0xff]);
    }
  });

  it('refuses a header block that does not end with a sync flush (Go could not read the next one)', () => {
    // One stored block and nothing after it: what this deflater wrote before the real node showed the problem.
    const data = enc.encode('streamtype error');
    const unflushed = Uint8Array.of(
      0x78,
      0x20,
      ...[24, 16, 8, 0].map((shift) => (adler32(HEADER_DICTIONARY) >>> shift) & 0xff),
      0x00,
      data.length,
      0x00,
      ~data.length & 0xff,
      0xff,
      ...data,
    );
    assert.throws(() => new Inflater(HEADER_DICTIONARY).inflate(unflushed), /does not end with a sync flush/);
    // The same block followed by the marker is read.
    const flushed = Uint8Array.of(...unflushed, 0x00, 0x00, 0x00, 0xff, 0xff);
    assert.deepEqual(new Inflater(HEADER_DICTIONARY).inflate(flushed), data);
  });

  it('refuses a header block that inflates past the cap (a decompression bomb)', async () => {
    const [bomb] = await zlibFlushed([new Uint8Array(MAX_INFLATED + 10_000)], 9);
    assert.ok(bomb && bomb.length < 2000, 'compresses to almost nothing');
    assert.throws(() => new Inflater(HEADER_DICTIONARY).inflate(bomb), /inflates past/);
  });

  it('refuses another dictionary, a non-zlib stream and a chunk cut inside a block', async () => {
    const other = new StoredDeflater(enc.encode('another dictionary'));
    assert.throws(
      () => new Inflater(HEADER_DICTIONARY).inflate(other.deflate(enc.encode('x'))),
      /another preset/,
    );
    assert.throws(() => new Inflater(HEADER_DICTIONARY).inflate(Uint8Array.of(1, 2, 3)), /not a zlib stream/);
    const [chunk] = await zlibFlushed([enc.encode('port 8443 '.repeat(40))], 6);
    assert.ok(chunk);
    assert.throws(
      () => new Inflater(HEADER_DICTIONARY).inflate(chunk.subarray(0, chunk.length - 6)),
      /flush boundary/,
    );
  });
});
