// The zlib stream (RFC 1950/1951) that carries SPDY header blocks. One stream per direction spans the whole
// session, starts from a preset dictionary, and is flushed (sync flush) after every header block, so each frame's
// compressed bytes end on a block boundary. Written here, synchronously and without node:zlib, because a preset
// dictionary on a shared streaming context is not something every runtime we ship on (Node, Deno) offers alike.
//
// Sending side: stored (uncompressed) blocks. That is valid deflate every reader accepts; header blocks are a few
// hundred bytes, so compression would save nothing worth the code. Each header block ends with the sync-flush marker
// (an empty stored block), as zlib's Z_SYNC_FLUSH and Go's Flush write it: Go's inflater (the kubelet's and the
// container runtime's SPDY reader) hands a stored block's bytes over only when the next block begins, so without
// the marker it reads past the frame, and the session dies at the next header block (seen on the real node; see
// docs/design/kubernetes.md#port-forward). The reading side requires the marker for the same reason.

/** Adler-32 (RFC 1950), the checksum that names a preset dictionary. */
export function adler32(bytes: Uint8Array): number {
  let a = 1;
  let b = 0;
  for (let i = 0; i < bytes.length; i++) {
    a = (a + (bytes[i] ?? 0)) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

const WINDOW = 32 * 1024;
/** Largest header block accepted (a decompression bomb is refused long before it costs memory). */
export const MAX_INFLATED = 256 * 1024;

function guard(out: readonly number[]): void {
  if (out.length > MAX_INFLATED) throw new Error(`header block inflates past ${MAX_INFLATED} bytes`);
}
const MAX_STORED = 0xffff;

/** Produces one zlib stream as stored blocks, a chunk per `deflate` call, each ending on a block boundary. */
export class StoredDeflater {
  readonly #dictionaryId: number;
  #started = false;

  constructor(dictionary: Uint8Array) {
    this.#dictionaryId = adler32(dictionary);
  }

  deflate(data: Uint8Array): Uint8Array {
    const blocks = Math.ceil(data.length / MAX_STORED);
    const header = this.#started ? 0 : 6;
    // The data's stored blocks, then the empty one that is the sync flush.
    const out = new Uint8Array(header + (blocks + 1) * 5 + data.length);
    let at = 0;
    if (!this.#started) {
      // CMF: deflate with a 32 KiB window; FLG: preset dictionary, check bits making CMF·256+FLG a multiple of 31.
      out[0] = 0x78;
      out[1] = 0x20;
      new DataView(out.buffer).setUint32(2, this.#dictionaryId);
      at = 6;
      this.#started = true;
    }
    for (let i = 0; i <= blocks; i++) {
      const part = data.subarray(i * MAX_STORED, Math.min(data.length, (i + 1) * MAX_STORED));
      out[at] = 0; // BFINAL 0, BTYPE 00 (stored), padding to the byte boundary
      out[at + 1] = part.length & 0xff;
      out[at + 2] = part.length >>> 8;
      out[at + 3] = ~part.length & 0xff;
      out[at + 4] = (~part.length >>> 8) & 0xff;
      out.set(part, at + 5);
      at += 5 + part.length;
    }
    return out;
  }
}

/** A canonical Huffman code as counts per length and symbols in code order. */
interface Huffman {
  readonly counts: Uint16Array;
  readonly symbols: Uint16Array;
}

function huffman(lengths: ArrayLike<number>): Huffman {
  const counts = new Uint16Array(16);
  for (let i = 0; i < lengths.length; i++) counts[lengths[i] ?? 0] = (counts[lengths[i] ?? 0] ?? 0) + 1;
  const offsets = new Uint16Array(16);
  for (let len = 1; len < 15; len++) offsets[len + 1] = (offsets[len] ?? 0) + (counts[len] ?? 0);
  const symbols = new Uint16Array(lengths.length);
  for (let s = 0; s < lengths.length; s++) {
    const len = lengths[s] ?? 0;
    if (len !== 0) {
      symbols[offsets[len] ?? 0] = s;
      offsets[len] = (offsets[len] ?? 0) + 1;
    }
  }
  counts[0] = 0;
  return { counts, symbols };
}

const LENGTH_BASE = [
  3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195,
  227, 258,
];
const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DISTANCE_BASE = [
  1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
  6145, 8193, 12289, 16385, 24577,
];
const DISTANCE_EXTRA = [
  0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13,
];
const CODE_LENGTH_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

const FIXED_LITERALS = huffman(
  Array.from({ length: 288 }, (_, s) => (s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8)),
);
const FIXED_DISTANCES = huffman(Array.from({ length: 30 }, () => 5));

class Truncated extends Error {}

/** Reads bits least-significant first, as deflate packs them. */
class Bits {
  #bit = 0;
  #pos = 0;
  constructor(readonly input: Uint8Array) {}

  get atEnd(): boolean {
    return this.#pos >= this.input.length;
  }

  bits(n: number): number {
    let value = 0;
    for (let i = 0; i < n; i++) {
      if (this.#pos >= this.input.length) throw new Truncated();
      value |= (((this.input[this.#pos] ?? 0) >>> this.#bit) & 1) << i;
      if (++this.#bit === 8) {
        this.#bit = 0;
        this.#pos++;
      }
    }
    return value;
  }

  align(): void {
    if (this.#bit !== 0) {
      this.#bit = 0;
      this.#pos++;
    }
  }

  bytes(n: number): Uint8Array {
    if (this.#pos + n > this.input.length) throw new Truncated();
    const out = this.input.subarray(this.#pos, this.#pos + n);
    this.#pos += n;
    return out;
  }

  decode(h: Huffman): number {
    let code = 0;
    let first = 0;
    let index = 0;
    for (let len = 1; len < 16; len++) {
      code |= this.bits(1);
      const count = h.counts[len] ?? 0;
      if (code - first < count) return h.symbols[index + code - first] ?? 0;
      index += count;
      first = (first + count) << 1;
      code <<= 1;
    }
    throw new Error('invalid Huffman code');
  }
}

/** Reads one zlib stream chunk by chunk; each chunk must end with a sync flush (an empty stored block). */
export class Inflater {
  readonly #dictionary: Uint8Array;
  #history: Uint8Array;
  #started = false;
  #ended = false;

  constructor(dictionary: Uint8Array) {
    this.#dictionary = dictionary;
    this.#history = dictionary.slice(-WINDOW);
  }

  /**
   * Decompresses one flushed chunk; throws on corrupt input, a chunk that stops inside a block, and one that does
   * not end with the sync-flush marker (Go's reader, the real kubelet's, could not decode the block after it).
   */
  inflate(chunk: Uint8Array): Uint8Array {
    const input = new Bits(chunk);
    const out: number[] = [];
    let flushed = false;
    try {
      if (!this.#started) {
        const [cmf, flg] = input.bytes(2);
        if (((cmf ?? 0) & 0x0f) !== 8 || (((cmf ?? 0) << 8) | (flg ?? 0)) % 31 !== 0) {
          throw new Error('not a zlib stream');
        }
        if (((flg ?? 0) & 0x20) !== 0) {
          const [d0, d1, d2, d3] = input.bytes(4);
          const id = (((d0 ?? 0) << 24) | ((d1 ?? 0) << 16) | ((d2 ?? 0) << 8) | (d3 ?? 0)) >>> 0;
          if (id !== adler32(this.#dictionary))
            throw new Error('zlib stream names another preset dictionary');
        }
        this.#started = true;
      }
      while (!input.atEnd) {
        if (this.#ended) throw new Error('data after the end of the zlib stream');
        const final = input.bits(1) === 1;
        const type = input.bits(2);
        if (type === 0) {
          input.align();
          const [l0, l1, n0, n1] = input.bytes(4);
          const len = (l0 ?? 0) | ((l1 ?? 0) << 8);
          if ((len ^ ((n0 ?? 0) | ((n1 ?? 0) << 8))) !== 0xffff)
            throw new Error('stored block length check failed');
          for (const b of input.bytes(len)) out.push(b);
          guard(out);
          flushed = len === 0 && !final;
        } else if (type === 1) {
          this.#codes(input, out, FIXED_LITERALS, FIXED_DISTANCES);
          flushed = false;
        } else if (type === 2) {
          const [literals, distances] = dynamicTables(input);
          this.#codes(input, out, literals, distances);
          flushed = false;
        } else {
          throw new Error('invalid deflate block type');
        }
        if (final) this.#ended = true;
      }
      if (!flushed && !this.#ended)
        throw new Error('header block does not end with a sync flush (an empty stored block)');
    } catch (error) {
      if (error instanceof Truncated) throw new Error('header block does not end on a flush boundary');
      throw error;
    }
    const produced = Uint8Array.from(out);
    const joined = new Uint8Array(this.#history.length + produced.length);
    joined.set(this.#history);
    joined.set(produced, this.#history.length);
    this.#history = joined.slice(-WINDOW);
    return produced;
  }

  #codes(input: Bits, out: number[], literals: Huffman, distances: Huffman): void {
    const history = this.#history;
    for (;;) {
      const symbol = input.decode(literals);
      if (symbol < 256) {
        out.push(symbol);
        continue;
      }
      if (symbol === 256) return;
      const li = symbol - 257;
      if (li >= 29) throw new Error('invalid length code');
      const length = (LENGTH_BASE[li] ?? 0) + input.bits(LENGTH_EXTRA[li] ?? 0);
      const di = input.decode(distances);
      if (di >= 30) throw new Error('invalid distance code');
      const distance = (DISTANCE_BASE[di] ?? 0) + input.bits(DISTANCE_EXTRA[di] ?? 0);
      if (distance > history.length + out.length) throw new Error('distance reaches before the window');
      guard(out);
      for (let i = 0; i < length; i++) {
        const from = out.length - distance;
        out.push(from >= 0 ? (out[from] ?? 0) : (history[history.length + from] ?? 0));
      }
    }
  }
}

function dynamicTables(input: Bits): [Huffman, Huffman] {
  const nlen = input.bits(5) + 257;
  const ndist = input.bits(5) + 1;
  const ncode = input.bits(4) + 4;
  if (nlen > 286 || ndist > 30) throw new Error('bad dynamic block counts');
  const codeLengths = new Uint8Array(19);
  for (let i = 0; i < ncode; i++) codeLengths[CODE_LENGTH_ORDER[i] ?? 0] = input.bits(3);
  const lengthCode = huffman(codeLengths);
  const lengths = new Uint8Array(nlen + ndist);
  for (let i = 0; i < nlen + ndist; ) {
    const symbol = input.decode(lengthCode);
    if (symbol < 16) {
      lengths[i++] = symbol;
      continue;
    }
    let repeat: number;
    let value = 0;
    if (symbol === 16) {
      if (i === 0) throw new Error('length repeat with no previous length');
      value = lengths[i - 1] ?? 0;
      repeat = 3 + input.bits(2);
    } else if (symbol === 17) repeat = 3 + input.bits(3);
    else repeat = 11 + input.bits(7);
    if (i + repeat > nlen + ndist) throw new Error('too many code lengths');
    for (let r = 0; r < repeat; r++) lengths[i++] = value;
  }
  if ((lengths[256] ?? 0) === 0) throw new Error('no end-of-block code');
  return [huffman(lengths.subarray(0, nlen)), huffman(lengths.subarray(nlen))];
}
