import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildTar, paxPathRecord, readTar, splitUstarName, type TarEntry } from './tar.ts';

const decoder = new TextDecoder();
const field = (block: Uint8Array, offset: number, width: number) =>
  decoder.decode(block.subarray(offset, offset + width)).replace(/\0.*$/s, '');

/** A minimal reader: headers with verified checksums, PAX paths applied, file data. */
function inspectTar(archive: Uint8Array) {
  const out: Array<{ name: string; type: string; mode: number; data: Uint8Array }> = [];
  let offset = 0;
  let paxPath: string | undefined;
  while (offset + 512 <= archive.length) {
    const block = archive.subarray(offset, offset + 512);
    if (block.every((b) => b === 0)) break;
    const stored = Number.parseInt(field(block, 148, 8).trim(), 8);
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : (block[i] ?? 0);
    assert.equal(stored, sum, 'header checksum');
    assert.equal(field(block, 257, 6), 'ustar');
    const size = Number.parseInt(field(block, 124, 12), 8);
    const type = field(block, 156, 1);
    const prefix = field(block, 345, 155);
    const name = prefix ? `${prefix}/${field(block, 0, 100)}` : field(block, 0, 100);
    const data = archive.subarray(offset + 512, offset + 512 + size);
    offset += 512 + Math.ceil(size / 512) * 512;
    if (type === 'x') {
      const m = /\d+ path=(.*)\n/.exec(decoder.decode(data));
      paxPath = m?.[1];
      continue;
    }
    out.push({ name: paxPath ?? name, type, mode: Number.parseInt(field(block, 100, 8), 8), data });
    paxPath = undefined;
  }
  return { entries: out, end: offset };
}

describe('ustar builder', () => {
  it('writes directories and files with modes, sizes and checksums, then two zero blocks', () => {
    const data = new TextEncoder().encode('hello\n');
    const archive = buildTar([
      { type: 'dir', name: '.claude/projects', mode: 0o755, mtimeSec: 1_700_000_000 },
      { type: 'file', name: '.claude/projects/a.jsonl', mode: 0o644, mtimeSec: 1_700_000_000, data },
      { type: 'file', name: 'empty', mode: 0o600, mtimeSec: 0, data: new Uint8Array(0) },
    ]);
    assert.equal(archive.length % 512, 0);
    const { entries, end } = inspectTar(archive);
    assert.deepEqual(
      entries.map((e) => [e.name, e.type, e.mode.toString(8), decoder.decode(e.data)]),
      [
        ['.claude/projects/', '5', '755', ''],
        ['.claude/projects/a.jsonl', '0', '644', 'hello\n'],
        ['empty', '0', '600', ''],
      ],
    );
    assert.equal(archive.length - end, 1024, 'two zero blocks at the end');
  });

  it('uses the prefix field for names over 100 bytes and PAX beyond that', () => {
    const mid = `${'d'.repeat(80)}/${'e'.repeat(60)}/file.txt`;
    assert.deepEqual(splitUstarName(mid), {
      prefix: `${'d'.repeat(80)}/${'e'.repeat(60)}`,
      name: 'file.txt',
    });
    const long = `${'x'.repeat(120)}/${'y'.repeat(120)}/${'z'.repeat(110)}`;
    assert.equal(splitUstarName(long), undefined);
    const entries: TarEntry[] = [
      { type: 'file', name: mid, mode: 0o644, mtimeSec: 0, data: new Uint8Array([1]) },
      { type: 'file', name: long, mode: 0o644, mtimeSec: 0, data: new Uint8Array([2, 3]) },
    ];
    const read = inspectTar(buildTar(entries)).entries;
    assert.deepEqual(
      read.map((e) => [e.name, [...e.data]]),
      [
        [mid, [1]],
        [long, [2, 3]],
      ],
    );
  });

  it('PAX records count their own length', () => {
    for (const value of ['a', 'x'.repeat(5), 'y'.repeat(93), 'z'.repeat(994), 'w'.repeat(9990)]) {
      const record = decoder.decode(paxPathRecord(value));
      const declared = Number.parseInt(record, 10);
      assert.equal(new TextEncoder().encode(record).length, declared, `value of ${value.length}`);
    }
  });
});

/** A raw ustar header of any type (what an attacker can write), its checksum right unless `badSum`. */
function rawHeader(
  name: string,
  typeflag: string,
  size: number,
  options: { linkname?: string; prefix?: string; badSum?: boolean; sizeField?: string } = {},
): Uint8Array {
  const block = new Uint8Array(512);
  const put = (offset: number, text: string) => block.set(new TextEncoder().encode(text), offset);
  put(0, name);
  put(100, '0000644\0');
  put(108, '0000000\0');
  put(116, '0000000\0');
  put(124, options.sizeField ?? `${size.toString(8).padStart(11, '0')}\0`);
  put(136, '00000000000\0');
  put(148, '        ');
  put(156, typeflag);
  if (options.linkname !== undefined) put(157, options.linkname);
  put(257, 'ustar\0');
  put(263, '00');
  if (options.prefix !== undefined) put(345, options.prefix);
  let sum = 0;
  for (const b of block) sum += b;
  put(148, `${(options.badSum ? sum + 1 : sum).toString(8).padStart(6, '0')}\0 `);
  return block;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const blockOf = (data: string) => {
  const bytes = new TextEncoder().encode(data);
  const out = new Uint8Array(Math.ceil(bytes.length / 512) * 512);
  out.set(bytes);
  return out;
};
const END = new Uint8Array(1024);
const LIMITS = { maxContentBytes: 1024, maxEntries: 10 };

describe('ustar reader', () => {
  it('reads back what the builder writes: names (prefix and PAX), types, modes, times, data', () => {
    const long = `${'x'.repeat(120)}/${'y'.repeat(120)}/${'z'.repeat(110)}`;
    const written: TarEntry[] = [
      { type: 'dir', name: '.claude/projects/', mode: 0o755, mtimeSec: 1_700_000_000 },
      {
        type: 'file',
        name: '.claude/projects/a.jsonl',
        mode: 0o600,
        mtimeSec: 1_700_000_001,
        data: new TextEncoder().encode('{"a":1}\n'),
      },
      {
        type: 'file',
        name: `workspace/${'d'.repeat(80)}/f`,
        mode: 0o644,
        mtimeSec: 5,
        data: new Uint8Array(600),
      },
      { type: 'file', name: long, mode: 0o755, mtimeSec: 6, data: new Uint8Array([1, 2, 3]) },
      { type: 'file', name: 'workspace/empty', mode: 0o644, mtimeSec: 7, data: new Uint8Array(0) },
    ];
    const read = readTar(buildTar(written), { maxContentBytes: 10_000, maxEntries: 10 });
    assert.ok(read.ok, JSON.stringify(read));
    assert.deepEqual(
      read.entries.map((e) => [e.type, e.name, e.mode, e.mtimeSec, e.type === 'file' ? [...e.data] : null]),
      written.map((e) => [e.type, e.name, e.mode, e.mtimeSec, e.type === 'file' ? [...e.data] : null]),
    );
  });

  it('reads an archive without end blocks and keeps permission bits only', () => {
    const archive = concat(rawHeader('a', '0', 2), blockOf('hi'));
    const read = readTar(archive, LIMITS);
    assert.ok(read.ok);
    assert.deepEqual(
      read.entries.map((e) => [e.name, e.mode]),
      [['a', 0o644]],
    );
    const setuid = buildTar([
      { type: 'file', name: 'b', mode: 0o4755, mtimeSec: 0, data: new Uint8Array(0) },
    ]);
    const r2 = readTar(setuid, LIMITS);
    assert.ok(r2.ok);
    assert.equal(r2.entries[0]?.mode, 0o755);
  });

  const hostile: [string, Uint8Array, string][] = [
    ['an absolute name', concat(rawHeader('/etc/passwd', '0', 0), END), 'not a safe relative path'],
    ['a .. component', concat(rawHeader('workspace/../../x', '0', 0), END), 'not a safe relative path'],
    ['a .. in the prefix', concat(rawHeader('x', '0', 0, { prefix: '..' }), END), 'not a safe relative path'],
    ['a lone ..', concat(rawHeader('..', '5', 0), END), 'not a safe relative path'],
    ['a . component', concat(rawHeader('./a', '0', 0), END), 'not a safe relative path'],
    ['an empty component', concat(rawHeader('a//b', '0', 0), END), 'not a safe relative path'],
    ['an empty name', concat(rawHeader('', '0', 0), END), 'not a safe relative path'],
    ['a backslash', concat(rawHeader('a\\..\\b', '0', 0), END), 'not a safe relative path'],
    ['a symlink', concat(rawHeader('link', '2', 0, { linkname: '/etc' }), END), 'of type "2"'],
    ['a hard link', concat(rawHeader('hard', '1', 0, { linkname: '/etc/shadow' }), END), 'of type "1"'],
    ['a character device', concat(rawHeader('dev', '3', 0), END), 'of type "3"'],
    ['a FIFO', concat(rawHeader('fifo', '6', 0), END), 'of type "6"'],
    ['a GNU long name', concat(rawHeader('././@LongLink', 'L', 3), blockOf('../x'), END), 'of type "L"'],
    ['a global PAX header', concat(rawHeader('g', 'g', 0), END), 'of type "g"'],
    [
      'a PAX path escaping',
      concat(rawHeader('PaxHeader', 'x', 19), blockOf('19 path=../../evil\n'), rawHeader('ok', '0', 0), END),
      'not a safe relative path',
    ],
    [
      'a PAX linkpath',
      concat(rawHeader('PaxHeader', 'x', 17), blockOf('17 linkpath=/etc\n'), rawHeader('ok', '0', 0), END),
      'sets "linkpath"',
    ],
    [
      'a PAX size',
      concat(rawHeader('PaxHeader', 'x', 12), blockOf('12 size=999\n'), rawHeader('ok', '0', 0), END),
      'sets "size"',
    ],
    [
      'a malformed PAX record',
      concat(rawHeader('PaxHeader', 'x', 9), blockOf('99 path=a'), END),
      'malformed',
    ],
    [
      'a PAX header at the end',
      concat(rawHeader('PaxHeader', 'x', 10), blockOf('10 path=a\n'), END),
      'ends after',
    ],
    ['a bad checksum', concat(rawHeader('a', '0', 0, { badSum: true }), END), 'bad checksum'],
    [
      'a base-256 size',
      concat(rawHeader('a', '0', 0, { sizeField: '\x80\0\0\0\0\0\0\0\0\0\0\x01' }), END),
      'unreadable size',
    ],
    ['cut-off data', concat(rawHeader('a', '0', 2000), blockOf('short')), 'cut off'],
    ['a cut-off header', rawHeader('a', '0', 0).subarray(0, 300), 'inside a header'],
    ['a name given twice', concat(rawHeader('a', '0', 0), rawHeader('a/', '5', 0), END), 'given twice'],
    ['a directory with data', concat(rawHeader('d/', '5', 1), blockOf('x'), END), 'has data'],
    ['a file named like a directory', concat(rawHeader('f/', '0', 0), END), 'named like a directory'],
  ];
  for (const [what, archive, message] of hostile) {
    it(`refuses ${what}`, () => {
      const read = readTar(archive, LIMITS);
      assert.equal(read.ok, false);
      if (!read.ok) {
        assert.equal(read.error.kind, 'invalid');
        assert.ok(read.error.message.includes(message), read.error.message);
      }
    });
  }

  it('refuses content or member counts past the limits, as too large', () => {
    const big = buildTar([{ type: 'file', name: 'a', mode: 0o644, mtimeSec: 0, data: new Uint8Array(1025) }]);
    const many = buildTar(
      Array.from({ length: 11 }, (_, i) => ({
        type: 'dir' as const,
        name: `d${i}/`,
        mode: 0o755,
        mtimeSec: 0,
      })),
    );
    for (const archive of [big, many]) {
      const read = readTar(archive, LIMITS);
      assert.equal(read.ok ? 'ok' : read.error.kind, 'too-large');
    }
    const exact = buildTar([
      { type: 'file', name: 'a', mode: 0o644, mtimeSec: 0, data: new Uint8Array(1024) },
    ]);
    assert.ok(readTar(exact, LIMITS).ok, 'the limit itself is allowed');
  });

  it('reads what GNU tar writes (ustar and PAX long names)', {
    skip: spawnSync('tar', ['--version']).status !== 0 ? 'no tar on PATH' : false,
  }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'untar-'));
    try {
      const deep = `${'n'.repeat(90)}/${'m'.repeat(90)}/${'o'.repeat(90)}`;
      mkdirSync(join(dir, 'src', deep), { recursive: true });
      writeFileSync(join(dir, 'src', deep, 'f.txt'), 'deep');
      writeFileSync(join(dir, 'src', 'top.txt'), 'top');
      const r = spawnSync('tar', ['--format=pax', '-cf', join(dir, 'a.tar'), '-C', join(dir, 'src'), '.'], {
        encoding: 'utf8',
      });
      assert.equal(r.status, 0, r.stderr);
      const archive = new Uint8Array(readFileSync(join(dir, 'a.tar')));
      // GNU tar names the top `./`: not accepted (a `.` component), which is what a name check must do.
      assert.equal(readTar(archive, { maxContentBytes: 1e6, maxEntries: 100 }).ok, false);
      const r2 = spawnSync(
        'tar',
        ['--format=pax', '-cf', join(dir, 'b.tar'), '-C', join(dir, 'src'), 'top.txt', 'n'.repeat(90)],
        { encoding: 'utf8' },
      );
      assert.equal(r2.status, 0, r2.stderr);
      const read = readTar(new Uint8Array(readFileSync(join(dir, 'b.tar'))), {
        maxContentBytes: 1e6,
        maxEntries: 100,
      });
      assert.ok(read.ok, JSON.stringify(read));
      const files = read.entries
        .filter((e) => e.type === 'file')
        .map((e) => [e.name, new TextDecoder().decode(e.data)]);
      assert.deepEqual(files.sort(), [
        [`${deep}/f.txt`, 'deep'],
        ['top.txt', 'top'],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
