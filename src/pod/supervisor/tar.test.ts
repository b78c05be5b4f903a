import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildTar, paxPathRecord, splitUstarName, type TarEntry } from './tar.ts';

const decoder = new TextDecoder();
const field = (block: Uint8Array, offset: number, width: number) =>
  decoder.decode(block.subarray(offset, offset + width)).replace(/\0.*$/s, '');

/** A minimal reader: headers with verified checksums, PAX paths applied, file data. */
function readTar(archive: Uint8Array) {
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
    const { entries, end } = readTar(archive);
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
    const read = readTar(buildTar(entries)).entries;
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
