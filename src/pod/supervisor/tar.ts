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

/** What `readTar` accepts at most. */
export interface TarLimits {
  /** Sum of the file members' sizes. */
  readonly maxContentBytes: number;
  /** Number of members (directories and files). */
  readonly maxEntries: number;
}

/** Why an archive was refused: one line naming the member (if any). */
export type TarError = { readonly kind: 'too-large' | 'invalid'; readonly message: string };

const decoder = new TextDecoder('utf-8', { fatal: true });

/** A NUL-terminated header field as text, or undefined when it is not UTF-8. */
function text(block: Uint8Array, offset: number, width: number): string | undefined {
  const raw = block.subarray(offset, offset + width);
  const end = raw.indexOf(0);
  try {
    return decoder.decode(end === -1 ? raw : raw.subarray(0, end));
  } catch {
    return undefined;
  }
}

/** An octal number field (spaces and NULs around it allowed), or undefined. Base-256 fields are not accepted. */
function octalField(block: Uint8Array, offset: number, width: number): number | undefined {
  const raw = text(block, offset, width);
  if (raw === undefined) return undefined;
  const digits = raw.replace(/[\s\0]+$/, '').replace(/^\s+/, '');
  if (digits === '') return 0;
  if (!/^[0-7]{1,12}$/.test(digits)) return undefined;
  return Number.parseInt(digits, 8);
}

/**
 * Checks a member name: relative, made of non-empty components, none of them `.` or `..`, no NUL or backslash.
 * Returns the name without its trailing slash, or undefined.
 */
export function safeMemberName(name: string): string | undefined {
  const bare = name.endsWith('/') ? name.slice(0, -1) : name;
  if (bare === '' || bare.startsWith('/') || /[\0\\]/.test(bare)) return undefined;
  for (const part of bare.split('/')) if (part === '' || part === '.' || part === '..') return undefined;
  return bare;
}

/** The records of a PAX extended header, or undefined when it is malformed. */
function paxRecords(data: Uint8Array): Map<string, string> | undefined {
  const records = new Map<string, string>();
  let offset = 0;
  while (offset < data.length) {
    let space = offset;
    while (space < data.length && data[space] !== 0x20) space++;
    const lengthText = new TextDecoder().decode(data.subarray(offset, space));
    if (!/^[1-9][0-9]{0,8}$/.test(lengthText)) return undefined;
    const length = Number(lengthText);
    const end = offset + length;
    if (end > data.length || data[end - 1] !== 0x0a) return undefined;
    let record: string;
    try {
      record = decoder.decode(data.subarray(space + 1, end - 1));
    } catch {
      return undefined;
    }
    const eq = record.indexOf('=');
    if (eq <= 0) return undefined;
    records.set(record.slice(0, eq), record.slice(eq + 1));
    offset = end;
  }
  return records;
}

/** PAX keys that change nothing `readTar` keeps (times, owners); any other key but `path` refuses the archive. */
const IGNORED_PAX_KEYS = new Set(['mtime', 'atime', 'ctime', 'uid', 'gid', 'uname', 'gname', 'comment']);

/**
 * Reads an uncompressed ustar archive (what `buildTar` writes, or GNU/BSD tar's ustar and PAX output) into its
 * members, refusing anything that could write outside the folder it is unpacked into or hold more than `limits`:
 * every header's checksum is verified; names (with the ustar prefix or a PAX `path`) must be relative with no `.` or
 * `..` component; only regular files (`0`, NUL) and directories (`5`) are members, a PAX header (`x`) may only give
 * a path (times and owners are ignored); links, devices, FIFOs, global PAX headers, GNU long names and anything else
 * refuse the whole archive, as do a member whose data is cut off, a name given twice, and content or member counts
 * past the limits. Modes keep their permission bits (0o777) only. Pure.
 */
export function readTar(
  archive: Uint8Array,
  limits: TarLimits,
): { ok: true; entries: TarEntry[] } | { ok: false; error: TarError } {
  const invalid = (message: string) => ({ ok: false as const, error: { kind: 'invalid' as const, message } });
  const entries: TarEntry[] = [];
  const seen = new Set<string>();
  let content = 0;
  let offset = 0;
  let paxPath: string | undefined;
  let pending = false;
  for (;;) {
    if (offset + BLOCK > archive.length) {
      if (pending) return invalid('the archive ends after a PAX header');
      // No end-of-archive blocks: accepted when nothing is cut off (GNU tar reads such archives too).
      if (offset === archive.length) break;
      return invalid('the archive ends inside a header');
    }
    const block = archive.subarray(offset, offset + BLOCK);
    if (block.every((b) => b === 0)) {
      if (pending) return invalid('the archive ends after a PAX header');
      break;
    }
    const stored = octalField(block, 148, 8);
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : (block[i] ?? 0);
    if (stored !== sum) return invalid(`a header at byte ${offset} has a bad checksum`);
    const size = octalField(block, 124, 12);
    if (size === undefined) return invalid(`a header at byte ${offset} has an unreadable size`);
    const typeflag = String.fromCharCode(block[156] ?? 0);
    const dataStart = offset + BLOCK;
    const dataEnd = dataStart + size;
    if (dataEnd > archive.length) return invalid(`a member at byte ${offset} is cut off`);
    const data = archive.subarray(dataStart, dataEnd);
    offset = dataStart + Math.ceil(size / BLOCK) * BLOCK;

    if (typeflag === 'x') {
      if (pending) return invalid('two PAX headers in a row');
      const records = paxRecords(data);
      if (records === undefined) return invalid(`a PAX header at byte ${dataStart - BLOCK} is malformed`);
      for (const key of records.keys())
        if (key !== 'path' && !IGNORED_PAX_KEYS.has(key))
          return invalid(`a PAX header sets ${JSON.stringify(key)}, which is not accepted`);
      paxPath = records.get('path');
      pending = true;
      continue;
    }
    const magic = text(block, 257, 6);
    const prefix = magic === 'ustar' ? text(block, 345, 155) : '';
    const short = text(block, 0, 100);
    if (prefix === undefined || short === undefined)
      return invalid(`a name at byte ${dataStart - BLOCK} is not UTF-8`);
    const raw = paxPath ?? (prefix === '' ? short : `${prefix}/${short}`);
    paxPath = undefined;
    pending = false;
    if (typeflag !== '0' && typeflag !== '\0' && typeflag !== '5')
      return invalid(
        `the member ${JSON.stringify(raw)} is of type ${JSON.stringify(typeflag)}: only files and directories are accepted`,
      );
    const name = safeMemberName(raw);
    if (name === undefined)
      return invalid(`the member name ${JSON.stringify(raw)} is not a safe relative path`);
    if (seen.has(name)) return invalid(`the member ${JSON.stringify(name)} is given twice`);
    seen.add(name);
    const mode = (octalField(block, 100, 8) ?? 0o644) & 0o777;
    const mtimeSec = octalField(block, 136, 12) ?? 0;
    if (typeflag === '5') {
      if (size !== 0) return invalid(`the directory ${JSON.stringify(name)} has data`);
      entries.push({ type: 'dir', name: `${name}/`, mode, mtimeSec });
    } else {
      if (raw.endsWith('/')) return invalid(`the file ${JSON.stringify(raw)} is named like a directory`);
      content += size;
      if (content > limits.maxContentBytes)
        return {
          ok: false,
          error: {
            kind: 'too-large',
            message: `the archive holds more than ${limits.maxContentBytes} bytes`,
          },
        };
      entries.push({ type: 'file', name, mode, mtimeSec, data: data.slice() });
    }
    if (entries.length > limits.maxEntries)
      return {
        ok: false,
        error: { kind: 'too-large', message: `the archive holds more than ${limits.maxEntries} members` },
      };
  }
  return { ok: true, entries };
}
