/** One archive member: a directory (name ends with `/`) or a regular file with its bytes. */
export type TarEntry =
  | { readonly type: 'dir'; readonly name: string; readonly mode: number; readonly mtimeSec: number }
  | {
      readonly type: 'file';
      readonly name: string;
      readonly mode: number;
      readonly mtimeSec: number;
      readonly data: Uint8Array;
    };

const BLOCK = 512;
const encoder = new TextEncoder();

function octal(value: number, width: number): string {
  // width includes the terminating NUL
  return `${Math.max(0, Math.floor(value))
    .toString(8)
    .padStart(width - 1, '0')}\0`;
}

function put(block: Uint8Array, offset: number, width: number, text: string | Uint8Array): void {
  const bytes = typeof text === 'string' ? encoder.encode(text) : text;
  block.set(bytes.subarray(0, width), offset);
}

/** Splits a name into ustar (prefix, name) fields, or undefined when it does not fit them. */
export function splitUstarName(name: string): { prefix: string; name: string } | undefined {
  const bytes = encoder.encode(name);
  if (bytes.length <= 100) return { prefix: '', name };
  // Try every slash, preferring the longest prefix that fits.
  for (let i = name.length - 1; i > 0; i--) {
    if (name[i] !== '/') continue;
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (rest === '' || encoder.encode(prefix).length > 155) continue;
    if (encoder.encode(rest).length <= 100) return { prefix, name: rest };
  }
  return undefined;
}

function header(
  name: string,
  prefix: string,
  typeflag: string,
  size: number,
  mode: number,
  mtimeSec: number,
): Uint8Array {
  const block = new Uint8Array(BLOCK);
  put(block, 0, 100, name);
  put(block, 100, 8, octal(mode & 0o7777, 8));
  put(block, 108, 8, octal(0, 8));
  put(block, 116, 8, octal(0, 8));
  put(block, 124, 12, octal(size, 12));
  put(block, 136, 12, octal(mtimeSec, 12));
  put(block, 148, 8, '        ');
  put(block, 156, 1, typeflag);
  put(block, 257, 6, 'ustar\0');
  put(block, 263, 2, '00');
  put(block, 345, 155, prefix);
  let sum = 0;
  for (const b of block) sum += b;
  put(block, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return block;
}

/** A PAX `path` record, `"<len> path=<value>\n"`, whose length prefix counts itself. */
export function paxPathRecord(value: string): Uint8Array {
  const body = encoder.encode(` path=${value}\n`);
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return encoder.encode(`${len} path=${value}\n`);
}

function padded(data: Uint8Array): Uint8Array[] {
  const rest = data.length % BLOCK;
  return rest === 0 ? [data] : [data, new Uint8Array(BLOCK - rest)];
}

/**
 * Builds an uncompressed POSIX ustar archive of `entries`, in the given order, ending with two zero blocks. Names
 * too long for the ustar fields get a PAX `path` header. Owner ids are 0 (extraction as a normal user keeps its
 * own). Pure.
 */
export function buildTar(entries: readonly TarEntry[]): Uint8Array {
  const chunks: Uint8Array[] = [];
  for (const entry of entries) {
    const name = entry.type === 'dir' && !entry.name.endsWith('/') ? `${entry.name}/` : entry.name;
    const typeflag = entry.type === 'dir' ? '5' : '0';
    const size = entry.type === 'file' ? entry.data.length : 0;
    let split = splitUstarName(name);
    if (!split) {
      const record = paxPathRecord(name);
      chunks.push(header('PaxHeader', '', 'x', record.length, 0o644, entry.mtimeSec), ...padded(record));
      split = { prefix: '', name: encoder.encode(name).length > 100 ? name.slice(-99) : name };
    }
    chunks.push(header(split.name, split.prefix, typeflag, size, entry.mode, entry.mtimeSec));
    if (entry.type === 'file' && entry.data.length > 0) chunks.push(...padded(entry.data));
  }
  chunks.push(new Uint8Array(BLOCK * 2));
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}
