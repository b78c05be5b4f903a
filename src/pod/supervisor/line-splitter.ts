/** The longest agent output line the supervisor accepts (16 MiB, reference lesson #158). */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** What the splitter produced from one chunk: complete lines and how many over-long lines were discarded. */
export interface SplitResult {
  readonly lines: string[];
  readonly oversized: number;
}

/**
 * Splits a byte stream into UTF-8 lines on `\n` (a trailing `\r` is removed). A line longer than `maxBytes` is
 * discarded whole (counted in `oversized`) without buffering more than `maxBytes` of it, so memory stays bounded.
 * Multi-byte characters split across chunks are decoded correctly. No I/O.
 */
export class LineSplitter {
  private parts: Uint8Array[] = [];
  private size = 0;
  private skipping = false;

  constructor(private readonly maxBytes: number = MAX_LINE_BYTES) {}

  /** Feeds one chunk; returns the lines it completed. */
  push(chunk: Uint8Array): SplitResult {
    const lines: string[] = [];
    let oversized = 0;
    let start = 0;
    while (start <= chunk.length) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (!this.skipping) {
        if (this.size + piece.length > this.maxBytes) {
          this.skipping = true;
          this.parts = [];
          this.size = 0;
        } else if (piece.length > 0) {
          this.parts.push(piece.slice());
          this.size += piece.length;
        }
      }
      if (nl === -1) break;
      if (this.skipping) oversized += 1;
      else lines.push(this.take());
      this.skipping = false;
      start = nl + 1;
    }
    return { lines, oversized };
  }

  /** Ends the stream: the unterminated last line, if any (an over-long one is counted instead). */
  end(): SplitResult {
    if (this.skipping) {
      this.skipping = false;
      return { lines: [], oversized: 1 };
    }
    if (this.size === 0) return { lines: [], oversized: 0 };
    return { lines: [this.take()], oversized: 0 };
  }

  private take(): string {
    const joined = this.parts.length === 1 ? (this.parts[0] as Uint8Array) : concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    let text = new TextDecoder().decode(joined);
    if (text.endsWith('\r')) text = text.slice(0, -1);
    return text;
  }
}

function concat(parts: readonly Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}
